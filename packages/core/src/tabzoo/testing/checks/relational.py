"""Time causality and input-order invariance of relational models (Ramba).

The case's forward is ``forward(model, db, seeds) -> [n_seeds, ...]`` where ``seeds`` lists
``(table, primary_key, timestamp)``: predict ``case.target`` for that row as of that time.
Without ``case.make_database`` the kit generates a small two-table database (:func:`toy_database`):
``users(user_id, age, country)`` and ``events(event_id, user_id -> users, time, amount, label)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import CheckResult, ConformanceCase
from tabzoo.testing.checks._common import Outcome, discrepancy, run_examples, skipped

Seed = tuple[str, Any, Any]


def toy_database(seed: int, n_users: int = 5, n_events: int = 24) -> tuple[Any, list[Seed]]:
    """A small timed database and three seed rows of ``events`` from the middle of its time span."""
    from tabzoo.table import ForeignKey, RelationalDatabase, Table

    rng = np.random.default_rng(seed)
    users = Table.from_dict({
        "user_id": np.arange(n_users),
        "age": rng.normal(40, 10, n_users),
        "country": np.array(["fr", "de", "it"], dtype=object)[rng.integers(0, 3, n_users)],
    }, types={"country": "categorical"})
    times = np.datetime64("2024-01-01T00:00:00") + np.sort(rng.choice(10**6, n_events, replace=False)).astype(
        "timedelta64[s]")
    events = Table.from_dict({
        "event_id": np.arange(100, 100 + n_events),
        "user_id": rng.integers(0, n_users, n_events),
        "time": times,
        "amount": rng.gamma(2.0, 10.0, n_events),
        "label": rng.normal(0, 1, n_events),
    })
    db = RelationalDatabase({"users": users, "events": events}, primary_keys={"users": "user_id", "events": "event_id"},
                            foreign_keys=[ForeignKey("events", "user_id", "users")], time_columns={"events": "time"})
    picks = sorted(rng.choice(np.arange(n_events // 3, n_events), 3, replace=False))
    return db, [("events", int(events.column("event_id")[i]), times[i]) for i in picks]


def database_for(case: ConformanceCase, seed: int) -> tuple[Any, list[Seed]]:
    return case.make_database(seed) if case.make_database is not None else toy_database(seed)


def _rebuild(db: Any, tables: dict[str, Any]) -> Any:
    from tabzoo.table import RelationalDatabase

    return RelationalDatabase(tables, db.primary_keys, db.foreign_keys, db.time_columns)


def _key_columns(db: Any, table: str) -> set[str]:
    keys = {fk.column for fk in db.parents(table)} | {db.time_columns.get(table)}
    keys |= {db.primary_keys.get(table)}
    return {k for k in keys if k is not None}


def future_perturbed(db: Any, t_seed: Any, case: ConformanceCase, seed: int, seed_row: Seed) -> Any:
    """``db`` with (a) every numeric value of rows later than ``t_seed`` changed, (b) three new rows
    per timed table later than ``t_seed``, (c) the target of rows whose label is not yet available
    at ``t_seed`` (``time + horizon > t_seed``, and the seed row itself) changed."""
    from tabzoo.table import ColumnType, Table

    rng = np.random.default_rng(seed)
    target_table, target_col = case.target or ("events", "label")
    horizon = np.timedelta64(int(case.horizon), "s")
    tables = {}
    for name, table in db.tables.items():
        tcol = db.time_columns.get(name)
        if tcol is None:
            tables[name] = table
            continue
        data, types = table.to_dict(), table.types
        times = data[tcol]
        later = times > t_seed
        keys = _key_columns(db, name)
        for col, values in data.items():
            if col in keys or types[col] is not ColumnType.NUMERIC:
                continue
            values = values.astype(np.float64)
            values[later] += rng.normal(5.0, 1.0, int(later.sum()))
            if name == target_table and col == target_col:
                pk = db.primary_keys.get(name)
                hidden = times + horizon > t_seed
                if pk is not None:
                    hidden |= data[pk] == seed_row[1]
                values[hidden] += rng.normal(5.0, 1.0, int(hidden.sum()))
            data[col] = values
        src = rng.integers(0, table.n_rows, 3)
        for col in data:
            extra = data[col][src]
            if col == tcol:
                extra = np.asarray(t_seed) + np.arange(1, 4).astype("timedelta64[D]")
            elif col == db.primary_keys.get(name):
                extra = np.max(data[col]) + np.arange(1, 4)
            data[col] = np.concatenate([data[col], np.asarray(extra, dtype=data[col].dtype)])
        tables[name] = Table.from_dict(data, types={k: v.value for k, v in types.items()})
    return _rebuild(db, tables)


def _call(case: ConformanceCase, model: Any, db: Any, seeds: list[Seed]) -> Any:
    with torch.no_grad():
        return case.call(model, db, seeds)


def _strategy(case: ConformanceCase, phase: str) -> Any:
    import hypothesis.strategies as st

    return st.integers(0, 10**6).map(lambda s: {"database_seed": s, "data_seed": s})


def _control(case: ConformanceCase, spec: dict[str, Any]) -> tuple[float, float]:
    """Two identical calls on fresh models."""
    db, seeds = database_for(case, spec["database_seed"])
    a = _call(case, case.build(spec["model_seed"]), db, seeds)
    return discrepancy(_call(case, case.build(spec["model_seed"]), db, seeds), a, case)


def _run(case: ConformanceCase, check: str, example: Any, seed: int, max_examples: int, replay: Any,
         what: str) -> CheckResult:
    return run_examples(case, check, example, seed=seed, max_examples=max(1, min(max_examples, 5)), replay=replay,
                        strategy=_strategy, phases=("small",), control=_control, explicit_large=False, what=what)


def check_time_causality(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                         replay: dict[str, Any] | None = None) -> CheckResult:
    """Adding or changing rows later than the seed time, or changing labels not yet available at
    it (``time + horizon > seed time``), leaves that seed's output unchanged."""
    check = cap.TIME_CAUSALITY
    if case.protocol != "relational" or case.make_model is None:
        return skipped(check, case, "needs the 'relational' protocol and a model")

    def example(spec: dict[str, Any]) -> Outcome:
        db, seeds = database_for(case, spec["database_seed"])
        s = spec["database_seed"] + 1
        worst, at = (0.0, 0.0), None
        for k, row in enumerate(seeds):
            base = _call(case, case.build(spec["model_seed"]), db, [row])
            moved = _call(case, case.build(spec["model_seed"]), future_perturbed(db, row[2], case, s + k, row), [row])
            d, t = discrepancy(moved, base, case)
            if not d <= t or at is None:
                worst, at = (d, t), row
            if not d <= t:
                break
        assert at is not None
        return Outcome(*worst, {"seed_row": [at[0], str(at[1]), str(at[2])]},
                       note=f"seed row {at[0]}:{at[1]} at {at[2]}")

    return _run(case, check, example, seed, max_examples, replay,
                "output changed when data later than the seed time, or unavailable labels, changed")


def check_input_order_invariance(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                                 replay: dict[str, Any] | None = None) -> CheckResult:
    """Shuffling the stored row order of every table leaves every output unchanged."""
    check = cap.INPUT_ORDER_INVARIANCE
    if case.protocol != "relational" or case.make_model is None:
        return skipped(check, case, "needs the 'relational' protocol and a model")

    def example(spec: dict[str, Any]) -> Outcome:
        db, seeds = database_for(case, spec["database_seed"])
        rng = np.random.default_rng(spec["database_seed"] + 1)
        perms = {name: rng.permutation(t.n_rows) for name, t in db.tables.items()}
        if isinstance(spec.get("permutation"), dict):
            perms = {k: np.asarray(v) for k, v in spec["permutation"].items()}
        shuffled = _rebuild(db, {name: t.take(perms[name]) for name, t in db.tables.items()})
        model_seed = spec["model_seed"]
        d, t = discrepancy(_call(case, case.build(model_seed), shuffled, seeds),
                           _call(case, case.build(model_seed), db, seeds), case)
        return Outcome(d, t, {"permutation": {k: v.tolist() for k, v in perms.items()}})

    return _run(case, check, example, seed, max_examples, replay, "output changed when table rows were shuffled")
