"""Isolated sessions: one venv per package with only the core beside it.

    uv run nox                                  # everything CI runs
    uv run nox -s "tests(package='core')"       # one package
    uv run nox -s lint
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
nox.options.sessions = [f"tests(package='{p}')" for p in PACKAGES] + ["third_party", "lint", "typing"]


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
def lint(session: nox.Session) -> None:
    """ruff over every package, the benchmarks and the examples."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", "packages", "benchmarks", "examples", "noxfile.py")


@nox.session(venv_backend="none")
def third_party(session: nox.Session) -> None:
    """Core wheel + the example plugin, NON-editable, in a fresh venv; run the kit there."""
    tmp = Path(session.create_tmp())
    dist, venv = tmp / "dist", tmp / "venv-third-party"
    shutil.rmtree(dist, ignore_errors=True)
    shutil.rmtree(venv, ignore_errors=True)
    session.run("uv", "build", "packages/core", "--wheel", "--out-dir", str(dist), external=True)
    (wheel,) = dist.glob("tabzoo_core-*.whl")
    session.run("uv", "venv", "--python", "3.11", str(venv), external=True)
    py = str(venv / "bin" / "python")
    session.run(
        "uv", "pip", "install", "--python", py, str(wheel), "./examples/tabzoo-example-plugin", "pytest",
        external=True,
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
