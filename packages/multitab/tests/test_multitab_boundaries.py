"""Issue 24: MultiTab standardises features and targets of any scale (no NaN, no collapse to 0),
refuses mixed label types and bad arguments, and raises a ``NotFittedError`` that is also a
``TabzooInputError`` when unfitted."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from sklearn.exceptions import NotFittedError
from tabzoo.errors import TabzooInputError
from tabzoo_multitab import MultiTabEstimator

FAST = {"max_epochs": 3, "d_embed": 8, "n_layers": 1, "n_context": 16, "val_fraction": 0.0, "calibration": None}


def _data(n: int = 48) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    return X, X[:, 0] - 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)


def test_huge_feature_values_are_standardised_not_lost() -> None:
    X, y = _data()
    ref = MultiTabEstimator(**FAST).fit(X, y).predict(X)
    big = X.copy()
    big[:, 0] *= 1e300  # std of this column overflowed to inf: the column became 0
    pred = MultiTabEstimator(**FAST).fit(big, y).predict(big)
    assert np.isfinite(pred).all()
    np.testing.assert_allclose(pred, ref, rtol=1e-4, atol=1e-4)


def test_huge_targets_are_standardised() -> None:
    X, y = _data()
    ref = MultiTabEstimator(**FAST).fit(X, y).predict(X)
    pred = MultiTabEstimator(**FAST).fit(X, y * 1e300).predict(X)
    assert np.isfinite(pred).all()
    np.testing.assert_allclose(pred / 1e300, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("y", [["a", 1] * 12, [True, 2] * 12, [[1, "x"], [2, 3]] * 12],
                         ids=["str-int", "bool-int", "2d-int-str"])
def test_mixed_label_types_are_refused(y: list) -> None:
    X = np.random.default_rng(0).normal(size=(24, 2))
    with pytest.raises(TabzooInputError, match="mixes label types"):
        MultiTabEstimator(**FAST).fit(X, y)


def test_unfitted_methods_raise_one_not_fitted_error() -> None:
    est = MultiTabEstimator()
    X = np.zeros((3, 2))
    for call in (lambda: est.predict(X), lambda: est.predict_outputs(X), lambda: est.score(X, [0, 1, 0]),
                 lambda: est.task_scores(X, [0, 1, 0])):
        with pytest.raises(NotFittedError, match="fit") as info:
            call()
        assert isinstance(info.value, TabzooInputError)


@pytest.mark.parametrize(("arg", "value"), [("max_epochs", 0), ("lr", -1.0), ("lr", float("nan")),
                                            ("dropout", 1.0), ("d_embed", 0), ("weight_decay", -1.0),
                                            ("n_context", -3), ("patience", 1.5), ("batch_size", 0)])
def test_bad_arguments_are_refused_before_training(arg: str, value: object) -> None:
    X, y = _data(12)
    with pytest.raises(TabzooInputError, match=f"{arg}={value!r}"):
        MultiTabEstimator(**{**FAST, arg: value}).fit(X, y)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_a_missing_cuda_device_is_refused() -> None:
    X, y = _data(12)
    with pytest.raises(TabzooInputError, match="CUDA device"):
        MultiTabEstimator(**FAST, device="cuda").fit(X, y)


def test_two_thousand_features_are_refused_at_once_with_the_estimate() -> None:
    # before: the parameters grow with the square of the column count (200 features: ~2.7 GB)
    from tabzoo.errors import MemoryLimitError

    X = np.random.default_rng(0).normal(size=(30, 2000))
    with pytest.raises(MemoryLimitError, match=r"would need about [0-9.]+ GiB .*parameters for 2001 tokens.*"
                                               r"Use fewer features.*TABZOO_MEMORY_LIMIT"):
        MultiTabEstimator(**FAST).fit(X, X[:, 0])


def test_the_memory_limit_is_checked_before_allocating(monkeypatch) -> None:
    from tabzoo.errors import MemoryLimitError

    X, y = _data(20)
    monkeypatch.setenv("TABZOO_MEMORY_LIMIT", "10KB")
    est = MultiTabEstimator(**FAST)
    with pytest.raises(MemoryLimitError, match=r"limit of 9.8 KiB \(TABZOO_MEMORY_LIMIT\)"):
        est.fit(X, y)
    assert not hasattr(est, "model_")


def test_task_types_follow_the_core_rule_and_say_when_ambiguous() -> None:
    """Issue 26 item 2: an integer target with many values is regression (with a warning), unless given."""
    from tabzoo.table.task_types import TaskTypeWarning

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    count = rng.integers(0, 40, size=60)  # 40 possible values: an amount
    label = rng.integers(0, 3, size=60)  # 3 values: class ids
    Y = np.stack([count, label], 1)
    with pytest.warns(TaskTypeWarning, match="taken as regression"):
        est = MultiTabEstimator(**FAST).fit(X, Y)
    assert [t.kind for t in est.tasks_] == ["regression", "multiclass"]
    forced = MultiTabEstimator(**FAST, task_types=["multiclass", "auto"]).fit(X, Y)
    assert [t.kind for t in forced.tasks_] == ["multiclass", "multiclass"]


def test_cli_predict_writes_one_named_probability_column_per_class(tmp_path: Any) -> None:
    """Issue 24/26: `tabzoo predict --model multitab` wrote one column `proba_[0 1 2]` holding P(class 0)."""
    import pandas as pd
    from tabzoo.cli import main

    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    frame["y"] = np.digitize(X[:, 0], [-0.5, 0.5])  # 3 classes 0, 1, 2
    frame.iloc[:60].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[60:].drop(columns="y").to_csv(tmp_path / "test.csv", index=False)
    out = tmp_path / "pred.csv"
    assert main(["predict", "--model", "multitab", "--train", str(tmp_path / "train.csv"),
                 "--test", str(tmp_path / "test.csv"), "--target", "y", "--out", str(out)]) == 0
    pred = pd.read_csv(out)
    assert list(pred.columns) == ["prediction", "proba_0", "proba_1", "proba_2"]
    np.testing.assert_allclose(pred[["proba_0", "proba_1", "proba_2"]].sum(axis=1), 1.0, atol=1e-6)
