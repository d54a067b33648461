"""Isolated sessions: one venv per package with only the core beside it.

    uv run nox                                  # everything CI runs
    uv run nox -s "tests(package='core')"       # one package
    uv run nox -s lint
    uv run nox -s integration                   # every package in one venv: cross-package tests
"""

from __future__ import annotations

import os
import shutil
import tomllib
from pathlib import Path

import nox

ROOT = Path(__file__).parent
nox.options.default_venv_backend = "uv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True
PACKAGES = sorted(p.name for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists())
# core first: a failure there explains the failures of the others.
PACKAGES.sort(key=lambda p: (p != "core", p))
nox.options.sessions = [f"tests(package='{p}')" for p in PACKAGES] + ["integration", "third_party", "one_model", "lint",
                                                                             "typing"]

# Tests that skip in the isolated sessions because they need a second workspace package (they
# `pytest.importorskip("tabzoo_<other>")`), run by `integration` with every package installed,
# plus the root tests/ (the README's examples, `tabzoo demo` discovery of every plugin).
# tests/test_integration_list.py fails when a cross-package test is missing here.
INTEGRATION_TESTS = {
    "core": [
        "packages/core/tests/test_train.py::test_trains_on_the_real_scm_prior",
        "packages/core/tests/test_plugin_isolation.py::test_cli_conformance_tabflex_beside_the_evil_distribution",
        "packages/core/tests/test_fuzz_every_estimator.py",  # every plugin estimator (skips with the core alone)
    ],
    "tabflex": ["packages/tabflex/tests/test_pretraining.py"],
    "orion-msp": ["packages/orion-msp/tests/test_pretraining.py::test_prior_draws_the_widest_tables"],
    "ramba": ["packages/ramba/tests/test_api.py::test_synthetic_pretraining_source",
              "packages/ramba/tests/test_ramba_pretraining.py"],
    "root": ["tests"],
}


def _dist(package: str) -> str:
    with open(ROOT / "packages" / package / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]["name"]


def _sync(session: nox.Session, *args: str) -> None:
    """Install into the session's venv from uv.lock, nothing else of the workspace."""
    session.run_install(
        "uv", "sync", "--frozen", "--no-default-groups", *args,
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
        external=True,
    )


@nox.session
@nox.parametrize("package", PACKAGES)
def tests(session: nox.Session, package: str) -> None:
    """Install one package (plus the core it needs) and its test group, then run its tests."""
    _sync(session, f"--package={_dist(package)}", "--group=test")
    env = {"HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci")}
    session.run(
        "python", "-m", "pytest", f"packages/{package}/tests", "-q", "-p", "no:cacheprovider",
        "--durations=10", *session.posargs, env=env,
    )


@nox.session
@nox.parametrize("package", PACKAGES)
def tests_random(session: nox.Session, package: str) -> None:
    """Like ``tests`` but with the "random" hypothesis profile: fresh examples on every run, so
    it may find new failures (CI's ``tests`` are derandomized and draw the same examples on every
    machine). Not in the default sessions; run it on purpose: ``uv run nox -s tests_random``."""
    _sync(session, f"--package={_dist(package)}", "--group=test")
    session.run(
        "python", "-m", "pytest", f"packages/{package}/tests", "-q", "-p", "no:cacheprovider",
        *session.posargs, env={"HYPOTHESIS_PROFILE": "random"},
    )


@nox.session
def integration(session: nox.Session) -> None:
    """Every workspace package and the dev group in ONE venv (from uv.lock): the cross-package
    tests of INTEGRATION_TESTS (pretraining on tabzoo-priors' priors, ...) and the root tests/.
    One pytest run per package, so that their conftest and helper modules never meet."""
    _sync(session, "--all-packages", "--group=dev")
    env = {"HYPOTHESIS_PROFILE": os.environ.get("HYPOTHESIS_PROFILE", "ci"),
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    for ids in INTEGRATION_TESTS.values():
        session.run("python", "-m", "pytest", *ids, "-q", "-p", "no:cacheprovider", "-rs",
                    "--durations=5", *session.posargs, env=env)


@nox.session
def fuzz(session: nox.Session) -> None:
    """The fuzz tests with a thorough budget (CI runs them with 8 examples each in the core tests):
    bad command lines, files and estimator inputs (every plugin's estimators too, so every package is
    installed); TABZOO_FUZZ_EXAMPLES sets the budget of the command-line and every-estimator fuzz, the
    "random" hypothesis profile that of the others (twice CI's examples, fresh ones on every run)."""
    _sync(session, "--all-packages", "--group=dev")
    env = {"HYPOTHESIS_PROFILE": "random", "TABZOO_FUZZ_EXAMPLES": os.environ.get("TABZOO_FUZZ_EXAMPLES", "100"),
           "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    tests = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "packages/core/tests").glob("test_fuzz_*.py"))
    session.run("python", "-m", "pytest", *tests, "packages/core/tests/test_cli_files.py", "-q", "-p",
                "no:cacheprovider", "--hypothesis-show-statistics", *session.posargs, env=env)


@nox.session(venv_backend="none")
def one_model(session: nox.Session) -> None:
    """The README's "Installing only one model", for real: build the core and the tabflex wheels, install
    those two alone (with the sklearn extra) into a fresh venv in a separate folder, run the example.

    Third-party versions are pinned to uv.lock, as in ``third_party``."""
    tmp = Path(session.create_tmp())
    dist, venv = tmp / "dist-one-model", tmp / "venv-one-model"
    shutil.rmtree(dist, ignore_errors=True)
    shutil.rmtree(venv, ignore_errors=True)
    constraints = tmp / "constraints-one-model.txt"
    session.run(
        "uv", "export", "--frozen", "--no-hashes", "--all-packages", "--all-extras", "--all-groups",
        "--no-emit-workspace", "--format", "requirements-txt", "-q", "-o", str(constraints), external=True,
    )
    for package in ("tabzoo-core", "tabzoo-tabflex"):
        session.run("uv", "build", "--package", package, "--wheel", "--out-dir", str(dist), external=True)
    (core,) = dist.glob("tabzoo_core-*.whl")
    (tabflex,) = dist.glob("tabzoo_tabflex-*.whl")
    session.run("uv", "venv", "--python", "3.11", str(venv), external=True)
    py = str(venv / "bin" / "python")
    session.run("uv", "pip", "install", "--python", py, "-c", str(constraints), f"{core}[sklearn]", str(tabflex),
                external=True)
    session.run(str(venv / "bin" / "tabzoo"), "plugins", external=True)
    session.run(py, "examples/one_model_tabflex.py", external=True,
                env={"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")})


@nox.session
def ray(session: nox.Session) -> None:
    """The Ray path of tabzoo.batch (``tabzoo-core[ray]``) with a local ``ray.init(num_cpus=2)``. Not in
    the default sessions (ray is a large install); run it on purpose: ``uv run nox -s ray``."""
    # Bytecode compiled at install: the raylet gives its agents 15 s to start, and compiling ray's modules
    # at each start (PYTHONDONTWRITEBYTECODE keeps none) costs several of them on a loaded machine.
    _sync(session, "--package=tabzoo-core", "--group=test", "--extra=ray", "--compile-bytecode")
    session.run("python", "-m", "pytest", "packages/core/tests/test_batch_ray.py", "-q", "-p", "no:cacheprovider",
                "-rs", *session.posargs, env={"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over every package, the benchmarks, the examples and the root tests; then the import
    contracts of .importlinter (the core's floors, no circles, plugins independent), read from the
    sources: nothing is installed but the two tools."""
    session.install("ruff>=0.6", "import-linter>=2.10")
    session.run("ruff", "check", "packages", "benchmarks", "examples", "tests", "noxfile.py")
    sources = os.pathsep.join(str(p) for p in sorted(Path("packages").glob("*/src")))
    session.run("lint-imports", "--no-cache", env={"PYTHONPATH": sources})


@nox.session(venv_backend="none")
def third_party(session: nox.Session) -> None:
    """Core wheel + the example plugin, NON-editable, in a fresh venv; run the kit there.

    Every third-party version is pinned to uv.lock (``uv export`` into a constraints file), so the
    session tests what the lock tests, not whatever is newest on the index today."""
    tmp = Path(session.create_tmp())
    dist, venv = tmp / "dist", tmp / "venv-third-party"
    shutil.rmtree(dist, ignore_errors=True)
    shutil.rmtree(venv, ignore_errors=True)
    constraints = tmp / "constraints.txt"
    session.run(
        "uv", "export", "--frozen", "--no-hashes", "--all-packages", "--all-extras", "--all-groups",
        "--no-emit-workspace", "--format", "requirements-txt", "-q", "-o", str(constraints), external=True,
    )
    session.run("uv", "build", "packages/core", "--wheel", "--out-dir", str(dist), external=True)
    (wheel,) = dist.glob("tabzoo_core-*.whl")
    session.run("uv", "venv", "--python", "3.11", str(venv), external=True)
    py = str(venv / "bin" / "python")
    session.run(
        "uv", "pip", "install", "--python", py, "-c", str(constraints), str(wheel),
        "./examples/tabzoo-example-plugin", "pytest", external=True,
    )
    session.run(str(venv / "bin" / "tabzoo"), "conformance", "example", external=True)
    session.run(
        py, "-m", "pytest", "examples/tabzoo-example-plugin/tests", "-q", "-p", "no:cacheprovider",
        external=True,
    )


@nox.session
def conformance(session: nox.Session) -> None:
    """Every workspace package in one venv; the kit over every installed plugin."""
    _sync(session, "--all-packages")
    session.run("tabzoo", "conformance", "all", *session.posargs)


@nox.session
def thorough(session: nox.Session) -> None:
    """The conformance kit's thorough search over every installed case (nightly; slow): contexts
    up to 4,096 rows and 5x the examples (issue 23)."""
    _sync(session, "--all-packages")
    session.run("tabzoo", "conformance", "all", "--thorough", *session.posargs,
                env={"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"})


@nox.session
def typing(session: nox.Session) -> None:
    """mypy over the core's sources."""
    _sync(session, "--package=tabzoo-core", "--group=test")
    session.install("mypy>=1.11")
    session.run("mypy", "packages/core/src/tabzoo", "--ignore-missing-imports", *session.posargs)


@nox.session
def bench(session: nox.Session) -> None:
    """The benchmarks that need only the workspace; each prints JSON (pass --out via posargs)."""
    _sync(session, "--all-packages")
    session.run("python", "benchmarks/kernels.py", *session.posargs)
