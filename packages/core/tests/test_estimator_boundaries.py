"""Issue 24 items 5 and 6 in the core: the not-fitted error, argument and label checks at the
boundary, and overflow-safe standardisation of targets of any scale."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.table.validation import check_number, check_target_values

pytest.importorskip("sklearn", reason="tabzoo.estimators needs the sklearn extra")
from sklearn.exceptions import NotFittedError as SklearnNotFittedError  # noqa: E402
from tabzoo.estimators import resolve_device  # noqa: E402
from tabzoo.estimators.scaling import finite_mean_std, standardize_targets, unstandardize  # noqa: E402
from tabzoo.estimators.sk import BaseEstimator, check_is_fitted, check_params  # noqa: E402


def test_not_fitted_is_both_a_tabzoo_and_an_sklearn_error() -> None:
    from tabzoo.errors import NotFittedError

    assert issubclass(NotFittedError, TabzooInputError) and issubclass(NotFittedError, SklearnNotFittedError)
    with pytest.raises(NotFittedError, match=r"Est instance is not fitted yet\. Call fit"):
        check_is_fitted(type("Est", (BaseEstimator,), {"fit": lambda self: self})(), "model_")


@given(scale_exp=st.integers(-300, 300), n=st.integers(2, 30), t=st.integers(1, 3), seed=st.integers(0, 99))
def test_standardize_targets_of_any_scale(scale_exp: int, n: int, t: int, seed: int) -> None:
    y = np.random.default_rng(seed).normal(size=(n, t)) * 10.0**scale_exp
    mean, scale, z = standardize_targets(y)
    assert np.isfinite(mean).all() and np.isfinite(scale).all() and np.isfinite(z).all()
    np.testing.assert_allclose(z.mean(0), 0.0, atol=1e-9)
    np.testing.assert_allclose(z.std(0), 1.0, rtol=1e-9)
    np.testing.assert_allclose(unstandardize(z, mean, scale), y, rtol=1e-9, atol=0)


def test_standardize_near_the_float64_limit_and_constants() -> None:
    y = np.array([1e308, -1e308, 5e307, 1.7e308])
    mean, scale, z = standardize_targets(y)
    assert np.isfinite(z).all() and np.isfinite(scale).all()
    assert np.isfinite(unstandardize(z * 100, mean, scale)).all()  # clipped to the range, never inf
    mean, scale, z = standardize_targets(np.full(5, 3e300))
    assert scale[0] == 1.0 and np.all(z == 0) and mean[0] == pytest.approx(3e300)
    assert finite_mean_std(np.array([np.nan, 1e300, -1e300])) == (0.0, 1e300)
    assert finite_mean_std(np.array([np.nan])) == (0.0, 1.0)


@pytest.mark.parametrize(("kind", "bad"), [("positive_int", [0, -1, 1.5, True, "3", None]),
                                           ("positive", [0.0, -1e-9, float("nan"), float("inf")]),
                                           ("fraction", [1.0, -0.1, float("nan")]), ("unit", [1.01, -0.5])])
def test_check_number_refuses_with_the_name_and_what_it_must_be(kind: str, bad: list) -> None:
    for value in bad:
        with pytest.raises(TabzooInputError, match=f"steps={value!r}: steps must be"):
            check_number("steps", value, kind)


def test_check_params_names_the_estimator_and_skips_none() -> None:
    est = type("Est", (BaseEstimator,), {})()
    est.steps, est.lr, est.dim = 0, 0.1, None
    with pytest.raises(TabzooInputError, match="Est: steps=0"):
        check_params(est, positive_int=("steps", "dim"), positive=("lr",))
    est.steps = 3
    check_params(est, positive_int=("steps", "dim"), positive=("lr",))


@pytest.mark.parametrize(("config", "kwargs", "match"), [
    ("FineTune", {"steps": 0}, "FineTune: steps=0: steps must be an integer >= 1"),
    ("FineTune", {"lr": float("nan")}, "FineTune: lr=nan: lr must be a finite number > 0"),
    ("FineTune", {"validation_fraction": 1.0}, r"validation_fraction must be a finite number in \(0, 1\)"),
    ("FitConfig", {"max_steps": 2.5}, "FitConfig: max_steps=2.5: max_steps must be an integer >= 1"),
    ("FitConfig", {"max_epochs": 3, "lookahead_alpha": 2.0}, r"FitConfig: lookahead_alpha=2.0: .* in \[0, 1\]"),
])
def test_config_dataclasses_check_numbers_the_one_way(config: str, kwargs: dict, match: str) -> None:
    """The core's config dataclasses check their numbers with :func:`tabzoo.params.check_params`:
    one rule and one message style (issue 31), naming the class, the setting and what it must be."""
    import tabzoo.train
    from tabzoo.table.errors import InvalidValueError

    with pytest.raises(InvalidValueError, match=match):
        getattr(tabzoo.train, config)(**kwargs)


def test_the_number_checks_import_no_torch() -> None:
    """Plugins' config dataclasses use them while registering, which must not import torch."""
    import subprocess
    import sys

    code = "import sys, tabzoo.params; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_check_target_values() -> None:
    assert check_target_values("y", [0, 1, 1], "classification", 3, (0, 1)).dtype == np.float64
    with pytest.raises(TabzooInputError, match="every label is missing"):
        check_target_values("y", [np.nan, np.nan], "regression")
    with pytest.raises(TabzooInputError, match="row 1 is 7.0"):
        check_target_values("y", [1, 7.0], "classification", classes=(0, 1))
    with pytest.raises(TabzooInputError, match="one label per row"):
        check_target_values("y", [1.0], "regression", n_rows=2)
    with pytest.raises(TabzooInputError, match="task kind"):
        check_target_values("y", [1.0], "ranking")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_resolve_device_refuses_a_missing_cuda() -> None:
    for dev in ("cuda", "cuda:1"):
        with pytest.raises(TabzooInputError, match="0 CUDA device"):
            resolve_device(dev)
    assert resolve_device("cpu").type == "cpu"
