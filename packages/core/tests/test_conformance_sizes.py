"""Meta-tests of the size search (issue 23, item 2): models that break above 4 features or above
10 classes are caught by the property named for them and shrunk to the smallest failing size; the
correct wide control passes; the profiles reach the sizes the issue asks for."""

from __future__ import annotations

import pytest
from kit_models.broken_sizes import BROKEN_SIZES, wide_case
from tabzoo.testing import capabilities as cap
from tabzoo.testing import run_check

BROKEN = [(check, what, make, want) for check, items in BROKEN_SIZES.items() for what, make, want in items]


@pytest.mark.parametrize(("check", "what", "make", "want"), BROKEN, ids=[f"{c}-{w}" for c, w, _, _ in BROKEN])
def test_size_gallery_model_is_caught_at_its_smallest_failing_size(check: str, what: str, make: object,
                                                                   want: dict[str, int]) -> None:
    result = run_check(make(), check, max_examples=4)  # type: ignore[operator]
    assert result.status == "failed", f"{check} did not catch '{what}': {result}"
    sizes = result.reproducer["sizes"]
    assert {k: sizes[k] for k in want} == want, sizes  # shrunk to the threshold, not just below the maximum


@pytest.mark.parametrize("check", [cap.QUERY_INDEPENDENCE, cap.CONTEXT_ORDER_INVARIANCE, cap.FINITE_OUTPUTS])
def test_wide_control_passes(check: str) -> None:
    assert run_check(wide_case(), check, max_examples=4).status == "passed"


def test_profiles_reach_the_issue_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    from tabzoo.testing.checks.sizes import PROFILE_ENV, bounds, largest_spec

    case = wide_case()
    small = largest_spec(case, 0)["sizes"]
    assert small["n_features"] == 16 and small["n_classes"] == 12  # default: CI stays fast
    monkeypatch.setenv(PROFILE_ENV, "thorough")
    big = largest_spec(case, 0)["sizes"]
    assert big["n_context"] >= 4096 and big["n_features"] >= 64 and big["n_classes"] >= 12
    assert bounds(case)["n_features"] == (1, 64)


def test_a_fixed_width_case_is_not_searched() -> None:
    from kit_models.broken import icl_case
    from tabzoo.testing.checks.sizes import bounds, largest_spec

    case = icl_case()
    assert bounds(case) == {"n_features": (4, 4)}
    assert largest_spec(case, 0)["sizes"]["n_features"] == 4 and "n_classes" not in largest_spec(case, 0)["sizes"]

