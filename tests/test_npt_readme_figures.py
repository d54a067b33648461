"""Issue 25 item 7: the real-data suite figures of ``packages/npt/README.md`` are generated from the
committed suite JSON (``benchmarks/npt_readme.py``); this fails when a README block and its JSON disagree."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("npt_readme", ROOT / "benchmarks" / "npt_readme.py")
assert _spec is not None and _spec.loader is not None
npt_readme = importlib.util.module_from_spec(_spec)
sys.modules["npt_readme"] = npt_readme
_spec.loader.exec_module(npt_readme)


def test_every_npt_readme_block_matches_its_result_file() -> None:
    text = npt_readme.README.read_text(encoding="utf-8")
    assert set(npt_readme.blocks_in(text)) >= set(npt_readme.BLOCKS)
    assert npt_readme.stale(text) == [], "run `uv run python benchmarks/npt_readme.py --write`"


def test_a_changed_npt_figure_is_caught_and_restored() -> None:
    text = npt_readme.README.read_text(encoding="utf-8")
    name = sorted(npt_readme.BLOCKS)[0]
    npt_row = next(line for line in npt_readme.blocks_in(text)[name].splitlines() if line.startswith("| **NPT**"))
    value = npt_row.split(" | ")[1]
    tampered = text.replace(npt_row, npt_row.replace(value, f"{float(value) + 0.01:.4f}", 1))
    assert npt_readme.stale(tampered) == [name]
    assert npt_readme.write(tampered) == text
