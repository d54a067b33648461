"""Pickle-free save / load of a fitted ``MultiTabEstimator`` (safetensors + JSON through the core's
checkpoint functions): bit-identical predictions, every per-task snapshot kept, refusals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("sklearn", reason="the estimator needs the sklearn extra")

from tabzoo.checkpoint import save_checkpoint  # noqa: E402
from tabzoo.errors import CheckpointError, TabzooInputError  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402

SMALL = dict(d_embed=8, n_heads=2, row_heads=2, n_layers=1, hidden=(16,), batch_size=32, n_context=24,
             skip_hidden=16, lr=3e-3, max_epochs=8, patience=3)


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Mixed features (a string column) and three targets: regression, str labels, int labels."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    X = np.empty((n, 4), dtype=object)
    X[:, :3] = x
    X[:, 3] = np.where(x[:, 0] > 0, "a", "b")
    Y = np.empty((n, 3), dtype=object)
    Y[:, 0] = x[:, 0] + 0.3 * rng.normal(size=n)
    Y[:, 1] = np.where(x[:, 1] + 0.3 * rng.normal(size=n) > 0, "yes", "no")
    Y[:, 2] = np.digitize(x[:, 2], [-0.5, 0.5])
    return X, Y


def _fit(select: str, architecture: str = "multitab") -> tuple[MultiTabEstimator, np.ndarray]:
    X, Y = _data(160, 0)
    est = MultiTabEstimator(architecture=architecture, task_types=["regression", "binary", "multiclass"],
                            select=select, **SMALL)  # type: ignore[arg-type]
    return est.fit(X, Y), _data(50, 1)[0]


@pytest.mark.parametrize(("select", "architecture"),
                         [("joint", "multitab"), ("per_task", "multitab"), ("guarded", "multitab"), ("per_task", "mmoe")])
def test_round_trip_predictions_are_bit_identical(tmp_path: Path, select: str, architecture: str) -> None:
    est, Xt = _fit(select, architecture)
    stem = est.save(tmp_path / "mt")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mt.json", "mt.model.json", "mt.model.safetensors",
                                                           "mt.safetensors"]
    state = torch.random.get_rng_state()
    back = MultiTabEstimator.load(stem)
    assert torch.equal(torch.random.get_rng_state(), state)  # loading leaves the caller's RNG alone
    np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))
    for a, b in zip(back.predict_proba(Xt), est.predict_proba(Xt), strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(back.predict_outputs(Xt), est.predict_outputs(Xt), strict=True):
        np.testing.assert_array_equal(a, b)
    assert back.task_epochs_ == est.task_epochs_ and back.selection_ == est.selection_
    assert back.temperatures_ == est.temperatures_ and back.get_params() == est.get_params()
    if select == "joint":
        assert back.task_model_ is None
    else:  # every per-task snapshot travels
        assert est.task_model_ is not None and back.task_model_ is not None
        assert len(back.task_model_.nets) == len(est.task_model_.nets) == len(set(est.task_epochs_))
        assert back.task_model_.task_epochs == est.task_model_.task_epochs


def test_single_output_round_trip(tmp_path: Path) -> None:
    X, Y = _data(120, 2)
    est = MultiTabEstimator(**SMALL).fit(X, Y[:, 1])  # type: ignore[arg-type]
    back = MultiTabEstimator.load(est.save(tmp_path / "one.json"))  # a suffix names the same stem
    Xt = _data(30, 3)[0]
    np.testing.assert_array_equal(back.predict(Xt), est.predict(Xt))
    assert back.predict(Xt).ndim == 1 and set(back.predict(Xt)) <= {"yes", "no"}


def test_overwrite_is_refused_unless_asked(tmp_path: Path) -> None:
    est, Xt = _fit("joint")
    est.save(tmp_path / "mt")
    with pytest.raises(TabzooInputError, match="already exist.*overwrite=True"):
        est.save(tmp_path / "mt")
    other, _ = _fit("per_task")
    other.save(tmp_path / "mt", overwrite=True)
    np.testing.assert_array_equal(MultiTabEstimator.load(tmp_path / "mt").predict(Xt), other.predict(Xt))


def test_missing_file_is_named(tmp_path: Path) -> None:
    est, _ = _fit("joint")
    stem = est.save(tmp_path / "mt")
    (tmp_path / "mt.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"mt\.safetensors"):
        MultiTabEstimator.load(stem)
    with pytest.raises(CheckpointError, match=r"nowhere\.model\.json"):
        MultiTabEstimator.load(tmp_path / "nowhere")


def test_a_foreign_or_mismatched_pair_is_refused(tmp_path: Path) -> None:
    # another model's checkpoint at the weights' path
    save_checkpoint(tmp_path / "x.model", torch.nn.Linear(2, 2), architecture="npt", config={})
    with pytest.raises(CheckpointError, match="npt"):
        MultiTabEstimator.load(tmp_path / "x")
    # the state of one saved estimator next to the weights of another: refused, not silently mixed
    a, _ = _fit("joint")
    a.save(tmp_path / "a")
    X, Y = _data(160, 0)
    b = MultiTabEstimator(task_types=["regression", "binary"], **SMALL).fit(X, Y[:, :2])  # type: ignore[arg-type]
    b.save(tmp_path / "b")
    (tmp_path / "b.model.json").replace(tmp_path / "a.model.json")
    (tmp_path / "b.model.safetensors").replace(tmp_path / "a.model.safetensors")
    with pytest.raises(CheckpointError, match="different saved estimators"):
        MultiTabEstimator.load(tmp_path / "a")
    # a subclass's pair is refused by the base class
    class Other(MultiTabEstimator):
        pass

    Other(**SMALL).fit(X, Y[:, 0].astype(float)).save(tmp_path / "o")  # type: ignore[arg-type]
    with pytest.raises(CheckpointError, match="Other"):
        MultiTabEstimator.load(tmp_path / "o")


def test_unfitted_estimator_cannot_be_saved(tmp_path: Path) -> None:
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        MultiTabEstimator().save(tmp_path / "mt")
