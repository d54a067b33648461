"""TabFlex benchmark: accuracy, speed against the dense softmax model, and scaling in rows. Prints JSON.

    uv run --group bench python benchmarks/tabflex.py [--quick] [--out benchmarks/results/tabflex-DATE.json]

Everything is measured side by side in one run on this machine:

* **accuracy** - mean ROC-AUC (one-vs-rest, macro) and accuracy over repeated stratified
  splits of breast_cancer, wine, iris, digits (scikit-learn) and palmerpenguins, for
  TabFlexClassifier (shipped checkpoint), LogisticRegression, RandomForest, XGBoost, LightGBM;
* **speed** - one in-context pass (context n rows + 1,000 query rows, 10 features) of TabFlex
  (streamed linear attention) against the same weights with dense softmax attention, n = 1k,
  10k, 100k; a dense run past ``--dense-limit`` seconds is stopped and reported as a lower bound;
* **scale** - TabFlexClassifier fit + predict_proba for 10k, 100k and 1M rows x 10 features,
  10 classes (poker-hand shape; half context, half query), each in a fresh process: wall time,
  peak RSS and the fitted log-log slopes;
* **machine** - fp32 / bf16 matmul GFLOP/s measured in the same run, and each pass's
  achieved fraction of the fp32 peak.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import socket
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _datasets import small_classification as datasets  # noqa: E402


def _threads() -> int:
    return int(os.environ.get("TABZOO_BENCH_THREADS", "1"))


def matmul_gflops(dtype: torch.dtype, n: int = 1024, reps: int = 10) -> float:
    """Best-of-``reps`` GFLOP/s of an ``n x n`` matmul."""
    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    torch.matmul(a, b)
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        torch.matmul(a, b)
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def machine() -> dict[str, Any]:
    return {
        "hostname": socket.gethostname(), "platform": platform.platform(), "cpu_count": os.cpu_count(),
        "python": platform.python_version(), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
        "load_avg": os.getloadavg(), "fp32_gflops": round(matmul_gflops(torch.float32), 1),
        "bf16_gflops": round(matmul_gflops(torch.bfloat16), 1),
    }


# ---------------------------------------------------------------------------------- accuracy
def baselines(seed: int) -> dict[str, Any]:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from tabzoo_tabflex import TabFlexClassifier

    models: dict[str, Any] = {
        "TabFlex": lambda: TabFlexClassifier(device="cpu", random_state=seed),
        "LogisticRegression": lambda: make_pipeline(SimpleImputer(), StandardScaler(), LogisticRegression(max_iter=2000)),
        "RandomForest": lambda: RandomForestClassifier(n_estimators=300, random_state=seed, n_jobs=1),
    }
    try:
        from xgboost import XGBClassifier

        models["XGBoost"] = lambda: XGBClassifier(n_estimators=300, max_depth=6, learning_rate=0.1, n_jobs=1,
                                                  random_state=seed, verbosity=0)
    except ImportError:  # pragma: no cover
        pass
    try:
        from lightgbm import LGBMClassifier

        models["LightGBM"] = lambda: LGBMClassifier(n_estimators=300, learning_rate=0.05, n_jobs=1,
                                                    random_state=seed, verbose=-1)
    except ImportError:  # pragma: no cover
        pass
    return models


def accuracy(repeats: int, seed: int = 0) -> dict[str, Any]:
    from sklearn.metrics import accuracy_score, roc_auc_score
    from sklearn.model_selection import StratifiedShuffleSplit

    results: dict[str, Any] = {}
    for name, (X, y) in datasets().items():
        split = StratifiedShuffleSplit(n_splits=repeats, test_size=0.3, random_state=seed)
        per: dict[str, dict[str, list[float]]] = {}
        for tr, te in split.split(X, y):
            for mname, make in baselines(seed).items():
                t = time.perf_counter()
                model = make().fit(X[tr], y[tr])
                proba = model.predict_proba(X[te])
                dt = time.perf_counter() - t
                auc = roc_auc_score(y[te], proba[:, 1]) if proba.shape[1] == 2 else \
                    roc_auc_score(y[te], proba, multi_class="ovr", average="macro")
                acc = accuracy_score(y[te], np.argmax(proba, axis=1))
                d = per.setdefault(mname, {"auc": [], "acc": [], "seconds": []})
                d["auc"].append(float(auc))
                d["acc"].append(float(acc))
                d["seconds"].append(dt)
        results[name] = {"n_rows": int(X.shape[0]), "n_features": int(X.shape[1]), "n_classes": int(np.unique(y).size),
                         "models": {m: {k: round(float(np.mean(v)), 4) for k, v in d.items()} |
                                    {"auc_std": round(float(np.std(d["auc"])), 4)} for m, d in per.items()}}
    names = list(next(iter(results.values()))["models"])
    results["mean"] = {m: {"auc": round(float(np.mean([r["models"][m]["auc"] for k, r in results.items()
                                                       if k != "mean"])), 4),
                           "acc": round(float(np.mean([r["models"][m]["acc"] for k, r in results.items()
                                                       if k != "mean"])), 4)} for m in names}
    return results


# ---------------------------------------------------------------------------------- speed
def _episode(n_context: int, n_query: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, n_context + n_query, 10, generator=g)
    y = (x[:, :n_context, 0] > 0).float() + (x[:, :n_context, 1] > 0).float()
    return x, y


def _dense_worker(n_context: int, n_query: int, q: Any) -> None:
    torch.set_num_threads(_threads())
    from tabzoo_tabflex.config import get_config
    from tabzoo_tabflex.estimators import load_tabflex
    from tabzoo_tabflex.model import TabFlex

    lin = load_tabflex()
    dense = TabFlex(get_config(lin.cfg, attention="softmax")).eval()
    dense.load_state_dict(lin.state_dict())
    x, y = _episode(n_context, n_query)
    with torch.inference_mode():
        dense(x[:, :200], y[:, :100])
        t = time.perf_counter()
        dense(x, y)
        q.put(time.perf_counter() - t)


def speed(sizes: list[int], n_query: int, dense_limit: float, gflops: float) -> list[dict[str, Any]]:
    from tabzoo_tabflex.estimators import load_tabflex

    lin = load_tabflex()
    gflops = max(gflops, matmul_gflops(torch.float32))  # the machine is shared: take the best seen
    rows = []
    for n in sizes:
        x, y = _episode(n, n_query)
        with torch.inference_mode():
            lin.predict_streamed(x[:, :100], y[:, :100], x[:, 100:200])
            t_lin = float("inf")
            for _ in range(2):
                t = time.perf_counter()
                lin.predict_streamed(x[:, :n], y, x[:, n:])
                t_lin = min(t_lin, time.perf_counter() - t)
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        p = ctx.Process(target=_dense_worker, args=(n, n_query, q))
        p.start()
        p.join(dense_limit)
        if p.is_alive():
            p.terminate()
            p.join()
            t_dense, bound = dense_limit, "lower_bound"
        else:
            t_dense, bound = q.get(), "measured"
        # every context row goes once through every layer (K/V into the state, then Q/out/FFN), and
        # every query row once (Q/out/FFN): about flops_per_row per row
        flops = lin.flops_per_row() * (n + n_query)
        row = {"n_context": n, "n_query": n_query, "linear_s": round(t_lin, 4), "dense_s": round(t_dense, 3),
               "dense_status": bound, "speedup": round(t_dense / t_lin, 1),
               "linear_gflops": round(flops / t_lin / 1e9, 1), "fp32_peak_gflops": round(gflops, 1),
               "linear_fraction_of_fp32_peak": round(flops / t_lin / 1e9 / gflops, 3)}
        measured = [(r["n_context"], r["dense_s"]) for r in rows if r["dense_status"] == "measured"]
        if bound == "lower_bound" and measured:
            # quadratic extrapolation from the largest measured dense run (context self-attention is O(n^2))
            n0, t0 = measured[-1]
            row["dense_extrapolated_s"] = round(t0 * (n / n0) ** 2, 1)
            row["speedup_extrapolated"] = round(row["dense_extrapolated_s"] / t_lin, 1)
        rows.append(row)
        print(json.dumps({"speed": rows[-1]}), file=sys.stderr, flush=True)
    return rows


# ---------------------------------------------------------------------------------- scale
def _rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class _PeakRSS:
    """Samples the resident set size every 5 ms in a thread; ``peak`` is the largest seen."""

    def __enter__(self) -> _PeakRSS:
        import threading

        self.base = self.peak = _rss_mb()
        self._stop = threading.Event()

        def loop() -> None:
            while not self._stop.wait(0.005):
                self.peak = max(self.peak, _rss_mb())

        self._t = threading.Thread(target=loop, daemon=True)
        self._t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, _rss_mb())


def _scale_worker(n: int, q: Any) -> None:
    torch.set_num_threads(_threads())
    from tabzoo_tabflex import TabFlexClassifier

    rng = np.random.default_rng(0)
    X = rng.integers(1, 14, size=(n, 10)).astype(np.float32)  # poker-hand-like: 10 small-integer features
    y = (X[:, :5].sum(axis=1).astype(int) % 10)
    half = n // 2
    TabFlexClassifier(device="cpu", n_estimators=1).fit(X[:100], y[:100]).predict_proba(X[100:200])  # warm up
    with _PeakRSS() as mem:
        t = time.perf_counter()
        clf = TabFlexClassifier(device="cpu", n_estimators=1, chunk_size=8192).fit(X[:half], y[:half])
        proba = clf.predict_proba(X[half:])
        dt = time.perf_counter() - t
    assert proba.shape == (n - half, clf.n_classes_)
    q.put({"rows": n, "seconds": round(dt, 3), "peak_rss_mb": round(mem.peak, 1),
           "rss_growth_mb": round(mem.peak - mem.base, 1), "input_mb": round(X.nbytes / 2**20, 1)})


def scale(sizes: list[int], limit: float) -> dict[str, Any]:
    rows = []
    for n in sizes:
        ctx = mp.get_context("spawn")
        q = ctx.Queue()
        p = ctx.Process(target=_scale_worker, args=(n, q))
        p.start()
        p.join(limit)
        if p.is_alive():
            p.terminate()
            p.join()
            rows.append({"rows": n, "status": f"stopped after {limit} s"})
            continue
        rows.append(q.get() | {"status": "measured"})
        print(json.dumps({"scale": rows[-1]}), file=sys.stderr, flush=True)
    ok = [r for r in rows if r["status"] == "measured"]
    out: dict[str, Any] = {"runs": rows, "n_estimators": 1, "split": "half context, half query"}
    if len(ok) >= 2:
        ln = np.log([r["rows"] for r in ok])
        out["time_slope"] = round(float(np.polyfit(ln, np.log([r["seconds"] for r in ok]), 1)[0]), 3)
        out["memory_slope"] = round(float(np.polyfit(ln, np.log([max(r["rss_growth_mb"], 1.0) for r in ok]), 1)[0]), 3)
        out["memory_note"] = "rss_growth_mb: peak RSS during fit + predict_proba minus RSS before (sampled every 5 ms)"
    return out


def learning_curve(run_dir: str, png: str) -> dict[str, Any]:
    """Plot loss against episodes of a pretraining run (``tabzoo pretrain --out run_dir``) to ``png``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure
    from tabzoo.train import load_history

    meta = json.loads((Path(run_dir) / "model.json").read_text())
    losses = np.asarray(load_history(run_dir))
    batch = int(meta["extra"]["train_config"]["batch_size"])
    episodes = np.arange(1, losses.size + 1) * batch
    w = max(2, losses.size // 50)
    smooth = np.convolve(losses, np.ones(w) / w, mode="valid")
    fig = Figure(figsize=(7, 4), dpi=110)
    ax = fig.add_subplot()
    ax.plot(episodes, losses, lw=0.5, alpha=0.35, label="loss per step")
    ax.plot(episodes[w - 1:], smooth, lw=1.8, label=f"mean of {w} steps")
    ax.set_xlabel("episodes seen")
    ax.set_ylabel("query cross-entropy")
    wall = meta["extra"].get("wall_time_s", 0.0)
    ax.set_title(f"TabFlex-small on prior '{meta.get('prior')}': {meta.get('steps')} steps, "
                 f"{episodes[-1]:,} episodes, {wall / 60:.0f} min, "
                 f"{meta['extra']['machine'].get('cpu_count')}-core CPU", fontsize=9)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png)
    return {"png": png, "steps": int(losses.size), "episodes": int(episodes[-1]),
            "first_loss_mean": round(float(losses[: 2 * w].mean()), 4),
            "last_loss_mean": round(float(losses[-2 * w:].mean()), 4)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dense-limit", type=float, default=300.0)
    ap.add_argument("--skip", nargs="*", default=[], choices=["accuracy", "speed", "scale"])
    ap.add_argument("--out", default=None)
    ap.add_argument("--learning-curve", nargs=2, metavar=("RUN_DIR", "PNG"), default=None,
                    help="also plot the learning curve of a pretraining run")
    a = ap.parse_args(argv)
    torch.set_num_threads(_threads())
    ckpt = json.loads((Path(__import__("tabzoo_tabflex").__file__).parent / "checkpoints" / "tabflex-small.json").read_text())
    report: dict[str, Any] = {
        "benchmark": "tabflex", "date": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine(),
        "checkpoint": {"name": "tabflex-small", "steps": ckpt.get("steps"), "prior": ckpt.get("prior"),
                       "episodes_seen": ckpt.get("extra", {}).get("episodes_seen")},
    }
    if "accuracy" not in a.skip:
        report["accuracy"] = accuracy(2 if a.quick else a.repeats)
    if "speed" not in a.skip:
        sizes = [1000, 4000] if a.quick else [1000, 10_000, 100_000]
        report["speed"] = speed(sizes, 1000, a.dense_limit, report["machine"]["fp32_gflops"])
    if "scale" not in a.skip:
        report["scale"] = scale([2000, 8000] if a.quick else [10_000, 100_000, 1_000_000], 1200.0)
    if a.learning_curve:
        report["learning_curve"] = learning_curve(*a.learning_curve)
    text = json.dumps(report, indent=2)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
