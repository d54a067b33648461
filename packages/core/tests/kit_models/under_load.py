"""Issue 23 item 8: run the kit's scaling checks N times in a row while CPU hogs keep every core
busy; exit 1 if any run flakes. Not a pytest test (it takes minutes):

    OMP_NUM_THREADS=1 uv run python packages/core/tests/kit_models/under_load.py --runs 20 \\
        --json benchmarks/results/kit-under-load-<date>.json

Each run checks ``linear_in_rows`` on the correct tiny model and on
:class:`kit_models.broken_v2.NumpyAnchors` (must pass: a failure is a false failure; the tiny
model's largest forward takes ~0.2 s of CPU, under the 0.5 s from which the kit asserts a time
slope, so only NumpyAnchors' linear numpy work, ~1 s at 32k rows, probes the time assertion), and
on :class:`kit_models.broken_v2.NumpyPairwise` (must fail: its numpy work is quadratic, which only
the CPU-time slope sees: a pass is a missed catch). ``--plugin-check
ramba:linear_in_sequence`` adds a shipped plugin's check (must pass) to every run (the check that
flaked once on a busy machine). ``--json`` writes every run's status, CPU-time slopes and their
spread, and the totals.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any


def _hog(stop: float) -> None:
    x = 0
    while time.time() < stop:
        x = (x * 1103515245 + 12345) % 2**31


def _summary(result: Any) -> dict[str, Any]:
    """Status, slopes and timings of one scaling check result (JSON-ready)."""
    d = result.details
    rows = d.get("measurements") or []
    return {"status": result.status, "time_slopes": d.get("time_slopes"),
            "time_slope_spread": d.get("time_slope_spread"),
            "largest_forward_cpu_s": round(rows[-1]["cpu_seconds"], 3) if rows else None,
            "check_wall_s": d.get("seconds"), "check_cpu_s": d.get("cpu_seconds"),
            "counted_slopes": {k: round(v, 3) for k, v in (d.get("slopes") or {}).items()}}


def _plugin_case(spec: str) -> tuple[Any, str]:
    """``"case:check"`` -> the shipped case (through the plugin registry) and the check name."""
    from tabzoo.testing.runner import find_cases

    name, _, check = spec.partition(":")
    return find_cases(name, include_core=False)[0], check


def _totals(runs: list[dict[str, Any]], args: argparse.Namespace, start: float,
            load_start: float) -> dict[str, Any]:
    """False failures (a correct model or shipped check not passing), catches (the numpy-quadratic
    model failing) and timings over ``runs``."""
    false_failures = [r["run"] for r in runs
                      if r["correct"]["status"] != "passed" or r["numpy_linear"]["status"] != "passed"
                      or any(r[spec]["status"] != "passed" for spec in args.plugin_check)]
    missed = [r["run"] for r in runs if r["numpy_quadratic"]["status"] != "failed"]
    return {"runs": len(runs), "planned_runs": args.runs, "hogs": args.hogs, "false_failures": len(false_failures),
            "false_failure_runs": false_failures, "catches": len(runs) - len(missed), "missed_catch_runs": missed,
            "retried_runs": {k: sum(len(r[k]["time_slopes"] or []) > 1 for r in runs)
                             for k in ["correct", "numpy_linear", "numpy_quadratic", *args.plugin_check]},
            "wall_s": round(time.perf_counter() - start, 1),
            "load_average_start_end": [round(load_start, 2), round(os.getloadavg()[0], 2)]}


def _write(args: argparse.Namespace, totals: dict[str, Any], runs: list[dict[str, Any]]) -> None:
    """The JSON document (rewritten after every run, so an interrupted series keeps its runs)."""
    if args.json is None:
        return
    doc = {"benchmark": "kit_scaling_under_cpu_hogs", "issue": 23, "date": time.strftime("%Y-%m-%d"),
           "command": " ".join(sys.argv), "machine": f"{os.cpu_count()} cores, {platform.machine()}",
           "python": platform.python_version(), "totals": totals, "runs": runs}
    args.json.write_text(json.dumps(doc, indent=1) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--plugin-check", action="append", default=[], metavar="CASE:CHECK",
                        help="also run this shipped case's check every run (must pass)")
    parser.add_argument("--json", type=Path, default=None, help="write the runs and totals here")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tabzoo.testing import capabilities as cap
    from tabzoo.testing import run_check

    from kit_models import broken_v2 as b2
    from kit_models.broken import icl_case

    plugin = [(spec, *_plugin_case(spec)) for spec in args.plugin_check]
    load_start = os.getloadavg()
    start = time.perf_counter()
    hogs = [mp.Process(target=_hog, args=(time.time() + 24 * 3600,), daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    runs: list[dict[str, Any]] = []
    try:
        for i in range(1, args.runs + 1):
            good = run_check(icl_case("good"), cap.LINEAR_IN_ROWS)
            linear = run_check(icl_case("np_linear", b2.NumpyAnchors), cap.LINEAR_IN_ROWS)
            bad = run_check(icl_case("np", b2.NumpyPairwise), cap.LINEAR_IN_ROWS)
            run = {"run": i, "load_1min": round(os.getloadavg()[0], 2), "correct": _summary(good),
                   "numpy_linear": _summary(linear), "numpy_quadratic": _summary(bad)}
            for spec, case, check in plugin:
                run[spec] = _summary(run_check(case, check))
            runs.append(run)
            print(json.dumps(run, separators=(",", ":")), flush=True)
            _write(args, _totals(runs, args, start, load_start[0]), runs)
    finally:
        for h in hogs:
            h.terminate()
    totals = _totals(runs, args, start, load_start[0])
    _write(args, totals, runs)
    print(json.dumps(totals))
    return 1 if totals["false_failures"] or totals["missed_catch_runs"] else 0


if __name__ == "__main__":
    sys.exit(main())
