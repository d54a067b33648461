"""Summary of issue 26's small-n options of MultiTab-Net (``row_ff_mult=3``, ``row_scope="self"``)
against the single-task MLP, on grid settings and on the real multitask tables; writes JSON + PNG.

    uv run --group bench python benchmarks/multitab_options.py \
        --grid /tmp/opts-s0.jsonl /tmp/opts-s1.jsonl /tmp/opts-s2.jsonl \
        --real benchmarks/results/multitab-real-opts-2026-11-27.json \
        --real-base benchmarks/results/multitab-real-2026-11-27-a.json benchmarks/results/multitab-real-2026-11-27-b.json \
        --out benchmarks/results/multitab-options-2026-11-27.json --png benchmarks/results/multitab-options-2026-11-27.png

* ``--grid``: JSON lines of ``benchmarks/multitab_diagnose.py`` (one row per variant, setting and
  seed; test scores on an independent draw). Δm of every variant against ``mlp_stl`` of the same
  setting and seed.
* ``--real``: a ``benchmarks/multitab.py real`` report of the new models (e.g. ``mt_rff3``,
  ``mt_twin``), and ``--real-base`` the reports of the same seeds and splits that hold the
  single-task MLP (``stl``) and the other models; rows are joined on (table, seed) and every
  model's Δm against ``stl`` is taken from the joined test scores (same split, same test rows);
  ``--real-references`` adds the same against other single-task references (``real_vs``).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np
from tabzoo_multitab import delta_m


def _stats(vals: list[float]) -> dict[str, Any]:
    return {"mean": round(float(np.mean(vals)), 3), "std": round(float(np.std(vals)), 3), "runs": len(vals),
            "values": [round(v, 3) for v in vals]}


def grid_summary(paths: list[Path], reference: str = "mlp_stl") -> dict[str, Any]:
    rows = [json.loads(line) for p in paths for line in p.read_text().splitlines() if line.strip()]
    ref = {(r["setting"], r["seed"]): r["scores"] for r in rows if r["variant"] == reference}
    per: dict[str, dict[str, list[float]]] = {}
    for r in rows:
        key = (r["setting"], r["seed"])
        if r["variant"] != reference and key in ref:
            per.setdefault(r["variant"], {}).setdefault(r["setting"], []).append(delta_m(r["scores"], ref[key]))
    out: dict[str, Any] = {}
    for v, by_setting in per.items():
        means = [float(np.mean(x)) for x in by_setting.values()]
        out[v] = {"all_runs": _stats([x for xs in by_setting.values() for x in xs]),
                  "settings_positive": int(sum(m > 0 for m in means)),
                  "per_setting": {s: _stats(xs) for s, xs in sorted(by_setting.items())}}
    return {"reference": reference, "settings": sorted({r["setting"] for r in rows}),
            "seeds": sorted({r["seed"] for r in rows}), "variants": out,
            "recipe": rows[0]["extra"] if rows else None, "n_train": rows[0]["n_train"] if rows else None}


def real_summary(new: list[Path], base: list[Path], reference: str = "stl") -> dict[str, Any]:
    joined: dict[tuple[str, int], dict[str, list[float]]] = {}
    for p in [*base, *new]:
        for r in json.loads(p.read_text()).get("real", []):
            joined.setdefault((r["dataset"], r["seed"]), {}).update(r["scores"])
    per: dict[str, dict[str, list[float]]] = {}
    for (table, _seed), scores in sorted(joined.items()):
        if reference not in scores:
            continue
        for m, s in scores.items():
            if m != reference:
                per.setdefault(m, {}).setdefault(table, []).append(delta_m(s, scores[reference]))
    out: dict[str, Any] = {}
    for m, by_table in per.items():
        means = {t: float(np.mean(x)) for t, x in by_table.items()}
        out[m] = {"mean_of_table_means": round(float(np.mean(list(means.values()))), 3),
                  "tables_positive": int(sum(v > 0 for v in means.values())), "tables": len(means),
                  "per_table": {t: _stats(xs) for t, xs in sorted(by_table.items())}}
    return {"reference": reference, "models": out}


def plot(summary: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(k, summary[k]) for k in ("grid", "real") if summary.get(k)]
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 4.2), squeeze=False)
    for ax, (kind, s) in zip(axes[0], panels, strict=True):
        items = s["variants"] if kind == "grid" else s["models"]
        groups = sorted({g for v in items.values() for g in v["per_setting" if kind == "grid" else "per_table"]})
        names = sorted(items)
        w = 0.8 / max(1, len(names))
        for k, n in enumerate(names):
            d = items[n]["per_setting" if kind == "grid" else "per_table"]
            ax.bar(np.arange(len(groups)) + k * w, [d.get(g, {}).get("mean", np.nan) for g in groups], w,
                   yerr=[d.get(g, {}).get("std", 0.0) for g in groups], capsize=2, label=n)
        ax.set_xticks(np.arange(len(groups)) + 0.4 - w / 2, groups, fontsize=8)
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_ylabel(f"Δm vs {s['reference']} (%)")
        ax.set_title("MultiTab-Bench settings (300 rows)" if kind == "grid" else "Real multitask tables")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--grid", type=Path, nargs="*", default=[])
    ap.add_argument("--real", type=Path, nargs="*", default=[])
    ap.add_argument("--real-base", type=Path, nargs="*", default=[])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--png", type=Path)
    ap.add_argument("--real-references", nargs="*", default=[],
                    help="further single-task references of the real tables (e.g. mt_rff3_twin, gbdt): Δm of every model against each")
    args = ap.parse_args()
    summary = {"benchmark": "multitab-options", "grid": grid_summary(args.grid) if args.grid else None,
               "real": real_summary(args.real, args.real_base) if args.real else None,
               "real_vs": {r: real_summary(args.real, args.real_base, r) for r in args.real_references} if args.real else None,
               "inputs": {"grid": [str(p) for p in args.grid], "real": [str(p) for p in args.real],
                          "real_base": [str(p) for p in args.real_base]}}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=1) + "\n")
    if args.png:
        plot(summary, args.png)


if __name__ == "__main__":
    main()
