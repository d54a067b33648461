"""Meta-tests of the multitask protocol (issue 23, item 1): each broken multitask model fails the
property named for it, the correct controls pass every check the kit runs for them, and the
inputs carry per-task labels and masks."""

from __future__ import annotations

import re

import pytest
from kit_models.broken_multitask import BROKEN_MULTITASK, CONTROLS_MULTITASK, multitask_case
from tabzoo.errors import TabzooInputError
from tabzoo.testing import ConformanceCase, run_check
from tabzoo.testing import capabilities as cap
from tabzoo.testing.runner import checks_for

BROKEN = [(check, what, make) for check, items in BROKEN_MULTITASK.items() for what, make in items]


@pytest.mark.parametrize(("check", "what", "make"), BROKEN, ids=[f"{c}-{w}" for c, w, _ in BROKEN])
def test_multitask_gallery_model_is_caught(check: str, what: str, make: object) -> None:
    result = run_check(make(), check, max_examples=4)  # type: ignore[operator]
    assert result.status == "failed", f"{check} did not catch '{what}': {result}"
    assert result.reproducer.get("replay") and "[reproduce: tabzoo conformance" in str(result)
    assert TASK_NAME.search(result.message), f"no task named in: {result.message}"


TASK_NAME = re.compile(r"task \d \((regression|binary|\d+ classes)\)")


def test_row_check_failures_on_the_multitask_protocol_name_the_tasks() -> None:
    from kit_models.broken_multitask import ReadsOtherTaskLabels

    result = run_check(multitask_case("other_task_labels", ReadsOtherTaskLabels), cap.LABEL_LEAK, max_examples=4)
    assert result.status == "failed", result
    assert TASK_NAME.search(result.message) and result.reproducer["moved_tasks"], result.message


CHEAP = [c for c in cap.PROPERTIES if c not in (cap.DETERMINISM, cap.CHECKPOINT_ROUNDTRIP)]


@pytest.mark.parametrize(("what", "make"), CONTROLS_MULTITASK, ids=[w for w, _ in CONTROLS_MULTITASK])
def test_multitask_controls_pass(what: str, make: object) -> None:
    case = make()  # type: ignore[operator]
    checks = [c for c in checks_for(case) if c in CHEAP]
    assert {cap.TASK_ISOLATION, cap.TASK_MASK, cap.ROW_EQUIVARIANCE, cap.LABEL_LEAK} <= set(checks)
    for check in checks:
        result = run_check(case, check, max_examples=4)
        assert result.status == "passed", f"{what}: {result}"


def test_task_checks_run_for_every_multitask_case_and_only_there() -> None:
    from kit_models.broken import icl_case

    assert {cap.TASK_ISOLATION, cap.TASK_MASK} <= set(checks_for(multitask_case()))
    assert cap.TASK_ISOLATION not in checks_for(icl_case())
    assert run_check(icl_case(), cap.TASK_MASK).status == "skipped"


def test_multitask_inputs_have_a_label_and_mask_column_per_task() -> None:
    from tabzoo.testing.checks._common import make_rows
    from tabzoo.testing.checks.multitask import partial_mask

    case = multitask_case()
    spec = {"sizes": {"batch": 2, "n_context": 12, "n_query": 3, "n_features": 4}, "data_seed": 5}
    x, y = make_rows(case, spec)
    assert x.shape == (2, 15, 4) and y.shape == (2, 15, 3)
    assert set(y[..., 0].unique().tolist()) <= {0.0, 1.0} and set(y[..., 1].unique().tolist()) <= {0.0, 1.0, 2.0}
    q = partial_mask(case, y, 12, 5)
    assert q.shape == (2, 15, 3) and bool(q[:, 12:].all())
    partial = q[:, :12] & ~q[:, :12].all(-1, keepdim=True)
    assert all(bool(partial[..., t].any()) for t in range(3))  # every task is missing alone somewhere


def test_a_multitask_case_declares_its_tasks() -> None:
    with pytest.raises(TabzooInputError, match="tasks"):
        ConformanceCase("no_tasks", make_model=lambda s: None, protocol="multitask",
                        capabilities=cap.MULTITASK_DEFAULTS)
    with pytest.raises(TabzooInputError, match="tasks"):
        ConformanceCase("rows_with_tasks", make_model=lambda s: None, protocol="rows", tasks=(2, 0),
                        capabilities=cap.ROW_ATTENTION_DEFAULTS)
    with pytest.raises(TabzooInputError, match="make_sized"):
        ConformanceCase("grows", make_model=lambda s: None, protocol="multitask", tasks=(2, 0), max_tasks=4,
                        capabilities=cap.MULTITASK_DEFAULTS)


def test_task_count_search_finds_a_leak_from_four_tasks_and_shrinks_to_four() -> None:
    """Issue 23 item 2 (tasks up to 4, shrunk): the case declares three tasks, the model leaks only
    with four; the large phase finds it and the reproducer keeps the smallest failing task count."""
    from kit_models.broken_multitask import LeaksFromFourTasks

    result = run_check(multitask_case("leaks_from_four_tasks", LeaksFromFourTasks), cap.TASK_ISOLATION,
                       max_examples=4)
    assert result.status == "failed" and "large phase" in result.message, result
    assert len(result.reproducer["sizes"]["tasks"]) == 4 and TASK_NAME.search(result.message), result


def test_size_search_builds_models_for_other_task_lists() -> None:
    from tabzoo.testing.checks._common import largest_spec, sized

    case = multitask_case()
    spec = largest_spec(case, 0)
    assert len(spec["sizes"]["tasks"]) == 4 and spec["sizes"]["n_features"] == 8
    big = sized(case, spec)
    assert big.tasks == tuple(spec["sizes"]["tasks"]) and big.build(0).tasks == big.tasks
