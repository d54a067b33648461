"""Issue 24 item 5: every command's arguments are checked at the boundary.

One test per class of bad argument (not positive, not finite, unknown device, unknown model or
prior, missing or unreadable path), over pretrain, bench, demo, conformance and predict: each
run exits 2 with one ``tabzoo`` error line that names the flag or the value, before any work
starts; never a traceback, never the last guard's "This is a bug" line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from _icl_testmodel import use_plugin_env
from tabzoo.cli import main
from tabzoo.plugins import reset_registry


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    use_plugin_env(tmp_path / "site", monkeypatch)
    (tmp_path / "train.csv").write_text("a,b,y\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n")
    (tmp_path / "test.csv").write_text("a,b\n1,2\n9,9\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "secret.csv").write_text("a,y\n1,0\n")
    (tmp_path / "secret.csv").chmod(0)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    (tmp_path / "secret.csv").chmod(0o600)
    reset_registry()


PREDICT = ["predict", "--model", "icl_test", "--train", "train.csv", "--test", "test.csv", "--target", "y"]
PRETRAIN = ["pretrain", "--model", "icl_test", "--prior", "blobs_test", "--steps", "1", "--out", "run",
            "--batch-size", "2", "--no-progress"]


def _refused(argv: list[str], *pieces: str, capsys: pytest.CaptureFixture[str]) -> str:
    capsys.readouterr()
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's usage error
        code = exc.code if isinstance(exc.code, int) else 2
    err = capsys.readouterr().err
    assert code == 2, (argv, code, err)
    assert "Traceback" not in err and "This is a bug" not in err, err
    low = err.lower()
    assert all(p.lower() in low for p in pieces), (argv, pieces, err)
    return err


@pytest.mark.parametrize(("argv", "flag"), [
    ([*PREDICT, "--n-estimators", "0"], "--n-estimators"),
    ([*PREDICT, "--n-estimators", "-3"], "--n-estimators"),
    ([*PREDICT, "--seed", "-1"], "--seed"),
    ([*PRETRAIN[:6], "0", *PRETRAIN[7:]], "--steps"),
    ([*PRETRAIN[:6], "-5", *PRETRAIN[7:]], "--steps"),
    ([*PRETRAIN, "--batch-size", "0"], "--batch-size"),
    ([*PRETRAIN, "--lr", "0"], "--lr"),
    ([*PRETRAIN, "--lr", "-1e-3"], "--lr"),
    ([*PRETRAIN, "--seed", "-1"], "--seed"),
    (["conformance", "icl_test", "--max-examples", "0"], "--max-examples"),
    (["conformance", "icl_test", "--max-examples", "-2"], "--max-examples"),
    (["conformance", "icl_test", "--seed", "-1"], "--seed"),
    (["demo", "--model", "icl_test", "--seed", "-1", "--no-report"], "--seed"),
])
def test_numbers_that_must_be_positive(work: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                       flag: str) -> None:
    _refused(argv, flag, capsys=capsys)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "x"])
def test_numbers_that_must_be_finite(work: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    _refused([*PRETRAIN, "--lr", value], "--lr", capsys=capsys)


@pytest.mark.parametrize("argv", [
    [*PREDICT, "--device", "nope"],
    [*PREDICT, "--device", "cuda:99"],
    ["conformance", "icl_test", "--device", "nope"],
    ["conformance", "icl_test", "--device", "cuda:99"],
])
def test_devices_that_are_unknown_or_absent(work: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    _refused(argv, "--device", "cpu", capsys=capsys)


@pytest.mark.parametrize(("argv", "name"), [
    (["predict", "--model", "nope", *PREDICT[3:]], "nope"),
    (["pretrain", "--model", "nope", *PRETRAIN[3:]], "nope"),
    ([*PRETRAIN[:4], "nope", *PRETRAIN[5:]], "nope"),
    (["demo", "--model", "nope", "--no-report"], "nope"),
    (["conformance", "nope"], "nope"),
])
def test_models_and_priors_that_are_unknown(work: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                            name: str) -> None:
    _refused(argv, name, capsys=capsys)


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root reads files without permission")
@pytest.mark.parametrize("argv", [
    [*PREDICT[:3], "--train", "secret.csv", *PREDICT[5:]],
])
def test_paths_that_are_unreadable(work: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    _refused(argv, "secret.csv", capsys=capsys)


@pytest.mark.parametrize(("argv", "path"), [
    ([*PREDICT[:3], "--train", "missing.csv", *PREDICT[5:]], "missing.csv"),
    ([*PREDICT[:5], "--test", "missing.csv", *PREDICT[7:]], "missing.csv"),  # (a folder is streamed)
    ([*PREDICT, "--checkpoint", "missing"], "missing"),
    ([*PRETRAIN, "--config", "@missing.json"], "missing.json"),
    ([*PRETRAIN, "--config", "@folder"], "folder"),
    (["conformance", "icl_test", "--xfails", "missing.json"], "missing.json"),
    (["conformance", "icl_test", "--xfails", "folder"], "folder"),
    (["bench", "--dir", "missing"], "missing"),
    (["bench", "--dir", "train.csv"], "train.csv"),
])
def test_paths_that_are_missing_or_not_files(work: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                             path: str) -> None:
    _refused(argv, path, capsys=capsys)
