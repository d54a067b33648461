"""ORION-MSP benchmark: accuracy next to tabflex and GBDTs, and feature scaling of the row path. Prints JSON.

    uv run --group bench python benchmarks/orion_msp.py [--repeats 3] [--quick] \
        [--out benchmarks/results/orion-msp-DATE.json]

Everything is measured side by side in one run on this machine (1 torch thread by default):

* **accuracy** - the real-data suite (``benchmarks/realdata.py``) has not landed, so the datasets of
  the tabflex benchmark: breast_cancer, wine, iris, digits (scikit-learn) and palmerpenguins, over
  repeated stratified splits (30% test): ROC-AUC (one-vs-rest, macro), accuracy and fit+predict
  seconds of OrionMSPClassifier (shipped checkpoint), TabFlexClassifier (when installed),
  LogisticRegression, RandomForest, HistGradientBoosting, XGBoost and LightGBM;
* **feature scaling** - the row-interaction path alone (PMA grouping at scales 1/4/16, CLS +
  GLOBAL tokens, the sparse encoders, CLS fusion) of the ``small`` config on 4 rows of
  ``m = 100, 500, 2000, 8000`` features, with the block-sparse mask computed by the ``banded``
  kernel and by the dense-mask path (``sdpa`` with the materialised mask), both forced through
  :func:`tabzoo.kernels.use`: best-of-3 time, peak live tensor bytes (every storage created during
  the call), ratios and fitted log-log slopes over ``m``; the same for the attention op alone at
  scale 1; and the analytic FLOPs of the row path with their slope;
* **machine** - fp32 / bf16 matmul GFLOP/s measured in the same run, and the banded row path's
  achieved fraction of the fp32 peak.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _machine import best_time, machine_info, matmul_gflops  # noqa: E402

FEATURES = (100, 500, 2000, 8000)


def fitted_slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = np.log(np.asarray(xs, dtype=float)), np.log(np.maximum(np.asarray(ys, dtype=float), 1e-12))
    return float(np.polyfit(lx, ly, 1)[0])


# ---------------------------------------------------------------------------------- accuracy
def datasets() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine

    out = {n: f(return_X_y=True) for n, f in
           [("breast_cancer", load_breast_cancer), ("wine", load_wine), ("iris", load_iris), ("digits", load_digits)]}
    try:
        from palmerpenguins import load_penguins
    except ImportError:  # pragma: no cover - bench group not installed
        return out
    df = load_penguins().dropna(subset=["species"])
    X = df.drop(columns=["species", "year"])
    X = X.assign(island=X["island"].astype("category").cat.codes.replace(-1, np.nan),
                 sex=X["sex"].astype("category").cat.codes.replace(-1, np.nan)).to_numpy(dtype=float)
    out["palmerpenguins"] = (X, df["species"].astype("category").cat.codes.to_numpy())
    return out


def models(seed: int, n_estimators: int) -> dict[str, Any]:
    from sklearn.ensemble import HistGradientBoostingClassifier, RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from tabzoo_orion_msp import OrionMSPClassifier

    out: dict[str, Any] = {
        "orion-msp": lambda: OrionMSPClassifier(device="cpu", n_estimators=n_estimators, random_state=seed)}
    try:
        from tabzoo_tabflex import TabFlexClassifier

        out["tabflex"] = lambda: TabFlexClassifier(device="cpu", random_state=seed)
    except ImportError:  # pragma: no cover
        pass
    out["LogisticRegression"] = lambda: make_pipeline(SimpleImputer(), StandardScaler(), LogisticRegression(max_iter=2000))
    out["RandomForest"] = lambda: RandomForestClassifier(n_estimators=300, random_state=seed, n_jobs=1)
    out["HistGradientBoosting"] = lambda: HistGradientBoostingClassifier(random_state=seed)
    try:
        from xgboost import XGBClassifier

        out["XGBoost"] = lambda: XGBClassifier(n_estimators=300, max_depth=6, learning_rate=0.1, n_jobs=1,
                                               random_state=seed, verbosity=0)
    except ImportError:  # pragma: no cover
        pass
    try:
        from lightgbm import LGBMClassifier

        out["LightGBM"] = lambda: LGBMClassifier(n_estimators=300, learning_rate=0.05, n_jobs=1, random_state=seed,
                                                 verbose=-1)
    except ImportError:  # pragma: no cover
        pass
    return out


def accuracy(repeats: int, n_estimators: int, seed: int = 0) -> dict[str, Any]:
    from sklearn.metrics import accuracy_score, roc_auc_score
    from sklearn.model_selection import StratifiedShuffleSplit

    results: dict[str, Any] = {}
    for name, (X, y) in datasets().items():
        split = StratifiedShuffleSplit(n_splits=repeats, test_size=0.3, random_state=seed)
        per: dict[str, dict[str, list[float]]] = {}
        for tr, te in split.split(X, y):
            for mname, make in models(seed, n_estimators).items():
                t = time.perf_counter()
                proba = make().fit(X[tr], y[tr]).predict_proba(X[te])
                dt = time.perf_counter() - t
                auc = roc_auc_score(y[te], proba[:, 1]) if proba.shape[1] == 2 else \
                    roc_auc_score(y[te], proba, multi_class="ovr", average="macro")
                d = per.setdefault(mname, {"auc": [], "acc": [], "seconds": []})
                d["auc"].append(float(auc))
                d["acc"].append(float(accuracy_score(y[te], np.argmax(proba, axis=1))))
                d["seconds"].append(dt)
            print(f"# {name}: " + ", ".join(f"{m} {np.mean(d['auc']):.4f}" for m, d in per.items()), file=sys.stderr)
        results[name] = {"n_rows": int(X.shape[0]), "n_features": int(X.shape[1]), "n_classes": int(np.unique(y).size),
                         "models": {m: {k: round(float(np.mean(v)), 4) for k, v in d.items()} |
                                    {"auc_std": round(float(np.std(d["auc"])), 4)} for m, d in per.items()}}
    names = list(next(iter(results.values()))["models"])
    sets = [k for k in results if k != "mean"]
    mean = {m: {"auc": round(float(np.mean([results[s]["models"][m]["auc"] for s in sets])), 4),
                "acc": round(float(np.mean([results[s]["models"][m]["acc"] for s in sets])), 4)} for m in names}
    ranks = {m: 0.0 for m in names}
    for s in sets:
        order = sorted(names, key=lambda m: -results[s]["models"][m]["auc"])
        for r, m in enumerate(order, 1):
            ranks[m] += r / len(sets)
    for m in names:
        mean[m]["mean_rank_auc"] = round(ranks[m], 2)
    results["mean"] = mean
    results["targets"] = {
        "orion_auc_ge_logistic_regression": mean["orion-msp"]["auc"] >= mean["LogisticRegression"]["auc"],
        "goal_orion_auc_ge_xgboost": ("XGBoost" in mean and mean["orion-msp"]["auc"] >= mean["XGBoost"]["auc"]),
    }
    return results


# ---------------------------------------------------------------------------------- feature scaling
def _peak_bytes(fn: Any) -> float:
    from tabzoo.testing.checks.scaling import LiveBytes

    tracker = LiveBytes()
    with tracker:
        out = fn()
    del out
    return float(tracker.peak)


def feature_scaling(features: tuple[int, ...], rows: int, gflops: float) -> dict[str, Any]:
    from tabzoo import kernels as K
    from tabzoo_orion_msp.model import OrionMSP
    from tabzoo_orion_msp.rows import row_mask

    torch.manual_seed(0)
    model = OrionMSP("small").eval()
    cfg = model.cfg
    path: dict[str, dict[str, list[float]]] = {k: {"seconds": [], "peak_bytes": []} for k in ("banded", "sdpa")}
    attn: dict[str, dict[str, list[float]]] = {k: {"seconds": [], "peak_bytes": []} for k in ("banded", "sdpa")}
    flops: list[float] = []
    table = []
    mask = row_mask(cfg, 0)
    for m in features:
        e = torch.randn(1, rows, m, cfg.d)
        L = cfg.n_special + m
        q = torch.randn(rows, cfg.row_heads, L, cfg.d // cfg.row_heads)
        entry: dict[str, Any] = {"m": m, "scale1_tokens": L}
        for kernel in ("banded", "sdpa"):
            with torch.no_grad(), K.use(kernel):
                t = best_time(lambda e=e: model.rows(e), repeats=3)
                pk = _peak_bytes(lambda e=e: model.rows(e))
                ta = best_time(lambda q=q: K.masked_attention(q, q, q, mask=mask), repeats=3)
                pa = _peak_bytes(lambda q=q: K.masked_attention(q, q, q, mask=mask))
            path[kernel]["seconds"].append(t)
            path[kernel]["peak_bytes"].append(pk)
            attn[kernel]["seconds"].append(ta)
            attn[kernel]["peak_bytes"].append(pa)
            entry[kernel] = {"row_path_s": round(t, 5), "row_path_peak_mb": round(pk / 2**20, 2),
                             "scale1_attention_s": round(ta, 5), "scale1_attention_peak_mb": round(pa / 2**20, 2)}
        f = model.row_flops(m, n_rows=rows)
        flops.append(f)
        entry["row_path_analytic_gflop"] = round(f / 1e9, 4)
        entry["banded_fraction_of_fp32_peak"] = round(f / path["banded"]["seconds"][-1] / 1e9 / gflops, 3)
        entry["speedup_row_path"] = round(path["sdpa"]["seconds"][-1] / path["banded"]["seconds"][-1], 2)
        entry["memory_ratio_row_path"] = round(path["sdpa"]["peak_bytes"][-1] / path["banded"]["peak_bytes"][-1], 2)
        entry["speedup_scale1_attention"] = round(attn["sdpa"]["seconds"][-1] / attn["banded"]["seconds"][-1], 2)
        table.append(entry)
        print(f"# m={m}: row path banded {entry['banded']['row_path_s']}s, dense {entry['sdpa']['row_path_s']}s "
              f"({entry['speedup_row_path']}x)", file=sys.stderr)
    xs = list(features)
    slopes = {kernel: {"row_path_time": round(fitted_slope(xs, path[kernel]["seconds"]), 3),
                       "row_path_peak_memory": round(fitted_slope(xs, path[kernel]["peak_bytes"]), 3),
                       "scale1_attention_time": round(fitted_slope(xs, attn[kernel]["seconds"]), 3),
                       "scale1_attention_peak_memory": round(fitted_slope(xs, attn[kernel]["peak_bytes"]), 3)}
              for kernel in path}
    slopes["row_path_analytic_flops"] = round(fitted_slope(xs, flops), 3)
    at2000 = next((r for r in table if r["m"] == 2000), None)
    return {
        "rows": rows, "config": "small (d=32, 4 heads, scales 1/4/16, window 8, 4+4 special tokens, 2 random links)",
        "paths": {"banded": "tabzoo.kernels masked_attention/banded (block-sparse, never builds [L, L])",
                  "sdpa": "masked_attention/sdpa with the materialised dense mask"},
        "table": table, "slopes": slopes,
        "targets": {
            "speedup_at_2000_ge_5": None if at2000 is None else at2000["speedup_row_path"] >= 5.0,
            "banded_time_slope_le_1.15": slopes["banded"]["row_path_time"] <= 1.15,
            "banded_memory_slope_le_1.15": slopes["banded"]["row_path_peak_memory"] <= 1.15,
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3, help="stratified splits per dataset")
    p.add_argument("--n-estimators", type=int, default=4, help="ORION-MSP ensemble members")
    p.add_argument("--rows", type=int, default=4, help="rows in the feature-scaling runs")
    p.add_argument("--quick", action="store_true", help="1 split, m up to 2000")
    p.add_argument("--skip-accuracy", action="store_true")
    p.add_argument("--out", default=None, help="also write the JSON here (refuses to overwrite)")
    args = p.parse_args(argv)
    torch.set_num_threads(int(os.environ.get("TABZOO_BENCH_THREADS", "1")))
    if args.out and Path(args.out).exists():
        p.error(f"{args.out} exists; results are never overwritten, pick a new name")
    t0 = time.perf_counter()
    info = machine_info()
    fp32 = matmul_gflops(torch.float32)
    info["fp32_gflops"] = round(fp32, 1)
    # this CPU has no native bf16 matmul (about 1 GFLOP/s): measure it at n=512 so the run stays short
    info["bf16_gflops"] = round(matmul_gflops(torch.bfloat16, n=512, repeats=2), 1)
    info["bf16_matmul_n"] = 512
    result: dict[str, Any] = {"benchmark": "orion_msp", "date": datetime.now(UTC).isoformat(timespec="seconds"),
                              "machine": info}
    feats = FEATURES[:3] if args.quick else FEATURES
    result["feature_scaling"] = feature_scaling(feats, args.rows, fp32)
    if not args.skip_accuracy:
        result["accuracy"] = accuracy(1 if args.quick else args.repeats, args.n_estimators)
        result["accuracy"]["suite"] = "tabflex benchmark datasets (benchmarks/realdata.py has not landed)"
    try:
        from tabzoo_orion_msp.estimators import load_orion

        result["checkpoint"] = {k: v for k, v in _ckpt_meta(load_orion).items()}
    except Exception as exc:  # noqa: BLE001 - report, never fail the benchmark on metadata
        result["checkpoint"] = {"error": repr(exc)}
    result["fp32_gflops_at_end"] = round(matmul_gflops(torch.float32), 1)
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
        _plot(result, Path(args.out).with_suffix(".png"))
    return 0


def _ckpt_meta(load: Any) -> dict[str, Any]:
    from tabzoo_orion_msp.estimators import _CKPT_DIR, DEFAULT_CHECKPOINT

    meta = json.loads((_CKPT_DIR / f"{DEFAULT_CHECKPOINT}.json").read_text())
    extra = meta.get("extra", {})
    return {"name": DEFAULT_CHECKPOINT, "prior": meta.get("prior"), "steps": meta.get("steps"),
            "episodes_seen": extra.get("episodes_seen"), "wall_time_s": extra.get("wall_time_s"),
            "final_loss": extra.get("final_loss")}


def _plot(result: dict[str, Any], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return
    table = result["feature_scaling"]["table"]
    ms = [r["m"] for r in table]
    fig, axes = plt.subplots(1, 3 if "accuracy" in result else 2, figsize=(15, 4.2))
    for kernel, style in (("banded", "o-"), ("sdpa", "s--")):
        axes[0].loglog(ms, [r[kernel]["row_path_s"] for r in table], style, label=f"{kernel}")
        axes[1].loglog(ms, [r[kernel]["row_path_peak_mb"] for r in table], style, label=f"{kernel}")
    axes[0].set(title="row-interaction path: time", xlabel="features m", ylabel="seconds (4 rows)")
    axes[1].set(title="row-interaction path: peak live memory", xlabel="features m", ylabel="MiB")
    for ax in axes[:2]:
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
    if "accuracy" in result:
        mean = result["accuracy"]["mean"]
        names = list(mean)
        axes[2].barh(names, [mean[n]["auc"] for n in names])
        lo = min(mean[n]["auc"] for n in names)
        axes[2].set(title="mean ROC-AUC (tabflex benchmark datasets)", xlim=(max(0.5, lo - 0.02), 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
