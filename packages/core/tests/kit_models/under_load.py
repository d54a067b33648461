"""Issue 23 item 8: run the kit's scaling checks N times in a row while CPU hogs keep every core
busy; exit 1 on the first flake. Not a pytest test (it takes minutes):

    OMP_NUM_THREADS=1 uv run python packages/core/tests/kit_models/under_load.py --runs 20

Each run checks ``linear_in_rows`` on the correct tiny model (must pass) and on
:class:`kit_models.broken_v2.NumpyPairwise` (must fail: its numpy work is quadratic).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path


def _hog(stop: float) -> None:
    x = 0
    while time.time() < stop:
        x = (x * 1103515245 + 12345) % 2**31


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--hogs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tabzoo.testing import capabilities as cap
    from tabzoo.testing import run_check

    from kit_models import broken_v2 as b2
    from kit_models.broken import icl_case

    hogs = [mp.Process(target=_hog, args=(time.time() + 24 * 3600,), daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    try:
        for i in range(1, args.runs + 1):
            good = run_check(icl_case("good"), cap.LINEAR_IN_ROWS)
            bad = run_check(icl_case("np", b2.NumpyPairwise), cap.LINEAR_IN_ROWS)
            print(f"run {i}: correct {good.status} (time slopes {good.details.get('time_slopes')}), "
                  f"numpy {bad.status} (time slopes {bad.details.get('time_slopes')})", flush=True)
            if good.status != "passed" or bad.status != "failed":
                print(f"FLAKE at run {i}: {good}\n{bad}")
                return 1
    finally:
        for h in hogs:
            h.terminate()
    print(f"{args.runs} runs under {args.hogs} CPU hogs: no flake")
    return 0


if __name__ == "__main__":
    sys.exit(main())
