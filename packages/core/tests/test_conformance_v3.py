"""Meta-tests of kit v3 (issue 23): each broken model of the v3 gallery fails the property named
for it, and each correct control passes it."""

from __future__ import annotations

import pytest
import torch
from kit_models.broken_v3 import BROKEN_V3, CONTROLS_V3
from tabzoo.testing import capabilities as cap
from tabzoo.testing import run_check
from tabzoo.testing.checks._common import discrepancy

BROKEN = [(check, what, make) for check, items in BROKEN_V3.items() for what, make in items]


@pytest.mark.parametrize(("check", "what", "make"), BROKEN, ids=[f"{c}-{w}" for c, w, _ in BROKEN])
def test_v3_gallery_model_is_caught(check: str, what: str, make: object) -> None:
    result = run_check(make(), check, max_examples=4)  # type: ignore[operator]
    assert result.status == "failed", f"{check} did not catch '{what}': {result}"
    assert result.reproducer.get("replay") or result.reproducer


NEW = (cap.FINITE_OUTPUTS, cap.FEATURE_ORDER_INVARIANCE, cap.DETERMINISM, cap.QUERY_INDEPENDENCE,
       cap.NO_CONTEXT_QUERY_LEAK)


@pytest.mark.parametrize(("what", "make"), CONTROLS_V3, ids=[w for w, _ in CONTROLS_V3])
def test_v3_controls_pass(what: str, make: object) -> None:
    case = make()  # type: ignore[operator]
    for check in NEW:
        if check in case.capabilities | cap.UNIVERSAL:
            result = run_check(case, check, max_examples=4)
            assert result.status == "passed", f"{what}: {result}"


def test_nan_and_inf_never_count_as_agreement() -> None:
    from kit_models.broken import icl_case

    case = icl_case()
    nan, inf = torch.tensor([float("nan"), 1.0]), torch.tensor([float("inf"), 1.0])
    assert discrepancy(nan, nan.clone(), case)[0] == float("inf")
    assert discrepancy(inf, inf.clone(), case)[0] == float("inf")
    assert discrepancy(torch.ones(2), torch.ones(2), case)[0] == 0.0


def test_absent_class_is_generated_and_reported() -> None:
    from kit_models.broken import icl_case
    from kit_models.broken_v3 import PrototypeNaN

    result = run_check(icl_case("p", PrototypeNaN), cap.FINITE_OUTPUTS, max_examples=6)
    assert result.status == "failed"
    assert result.reproducer.get("absent_class") is not None and "absent" in result.message


@pytest.mark.parametrize(("model", "says"), [("DriftsAfter16", "call 9 against call 1"),
                                             ("HashSeeded", "fresh Python process"),
                                             ("AddressCache", "written into the memory")])
def test_determinism_names_what_differs(model: str, says: str) -> None:
    from kit_models.broken import icl_case

    result = run_check(icl_case("d", f"kit_models.broken_v3:{model}"), cap.DETERMINISM)
    assert result.status == "failed" and says in result.message, result


def test_a_case_a_fresh_process_cannot_find_is_not_proven() -> None:
    from kit_models.broken import icl_case

    case = icl_case("unfindable", context_repr=None)  # a callable argument: no factory
    assert case.factory is None
    result = run_check(case, cap.DETERMINISM)
    assert result.status == "failed" and "factory=" in result.message


def test_missing_values_put_nan_into_context_and_query_rows() -> None:
    from kit_models.broken_v3 import missing_case
    from tabzoo.testing.checks._common import largest_spec, make_rows

    case = missing_case()
    spec = largest_spec(case, 0)
    x, _ = make_rows(case, spec)
    nc = spec["sizes"]["n_context"]
    assert torch.isnan(x[:, :nc]).any() and torch.isnan(x[:, nc:]).any()
    from kit_models.broken import icl_case

    plain = icl_case()
    assert not torch.isnan(make_rows(plain, largest_spec(plain, 0))[0]).any()  # not claimed: no NaN


def test_not_proven_fails_by_default_and_waivers_are_printed() -> None:
    from tabzoo.cli.conformance_cmd import EXIT_FAILED, EXIT_NOT_PROVEN, _summarise
    from tabzoo.testing.case import CheckResult

    skipped = CheckResult(cap.LABEL_LEAK, "c", "skipped", message="not proven: no model")
    assert _summarise([skipped], strict=True)["exit_code"] == EXIT_FAILED
    assert _summarise([skipped], strict=False)["exit_code"] == EXIT_NOT_PROVEN
    from tabzoo.cli import build_parser

    args = build_parser().parse_args(["conformance", "all"])
    assert args.allow_unproven is False  # strict unless asked otherwise


def test_json_stays_one_document_with_progress_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from tabzoo.cli import main

    code = main(["conformance", "core_kernels", "--json", "--max-examples", "2"])
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert code == 0 and doc["strict"] is True and doc["results"]
    assert "[1/1] core_kernels-kernel_equivalence: PASSED" in captured.err


def test_thorough_profile_reaches_real_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    from kit_models.broken import icl_case
    from tabzoo.testing.checks._common import PROFILE_ENV

    case = icl_case("fused", "kit_models.broken_v3:FusedAbove1024", masks=None)
    assert run_check(case, cap.QUERY_INDEPENDENCE, max_examples=2).status == "passed"  # default: blind above 512
    monkeypatch.setenv(PROFILE_ENV, "thorough")
    result = run_check(case, cap.QUERY_INDEPENDENCE, max_examples=2)
    assert result.status == "failed" and result.reproducer["sizes"]["n_context"] > 1024 - 256, result


def test_a_prestarted_worker_answers_the_first_determinism_check() -> None:
    """``tabzoo conformance`` starts the fresh-process worker before its first check (issue 23 item
    9: a cold start cost the first determinism check minutes of waiting under load); the warm-up
    answer is consumed, and the check still runs its probe in that worker."""
    from kit_models.broken import icl_case
    from tabzoo.testing.checks import fresh

    fresh._stop()
    fresh.prestart()
    assert fresh._WORKER and fresh._WORKER[0].pending == 1
    worker = fresh._WORKER[0]
    result = run_check(icl_case("tiny_icl"), cap.DETERMINISM)
    assert result.status == "passed", result
    assert fresh._WORKER[0] is worker and worker.pending == 0
    hashed = run_check(icl_case("hash_seeded", "kit_models.broken_v3:HashSeeded"), cap.DETERMINISM)
    assert hashed.status == "failed" and "fresh Python process" in hashed.message
