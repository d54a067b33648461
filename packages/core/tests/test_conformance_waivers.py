"""ConformanceCheck (the plugins' own test files) reports a skipped check as NOT proven unless the
case waives it with a reason (issue 23, item 7's rule in the per-plugin tests)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from tabzoo.errors import TabzooInputError
from tabzoo.testing import ConformanceCase
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import CheckResult
from tabzoo.testing.runner import ConformanceCheck


@pytest.fixture
def skipping(monkeypatch: pytest.MonkeyPatch) -> None:
    from tabzoo.testing import runner

    def skipped(case: ConformanceCase, check: str, **kw: object) -> CheckResult:
        return CheckResult(check, case.name, "skipped", message="not proven: no backend besides the reference ran")

    monkeypatch.setattr(runner, "run_check", skipped)


def _case(**kw: object) -> ConformanceCase:
    from kit_models.broken import icl_case

    return replace(icl_case(), **kw)


def test_a_skip_without_waiver_fails(skipping: None) -> None:
    with pytest.raises(AssertionError, match="not proven.*waivers="):
        ConformanceCheck(cap.KERNEL_EQUIVALENCE)(_case())


def test_a_waived_skip_is_a_skip_with_its_reason(skipping: None) -> None:
    reason = "the fused backends of this model need a CUDA GPU"
    with pytest.raises(pytest.skip.Exception, match=f"waived: {reason}"):
        ConformanceCheck(cap.KERNEL_EQUIVALENCE)(_case(waivers={cap.KERNEL_EQUIVALENCE: reason}))


def test_a_waiver_needs_a_reason_and_a_known_check() -> None:
    with pytest.raises(TabzooInputError, match="waivers"):
        _case(waivers={cap.KERNEL_EQUIVALENCE: "gpu"})
    with pytest.raises(TabzooInputError, match="waivers"):
        _case(waivers={"speed": "it is a fine and long enough reason"})


def test_the_fresh_process_locator_matches_name_and_plugin_not_closure_identity(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from kit_models.broken import icl_case
    from tabzoo.testing.checks import fresh

    def build() -> ConformanceCase:
        return replace(icl_case("closures", context_repr=None), factory=None)  # new closures at each call

    registered = build()
    monkeypatch.setattr(fresh, "_registered", lambda name, plugin=None: [("my-plugin", registered)])
    again = build()
    assert again.make_model is not registered.make_model
    assert fresh.locate(again) == {"name": "closures", "plugin": "my-plugin"}
    assert fresh.locate(replace(again, config={"d": 99})) is None  # another case of the same name
