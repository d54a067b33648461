"""Issue 28 item 8: the real-data figures of ``packages/tabflex/README.md`` and of the top-level README's
TabFlex row are generated from committed result files (``benchmarks/tabflex_readme.py``); this fails when a
README figure and its result file disagree."""

from __future__ import annotations

import re

import pytest
import tabflex_readme as GEN  # benchmarks/ is on sys.path: tests/conftest.py

NAMES = sorted({*GEN.BLOCKS, *GEN.CURVES})


def test_every_block_is_in_the_readme() -> None:
    assert set(GEN.blocks_in(GEN.README.read_text(encoding="utf-8"))) == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_readme_block_matches_its_result_file(name: str) -> None:
    body = GEN.blocks_in(GEN.README.read_text(encoding="utf-8"))[name]
    assert body == GEN.render_block(name), (
        f"the README's block {name} disagrees with {GEN.BLOCKS[name][0]}: run "
        "`uv run python benchmarks/tabflex_readme.py --write`")


#: one block of each kind: one file and split, several files and splits, a learning curve
KINDS = [sorted(n for n, b in GEN.BLOCKS.items() if isinstance(b[0], str))[0],
         sorted(n for n, b in GEN.BLOCKS.items() if not isinstance(b[0], str))[0], sorted(GEN.CURVES)[0]]


@pytest.mark.parametrize("name", KINDS)
def test_a_changed_figure_is_caught(name: str) -> None:
    text = GEN.README.read_text(encoding="utf-8")
    body = GEN.blocks_in(text)[name]
    rows = [line for line in body.splitlines() if line.startswith("| ") and "---" not in line]
    first_row = rows[1]  # rows[0] is the header
    value = re.search(r"\d\.\d{4}", first_row)
    assert value is not None, first_row
    changed = first_row.replace(value.group(0), f"{float(value.group(0)) + 0.01:.4f}", 1)
    tampered = text.replace(first_row, changed)
    assert GEN.blocks_in(tampered)[name] != GEN.render_block(name)
    assert GEN.write(tampered) == text  # --write restores it


def test_the_top_level_tabflex_row_matches_the_result_files() -> None:
    root = GEN.ROOT_README.read_text(encoding="utf-8")
    assert GEN.root_row_in(root) == GEN.root_row(), (
        "README.md's tabzoo-tabflex row disagrees with benchmarks/results/: run "
        "`uv run python benchmarks/tabflex_readme.py --write`")
    # the row's figures are the package README's: each regression mean is in the regression-ft block
    block = GEN.render_block("regression-ft")
    for runner, mean in GEN.block_means("regression-ft").items():
        assert f"| {mean:.4f} |" in block, runner
        if runner in ("tabflex-long-ft", "linear", "lightgbm", "tabflex"):
            assert f"{mean:.4f}" in GEN.root_row(), runner
