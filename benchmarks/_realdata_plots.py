"""PNGs of ``benchmarks/realdata.py``: learning curves, per-model metric summary, time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["write_plots", "plot_paths"]

_STYLE = {"tabflex": ("tab:red", "o", 2.4), "orion-msp": ("tab:purple", "s", 2.0), "npt": ("tab:pink", "D", 1.6),
          "multitab": ("tab:brown", "v", 1.6), "linear": ("tab:gray", "^", 1.4), "random_forest": ("tab:olive", "P", 1.4),
          "hist_gbdt": ("tab:blue", "x", 1.4), "xgboost": ("tab:green", "*", 1.4), "lightgbm": ("tab:cyan", "d", 1.4),
          "catboost": ("tab:orange", "h", 1.4)}


def _style(model: str) -> tuple[str, str, float]:
    return _STYLE.get(model, ("black", ".", 1.2))


def plot_paths(stem: Path) -> dict[str, Path]:
    return {k: Path(f"{stem}-{k}.png") for k in ("curves", "metrics", "time")}


def _save(fig: Any, path: Path) -> str:
    if path.exists():
        raise FileExistsError(f"{path} exists; plots are never overwritten, pick a new --out name")
    fig.savefig(path, dpi=110, bbox_inches="tight")
    return str(path)


def write_plots(result: dict[str, Any], stem: Path) -> dict[str, str]:
    """Write the three PNGs ``<stem>-curves.png``, ``-metrics.png``, ``-time.png``; return their paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = plot_paths(stem)
    written: dict[str, str] = {}
    machine = result.get("machine", {}).get("cpu_model", "")
    curves = result.get("learning_curves") or {}
    if curves:
        n = len(curves)
        cols = min(3, n)
        rows = int(np.ceil(n / cols))
        fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), squeeze=False)
        for ax, (table, c) in zip(axes.flat, curves.items(), strict=False):
            for model, pts in c["points"].items():
                ok = [p for p in pts if p.get("status") == "ok"]
                if not ok:
                    continue
                color, marker, lw = _style(model)
                ax.plot([p["train_rows"] for p in ok], [p["accuracy"] for p in ok], marker=marker, color=color,
                        lw=lw, ms=4, label=model)
            ax.set_xscale("log")
            ax.set_title(f"{table} (test {c['test_rows']} rows)", fontsize=9)
            ax.set_xlabel("training / context rows")
            ax.set_ylabel("accuracy")
            ax.grid(alpha=0.3)
        for ax in list(axes.flat)[n:]:
            ax.axis("off")
        axes.flat[0].legend(fontsize=7)
        fig.suptitle(f"Accuracy against training/context rows (large tables); {machine}", fontsize=10)
        written["curves"] = _save(fig, paths["curves"])
        plt.close(fig)

    summ = result.get("summary", {})
    tasks = [t for t in ("classification", "regression") if t in summ]
    if tasks:
        fig, axes = plt.subplots(len(tasks), 2, figsize=(15, 5.2 * len(tasks)), squeeze=False,
                                 gridspec_kw={"width_ratios": [3.2, 1]})
        for row, task in zip(axes, tasks, strict=True):
            s = summ[task]
            metric = s["primary_metric"]
            tables = sorted(s["per_table"])
            models = sorted(s["per_model"], key=lambda m: s["per_model"][m].get(f"mean_{metric}") or 0, reverse=True)
            ax = row[0]
            x = np.arange(len(tables))
            for k, m in enumerate(models):
                vals = [s["per_table"][t].get(m, {}).get(metric) for t in tables]
                color, marker, _ = _style(m)
                off = (k - (len(models) - 1) / 2) * 0.06
                ax.scatter(x + off, [np.nan if v is None else v for v in vals], color=color, marker=marker, s=22,
                           label=m, zorder=3)
            ax.set_xticks(x)
            ax.set_xticklabels(tables, rotation=70, ha="right", fontsize=7)
            ax.set_ylabel(metric)
            if metric == "r2":
                ax.set_ylim(max(-0.2, ax.get_ylim()[0]), 1.0)
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, ncol=5)
            ax.set_title(f"{task}: {metric} per table (mean over splits)", fontsize=10)
            ax2 = row[1]
            ranked = [(m, s["per_model"][m]["mean_rank"]) for m in models if s["per_model"][m]["mean_rank"] is not None]
            ranked.sort(key=lambda t: t[1])
            ax2.barh([m for m, _ in ranked][::-1], [r for _, r in ranked][::-1],
                     color=[_style(m)[0] for m, _ in ranked][::-1])
            ax2.set_xlabel(f"mean rank by {metric} (1 = best)")
            ax2.set_title(f"{task}: mean rank over {s.get('ranked_tables', s['tables'])} tables", fontsize=10)
        fig.tight_layout()
        written["metrics"] = _save(fig, paths["metrics"])
        plt.close(fig)

        fig, ax = plt.subplots(figsize=(10, 4.5))
        models = sorted({m for t in tasks for m in summ[t]["per_model"]})
        for k, m in enumerate(models):
            secs = [v["seconds"] for t in tasks for tab in summ[t]["per_table"].values()
                    for mm, v in tab.items() if mm == m and v.get("seconds") is not None]
            color, marker, _ = _style(m)
            jitter = np.random.default_rng(k).uniform(-0.2, 0.2, len(secs))
            ax.scatter(np.full(len(secs), k) + jitter, secs, color=color, marker=marker, s=14, alpha=0.7)
            if secs:
                ax.plot([k - 0.3, k + 0.3], [np.median(secs)] * 2, color="black", lw=1.5)
        ax.set_xticks(range(len(models)))
        ax.set_xticklabels(models, rotation=30, ha="right")
        ax.set_yscale("log")
        ax.set_ylabel("fit + predict seconds per table (mean over splits)")
        ax.set_title(f"Time, 1 thread, train cap {result['protocol']['train_cap']} rows; bar = median; {machine}",
                     fontsize=9)
        ax.grid(alpha=0.3, which="both")
        written["time"] = _save(fig, paths["time"])
        plt.close(fig)
    return written
