"""The root tests import the README generators of ``benchmarks/`` (``tabflex_readme``, ``npt_readme``, ...)
as plain modules: their folder goes on ``sys.path`` once, here."""

from __future__ import annotations

import sys
from pathlib import Path

BENCHMARKS = str(Path(__file__).resolve().parents[1] / "benchmarks")
if BENCHMARKS not in sys.path:
    sys.path.append(BENCHMARKS)
