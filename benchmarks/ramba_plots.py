"""Plots of Ramba's committed benchmark results (nothing is measured here).

    uv run --group bench python benchmarks/ramba_plots.py \
        [--scaling benchmarks/results/ramba-host-collate-2026-11-27.json] \
        --quality benchmarks/results/ramba-tasks-model-2026-11-27.json [more quality JSONs] \
        --out benchmarks/results/ramba-2026-11-27

writes ``<out>-scaling.png`` (with ``--scaling``; CPU seconds per call against sequence length,
log-log, Ramba, the plugin's dense variant and the dense transformer, forward and forward +
backward, from one run side by side) and ``<out>-quality.png`` (test metric per model on each task, mean and standard
deviation over seeds, one panel per result file and task), and prints which files fed which plot.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import numpy as np

NAMES = {"ramba": "Ramba", "dense_mixer": "plugin dense variant", "dense": "dense transformer"}


def plot_scaling(res: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = res["scaling"]["rows"]
    ns = [r["L"] for r in rows]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, key, title in ((axes[0], "cpu_s", "forward (no grad)"), (axes[1], "fwdbwd_cpu_s", "forward + backward")):
        for m in ("ramba", "dense_mixer", "dense"):
            if f"{m}_{key}" in rows[0]:
                ax.loglog(ns, [r[f"{m}_{key}"] for r in rows], "o-", label=NAMES[m])
        ax.set_title(title)
        ax.set_xlabel("sequence length L (tokens)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("CPU seconds per call (one thread)")
    axes[0].legend()
    slope = res["scaling"]["slopes"]
    fig.suptitle(f"Ramba vs dense attention on CPU ({res.get('date', '')}; Ramba slope "
                 f"{slope['ramba_cpu_s']:.2f} fwd / {slope['ramba_fwdbwd_cpu_s']:.2f} fwd+bwd)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _quality_panels(files: list[Path]) -> list[tuple[str, str, dict[str, Any]]]:
    panels = []
    for f in files:
        for task, res in json.loads(f.read_text()).get("tasks", {}).items():
            panels.append((f"{task}\n{f.name} (train {res['n']['train']}, test {res['n']['test']})", res["metric"],
                           res["models"]))
    return panels


def plot_quality(files: list[Path], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = _quality_panels(files)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.2), squeeze=False)
    for ax, (title, metric, models) in zip(axes[0], panels, strict=True):
        names = sorted(models, key=lambda m: (not m.startswith("ramba"), m))
        mean = [models[m]["test_mean"] for m in names]
        err = [models[m]["test_std"] for m in names]
        n = [len(models[m]["runs"]) for m in names]
        colors = ["tab:blue" if m.startswith("ramba") else "tab:grey" for m in names]
        ax.barh(np.arange(len(names)), mean, xerr=err, color=colors, capsize=3)
        ax.set_yticks(np.arange(len(names)), [f"{m} (n={k})" for m, k in zip(names, n, strict=True)], fontsize=7)
        lo = min(mean) - max(err) - 0.03
        ax.set_xlim(max(0.0, lo) if metric == "roc_auc" else lo, max(mean) + max(err) + 0.02)
        ax.set_xlabel(f"test {metric} (mean ± std over seeds)")
        ax.set_title(title, fontsize=7)
        ax.grid(True, axis="x", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scaling", type=Path, default=None, help="the speed JSON (leave out: no scaling plot)")
    ap.add_argument("--quality", type=Path, nargs="+", required=True)
    ap.add_argument("--out", type=Path, required=True, help="path prefix of the PNGs")
    args = ap.parse_args()
    outputs = {}
    jobs = [("quality", lambda p: plot_quality(args.quality, p))]
    if args.scaling is not None:
        jobs.insert(0, ("scaling", lambda p: plot_scaling(json.loads(args.scaling.read_text()), p)))
    for suffix, make in jobs:
        path = args.out.with_name(f"{args.out.name}-{suffix}.png")
        if path.exists():
            raise SystemExit(f"{path} exists; pick another --out (plots are never overwritten)")
        make(path)
        outputs[str(path)] = [str(args.scaling)] if suffix == "scaling" else [str(q) for q in args.quality]
    print(json.dumps({"plots": outputs}, indent=1))


if __name__ == "__main__":
    main()
