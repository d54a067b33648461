"""Every cross-package test (one that skips in its package's isolated session because it imports
another workspace package) is run by the `integration` nox session: INTEGRATION_TESTS lists it."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def integration_tests() -> set[str]:
    """The node ids of ``INTEGRATION_TESTS`` in noxfile.py (read without importing nox)."""
    tree = ast.parse((ROOT / "noxfile.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "INTEGRATION_TESTS" for t in node.targets):
            return {i for ids in ast.literal_eval(node.value).values() for i in ids}
    raise AssertionError("noxfile.py has no INTEGRATION_TESTS")


def cross_package_tests() -> set[str]:
    """``file`` (module-level skip) or ``file::test`` of every ``importorskip("tabzoo_<other>")``."""
    found = set()
    for test_file in sorted(ROOT.glob("packages/*/tests/*.py")):
        own = next((ROOT / "packages" / test_file.parts[-3] / "src").glob("*/__init__.py")).parent.name
        tree = ast.parse(test_file.read_text())
        rel = test_file.relative_to(ROOT).as_posix()
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "importorskip" and node.args
                    and isinstance(node.args[0], ast.Constant)):
                continue
            module = str(node.args[0].value)
            if not module.startswith("tabzoo_") or module.split(".")[0] == own:
                continue  # the core (`tabzoo.`) and the package itself are always installed
            scope = node
            while scope in parents and not isinstance(scope, ast.FunctionDef):
                scope = parents[scope]
            found.add(f"{rel}::{scope.name}" if isinstance(scope, ast.FunctionDef) else rel)
    return found


def test_every_cross_package_test_runs_in_the_integration_session() -> None:
    listed = integration_tests()
    missing = {t for t in cross_package_tests() if t not in listed and t.split("::")[0] not in listed}
    assert not missing, f"add these to INTEGRATION_TESTS in noxfile.py: {sorted(missing)}"


def test_integration_tests_exist() -> None:
    for node in integration_tests():
        path, _, name = node.partition("::")
        assert (ROOT / path).exists(), node
        if name:
            assert f"def {name}(" in (ROOT / path).read_text(), node
