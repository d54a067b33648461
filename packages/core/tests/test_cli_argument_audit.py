"""Issue 24 item 5: every command's arguments are checked at the boundary.

One test per class of bad argument (not positive, not finite, unknown device, unknown model or
prior, missing or unreadable path), over pretrain, bench, demo, conformance and predict: each
run exits 2 with one ``tabzoo`` error line that names the flag or the value, before any work
starts; never a traceback, never the last guard's "This is a bug" line.
"""

from __future__ import annotations

import builtins
import ctypes
import errno
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _icl_testmodel import plugin_env, use_plugin_env
from tabzoo.cli import main
from tabzoo.plugins import reset_registry

SECRETS = ("secret.csv", "secret.json")  # mode 000 in the work folder


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    use_plugin_env(tmp_path / "site", monkeypatch)
    (tmp_path / "train.csv").write_text("a,b,y\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n")
    (tmp_path / "test.csv").write_text("a,b\n1,2\n9,9\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "secret.csv").write_text("a,b,y\n1,2,0\n3,4,1\n")
    (tmp_path / "secret.json").write_text("{}")
    for name in SECRETS:
        (tmp_path / name).chmod(0)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    for name in SECRETS:
        (tmp_path / name).chmod(0o600)
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


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _os_refuses_the_secrets(monkeypatch: pytest.MonkeyPatch, *, access_too: bool) -> None:
    """What the OS does with a mode-000 file for anyone but root: ``open`` raises PermissionError
    (errno 13) and, with ``access_too``, ``os.access`` says no. Root reads such files, so this
    stands in for the OS there (``--test`` is read by pyarrow's C++: see the subprocess test)."""
    real_open, real_access = builtins.open, os.access

    def secret(path: Any) -> bool:
        return not isinstance(path, int) and os.path.basename(os.fspath(path)) in SECRETS

    def refusing_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        if secret(file):
            raise PermissionError(errno.EACCES, "Permission denied", os.fspath(file))
        return real_open(file, *args, **kwargs)

    def refusing_access(path: Any, mode: int, *args: Any, **kwargs: Any) -> bool:
        return False if secret(path) else real_access(path, mode, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", refusing_open)
    monkeypatch.setattr(io, "open", refusing_open)  # pathlib's read_bytes/read_text
    if access_too:
        monkeypatch.setattr(os, "access", refusing_access)


UNREADABLE = [
    ([*PREDICT[:3], "--train", "secret.csv", *PREDICT[5:]], "secret.csv"),
    ([*PRETRAIN, "--config", "@secret.json"], "secret.json"),
    (["conformance", "core_kernels", "--xfails", "secret.json"], "secret.json"),
]


@pytest.mark.parametrize(("argv", "path"), UNREADABLE)
def test_paths_that_are_unreadable(work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                   argv: list[str], path: str) -> None:
    if _is_root():  # anyone else: the mode 000 itself
        _os_refuses_the_secrets(monkeypatch, access_too=True)
    _refused(argv, path, capsys=capsys)


def test_a_file_refused_only_when_read_is_a_clear_error(work: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    # os.access says yes but the read is refused (root on an NFS share with root_squash, an ACL or
    # security module, a mode changed after the check): still the file and the fix, not "a bug"
    _os_refuses_the_secrets(monkeypatch, access_too=False)
    err = _refused([*PREDICT[:3], "--train", "secret.csv", *PREDICT[5:]], "secret.csv", "readable", capsys=capsys)
    assert "PermissionError" not in err, err


def _drop_the_capabilities_that_bypass_file_modes() -> None:
    """In the child before exec: remove CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2) from the
    bounding set (prctl PR_CAPBSET_DROP = 24), so a root child obeys file modes like anyone."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:
            os._exit(97)


def test_an_unreadable_test_file_is_refused_by_the_os_even_to_root(work: Path) -> None:
    # --test is opened by pyarrow's C++ reader, which no Python patch reaches: a real refusal by the
    # OS, in a child that (as root) lost the capabilities that bypass file modes
    argv = [sys.executable, "-m", "tabzoo.cli", *PREDICT[:5], "--test", "secret.csv", *PREDICT[7:]]
    proc = subprocess.run(argv, cwd=work, env=plugin_env(work / "site"), capture_output=True, text=True, timeout=300,
                          preexec_fn=_drop_the_capabilities_that_bypass_file_modes if _is_root() else None)
    if proc.returncode == 97:
        pytest.skip("root without CAP_SETPCAP cannot drop CAP_DAC_OVERRIDE, so it reads any file")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "This is a bug" not in proc.stderr, proc.stderr
    assert "secret.csv" in proc.stderr and "Permission denied" in proc.stderr, proc.stderr


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
