"""MultiTab-Net against its MLP baselines on MultiTab-Bench and real multi-target data; prints JSON.

    uv run --group bench python benchmarks/multitab.py [--out benchmarks/results/multitab-YYYY-MM-DD.json]

One run measures, side by side on this machine:

* **Controlled study** (MultiTab-Bench from tabzoo-priors; train/val/test are independent draws
  sharing W): Δm (eq. 5, in percent, against the single-task MLP "STL") of MultiTab-Net, MMoE and
  shared-bottom over p in {0.2, 0.5, 0.8} x t in {2, 4, 8} x {uniform degrees (all 3), mixed
  degrees (cycling 2, 3, 4, 5)}, noise 0.01. Metric: explained variance per task. One dataset
  seed per setting and ``--repeats`` model seeds (stated in the JSON).
* **Real data** without network: scikit-learn's linnerud (3 regression targets, 20 rows; 5-fold
  cross-validation, EV of the pooled out-of-fold predictions) and Palmer penguins (species
  3-class, sex binary, body mass regression; AUC / EV on a seeded 70/30 split) when the
  ``palmerpenguins`` package is installed (it is in the ``bench`` group).
* **Cost**: parameters and forward FLOPs per sample (FlopCounterMode, a set of 256 rows) of
  MultiTab-Net against SAINT-style single-task transformers (the same encoder with one task
  token, one model per task), and the MLP baselines; plus the fp32 matmul peak of the machine.
* A PNG of Δm against p (``--png``).

Every model uses the same fixed hyperparameters in every setting (no per-setting tuning; the
paper tuned each model by grid search), early stopping on the mean validation EV/AUC.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info, matmul_gflops  # noqa: E402
from tabzoo_multitab import MultiTabConfig, MultiTabNet, delta_m  # noqa: E402
from tabzoo_multitab.baselines import MMoE, SharedBottom, SingleTaskMLP  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402
from tabzoo_priors import MultiTabBench  # noqa: E402

MODELS = ("stl", "shared_bottom", "mmoe", "multitab")
NAMES = {"stl": "STL", "shared_bottom": "Shared-bottom", "mmoe": "MMoE", "multitab": "MultiTab-Net"}


def model_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The one set of hyperparameters every setting uses."""
    return dict(d_embed=args.d_embed, n_layers=2, n_heads=2, row_heads=4, hidden=tuple(args.hidden),
                n_context=args.n_context, max_epochs=args.epochs, patience=args.patience,
                batch_size=args.batch_size, lr=args.lr, dropout=0.1, val_fraction=0.0)


def fit_eval(arch: str, X_tr, Y_tr, X_val, Y_val, X_te, Y_te, kw: dict[str, Any], seed: int,
             task_types: list[str] | None = None) -> tuple[list[float], float, int]:
    """Fit on train with early stopping on the given validation split; per-task test metrics."""
    t0 = time.perf_counter()
    est = MultiTabEstimator(architecture=arch, task_types=task_types, random_state=seed, **kw)
    est.fit(X_tr, Y_tr, eval_set=(X_val, Y_val))
    return est.task_scores(X_te, Y_te), time.perf_counter() - t0, est.n_epochs_


def controlled(args: argparse.Namespace) -> list[dict[str, Any]]:
    kw = model_kwargs(args)
    out = []
    for degrees_kind in args.kinds:
        for t in args.ts:
            for p in args.ps:
                degrees = [3] * t if degrees_kind == "uniform" else [2 + (i % 4) for i in range(t)]
                gen = MultiTabBench(n_tasks=t, n_features=args.n_features, p=p, degrees=degrees, noise=0.01,
                                    sizes=(args.n_train, args.n_val, args.n_test))
                s = gen.sample(seed=args.data_seed)
                xs = [part.x.numpy() for part in (s.train, s.val, s.test)]
                ys = [part.y.numpy().astype(np.float64) for part in (s.train, s.val, s.test)]
                row: dict[str, Any] = {"degrees_kind": degrees_kind, "degrees": degrees, "t": t, "p": p,
                                       "metrics": {}, "delta_m": {}, "fit_s": {}, "epochs": {}}
                for seed in range(args.repeats):
                    for arch in MODELS:
                        sc, sec, ep = fit_eval(arch, xs[0], ys[0], xs[1], ys[1], xs[2], ys[2], kw, seed)
                        row["metrics"].setdefault(arch, []).append(sc)
                        row["fit_s"].setdefault(arch, []).append(round(sec, 2))
                        row["epochs"].setdefault(arch, []).append(ep)
                    for arch in MODELS[1:]:
                        row["delta_m"].setdefault(arch, []).append(
                            delta_m(row["metrics"][arch][-1], row["metrics"]["stl"][-1]))
                row["delta_m_mean"] = {a: float(np.mean(v)) for a, v in row["delta_m"].items()}
                print(json.dumps({k: row[k] for k in ("degrees_kind", "t", "p", "delta_m_mean", "fit_s")}),
                      file=sys.stderr, flush=True)
                out.append(row)
    return out


def real_data(args: argparse.Namespace) -> list[dict[str, Any]]:
    from sklearn.datasets import load_linnerud
    from sklearn.model_selection import KFold, train_test_split
    from tabzoo_multitab.metrics import task_metric

    kw = model_kwargs(args)
    results = []
    X, Y = load_linnerud(return_X_y=True)
    Y = Y.astype(np.float64)
    small = dict(kw, batch_size=16, n_context=16, max_epochs=args.epochs)
    res: dict[str, Any] = {"dataset": "sklearn linnerud", "rows": len(X), "tasks": ["Weight", "Waist", "Pulse"],
                           "kinds": ["regression"] * 3, "protocol": "5-fold CV, EV of pooled out-of-fold predictions",
                           "metrics": {}, "delta_m": {}}
    for arch in MODELS:
        pred = np.zeros_like(Y)
        for k, (tr, te) in enumerate(KFold(5, shuffle=True, random_state=0).split(X)):
            est = MultiTabEstimator(architecture=arch, random_state=k, **dict(small, val_fraction=0.0)).fit(X[tr], Y[tr])
            pred[te] = est.predict(X[te])
        res["metrics"][arch] = [task_metric("regression", Y[:, j], pred[:, j]) for j in range(3)]
    for arch in MODELS[1:]:
        res["delta_m"][arch] = delta_m(res["metrics"][arch], res["metrics"]["stl"])
    results.append(res)
    try:
        from palmerpenguins import load_penguins
    except ImportError:
        results.append({"dataset": "palmerpenguins", "skipped": "palmerpenguins is not installed (uv run --group bench)"})
        return results
    df = load_penguins().dropna(subset=["species", "sex", "body_mass_g"]).reset_index(drop=True)
    Xp = df[["island", "bill_length_mm", "bill_depth_mm", "flipper_length_mm", "year"]].astype(
        {"island": object, "year": float}).to_numpy(dtype=object)
    Yp = np.empty((len(df), 3), dtype=object)
    Yp[:, 0], Yp[:, 1], Yp[:, 2] = df["species"].to_numpy(object), df["sex"].to_numpy(object), df["body_mass_g"].to_numpy(float)
    kinds = ["multiclass", "binary", "regression"]
    X_tr, X_te, Y_tr, Y_te = train_test_split(Xp, Yp, test_size=0.3, random_state=0)
    res = {"dataset": "palmerpenguins", "rows": len(df), "tasks": ["species", "sex", "body_mass_g"], "kinds": kinds,
           "protocol": "70/30 split (seed 0), 15% of train for early stopping; AUC (species macro OvR, sex), EV",
           "metrics": {}, "delta_m": {}}
    for arch in MODELS:
        scores = []
        for seed in range(args.repeats):
            est = MultiTabEstimator(architecture=arch, task_types=kinds, random_state=seed,
                                    **dict(kw, batch_size=64, n_context=128, val_fraction=0.15)).fit(X_tr, Y_tr)
            scores.append(est.task_scores(X_te, Y_te))
        res["metrics"][arch] = np.mean(scores, axis=0).tolist()
    for arch in MODELS[1:]:
        res["delta_m"][arch] = delta_m(res["metrics"][arch], res["metrics"]["stl"])
    results.append(res)
    return results


def _flops_per_sample(model: torch.nn.Module, n_num: int, rows: int = 256) -> float:
    from torch.utils.flop_counter import FlopCounterMode

    x = torch.randn(rows, n_num)
    with torch.no_grad(), FlopCounterMode(display=False) as fc:
        model(x)
    return fc.get_total_flops() / rows


def cost(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    d = args.n_features
    for t in (2, 4, 8):
        tasks = [(f"t{i}", "regression", 0) for i in range(t)]
        base = dict(n_num=d, d_embed=args.d_embed, n_layers=2, n_heads=2, row_heads=4, dropout=0.0)
        mt = MultiTabNet(MultiTabConfig(tasks=tasks, **base)).eval()
        saint = MultiTabNet(MultiTabConfig(tasks=tasks[:1], **base)).eval()  # one single-task model per task
        mlps = {"stl": SingleTaskMLP(d, (), tasks, d_embed=args.d_embed, hidden=tuple(args.hidden)),
                "shared_bottom": SharedBottom(d, (), tasks, d_embed=args.d_embed, hidden=tuple(args.hidden)),
                "mmoe": MMoE(d, (), tasks, d_embed=args.d_embed, hidden=tuple(args.hidden))}
        row: dict[str, Any] = {"t": t, "features": d, "flops_set_rows": 256}
        n_params = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
        row["multitab"] = {"params": n_params(mt), "flops_per_sample": _flops_per_sample(mt, d)}
        row["saint_x_t"] = {"params": t * n_params(saint), "flops_per_sample": t * _flops_per_sample(saint, d)}
        for k, m in mlps.items():
            row[k] = {"params": n_params(m), "flops_per_sample": _flops_per_sample(m.eval(), d)}
        row["saint_over_multitab"] = {
            "params": row["saint_x_t"]["params"] / row["multitab"]["params"],
            "flops": row["saint_x_t"]["flops_per_sample"] / row["multitab"]["flops_per_sample"]}
        out.append(row)
    return out


def plot(study: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(12, 6.5), sharex=True)
    for i, kind in enumerate(("uniform", "mixed")):
        for j, t in enumerate((2, 4, 8)):
            ax = axes[i, j]
            rows = sorted((r for r in study if r["degrees_kind"] == kind and r["t"] == t), key=lambda r: r["p"])
            for arch in MODELS[1:]:
                ps = [r["p"] for r in rows]
                means = [np.mean(r["delta_m"][arch]) for r in rows]
                ax.plot(ps, means, marker="o", label=NAMES[arch])
            ax.axhline(0.0, color="grey", lw=0.8, ls="--")
            ax.set_title(f"t={t}, {kind} degrees")
            ax.set_xticks([0.2, 0.5, 0.8])
            if i == 1:
                ax.set_xlabel("task correlation p")
            if j == 0:
                ax.set_ylabel("Δm vs STL (%)")
    axes[0, 0].legend(fontsize=8)
    fig.suptitle("MultiTab-Bench: multitask gain against single-task MLPs")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--png", type=Path)
    ap.add_argument("--n-features", type=int, default=16)
    ap.add_argument("--n-train", type=int, default=2000)
    ap.add_argument("--n-val", type=int, default=500)
    ap.add_argument("--n-test", type=int, default=2000)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--patience", type=int, default=8)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--d-embed", type=int, default=8)
    ap.add_argument("--hidden", type=int, nargs="+", default=[128, 64])
    ap.add_argument("--n-context", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--data-seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--skip-study", action="store_true")
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--ts", type=int, nargs="+", default=[2, 4, 8], help="task counts of the study")
    ap.add_argument("--ps", type=float, nargs="+", default=[0.2, 0.5, 0.8], help="task correlations of the study")
    ap.add_argument("--kinds", nargs="+", default=["uniform", "mixed"], choices=["uniform", "mixed"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    report: dict[str, Any] = {"benchmark": "multitab", "date": _dt.date.today().isoformat(), "machine": machine_info(),
                              "matmul_gflops": {"fp32": matmul_gflops(torch.float32)},
                              "settings": {k: (v if not isinstance(v, Path) else str(v)) for k, v in vars(args).items()},
                              "seeds": {"data_seed": args.data_seed, "model_seeds": list(range(args.repeats))}}
    report["cost"] = cost(args)
    if not args.skip_real:
        report["real_data"] = real_data(args)
    if not args.skip_study:
        study = controlled(args)
        report["controlled"] = study
        wins = [r for r in study if r["delta_m_mean"]["multitab"] > 0 and r["delta_m_mean"]["multitab"] >= r["delta_m_mean"]["mmoe"]]
        report["summary"] = {
            "settings": len(study),
            "multitab_positive": sum(r["delta_m_mean"]["multitab"] > 0 for r in study),
            "multitab_ge_mmoe": sum(r["delta_m_mean"]["multitab"] >= r["delta_m_mean"]["mmoe"] for r in study),
            "multitab_positive_and_ge_mmoe": len(wins),
            "mean_delta_m": {a: float(np.mean([r["delta_m_mean"][a] for r in study])) for a in MODELS[1:]},
            "target_met": len(wins) > len(study) / 2,
        }
        if args.png and len(args.ts) == 3 and len(args.kinds) == 2:
            plot(study, args.png)
    report["wall_s"] = time.perf_counter() - t0
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        if args.out.exists():
            raise SystemExit(f"{args.out} exists; results are never overwritten, pick another name.")
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
