"""Issue 28: the evidence behind ORION-MSP's ``fine_tune="auto"`` (fine-tune tables of at most N training rows).

Joins fine-tuned ORION-MSP alone (the runner ``orion-alone-ft`` of ``benchmarks/realdata.py``: ``linear_blend=0``,
``fine_tune`` 100 steps) with ORION-MSP alone untuned (``orion-msp`` of the ``orion-scored`` runs, same splits and
tables) and, per size band of training rows (``--bands``, upper bounds), prints and writes: table-splits, mean
ROC-AUC untuned and tuned, mean gain, W-L-T (ties within 5e-4), tuned weights kept, and the range of
fine-tuning seconds (``fitted.fine_tune.seconds``) and of fit + predict seconds tuned and untuned; per split
and over all splits. With ``--defaults RUN ...`` (runs of the runner ``orion-blend``, the estimator's defaults with
``linear_blend="auto"``), also the defaults' mean ROC-AUC and fit + predict seconds on the cells of each band where
they have a record. Nothing is fitted; the figures are those of the committed records (1 torch thread, the
load of each run is in its file and copied here).

Usage: ``python benchmarks/orion_ft_auto.py OUT.json --tuned RUN.json [RUN.json ...] --untuned RUN.json [...]
[--defaults RUN.json ...] [--bands 400,1000]``
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

# one reader of the realdata.py records and one tie rule for both ORION summaries
from orion_suite_summary import TIE, load_records

TUNED, UNTUNED, DEFAULTS = "orion-alone-ft", "orion-msp", "orion-blend"


def _cells(
    paths: list[str], model: str
) -> tuple[dict[tuple[int, str], dict[str, Any]], list[dict[str, Any]]]:
    """(split, table) -> the ok classification record of ``model`` (``orion_suite_summary.load_records``: a later
    file's replaces an earlier one's), and per file its name, git commit and load average at the end."""
    records, runs = load_records(paths)
    cells = {k: v[model] for k, v in records.items() if model in v}
    return cells, [
        {
            "file": r["file"],
            "git": (r["git"] or {}).get("commit"),
            "load_average_at_end": r["load_average_at_end"],
        }
        for r in runs
    ]


def _band(rows: int, bands: list[int]) -> str:
    lo = 0
    for hi in bands:
        if rows <= hi:
            return f"{lo + 1}-{hi}"
        lo = hi
    return f">{bands[-1]}"


def _defaults(
    pairs: list[tuple[dict[str, Any], dict[str, Any]]],
    defaults: dict[tuple[int, str], dict[str, Any]],
) -> dict[str, Any]:
    """The defaults' mean ROC-AUC (and the tuned and untuned ones on the same cells) and fit + predict seconds."""
    cells = [
        (t, u, defaults[(int(t["split"]), t["table"])])
        for t, u in pairs
        if (int(t["split"]), t["table"]) in defaults
    ]
    if not cells:
        return {}
    n = len(cells)
    return {
        "defaults_n": n,
        "defaults_mean_roc_auc": {
            "defaults": round(sum(d["metrics"]["roc_auc"] for _, _, d in cells) / n, 4),
            "tuned": round(sum(t["metrics"]["roc_auc"] for t, _, _ in cells) / n, 4),
            "untuned": round(sum(u["metrics"]["roc_auc"] for _, u, _ in cells) / n, 4),
        },
        "fit_predict_s_defaults": [
            round(min(d["fit_predict_s"] for _, _, d in cells), 1),
            round(max(d["fit_predict_s"] for _, _, d in cells), 1),
        ],
    }


def _stats(pairs: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, Any]:
    tuned = [t["metrics"]["roc_auc"] for t, _ in pairs]
    base = [u["metrics"]["roc_auc"] for _, u in pairs]
    gain = [a - b for a, b in zip(tuned, base, strict=True)]
    ft_s = [
        float(t["fitted"]["fine_tune"].get("seconds", 0.0))
        for t, _ in pairs
        if t["fitted"]["fine_tune"].get("steps", 0) > 0
    ]
    n = len(pairs)
    return {
        "n": n,
        "tables": sorted({t["table"] for t, _ in pairs}),
        "training_rows": [
            min(t["train_rows"] for t, _ in pairs),
            max(t["train_rows"] for t, _ in pairs),
        ],
        "mean_roc_auc_untuned": round(sum(base) / n, 4),
        "mean_roc_auc_tuned": round(sum(tuned) / n, 4),
        "mean_gain": round(sum(gain) / n, 4),
        "w_l_t": [
            sum(g > TIE for g in gain),
            sum(g < -TIE for g in gain),
            sum(abs(g) <= TIE for g in gain),
        ],
        "kept": [sum(bool(t["fitted"]["fine_tune"].get("kept")) for t, _ in pairs), n],
        "fine_tune_s": [round(min(ft_s)), round(max(ft_s))] if ft_s else None,
        "fit_predict_s_tuned": [
            round(min(t["fit_predict_s"] for t, _ in pairs)),
            round(max(t["fit_predict_s"] for t, _ in pairs)),
        ],
        "fit_predict_s_untuned": [
            round(min(u["fit_predict_s"] for _, u in pairs), 1),
            round(max(u["fit_predict_s"] for _, u in pairs), 1),
        ],
        "largest_losses": sorted(
            (
                {"table": t["table"], "split": t["split"], "gain": round(g, 4)}
                for (t, _), g in zip(pairs, gain, strict=True)
                if g < -TIE
            ),
            key=lambda d: d["gain"],
        )[:3],
    }


def evidence(
    tuned_paths: list[str],
    untuned_paths: list[str],
    bands: list[int],
    defaults_paths: list[str] | None = None,
) -> dict[str, Any]:
    tuned, truns = _cells(tuned_paths, TUNED)
    base, bruns = _cells(untuned_paths, UNTUNED)
    defaults, druns = _cells(defaults_paths or [], DEFAULTS)
    keys = sorted(
        k
        for k in tuned
        if k in base and isinstance(tuned[k].get("fitted", {}).get("fine_tune"), dict)
    )
    groups: dict[str, dict[str, list[tuple[dict[str, Any], dict[str, Any]]]]] = {}
    for k in keys:
        b = _band(int(tuned[k]["train_rows"]), bands)
        for scope in (f"split {k[0]}", "all"):
            groups.setdefault(scope, {}).setdefault(b, []).append((tuned[k], base[k]))
    order = [_band(b, bands) for b in bands] + [f">{bands[-1]}"]
    return {
        "benchmark": "orion_ft_auto",
        "issue": 28,
        "tuned_runs": truns,
        "untuned_runs": bruns,
        "tie": TIE,
        "bands_training_rows": bands,
        "defaults_runs": druns,
        "per_band": {
            s: {b: _stats(g[b]) | _defaults(g[b], defaults) for b in order if b in g}
            for s, g in groups.items()
        },
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="the JSON to write (never overwritten)")
    p.add_argument(
        "--tuned", nargs="+", required=True, help="realdata.py runs with the runner orion-alone-ft"
    )
    p.add_argument(
        "--untuned",
        nargs="+",
        required=True,
        help="realdata.py runs with orion-msp (linear_blend=0)",
    )
    p.add_argument(
        "--defaults", nargs="*", default=[], help="realdata.py runs with orion-blend (the defaults)"
    )
    p.add_argument("--bands", default="400,1000", help="upper bounds of the training-row bands")
    args = p.parse_args(argv)
    out = Path(args.out)
    if out.exists():
        raise SystemExit(f"{out} exists; write a new file instead of overwriting it")
    result = evidence(
        args.tuned, args.untuned, [int(b) for b in args.bands.split(",")], args.defaults
    )
    out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
