"""``tabzoo predict`` end to end on breast_cancer, and ``tabzoo pretrain`` through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _icl_testmodel import use_plugin_env
from sklearn.datasets import load_breast_cancer
from tabzoo.cli import main
from tabzoo.plugins import reset_registry


def _split(tmp_path: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = load_breast_cancer(as_frame=True).frame
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(frame))
    return frame.iloc[idx[:400]], frame.iloc[idx[400:]]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    yield use_plugin_env(tmp_path / "site", monkeypatch)
    reset_registry()


def test_predict_breast_cancer_csv_in_a_subprocess(tmp_path: Path, site: dict[str, str]) -> None:
    train, test = _split(tmp_path)
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)  # still holds the target: it is dropped
    out = tmp_path / "pred.csv"
    done = subprocess.run(
        [sys.executable, "-m", "tabzoo.cli", "predict", "--model", "icl_test", "--train",
         str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv"), "--target", "target",
         "--out", str(out), "--device", "cpu"],
        env=site, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    pred = pd.read_csv(out)
    assert list(pred.columns) == ["prediction", "proba_0", "proba_1"] and len(pred) == len(test)
    np.testing.assert_allclose(pred[["proba_0", "proba_1"]].sum(axis=1), 1.0, atol=1e-9)
    accuracy = float((pred["prediction"].to_numpy() == test["target"].to_numpy()).mean())
    assert accuracy > 0.9


def test_predict_parquet_with_string_labels_in_process(tmp_path: Path, site: dict[str, str]) -> None:
    train, test = _split(tmp_path)
    names = np.array(["malignant", "benign"])
    train = train.assign(target=names[train["target"].to_numpy()])
    train.to_parquet(tmp_path / "train.parquet")
    test.drop(columns=["target"]).to_parquet(tmp_path / "test.parquet")
    out = tmp_path / "pred.parquet"
    code = main(["predict", "--model", "icl_test", "--train", str(tmp_path / "train.parquet"), "--test",
                 str(tmp_path / "test.parquet"), "--target", "target", "--out", str(out), "--n-estimators", "2"])
    assert code == 0
    pred = pd.read_parquet(out)
    assert set(pred.columns) == {"prediction", "proba_benign", "proba_malignant"}
    truth = names[test["target"].to_numpy()]
    assert float((pred["prediction"].to_numpy() == truth).mean()) > 0.9


def test_predict_reports_bad_input(tmp_path: Path, site: dict[str, str], capsys: pytest.CaptureFixture) -> None:
    train, test = _split(tmp_path)
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.txt", index=False)
    args = ["predict", "--model", "icl_test", "--train", str(tmp_path / "train.csv"), "--target"]
    assert main([*args, "nope", "--test", str(tmp_path / "train.csv")]) == 2
    assert "is not a column" in capsys.readouterr().err
    assert main([*args, "target", "--test", str(tmp_path / "test.txt")]) == 2
    assert "use .csv or .parquet" in capsys.readouterr().err


def test_pretrain_cli_in_process(tmp_path: Path, site: dict[str, str], capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    code = main(["pretrain", "--model", "icl_test", "--prior", "blobs_test", "--steps", "3", "--out", str(out),
                 "--batch-size", "4", "--config", '{"plot": false, "prior_config": {"max_features": 3}}',
                 "--no-progress", "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 3 and summary["episodes_seen"] == 12 and summary["resumed_from"] == 0
    meta = json.loads((out / "model.json").read_text())
    assert meta["prior"] == "blobs_test" and meta["architecture"] == "icl_test"
    assert main(["pretrain", "--model", "icl_test", "--prior", "blobs_test", "--steps", "3", "--out",
                 str(out), "--config", '{"bogus": 1}']) == 2
    assert "unknown training options" in capsys.readouterr().err
