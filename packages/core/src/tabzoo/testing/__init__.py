"""tabzoo.testing: the conformance kit (a public API and a pytest plugin).

A plugin hands the kit a :class:`ConformanceCase` (a small config, the callable under test and
the capabilities it claims) through the ``tabzoo_conformance_cases`` hook; the kit runs the
checks those capabilities call for (section 4 of the design)::

    from tabzoo.testing import ConformanceCase, check_conformance, capabilities as cap

    case = ConformanceCase("mine", make_model=lambda seed: build(seed),
                           capabilities=cap.IN_CONTEXT_DEFAULTS)
    results = check_conformance(case)            # raises ConformanceError on a failure

In pytest, :func:`parametrize_with_checks` gives one test per (case, check); from the shell,
``tabzoo conformance NAME|all`` and ``pytest --tabzoo-conformance=NAME|all`` do the same.

Importing this package is cheap: torch and hypothesis load only when a check or strategy is used.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from tabzoo.testing import capabilities

_LAZY = {
    "ConformanceCase": "tabzoo.testing.case",
    "ScalingAxis": "tabzoo.testing.case",
    "CheckResult": "tabzoo.testing.case",
    "ConformanceError": "tabzoo.testing.case",
    "TOLERANCES": "tabzoo.testing.case",
    "check_conformance": "tabzoo.testing.runner",
    "parametrize_with_checks": "tabzoo.testing.runner",
    "checks_for": "tabzoo.testing.runner",
    "run_check": "tabzoo.testing.runner",
    "find_cases": "tabzoo.testing.runner",
    "collect_cases": "tabzoo.testing.runner",
    "replay": "tabzoo.testing.runner",
    "core_cases": "tabzoo.testing.runner",
    "CHECKS": "tabzoo.testing.checks",
    "strategies": "tabzoo.testing.strategies",
    "checks": "tabzoo.testing.checks",
}

__all__ = ["capabilities", *sorted(_LAZY)]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'tabzoo.testing' has no attribute {name!r}")
    mod = import_module(module)
    value = mod if module.endswith("." + name) else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
