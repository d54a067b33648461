"""The conformance kit's API: runner, parametrize_with_checks, CLI, pytest plugin, docs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit_models.broken import NonDeterministic, icl_case
from tabzoo.testing import (
    ConformanceCase,
    ConformanceError,
    check_conformance,
    parametrize_with_checks,
)
from tabzoo.testing import capabilities as cap
from tabzoo.testing.runner import checks_for

CORE = Path(__file__).resolve().parents[1]
CASE_PLUGIN = '''
from tabzoo.plugins import hookimpl

@hookimpl
def tabzoo_conformance_cases(register):
    from kit_models.broken import icl_case, NoValidation
    register(icl_case("meta_good"))
    register(icl_case("meta_bad", NoValidation))  # fails only bad_input
'''


def test_universal_checks_run_undeclared_and_order_is_stable() -> None:
    case = ConformanceCase("m", make_model=lambda s: None, capabilities=cap.MINIMUM["in-context"])
    assert checks_for(case) == [c for c in cap.PROPERTIES if c in cap.UNIVERSAL | cap.MINIMUM["in-context"]]
    assert checks_for(ConformanceCase("k", capabilities={cap.KERNEL_EQUIVALENCE})) == [cap.KERNEL_EQUIVALENCE]


ND = "shown by tests/test_conformance_api.py::test_on_fail_modes_and_expected_failures"
"""The test that shows NonDeterministic failing determinism (an expected failure links one)."""


def test_unknown_capability_and_reasonless_xfail_are_rejected() -> None:
    from tabzoo.errors import TabzooInputError

    with pytest.raises(TabzooInputError, match="unknown capabilities"):
        ConformanceCase("x", capabilities={"quantum_speedup"})
    with pytest.raises(TabzooInputError, match="reason"):
        ConformanceCase("x", expected_failures={cap.DETERMINISM: ""})
    with pytest.raises(TabzooInputError, match="sentence"):
        ConformanceCase("x", expected_failures={cap.DETERMINISM: "flaky"})
    with pytest.raises(TabzooInputError, match="shows the failure"):  # a sentence, but no test linked
        ConformanceCase("x", expected_failures={cap.DETERMINISM: "It draws unseeded noise on purpose."})


def test_on_fail_modes_and_expected_failures() -> None:
    from tabzoo.errors import TabzooInputError

    case = icl_case("nd", NonDeterministic)
    with pytest.raises(ConformanceError, match="determinism") as info:
        check_conformance(case, checks=[cap.DETERMINISM])
    assert info.value.results[0].status == "failed"
    with pytest.warns(UserWarning, match="determinism"):
        check_conformance(case, on_fail="warn", checks=[cap.DETERMINISM])
    (r,) = check_conformance(case, on_fail="raise", checks=[cap.DETERMINISM],
                             expected_failed_checks={"nd": {cap.DETERMINISM: f"it draws unseeded noise on purpose, {ND}"}})
    assert r.status == "xfail" and "draws unseeded noise" in r.message
    with pytest.raises(TabzooInputError, match="shows the failure"):
        check_conformance(case, on_fail=None, checks=[cap.DETERMINISM],
                          expected_failed_checks={"nd": {cap.DETERMINISM: "it draws unseeded noise on purpose"}})
    assert json.loads(json.dumps(r.as_dict()))["reproducer"]["seed"] == 0


def test_parametrize_with_checks_ids_and_xfails() -> None:
    good = icl_case("good")
    bad = icl_case("bad", NonDeterministic)
    mark = parametrize_with_checks([good, bad], expected_failed_checks=lambda c: (
        {cap.DETERMINISM: f"unseeded noise by design, {ND}"} if c.name == "bad" else {}))
    params = mark.args[1]
    ids = [p.id for p in params]
    assert "good-query_independence" in ids and "bad-determinism" in ids and len(ids) == len(set(ids))
    (p,) = [p for p in params if p.id == "bad-determinism"]
    (xfail,) = [m for m in p.marks if m.name == "xfail"]
    assert xfail.kwargs["reason"] == f"unseeded noise by design, {ND}"
    assert not [p for p in params if p.id.startswith("good-") and p.marks]
    assert repr(p.values[1]) == cap.DETERMINISM


@parametrize_with_checks([icl_case("tiny_icl")], max_examples=3)
def test_parametrize_with_checks_runs(case: ConformanceCase, check: object) -> None:
    check(case)  # type: ignore[operator]


def _env_with_plugin(tmp_path: Path) -> dict[str, str]:
    from _fake_dists import make_dist

    make_dist(tmp_path, "meta-cases", "meta", "meta_cases_plugin", CASE_PLUGIN)
    import os

    env = dict(os.environ)
    # the fake plugin imports the kit's gallery, which lives beside these tests (not in the wheel)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(Path(__file__).resolve().parent),
                                         env.get("PYTHONPATH", "")])
    return env


def test_pytest_plugin_loads_without_torch_or_hypothesis() -> None:
    code = ("import sys, tabzoo.testing.pytest_plugin; "
            "print(sorted(m for m in ('torch', 'hypothesis') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _pytest_plugin_args() -> list[str]:
    from importlib.metadata import entry_points

    registered = any(ep.name == "tabzoo" for ep in entry_points(group="pytest11"))
    return [] if registered else ["-p", "tabzoo.testing.pytest_plugin"]


def test_pytest_plugin_is_inert_without_the_option(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_one():\n    assert True\n")
    proc = subprocess.run([sys.executable, "-m", "pytest", *_pytest_plugin_args(), "-q", "-p", "no:cacheprovider",
                           str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, env=_env_with_plugin(tmp_path))
    assert proc.returncode == 0 and "1 passed" in proc.stdout and "conformance" not in proc.stdout


def test_pytest_plugin_collects_checks_with_header_and_xfails(tmp_path: Path) -> None:
    (tmp_path / "xfails.toml").write_text('[meta_bad]\nbad_input = "no validation on purpose, shown by tests/test_meta.py::test_bad"\n')
    (tmp_path / "test_x.py").write_text("def test_one():\n    assert True\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *_pytest_plugin_args(), "-p", "no:cacheprovider", "-rxs",
         "--tabzoo-conformance=meta", "--tabzoo-max-examples=2", "--tabzoo-xfails=xfails.toml", "-v",
         "-k", "query_independence or bad_input or registration or test_one", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=_env_with_plugin(tmp_path), timeout=600,
    )
    out = proc.stdout
    assert proc.returncode == 0, out[-3000:] + proc.stderr[-2000:]
    assert "tabzoo-core" in out and "kernel backends:" in out and "meta (meta-cases 1.0)" in out
    assert "meta_good-query_independence PASSED" in out
    assert "meta_bad-bad_input XFAIL" in out and "no validation on purpose" in out


BROKEN_PLUGIN = '''
from tabzoo.plugins import hookimpl

@hookimpl
def tabzoo_conformance_cases(register):
    from tabzoo.testing import ConformanceCase
    from kit_models.broken import icl_case
    register(icl_case("meta_ok2"))
    register(ConformanceCase("meta_few", make_model=lambda s: None, capabilities={"determinism"}))
'''


def test_conformance_all_survives_a_broken_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 16: a case that cannot be built is a failed result with its error, exit code 1,
    and the other cases still run."""
    import importlib

    from _fake_dists import make_dist
    from tabzoo.cli import main
    from tabzoo.plugins import reset_registry

    make_dist(tmp_path, "meta-broken", "metabroken", "meta_broken_plugin", BROKEN_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "metabroken")
    importlib.invalidate_caches()
    reset_registry()
    try:
        code = main(["conformance", "all", "--json", "--check", cap.DETERMINISM, "--max-examples", "2"])
    finally:
        reset_registry()
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["exit_code"] == 1 and doc["ok"] is False
    by = {(r["case"], r["check"]): r for r in doc["results"]}
    assert by[("meta_ok2", cap.DETERMINISM)]["status"] == "passed"
    (bad,) = [r for r in doc["results"] if r["check"] == "registration"]
    assert bad["status"] == "failed" and "minimum capabilities" in bad["message"]


@pytest.fixture
def meta_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fake distribution registering the meta cases, importable in this process."""
    import importlib

    from _fake_dists import make_dist
    from tabzoo.plugins import reset_registry

    make_dist(tmp_path, "meta-cases", "meta", "meta_cases_plugin", CASE_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    reset_registry()
    yield tmp_path
    reset_registry()


def test_cli_json_and_exit_codes(meta_plugin: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tabzoo.cli import main

    assert main(["conformance", "meta_good", "--json", "--max-examples", "2", "--check", cap.QUERY_INDEPENDENCE,
                 "--check", cap.DETERMINISM]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["cases"] == ["meta_good"]
    assert {r["check"] for r in doc["results"]} >= {cap.QUERY_INDEPENDENCE, cap.DETERMINISM}
    assert set(doc["results"][0]) == {"case", "check", "status", "discrepancy", "tolerance", "reproducer",
                                      "message", "details"}
    assert main(["conformance", "meta_bad", "--max-examples", "2", "--check", cap.BAD_INPUT]) == 1
    out = capsys.readouterr().out
    assert "meta_bad-bad_input" in out and "FAILED" in out and "--replay '" in out
    line = next(x for x in out.splitlines() if "--replay '" in x)
    spec = line.split("--replay '", 1)[1].rstrip("'")
    assert main(["conformance", "meta_bad", "--replay", spec]) == 1  # the same failure, alone
    replayed = capsys.readouterr().out
    assert "meta_bad-bad_input" in replayed and "FAILED" in replayed and "1 failed" in replayed
    (meta_plugin / "x.json").write_text(json.dumps({"meta_bad": {"bad_input": "it validates nothing on purpose, shown by tests/test_meta.py::test_bad"}}))
    assert main(["conformance", "meta", "--max-examples", "2", "--xfails", str(meta_plugin / "x.json"),
                 "--check", cap.BAD_INPUT]) == 0
    assert "XFAIL" in capsys.readouterr().out
    assert main(["conformance", "no_such_case"]) == 2
    assert "installed cases" in capsys.readouterr().err


def test_readme_documents_every_hookspec() -> None:
    from tabzoo.plugins import HOOK_NAMES

    text = (CORE / "README.md").read_text()
    assert "## Writing a plugin" in text
    section = text.split("## Writing a plugin", 1)[1]
    for hook in HOOK_NAMES:
        assert f"def {hook}(register)" in section, f"{hook} has no example in the README"


def test_strategies_generate_valid_objects() -> None:
    hypothesis = pytest.importorskip("hypothesis", reason="the strategies need hypothesis")
    from tabzoo.table import RelationalDatabase, Table
    from tabzoo.testing import strategies as tzst

    @hypothesis.settings(max_examples=8, deadline=None)
    @hypothesis.given(tzst.tables(), tzst.relational_databases())
    def run(table: Table, db: RelationalDatabase) -> None:
        assert table.n_columns >= 1 and table.missing.shape == (table.n_rows, table.n_columns)
        assert set(db.time_columns) == set(db.table_names)

    run()


def test_the_broken_model_gallery_is_not_shipped() -> None:
    """Issue 31: the kit's test fixtures live in tests/kit_models, outside the installed package."""
    import importlib.util

    import tabzoo.testing

    for name in ("broken", "broken_v2", "broken_rows"):
        assert importlib.util.find_spec(f"tabzoo.testing.{name}") is None, name
    shipped = Path(tabzoo.testing.__file__).parent
    assert not any("broken" in p.name for p in shipped.rglob("*.py"))


SKIPPING_CONFTEST = '''
import tabzoo.testing.runner as runner
from tabzoo.testing.case import CheckResult


def _skipped(case, check, **kw):
    return CheckResult(check, case.name, "skipped", message="not proven: planted by the test")


runner.run_check = _skipped
'''


@pytest.mark.parametrize("allow", [False, True], ids=["default", "allow-unproven"])
def test_pytest_plugin_fails_a_skipped_check_unless_allowed(tmp_path: Path, allow: bool) -> None:
    (tmp_path / "conftest.py").write_text(SKIPPING_CONFTEST)
    (tmp_path / "test_x.py").write_text("def test_one():\n    assert True\n")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *_pytest_plugin_args(), "-p", "no:cacheprovider", "-rs", "-v",
         "--tabzoo-conformance=meta", *(["--tabzoo-allow-unproven"] if allow else []),
         "-k", "meta_good and query_independence", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, env=_env_with_plugin(tmp_path), timeout=600,
    )
    out = proc.stdout
    if allow:
        assert proc.returncode == 0 and "SKIPPED" in out and "planted by the test" in out, out[-3000:]
    else:
        assert proc.returncode == 1 and "not proven counts as failed" in out, out[-3000:]
