"""Save / load of fitted NPT estimators: bit-identical predictions, no silent overwrite."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the estimators need scikit-learn (tabzoo-npt[sklearn])")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tabzoo.errors import CheckpointError, TabzooInputError  # noqa: E402
from tabzoo_npt import NPTClassifier, NPTRegressor  # noqa: E402

FAST = {"preset": "tiny", "steps": 3, "validation_fraction": 0.0}


@settings(max_examples=6, deadline=None)
@given(n=st.integers(4, 30), d=st.integers(1, 4), k=st.integers(2, 4), seed=st.integers(0, 2**16),
       strings=st.booleans())
def test_classifier_round_trip_is_bit_identical(n: int, d: int, k: int, seed: int, strings: bool) -> None:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    X[rng.random((n, d)) < 0.1] = np.nan  # missing cells stay masked through the reload
    y = np.arange(n) % k
    labels = np.array([f"c{i}" for i in y], dtype=object) if strings else y
    clf = NPTClassifier(**FAST, random_state=seed).fit(X, labels)
    Xq = rng.standard_normal((7, d))
    with tempfile.TemporaryDirectory() as tmp:
        clf.save(Path(tmp) / "clf")
        back = NPTClassifier.load(Path(tmp) / "clf")
    assert np.array_equal(back.predict_proba(Xq), clf.predict_proba(Xq))
    assert np.array_equal(back.predict(Xq), clf.predict(Xq))
    assert back.classes_.tolist() == clf.classes_.tolist()


@settings(max_examples=6, deadline=None)
@given(n=st.integers(4, 30), d=st.integers(1, 4), t=st.integers(1, 2), scale=st.sampled_from([1e-6, 1.0, 1e200]),
       seed=st.integers(0, 2**16))
def test_regressor_round_trip_is_bit_identical(n: int, d: int, t: int, scale: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = rng.standard_normal((n, t)) * scale
    reg = NPTRegressor(**FAST, random_state=seed).fit(X, y if t > 1 else y[:, 0])
    Xq = rng.standard_normal((5, d))
    with tempfile.TemporaryDirectory() as tmp:
        reg.save(Path(tmp) / "reg.safetensors")  # a suffix names the same stem
        back = NPTRegressor.load(Path(tmp) / "reg")
    assert np.array_equal(back.predict(Xq), reg.predict(Xq))


def test_mixed_categorical_table_round_trips(tmp_path: Path) -> None:
    pd = pytest.importorskip("pandas", reason="a table with a text column needs pandas")
    X = pd.DataFrame({"a": np.arange(12.0), "b": ["x", "y", "z"] * 4})
    reg = NPTRegressor(**FAST).fit(X, np.arange(12.0))
    reg.save(tmp_path / "m")
    back = NPTRegressor.load(tmp_path / "m")
    assert np.array_equal(back.predict(X), reg.predict(X))
    assert list(back.feature_names_in_) == ["a", "b"]


def test_save_refuses_to_overwrite(tmp_path: Path) -> None:
    X, y = np.arange(20.0).reshape(10, 2), np.arange(10) % 2
    clf = NPTClassifier(**FAST).fit(X, y)
    clf.save(tmp_path / "m")
    before = (tmp_path / "m.model.safetensors").read_bytes()
    other = NPTClassifier(**FAST, random_state=1).fit(X, y)
    with pytest.raises(TabzooInputError, match="overwrite=True"):
        other.save(tmp_path / "m")
    assert (tmp_path / "m.model.safetensors").read_bytes() == before
    other.save(tmp_path / "m", overwrite=True)
    assert np.array_equal(NPTClassifier.load(tmp_path / "m").predict_proba(X), other.predict_proba(X))


def test_load_refuses_the_other_class(tmp_path: Path) -> None:
    X, y = np.arange(20.0).reshape(10, 2), np.arange(10) % 2
    NPTClassifier(**FAST).fit(X, y).save(tmp_path / "m")
    with pytest.raises(CheckpointError, match="NPTClassifier"):
        NPTRegressor.load(tmp_path / "m")
