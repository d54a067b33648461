"""In-context estimators: preprocessing, ensembling, chunking, save/load, errors."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from _icl_testmodel import ICLTestClassifier, ICLTestRegressor, build
from sklearn.datasets import load_iris, make_classification, make_regression
from tabzoo.errors import TabzooInputError
from tabzoo.estimators import TabularPreprocessor, make_members, resolve_device, soft_clip


def _data(n: int = 120, classes: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    X, y = make_classification(n_samples=n, n_features=6, n_informative=4, n_classes=classes,
                               random_state=seed)
    return X, y


# -- preprocessing ---------------------------------------------------------------------------------
def test_preprocessing_encodes_each_column_type_and_fits_on_train_only() -> None:
    train = pd.DataFrame({
        "num": [1.0, 2.0, np.nan, 4.0, 100.0],
        "cat": pd.Categorical(["b", "a", None, "b", "a"], categories=["b", "a", "z"]),
        "txt": ["x", "y", "x", None, "y"],
        "flag": [True, False, None, True, False],
    })
    pre = TabularPreprocessor().fit(train)
    assert pre.kinds == ["numeric", "categorical", "categorical", "boolean"]
    assert pre.columns[1].categories == ("b", "a")  # pandas order, unused "z" dropped
    out = pre.transform(train)
    assert out.dtype == np.float32 and np.isfinite(out).all()
    # missing numeric -> training median: equals the transformed median row value
    assert out[2, 0] == pytest.approx(0.0, abs=1e-6)
    # missing categorical and unseen category -> the same separate code, below every category
    test = pd.DataFrame({"num": [2.0], "cat": pd.Categorical(["z"], categories=["b", "a", "z"]),
                         "txt": ["never seen"], "flag": [None]})
    t = pre.transform(test)
    assert t[0, 1] == out[2, 1] and t[0, 1] < out[:, 1].max()
    assert t[0, 2] == out[3, 2] and t[0, 2] < min(out[0, 2], out[1, 2])
    # missing boolean -> 0.5, halfway between False and True
    assert t[0, 3] == pytest.approx((out[0, 3] + out[1, 3]) / 2)
    # statistics do not depend on the rows transformed later
    np.testing.assert_array_equal(pre.transform(train.iloc[:2]), out[:2])


def test_numpy_object_arrays_and_soft_clipping() -> None:
    X = np.array([["a", 1.0], ["b", 2.0], ["a", np.nan], ["c", 3.0]], dtype=object)
    pre = TabularPreprocessor().fit(X)
    assert pre.kinds == ["categorical", "numeric"]
    z = np.array([-100.0, -4.0, 0.5, 4.0, 1e6])
    c = soft_clip(z, 4.0)
    assert np.all(np.diff(c) > 0) and c[2] == 0.5 and c[3] == 4.0 and c[-1] < 20
    heavy = np.r_[np.random.default_rng(0).normal(size=99), 1e9][:, None]
    assert TabularPreprocessor().fit_transform(heavy).max() < 30


def test_encode_then_standardize_is_transform_and_can_keep_missing() -> None:
    df = pd.DataFrame({"n": [1.0, np.nan, 3.0, 50.0], "c": ["u", "v", None, "u"], "b": [True, None, False, True]})
    pre = TabularPreprocessor().fit(df)
    enc = pre.encode(df)
    assert enc[:, 1].tolist() == [0.0, 1.0, -1.0, 0.0]  # category index, -1 = missing
    assert np.isnan(enc[1, 0]) and np.isnan(enc[1, 2]) and enc[0, 2] == 1.0
    np.testing.assert_array_equal(pre.standardize(enc), pre.transform(df))
    kept = pre.standardize(enc, impute=False)
    assert np.isnan(kept[1, 0]) and np.isnan(kept[1, 2])  # missing stays missing
    present = ~np.isnan(kept)
    np.testing.assert_array_equal(kept[present], pre.transform(df)[present])
    with pytest.raises(TabzooInputError, match="infinite"):
        pre.encode(df.assign(n=[1.0, np.inf, 3.0, 4.0]))


def test_standard_scaling_is_a_parameter_of_the_one_preprocessor() -> None:
    df = pd.DataFrame({"n": [1.0, np.nan, 3.0, 50.0], "c": ["u", "v", None, "u"]})
    pre = TabularPreprocessor(clip=10.0, scaling="standard").fit(df)
    x = np.array([1.0, 3.0, 50.0])  # missing values left out of the mean and standard deviation
    assert (pre.center[0], pre.scale[0]) == pytest.approx((x.mean(), x.std()))
    assert pre.center[1] == TabularPreprocessor().fit(df).center[1]  # categorical codes stay robust
    again = TabularPreprocessor.from_state_dict(pre.state_dict())
    assert again.scaling == "standard"
    np.testing.assert_array_equal(again.transform(df), pre.transform(df))
    assert "scaling" not in TabularPreprocessor().fit(df).state_dict()  # robust states as before
    with pytest.raises(TabzooInputError, match="'robust' or 'standard'"):
        TabularPreprocessor(scaling="minmax")


def test_preprocessor_state_roundtrip() -> None:
    df = pd.DataFrame({"a": ["u", "v", "w"], "b": [1.5, np.nan, 3.0], "c": [True, False, True]})
    pre = TabularPreprocessor().fit(df)
    state = json.loads(json.dumps({k: (v.tolist() if isinstance(v, np.ndarray) else v)
                                   for k, v in pre.state_dict().items()}))
    again = TabularPreprocessor.from_state_dict(state)
    np.testing.assert_array_equal(again.transform(df), pre.transform(df))


def test_members_are_seeded_and_rotate_classes() -> None:
    a = make_members(4, 5, 3, seed=1)
    assert a == make_members(4, 5, 3, seed=1) and a != make_members(4, 5, 3, seed=2)
    assert a[0].features == (0, 1, 2, 3, 4) and [m.class_shift for m in a] == [0, 1, 2, 0]
    assert all(sorted(m.features) == list(range(5)) for m in a)
    sub = make_members(3, 10, 2, seed=0, max_features=4)
    assert all(len(m.features) == 4 and len(set(m.features)) == 4 for m in sub)


# -- classifier -----------------------------------------------------------------------------------
def test_classifier_learns_in_context_with_any_label_type() -> None:
    X, y = load_iris(return_X_y=True)
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    idx = np.random.default_rng(0).permutation(len(y))
    tr, te = idx[:100], idx[100:]
    clf = ICLTestClassifier(n_estimators=3, device="cpu").fit(X[tr], names[tr])
    assert list(clf.classes_) == ["setosa", "versicolor", "virginica"]
    assert (clf.predict(X[te]) == names[te]).mean() > 0.9
    proba = clf.predict_proba(X[te])
    assert proba.shape == (50, 3) and np.allclose(proba.sum(1), 1.0)
    # labels out of order and of another type give the same probabilities
    clf2 = ICLTestClassifier(n_estimators=3, device="cpu").fit(X[tr], -10 * y[tr] + 7)
    np.testing.assert_allclose(clf2.predict_proba(X[te])[:, ::-1], proba, atol=1e-6)


class _Weighted(ICLTestClassifier):
    """Unequal feature weights: the test model is no longer feature-permutation invariant."""

    def _load_model(self):
        model = build({})
        with torch.no_grad():
            model.feature_weight.copy_(torch.linspace(0.2, 2.0, model.max_features))
        return model


def test_chunking_and_ensembling() -> None:
    X, y = _data()
    big = _Weighted(n_estimators=4, chunk_size=1024, device="cpu").fit(X[:80], y[:80])
    small = _Weighted(n_estimators=4, chunk_size=7, device="cpu").fit(X[:80], y[:80])
    np.testing.assert_allclose(small.predict_proba(X[80:]), big.predict_proba(X[80:]), atol=1e-6)
    one = _Weighted(n_estimators=1, device="cpu").fit(X[:80], y[:80])
    assert not np.allclose(one.predict_proba(X[80:]), big.predict_proba(X[80:]), atol=1e-4)
    logits = _Weighted(n_estimators=4, average="logits", device="cpu").fit(X[:80], y[:80])
    p = logits.predict_proba(X[80:])
    assert np.allclose(p.sum(1), 1.0) and not np.allclose(p, big.predict_proba(X[80:]), atol=1e-4)
    seeded = _Weighted(n_estimators=4, random_state=3, device="cpu").fit(X[:80], y[:80])
    assert not np.allclose(seeded.predict_proba(X[80:]), big.predict_proba(X[80:]), atol=1e-4)
    again = _Weighted(n_estimators=4, device="cpu").fit(X[:80], y[:80])
    np.testing.assert_array_equal(again.predict_proba(X[80:]), big.predict_proba(X[80:]))


def test_class_shift_is_undone() -> None:
    """A model that always favours head position 0 must not bias a class after un-shifting."""

    class Biased(torch.nn.Module):
        max_classes = 3

        def forward(self, x, y_context):
            out = torch.zeros(x.shape[0], x.shape[1] - y_context.shape[1], 3)
            out[..., 0] = 5.0
            return out

    class Clf(ICLTestClassifier):
        def _load_model(self):
            return Biased()

    X, y = _data(classes=3)
    proba = Clf(n_estimators=3, device="cpu").fit(X, y).predict_proba(X[:5])
    np.testing.assert_allclose(proba, 1 / 3, atol=1e-12)  # each class got position 0 once


def test_progress_bar_and_device(capsys: pytest.CaptureFixture) -> None:
    X, y = _data()
    clf = ICLTestClassifier(n_estimators=1, chunk_size=10, verbose=True, device="auto").fit(X, y)
    clf.predict(X)
    assert "ICLTestClassifier.predict" in capsys.readouterr().err
    assert clf.device_ == str(resolve_device("auto"))
    assert resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(TabzooInputError, match="not a torch device"):
        resolve_device("tpu-please")


def test_save_load_is_pickle_free_and_exact(tmp_path: Path) -> None:
    X, y = load_iris(return_X_y=True)
    labels = np.array(["a", "b", "c"])[y]
    clf = ICLTestClassifier(n_estimators=3, random_state=4, device="cpu").fit(X, labels)
    with torch.no_grad():
        clf.model_.log_temp.fill_(-1.0)  # weights that differ from _load_model's must be restored
    stem = clf.save(tmp_path / "clf")
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["clf.json", "clf.model.json", "clf.model.safetensors", "clf.safetensors"]
    from tabzoo.checkpoint import estimator_files, model_stem

    assert sorted(p.name for p in estimator_files(tmp_path / "clf.json")) == files
    assert model_stem(stem) == tmp_path / "clf.model"
    meta = json.loads((tmp_path / "clf.json").read_text())
    assert meta["extra"]["estimator"].endswith(":ICLTestClassifier")
    back = ICLTestClassifier.load(stem)
    assert back.get_params() == clf.get_params() and list(back.classes_) == ["a", "b", "c"]
    np.testing.assert_array_equal(back.predict_proba(X), clf.predict_proba(X))
    assert pickle.loads(pickle.dumps(clf)).predict(X[:3]).tolist() == clf.predict(X[:3]).tolist()

    Xr, yr = make_regression(n_samples=60, n_features=4, random_state=0)
    reg = ICLTestRegressor(device="cpu").fit(Xr, yr * 1000 + 5)
    reg.save(tmp_path / "reg")
    np.testing.assert_array_equal(ICLTestRegressor.load(tmp_path / "reg").predict(Xr), reg.predict(Xr))


@pytest.mark.parametrize("existing", ["clf.json", "clf.model.safetensors"])
def test_save_never_replaces_an_earlier_save_silently(tmp_path: Path, existing: str) -> None:
    X, y = load_iris(return_X_y=True)
    first = ICLTestClassifier(n_estimators=1, random_state=0, device="cpu").fit(X, y)
    first.save(tmp_path / "clf")
    (tmp_path / "keep").mkdir()
    for name in {p.name for p in tmp_path.iterdir() if p.is_file()} - {existing}:
        (tmp_path / name).rename(tmp_path / "keep" / name)  # one file of the four is enough to refuse
    before = (tmp_path / existing).read_bytes()
    second = ICLTestClassifier(n_estimators=2, random_state=1, device="cpu").fit(X, y)
    with pytest.raises(TabzooInputError, match=f"{existing}.*overwrite=True"):
        second.save(tmp_path / "clf.json")
    assert (tmp_path / existing).read_bytes() == before
    stem = second.save(tmp_path / "clf", overwrite=True)
    np.testing.assert_array_equal(ICLTestClassifier.load(stem).predict_proba(X), second.predict_proba(X))


def test_saved_estimator_rebuilds_the_unfitted_estimator_with_its_params(tmp_path: Path) -> None:
    from tabzoo.checkpoint import saved_estimator

    X, y = load_iris(return_X_y=True)
    clf = ICLTestClassifier(n_estimators=2, random_state=7, device="cpu").fit(X, y)
    stem = clf.save(tmp_path / "clf.safetensors")
    got_stem, state, fresh = saved_estimator(ICLTestClassifier, stem.with_suffix(".json"))
    assert got_stem == tmp_path / "clf" and state["n_features_in"] == 4
    assert fresh.get_params() == clf.get_params() and not hasattr(fresh, "model_")
    assert saved_estimator(ICLTestClassifier, stem, device="meta")[2].device == "meta"
    from tabzoo.checkpoint import save_state
    from tabzoo.errors import CheckpointError

    save_state(tmp_path / "run", {"step": 3})  # a training state, not an estimator's save
    with pytest.raises(CheckpointError, match="no saved estimator"):
        saved_estimator(ICLTestClassifier, tmp_path / "run")


def test_write_estimator_tags_both_pairs_and_writes_nothing_when_refused(tmp_path: Path) -> None:
    from tabzoo.checkpoint import (
        estimator_id,
        load_checkpoint,
        load_state,
        model_stem,
        write_estimator,
    )

    class Holder:
        pass

    net = torch.nn.Linear(3, 2)
    stem = write_estimator(tmp_path / "h.json", Holder(), {"params": {"a": 1}}, net, architecture="lin",
                           config={"d": 3}, overwrite=False, extra={"layout": 2})
    assert stem == tmp_path / "h"
    assert estimator_id(Holder) == f"{__name__}:test_write_estimator_tags_both_pairs_and_writes_nothing_when_refused.<locals>.Holder"
    ckpt = load_checkpoint(model_stem(stem), architecture="lin")
    assert ckpt.meta["extra"] == {"estimator": estimator_id(Holder), "layout": 2} and ckpt.config == {"d": 3}
    assert json.loads((tmp_path / "h.json").read_text())["extra"] == ckpt.meta["extra"]
    assert load_state(stem) == {"params": {"a": 1}}
    torch.testing.assert_close(ckpt.tensors["weight"], net.weight.detach())
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    with pytest.raises(TabzooInputError, match="overwrite=True"):
        write_estimator(stem, Holder(), {"params": {"a": 2}}, {"w": torch.zeros(1)}, architecture="lin",
                        config={}, overwrite=False)
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    write_estimator(stem, Holder(), {"params": {"a": 2}}, {"w": torch.zeros(1)}, architecture="lin", config={},
                    overwrite=True)
    assert load_state(stem) == {"params": {"a": 2}} and set(load_checkpoint(model_stem(stem)).tensors) == {"w"}


# -- regressor ------------------------------------------------------------------------------------
def test_regressor_standardises_targets_and_uses_the_output_hook() -> None:
    X, y = make_regression(n_samples=150, n_features=3, noise=1.0, random_state=0)
    y = 1e4 * y + 3e5  # far from unit scale
    reg = ICLTestRegressor(n_estimators=2, device="cpu").fit(X[:120], y[:120])
    assert reg.y_mean_ == pytest.approx(y[:120].mean())
    pred = reg.predict(X[120:])
    assert np.corrcoef(pred, y[120:])[0, 1] > 0.8
    assert abs(pred.mean() - y[120:].mean()) < y.std()

    class Doubled(ICLTestRegressor):
        def _regression_output(self, logits):
            return 2 * logits[..., 0]

    d = Doubled(n_estimators=2, device="cpu").fit(X[:120], y[:120])
    np.testing.assert_allclose(d.predict(X[120:]) - reg.y_mean_, 2 * (pred - reg.y_mean_), rtol=1e-6)


# -- errors ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda X, y: ICLTestClassifier().fit(X, np.where(np.arange(len(y)) == 3, np.nan, y)), "y contains NaN"),
        (lambda X, y: ICLTestRegressor().fit(X, np.where(np.arange(len(y)) == 3, np.nan, 1.0)), "y contains NaN"),
        (lambda X, y: ICLTestClassifier().fit(X[:0], y[:0]), "training set is empty"),
        (lambda X, y: ICLTestClassifier().fit(X, None), "requires y"),
        (lambda X, y: ICLTestClassifier().fit(X, np.arange(len(y)) % 11), "at most 10"),
        (lambda X, y: ICLTestClassifier().fit(X, y).predict(X[:, :4]), "X has 4 features.*same feature columns"),
        (lambda X, y: ICLTestClassifier().fit(X, y[:-1]), "one label per row"),
        (lambda X, y: ICLTestClassifier(n_estimators=0).fit(X, y), "n_estimators"),
        (lambda X, y: ICLTestClassifier(average="median").fit(X, y), "average must be"),
        (lambda X, y: ICLTestClassifier().fit(X, y + 0.5), "Unknown label type.*regressor"),
        (lambda X, y: ICLTestClassifier().fit(np.where(X > 1, np.inf, X), y), "infinity"),
    ],
)
def test_bad_input_raises_tabzoo_input_error(make, match) -> None:
    X, y = _data(n=40)
    with pytest.raises(TabzooInputError, match=match):
        make(X, y)


def test_plugin_may_handle_many_classes() -> None:
    class Many(ICLTestClassifier):
        def _check_n_classes(self, n_classes: int) -> None:
            pass

        def _load_model(self):
            return build({"max_classes": 12})

    X, y = _data(n=60)
    clf = Many(n_estimators=1, device="cpu").fit(X, np.arange(60) % 12)
    assert clf.predict_proba(X).shape == (60, 12)


def test_dataframe_feature_names_are_checked() -> None:
    X, y = _data(n=40)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
    clf = ICLTestClassifier(n_estimators=1, device="cpu").fit(df, y)
    assert list(clf.feature_names_in_) == list(df.columns)
    with pytest.raises(TabzooInputError, match="feature names"):
        clf.predict(df.rename(columns={"f0": "zz"}))


def test_use_checkpoint_refuses_another_architecture_at_fit_and_clone_drops_it(tmp_path: Path) -> None:
    from _icl_testmodel import ARCH
    from sklearn.base import clone
    from tabzoo.checkpoint import save_checkpoint
    from tabzoo.errors import CheckpointError

    X, y = _data()
    save_checkpoint(tmp_path / "m", build({}), architecture="other", config={})
    clf = ICLTestClassifier(n_estimators=2, device="cpu").use_checkpoint(tmp_path / "m", architecture=ARCH)
    with pytest.raises(CheckpointError, match="holds architecture 'other'"):
        clf.fit(X, y)
    assert clone(clf).fit(X, y).predict_proba(X[:3]).shape == (3, 3)  # clone: the plugin's own weights
