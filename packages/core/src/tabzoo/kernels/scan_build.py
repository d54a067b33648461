"""``python -m tabzoo.kernels.scan_build``: compile the ``cpu_fused`` selective scan ahead of time
(once per torch installation), saying so; see :mod:`tabzoo.kernels.scan_cpu`.

A module of its own so that ``-m`` runs it without the package having imported it first.
"""

from __future__ import annotations

import sys
import time

from tabzoo.kernels.scan_cpu import ENV_VAR, build, build_directory, built

__all__ = ["main"]


def main() -> int:
    """Build the library ahead of time, saying where and how long it took; 0, or 1 when the build fails."""
    if built():
        print(f"cpu_fused scan: already built in {build_directory()}")
        return 0
    print(f"cpu_fused scan: compiling into {build_directory()} (about a minute on an idle machine) ...", flush=True)
    start = time.perf_counter()
    try:
        build(verbose=False)
    except Exception as exc:  # noqa: BLE001 - reported with the fix
        print(f"cpu_fused scan: the build failed ({type(exc).__name__}: {exc}); it needs a C++ compiler and "
              "ninja (pip install ninja); Ramba runs without it on the chunked scan", file=sys.stderr)
        return 1
    print(f"cpu_fused scan: built in {time.perf_counter() - start:.0f} s; used from now on unless {ENV_VAR}=0")
    return 0


if __name__ == "__main__":
    sys.exit(main())
