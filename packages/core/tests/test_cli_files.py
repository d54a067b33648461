"""Issue 24 item 2: no command writes onto an existing file or its own input without being told,
writes are atomic (a full disk keeps the old file), ``--resume`` needs a resumable run, and a run
folder has one writer at a time."""

from __future__ import annotations

import errno
import json
import logging
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _icl_testmodel import use_plugin_env
from tabzoo.cli import main
from tabzoo.errors import CheckpointError, TabzooInputError
from tabzoo.files import check_output, write_via
from tabzoo.plugins import reset_registry
from tabzoo.train.lock import LOCK, RunLockedError, read_lock, run_lock
from tabzoo.train.state import load_latest, require_resumable

PREDICT = ["predict", "--model", "unused", "--estimator", "_icl_testmodel:ICLTestClassifier",
           "--target", "y", "--device", "cpu", "--n-estimators", "2"]


@pytest.fixture
def csvs(tmp_path: Path) -> tuple[Path, Path]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3))
    frame = pd.DataFrame(x, columns=["a", "b", "c"]).assign(y=(x[:, 0] > 0).astype(int))
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    frame.iloc[:30].to_csv(train, index=False)
    frame.iloc[30:].drop(columns="y").to_csv(test, index=False)
    return train, test


def _predict(train: Path, test: Path, *extra: str) -> int:
    return main([*PREDICT, "--train", str(train), "--test", str(test), *extra])


def test_predict_never_writes_onto_its_own_input(csvs: tuple[Path, Path], capsys: pytest.CaptureFixture) -> None:
    train, test = csvs
    before = train.read_bytes()
    for out in (train, train.parent / "." / train.name):
        assert _predict(train, test, "--out", str(out), "--overwrite") == 2
        assert "also an input" in capsys.readouterr().err
    link = train.parent / "link.csv"
    link.symlink_to(train)
    assert _predict(train, test, "--out", str(link), "--overwrite") == 2
    assert train.read_bytes() == before


def test_predict_refuses_an_existing_out_without_overwrite(csvs: tuple[Path, Path],
                                                           capsys: pytest.CaptureFixture) -> None:
    train, test = csvs
    out = train.parent / "pred.csv"
    out.write_text("precious\n")
    assert _predict(train, test, "--out", str(out)) == 2
    assert "--overwrite" in capsys.readouterr().err and out.read_text() == "precious\n"
    assert _predict(train, test, "--out", str(out), "--overwrite") == 0
    assert len(pd.read_csv(out)) == 10
    assert not [p for p in out.parent.iterdir() if p.name.endswith(".tmp.csv")]  # no temporary left


def test_check_output_rules(tmp_path: Path) -> None:
    src = tmp_path / "in.csv"
    src.write_text("x\n")
    hard = tmp_path / "hard.csv"
    hard.hardlink_to(src)
    with pytest.raises(TabzooInputError, match="also an input"):
        check_output(hard, inputs=[None, src], overwrite=True)
    with pytest.raises(TabzooInputError, match="is a folder"):
        check_output(tmp_path, overwrite=True)
    assert check_output(tmp_path / "new.csv", inputs=[src]) == tmp_path / "new.csv"


@pytest.mark.parametrize("fault", ["enospc_in_write", "enospc_in_fsync", "interrupt"])
def test_a_full_disk_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str) -> None:
    out = tmp_path / "pred.csv"
    out.write_text("old\n")

    def write(tmp: Path) -> None:
        tmp.write_text("new, half")
        if fault == "enospc_in_write":
            raise OSError(errno.ENOSPC, "No space left on device")
        if fault == "interrupt":
            raise KeyboardInterrupt

    if fault == "enospc_in_fsync":
        import tabzoo.files as files

        def full(fd: int) -> None:
            raise OSError(errno.ENOSPC, "No space left on device")

        monkeypatch.setattr(files.os, "fsync", full)
    expected = KeyboardInterrupt if fault == "interrupt" else TabzooInputError
    with pytest.raises(expected) as info:
        write_via(out, write)
    if expected is TabzooInputError:
        assert "No space left" in str(info.value) and "unchanged" in str(info.value)
    assert out.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["pred.csv"]


def test_predict_on_a_full_disk_keeps_the_old_out(csvs: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture) -> None:
    train, test = csvs
    out = train.parent / "pred.csv"
    out.write_text("old\n")

    def full(self: pd.DataFrame, path: object, **kw: object) -> None:
        if hasattr(path, "write"):  # predictions are appended batch by batch to an open file
            path.write("partial")
        else:
            Path(str(path)).write_text("partial")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    assert _predict(train, test, "--out", str(out), "--overwrite") == 2
    assert "No space left" in capsys.readouterr().err
    assert out.read_text() == "old\n"


# --- runs: --resume, latest.json, the lock -------------------------------------------------------


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    yield use_plugin_env(tmp_path / "site", monkeypatch)
    reset_registry()


def _pretrain(out: Path, *extra: str, steps: int = 2) -> int:
    return main(["pretrain", "--model", "icl_test", "--prior", "blobs_test", "--steps", str(steps), "--out",
                 str(out), "--batch-size", "4", "--config", '{"plot": false, "prior_config": {"max_features": 3}}',
                 "--no-progress", *extra])


def test_resume_without_a_resumable_run_says_what_is_there(tmp_path: Path, site: dict[str, str],
                                                           capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / "model.safetensors").write_bytes(b"weights of another run")
    assert _pretrain(out, "--resume") != 0
    err = capsys.readouterr().err
    assert "no resumable run" in err and "model.safetensors" in err and "Traceback" not in err
    assert (out / "model.safetensors").read_bytes() == b"weights of another run"
    assert sorted(p.name for p in out.iterdir()) == ["model.safetensors"]
    assert _pretrain(tmp_path / "absent", "--resume") != 0
    assert "does not exist" in capsys.readouterr().err


def test_corrupt_latest_does_not_ask_to_delete_it(tmp_path: Path) -> None:
    (tmp_path / "latest.json").write_text("{not json")
    with pytest.raises(CheckpointError) as info:
        load_latest(tmp_path)
    assert "delete" not in str(info.value) and "backup" in str(info.value)


@pytest.mark.parametrize("name", ["../state-00000001", "/etc/passwd", "model", 7, "state-1/../../x"])
def test_latest_may_only_point_inside_its_folder(tmp_path: Path, name: object) -> None:
    run = tmp_path / "run"
    run.mkdir()
    (tmp_path / "state-00000001.json").write_text("{}")
    (run / "latest.json").write_text(json.dumps({"state": name, "step": 1}))
    with pytest.raises(CheckpointError, match="inside"):
        load_latest(run)
    with pytest.raises(CheckpointError):
        require_resumable(run)


def test_a_second_writer_is_refused_with_pid_and_host(tmp_path: Path, site: dict[str, str],
                                                      capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "run"
    with run_lock(out):
        holder = read_lock(out)
        assert holder is not None and holder["host"] == platform.node()
        with pytest.raises(RunLockedError) as info, run_lock(out):
            pass
        assert f"pid {holder['pid']}" in str(info.value) and platform.node() in str(info.value)
        assert _pretrain(out) != 0
        err = capsys.readouterr().err
        assert "being written by" in err and "Traceback" not in err
        assert sorted(p.name for p in out.iterdir()) == [LOCK]
    assert not (out / LOCK).exists()
    assert _pretrain(out) == 0  # the lock went with its holder


def test_a_stale_lock_is_detected_and_taken_over(tmp_path: Path, site: dict[str, str],
                                                 caplog: pytest.LogCaptureFixture) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    out = tmp_path / "run"
    out.mkdir()
    (out / LOCK).write_text(json.dumps({"pid": dead.pid, "host": platform.node(), "started": 0.0}))
    with caplog.at_level(logging.WARNING, logger="tabzoo.train.lock"):
        assert _pretrain(out) == 0
    assert "stale lock" in caplog.text and f"pid {dead.pid}" in caplog.text
    assert not (out / LOCK).exists() and (out / "latest.json").exists()
