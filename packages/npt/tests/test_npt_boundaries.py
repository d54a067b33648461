"""Issue 24: NPT's estimators standardise targets of any scale, refuse bad arguments before
training, and raise a ``NotFittedError`` that is also a ``TabzooInputError`` when unfitted."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("sklearn", reason="the estimators need the sklearn extra")
from sklearn.exceptions import NotFittedError  # noqa: E402
from tabzoo.errors import TabzooInputError  # noqa: E402
from tabzoo_npt import NPTClassifier, NPTImputer, NPTRegressor  # noqa: E402

FAST = {"preset": "tiny", "steps": 8, "lr": 1e-2, "validation_fraction": 0.0}


@pytest.mark.parametrize("scale", [1e300, 1e-300])
def test_regressor_targets_of_any_scale_give_finite_predictions(scale: float) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = (X[:, 0] + 0.1 * rng.normal(size=40)) * scale
    ref = NPTRegressor(**FAST).fit(X, y / scale).predict(X)
    pred = NPTRegressor(**FAST).fit(X, y).predict(X)
    assert np.isfinite(pred).all()
    # standardised targets: the same model in other units
    np.testing.assert_allclose(pred / scale, ref, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("est", [NPTClassifier(), NPTRegressor(), NPTImputer()], ids=lambda e: type(e).__name__)
def test_unfitted_methods_raise_one_not_fitted_error(est) -> None:
    X = np.zeros((3, 2))
    methods = [m for m in ("predict", "predict_proba", "transform") if hasattr(est, m)]
    assert methods
    for m in methods:
        with pytest.raises(NotFittedError, match="fit") as info:
            getattr(est, m)(X)
        assert isinstance(info.value, TabzooInputError)


@pytest.mark.parametrize(("arg", "value"), [("steps", 0), ("steps", -5), ("lr", 0.0), ("lr", float("inf")),
                                            ("dropout", 1.5), ("batch_size", 0), ("context_size", -1),
                                            ("validation_fraction", 1.0), ("p_feature", 2.0), ("dim", 0)])
def test_bad_arguments_are_refused_before_training(arg: str, value: object, monkeypatch) -> None:
    import tabzoo_npt.estimators as mod

    monkeypatch.setattr(mod, "fit_npt", lambda *a, **k: pytest.fail("trained with a bad argument"))
    X, y = np.zeros((10, 2)), np.arange(10) % 2
    for cls in (NPTClassifier, NPTRegressor):
        with pytest.raises(TabzooInputError, match=f"{arg}={value!r}: {arg} must be"):
            cls(**{arg: value}).fit(X, y)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_missing_cuda_device_is_refused() -> None:
    with pytest.raises(TabzooInputError, match="CUDA device"):
        NPTRegressor(**FAST, device="cuda").fit(np.zeros((10, 2)), np.arange(10.0))


def test_ten_thousand_features_are_refused_at_once_with_the_estimate() -> None:
    # before: NPT's parameters grow with the square of the column count, and 10,000 features
    # tried to allocate ~25 TiB (a raw RuntimeError after a long wait). Without the row-width cap
    # the memory estimate refuses them; with it (the default) the width limit does, naming the fix.
    from tabzoo.errors import MemoryLimitError

    X = np.random.default_rng(0).normal(size=(30, 10_000)).astype(np.float32)
    with pytest.raises(MemoryLimitError, match=r"would need about [0-9.]+ TiB .*parameters for 10001 columns.*"
                                               r"Use fewer features.*TABZOO_MEMORY_LIMIT"):
        NPTRegressor(**FAST, max_row_width=None).fit(X, X[:, 0])
    with pytest.raises(TabzooInputError, match=r"10001 columns .* exceed NPT's width limit of 256 columns.*PCA"):
        NPTRegressor(**FAST).fit(X, X[:, 0])


def test_parameters_grow_linearly_with_the_column_count() -> None:
    """The row-width cap: 2x the columns never more than doubles the parameters (the uncapped ABD
    layers grow 4x), 200 features stay far below the ~2.7 GB they took before, and widths up
    to the limit builds."""
    from tabzoo.kernels.memory import parameter_count
    from tabzoo_npt.model import NPT, row_dim

    est = NPTRegressor(preset="small")

    def params(columns: int, cap: int | None = 1024) -> int:
        est.max_row_width = cap
        cfg = est._config((0,) * columns)
        assert columns * cfg.dim <= (cap or columns * cfg.dim)
        return parameter_count(lambda: NPT(cfg))

    counts = {c: params(c) for c in (16, 32, 64, 128, 256)}
    for c in (32, 64, 128):
        assert counts[2 * c] <= 2 * counts[c]
    assert params(64, None) > 3.5 * params(32, None)  # uncapped: quadratic
    assert params(201) * 4 < 100e6  # 200 features + target: 65 MB of float32 weights (2.7 GB uncapped)
    assert row_dim(256, 32) == 4 and row_dim(10, 32) == 32 and row_dim(100, 32, None) == 32


def test_the_memory_limit_is_checked_before_allocating(monkeypatch) -> None:
    from tabzoo.errors import MemoryLimitError

    X = np.random.default_rng(0).normal(size=(40, 3))
    monkeypatch.setenv("TABZOO_MEMORY_LIMIT", "64KB")
    for est in (NPTClassifier(**FAST), NPTImputer(preset="tiny", steps=2)):
        with pytest.raises(MemoryLimitError, match=r"limit of 62.5 KiB \(TABZOO_MEMORY_LIMIT\)"):
            est.fit(X, (X[:, 0] > 0).astype(int))
        assert not hasattr(est, "model_")
    monkeypatch.setenv("TABZOO_MEMORY_LIMIT", "off")
    NPTImputer(preset="tiny", steps=2).fit(X)
