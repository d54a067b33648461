"""The root README's Python examples run as written (every plugin installed: `nox -s integration`).

Each ```python block is executed on its own, in a fresh namespace and an empty working folder.
A block may not need anything the README does not show, and none may use the network.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(path: Path = README) -> list[tuple[str, str]]:
    """``(id, code)`` of every ```python block; the id names the first tabzoo package it imports."""
    out = []
    for i, m in enumerate(BLOCK.finditer(path.read_text())):
        code = m.group(1)
        first = re.search(r"^(?:from|import) (tabzoo\w*)", code, re.M)
        out.append((f"{i}-{first.group(1) if first else 'block'}", code))
    return out


BLOCKS = python_blocks()


def test_the_readme_has_an_example_per_plugin() -> None:
    code = "\n".join(c for _, c in BLOCKS)
    for module in ("tabzoo_tabflex", "tabzoo_orion_msp", "tabzoo_npt", "tabzoo_multitab", "tabzoo_ramba"):
        assert f"from {module}" in code, module
    assert "get_prior(" in code  # tabzoo-priors
    for _, c in BLOCKS:
        assert len(c.strip().splitlines()) <= 10, c


@pytest.mark.parametrize("code", [c for _, c in BLOCKS], ids=[i for i, _ in BLOCKS])
def test_readme_example_runs(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. TabFlex's documented model fallback
        exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})
    assert capsys.readouterr().out.strip(), "every example prints its result"
