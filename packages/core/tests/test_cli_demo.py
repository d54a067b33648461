"""``tabzoo demo``: finds every installed plugin's demo, prints the table, writes a report folder.

The plugins here are throwaway distributions with real entry points: one registers its demo
through the ``tabzoo_register_demos`` hook, one is a ``ModelPlugin`` object naming its demo module,
one is an in-context classifier without a demo (the default demo runs its estimator), and one has
a demo that raises.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import sys
import textwrap
from pathlib import Path

import pytest
from _fake_dists import make_dist
from tabzoo.cli import main
from tabzoo.plugins import reset_registry

pytest.importorskip("sklearn", reason="tabzoo demo needs scikit-learn (the test group installs it)")

ROWS = '''
def {fn}(*, seed=0, quick=True):
    return [
        {{"dataset": "toyset", "task": "regression", "model": "{model}", "metric": "rmse", "value": 1.5,
          "fit_predict_s": 0.25}},
        {{"dataset": "toyset", "task": "regression", "model": "Ridge", "metric": "rmse", "value": 2.0,
          "fit_predict_s": 0.01}},
        {{"dataset": "toyset", "task": "regression", "model": "HistGradientBoosting", "metric": "rmse",
          "value": 1.0, "fit_predict_s": 0.1, "baseline": True}},
    ]
'''

HOOKS = '''
from tabzoo.plugins import hookimpl, ArchitectureSpec, DemoSpec

@hookimpl
def tabzoo_register_architectures(register):
    register(ArchitectureSpec(name="{arch}", build=lambda c: None, kind="other"))

@hookimpl
def tabzoo_register_demos(register):
    register(DemoSpec("{arch}", {demo}))
'''
EXPLICIT = HOOKS.format(arch="toy_a", demo="'tz_demo_a:my_demo'") + ROWS.format(fn="my_demo", model="toy_a (fine-tuned)")

BROKEN = HOOKS.format(arch="toy_c", demo="run_demo") + '''
def run_demo(*, seed=0, quick=True):
    raise RuntimeError("this demo is broken on purpose")
'''


def _package_dist(root: Path) -> None:
    """``tz_demo_b`` as a package: ``plugin.py`` declares a ``ModelPlugin`` with ``toy_b`` and its demo."""
    pkg = root / "tz_demo_b"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(textwrap.dedent('''
        from tabzoo.plugins import ArchitectureSpec, ModelPlugin

        plugin = ModelPlugin(ArchitectureSpec(name="toy_b", build=lambda c: None, kind="multitask"),
                             demo="tz_demo_b.demo:run_demo")
    '''))
    (pkg / "demo.py").write_text(textwrap.dedent(ROWS.format(fn="run_demo", model="TOY-B net")))
    info = root / "tz_demo_b-2.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tz-demo-b\nVersion: 2.0\n")
    (info / "entry_points.txt").write_text("[tabzoo]\ntzb = tz_demo_b.plugin:plugin\n")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from _icl_testmodel import PLUGIN_SOURCE

    root = tmp_path / "site"
    root.mkdir()
    make_dist(root, "tz-demo-a", "tza", "tz_demo_a", EXPLICIT)
    _package_dist(root)
    make_dist(root, "tz-icl-test", "tzicltest", "tz_icl_test_plugin", PLUGIN_SOURCE)
    monkeypatch.syspath_prepend(str(root))
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "tza,tzb,tzicltest")
    monkeypatch.delenv("TABZOO_DISABLE_PLUGINS", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    reset_registry()
    yield root
    reset_registry()


def _folder(stdout: str) -> Path:
    last = stdout.strip().splitlines()[-1]
    assert "report written to" in last, stdout
    return Path(last.split("report written to ")[1].split("/ (")[0])


def test_demo_runs_every_plugins_demo_and_writes_the_report(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-progress"]) == 0
    out = capsys.readouterr().out
    folder = _folder(out)
    assert folder.name == f"tabzoo-demo-{dt.date.today().isoformat()}"
    for model in ("toy_a (fine-tuned)", "TOY-B net", "icl_test", "LogisticRegression", "Ridge"):
        assert model in out
    data = json.loads((folder / "results.json").read_text())
    by_plugin = {p["plugin"]: p for p in data["plugins"]}
    assert set(by_plugin) == {"tza", "tzb", "tzicltest"}
    assert by_plugin["tza"]["demo"] == "tz_demo_a:my_demo"           # the tabzoo_register_demos hook
    assert by_plugin["tzb"]["demo"] == "tz_demo_b.demo:run_demo"      # ModelPlugin(demo=...)
    assert by_plugin["tzicltest"]["demo"] == "default:icl_test"       # the default demo
    roles = {(p, r["model"]): r["baseline"] for p, item in by_plugin.items() for r in item["rows"]}
    assert roles[("tza", "toy_a (fine-tuned)")] is False and roles[("tzb", "TOY-B net")] is False
    assert roles[("tza", "Ridge")] is True and roles[("tzicltest", "HistGradientBoosting")] is True
    # the default demo runs the estimator itself: the kNN-like test model is far above chance
    icl = [r for r in by_plugin["tzicltest"]["rows"] if r["model"] == "icl_test"]
    want = {"breast_cancer", "wine"} | ({"penguins (species)"} if importlib.util.find_spec("palmerpenguins") else set())
    assert {r["dataset"] for r in icl} == want and all(r["value"] > 0.8 for r in icl)
    report = (folder / "report.md").read_text()
    assert "## tza (tz-demo-a 1.0)" in report and "## tzb (tz-demo-b 2.0)" in report
    # rmse: lower is better, so the baseline at 1.0 is the best and wins the summary
    assert "| tza | toyset | regression | rmse | 1.5 | 1 | baseline |" in report
    for png in ("metric.png", "time.png"):
        assert (folder / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({png})" in report


def test_demo_never_overwrites_a_report(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-progress", "--model", "tza"]) == 0
    first = _folder(capsys.readouterr().out)
    assert main(["demo", "--no-progress", "--model", "tza"]) == 0
    second = _folder(capsys.readouterr().out)
    assert second.name == first.name + "-2" and (first / "report.md").exists()
    before = (first / "report.md").read_text()
    assert main(["demo", "--no-progress", "--model", "tza", "--out", str(first)]) == 2
    err = capsys.readouterr().err
    assert "already exists and is not empty" in err and (first / "report.md").read_text() == before


def test_unknown_model_lists_the_installed_ones(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--model", "no-such-model"]) == 2
    err = capsys.readouterr().err
    assert "no-such-model" in err and "no installed plugin provides that model" in err
    for name in ("tza (toy_a)", "tzb (toy_b)", "tzicltest (icl_test)"):
        assert name in err
    assert not any(Path.cwd().iterdir())  # refused before any work


def test_model_selects_by_architecture_name(site: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--no-progress", "--no-report", "--json", "--model", "toy_b"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [p["plugin"] for p in data["plugins"]] == ["tzb"] and data["report"] is None


@pytest.mark.parametrize("exc", ["RuntimeError", "SystemExit", "BaseException"])
def test_a_broken_demo_is_reported_and_the_others_still_run(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], exc: str
) -> None:
    """Whatever a demo raises (SystemExit(0) included) fails its row only; the run exits 1 at the end."""
    module = f"tz_demo_c_{exc.lower()}"  # a module name per case: an imported module stays in sys.modules
    make_dist(site, "tz-demo-c", "tzc", module, BROKEN.replace("RuntimeError", exc).replace("tz_demo_c", module))
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "tza,tzc")
    reset_registry()
    assert main(["demo", "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert f"tzc: FAILED ({exc}: this demo is broken on purpose)" in out
    folder = _folder(out)
    report = (folder / "report.md").read_text()
    assert f"**Failed:** `{exc}: this demo is broken on purpose`" in report and "toy_a (fine-tuned)" in report
    assert json.loads((folder / "results.json").read_text())["plugins"][0]["plugin"] == "tza"
    listed = out.strip().splitlines()[-1].split("/ (")[1].rstrip(")").split(", ")
    assert listed and all((folder / name).is_file() for name in listed)


HANGS = HOOKS.format(arch="toy_h", demo="run_demo") + '''
import threading
RELEASE = threading.Event()

def run_demo(*, seed=0, quick=True):
    RELEASE.wait()  # blocked: no CPU used, as a deadlocked fit would be
    return []
'''


def test_a_hung_demo_is_stopped_with_the_option_to_raise_the_limit_and_the_others_are_kept(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    make_dist(site, "tz-demo-h", "tzh", "tz_demo_hangs", HANGS)
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "tza,tzh")
    reset_registry()
    try:
        assert main(["demo", "--no-progress", "--timeout", "1.5"]) == 1
    finally:
        sys.modules["tz_demo_hangs"].RELEASE.set()  # let the abandoned thread end
    out = capsys.readouterr().out
    assert "tzh: FAILED (HangError: the demo of tzh made no progress for 1.5 s" in out
    assert "`tabzoo demo --timeout SECONDS` (now 1.5)" in out
    results = json.loads((_folder(out) / "results.json").read_text())["plugins"]
    assert [(p["plugin"], len(p["rows"]), p["error"] is None) for p in results] == [("tza", 3, True), ("tzh", 0, False)]


def test_the_last_line_lists_only_written_files(site: Path, monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from tabzoo.cli import _report

    monkeypatch.setattr(_report, "bar_grid", lambda *a, **k: None)  # as without matplotlib
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "tza")
    reset_registry()
    assert main(["demo", "--no-progress"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.endswith("(report.md, results.json)") and "PNG" not in last


IMPOSTOR = HOOKS.format(arch="toy_a", demo="'tz_impostor:run_demo'") + """
def run_demo(*, seed=0, quick=True):
    return []
"""


@pytest.mark.parametrize("only", [[], ["--model", "toy_a"]])
def test_an_impostor_name_is_a_visible_failure_not_a_silent_drop(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], only: list[str]
) -> None:
    make_dist(site, "tz-impostor", "tzimp", "tz_impostor", IMPOSTOR, version="6.6.6")
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "tza,tzimp")
    reset_registry()
    assert main(["demo", "--no-progress", *only]) == 1
    out = capsys.readouterr().out
    assert "toy_a: FAILED (AmbiguousPluginError" in out
    assert "tz-demo-a 1.0" in out and "tz-impostor 6.6.6" in out and "TABZOO_DISABLE_PLUGINS=tzimp" in out


def test_missing_scikit_learn_is_one_line_before_any_work(
    site: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "sklearn", None)  # import sklearn now fails as if not installed
    assert main(["demo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["tabzoo: error: tabzoo demo needs scikit-learn (for the baselines and the bundled data "
                   "sets): pip install 'tabzoo-core[sklearn]'"]
    assert not any(Path.cwd().iterdir())


def test_demo_without_models_says_what_to_install(site: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "nothing-matches-this")
    reset_registry()
    assert main(["demo", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["plugins"] == [] and "uv build --package tabzoo-tabflex" in data["message"]


def test_a_demo_module_that_is_not_registered_is_not_run(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One extension mechanism: a demo is registered through the hook, never looked up by module name."""
    from tabzoo.cli._demo import discover

    pkg = site / "tz_demo_d"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(textwrap.dedent('''
        from tabzoo.plugins import ArchitectureSpec, ModelPlugin

        plugin = ModelPlugin(ArchitectureSpec(name="toy_d", build=lambda c: None, kind="other"))
    '''))
    (pkg / "demo.py").write_text(textwrap.dedent(ROWS.format(fn="run_demo", model="toy_d")))
    info = site / "tz_demo_d-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tz-demo-d\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[tabzoo]\ntzd = tz_demo_d.plugin:plugin\n")
    monkeypatch.setenv("TABZOO_LOAD_PLUGINS", "tzd")
    reset_registry()
    entries, models = discover()
    assert models == {"tzd": ["toy_d"]} and entries == []
