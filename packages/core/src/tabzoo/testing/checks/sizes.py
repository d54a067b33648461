"""Size search of the row protocols: which sizes the kit draws, the budgets, and shrinking.

Every example spec carries ``sizes``: ``batch``, ``n_context``, ``n_query``, ``n_features`` and,
when the case declares a range, ``n_classes`` and (multitask) ``tasks`` (the classes of each
task). Two phases per check:

* ``small``: the declared sizes (``case.n_features``, ``case.n_classes``, ``case.tasks``), batch
  1-2, 2-8 query rows, context up to ``case.max_rows``;
* ``large``: contexts of 64 rows up to the profile's maximum, and every axis the case declares a
  range for searched up to the profile's cap: features ``1..min(case.max_features, cap)``,
  classes ``2..min(case.max_classes, cap)``, tasks ``2..min(case.max_tasks, cap)``. The largest
  example always runs once first; a failure there is shrunk axis by axis by bisection to the
  smallest failing size (hypothesis shrinks its own draws towards the lower bounds).

The relational protocol searches one axis, ``db_scale``: the database grown that many times (see
:mod:`tabzoo.testing.checks.relational`).

Profiles (``$TABZOO_CONFORMANCE_PROFILE``): ``default`` keeps CI fast (contexts to 512 rows,
16 features, 12 classes, 4 tasks, databases 8x); ``thorough`` (``tabzoo conformance --thorough``,
the nox ``thorough`` session) reaches 4,096 rows, 64 features, 16 classes, 4 tasks and databases
171x (the toy database's 24 events -> 4,104) with 5x examples.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tabzoo.testing.case import ConformanceCase

SMALL_QUERY = (2, 8)
LARGE: dict[str, int] = {"batch": 4, "n_context": 512, "n_query": 64}
LARGE_MIN: dict[str, int] = {"batch": 1, "n_context": 64, "n_query": 16}
PROFILE_ENV = "TABZOO_CONFORMANCE_PROFILE"
PROFILES: dict[str, dict[str, int]] = {
    "default": {**LARGE, "examples": 1, "n_features": 16, "n_classes": 12, "n_tasks": 4, "db_scale": 8},
    "thorough": {"batch": 2, "n_context": 4096, "n_query": 256, "examples": 5, "n_features": 64, "n_classes": 16,
                 "n_tasks": 4, "db_scale": 171},
}
"""Search budgets: the large phase's largest sizes, the caps of the searched axes, and a multiplier
of every phase's examples."""


def profile() -> dict[str, int]:
    """The active search budget (``$TABZOO_CONFORMANCE_PROFILE``, default ``"default"``)."""
    from tabzoo.errors import TabzooInputError

    name = os.environ.get(PROFILE_ENV, "default")
    if name not in PROFILES:
        raise TabzooInputError(f"{PROFILE_ENV}={name!r}; use one of {sorted(PROFILES)}.")
    return PROFILES[name]


def claims_missing(case: ConformanceCase) -> bool:
    """The case declares that its forward accepts NaN features."""
    from tabzoo.testing import capabilities as cap

    return cap.MISSING_VALUES in case.capabilities


def scales_database(case: ConformanceCase) -> bool:
    """A relational case whose database the kit can grow: the toy database, or a
    ``make_database`` that takes ``scale``."""
    import inspect

    if case.protocol != "relational":
        return False
    if case.make_database is None:
        return True
    try:
        return "scale" in inspect.signature(case.make_database).parameters
    except (TypeError, ValueError):  # a callable without a signature: not searched
        return False


def bounds(case: ConformanceCase) -> dict[str, tuple[int, int]]:
    """``axis -> (low, high)`` of the searched axes in the large phase (``high == low``: fixed)."""
    top = profile()
    if case.protocol == "relational":
        return {"db_scale": (1, top["db_scale"] if scales_database(case) else 1)}
    f_hi = min(case.max_features, top["n_features"]) if case.max_features else case.n_features
    out = {"n_features": (1 if f_hi > case.n_features else case.n_features, max(f_hi, case.n_features))}
    if case.n_classes and case.max_classes:
        out["n_classes"] = (2, max(case.n_classes, min(case.max_classes, top["n_classes"])))
    if case.tasks:
        t_hi = min(case.max_tasks, top["n_tasks"]) if case.max_tasks else len(case.tasks)
        t_hi = max(t_hi, len(case.tasks))
        out["n_tasks"] = (2 if t_hi > len(case.tasks) else len(case.tasks), t_hi)
        k_hi = case.max_classes if case.max_classes else max(case.tasks)
        out["task_classes"] = (2, max(2, min(k_hi, top["n_classes"])))
    return out


def _tasks(case: ConformanceCase, n: int, k_hi: int) -> list[int]:
    """``n`` tasks: the declared ones (3+-class tasks at ``k_hi`` classes), then more at ``k_hi``."""
    base = [k if k in (0, 2) else max(k, k_hi) for k in case.tasks]
    return (base + [k_hi] * n)[:n]


def spec_strategy(case: ConformanceCase, phase: str) -> Any:
    """A hypothesis strategy of example specs (without ``model_seed``) for the row protocols."""
    import hypothesis.strategies as st

    lo_ctx = max(2, case.n_classes, *case.tasks) if case.tasks else max(2, case.n_classes)
    fixed: dict[str, Any] = {"n_features": st.just(case.n_features)}
    if phase == "large":
        top, axes = profile(), bounds(case)
        batch = st.integers(LARGE_MIN["batch"], top["batch"])
        n_query = st.integers(LARGE_MIN["n_query"], top["n_query"])
        fixed["n_features"] = st.integers(*axes["n_features"])
        if "n_classes" in axes:
            fixed["n_classes"] = st.integers(*axes["n_classes"])
        if case.tasks:
            k_lo, k_hi = axes["task_classes"]
            kind = st.one_of(st.just(0), st.integers(k_lo, k_hi))
            fixed["tasks"] = st.integers(*axes["n_tasks"]).flatmap(lambda n: st.lists(kind, min_size=n, max_size=n))
            lo_ctx = max(lo_ctx, k_hi)
        n_context = st.integers(max(lo_ctx, LARGE_MIN["n_context"]), max(lo_ctx, top["n_context"]))
    else:
        batch = st.integers(1, 2)
        n_query = st.integers(*SMALL_QUERY)
        n_context = st.integers(lo_ctx, max(lo_ctx, case.max_rows - SMALL_QUERY[0]))

    def build(t: tuple[Any, ...]) -> dict[str, Any]:
        b, nc, nq, seed, ties, dups, missing, extra = t
        sizes = {"batch": b, "n_context": nc, "n_query": nq, **extra}
        if "tasks" in sizes:
            sizes["n_context"] = max(nc, *sizes["tasks"], 2)
        spec = {"sizes": sizes, "data_seed": seed, "ties": ties, "duplicates": dups}
        return {**spec, "missing": True} if missing else spec

    missing = st.booleans() if claims_missing(case) else st.just(False)
    return st.tuples(batch, n_context, n_query, st.integers(0, 2**31 - 1), st.booleans(), st.booleans(),
                     missing, st.fixed_dictionaries(fixed)).map(build)


def largest_spec(case: ConformanceCase, seed: int) -> dict[str, Any]:
    """The large phase's biggest example: every size at its maximum, with ties and duplicates."""
    top, axes = profile(), bounds(case)
    if case.protocol == "relational":
        return {"database_seed": seed, "data_seed": seed, "sizes": {"db_scale": axes["db_scale"][1]}}
    sizes: dict[str, Any] = {"batch": top["batch"], "n_context": top["n_context"], "n_query": top["n_query"],
                             "n_features": axes["n_features"][1]}
    if "n_classes" in axes:
        sizes["n_classes"] = axes["n_classes"][1]
    if case.tasks:
        sizes["tasks"] = _tasks(case, axes["n_tasks"][1], axes["task_classes"][1])
    return {"sizes": sizes, "data_seed": seed, "ties": True, "duplicates": True,
            **({"missing": True} if claims_missing(case) else {})}


def sized(case: ConformanceCase, spec: dict[str, Any]) -> ConformanceCase:
    """``case`` at the spec's feature count, class count and tasks (the case itself when they are
    the declared ones); its model comes from ``case.make_sized`` when the case gives one."""
    sizes = spec.get("sizes", spec)
    f = int(sizes.get("n_features", case.n_features))
    k = int(sizes.get("n_classes", case.n_classes))
    tasks = tuple(int(t) for t in sizes.get("tasks", case.tasks))
    if (f, k, tasks) == (case.n_features, case.n_classes, case.tasks):
        return case
    make = case.make_model
    if case.make_sized is not None:
        shape = {"n_features": f, "n_classes": k, "tasks": tasks}
        maker = case.make_sized

        def make(seed: int) -> Any:
            return maker(seed, shape)

    return replace(case, n_features=f, n_classes=k, tasks=tasks, make_model=make,
                   max_features=max(f, case.max_features or f),
                   max_classes=max(k, case.max_classes or k) if case.max_classes else None,
                   max_tasks=max(len(tasks), case.max_tasks or len(tasks)) if case.tasks else None)


def shrink_spec(case: ConformanceCase, spec: dict[str, Any], fails: Callable[[dict[str, Any]], bool],
                budget: int = 48) -> dict[str, Any]:
    """The smallest failing spec found from a failing ``spec``: each size is bisected down to its
    smallest failing value (lower bounds: batch 1, 2 query rows, a context holding every class,
    the low ends of :func:`bounds`), then ties/duplicates/missing are dropped while it fails."""
    axes = bounds(case)
    progress = True
    while progress and budget > 0:
        progress = False
        for key in ("n_features", "n_classes", "tasks", "batch", "n_query", "n_context", "db_scale"):
            sizes = spec["sizes"]
            if key not in sizes:
                continue
            cur = len(sizes[key]) if key == "tasks" else int(sizes[key])
            lo = _low(key, sizes, axes)
            while lo < cur and budget > 0:
                mid = (lo + cur) // 2
                trial = {**spec, "sizes": _with(sizes, key, mid)}
                budget -= 1
                if fails(trial):
                    spec, sizes, cur, progress = trial, trial["sizes"], mid, True
                else:
                    lo = mid + 1
        for key in ("ties", "duplicates", "missing"):
            if spec.get(key) and budget > 0:
                budget -= 1
                trial = {**spec, key: False}
                if fails(trial):
                    spec, progress = trial, True
    return spec


def _low(key: str, sizes: dict[str, Any], axes: dict[str, tuple[int, int]]) -> int:
    classes = max([2, int(sizes.get("n_classes", 0)), *[int(t) for t in sizes.get("tasks", [])]])
    fixed = {"batch": 1, "n_query": 2, "n_context": classes}
    if key in fixed:
        return fixed[key]
    return axes.get("n_tasks" if key == "tasks" else key, (10**9, 0))[0]


def _with(sizes: dict[str, Any], key: str, value: int) -> dict[str, Any]:
    out = dict(sizes)
    if key == "tasks":
        out["tasks"] = list(sizes["tasks"])[:value]
    else:
        out[key] = value
    if key == "n_classes" or key == "tasks":
        out["n_context"] = max(int(out["n_context"]), _low("n_context", out, {}))
    return out
