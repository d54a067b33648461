"""Issue 26 item 6: the MultiTab-Bench grid and epoch-time figures of ``packages/multitab/README.md`` are
generated from committed result files (``benchmarks/multitab_readme.py``); this fails when a README block
and its JSON disagree."""

from __future__ import annotations

import re

import multitab_readme  # benchmarks/ is on sys.path: tests/conftest.py
from _readme_blocks import blocks_in


def test_every_multitab_readme_block_matches_its_result_file() -> None:
    text = multitab_readme.README.read_text(encoding="utf-8")
    assert set(blocks_in(text)) >= set(multitab_readme.BLOCKS)
    assert multitab_readme.stale(text) == [], "run `uv run python benchmarks/multitab_readme.py --write`"


def test_a_changed_multitab_figure_is_caught_and_restored() -> None:
    text = multitab_readme.README.read_text(encoding="utf-8")
    for name in multitab_readme.BLOCKS:
        row = next(line for line in blocks_in(text)[name].splitlines()
                   if line.startswith("| ") and "---" not in line and re.search(r"\d\.\d\d", line.split(" | ", 1)[1]))
        value = re.search(r"\d\.\d\d", row.split(" | ", 1)[1])
        assert value is not None
        changed = row.replace(value.group(0), f"{float(value.group(0)) + 0.01:.2f}", 1)
        assert changed != row
        tampered = text.replace(row, changed)
        assert multitab_readme.stale(tampered) == [name]
        assert multitab_readme.write(tampered) == text
