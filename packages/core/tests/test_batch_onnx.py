"""``tabzoo.batch.onnx`` / ``tabzoo export --format onnx``: a fitted in-context classifier as one ONNX graph
(raw rows -> probabilities, context baked in) that onnxruntime runs within 1e-4 of ``predict_proba``
(issue 29 item 4). TabFlex's own export is tested in the tabflex package."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from _icl_testmodel import ICLTestClassifier
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError

onnx = pytest.importorskip("onnx", reason="needs the onnx extra: pip install 'tabzoo-core[onnx]'")
ort = pytest.importorskip("onnxruntime", reason="needs the onnx extra: pip install 'tabzoo-core[onnx]'")

ATOL = 1e-4


def _classifier(transforms: tuple[str, ...] = ("none", "power"), members: int = 3) -> ICLTestClassifier:
    """The core's test classifier; its members alternate ``transforms`` (a class attribute of plugin estimators)."""
    clf = ICLTestClassifier(n_estimators=members, device="cpu")
    clf.feature_transforms = transforms
    return clf


def _data(n: int = 160, f: int = 5, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = (rng.normal(size=(n, f)) * [1.0, 10.0, 0.1, 3.0, 100.0][:f] + 5.0).astype(np.float32)
    y = np.array(["a", "b", "c"])[(x[:, 0] > 5).astype(int) + (x[:, 3] > 5).astype(int)]
    return x, y


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> tuple[ICLTestClassifier, Path]:
    x, y = _data()
    clf = _classifier().fit(x[:80], y[:80])
    path = tmp_path_factory.mktemp("onnx") / "clf.onnx"
    from tabzoo.batch.onnx import export_onnx

    report = export_onnx(clf, path)
    assert report.checked_rows > 0 and report.max_abs_diff is not None and report.max_abs_diff <= ATOL
    return clf, path


def test_onnxruntime_matches_predict_proba_at_any_row_count(exported: tuple[ICLTestClassifier, Path]) -> None:
    from tabzoo.batch.onnx import run_onnx

    clf, path = exported
    x, _ = _data(seed=3)
    x[::7, 1] = np.nan  # missing values take the fitted fill, as in predict_proba
    for n in (1, 13, 160):  # traced on 7 rows: the row axis is dynamic
        got = run_onnx(path, x[:n])
        assert got.shape == (n, 3)
        np.testing.assert_allclose(got, clf.predict_proba(x[:n]), rtol=0, atol=ATOL)
    meta = {p.key: p.value for p in onnx.load(str(path)).metadata_props}
    assert meta["tabzoo.classes"] == '["a", "b", "c"]'


@given(rows=st.integers(1, 30), seed=st.integers(0, 2**16), scale=st.sampled_from([0.1, 1.0, 1e3]))
def test_property_rows_scored_alone_and_together_agree(exported: tuple[ICLTestClassifier, Path], rows: int,
                                                       seed: int, scale: float) -> None:
    from tabzoo.batch.onnx import run_onnx

    clf, path = exported
    x = (np.random.default_rng(seed).normal(size=(rows, 5)) * scale).astype(np.float32)
    together = run_onnx(path, x)
    np.testing.assert_allclose(together, clf.predict_proba(x), rtol=0, atol=ATOL)
    np.testing.assert_allclose(run_onnx(path, x[-1:]), together[-1:], rtol=0, atol=1e-6)


def test_refuses_what_the_graph_cannot_hold(tmp_path: Path) -> None:
    import pandas as pd
    from tabzoo.batch.onnx import export_onnx

    x, y = _data()
    frame = pd.DataFrame(x, columns=list("vwxyz"))
    frame["kind"] = np.where(x[:, 2] > 5, "hot", "cold")
    clf = _classifier(members=2).fit(frame[:80], y[:80])
    with pytest.raises(TabzooInputError, match="numeric columns"):
        export_onnx(clf, tmp_path / "cat.onnx")
    quantile = _classifier(("quantile",), members=2).fit(x[:80], y[:80])
    with pytest.raises(TabzooInputError, match="quantile"):
        export_onnx(quantile, tmp_path / "q.onnx")
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_pass_that_cannot_be_traced_is_refused_with_the_alternative(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A model whose forward pass fails under tracing (ORION-MSP's masks need the sequence length as an int)
    is refused naming the model and the streaming alternative, and nothing is written."""
    import torch
    from tabzoo.batch.onnx import export_onnx

    x, y = _data()
    clf = _classifier(members=2).fit(x[:80], y[:80])

    def untraceable(*a: object, **k: object) -> None:
        raise TabzooInputError("n_q must be a positive int, got tensor(108); pass the sequence length.")

    monkeypatch.setattr(torch.onnx, "export", untraceable)
    with pytest.raises(TabzooInputError, match="ICLTestClassifier's forward pass cannot be traced.*predict_dataset"):
        export_onnx(clf, tmp_path / "m.onnx")
    assert not list(tmp_path.iterdir())


def test_never_overwrites_without_asking(exported: tuple[ICLTestClassifier, Path], tmp_path: Path) -> None:
    from tabzoo.batch.onnx import export_onnx

    clf, _ = exported
    target = tmp_path / "mine.onnx"
    target.write_bytes(b"the user's file")
    with pytest.raises(TabzooInputError, match="exists"):
        export_onnx(clf, target)
    assert target.read_bytes() == b"the user's file"
    export_onnx(clf, target, overwrite=True, check_rows=0)
    assert onnx.load(str(target)).graph.input[0].name == "x"


def test_cli_export_writes_a_checked_graph(exported: tuple[ICLTestClassifier, Path], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from tabzoo.batch.onnx import run_onnx
    from tabzoo.cli import main

    clf, _ = exported
    stem = clf.save(tmp_path / "fitted" / "clf")
    out = tmp_path / "clf.onnx"
    assert main(["export", "--format", "onnx", "--model", f"{stem}.json", "--out", str(out)]) == 0
    assert "max |diff|" in capsys.readouterr().out
    x, _ = _data(seed=5)
    np.testing.assert_allclose(run_onnx(out, x), clf.predict_proba(x), rtol=0, atol=ATOL)
    assert main(["export", "--model", f"{stem}.json", "--out", str(out)]) == 2  # exists: refused
    with pytest.raises(SystemExit) as bad:
        main(["export", "--model", f"{stem}.json", "--out", str(out), "--atol", "-1"])
    assert bad.value.code == 2
