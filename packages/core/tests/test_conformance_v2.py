"""Meta-tests of kit v2 (issue 9): one broken model per class of weakness, each one the first kit
passed (verified with benchmarks/kit_v2_old_kit_check.py against the old kit) and v2 catches."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch
from kit_models import broken_v2 as b2
from kit_models.broken import NonDeterministic, PositionalContext, QuerySeesQuery, icl_case
from tabzoo.errors import TabzooInputError
from tabzoo.testing import ConformanceCase, ScalingAxis, check_conformance, replay
from tabzoo.testing import capabilities as cap
from tabzoo.testing.checks import CHECKS
from tabzoo.testing.runner import registration_results

QQ = "shown by tests/test_conformance_v2.py::test_replay_reproduces_the_same_discrepancy"
"""The test that shows QuerySeesQuery failing query independence (an expected failure links one)."""


def _run(case: Any, check: str, **kw: Any) -> Any:
    return CHECKS[check](case, seed=0, max_examples=kw.pop("max_examples", 6), **kw)


def _caught(result: Any, check: str) -> None:
    assert result.status == "failed", f"{check} did not catch the broken model: {result}"
    assert result.check == check and check in result.message
    assert json.loads(result.reproducer["replay"])["check"] == check


# -- 1. evidence is not proof ----------------------------------------------------------------
def test_masks_the_forward_breaks_fail_the_mask_claim() -> None:
    result = _run(icl_case("lm", masks=b2.lying_masks), cap.QUERY_INDEPENDENCE)
    _caught(result, cap.QUERY_INDEPENDENCE)
    assert "mask claim" in result.message and "unreachable_rows" in result.reproducer


def test_masks_alone_no_longer_prove_no_context_query_leak() -> None:
    from tabzoo.masks import context_query

    case = icl_case("cqm", b2.NormalisesOverAllRows, masks=lambda nc, n: [context_query(nc)], context_repr=None)
    _caught(_run(case, cap.NO_CONTEXT_QUERY_LEAK), cap.NO_CONTEXT_QUERY_LEAK)


@pytest.mark.parametrize("context_repr", [None, b2.lying_context_repr], ids=["absent", "lying"])
def test_leak_checks_use_query_outputs_without_trusting_context_repr(context_repr: Any) -> None:
    case = icl_case("cqr", b2.NormalisesOverAllRows, masks=None, context_repr=context_repr)
    result = _run(case, cap.NO_CONTEXT_QUERY_LEAK)
    _caught(result, cap.NO_CONTEXT_QUERY_LEAK)
    assert "kept_row" in result.reproducer


def test_undecidable_leak_is_skipped_and_counts_as_not_proven(capsys: pytest.CaptureFixture[str]) -> None:
    from tabzoo.cli.conformance_cmd import _summarise

    case = icl_case("qq", QuerySeesQuery, masks=None, context_repr=None, expected_failures={
        cap.QUERY_INDEPENDENCE: f"Query rows attend to each other by design in this model, {QQ}."})
    result = _run(case, cap.NO_CONTEXT_QUERY_LEAK)
    assert result.status == "skipped" and result.message.startswith("not proven") and not result.proven
    report = _summarise([result], strict=False)
    assert report["exit_code"] == 3 and report["not_proven"][0]["check"] == cap.NO_CONTEXT_QUERY_LEAK
    assert _summarise([result], strict=True)["exit_code"] == 1


@pytest.mark.parametrize("model", [b2.PairwiseDistance, b2.ChunkedQuadratic], ids=["cdist", "chunked"])
def test_kit_counts_elementwise_work_and_ignores_the_declared_cost(model: type) -> None:
    def rows(n: int, seed: int) -> tuple[Any, ...]:
        g = torch.Generator().manual_seed(seed)
        return torch.randn(1, n, 4, generator=g), torch.remainder(torch.arange(n), 3).float()[None], n // 2

    axis = ScalingAxis(rows, base_n=64, cost=lambda n: 100.0 * n)  # the plugin claims linear cost
    result = _run(icl_case("pd", model, scaling_axes={cap.LINEAR_IN_ROWS: axis}), cap.LINEAR_IN_ROWS)
    _caught(result, cap.LINEAR_IN_ROWS)
    assert result.details["sizes"][0] >= 4096 and result.details["slopes"]["declared_flops"] == pytest.approx(1.0)
    assert result.details["slopes"]["elements"] > 1.5


@pytest.mark.slow
def test_work_outside_torch_ops_is_caught_by_wall_time() -> None:
    result = _run(icl_case("np", b2.NumpyPairwise), cap.LINEAR_IN_ROWS)
    _caught(result, cap.LINEAR_IN_ROWS)
    assert "outside torch" in result.message and result.details["slopes"]["elements"] < 1.15


def test_plugin_bad_inputs_are_added_to_the_defaults() -> None:
    result = _run(icl_case("own", b2.OwnChecksOnly, bad_inputs=b2.own_bad_inputs), cap.BAD_INPUT)
    _caught(result, cap.BAD_INPUT)
    for cls in ("single class", "inf feature", "mixed label types"):
        assert cls in result.message, cls


def test_tol_scale_is_capped_and_the_effective_tolerance_reported() -> None:
    with pytest.raises(TabzooInputError, match="tol_scale"):
        icl_case("tol", b2.SlightlyPositional, tol_scale=1e4)
    result = _run(icl_case("tol", b2.SlightlyPositional, tol_scale=2), cap.CONTEXT_ORDER_INVARIANCE)
    _caught(result, cap.CONTEXT_ORDER_INVARIANCE)
    assert result.details["tolerance"] == {"atol": pytest.approx(2e-5), "rtol": pytest.approx(2e-5), "tol_scale": 2.0}


def test_expected_failures_need_a_sentence_and_are_listed() -> None:
    from tabzoo.cli.conformance_cmd import _summarise

    with pytest.raises(TabzooInputError, match="sentence"):
        icl_case("xf", NonDeterministic, expected_failures={cap.DETERMINISM: "noise"})
    reason = "Draws unseeded noise on purpose, shown by tests/test_conformance_api.py::test_on_fail_modes_and_expected_failures."
    results = check_conformance(icl_case("xf", NonDeterministic, expected_failures={cap.DETERMINISM: reason}),
                                on_fail=None, checks=[cap.DETERMINISM])
    listed = _summarise(results, strict=False)["expected_failures"]
    assert listed == [{"case": "xf", "check": cap.DETERMINISM, "status": "xfail", "reason": reason}]


# -- 2. inputs too small and too tame ----------------------------------------------------------
def test_large_phase_finds_bugs_of_large_contexts_and_shrinks_them() -> None:
    result = _run(icl_case("trunc", b2.TruncatesContext), cap.CONTEXT_ORDER_INVARIANCE)
    _caught(result, cap.CONTEXT_ORDER_INVARIANCE)
    assert result.reproducer["phase"] == "large" and 256 < result.reproducer["sizes"]["n_context"] <= 512


def test_ties_and_duplicates_catch_positional_tie_breaking() -> None:
    result = _run(icl_case("nn", b2.NearestNeighbourFirstIndex), cap.CONTEXT_ORDER_INVARIANCE, max_examples=10)
    _caught(result, cap.CONTEXT_ORDER_INVARIANCE)
    assert result.reproducer["duplicates"] is True


def test_scaling_starts_at_the_kit_floor() -> None:
    small_axis = ScalingAxis(lambda n, s: (torch.randn(1, n, 4), torch.remainder(torch.arange(n), 3).float()[None],
                                           n // 2), base_n=64)
    result = _run(icl_case("qa", b2.QuadraticAbove, scaling_axes={cap.LINEAR_IN_ROWS: small_axis}), cap.LINEAR_IN_ROWS)
    _caught(result, cap.LINEAR_IN_ROWS)


@pytest.mark.parametrize("model", [b2.WarmsUp, b2.ShapeCache, b2.FeatureCache], ids=["drift", "shape", "feature"])
def test_determinism_catches_state_drift_and_stale_caches(model: type) -> None:
    result = _run(icl_case("st", model), cap.DETERMINISM)
    _caught(result, cap.DETERMINISM)
    assert ("against call 1" in result.message) == (model is b2.WarmsUp)


def test_batch_independence() -> None:
    result = _run(icl_case("bs", b2.BatchStandardised), cap.BATCH_INDEPENDENCE)
    _caught(result, cap.BATCH_INDEPENDENCE)
    assert result.reproducer["sizes"]["batch"] >= 2 and 0 <= result.reproducer["episode"] < 4
    first_only = _run(icl_case("b0", b2.FirstEpisodeStatistics), cap.BATCH_INDEPENDENCE)
    _caught(first_only, cap.BATCH_INDEPENDENCE)


def test_query_rows_may_not_depend_on_how_many_other_query_rows_there_are() -> None:
    result = _run(icl_case("nq", b2.ScalesByQueryCount), cap.QUERY_INDEPENDENCE)
    _caught(result, cap.QUERY_INDEPENDENCE)
    assert "removed" in result.message


# -- 3. a claim is not optional --------------------------------------------------------------
def test_minimum_capabilities_are_enforced_at_construction() -> None:
    fewer = cap.MINIMUM["in-context"] - {cap.QUERY_INDEPENDENCE}
    with pytest.raises(TabzooInputError, match="query_independence"):
        ConformanceCase("few", make_model=lambda s: None, capabilities=fewer)
    reason = f"Query rows attend to each other, as the paper's architecture requires, {QQ}."
    ConformanceCase("few", make_model=lambda s: None, capabilities=fewer,
                    expected_failures={cap.QUERY_INDEPENDENCE: reason})
    for protocol, minimum in cap.MINIMUM.items():
        with pytest.raises(TabzooInputError, match="minimum"):
            ConformanceCase("p", make_model=lambda s: None, protocol=protocol, capabilities=set(minimum)
                            - {cap.DETERMINISM})


def test_architecture_spec_and_case_capabilities_must_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    from tabzoo.plugins import ArchitectureSpec, get_registry
    from tabzoo.plugins.manager import PluginRecord, _Entry

    registry = get_registry()
    spec = ArchitectureSpec(name="spec_mismatch", build=lambda c: None, capabilities={cap.QUERY_INDEPENDENCE})
    monkeypatch.setitem(registry.items["architectures"], "spec_mismatch",
                        _Entry(spec, PluginRecord("x", "x", "1", "x")))
    (bad,) = registration_results(icl_case("spec_mismatch"))
    assert bad.status == "failed" and "only the case claims" in bad.message
    (missing,) = registration_results(icl_case("other", architecture="not_registered_anywhere"))
    assert missing.status == "failed"
    same = ArchitectureSpec(name="spec_mismatch", build=lambda c: None, capabilities=icl_case().capabilities)
    monkeypatch.setitem(registry.items["architectures"], "spec_mismatch", _Entry(same, PluginRecord("x", "x", "1", "x")))
    assert registration_results(icl_case("spec_mismatch"))[0].status == "passed"


def test_non_module_models_must_round_trip_through_a_state_dict_protocol() -> None:
    opts: dict[str, Any] = {"context_repr": None, "masks": None}
    result = _run(ConformanceCase("plain", make_model=b2.PlainKNN, capabilities=cap.IN_CONTEXT_DEFAULTS, **opts),
                  cap.CHECKPOINT_ROUNDTRIP)
    _caught(result, cap.CHECKPOINT_ROUNDTRIP)
    assert "state_dict" in result.message
    ok = _run(ConformanceCase("plain", make_model=b2.PlainKNNWithState, capabilities=cap.IN_CONTEXT_DEFAULTS, **opts),
              cap.CHECKPOINT_ROUNDTRIP)
    assert ok.status == "passed", ok


# -- 4. reproducers ----------------------------------------------------------------------------
@pytest.mark.parametrize(("make", "check"), [
    (lambda: icl_case("pc", PositionalContext), cap.CONTEXT_ORDER_INVARIANCE),
    (lambda: icl_case("qq", QuerySeesQuery, masks=None), cap.QUERY_INDEPENDENCE),
    (lambda: icl_case("bs", b2.BatchStandardised), cap.BATCH_INDEPENDENCE),
    (lambda: icl_case("sc", b2.ShapeCache), cap.DETERMINISM),
], ids=["permutation", "changed-row", "episode", "determinism"])
def test_replay_reproduces_the_same_discrepancy(make: Any, check: str) -> None:
    case = make()
    result = _run(case, check)
    _caught(result, check)
    spec = json.loads(result.reproducer["replay"])
    assert {"model_seed"} <= set(spec) and (check == cap.DETERMINISM or {"data_seed", "sizes"} <= set(spec))
    again = replay(case, result.reproducer["replay"])
    assert again.status == "failed" and again.discrepancy == pytest.approx(result.discrepancy)
    assert result.replay.startswith(f"tabzoo conformance {case.name} --replay '")


def test_failures_name_the_right_cause() -> None:
    case = icl_case("noisy", b2.NoisyLabelLeakFree, forward=lambda m, x, y, nc: m(x, y, nc))
    leak = _run(case, cap.LABEL_LEAK)
    assert leak.status == "error" and "non-determinism" in leak.message and "label_leak violated" not in leak.message
    drift = icl_case("drift", b2.WarmsUp)
    assert _run(drift, cap.LABEL_LEAK).status == "passed"  # fresh models: drift does not pose as a leak
    assert _run(drift, cap.DETERMINISM).status == "failed"
