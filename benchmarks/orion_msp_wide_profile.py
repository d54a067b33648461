"""Where ORION-MSP's wide fast path spends its time (issue 28 item 4: 2.72x dense at m = 2,000, target 5x). Prints JSON.

    uv run --group bench python benchmarks/orion_msp_wide_profile.py [--features 2000] [--rounds 2] [--out PATH]

``OrionMSPClassifier(wide_features=m, n_estimators=1)`` on the synthetic table of
``benchmarks/orion_msp_wide.py``; ``predict_proba`` is run with automatic kernel dispatch (fast) and with
every attention forced to dense SDPA, interleaved per round. Process CPU seconds are charged to the
model's stages by forward pre/post hooks: the standardisation and glue (the rest), the column embedding
(``columns``), each row scale (``rows.scale<s>``), the memory, the ICL blocks and the decoder. The JSON gives
each stage's median seconds on both paths and the bound Amdahl's law puts on the whole speed-up when only
the stages the fast path changes get faster.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_info  # noqa: E402
from orion_msp_wide import _table  # noqa: E402


def _stages(model: torch.nn.Module) -> dict[str, torch.nn.Module]:
    out: dict[str, torch.nn.Module] = {}  # the column stage is timed through its methods (StageClock)
    for enc in model.rows.scales:
        out[f"rows.scale{enc.scale}"] = enc
    if model.memory is not None:
        out["memory"] = model.memory
    out["icl"] = model.icl
    out["decoder"] = model.decoder
    return out


class StageClock:
    """CPU seconds per stage of one model (hooks; stages are not nested in each other)."""

    def __init__(self, model: torch.nn.Module) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self._start: dict[str, float] = {}
        for name, mod in _stages(model).items():
            mod.register_forward_pre_hook(lambda _m, _a, n=name: self._start.__setitem__(n, time.process_time()))
            mod.register_forward_hook(lambda _m, _a, _o, n=name: self._stop(n))
        # the model runs the column stage through these two methods (fused with the row stage chunk by
        # chunk), not through its forward: time them too
        for meth in ("summarise", "embed"):
            setattr(model.columns, meth, self._timed(getattr(model.columns, meth), "columns"))

    def _timed(self, fn: Any, name: str) -> Any:
        def run(*args: Any, **kw: Any) -> Any:
            t0 = time.process_time()
            try:
                return fn(*args, **kw)
            finally:
                self.spent[name] += time.process_time() - t0
        return run

    def _stop(self, name: str) -> None:
        self.spent[name] += time.process_time() - self._start.pop(name)

    def run(self, fn: Any) -> tuple[dict[str, float], Any]:
        self.spent.clear()
        t0 = time.process_time()
        out = fn()
        total = time.process_time() - t0
        stages = dict(self.spent)
        stages["rest"] = total - sum(stages.values())
        stages["total"] = total
        return stages, out


def profile(m: int, n_train: int, n_test: int, rounds: int) -> dict[str, Any]:
    from tabzoo import kernels
    from tabzoo_orion_msp import OrionMSPClassifier

    X, y = _table(n_train + n_test, m)
    est = OrionMSPClassifier(device="cpu", n_estimators=1, random_state=0, wide_features=m).fit(X[:n_train], y[:n_train])
    clock = StageClock(est.model_)
    query = X[n_train:]
    fast, dense = defaultdict(list), defaultdict(list)
    for _ in range(rounds):
        sf, pf = clock.run(lambda: est.predict_proba(query))
        with kernels.use("sdpa"):
            sd, pd_ = clock.run(lambda: est.predict_proba(query))
        for k, v in sf.items():
            fast[k].append(v)
        for k, v in sd.items():
            dense[k].append(v)
    med_f = {k: round(float(np.median(v)), 4) for k, v in fast.items()}
    med_d = {k: round(float(np.median(v)), 4) for k, v in dense.items()}
    changed = [k for k in med_f if k != "total" and med_d.get(k, 0) > 1.3 * max(med_f[k], 1e-9)]
    same = med_d["total"] - sum(med_d[k] for k in changed)
    return {"features": m, "train_rows": n_train, "test_rows": n_test, "rounds": rounds,
            "fast_cpu_s": med_f, "dense_cpu_s": med_d,
            "share_of_fast_total": {k: round(v / med_f["total"], 3) for k, v in med_f.items() if k != "total"},
            "speedup": round(med_d["total"] / med_f["total"], 3),
            "stages_the_fast_path_speeds_up": changed,
            "amdahl_bound_if_those_were_free": round(med_d["total"] / max(same, 1e-9), 2),
            "max_abs_proba_diff": float(np.abs(pf - pd_).max())}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--features", default="2000")
    p.add_argument("--train", type=int, default=128)
    p.add_argument("--test", type=int, default=64)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--out", default=None, help="also write the JSON here (never overwrites)")
    a = p.parse_args()
    torch.set_num_threads(1)
    res = {"benchmark": "orion-msp wide fast path, CPU seconds per stage (issue 28 item 4)",
           "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
           "machine": machine_info(), "torch_threads": torch.get_num_threads(),
           "results": [profile(int(m), a.train, a.test, a.rounds) for m in a.features.split(",")]}
    res["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    text = json.dumps(res, indent=1)
    print(text)
    if a.out:
        with open(a.out, "x", encoding="utf-8") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
