"""The memory checks' estimates against measured peaks (issue 24 item 7).

Every estimator calls :func:`tabzoo.kernels.memory.check_memory` with its estimated peak before it
allocates. For NPT, MultiTab, the in-context path (TabFlex) and Ramba, at three sizes each, this
captures that estimate and measures the peak RSS of the same ``fit`` + ``predict`` above the RSS
just before it (``/proc/self/clear_refs`` resets the peak), each size in a fresh process. The
estimates are meant as upper bounds that are not far above: the JSON gives estimate / measured.

    uv run python benchmarks/memory_limits.py [--out benchmarks/results/memory-limits-DATE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from estimate_memory import _reset_peak, _status

SIZES: dict[str, list[dict[str, int]]] = {
    "npt": [{"rows": 200, "features": 8}, {"rows": 600, "features": 32}, {"rows": 1500, "features": 100}],
    "multitab": [{"rows": 300, "features": 8}, {"rows": 1000, "features": 32}, {"rows": 2000, "features": 100}],
    "in-context": [{"rows": 500, "features": 10}, {"rows": 3000, "features": 30}, {"rows": 8000, "features": 100}],
    "ramba": [{"rows": 30, "batch": 8}, {"rows": 100, "batch": 16}, {"rows": 300, "batch": 32}],
}


def _capture() -> list[tuple[str, float]]:
    """Record every ``check_memory(owner, estimate, ...)`` call (the check itself still runs)."""
    import tabzoo.kernels.memory as memory

    seen: list[tuple[str, float]] = []
    inner = memory.check_memory

    def spy(owner: str, estimate: float, *args: Any, **kwargs: Any) -> None:
        seen.append((owner, float(estimate)))
        inner(owner, estimate, *args, **kwargs)

    memory.check_memory = spy
    for name in ("tabzoo_npt.estimators", "tabzoo_multitab.estimator", "tabzoo.estimators.ensemble"):
        module = sys.modules.get(name)
        if module is not None:
            module.check_memory = spy  # type: ignore[attr-defined]
    return seen


def _table(rows: int, features: int) -> tuple[Any, Any, Any]:
    import pandas as pd

    rng = np.random.default_rng(0)
    x = pd.DataFrame(rng.normal(size=(rows, features)), columns=[f"f{j}" for j in range(features)])
    y = (x.iloc[:, 0] + x.iloc[:, 1] > 0).astype(int).to_numpy()
    return x, y, x.iloc[: min(rows, 256)]


def _step(model: str, size: dict[str, int]) -> Any:
    """Import everything, build the data, and return the measured step (a callable)."""
    if model == "npt":
        from tabzoo_npt import NPTClassifier

        x, y, q = _table(size["rows"], size["features"])
        est = NPTClassifier(preset="tiny", steps=3, eval_every=3, batch_size=512, context_size=512)
        return lambda: est.fit(x, y).predict_proba(q)
    if model == "multitab":
        import pandas as pd
        from tabzoo_multitab import MultiTabEstimator

        x, y, q = _table(size["rows"], size["features"])
        ys = pd.DataFrame({"a": y, "b": (x.iloc[:, 2] > 0).astype(int)})
        est = MultiTabEstimator(max_epochs=1, calibration=None, batch_size=256)
        return lambda: est.fit(x, ys).predict_proba(q)
    if model == "in-context":
        from tabzoo_tabflex import TabFlexClassifier

        x, y, q = _table(size["rows"], size["features"])
        est = TabFlexClassifier(n_estimators=2, device="cpu")
        return lambda: est.fit(x, y).predict_proba(q)
    from tabzoo_ramba import Ramba, RelationalTask, SamplerConfig, temporal_split
    from tabzoo_ramba.conformance import shop_database
    from tabzoo_ramba.data import to_seconds

    db, _ = shop_database(0, n_orders=120)
    task = RelationalTask("orders", "label", "regression", horizon_s=86400.0, lookback_s=60 * 86400.0)
    times = to_seconds(db.table("orders").column("time"))
    cut = [np.datetime64(int(np.quantile(times, p)), "s") for p in (0.6, 0.8)]
    split = temporal_split(db, task, cut[0], cut[1])
    ramba = Ramba(config={"preset": "tiny" if size["rows"] < 20 else "small", "text_encoder": "hashing"},
                  sampler=SamplerConfig(n_child=8, max_rows=size["rows"]), progress=False)
    return lambda: ramba.fit(db, task, split, steps=2, batch_size=size["batch"])


def _trim() -> None:
    """Hand freed memory back to the OS, so the next step's RSS starts from what is live."""
    import ctypes
    import gc

    gc.collect()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except OSError:
        pass


WARMUP = {"npt": {"rows": 40, "features": 3}, "multitab": {"rows": 60, "features": 3},
          "in-context": {"rows": 60, "features": 3}, "ramba": {"rows": 10, "batch": 2}}


def run_model(model: str, sizes: list[dict[str, int]]) -> list[dict[str, Any]]:
    """Warm up on a tiny size (imports, first-call caches), then measure each size in turn."""
    import torch

    torch.set_num_threads(1)
    seen = _capture()
    _step(model, WARMUP[model])()
    out = []
    for size in sizes:
        step = _step(model, size)
        seen.clear()
        _trim()
        base = _status("VmRSS")
        _reset_peak()
        start = time.process_time()
        step()
        peak = _status("VmHWM") - base
        estimate = max((e for _, e in seen), default=float("nan"))
        out.append({"model": model, **size, "estimate_bytes": estimate, "measured_bytes": peak,
                    "ratio": round(estimate / peak, 3) if peak > 0 else None, "checks": sorted({o for o, _ in seen}),
                    "cpu_s": round(time.process_time() - start, 2)})
        print(json.dumps(out[-1]), flush=True)
        del step
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--one", metavar="MODEL", help="run one model's sizes in this process")
    parser.add_argument("--models", default=",".join(SIZES))
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.one:
        run_model(args.one, SIZES[args.one])
        return
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    rows = []
    for model in args.models.split(","):
        out = subprocess.run([sys.executable, __file__, "--one", model], capture_output=True, text=True, env=env,
                             timeout=900)
        got = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        rows += got or [{"model": model, "error": out.stderr.strip().splitlines()[-1:]}]
        print("\n".join(map(json.dumps, rows[-len(got or [0]):])), flush=True)
    if args.out:
        load = os.getloadavg()[0]
        args.out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M"), "load": load, "rows": rows},
                                       indent=2) + "\n")


if __name__ == "__main__":
    main()
