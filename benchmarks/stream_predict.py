"""Streamed prediction at scale (issue 29 item 6): rows/s and peak RSS of ``tabzoo.batch.predict_dataset``
on generated Parquet (N rows x 20 features) through TabFlex, against the in-memory path (read whole,
``predict_with_proba``, write) and LightGBM's ``predict_proba`` on the same rows; plus Dask on a
two-worker LocalCluster against one process. Each measurement runs in its own process (peak RSS =
that process's VmHWM).

    uv run python benchmarks/stream_predict.py --rows 100000 1000000 [--dask] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

FEATURES = 20
TRAIN = 1000


def _status(key: str = "VmHWM") -> int:
    """``VmHWM`` (peak RSS) or ``VmRSS`` of this process, in bytes."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


class RssSampler:
    """Peak ``RssAnon`` and ``RssFile`` of this process (``/proc/self/status``, sampled every
    ``every`` s in a thread): ``VmHWM`` is the peak of their sum, this says which part grew
    (anonymous = heap, tensors, Arrow buffers; file = mapped libraries and files)."""

    def __init__(self, every: float = 0.02) -> None:
        import threading

        self.peak = {"RssAnon": 0, "RssFile": 0, "VmRSS": 0}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(every,), daemon=True)

    def _run(self, every: float) -> None:
        while not self._stop.is_set():
            for k in self.peak:
                self.peak[k] = max(self.peak[k], _status(k))
            self._stop.wait(every)

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def make_data(folder: Path, rows: int, row_group: int = 65536) -> Path:
    """``rows x 20`` standard-normal features in Parquet (written 1e6 rows at a time, ``row_group`` rows a group)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = folder / (f"rows-{rows}.parquet" if row_group == 65536 else f"rows-{rows}-rg{row_group}.parquet")
    if path.exists():
        return path
    rng = np.random.default_rng(0)
    names = [f"f{j}" for j in range(FEATURES)]
    with pq.ParquetWriter(str(path), pa.schema([(n, pa.float64()) for n in names])) as w:
        for start in range(0, rows, 1_000_000):
            n = min(1_000_000, rows - start)
            x = rng.normal(size=(n, FEATURES))
            w.write_table(pa.table({c: x[:, j] for j, c in enumerate(names)}), row_group_size=row_group)
    return path


def fit_and_save(folder: Path, n_estimators: int) -> Path:
    import pandas as pd
    from tabzoo_tabflex import TabFlexClassifier

    rng = np.random.default_rng(1)
    x = pd.DataFrame(rng.normal(size=(TRAIN, FEATURES)), columns=[f"f{j}" for j in range(FEATURES)])
    y = (x.f0 + x.f1 * x.f2 > 0).astype(int)
    clf = TabFlexClassifier(n_estimators=n_estimators, device="cpu").fit(x, y)
    return clf.save(folder / "tabflex")


def one(mode: str, stem: str, data: str, out: str, batch_rows: int) -> dict[str, object]:
    """One measurement in this process (called by the parent through a subprocess)."""
    import pandas as pd
    from tabzoo.batch import load_estimator, predict_dataset
    from tabzoo.batch.frames import score_frame

    if mode == "lightgbm":
        import lightgbm as lgb
        rng = np.random.default_rng(1)
        x = pd.DataFrame(rng.normal(size=(TRAIN, FEATURES)), columns=[f"f{j}" for j in range(FEATURES)])
        model = lgb.LGBMClassifier(n_estimators=100, verbose=-1, n_jobs=1).fit(x, (x.f0 + x.f1 * x.f2 > 0).astype(int))
        base = _status("VmRSS")
        t0 = time.perf_counter()
        rows = pd.read_parquet(data)
        proba = model.predict_proba(rows)
        pd.DataFrame({"prediction": proba.argmax(1), "proba_0": proba[:, 0], "proba_1": proba[:, 1]}).to_parquet(out)
        n = len(rows)
    else:
        est = load_estimator(stem, device="cpu")
        base = _status("VmRSS")
        before = {k: _status(k) for k in ("RssAnon", "RssFile")}
        t0 = time.perf_counter()
        with RssSampler() as sampled:
            if mode == "stream":
                n = predict_dataset(est, data, out, batch_rows=batch_rows).rows
            else:  # in memory: read whole, one pass, write whole
                rows = pd.read_parquet(data)
                score_frame(est, rows).to_parquet(out)
                n = len(rows)
        seconds = time.perf_counter() - t0
        peak = _status()
        return {"mode": mode, "rows": n, "seconds": round(seconds, 2), "rows_per_s": round(n / seconds),
                "peak_rss_bytes": peak, "rss_before_bytes": base, "input_driven_bytes": peak - base,
                "rss_anon_before_bytes": before["RssAnon"], "rss_file_before_bytes": before["RssFile"],
                "peak_rss_anon_bytes": sampled.peak["RssAnon"], "peak_rss_file_bytes": sampled.peak["RssFile"],
                "torch": __import__("torch").__version__, "batch_rows": batch_rows if mode == "stream" else None}
    seconds = time.perf_counter() - t0
    return {"mode": mode, "rows": n, "seconds": round(seconds, 2), "rows_per_s": round(n / seconds),
            "peak_rss_bytes": _status(), "rss_before_bytes": base, "batch_rows": None}


def dask_run(stem: str, data: str, out: str, workers: int) -> dict[str, object]:
    import dask.dataframe as dd
    from distributed import Client, LocalCluster
    from tabzoo.batch.dask import predict_partitions

    with LocalCluster(n_workers=workers, processes=True, threads_per_worker=1, dashboard_address=None) as c, Client(c) as cl:
        from tabzoo.batch.load import load_estimator

        cl.run(lambda: load_estimator(stem, device="cpu") and None)  # each worker loads (caches) it before timing
        t0 = time.perf_counter()
        ddf = dd.read_parquet(data, split_row_groups=True)
        predict_partitions(stem, ddf).to_parquet(out)
        seconds = time.perf_counter() - t0
    n = int(__import__("pyarrow.parquet").parquet.ParquetFile(data).metadata.num_rows)
    return {"mode": f"dask-{workers}-workers", "rows": n, "seconds": round(seconds, 2), "rows_per_s": round(n / seconds)}


def _one_process(mode: str, stem: Path, data: Path, folder: Path, rows: int, batch_rows: int) -> dict[str, object]:
    """:func:`one` in a fresh process (its own peak RSS); an error is recorded, not raised."""
    cmd = [sys.executable, __file__, "--batch-rows", str(batch_rows), "--one", mode, str(stem), str(data),
           str(folder / f"out-{mode}.parquet")]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    if done.returncode != 0:
        return {"mode": mode, "rows": rows, "error": done.stderr[-500:]}
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=[100_000])
    ap.add_argument("--batch-rows", type=int, default=65536)
    ap.add_argument("--n-estimators", type=int, default=1)
    ap.add_argument("--modes", nargs="*", default=["stream", "memory", "lightgbm"],
                    help="single-process measurements per --rows (none: only --dask)")
    ap.add_argument("--dask", action="store_true",
                    help="also Dask on a LocalCluster of 1 and of 2 worker processes (smallest --rows)")
    ap.add_argument("--partition-rows", type=int, default=8192, help="Parquet row group = Dask partition (--dask)")
    ap.add_argument("--dir", default="/tmp/tabzoo-stream-bench")
    ap.add_argument("--out", default=None)
    ap.add_argument("--one", nargs=4, metavar=("MODE", "STEM", "DATA", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        mode, stem, data, out = args.one
        Path(out).unlink(missing_ok=True)
        print(json.dumps(one(mode, stem, data, out, args.batch_rows)))
        return
    sys.path.insert(0, str(Path(__file__).parent))
    from _machine import machine_info

    folder = Path(args.dir)
    folder.mkdir(parents=True, exist_ok=True)
    stem = fit_and_save(folder, args.n_estimators)
    results = []
    for rows in args.rows:
        data = make_data(folder, rows)
        for mode in args.modes:
            results.append(_one_process(mode, stem, data, folder, rows, args.batch_rows))
            print(json.dumps(results[-1]), flush=True)
    if args.dask:  # one process (streamed, no Dask), then LocalClusters of 1 and 2 worker processes
        data = make_data(folder, min(args.rows), row_group=args.partition_rows)
        results.append(_one_process("stream", stem, data, folder, min(args.rows), args.partition_rows))
        print(json.dumps(results[-1]), flush=True)
        for workers in (1, 2):
            results.append(dask_run(str(stem), str(data), str(folder / f"dask-{workers}"), workers))
            print(json.dumps(results[-1]), flush=True)
    doc = {"benchmark": "stream_predict", "model": "tabflex", "n_estimators": args.n_estimators, "features": FEATURES,
           "train_rows": TRAIN, "machine": machine_info(), "results": results}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
