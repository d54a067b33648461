"""Benchmark tests: not collected by CI (it runs packages/*/tests); run them with
``uv run --group bench pytest benchmarks/tests -q`` (they need the ``bench`` group)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
