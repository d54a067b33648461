"""``benchmarks/orion_suite_summary.py``: blocks against LR / XGBoost, the fitted choices the records keep and
``--vs BASE`` (issue 28)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from orion_suite_summary import main, summarize


def _rec(table: str, model: str, split: int, auc: float, fitted: dict | None = None) -> dict:
    r = {
        "table": table,
        "task": "classification",
        "model": model,
        "split": split,
        "status": "ok",
        "fit_predict_s": 2.0,
        "metrics": {"roc_auc": auc},
    }
    return r | ({"fitted": fitted} if fitted else {})


def test_fitted_counts_and_vs_base(tmp_path: Path) -> None:
    kept = {"fine_tune": {"kept": True, "steps": 100}, "linear_blend": 0.0}
    dropped = {"fine_tune": {"kept": False, "steps": 50}, "linear_blend": 0.0}
    recs = [
        _rec("a", "linear", 0, 0.80),
        _rec("a", "xgboost", 0, 0.70),
        _rec("a", "orion-msp", 0, 0.75),
        _rec("a", "orion-ft", 0, 0.85, kept),
        _rec("b", "linear", 0, 0.60),
        _rec("b", "xgboost", 0, 0.90),
        _rec("b", "orion-msp", 0, 0.70),
        _rec("b", "orion-ft", 0, 0.70, dropped),
        _rec("c", "linear", 0, 0.50),
        _rec("c", "xgboost", 0, 0.50),
        _rec("c", "orion-msp", 0, 0.60),
    ]
    run = tmp_path / "run.json"
    run.write_text(json.dumps({"records": recs}))
    res = summarize([str(run)], "orion-msp")
    ft = res["per_split"]["0"]["orion-ft"]
    assert ft["n"] == 2 and ft["mean_roc_auc"] == {"orion-ft": 0.775, "linear": 0.7, "xgboost": 0.8}
    assert ft["fine_tune_kept"] == [1, 2] and ft["linear_blend_weights"] == {"0.0": 2}
    assert ft["vs_base"] == {
        "base": "orion-msp",
        "n": 2,
        "mean_roc_auc": {"orion-ft": 0.775, "orion-msp": 0.725},
        "mean_difference": 0.05,
        "w_l_t": [1, 0, 1],
    }
    base = res["per_split"]["0"]["orion-msp"]
    assert base["n"] == 3 and "vs_base" not in base and "fine_tune_kept" not in base
    assert res["all_splits"]["orion-ft"]["vs_base"]["n"] == 2
    assert (
        "vs_base" not in summarize([str(run)])["per_split"]["0"]["orion-ft"]
    )  # no --vs: as before

    out = tmp_path / "summary.json"
    main([str(out), str(run), "--vs", "orion-msp"])
    assert json.loads(out.read_text())["vs"] == "orion-msp"
    with pytest.raises(SystemExit):
        main([str(out), str(run)])  # never overwritten


def test_the_ft_auto_evidence_reads_records_through_the_one_loader(tmp_path: Path) -> None:
    """``orion_ft_auto.py`` shares the record loader and the tie of this summary (a later file's record replaces
    an earlier one's, only ok classification records count)."""
    import orion_ft_auto
    import orion_suite_summary

    assert (
        orion_ft_auto.TIE is orion_suite_summary.TIE
        and orion_ft_auto.load_records is orion_suite_summary.load_records
    )
    first, later = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(
        json.dumps(
            {
                "git": {"commit": "x"},
                "records": [_rec("t", "orion-msp", 0, 0.6), _rec("u", "orion-msp", 1, 0.7)],
            }
        )
    )
    bad = _rec("u", "orion-msp", 1, 0.1) | {"status": "error"}
    later.write_text(
        json.dumps({"records": [_rec("t", "orion-msp", 0, 0.8), bad, _rec("t", "linear", 0, 0.5)]})
    )
    cells, runs = orion_ft_auto._cells([str(first), str(later)], "orion-msp")
    assert {k: v["metrics"]["roc_auc"] for k, v in cells.items()} == {(0, "t"): 0.8, (1, "u"): 0.7}
    assert runs == [
        {"file": "a.json", "git": "x", "load_average_at_end": None},
        {"file": "b.json", "git": None, "load_average_at_end": None},
    ]
