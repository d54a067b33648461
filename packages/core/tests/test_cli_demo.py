"""``tabzoo demo``: the main job runs end to end on bundled data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from _icl_testmodel import plugin_env


def test_demo_json_scores_installed_models_against_baseline(tmp_path: Path) -> None:
    env = plugin_env(tmp_path / "site")
    out = subprocess.run(
        [sys.executable, "-m", "tabzoo.cli", "demo", "--json", "--repeats", "1", "--n-estimators", "1"],
        capture_output=True, text=True, env=env, check=True, timeout=300,
    )
    data = json.loads(out.stdout)
    assert data["models"] == ["icl_test"]
    for ds in ("breast_cancer", "wine"):
        row = data["datasets"][ds]
        assert set(row) == {"LogisticRegression", "icl_test"}
        # the kNN-style test model needs no training and must be far above chance on both sets
        assert row["icl_test"]["accuracy"] > 0.8, row
        assert 0.5 <= row["LogisticRegression"]["roc_auc"] <= 1.0


def test_demo_without_models_says_what_to_install(tmp_path: Path) -> None:
    env = {**plugin_env(tmp_path / "site"), "TABZOO_LOAD_PLUGINS": "nothing-matches-this"}
    out = subprocess.run(
        [sys.executable, "-m", "tabzoo.cli", "demo", "--json"], capture_output=True, text=True, env=env, check=True
    )
    data = json.loads(out.stdout)
    assert data["models"] == [] and "pip install" in data["message"]
