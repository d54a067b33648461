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
            universal -= {cap.LABEL_LEAK, cap.NO_CONTEXT_QUERY_LEAK, cap.BATCH_INDEPENDENCE}
        if case.protocol == "multitask":  # every multitask model is held to its task properties
            universal |= {cap.TASK_ISOLATION, cap.TASK_MASK}
        wanted |= universal
    wanted |= set(case.expected_failures)
    return [p for p in cap.PROPERTIES if p in wanted]


def _expected_for(case: ConformanceCase, expected: ExpectedFailures | None) -> dict[str, str]:
    """Merge the case's own ``expected_failures`` with the caller's (per case or flat)."""
    out = dict(case.expected_failures)
    if expected is None:
        return out
    out = _merge_expected(out, case, expected)
    from tabzoo.testing.case import is_reason, links_test

    short = {k: v for k, v in out.items() if not (is_reason(v) and links_test(v))}
    if short:
        raise TabzooInputError(f"expected failures of {case.name!r} need a reason of at least one sentence saying why "
                               "and naming the test that shows the failure ('... shown by tests/test_x.py::test_y'); "
                               f"got {short}.")
    return out


def _merge_expected(out: dict[str, str], case: ConformanceCase, expected: ExpectedFailures) -> dict[str, str]:
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
    replay: Mapping[str, Any] | None = None,
) -> CheckResult:
    """Run one check; a crash becomes ``"error"``, an expected failure ``"xfail"`` (with its reason).
    ``replay``: a reproducer's replay spec; the check runs exactly that example again."""
    from tabzoo.testing.checks import CHECKS
    from tabzoo.testing.checks._common import error_result

    if check not in CHECKS:
        raise TabzooInputError(f"no conformance check {check!r}; known checks: {list(CHECKS)}.")
    start, cpu = time.perf_counter(), time.process_time()
    try:
        kwargs: dict[str, Any] = {"replay": dict(replay)} if replay else {}
        result = CHECKS[check](case, seed=seed, max_examples=max_examples, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a crashing check is reported, not propagated
        logger.debug("check %s on %s crashed", check, case.name, exc_info=True)
        result = error_result(check, case, exc, seed)
    if result.status in ("failed", "error"):
        result.reproducer.setdefault("seed", seed)  # every failure can be rerun (CheckResult.rerun)
    result.details.setdefault("seconds", round(time.perf_counter() - start, 4))
    result.details.setdefault("cpu_seconds", round(time.process_time() - cpu, 4))  # this process only, not a fresh worker
    result.details.setdefault("tolerance", case.effective_tolerance())
    reason = (expected_failures or {}).get(check)
    if reason:
        result.details["expected_failure"] = reason
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
    results = [] if checks is not None else registration_results(case)
    results += [run_check(case, c, seed=seed, max_examples=max_examples, expected_failures=expected) for c in names]
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

    Calling it runs the check and raises ``AssertionError`` (with the reproducer) on failure. A
    skipped check is NOT proven and fails too, unless the case waives it (``case.waivers``: the
    check with its reason, e.g. a GPU-only kernel check on a CPU machine): then it is skipped with
    ``waived: <reason>``. Its ``repr`` is the property name.
    """

    def __init__(self, name: str, *, seed: int = 0, max_examples: int = 10) -> None:
        self.name, self.seed, self.max_examples = name, seed, max_examples

    def __repr__(self) -> str:
        return self.name

    def __call__(self, case: ConformanceCase) -> CheckResult:
        result = run_check(case, self.name, seed=self.seed, max_examples=self.max_examples)
        if result.status == "skipped":
            reason = case.waivers.get(self.name)
            if reason is None:
                raise AssertionError(
                    f"{result} -- a skipped check is not proven. If it cannot run here (e.g. it needs a GPU), "
                    f"declare ConformanceCase(waivers={{{self.name!r}: '<why it cannot be proven here>'}}); if it does "
                    "not apply to the model, do not claim the capability.")
            import pytest

            pytest.skip(f"waived: {reason} ({result.check}: {result.message})")
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
    strict ``pytest.mark.xfail(reason=...)`` (one that passes fails). Use::

        @parametrize_with_checks([my_case()])
        def test_conformance(case, check):
            check(case)
    """
    import pytest

    params = []
    for case in cases:
        expected = _expected_for(case, expected_failed_checks)
        for name in checks_for(case):
            marks = [pytest.mark.xfail(reason=expected[name], strict=True)] if name in expected else []
            check = ConformanceCheck(name, seed=seed, max_examples=max_examples)
            params.append(pytest.param(case, check, id=f"{case.name}-{name}", marks=marks))
    return pytest.mark.parametrize("case, check", params)


REGISTRATION = "registration"
"""The pseudo-check that reports a case that could not be built or disagrees with its architecture."""


def registration_results(case: ConformanceCase) -> list[CheckResult]:
    """``ArchitectureSpec.capabilities`` must equal the case's (the spec named ``case.architecture``,
    else the one named like the case, if registered). One ``registration`` result, or none when
    no architecture is involved."""
    name = case.architecture or case.name
    try:
        from tabzoo.plugins import get_registry

        entry = get_registry().items["architectures"].get(name)
    except Exception as exc:  # noqa: BLE001 - a broken registry is reported by `tabzoo plugins`
        logger.debug("registry unavailable: %s", exc)
        entry = None
    if entry is None:
        if case.architecture is None:
            return []
        return [CheckResult(REGISTRATION, case.name, "failed", reproducer={"architecture": name},
                            message=f"the case tests architecture {name!r}, which is not registered; register it "
                                    "with tabzoo_register_architectures or fix ConformanceCase.architecture.")]
    # the universal properties are checked for every case whether claimed or not, so a claim of one
    # on one side only (e.g. a spec written before kit v3 added finite_outputs) is no disagreement
    spec_caps = frozenset(getattr(entry.obj, "capabilities", frozenset())) | cap.UNIVERSAL
    case_caps = case.capabilities | cap.UNIVERSAL
    if spec_caps != case_caps:
        only_spec, only_case = sorted(spec_caps - case_caps), sorted(case_caps - spec_caps)
        return [CheckResult(
            REGISTRATION, case.name, "failed", float(len(only_spec) + len(only_case)), 0.0, {"architecture": name},
            f"ArchitectureSpec({name!r}).capabilities and the case's capabilities differ: only the spec claims "
            f"{only_spec}, only the case claims {only_case}; declare one set in both (what is claimed is checked).",
            {"spec": sorted(spec_caps), "case": sorted(case_caps)},
        )]
    return [CheckResult(REGISTRATION, case.name, "passed", 0.0, 0.0, {"architecture": name},
                        f"ArchitectureSpec({name!r}) claims exactly the case's {len(spec_caps)} capabilities")]


def replay(case: ConformanceCase, spec: str | Mapping[str, Any]) -> CheckResult:
    """Run exactly the example of a reproducer's ``replay`` (a JSON string or dict) again.

    Example: ``replay(case, result.reproducer["replay"])`` gives the same discrepancy as ``result``.
    """
    import json

    data = json.loads(spec) if isinstance(spec, str) else dict(spec)
    check = data.get("check")
    if check not in cap.PROPERTIES:
        raise TabzooInputError(f"the replay spec names check {check!r}; it must be one of {list(cap.PROPERTIES)} "
                               "(copy the 'replay' JSON of a failed result whole).")
    seed = data.get("model_seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TabzooInputError(f"the replay spec's model_seed must be a whole number, got {seed!r} (copy the "
                               "'replay' JSON of a failed result whole).")
    return run_check(case, check, seed=seed, replay=data)


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


def _as_case(obj: Any) -> ConformanceCase:
    """A registered object as a case: a :class:`ConformanceCase`, or a factory returning one."""
    if isinstance(obj, ConformanceCase):
        return obj
    if callable(obj):
        made = obj()
        if isinstance(made, ConformanceCase):
            return made
        raise TabzooInputError(f"the registered case factory returned a {type(made).__name__}, not a ConformanceCase.")
    raise TabzooInputError(f"registered a {type(obj).__name__} as a conformance case; register a "
                           "tabzoo.testing.ConformanceCase (or a function returning one).")


def _record_failures(records: Iterable[Any]) -> list[CheckResult]:
    """Plugins whose loading or hooks failed: each a failed ``registration`` result."""
    out = []
    for record in records:
        errors = [e for e in ([getattr(record, "error", None)] + list(getattr(record, "errors", None) or [])) if e]
        for error in dict.fromkeys(str(e) for e in errors):
            out.append(_failed_registration(getattr(record, "name", "?"), getattr(record, "distribution", "?"),
                                            getattr(record, "version", "?"), error))
    return out


def _failed_registration(plugin: str, distribution: str, version: str, error: str) -> CheckResult:
    return CheckResult(
        REGISTRATION, f"plugin:{plugin}", "failed", reproducer={"plugin": plugin, "distribution": distribution},
        message=f"plugin {plugin!r} ({distribution} {version}) could not provide its cases: {error}",
    )


def _case_failures(registry: Any, names: list[str] | None) -> tuple[list[CheckResult], set[str]]:
    """Failed ``registration`` results for the cases that could not be built or registered, as the
    plugin manager records them (:meth:`PluginRegistry.case_failures`). A plugin whose other names
    are ambiguous or broken (an architecture also claimed by another distribution, say) still has
    its cases checked: only failures that concern cases are reported here."""
    if not hasattr(registry, "case_failures"):  # a registry without the API: every recorded error
        records = [r for r in registry.records if names is None or {r.name, r.distribution} & set(names)]
        return (_record_failures(records),
                {n for r in records for n in (r.name, r.distribution) if getattr(r, "error", None)})
    out, matched = [], set()
    for f in registry.case_failures():
        ids = {f.case, f.plugin, f.distribution}
        if names is not None and not ids & set(names):
            continue
        matched |= ids & set(names or [])
        out.append(_failed_registration(f.plugin, f.distribution, f.version, f"{f.stage} of case {f.case!r}: {f.error}"))
    return out, matched


def collect_cases(selector: str = "all", *, include_core: bool = True) -> tuple[list[ConformanceCase], list[CheckResult]]:
    """Like :func:`find_cases`, but never raises for a broken plugin: returns the cases that
    could be built, and one failed ``registration`` result per plugin or case that could not
    (a hook or factory that raised, an invalid case, missing minimum capabilities).

    :raises TabzooInputError: only when a selected name matches nothing at all.
    """
    from tabzoo.plugins import get_registry

    registry = get_registry()
    names = None if selector.strip() == "all" else [s.strip() for s in selector.split(",") if s.strip()]
    cases: list[ConformanceCase] = []
    failures: list[CheckResult] = []
    matched: set[str] = set()
    for key, entry in registry.items["conformance_cases"].items():
        record = entry.record
        ids = {key, getattr(entry.obj, "name", key), record.name, record.distribution}
        if names is not None and not ids & set(names):
            continue
        matched |= ids & set(names or [])
        try:
            cases.append(_as_case(entry.obj))
        except Exception as exc:  # noqa: BLE001 - a broken case is a finding, not a crash
            failures.append(CheckResult(
                REGISTRATION, str(key), "failed", reproducer={"plugin": record.name},
                message=f"case {key!r} of plugin {record.name!r} could not be built: {type(exc).__name__}: {exc}"))
    case_failures, failed_ids = _case_failures(registry, names)
    failures += case_failures
    matched |= failed_ids
    for core in core_cases() if include_core else []:
        if names is None or core.name in names:
            cases.append(core)
            matched.add(core.name)
    if names is not None:
        missing = [n for n in names if n not in matched]
        if missing:
            known = sorted({c.name for c in cases} | set(registry.items["conformance_cases"]) | {CORE_CASE})
            raise TabzooInputError(
                f"no conformance case or plugin named {missing[0]!r}; installed cases: {known}. Install the "
                "plugin that provides it, or run `tabzoo conformance all`."
            )
    return cases, failures
