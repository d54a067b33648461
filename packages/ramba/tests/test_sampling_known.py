"""The ``policy="known"`` sampler: children whose outcome is known at the seed time come first
(most recent first), the most recent not-yet-known ones fill the rest; it reads only times, so
the serialized context holds more observed labels than ``"recent"`` and stays time-causal."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.table import ForeignKey, RelationalDatabase, Table
from tabzoo_ramba.api import sequences_for
from tabzoo_ramba.sampling import SamplerConfig, graph_index, sample_subgraph
from tabzoo_ramba.serialize import MASKED, OBSERVED, SEP, TargetSpec

T0 = np.datetime64("2024-01-01T00:00:00", "s")
HORIZON = 3600


def _db(offsets: list[int], labels: np.ndarray | None = None) -> RelationalDatabase:
    """One customer (joined at T0) and its orders at ``T0 + offsets`` seconds (label = i)."""
    n = len(offsets)
    customers = Table.from_dict({"customer_id": np.arange(1), "joined": np.array([T0]), "age": np.array([30.0])})
    orders = Table.from_dict({
        "order_id": np.arange(n), "customer_id": np.zeros(n, dtype=np.int64),
        "time": T0 + np.asarray(offsets, dtype=np.int64).astype("timedelta64[s]"),
        "amount": np.linspace(1.0, 2.0, n), "label": np.arange(n, dtype=np.float64) if labels is None else labels})
    return RelationalDatabase({"customers": customers, "orders": orders},
                              primary_keys={"customers": "customer_id", "orders": "order_id"},
                              foreign_keys=[ForeignKey("orders", "customer_id", "customers")],
                              time_columns={"customers": "joined", "orders": "time"})


def _expected(offsets: list[int], t_star: int, n_child: int) -> list[int]:
    """Brute force: past orders by (time, id); known ones most recent first, then the rest."""
    past = sorted((o, i) for i, o in enumerate(offsets) if o <= t_star)
    known = [i for o, i in reversed(past) if o + HORIZON <= t_star]
    later = [i for o, i in reversed(past) if o + HORIZON > t_star]
    return (known + later)[:n_child]


@settings(max_examples=40, deadline=None)
@given(offsets=st.lists(st.integers(1, 20_000), min_size=1, max_size=25), t_star=st.integers(1, 20_000),
       n_child=st.integers(1, 12))
def test_known_children_first_then_the_most_recent(offsets, t_star, n_child) -> None:
    db = _db(offsets)
    cfg = SamplerConfig(n_child=n_child, max_expansions=1, max_rows=100, policy="known")
    sub = sample_subgraph(graph_index(db), "customers", 0, T0 + np.timedelta64(t_star, "s"), lookback_s=1e9,
                          config=cfg, known_after={"orders": HORIZON})
    assert [r for t, r in sub.nodes if t == "orders"] == _expected(offsets, t_star, n_child)
    recent = sample_subgraph(graph_index(db), "customers", 0, T0 + np.timedelta64(t_star, "s"), lookback_s=1e9,
                             config=SamplerConfig(n_child=n_child, max_expansions=1, max_rows=100))
    past = sorted((o, i) for i, o in enumerate(offsets) if o <= t_star)
    assert [r for t, r in recent.nodes if t == "orders"] == [i for _, i in reversed(past)][:n_child]


def test_the_row_budget_keeps_known_children_first() -> None:
    """With ``max_rows`` below the children, the known ones (added first) survive the cut."""
    offsets = [100 * k for k in range(1, 11)] + [9_000 + 100 * k for k in range(10)]  # 10 old, 10 recent
    t_star = T0 + np.timedelta64(10_000, "s")
    idx = graph_index(_db(offsets))
    got = {}
    for policy in ("recent", "known"):
        sub = sample_subgraph(idx, "customers", 0, t_star, lookback_s=1e9, known_after={"orders": HORIZON},
                              config=SamplerConfig(n_child=20, max_expansions=1, max_rows=6, policy=policy))
        got[policy] = [r for t, r in sub.nodes if t == "orders"]
    assert got["known"] == [9, 8, 7, 6, 5]  # the five most recent with a known outcome
    assert got["recent"] == [19, 18, 17, 16, 15]  # all still inside the horizon


def test_without_outcome_horizons_known_is_recent() -> None:
    offsets = list(range(100, 5000, 200))
    idx = graph_index(_db(offsets))
    t = T0 + np.timedelta64(4000, "s")
    subs = [sample_subgraph(idx, "customers", 0, t, lookback_s=1e9,
                            config=SamplerConfig(n_child=5, max_expansions=1, policy=p)) for p in ("recent", "known")]
    assert subs[0].nodes == subs[1].nodes


def test_more_observed_labels_and_label_values_move_nothing() -> None:
    """Through serialization: the known policy's context holds more observed label cells than
    ``"recent"`` (which sees only masked ones here), and changing any label, known or not, leaves
    the sampled rows unchanged (only times choose)."""
    offsets = [100 * k for k in range(1, 11)] + [9_000 + 100 * k for k in range(10)] + [10_000]
    target = TargetSpec("orders", "label", float(HORIZON))
    seed = [("orders", 20, T0 + np.timedelta64(10_000, "s"))]
    labels = np.arange(21, dtype=np.float64)

    def observed(db, policy):
        cfg = SamplerConfig(n_child=6, max_expansions=2, max_rows=12, policy=policy)
        (q,) = sequences_for(db, seed, target, lookback_s=1e9, sampler=cfg)
        cell = (q.col == q.schema.index("orders : label")) & (q.kind != SEP)
        return int((cell & (q.state == OBSERVED)).sum()), int((cell & (q.state == MASKED)).sum())

    db = _db(offsets, labels)
    assert observed(db, "recent") == (0, 6)  # the seed's and five recent orders' labels, all masked
    assert observed(db, "known") == (6, 1)  # six orders older than the horizon; only the seed masked
    rng = np.random.default_rng(0)
    changed = _db(offsets, rng.normal(size=21))
    a = sample_subgraph(graph_index(db), "orders", 20, seed[0][2], lookback_s=1e9, known_after={"orders": HORIZON},
                        config=SamplerConfig(n_child=6, max_expansions=2, max_rows=12, policy="known"))
    b = sample_subgraph(graph_index(changed), "orders", 20, seed[0][2], lookback_s=1e9,
                        known_after={"orders": HORIZON},
                        config=SamplerConfig(n_child=6, max_expansions=2, max_rows=12, policy="known"))
    assert a.nodes == b.nodes and a.edges == b.edges


def test_unknown_policy_names_the_choices() -> None:
    with pytest.raises(TabzooInputError, match="'recent', 'hash' or 'known'"):
        SamplerConfig(policy="newest")  # type: ignore[arg-type]
