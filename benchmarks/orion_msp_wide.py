"""ORION-MSP's fast path through the estimator (issue 28 item 4). Prints JSON.

    uv run --group bench python benchmarks/orion_msp_wide.py [--features 500,2000] [--rounds 3] \
        [--out benchmarks/results/orion-msp-wide-DATE.json]

``OrionMSPClassifier(wide_features=m, n_estimators=1)`` is fitted on a synthetic table of ``m``
features (``--train`` rows) and ``predict_proba`` on ``--test`` rows is timed two ways in
interleaved rounds (both see the same load of the shared machine): automatic kernel dispatch (the
row attention of scale 1 runs on the block-sparse ``banded`` kernel above 320 tokens) and every
attention forced to dense SDPA (``tabzoo.kernels.use("sdpa")``, the row mask materialised). Per
``m``: process CPU seconds of each path per round, the speed-up of every round (dense / fast) with
its median, the largest probability difference and whether the predicted classes agree. The fp32
matmul peak of the machine is measured in the same run (before and after), and the JSON is written
again after every table width, so a cut run keeps what it measured.
For reference the same is run with the default estimator (``wide_features=None``: members read
subsets of 100 features, padded to 100, dense SDPA in both paths).
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

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_info, matmul_gflops  # noqa: E402


def _table(n: int, m: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, m))
    y = (X[:, : min(m, 20)].sum(1) + 0.5 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def _cpu(fn: Any) -> tuple[float, Any]:
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def measure(m: int, wide: bool, n_train: int, n_test: int, rounds: int) -> dict[str, Any]:
    from tabzoo import kernels
    from tabzoo_orion_msp import OrionMSPClassifier

    X, y = _table(n_train + n_test, m)
    est = OrionMSPClassifier(device="cpu", n_estimators=1, random_state=0,
                             wide_features=m if wide else None).fit(X[:n_train], y[:n_train])
    query = X[n_train:]
    fast_s, dense_s, ratios = [], [], []
    fast = dense = None
    for _ in range(rounds):
        tf, fast = _cpu(lambda: est.predict_proba(query))
        with kernels.use("sdpa"):
            td, dense = _cpu(lambda: est.predict_proba(query))
        fast_s.append(tf)
        dense_s.append(td)
        ratios.append(td / tf)
    assert fast is not None and dense is not None
    return {"features": m, "wide_features": m if wide else None, "train_rows": n_train, "test_rows": n_test,
            "fast_cpu_s": [round(t, 3) for t in fast_s], "dense_cpu_s": [round(t, 3) for t in dense_s],
            "speedup_per_round": [round(r, 3) for r in ratios], "speedup_median": round(float(np.median(ratios)), 3),
            "max_abs_proba_diff": float(np.abs(fast - dense).max()),
            "same_predicted_classes": bool((fast.argmax(1) == dense.argmax(1)).all())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--features", default="500,2000")
    p.add_argument("--train", type=int, default=128)
    p.add_argument("--test", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    if a.out and Path(a.out).exists():
        p.error(f"{a.out} exists; results are never overwritten, pick a new name")
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    out = {"benchmark": "orion-msp fast path through predict_proba (issue 28 item 4)",
           "date_utc": datetime.now(UTC).isoformat(timespec="seconds"), "machine": machine_info(),
           "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
           "matmul_gflops_start": {"fp32": round(matmul_gflops(torch.float32), 1)},
           "protocol": {"estimator": "OrionMSPClassifier(orion-msp-small, n_estimators=1)",
                        "timing": "process CPU seconds of predict_proba, fast (automatic dispatch) and dense "
                                  "(tabzoo.kernels.use('sdpa')) interleaved per round",
                        "rounds": a.rounds},
           "results": rows}

    def save() -> None:
        out["wall_s"] = round(time.perf_counter() - t0, 1)
        if a.out:
            Path(a.out).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")

    save()
    rows.append(measure(100, False, a.train, a.test, a.rounds))
    save()
    for m in (int(v) for v in a.features.split(",")):
        rows.append(measure(m, False, a.train, a.test, a.rounds))
        rows.append(measure(m, True, a.train, a.test, a.rounds))
        save()
    out["matmul_gflops_end"] = {"fp32": round(matmul_gflops(torch.float32), 1)}
    out["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    save()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
