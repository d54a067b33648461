"""Issue 24 item 9: hypothesis-made bad command lines at every writing/reading ``tabzoo`` command.

Each run must end in success or a clean refusal (a ``TabzooError`` line, or argparse's usage
error), never the last-guard "bug" line or a traceback, never a hang (``signal.alarm``), and never
with an input file changed. ``TABZOO_FUZZ_EXAMPLES`` sets the budget (the ``fuzz`` nox session
raises it); ``tabzoo conformance`` is the kit's and is fuzzed there.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import pytest
from _fuzz import alarm
from _icl_testmodel import use_plugin_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tabzoo.cli import main
from tabzoo.plugins import reset_registry

EXAMPLES = int(os.environ.get("TABZOO_FUZZ_EXAMPLES", "8"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 8,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    use_plugin_env(tmp_path / "site", monkeypatch)
    (tmp_path / "train.csv").write_text("a,b,y\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n")
    (tmp_path / "test.csv").write_text("a,b\n1,2\n9,9\n")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "folder").mkdir()
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    reset_registry()


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.glob("*.csv"))}


def _run(argv: list[str], root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = _digest(root)
    capsys.readouterr()
    with alarm(120):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage error: a clean refusal
            code = exc.code if isinstance(exc.code, int) else 2
    err = capsys.readouterr().err
    assert "This is a bug" not in err and "Traceback" not in err, (argv, err)
    assert code in (0, 1, 2), (argv, code, err)
    assert _digest(root) == before, argv  # no input changed


PATHS = st.sampled_from(["train.csv", "test.csv", "empty.csv", "folder", "missing.csv", "", "train.csv/x"])


@FUZZ
@given(train=PATHS, test=PATHS, target=st.one_of(st.sampled_from(["y", "a", ""]), TEXT),
       out=st.one_of(st.none(), PATHS, st.sampled_from(["new.csv", "new.parquet", "new.txt"])),
       n=st.sampled_from(["1", "0", "-3", "x", "1e9"]), device=st.sampled_from(["cpu", "nope", "", "cuda:99"]),
       overwrite=st.booleans())
def test_predict(work: Path, capsys: pytest.CaptureFixture[str], train: str, test: str, target: str,
                 out: str | None, n: str, device: str, overwrite: bool) -> None:
    argv = ["predict", "--model", "icl_test", "--train", train, "--test", test, "--target", target,
            "--n-estimators", n, "--device", device]
    argv += (["--out", out] if out is not None else []) + (["--overwrite"] if overwrite else [])
    _run(argv, work, capsys)


@FUZZ
@given(model=st.sampled_from(["icl_test", "nope", ""]), prior=st.sampled_from(["blobs_test", "nope"]),
       steps=st.sampled_from(["1", "0", "-5", "x"]), out=st.sampled_from(["run", "train.csv", "folder", ""]),
       config=st.one_of(st.sampled_from(['{"plot": false}', "{", "[]", '{"lr": -1}', '{"batch_size": 0}',
                                          "@missing.json", "@train.csv", '{"model_config": 3}']), TEXT),
       flag=st.sampled_from([[], ["--resume"], ["--overwrite"], ["--resume", "--overwrite"]]))
def test_pretrain(work: Path, capsys: pytest.CaptureFixture[str], model: str, prior: str, steps: str, out: str,
                  config: str, flag: list[str]) -> None:
    _run(["pretrain", "--model", model, "--prior", prior, "--steps", steps, "--out", out, "--config", config,
          "--batch-size", "2", "--no-progress", *flag], work, capsys)


@FUZZ
@given(args=st.lists(st.one_of(st.sampled_from(["--json", "--model", "--out", "--collect", "nope", "train.csv",
                                                "folder", "--no-report", "--no-progress"]), TEXT), max_size=4),
       command=st.sampled_from(["plugins", "demo", "bench"]))
def test_plugins_demo_bench(work: Path, capsys: pytest.CaptureFixture[str], args: list[str], command: str) -> None:
    if command == "demo" and "--model" not in args:
        args = [*args, "--model", "nope"]  # a bounded demo: the fuzz tests the arguments, not the models
    if command == "bench" and not {"--collect", "--out"} & set(args):
        args = ["--list", *args]
    _run([command, *args], work, capsys)


@FUZZ
@given(name=st.one_of(st.sampled_from(["core_kernels", "all", "icl_test", "nope", "", ",", " , ", "core_kernels,"]),
                      TEXT),
       check=st.lists(st.one_of(st.sampled_from(["determinism", "query_independence", "nope", ""]), TEXT),
                      min_size=1, max_size=2),
       examples=st.sampled_from(["1", "0", "-1", "x", "1e9", ""]), seed=st.sampled_from(["0", "-1", "x", ""]),
       device=st.sampled_from([None, "cpu", "nope", "", "cuda:99"]),
       xfails=st.sampled_from([None, "xf.json", "bad.json", "missing.json", "train.csv", "folder", ""]),
       replay=st.one_of(st.none(), st.sampled_from(["{}", "{", '{"check": "nope"}', "[]", "3", '{"check": 3}', "null",
                                                       '{"check": "determinism", "model_seed": "x"}',
                                                       '{"check": "determinism", "model_seed": [1]}']), TEXT),
       flags=st.lists(st.sampled_from(["--json", "--strict", "--allow-unproven", "--thorough"]), max_size=2))
def test_conformance(work: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str,
                     check: list[str], examples: str, seed: str, device: str | None, xfails: str | None,
                     replay: str | None, flags: list[str]) -> None:
    """Every bad argument of ``tabzoo conformance`` is a clean refusal. Each command line names at
    least one ``--check`` that the only installed case (``core_kernels``) does not call for, so no
    check runs: the fuzz tests the arguments, not the kit."""
    from tabzoo.testing.checks._common import PROFILE_ENV

    for var in (PROFILE_ENV, "HYPOTHESIS_STORAGE_DIRECTORY"):  # --thorough and the run set these: undo after
        monkeypatch.delenv(var, raising=False) if var not in os.environ else monkeypatch.setenv(var, os.environ[var])
    (work / "xf.json").write_text('{"core_kernels": {"kernel_equivalence": "a waiver"}}')
    (work / "bad.json").write_text("{not json")
    argv = ["conformance", name, "--max-examples", examples, "--seed", seed, *flags]
    argv += [a for c in check for a in ("--check", c)]
    argv += (["--device", device] if device is not None else []) + (["--xfails", xfails] if xfails else [])
    argv += ["--replay", replay] if replay is not None else []
    _run(argv, work, capsys)
