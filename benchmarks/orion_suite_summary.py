"""Issue 28: ORION-MSP against LogisticRegression and XGBoost on the real-data suite, per split.

Joins ``benchmarks/realdata.py`` runs (finished JSON) and writes, per split and per ORION runner
(``orion-msp`` = the estimator's defaults, and any ``--variant`` such as ``orion-blend``), over the
classification tables where the runner, ``linear`` and ``xgboost`` all have a result: the mean ROC-AUC
of each, the mean rank among the three (1 = best, ties share), wins / losses / ties against LR and
XGBoost (per table, ties within 5e-4), the tables ORION loses most to LR, and seconds per table (fit +
predict); then the same over all (split, table) pairs. LR and XGBoost are deterministic, so a record of
theirs from any run of the same split and table is the same computation; a later file's record replaces
an earlier one's.

Where the records keep the estimator's fitted choices (``"fitted"``, realdata.py since 2026-11-29), each block
counts them: ``fine_tune_kept`` ([kept, fine-tuned tables]; fine-tuning keeps its weights only when they are
better on the inner split) and ``linear_blend_weights`` (tables per chosen weight).

``--vs BASE``: each other ORION runner against the runner ``BASE`` on the (split, table) cells both have:
mean ROC-AUC of each, mean difference, W-L-T (``vs_base``), e.g. ``--vs orion-msp`` for fine-tuned
ORION-MSP alone against ORION-MSP alone.

Usage: ``python benchmarks/orion_suite_summary.py OUT.json RUN.json [RUN.json ...] [--vs BASE]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

# mean ranks (1 = best, ties share the mean rank): one rule for both summaries
from issue28_splits_summary import _ranks

PEERS = ("linear", "xgboost")
TIE = 5e-4


def _wlt(a: list[float], b: list[float]) -> list[int]:
    w = sum(x > y + TIE for x, y in zip(a, b, strict=True))
    lo = sum(x < y - TIE for x, y in zip(a, b, strict=True))
    return [w, lo, len(a) - w - lo]


Cells = dict[tuple[int, str], dict[str, dict[str, Any]]]
#: (split, table) -> model -> the whole ok classification record of a realdata.py run
Records = dict[tuple[int, str], dict[str, dict[str, Any]]]


def load_records(paths: list[str]) -> tuple[Records, list[dict[str, Any]]]:
    """The one reader of finished ``realdata.py`` runs for the ORION summaries (this one and ``orion_ft_auto.py``).

    Returns ``(split, table) -> model ->`` its ok classification record (a later file's record replaces an
    earlier one's), and per file its header: ``file``, ``git`` (the run's git dict), ``date_utc``,
    ``load_average_at_end`` and ``wall_s``.
    """
    records: Records = {}
    runs = []
    for path in paths:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        runs.append(
            {
                "file": Path(path).name,
                "git": data.get("git"),
                "date_utc": data.get("date_utc"),
                "load_average_at_end": data.get("machine", {}).get("load_average_at_end"),
                "wall_s": data.get("wall_s"),
            }
        )
        for r in data["records"]:
            if r.get("status") == "ok" and r.get("task") == "classification":
                records.setdefault((int(r["split"]), r["table"]), {})[r["model"]] = r
    return records, runs


def _fitted(cells: Cells, keys: list[tuple[int, str]], model: str) -> dict[str, Any]:
    """Counts of the fitted choices the records of ``model`` keep (none: ``{}``)."""
    fits = [cells[k][model]["fitted"] for k in keys if cells[k][model].get("fitted")]
    out: dict[str, Any] = {}
    tuned = [f["fine_tune"] for f in fits if isinstance(f.get("fine_tune"), dict)]
    if tuned:
        out["fine_tune_kept"] = [sum(bool(t.get("kept")) for t in tuned), len(tuned)]
    weights = [float(f["linear_blend"]) for f in fits if f.get("linear_blend") is not None]
    if weights:
        out["linear_blend_weights"] = {str(w): weights.count(w) for w in sorted(set(weights))}
    return out


def _vs(cells: Cells, model: str, base: str) -> dict[str, Any]:
    """``model`` against ``base`` on the cells both have."""
    keys = sorted(k for k, v in cells.items() if model in v and base in v)
    if not keys:
        return {}
    a = [cells[k][model]["roc_auc"] for k in keys]
    b = [cells[k][base]["roc_auc"] for k in keys]
    return {
        "base": base,
        "n": len(keys),
        "mean_roc_auc": {model: round(sum(a) / len(a), 4), base: round(sum(b) / len(b), 4)},
        "mean_difference": round((sum(a) - sum(b)) / len(a), 4),
        "w_l_t": _wlt(a, b),
    }


def _block(cells: Cells, model: str, base: str | None = None) -> dict[str, Any]:
    keys = sorted(k for k, v in cells.items() if model in v and all(p in v for p in PEERS))
    if not keys:
        return {}
    names = (model, *PEERS)
    auc = {m: [cells[k][m]["roc_auc"] for k in keys] for m in names}
    ranks = [_ranks({m: cells[k][m]["roc_auc"] for m in names}) for k in keys]
    gap = sorted((cells[k][model]["roc_auc"] - cells[k]["linear"]["roc_auc"], k) for k in keys)
    return {
        "n": len(keys),
        "mean_roc_auc": {m: round(sum(v) / len(v), 4) for m, v in auc.items()},
        "mean_rank": {m: round(sum(r[m] for r in ranks) / len(ranks), 2) for m in names},
        "vs_linear_w_l_t": _wlt(auc[model], auc["linear"]),
        "vs_xgboost_w_l_t": _wlt(auc[model], auc["xgboost"]),
        "seconds_per_table": round(sum(cells[k][model]["s"] for k in keys) / len(keys), 1),
        "largest_losses_to_linear": [
            {"split": k[0], "table": k[1], "delta": round(d, 4)} for d, k in gap[:5] if d < 0
        ],
        "per_table": {
            f"{k[0]}/{k[1]}": {m: round(cells[k][m]["roc_auc"], 4) for m in names} for k in keys
        },
        **_fitted(cells, keys, model),
        **({"vs_base": vs} if base and model != base and (vs := _vs(cells, model, base)) else {}),
    }


def summarize(paths: list[str], base: str | None = None) -> dict[str, Any]:
    records, runs = load_records(paths)
    cells: Cells = {
        k: {
            m: {
                "roc_auc": float(r["metrics"]["roc_auc"]),
                "s": float(r["fit_predict_s"]),
                **({"fitted": r["fitted"]} if r.get("fitted") else {}),
            }
            for m, r in v.items()
        }
        for k, v in records.items()
    }
    models = sorted({m for v in cells.values() for m in v if m.startswith("orion")})
    splits = sorted({k[0] for k in cells})
    out: dict[str, Any] = {
        "benchmark": "orion_suite_summary",
        "issue": 28,
        "runs": runs,
        "tie": TIE,
        "per_split": {},
        "all_splits": {},
    }
    for s in splits:
        sub = {k: v for k, v in cells.items() if k[0] == s}
        out["per_split"][str(s)] = {m: b for m in models if (b := _block(sub, m, base))}
    out["all_splits"] = {
        m: {k: v for k, v in _block(cells, m, base).items() if k != "per_table"} for m in models
    }
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="the summary JSON to write (never overwritten)")
    p.add_argument("runs", nargs="+", help="finished realdata.py JSON files")
    p.add_argument(
        "--vs", default=None, metavar="BASE", help="also compare every other ORION runner with BASE"
    )
    args = p.parse_args(argv)
    out = Path(args.out)
    if out.exists():
        raise SystemExit(f"{out} exists; write a new file instead of overwriting it")
    result = summarize(args.runs, args.vs)
    if args.vs:
        result["vs"] = args.vs
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    keep = (
        "n",
        "mean_roc_auc",
        "mean_rank",
        "vs_linear_w_l_t",
        "vs_xgboost_w_l_t",
        "seconds_per_table",
        "fine_tune_kept",
        "linear_blend_weights",
        "vs_base",
    )
    short = {
        s: {m: {k: b[k] for k in keep if k in b} for m, b in d.items()}
        for s, d in result["per_split"].items()
    }
    print(
        json.dumps(
            {
                "per_split": short,
                "all_splits": {
                    m: {k: v for k, v in b.items() if k != "largest_losses_to_linear"}
                    for m, b in result["all_splits"].items()
                },
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
