"""Determinism that a cache or a global cannot fake (issue 23 item 5).

On one model and one probe input, calls 1..:data:`N_CALLS` must be bit-identical, each followed
by a call on ANOTHER input of the same shapes (new data, or only new context labels) that must
give exactly what a fresh model gives on it (state drift, a warm-up counter, caches keyed on
shapes or values fail here). The probe must also agree

* after its tensors are copied to new memory (outputs that depend on a tensor's address),
* after another input is written into the probe's own memory (a cache keyed on ``data_ptr()``
  returns a stale answer),
* for a model rebuilt from the same seed,
* in a FRESH Python process with another ``PYTHONHASHSEED`` (``hash()`` of a string, ``set``
  order, module-level state). The child process finds the case by
  :attr:`~tabzoo.testing.ConformanceCase.factory`, else among the installed plugin cases; a
  case it cannot find fails (with the fix).

The global RNG is moved before every call, so a model that draws from it differs; the caller's
RNG state is restored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import CheckResult, ConformanceCase
from tabzoo.testing.checks._common import _as_tensor, discrepancy, skipped
from tabzoo.testing.checks.misc import _probe, _probe_args, _replay_of, _run_probe

N_CALLS = 64
"""Calls of one model on one input that must agree (each followed by an interleaved other input)."""


def _seeded_probe(case: ConformanceCase, s: int, data: int) -> torch.Tensor:
    """The probe output of call 1 of a model built from ``s``, flattened (what the child computes)."""
    torch.manual_seed(10_000 + s)
    model = case.build(s)
    torch.manual_seed(20_007)
    return _as_tensor(_probe(case, data)(model)).detach().double().cpu()


def check_determinism(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                      replay: dict[str, Any] | None = None) -> CheckResult:
    """The same seed gives bit-identical outputs across calls, memory, rebuilds and processes."""
    check = cap.DETERMINISM
    if case.make_model is None:
        return skipped(check, case, "the case has no model")
    s = int(replay.get("model_seed", seed)) if replay else seed
    data = int(replay.get("data_seed", s)) if replay else s
    tol = {"tolerance": case.effective_tolerance(), "calls": N_CALLS}

    def fail(d: float, what: str, hint: str) -> CheckResult:
        return CheckResult(check, case.name, "failed", d, 0.0, {"seed": s, **_replay_of(check, s, data_seed=data)},
                           f"{check} violated: outputs differ by {d:.3g} for {what}; {hint}", tol)

    drift = ("the model changes between calls (state drift, running statistics, a counter, unseeded noise): keep "
             "forward free of side effects and seed every draw from the model's seed.")
    stale = ("the model returns stale results after a call (a cache keyed on shapes, values or memory, or state "
             "kept from the previous input); key caches on the data or drop them.")
    with torch.random.fork_rng(devices=[]):
        first = _seeded_probe(case, s, data)
        torch.manual_seed(10_000 + s)
        model = case.build(s)
        probe = _probe(case, data)
        others = [("new data of the same shapes", _probe(case, data + 101))]
        if case.protocol != "relational":
            others.append(("the same rows with a new context (labels)", _probe(case, data, labels_from=data + 202)))
        expected = [other(case.build(s)) for _, other in others]
        for k in range(1, N_CALLS + 1):
            torch.manual_seed(20_000 + 7 * k)  # a model that draws from the global RNG now differs
            d, _ = discrepancy(probe(model), first, case)
            if not d <= 0:
                return fail(d, f"call {k} against call 1 of a model built the same way", drift)
            what, other = others[k % len(others)]
            d, _ = discrepancy(other(model), expected[k % len(others)], case)
            if not d <= 0:
                return fail(d, f"{what} after {k} calls, against a fresh model", stale)
        if case.protocol != "relational":
            failed = _memory(case, model, s, data, first, fail, stale)
            if failed is not None:
                return failed
        torch.manual_seed(30_000 + s)
        d, _ = discrepancy(probe(case.build(s)), first, case)
        if not d <= 0:
            return fail(d, "a model rebuilt with the same seed",
                        "seed every random draw of make_model from its seed (torch.Generator), never the global RNG.")
    from tabzoo.testing.checks.fresh import fresh_process_probe

    child, how = fresh_process_probe(case, s, data)
    if child is None:
        return CheckResult(check, case.name, "failed", None, None, {"seed": s},
                           f"{check} not proven in a fresh process: {how}", tol)
    d, _ = discrepancy(child, first, case)
    if not d <= 0:
        return fail(d, f"a fresh Python process ({how})",
                    "the output depends on process state: Python's hash() of a string (PYTHONHASHSEED), set or dict "
                    "order of hashed keys, id() or a module-level counter; derive everything from the seed and data.")
    return CheckResult(check, case.name, "passed", 0.0, 0.0, {"seed": s},
                       f"bit-identical outputs for calls 1..{N_CALLS} interleaved with other inputs, the input in new "
                       f"memory, a rebuilt model, and a fresh process ({how})", tol)


def _memory(case: ConformanceCase, model: Any, s: int, data: int, first: torch.Tensor,
            fail: Callable[[float, str, str], CheckResult], stale: str) -> CheckResult | None:
    """The probe copied to new memory agrees; another input written into the probe's memory gives
    what a fresh model gives on it."""
    copied = tuple(a.clone() if isinstance(a, torch.Tensor) else a for a in _probe_args(case, data))
    d, _ = discrepancy(_probe_with(case, copied)(model), first, case)
    if not d <= 0:
        return fail(d, "the same input copied to new memory",
                    "the output depends on where the input lives (data_ptr(), id()); compute from the values only.")
    other = _probe_args(case, data + 303)
    for buf, new in zip(copied, other, strict=True):
        if isinstance(buf, torch.Tensor):
            buf.copy_(new)  # the other input, in the probe's own memory
    want = _probe_with(case, other)(case.build(s))
    d, _ = discrepancy(_probe_with(case, copied)(model), want, case)
    if not d <= 0:
        return fail(d, "another input written into the memory of the previous one", stale)
    return None


def _probe_with(case: ConformanceCase, args: tuple[Any, ...]) -> Callable[[Any], Any]:
    return lambda model: _run_probe(case, model, args)
