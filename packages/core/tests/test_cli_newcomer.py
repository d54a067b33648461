"""The CLI explains itself: missing extras named before any work, one-line summaries, your own
checkpoint in ``predict``, ``--progress`` without tqdm, and the package version in checkpoints."""

from __future__ import annotations

import json
import re
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from _icl_testmodel import plugin_env
from sklearn.datasets import load_breast_cancer
from tabzoo.cli import main
from tabzoo.plugins import reset_registry


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    env = plugin_env(tmp_path / "site")
    for path in reversed(env["PYTHONPATH"].split(":")[:2]):
        monkeypatch.syspath_prepend(path)
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", env["TABZOO_LOAD_PLUGINS"])
    reset_registry()
    frame = load_breast_cancer(as_frame=True).frame.iloc[:, [0, 1, 2, 3, -1]]  # 4 features + target
    idx = np.random.default_rng(0).permutation(len(frame))
    frame.iloc[idx[:300]].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[idx[300:400]].drop(columns=["target"]).to_csv(tmp_path / "test.csv", index=False)
    yield tmp_path
    reset_registry()


def _predict(tmp: Path, *extra: str, out: str = "pred.csv") -> list[str]:
    return ["predict", "--train", str(tmp / "train.csv"), "--test", str(tmp / "test.csv"), "--target", "target",
            "--out", str(tmp / out), "--device", "cpu", "--n-estimators", "1", *extra]


def test_predict_without_pandas_is_one_line_before_any_work(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # as if pandas were not installed
    assert main(_predict(site, "--model", "icl_test")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["tabzoo: error: tabzoo predict needs pandas (to read and write tables): "
                   "pip install 'tabzoo-core[pandas]'"]
    assert not (site / "pred.csv").exists()


def test_parquet_without_pyarrow_names_the_arrow_extra(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    assert main(_predict(site, "--model", "icl_test", out="pred.parquet")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith("pip install 'tabzoo-core[arrow]'") and "pyarrow" in err[0]
    assert not (site / "pred.parquet").exists()


def test_progress_without_tqdm_names_the_flag_once(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from tabzoo.cli import _extras

    monkeypatch.setattr(_extras, "_noted", set())
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    assert main(_predict(site, "--model", "icl_test", "--progress")) == 0
    err = capsys.readouterr().err
    assert err.count("--progress needs tqdm") == 1 and "pip install 'tabzoo-core[progress]'" in err
    assert len(pd.read_csv(site / "pred.csv")) == 100


def test_predict_with_your_own_pretrained_checkpoint(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = site / "run"
    assert main(["pretrain", "--model", "icl_test", "--prior", "blobs_test", "--steps", "4", "--out", str(run),
                 "--batch-size", "4", "--lr", "0.3", "--no-progress",
                 "--config", '{"plot": false, "prior_config": {"max_features": 4}}']) == 0
    err = capsys.readouterr().err
    assert re.search(r"^tabzoo pretrain: icl_test on blobs_test, 4 steps \(16 episodes\), final loss [\d.]+; "
                     rf"checkpoint written to {re.escape(str(run))}/model.safetensors \+ model.json, .* in [\d.]+ s$",
                     err, re.M), err
    meta = json.loads((run / "model.json").read_text())
    # the package version is recorded: the plugin's distribution, found through the registry
    assert (meta["package"], meta["package_version"]) == ("tz-icl-test", "1.0")

    assert main(_predict(site, "--checkpoint", str(run), out="own.csv")) == 0  # --model from the checkpoint
    err = capsys.readouterr().err
    assert re.search(rf"^tabzoo predict: 100 predictions \(3 columns\) of icl_test with checkpoint {re.escape(str(run))}"
                     rf"/model written to {re.escape(str(site))}/own.csv in [\d.]+ s$", err, re.M), err
    assert main(_predict(site, "--model", "icl_test", out="shipped.csv")) == 0
    own, shipped = pd.read_csv(site / "own.csv"), pd.read_csv(site / "shipped.csv")

    from _icl_testmodel import ICLTestClassifier
    from tabzoo.checkpoint import load_model

    class FromRun(ICLTestClassifier):
        def _load_model(self):  # the pretrained weights, loaded by hand
            return load_model(run / "model")

    train = pd.read_csv(site / "train.csv")
    est = FromRun(n_estimators=1, device="cpu").fit(train.drop(columns=["target"]), train["target"])
    expected = est.predict_proba(pd.read_csv(site / "test.csv"))[:, 1]
    np.testing.assert_allclose(own["proba_1"], expected, atol=1e-6)
    assert np.abs(own["proba_1"] - shipped["proba_1"]).max() > 1e-3  # not the untrained weights

    assert main(_predict(site, "--checkpoint", str(run), "--model", "other")) == 2
    assert "holds architecture 'icl_test', not --model 'other'" in capsys.readouterr().err
    assert main(_predict(site, "--checkpoint", str(site / "nothing-here"))) == 2
    assert "does not exist" in capsys.readouterr().err


def test_pretrain_without_tqdm_says_so_once(site: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    from tabzoo.cli import _extras

    monkeypatch.setattr(_extras, "_noted", set())
    monkeypatch.setitem(sys.modules, "tqdm", None)
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    assert main(["pretrain", "--model", "icl_test", "--prior", "blobs_test", "--steps", "1", "--out",
                 str(site / "r"), "--batch-size", "2", "--config", '{"plot": false, "prior_config": {"max_features": 4}}']) == 0
    err = capsys.readouterr().err
    assert err.count("no progress bar: tqdm is not installed") == 1 and "--no-progress" in err


def test_checkpoint_records_the_package_that_defines_the_model(tmp_path: Path) -> None:
    from tabzoo import __version__
    from tabzoo.checkpoint import load_checkpoint, save_checkpoint
    from tabzoo.nn.heads import MLPHead

    head = MLPHead(4, 8, 2)
    save_checkpoint(tmp_path / "head", head, architecture="not-registered", config={})
    meta = load_checkpoint(tmp_path / "head").meta
    assert (meta["package"], meta["package_version"]) == ("tabzoo-core", __version__)
    save_checkpoint(tmp_path / "lin", torch.nn.Linear(2, 1), architecture="not-registered", config={})
    assert load_checkpoint(tmp_path / "lin").meta["package_version"] is None  # unknown: not invented
    save_checkpoint(tmp_path / "given", head, architecture="x", config={}, package_version="9.9")
    assert load_checkpoint(tmp_path / "given").meta["package_version"] == "9.9"


def test_sklearn_extra_lower_bound_matches_what_the_code_uses() -> None:
    """tabzoo.estimators uses sklearn.utils.validation.validate_data and __sklearn_tags__ (1.6)."""
    from sklearn.utils import validation

    assert hasattr(validation, "validate_data")
    reqs = [r for r in metadata.requires("tabzoo-core") or [] if r.startswith("scikit-learn")]
    bounds = {re.search(r">=\s*([\d.]+)", r).group(1) for r in reqs}
    assert bounds == {"1.6"}, reqs


ROOT = Path(__file__).resolve().parents[3]
HINT = re.compile(r"(?:pip install|uv add|uv pip install)\s+(?:-U\s+)?[\"'`]?([A-Za-z0-9_\-]+(?:\.[A-Za-z0-9_\-]+)*|\.)(\[[^\]]*\])?")
THIRD_PARTY = {"torch", "uv", "ninja"}  # real distributions a hint may name besides the workspace's own


def _extras() -> dict[str, set[str]]:
    import tomllib

    out = {}
    for pyproject in (ROOT / "packages").glob("*/pyproject.toml"):
        project = tomllib.loads(pyproject.read_text())["project"]
        out[project["name"]] = set(project.get("optional-dependencies", {}))
    return out


@pytest.mark.skipif(not (ROOT / "packages").is_dir(), reason="needs the repository checkout")
def test_install_hints_name_only_real_distributions_and_extras() -> None:
    """Every ``pip install X[extra]`` / ``uv add X`` in the sources and READMEs names a workspace
    distribution with an extra it defines (or torch/uv); no invented package names."""
    extras = _extras()
    files = [*(ROOT / "packages").glob("*/src/**/*.py"), *(ROOT / "packages").glob("*/README.md")]
    files += [p for p in (ROOT / "README.md",) if p.exists()]
    bad = []
    for path in files:
        for m in HINT.finditer(path.read_text()):
            name, extra = m.group(1), (m.group(2) or "[]")[1:-1]
            text = path.read_text()
            if name in {".", "a"} or name in THIRD_PARTY or name.startswith("-") or text[m.end(1):m.end(1) + 1] == "/":
                continue  # "pip install ." / "a tabzoo plugin" / an option / a path to a built wheel
            wanted = {e.strip() for e in extra.split(",") if e.strip()}
            if name not in extras or not wanted <= extras[name] | {"{extras}", "{extra}"}:
                bad.append(f"{path.relative_to(ROOT)}: {m.group(0)}")
    assert not bad, bad


def test_a_missing_name_never_invents_a_package(monkeypatch: pytest.MonkeyPatch) -> None:
    from tabzoo.errors import PluginLoadError
    from tabzoo.plugins import PluginRegistry

    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "nothing-matches-this")
    reg = PluginRegistry()
    reg.load_entry_points()
    with pytest.raises(PluginLoadError) as err:
        reg.get("architectures", "my_model")
    assert "pip install" not in str(err.value) and "tabzoo plugins" in str(err.value)
    with pytest.raises(PluginLoadError, match=r"provided by tabzoo-orion-msp; from a clone of this repository: "
                       r"uv build --package tabzoo-orion-msp --wheel --out-dir dist && "
                       r"pip install dist/tabzoo_orion_msp-\*\.whl"):
        reg.get("architectures", "orion-msp")
    with pytest.raises(PluginLoadError, match=r"uv build --package tabzoo-priors "):  # on no index: never a bare pip
        reg.get("priors", "icl")
