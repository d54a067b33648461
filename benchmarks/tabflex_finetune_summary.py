"""Issue 28: one table of the TabFlex checkpoint / fine-tuning runs of ``benchmarks/realdata.py``.

The runs were cut into several short ``realdata.py`` invocations (a shared 2-core machine); this joins
their records (split 0, ROC-AUC, fit + predict seconds) per table and model, and the means over the
tables every model ran on. A later run of a (table, model) replaces an earlier one.

Usage: ``python benchmarks/tabflex_finetune_summary.py OUT.json RUN.json [RUN.json ...]``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def summarize(paths: list[str]) -> dict:
    cells: dict[str, dict[str, dict[str, float]]] = {}
    sources: dict[str, str] = {}
    for path in paths:
        data = json.loads(Path(path).read_text())
        for r in data["records"]:
            if r["task"] != "classification" or r["status"] != "ok" or r["split"] != 0:
                continue
            cells.setdefault(r["table"], {})[r["model"]] = {"roc_auc": r["metrics"]["roc_auc"],
                                                           "log_loss": r["metrics"]["log_loss"],
                                                           "fit_predict_s": r["fit_predict_s"]}
            sources[f"{r['table']}/{r['model']}"] = Path(path).name
    models = sorted({m for t in cells.values() for m in t})
    common = [t for t in cells if all(m in cells[t] for m in models)]
    means = {m: {k: sum(cells[t][m][k] for t in common) / len(common) for k in ("roc_auc", "log_loss", "fit_predict_s")}
             for m in models} if common else {}
    ranks: dict[str, float] = {m: 0.0 for m in models}
    for t in common:  # rank 1 = best ROC-AUC of the table; ties share the mean rank
        scores = sorted((cells[t][m]["roc_auc"] for m in models), reverse=True)
        for m in models:
            v = cells[t][m]["roc_auc"]
            ranks[m] += (scores.index(v) + 1 + len(scores) - scores[::-1].index(v)) / 2 / len(common)
    best_peer = {t: max(v["roc_auc"] for m, v in cells[t].items() if not m.startswith("tabflex")) for t in common}
    ft, base = "tabflex-icl-ft", "tabflex-icl"
    deltas = {t: cells[t][ft]["roc_auc"] - cells[t][base]["roc_auc"] for t in cells if ft in cells[t] and base in cells[t]}
    return {"benchmark": "realdata, issue 28 TabFlex checkpoints and fine-tuning", "runs": [Path(p).name for p in paths],
            "split": 0, "tables": cells, "tables_with_every_model": common, "means_over_those_tables": means,
            "mean_rank_roc_auc_over_those_tables": ranks if common else {},
            "best_peer_roc_auc": best_peer, "fine_tune_minus_untuned_roc_auc": deltas,
            "fine_tune_better_on": sorted(t for t, d in deltas.items() if d > 0),
            "source_of_each_cell": sources}


if __name__ == "__main__":
    out = Path(sys.argv[1])
    if out.exists():
        raise SystemExit(f"{out} exists; results are never overwritten.")
    result = summarize(sys.argv[2:])
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({"means": result["means_over_those_tables"], "deltas": result["fine_tune_minus_untuned_roc_auc"]},
                     indent=1))
