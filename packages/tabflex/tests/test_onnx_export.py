"""TabFlex as one ONNX graph (issue 29 item 4): the shipped checkpoint, its per-layer linear-attention
context state baked in, run by onnxruntime within 1e-4 of ``predict_proba``; the file holds a fixed-size
state, not the training rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the estimators need scikit-learn (tabzoo-core[sklearn])")
onnx = pytest.importorskip("onnx", reason="needs the onnx extra: pip install 'tabzoo-core[onnx]'")
pytest.importorskip("onnxruntime", reason="needs the onnx extra: pip install 'tabzoo-core[onnx]'")

from tabzoo.batch.onnx import export_onnx, run_onnx  # noqa: E402
from tabzoo_tabflex import TabFlexClassifier  # noqa: E402

ATOL = 1e-4


def _table(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 8)) * np.geomspace(0.01, 100, 8)
    x[:, 2] = np.exp(x[:, 2])  # skewed: the power transform has work to do
    y = (x[:, 0] * 50 + x[:, 5] / 10 > 0).astype(int) + (x[:, 7] > 50).astype(int)
    return x.astype(np.float32), np.array(["low", "mid", "high"])[y]


@pytest.mark.parametrize("rows", [300, 3000])
def test_tabflex_graph_matches_predict_proba(tmp_path: Path, rows: int) -> None:
    x, y = _table(rows + 200)
    clf = TabFlexClassifier(n_estimators=4, device="cpu", fit_mode="fit_with_cache").fit(x[:rows], y[:rows])
    assert clf.class_balance == "auto" and clf.average == "logits"  # the prior and the logit average are in the graph
    report = export_onnx(clf, tmp_path / "tabflex.onnx")
    assert report.max_abs_diff is not None and report.max_abs_diff <= ATOL
    queries = x[rows:].copy()
    queries[::5, 3] = np.nan
    np.testing.assert_allclose(run_onnx(report.path, queries), clf.predict_proba(queries), rtol=0, atol=ATOL)
    if rows == 3000:  # the context is a fixed-size state: 10x the rows, the same graph size
        small = TabFlexClassifier(n_estimators=4, device="cpu").fit(x[:300], y[:300])
        assert abs(export_onnx(small, tmp_path / "small.onnx", check_rows=0).bytes - report.bytes) < 10_000


def test_tabflex_wide_table_members_see_their_own_subsets(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    x = rng.normal(size=(400, 130)).astype(np.float32)  # wider than the model's 100 features
    y = (x[:, 0] + x[:, 120] > 0).astype(int)
    clf = TabFlexClassifier(n_estimators=3, device="cpu").fit(x[:300], y[:300])
    report = export_onnx(clf, tmp_path / "wide.onnx")
    np.testing.assert_allclose(run_onnx(report.path, x[300:]), clf.predict_proba(x[300:]), rtol=0, atol=ATOL)
