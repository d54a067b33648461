"""ORION-MSP benchmark: accuracy next to tabflex and GBDTs, and feature scaling of the row path. Prints JSON.

    uv run --group bench python benchmarks/orion_msp.py [--repeats 1] [--n-estimators 4] [--quick] \
        [--out benchmarks/results/orion-msp-DATE.json]

Everything is measured side by side in one run on this machine (1 torch thread by default):

* **accuracy** (default ``--suite realdata``) - the classification tables of the real-data suite
  (``benchmarks/realdata.py``, its own splits, caps, time limits and metrics; split 0 by default):
  ORION-MSP (shipped checkpoint, ``--n-estimators`` members) next to tabflex, LogisticRegression
  (``linear``), HistGradientBoosting, XGBoost and LightGBM: mean ROC-AUC, accuracy, log-loss, mean
  rank, ORION's wins and losses per peer, and every table's metrics. ``--suite small`` keeps the
  first sessions' five small tables (breast_cancer, wine, iris, digits, palmerpenguins);
* **feature scaling** - the row-interaction path alone (PMA grouping at scales 1/4/16, CLS +
  GLOBAL tokens, the sparse encoders, CLS fusion) of the ``small`` config on 4 rows of
  ``m = 100, 500, 2000, 8000`` features, with the block-sparse mask computed by the ``banded``
  kernel and by the dense-mask path (``sdpa`` with the materialised mask), both forced through
  :func:`tabzoo.kernels.use`, timed in interleaved rounds: the speed-up of every round (dense /
  block-sparse of the same round, so both saw the same load of the shared machine) with median,
  min, max and IQR; per-path median times, peak live tensor bytes (every storage created during the
  call) and fitted log-log slopes over ``m``; the same for the attention op alone at scale 1; and
  the analytic FLOPs of the row path with their slope;
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
from _datasets import small_classification as datasets  # noqa: E402
from _machine import best_time, machine_info, matmul_gflops  # noqa: E402

FEATURES = (100, 500, 2000, 8000)


def fitted_slope(xs: list[float], ys: list[float]) -> float:
    lx, ly = np.log(np.asarray(xs, dtype=float)), np.log(np.maximum(np.asarray(ys, dtype=float), 1e-12))
    return float(np.polyfit(lx, ly, 1)[0])


# ---------------------------------------------------------------------------------- accuracy
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


REALDATA_PEERS = ("tabflex", "linear", "hist_gbdt", "xgboost", "lightgbm")


def realdata_accuracy(splits: int, n_estimators: int, peers: tuple[str, ...] = REALDATA_PEERS,
                      budget_s: float = 3600.0) -> dict[str, Any]:
    """ORION-MSP on the classification tables of the real-data suite (``benchmarks/realdata.py``),
    next to tabflex and the GBDTs, through the suite's own protocol (splits, caps, timeouts, metrics),
    with ``n_estimators`` ORION members (the suite's own default is 1)."""
    import contextlib
    import io

    import realdata

    realdata.TABZOO_SETTINGS["orion-msp"] = {"n_estimators": n_estimators, "chunk_size": 2048}
    realdata.FIT_TIMEOUT_S["orion-msp"] = 300.0
    tables = [t.name for t in realdata.TABLES if t.task == "classification"]
    argv = ["--models", ",".join(("orion-msp", *peers)), "--tables", ",".join(tables), "--splits", str(splits),
            "--no-curves", "--no-plots", "--budget", f"orion-msp={budget_s}"]
    with contextlib.redirect_stdout(io.StringIO()):
        res = realdata.main(argv)
    cls = res["summary"]["classification"]
    per_table: dict[str, dict[str, Any]] = {}
    for r in res["records"]:
        if r["task"] == "classification" and r["status"] == "ok":
            per_table.setdefault(r["table"], {})[r["model"]] = {k: round(float(v), 4) for k, v in r["metrics"].items()}
    mean = {m: {"roc_auc": round(v["mean_roc_auc"], 4), "accuracy": round(v["mean_accuracy"], 4),
                "log_loss": round(v["mean_log_loss"], 4), "mean_rank": round(v["mean_rank"], 2),
                "tables": v["tables"], "mean_fit_predict_s": round(v["mean_fit_predict_s"], 3)}
            for m, v in cls["per_model"].items()}
    orion = mean.get("orion-msp", {}).get("roc_auc", float("nan"))
    return {
        "suite": "benchmarks/realdata.py, classification tables", "argv": argv,
        "orion_settings": realdata.TABZOO_SETTINGS["orion-msp"], "protocol": res["protocol"],
        "mean": mean, "wins_losses": cls.get("wins_losses", {}).get("orion-msp"), "per_table": per_table,
        "skips": res["skips"], "errors": res["errors"], "wall_s": res["wall_s"],
        "targets": {
            "orion_auc_ge_logistic_regression": orion >= mean.get("linear", {}).get("roc_auc", float("inf")),
            "goal_orion_auc_ge_xgboost": orion >= mean.get("xgboost", {}).get("roc_auc", float("inf")),
        },
    }


# ---------------------------------------------------------------------------------- feature scaling
def _peak_bytes(fn: Any) -> float:
    from tabzoo.testing.checks.scaling import LiveBytes

    tracker = LiveBytes()
    with tracker:
        out = fn()
    del out
    return float(tracker.peak)


def _spread(values: list[float]) -> dict[str, float]:
    v = np.asarray(values, dtype=float)
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    return {"median": round(float(med), 3), "min": round(float(v.min()), 3), "max": round(float(v.max()), 3),
            "iqr": round(float(q3 - q1), 3)}


def feature_scaling(features: tuple[int, ...], rows: int, gflops: float, repeats: int = 7) -> dict[str, Any]:
    """Row-interaction path (and the scale-1 attention alone), block-sparse vs dense mask, interleaved.

    For each ``m`` the two paths are timed in ``repeats`` interleaved rounds (the order alternates
    between rounds); within a round each path is the best of ``inner`` calls (3, or 1 where one dense
    call takes seconds). The speed-up of a round is dense / block-sparse of THAT round, so both
    numbers of a ratio saw the same load of this shared machine; the JSON keeps every round's ratio
    with their median, min, max and IQR. Times, memory and slopes use the per-path medians.
    """
    from tabzoo import kernels as K
    from tabzoo_orion_msp.model import OrionMSP
    from tabzoo_orion_msp.rows import row_mask

    torch.manual_seed(0)
    model = OrionMSP("small").eval()
    cfg = model.cfg
    kernels = ("banded", "sdpa")
    med: dict[str, dict[str, list[float]]] = {k: {"path": [], "attn": [], "path_peak": [], "attn_peak": []}
                                              for k in kernels}
    flops: list[float] = []
    table = []
    mask = row_mask(cfg, 0)
    for m in features:
        e = torch.randn(1, rows, m, cfg.d)
        L = cfg.n_special + m
        q = torch.randn(rows, L, cfg.row_heads, cfg.d // cfg.row_heads).transpose(1, 2)  # per-head views
        path_fn = lambda e=e: model.rows(e)  # noqa: E731
        attn_fn = lambda q=q: K.masked_attention(q, q, q, mask=mask)  # noqa: E731
        inner = 1 if m >= 8000 else 3
        rounds = max(3, repeats // 2) if m >= 8000 else repeats
        times: dict[str, dict[str, list[float]]] = {k: {"path": [], "attn": []} for k in kernels}
        with torch.no_grad():
            for r in range(rounds):
                for kernel in (kernels if r % 2 == 0 else kernels[::-1]):
                    with K.use(kernel):
                        times[kernel]["path"].append(best_time(path_fn, repeats=inner))
                        times[kernel]["attn"].append(best_time(attn_fn, repeats=inner))
            entry: dict[str, Any] = {"m": m, "scale1_tokens": L, "rounds": rounds, "best_of_per_round": inner}
            for kernel in kernels:
                with K.use(kernel):
                    pk, pa = _peak_bytes(path_fn), _peak_bytes(attn_fn)
                tp, ta = float(np.median(times[kernel]["path"])), float(np.median(times[kernel]["attn"]))
                for key, val in (("path", tp), ("attn", ta), ("path_peak", pk), ("attn_peak", pa)):
                    med[kernel][key].append(val)
                entry[kernel] = {"row_path_s": round(tp, 5), "row_path_peak_mb": round(pk / 2**20, 2),
                                 "scale1_attention_s": round(ta, 5), "scale1_attention_peak_mb": round(pa / 2**20, 2),
                                 "row_path_s_per_round": [round(t, 5) for t in times[kernel]["path"]]}
        ratios = [d / b for d, b in zip(times["sdpa"]["path"], times["banded"]["path"], strict=True)]
        attn_ratios = [d / b for d, b in zip(times["sdpa"]["attn"], times["banded"]["attn"], strict=True)]
        f = model.row_flops(m, n_rows=rows)
        flops.append(f)
        entry["row_path_analytic_gflop"] = round(f / 1e9, 4)
        entry["banded_fraction_of_fp32_peak"] = round(f / med["banded"]["path"][-1] / 1e9 / gflops, 3)
        entry["speedup_row_path_per_round"] = [round(x, 2) for x in ratios]
        entry["speedup_row_path"] = _spread(ratios)
        entry["speedup_scale1_attention"] = _spread(attn_ratios)
        entry["memory_ratio_row_path"] = round(med["sdpa"]["path_peak"][-1] / med["banded"]["path_peak"][-1], 2)
        table.append(entry)
        print(f"# m={m}: row path banded {entry['banded']['row_path_s']}s, dense {entry['sdpa']['row_path_s']}s, "
              f"speed-up per round {entry['speedup_row_path_per_round']}", file=sys.stderr)
    xs = list(features)
    slopes: dict[str, Any] = {
        kernel: {"row_path_time": round(fitted_slope(xs, med[kernel]["path"]), 3),
                 "row_path_peak_memory": round(fitted_slope(xs, med[kernel]["path_peak"]), 3),
                 "scale1_attention_time": round(fitted_slope(xs, med[kernel]["attn"]), 3),
                 "scale1_attention_peak_memory": round(fitted_slope(xs, med[kernel]["attn_peak"]), 3)}
        for kernel in kernels}
    slopes["row_path_analytic_flops"] = round(fitted_slope(xs, flops), 3)
    at2000 = next((r for r in table if r["m"] == 2000), None)
    return {
        "rows": rows, "config": "small (d=32, 4 heads, scales 1/4/16, window 8, 4+4 special tokens, 2 random links)",
        "paths": {"banded": "tabzoo.kernels masked_attention/banded (gathered block layout, cached per mask and "
                            "length; never builds [L, L]) at every scale",
                  "sdpa": "masked_attention/sdpa with the materialised dense mask at every scale"},
        "protocol": "interleaved rounds, alternating order; a round's ratio = dense / block-sparse of that round; "
                    "times are per-path medians over rounds",
        "table": table, "slopes": slopes,
        "targets": {
            "speedup_at_2000_ge_5_median": None if at2000 is None else at2000["speedup_row_path"]["median"] >= 5.0,
            "speedup_at_2000_ge_5_every_round": None if at2000 is None else at2000["speedup_row_path"]["min"] >= 5.0,
            "banded_time_slope_le_1.15": slopes["banded"]["row_path_time"] <= 1.15,
            "banded_memory_slope_le_1.15": slopes["banded"]["row_path_peak_memory"] <= 1.15,
        },
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=1, help="splits per table (the real-data suite's split 0, 1, ...)")
    p.add_argument("--n-estimators", type=int, default=4, help="ORION-MSP ensemble members")
    p.add_argument("--rows", type=int, default=4, help="rows in the feature-scaling runs")
    p.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds per feature count")
    p.add_argument("--quick", action="store_true", help="1 split, m up to 2000")
    p.add_argument("--skip-accuracy", action="store_true")
    p.add_argument("--suite", choices=("realdata", "small"), default="realdata",
                   help="accuracy on the real-data suite's classification tables (default) or on the five small "
                        "scikit-learn / penguins tables of the first sessions")
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
    result["feature_scaling"] = feature_scaling(feats, args.rows, fp32, args.rounds)
    if not args.skip_accuracy:
        if args.suite == "realdata":
            result["accuracy"] = realdata_accuracy(1 if args.quick else args.repeats, args.n_estimators)
        else:
            result["accuracy"] = accuracy(1 if args.quick else args.repeats, args.n_estimators)
            result["accuracy"]["suite"] = "breast_cancer, wine, iris, digits, palmerpenguins"
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
    fig, axes = plt.subplots(1, 4 if "accuracy" in result else 3, figsize=(20, 4.2))
    for kernel, style in (("banded", "o-"), ("sdpa", "s--")):
        axes[0].loglog(ms, [r[kernel]["row_path_s"] for r in table], style, label=f"{kernel}")
        axes[1].loglog(ms, [r[kernel]["row_path_peak_mb"] for r in table], style, label=f"{kernel}")
    axes[0].set(title="row-interaction path: median time", xlabel="features m", ylabel="seconds (4 rows)")
    axes[1].set(title="row-interaction path: peak live memory", xlabel="features m", ylabel="MiB")
    for i, r in enumerate(table):
        rounds = r["speedup_row_path_per_round"]
        axes[2].scatter([r["m"]] * len(rounds), rounds, s=14, color="tab:blue", alpha=0.6,
                        label="per round" if i == 0 else None)
    axes[2].plot(ms, [r["speedup_row_path"]["median"] for r in table], "k-", label="median")
    axes[2].axhline(5.0, color="tab:red", ls="--", lw=1, label="target 5x")
    axes[2].set(xscale="log", yscale="log", title="dense / block-sparse, each interleaved round", xlabel="features m")
    for ax in axes[:3]:
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
    if "accuracy" in result:
        mean = result["accuracy"]["mean"]
        names = list(mean)
        vals = [mean[n].get("roc_auc", mean[n].get("auc")) for n in names]
        axes[3].barh(names, vals)
        axes[3].set(title="mean ROC-AUC (" + str(result["accuracy"].get("suite", ""))[:40] + ")",
                    xlim=(max(0.5, min(vals) - 0.02), 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
