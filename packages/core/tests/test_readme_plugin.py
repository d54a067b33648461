"""The README's "Writing a plugin" example runs as written and passes the whole kit."""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
MARKER = "<!-- runnable: tests/test_readme_plugin.py -->"


def _snippet() -> str:
    text = README.read_text(encoding="utf-8")
    assert MARKER in text, "the README lost its runnable plugin example"
    match = re.search(r"```python\n(.*?)```", text.split(MARKER, 1)[1], re.S)
    assert match is not None
    return match.group(1)


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The snippet as an importable module ``readme_plugin``, as an installed plugin would be (the
    kit's fresh-process determinism check rebuilds the case from ``readme_plugin:my_case``)."""
    folder = tmp_path_factory.mktemp("readme_plugin")
    (folder / "readme_plugin.py").write_text(_snippet(), encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        module = importlib.import_module("readme_plugin")
        yield vars(module)
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("readme_plugin", None)


def test_readme_plugin_registers_its_architecture_and_case(plugin: dict[str, Any]) -> None:
    specs: list[Any] = []
    cases: list[Any] = []
    plugin["tabzoo_register_architectures"](register=specs.append)
    plugin["tabzoo_conformance_cases"](register=cases.append)
    assert specs[0].capabilities == cases[0].capabilities and specs[0].name == cases[0].name


def test_readme_plugin_passes_the_kit(plugin: dict[str, Any]) -> None:
    from tabzoo.testing import capabilities as cap
    from tabzoo.testing import check_conformance

    case = dataclasses.replace(plugin["my_case"](), factory="readme_plugin:my_case")
    results = check_conformance(case, on_fail="raise", max_examples=3)
    assert {r.check for r in results} >= cap.MINIMUM["in-context"] | {cap.LINEAR_IN_ROWS}
    assert all(r.status == "passed" for r in results), [str(r) for r in results]
