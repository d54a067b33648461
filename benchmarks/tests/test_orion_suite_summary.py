"""``benchmarks/orion_suite_summary.py``: blocks against LR / XGBoost, the fitted choices the records keep and
``--vs BASE`` (issue 28)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from orion_suite_summary import main, summarize


def _rec(table: str, model: str, split: int, auc: float, fitted: dict | None = None) -> dict:
    r = {"table": table, "task": "classification", "model": model, "split": split, "status": "ok",
         "fit_predict_s": 2.0, "metrics": {"roc_auc": auc}}
    return r | ({"fitted": fitted} if fitted else {})


def test_fitted_counts_and_vs_base(tmp_path: Path) -> None:
    kept = {"fine_tune": {"kept": True, "steps": 100}, "linear_blend": 0.0}
    dropped = {"fine_tune": {"kept": False, "steps": 50}, "linear_blend": 0.0}
    recs = [_rec("a", "linear", 0, 0.80), _rec("a", "xgboost", 0, 0.70), _rec("a", "orion-msp", 0, 0.75),
            _rec("a", "orion-ft", 0, 0.85, kept),
            _rec("b", "linear", 0, 0.60), _rec("b", "xgboost", 0, 0.90), _rec("b", "orion-msp", 0, 0.70),
            _rec("b", "orion-ft", 0, 0.70, dropped),
            _rec("c", "linear", 0, 0.50), _rec("c", "xgboost", 0, 0.50), _rec("c", "orion-msp", 0, 0.60)]
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"records": recs}))
    res = summarize([str(run)], "orion-msp")
    ft = res["per_split"]["0"]["orion-ft"]
    assert ft["n"] == 2 and ft["mean_roc_auc"] == {"orion-ft": 0.775, "linear": 0.7, "xgboost": 0.8}
    assert ft["fine_tune_kept"] == [1, 2] and ft["linear_blend_weights"] == {"0.0": 2}
    assert ft["vs_base"] == {"base": "orion-msp", "n": 2, "mean_roc_auc": {"orion-ft": 0.775, "orion-msp": 0.725},
                             "mean_difference": 0.05, "w_l_t": [1, 0, 1]}
    base = res["per_split"]["0"]["orion-msp"]
    assert base["n"] == 3 and "vs_base" not in base and "fine_tune_kept" not in base
    assert res["all_splits"]["orion-ft"]["vs_base"]["n"] == 2
    assert "vs_base" not in summarize([str(run)])["per_split"]["0"]["orion-ft"]  # no --vs: as before

    out = tmp_path / "summary.json"
    main([str(out), str(run), "--vs", "orion-msp"])
    assert json.loads(out.read_text())["vs"] == "orion-msp"
    with pytest.raises(SystemExit):
        main([str(out), str(run)])  # never overwritten
