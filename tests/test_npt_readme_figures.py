"""Issue 25 item 7: the real-data suite figures of ``packages/npt/README.md`` are generated from the
committed suite JSON (``benchmarks/npt_readme.py``); this fails when a README block and its JSON disagree."""

from __future__ import annotations

import npt_readme  # benchmarks/ is on sys.path: tests/conftest.py
from _readme_blocks import blocks_in


def test_every_npt_readme_block_matches_its_result_file() -> None:
    text = npt_readme.README.read_text(encoding="utf-8")
    assert set(blocks_in(text)) >= set(npt_readme.BLOCKS)
    assert npt_readme.stale(text) == [], "run `uv run python benchmarks/npt_readme.py --write`"


def test_a_changed_npt_figure_is_caught_and_restored() -> None:
    text = npt_readme.README.read_text(encoding="utf-8")
    name = sorted(npt_readme.BLOCKS)[0]
    npt_row = next(line for line in blocks_in(text)[name].splitlines() if line.startswith("| **NPT**"))
    value = npt_row.split(" | ")[1]
    tampered = text.replace(npt_row, npt_row.replace(value, f"{float(value) + 0.01:.4f}", 1))
    assert npt_readme.stale(tampered) == [name]
    assert npt_readme.write(tampered) == text
