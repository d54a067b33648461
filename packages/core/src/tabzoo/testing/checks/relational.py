"""Time causality and input-order invariance of relational models (Ramba).

The case's forward is ``forward(model, db, seeds) -> [n_seeds, ...]`` where ``seeds`` lists
``(table, primary_key, timestamp)``: predict ``case.target`` for that row as of that time.
Without ``case.make_database`` the kit generates a small two-table database (:func:`toy_database`):
``users(user_id, age, country)`` and ``events(event_id, user_id -> users, time, amount, label,
delayed, channel, note)`` (``delayed = label > 0.5`` is derived from the target).

Size search (issue 23 item 2): besides the small phase at the database's own size, a large phase
grows the database ``db_scale`` times (the largest scale of the profile first, a failure shrunk to
the smallest failing scale): the toy database has ``5 * scale`` users and ``24 * scale`` events,
and a case's ``make_database(seed, scale=1)`` is searched when it takes ``scale``. A model that
takes another path above some table size is exercised there.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import CheckResult, ConformanceCase
from tabzoo.testing.checks._common import Outcome, discrepancy, run_examples, skipped
from tabzoo.testing.checks.causality import perturb_after, rebuild, with_boundary_rows

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
    extra = np.random.default_rng(seed + 1)  # columns of every type; "delayed" is derived from the label
    label = events.column("label").astype(np.float64)
    events = Table.from_dict({**events.to_dict(), "delayed": label > 0.5,
                              "channel": np.array(["web", "app", "shop"], dtype=object)[extra.integers(0, 3, n_events)],
                              "note": np.array([f"note {i}" for i in extra.integers(0, 50, n_events)], dtype=object)},
                             types={"delayed": "boolean", "channel": "categorical", "note": "text"})
    db = RelationalDatabase({"users": users, "events": events}, primary_keys={"users": "user_id", "events": "event_id"},
                            foreign_keys=[ForeignKey("events", "user_id", "users")], time_columns={"events": "time"})
    picks = sorted(rng.choice(np.arange(n_events // 3, n_events), 3, replace=False))
    return db, [("events", int(events.column("event_id")[i]), times[i]) for i in picks]


def database_for(case: ConformanceCase, seed: int, scale: int = 1) -> tuple[Any, list[Seed]]:
    """The case's database (or the toy one) for ``seed``, ``scale`` times its size."""
    if case.make_database is None:
        return toy_database(seed, n_users=5 * scale, n_events=24 * scale)
    return case.make_database(seed, scale=scale) if scale != 1 else case.make_database(seed)  # type: ignore[call-arg]


def spec_database(case: ConformanceCase, spec: dict[str, Any]) -> tuple[Any, list[Seed]]:
    """The database of an example spec (its ``sizes["db_scale"]``, 1 when absent)."""
    return database_for(case, int(spec["database_seed"]), int(spec.get("sizes", {}).get("db_scale", 1)))


def _call(case: ConformanceCase, model: Any, db: Any, seeds: list[Seed]) -> Any:
    with torch.no_grad():
        return case.call(model, db, seeds)


def _strategy(case: ConformanceCase, phase: str) -> Any:
    import hypothesis.strategies as st

    from tabzoo.testing.checks.sizes import bounds

    seeds = st.integers(0, 10**6)
    if phase != "large":
        return seeds.map(lambda s: {"database_seed": s, "data_seed": s})
    return st.tuples(seeds, st.integers(*bounds(case)["db_scale"])).map(
        lambda t: {"database_seed": t[0], "data_seed": t[0], "sizes": {"db_scale": t[1]}})


def _control(case: ConformanceCase, spec: dict[str, Any]) -> tuple[float, float]:
    """Two identical calls on fresh models."""
    db, seeds = spec_database(case, spec)
    a = _call(case, case.build(spec["model_seed"]), db, seeds)
    return discrepancy(_call(case, case.build(spec["model_seed"]), db, seeds), a, case)


def _run(case: ConformanceCase, check: str, example: Any, seed: int, max_examples: int, replay: Any,
         what: str) -> CheckResult:
    """The examples of one relational check: the small phase, then (when the database can grow)
    the large phase with the largest scale first."""
    from tabzoo.testing.checks.sizes import scales_database

    phases = ("small", "large") if scales_database(case) else ("small",)
    return run_examples(case, check, example, seed=seed, max_examples=max(1, min(max_examples, 5)), replay=replay,
                        strategy=_strategy, phases=phases, control=_control, what=what)


def check_time_causality(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                         replay: dict[str, Any] | None = None) -> CheckResult:
    """A seed's output does not change when anything it may not know changes (see
    :mod:`tabzoo.testing.checks.causality`): every column of every timed table after the seed time
    (scale-aware), the times of those rows (moved across the time after the cutoff), labels not yet
    available within the declared horizon (``time + horizon > seed time``) and the seed's own label,
    with boundary rows at the seed time (ties), one second after it and one second inside the
    horizon. Each seed is perturbed with several seeds of randomness, and a call with ALL seeds at
    once must give each seed the output of its own single-seed call (a batch must not share a
    snapshot of the database, e.g. at its latest seed time)."""
    check = cap.TIME_CAUSALITY
    if case.protocol != "relational" or case.make_model is None:
        return skipped(check, case, "needs the 'relational' protocol and a model")
    target = case.target or ("events", "label")
    horizons = column_horizons(case)

    def example(spec: dict[str, Any]) -> Outcome:
        db, seeds = spec_database(case, spec)
        s = spec["database_seed"] + 1
        singles = [_call(case, case.build(spec["model_seed"]), db, [row]) for row in seeds]
        if len(seeds) > 1:
            batch = _call(case, case.build(spec["model_seed"]), db, list(seeds))
            d, t = discrepancy(batch, torch.cat([torch.as_tensor(o) for o in singles]), case)
            if not d <= t:
                return Outcome(d, t, {"seed_rows": [[r[0], str(r[1]), str(r[2])] for r in seeds]},
                               note=f"a call with {len(seeds)} seeds differs from the seeds' single calls (the batch "
                                    "shares state, e.g. a snapshot of the database at its latest seed time)")
        worst, at = (0.0, 0.0), None
        for k, row in enumerate(seeds):
            base_db, fixed = with_boundary_rows(db, row[2], case.horizon, target, s + k, horizons)
            base = _call(case, case.build(spec["model_seed"]), base_db, [row])
            for r in range(PERTURBATIONS):
                moved_db = perturb_after(base_db, row[2], case.horizon, target, row[1], s + 7919 * r + k, fixed,
                                         horizons)
                moved = _call(case, case.build(spec["model_seed"]), moved_db, [row])
                d, t = discrepancy(moved, base, case)
                if not d <= t or at is None:
                    worst, at = (d, t), row
                if not d <= t:
                    return Outcome(d, t, {"seed_row": [row[0], str(row[1]), str(row[2])], "perturbation": r},
                                   note=f"seed row {row[0]}:{row[1]} at {row[2]}, perturbation {r} (outcome columns "
                                        f"hidden within their horizons: {_horizons_text(case.horizon, target, horizons)})")
        assert at is not None
        return Outcome(*worst, {})

    return _run(case, check, example, seed, max_examples, replay,
                "output changed when data later than the seed time, or unavailable labels, changed")


def column_horizons(case: ConformanceCase) -> dict[str, float]:
    """The case's ``column_horizons``; on the kit's toy database its derived ``delayed`` column
    (``label > 0.5``) is an outcome available with the label unless declared otherwise."""
    horizons = dict(case.column_horizons)
    if case.make_database is None:
        horizons.setdefault("delayed", float(case.horizon))
    return horizons


def _horizons_text(horizon: float, target: tuple[str, str], horizons: dict[str, float]) -> str:
    from tabzoo.testing.checks.causality import outcome_horizons

    return ", ".join(f"{c} {h:g} s" for c, h in sorted(outcome_horizons(horizon, target, horizons).items()))


PERTURBATIONS = 2
"""Independent perturbations of the future per seed row and example."""


def check_input_order_invariance(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                                 replay: dict[str, Any] | None = None) -> CheckResult:
    """Shuffling the stored row order of every table leaves every output unchanged."""
    check = cap.INPUT_ORDER_INVARIANCE
    if case.protocol != "relational" or case.make_model is None:
        return skipped(check, case, "needs the 'relational' protocol and a model")

    def example(spec: dict[str, Any]) -> Outcome:
        db, seeds = spec_database(case, spec)
        rng = np.random.default_rng(spec["database_seed"] + 1)
        perms = {name: rng.permutation(t.n_rows) for name, t in db.tables.items()}
        if isinstance(spec.get("permutation"), dict):
            perms = {k: np.asarray(v) for k, v in spec["permutation"].items()}
        shuffled = rebuild(db, {name: t.take(perms[name]) for name, t in db.tables.items()})
        model_seed = spec["model_seed"]
        d, t = discrepancy(_call(case, case.build(model_seed), shuffled, seeds),
                           _call(case, case.build(model_seed), db, seeds), case)
        return Outcome(d, t, {"permutation": {k: v.tolist() for k, v in perms.items()}})

    return _run(case, check, example, seed, max_examples, replay, "output changed when table rows were shuffled")
