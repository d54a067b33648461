"""The conformance kit as a pytest plugin (entry point ``pytest11``: ``tabzoo``).

Inert unless ``--tabzoo-conformance=NAME|all`` is given; then every check of every selected
installed case becomes a test item with id ``<case>-<check>``::

    pytest --tabzoo-conformance=all                     # every installed plugin's cases
    pytest --tabzoo-conformance=example --tabzoo-max-examples=25 --tabzoo-xfails=xfails.toml

Options: ``--tabzoo-max-examples N`` (default 10), ``--tabzoo-device DEV`` (default: the
case's), ``--tabzoo-seed S``, ``--tabzoo-xfails FILE`` (JSON or TOML ``case -> check -> reason``;
those checks are marked strict xfail with the reason: one that passes fails until its entry is
removed). As in ``tabzoo conformance``, a skipped check (its property NOT proven) fails unless
``--tabzoo-allow-unproven`` is given (``--tabzoo-strict`` is the default, kept for old command
lines). A plugin whose cases cannot be built gives a failing
item. Loading this module imports neither torch nor hypothesis; they load only when checks run.
"""

from __future__ import annotations

from typing import Any

import pytest

OPTION = "--tabzoo-conformance"


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("tabzoo", "tabzoo conformance kit")
    group.addoption(OPTION, dest="tabzoo_conformance", default=None, metavar="NAME|all",
                    help="run the conformance checks of the installed case(s) NAME (comma-separated) or all")
    group.addoption("--tabzoo-max-examples", dest="tabzoo_max_examples", type=int, default=10, metavar="N",
                    help="examples per property check (default 10)")
    group.addoption("--tabzoo-device", dest="tabzoo_device", default=None, metavar="DEV",
                    help="device for models and inputs, e.g. cuda (default: each case's own)")
    group.addoption("--tabzoo-seed", dest="tabzoo_seed", type=int, default=0, metavar="S", help="base seed (default 0)")
    group.addoption("--tabzoo-strict", dest="tabzoo_strict", action="store_true", default=True,
                    help="(the default) a check that is skipped (not proven) fails")
    group.addoption("--tabzoo-allow-unproven", dest="tabzoo_allow_unproven", action="store_true", default=False,
                    help="a check that is skipped (not proven) is reported as skipped instead of failing")
    group.addoption("--tabzoo-xfails", dest="tabzoo_xfails", default=None, metavar="FILE",
                    help="JSON or TOML file mapping case -> check -> reason: expected failures")


def _selector(config: Any) -> str | None:
    return config.getoption("tabzoo_conformance", None)


def pytest_report_header(config: Any) -> list[str] | None:
    """Name tabzoo-core, the plugins and the kernel backends when the kit is active."""
    if not _selector(config):
        return None
    from tabzoo import __version__
    from tabzoo.plugins import list_plugins

    plugins = ", ".join(
        f"{r.name} ({r.distribution} {r.version}{'' if r.loaded else ', not loaded'})" for r in list_plugins()
    ) or "none"
    try:
        from tabzoo.kernels import list_backends

        backends = ", ".join(f"{b.op}/{b.name}" for b in list_backends()) or "none"
    except Exception as exc:  # noqa: BLE001 - a header must never break the run
        backends = f"unavailable ({type(exc).__name__}: {exc})"
    return [
        f"tabzoo conformance: {_selector(config)} (max examples {config.getoption('tabzoo_max_examples')})",
        f"tabzoo-core {__version__}; plugins: {plugins}",
        f"kernel backends: {backends}",
    ]


class ConformanceFailure(AssertionError):
    """A check failed; the message carries the reproducer."""


class ConformanceItem(pytest.Item):
    """One (case, check) pair."""

    def __init__(self, *, case: Any, check: str, seed: int, max_examples: int, **kw: Any) -> None:
        super().__init__(**kw)
        self.case, self.check, self.seed, self.max_examples = case, check, seed, max_examples

    def runtest(self) -> None:
        from tabzoo.testing.runner import run_check

        result = run_check(self.case, self.check, seed=self.seed, max_examples=self.max_examples)
        self.user_properties.append(("tabzoo_result", result.as_dict()))
        if result.status == "skipped":
            if not self.config.getoption("tabzoo_allow_unproven", False):
                raise ConformanceFailure(f"{result} (not proven counts as failed; --tabzoo-allow-unproven "
                                         "reports it as skipped, or declare why the property does not apply "
                                         "through the case's capabilities)")
            pytest.skip(f"{self.check}: {result.message}")
        if result.status in ("failed", "error"):
            raise ConformanceFailure(f"{result}\n{result.replay or 'reproducer: ' + str(result.reproducer)}")

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        if isinstance(excinfo.value, ConformanceFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "tabzoo-conformance", None, self.name


class ResultItem(pytest.Item):
    """A result known at collection time (a case that could not be built, a registration check)."""

    def __init__(self, *, result: Any, **kw: Any) -> None:
        super().__init__(**kw)
        self.result = result

    def runtest(self) -> None:
        self.user_properties.append(("tabzoo_result", self.result.as_dict()))
        if not self.result.ok:
            raise ConformanceFailure(str(self.result))

    def repr_failure(self, excinfo: Any, style: Any = None) -> Any:
        return str(excinfo.value)

    def reportinfo(self) -> tuple[str, int | None, str]:
        return "tabzoo-conformance", None, self.name


def pytest_collection_modifyitems(session: Any, config: Any, items: list[Any]) -> None:
    """Add one :class:`ConformanceItem` per (selected case, check) when the kit is active."""
    selector = _selector(config)
    if not selector:
        return
    import dataclasses

    from tabzoo.testing._xfails import load_xfails
    from tabzoo.testing.runner import _expected_for, checks_for, collect_cases, registration_results

    device = config.getoption("tabzoo_device")
    xfails = load_xfails(config.getoption("tabzoo_xfails"))
    cases, failures = collect_cases(selector)
    for failure in failures:  # a plugin whose case could not be built: a failing item, not a crash
        items.append(ResultItem.from_parent(session, name=f"{failure.case}-{failure.check}", result=failure))
    for case in cases:
        for done in registration_results(case):
            items.append(ResultItem.from_parent(session, name=f"{case.name}-{done.check}", result=done))
        if device:
            case = dataclasses.replace(case, device=device)
        expected = _expected_for(case, xfails)
        for check in checks_for(case):
            item = ConformanceItem.from_parent(
                session, name=f"{case.name}-{check}", case=case, check=check,
                seed=config.getoption("tabzoo_seed"), max_examples=config.getoption("tabzoo_max_examples"),
            )
            if check in expected:
                item.add_marker(pytest.mark.xfail(reason=expected[check], strict=True))
            items.append(item)
