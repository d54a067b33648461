"""ONNX export of TabFlex (issue 29 item 4): onnxruntime against PyTorch on CPU, same rows, same thread count.

A TabFlexClassifier fitted on ``--train`` rows x 20 features is exported with :func:`tabzoo.batch.onnx.export_onnx`;
``--rows`` query rows are then scored by ``predict_proba`` (PyTorch, fp32) and by onnxruntime (one intra-op
thread, like torch here), best of ``--repeats``; the largest probability difference is recorded.

    uv run python benchmarks/onnx_export.py --members 1 4 --out benchmarks/results/onnx-tabflex-DATE.json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

FEATURES = 20


def _best(fn, repeats: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def one(members: int, train: int, rows: int, repeats: int, folder: Path) -> dict[str, object]:
    import onnxruntime as ort
    import torch
    from tabzoo.batch.onnx import export_onnx
    from tabzoo_tabflex import TabFlexClassifier

    rng = np.random.default_rng(0)
    x = rng.normal(size=(train + rows, FEATURES)).astype(np.float32)
    y = (x[:, 0] + x[:, 1] * x[:, 2] > 0).astype(int)
    clf = TabFlexClassifier(n_estimators=members, device="cpu", fit_mode="fit_with_cache",
                            inference_precision="fp32").fit(x[:train], y[:train])
    t0 = time.perf_counter()
    report = export_onnx(clf, folder / f"tabflex-{members}.onnx", overwrite=True)
    export_s = time.perf_counter() - t0
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = torch.get_num_threads()
    session = ort.InferenceSession(str(report.path), opts, providers=["CPUExecutionProvider"])
    q = x[train:]
    clf.predict_proba(q[:100])  # warm
    torch_s = _best(lambda: clf.predict_proba(q), repeats)
    ort_s = _best(lambda: session.run(["probabilities"], {"x": q}), repeats)
    diff = float(np.max(np.abs(session.run(["probabilities"], {"x": q})[0] - clf.predict_proba(q))))
    return {"members": members, "train_rows": train, "query_rows": rows, "export_seconds": round(export_s, 2),
            "onnx_bytes": report.bytes, "probe_max_abs_diff": report.max_abs_diff, "max_abs_diff": diff,
            "torch_rows_per_s": round(rows / torch_s), "onnxruntime_rows_per_s": round(rows / ort_s),
            "onnxruntime_speedup": round(torch_s / ort_s, 2), "threads": torch.get_num_threads()}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--members", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--train", type=int, default=1000)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).parent))
    import torch
    from _machine import machine_info

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        results = []
        for m in args.members:
            results.append(one(m, args.train, args.rows, args.repeats, Path(tmp)))
            print(json.dumps(results[-1]), flush=True)
    doc = {"benchmark": "onnx_export", "model": "tabflex", "features": FEATURES, "machine": machine_info(),
           "results": results}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
