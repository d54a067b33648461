"""Issue 28 item 8: the real-data figures of ``packages/tabflex/README.md`` are generated from committed
result files (``benchmarks/tabflex_readme.py``); this fails when a README block and its JSON disagree."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _generator():
    spec = importlib.util.spec_from_file_location("tabflex_readme", ROOT / "benchmarks" / "tabflex_readme.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["tabflex_readme"] = mod
    spec.loader.exec_module(mod)
    return mod


GEN = _generator()


def test_every_block_is_in_the_readme() -> None:
    assert set(GEN.blocks_in(GEN.README.read_text(encoding="utf-8"))) == set(GEN.BLOCKS)


@pytest.mark.parametrize("name", sorted(GEN.BLOCKS))
def test_readme_block_matches_its_result_file(name: str) -> None:
    body = GEN.blocks_in(GEN.README.read_text(encoding="utf-8"))[name]
    assert body == GEN.render_block(name), (
        f"the README's block {name} disagrees with {GEN.BLOCKS[name][0]}: run "
        "`uv run python benchmarks/tabflex_readme.py --write`")


def test_a_changed_figure_is_caught() -> None:
    name = sorted(GEN.BLOCKS)[0]
    text = GEN.README.read_text(encoding="utf-8")
    body = GEN.blocks_in(text)[name]
    first_row = next(line for line in body.splitlines() if line.startswith("| ") and "---" not in line
                     and not line.startswith("| model"))
    label, value = first_row.split(" | ")[:2]
    tampered = text.replace(first_row, first_row.replace(value, f"{float(value) + 0.01:.4f}", 1))
    assert GEN.blocks_in(tampered)[name] != GEN.render_block(name)
    assert GEN.write(tampered) == text  # --write restores it
