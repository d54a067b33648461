"""Run the checks a case's capabilities call for: :func:`check_conformance` and, for pytest,
:func:`parametrize_with_checks` (modelled on scikit-learn's ``estimator_checks``)."""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from tabzoo.errors import TabzooInputError
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import CheckResult, ConformanceCase, ConformanceError

logger = logging.getLogger("tabzoo.testing")

ExpectedFailures = Mapping[str, str] | Mapping[str, Mapping[str, str]] | Callable[[ConformanceCase], Mapping[str, str]]


def checks_for(case: ConformanceCase) -> list[str]:
    """The checks the kit runs for ``case``, in a fixed order.

    Declared properties, plus :data:`~tabzoo.testing.capabilities.UNIVERSAL` ones for every case
    with a model (the relational protocol has no query rows, so there the leak checks are covered
    by time causality instead); :data:`KERNEL_EQUIVALENCE` also runs for model-less cases.
    """
    wanted = set(case.capabilities)
    if case.make_model is not None:
        universal = set(cap.UNIVERSAL)
        if case.protocol == "relational":
            universal -= {cap.LABEL_LEAK, cap.NO_CONTEXT_QUERY_LEAK}
        wanted |= universal
    wanted |= set(case.expected_failures)
    return [p for p in cap.PROPERTIES if p in wanted]


def _expected_for(case: ConformanceCase, expected: ExpectedFailures | None) -> dict[str, str]:
    """Merge the case's own ``expected_failures`` with the caller's (per case or flat)."""
    out = dict(case.expected_failures)
    if expected is None:
        return out
    if callable(expected):
        out.update(expected(case) or {})
        return out
    per_case = expected.get(case.name)  # type: ignore[union-attr]
    if isinstance(per_case, Mapping):
        out.update(per_case)
    elif not any(isinstance(v, Mapping) for v in expected.values()):  # type: ignore[union-attr]
        out.update(expected)  # type: ignore[arg-type]
    return out


def run_check(
    case: ConformanceCase,
    check: str,
    *,
    seed: int = 0,
    max_examples: int = 10,
    expected_failures: Mapping[str, str] | None = None,
) -> CheckResult:
    """Run one check; a crash becomes ``"error"``, an expected failure ``"xfail"`` (with its reason)."""
    from tabzoo.testing.checks import CHECKS
    from tabzoo.testing.checks._common import error_result

    if check not in CHECKS:
        raise TabzooInputError(f"no conformance check {check!r}; known checks: {list(CHECKS)}.")
    start = time.perf_counter()
    try:
        result = CHECKS[check](case, seed=seed, max_examples=max_examples)
    except Exception as exc:  # noqa: BLE001 - a crashing check is reported, not propagated
        logger.debug("check %s on %s crashed", check, case.name, exc_info=True)
        result = error_result(check, case, exc, seed)
    result.details.setdefault("seconds", round(time.perf_counter() - start, 4))
    reason = (expected_failures or {}).get(check)
    if reason:
        if result.status in ("failed", "error"):
            result.message = f"expected failure ({reason}): {result.message}"
            result.status = "xfail"
        elif result.status == "passed":
            result.message = f"XPASS: expected to fail ({reason}) but passed; remove the expectation. {result.message}"
    return result


def check_conformance(
    case: ConformanceCase,
    on_fail: str | None = "raise",
    *,
    checks: Iterable[str] | None = None,
    seed: int = 0,
    max_examples: int = 10,
    expected_failed_checks: ExpectedFailures | None = None,
) -> list[CheckResult]:
    """Run every check ``case`` calls for and return one :class:`CheckResult` per check.

    :param on_fail: ``"raise"``: raise :class:`~tabzoo.testing.ConformanceError` (an
        ``AssertionError`` listing every failure, results attached) when a check fails or errors
        unexpectedly; ``"warn"``: a ``UserWarning`` per such check; ``None``: just return.
    :param checks: run only these checks (default :func:`checks_for`).
    :param expected_failed_checks: ``{check: reason}``, ``{case: {check: reason}}`` or
        ``callable(case) -> {check: reason}``; merged with ``case.expected_failures``.
    """
    if on_fail not in ("raise", "warn", None):
        raise TabzooInputError(f"on_fail={on_fail!r}; use 'raise', 'warn' or None.")
    expected = _expected_for(case, expected_failed_checks)
    names = list(checks) if checks is not None else checks_for(case)
    results = [run_check(case, c, seed=seed, max_examples=max_examples, expected_failures=expected) for c in names]
    bad = [r for r in results if not r.ok]
    if bad and on_fail == "raise":
        raise ConformanceError(
            f"{len(bad)} of {len(results)} conformance checks of {case.name!r} failed:\n"
            + "\n".join(f"  {r}  reproducer={r.reproducer}" for r in bad),
            results,
        )
    if bad and on_fail == "warn":
        for r in bad:
            warnings.warn(f"{r}  reproducer={r.reproducer}", UserWarning, stacklevel=2)
    return results


class ConformanceCheck:
    """A callable ``check(case)`` for one property, as :func:`parametrize_with_checks` yields.

    Calling it runs the check and raises ``AssertionError`` (with the reproducer) on failure,
    ``pytest.skip`` when the check does not apply. Its ``repr`` is the property name.
    """

    def __init__(self, name: str, *, seed: int = 0, max_examples: int = 10) -> None:
        self.name, self.seed, self.max_examples = name, seed, max_examples

    def __repr__(self) -> str:
        return self.name

    def __call__(self, case: ConformanceCase) -> CheckResult:
        result = run_check(case, self.name, seed=self.seed, max_examples=self.max_examples)
        if result.status == "skipped":
            import pytest

            pytest.skip(f"{result.check}: {result.message}")
        if result.status in ("failed", "error"):
            raise AssertionError(f"{result}\nreproducer: {result.reproducer}")
        return result


def parametrize_with_checks(
    cases: Iterable[ConformanceCase],
    *,
    expected_failed_checks: ExpectedFailures | None = None,
    seed: int = 0,
    max_examples: int = 10,
) -> Any:
    """A ``pytest.mark.parametrize("case, check", ...)`` decorator over every (case, check) pair.

    Test ids are ``"<case>-<check>"``. Expected failures (from the case or the argument) become
    ``pytest.mark.xfail(reason=...)``. Use::

        @parametrize_with_checks([my_case()])
        def test_conformance(case, check):
            check(case)
    """
    import pytest

    params = []
    for case in cases:
        expected = _expected_for(case, expected_failed_checks)
        for name in checks_for(case):
            marks = [pytest.mark.xfail(reason=expected[name], strict=False)] if name in expected else []
            check = ConformanceCheck(name, seed=seed, max_examples=max_examples)
            params.append(pytest.param(case, check, id=f"{case.name}-{name}", marks=marks))
    return pytest.mark.parametrize("case, check", params)


CORE_CASE = "core_kernels"


def core_cases() -> list[ConformanceCase]:
    """Cases the core itself supplies: kernel equivalence of every registered backend."""
    return [
        ConformanceCase(
            name=CORE_CASE,
            capabilities=frozenset({cap.KERNEL_EQUIVALENCE}),
            description="every registered kernel backend against the op's reference",
        )
    ]


def find_cases(selector: str = "all", *, include_core: bool = True) -> list[ConformanceCase]:
    """The installed conformance cases named by ``selector``.

    ``"all"``: every plugin case (plus :func:`core_cases` when ``include_core``); otherwise a
    comma-separated list of case names, or of plugin entry-point or distribution names (which
    select every case that plugin registered).

    :raises TabzooInputError: when a name matches nothing; the message lists what is installed.
    """
    from tabzoo.plugins import get_registry

    registry = get_registry()
    entries = registry.items["conformance_cases"]
    plugin_cases = [(e.obj, e.record) for e in entries.values()]
    core = core_cases() if include_core else []
    if selector.strip() == "all":
        return [c for c, _ in plugin_cases] + core
    out: list[ConformanceCase] = []
    for name in (s.strip() for s in selector.split(",") if s.strip()):
        hits = [c for c, r in plugin_cases if name in (c.name, r.name, r.distribution)]
        hits += [c for c in core_cases() if c.name == name]
        if not hits:
            known = sorted({c.name for c, _ in plugin_cases} | {c.name for c in core_cases()})
            raise TabzooInputError(
                f"no conformance case or plugin named {name!r}; installed cases: {known}. Install the "
                "plugin that provides it, or run `tabzoo conformance all`."
            )
        out.extend(c for c in hits if c not in out)
    return out
