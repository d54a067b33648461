"""Determinism, checkpoint round trip and bad-input validation (apply to every model)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import torch

from tabzoo.errors import TabzooInputError
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import CheckResult, ConformanceCase
from tabzoo.testing.checks._common import discrepancy, make_rows, skipped

MIN_MESSAGE = 20  # characters: "what was wrong and the fix" does not fit in fewer


def _probe(case: ConformanceCase, seed: int) -> Callable[[Any], Any]:
    """A fixed input for this case: returns ``model -> outputs`` (every output the case exposes)."""
    if case.protocol == "relational":
        from tabzoo.testing.checks.relational import database_for

        db, seeds = database_for(case, seed)
        return lambda model: _no_grad(case.call, model, db, seeds)
    sizes = {"batch": 2, "n_context": max(6, case.n_classes * 2), "n_query": 4, "n_features": case.n_features}
    x, y = make_rows(case, sizes, seed)
    nc = sizes["n_context"]
    if case.protocol == "rows":
        qmask = torch.zeros(x.shape[:2], dtype=torch.bool, device=x.device)
        qmask[:, nc:] = True
        return lambda model: _no_grad(case.call, model, x, y, qmask)

    def run(model: Any) -> Any:
        out = _no_grad(case.call, model, x, y, nc)
        if case.context_repr is not None:
            return (out, _no_grad(case.context_repr, model, x, y, nc))
        return out

    return run


def _no_grad(fn: Callable[..., Any], *args: Any) -> Any:
    with torch.no_grad():
        return fn(*args)


def check_determinism(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10) -> CheckResult:
    """The same seed gives bit-identical outputs: twice on one model, after the global RNG moved,
    and on a second model built with the same seed. The caller's RNG state is restored."""
    check = cap.DETERMINISM
    if case.make_model is None:
        return skipped(check, case, "the case has no model")
    worst, where = 0.0, ""
    with torch.random.fork_rng(devices=[]):
        for i in range(max(1, min(3, max_examples))):
            s = seed + i
            probe = _probe(case, s)
            torch.manual_seed(10_000 + s)
            model = case.build(s)
            first = probe(model)
            torch.manual_seed(20_000 + s)  # a model that draws from the global RNG now differs
            again = probe(model)
            torch.manual_seed(30_000 + s)
            rebuilt = probe(case.build(s))
            for label, other in (("second call on the same model", again), ("a model rebuilt with the same seed", rebuilt)):
                d, _ = discrepancy(other, first, case)
                if d > worst or d != d:
                    worst, where = d, f"{label} (seed {s})"
            if worst > 0 or worst != worst:
                return CheckResult(
                    check, case.name, "failed", worst, 0.0, {"seed": s},
                    f"{check} violated: outputs differ by {worst:.3g} for {where}; seed every random "
                    "draw from the model's seed (torch.Generator), never from the global RNG.",
                )
    return CheckResult(check, case.name, "passed", 0.0, 0.0, {"seed": seed}, "bit-identical outputs")


def check_checkpoint_roundtrip(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10) -> CheckResult:
    """``save_checkpoint`` then ``load_model`` (into a model built from ANOTHER seed) gives
    identical outputs and the same config: the state dict must hold all of the model's state."""
    check = cap.CHECKPOINT_ROUNDTRIP
    if case.make_model is None:
        return skipped(check, case, "the case has no model")
    model = case.build(seed)
    if not isinstance(model, torch.nn.Module):
        return skipped(check, case, f"the model is a {type(model).__name__}, not a torch.nn.Module")
    from tabzoo.checkpoint import load_checkpoint, load_model, save_checkpoint
    from tabzoo.errors import CheckpointError

    probe = _probe(case, seed)
    expected = probe(model)
    with tempfile.TemporaryDirectory(prefix="tabzoo-conformance-") as tmp:
        stem = Path(tmp) / case.name
        save_checkpoint(stem, model, architecture=case.name, config=dict(case.config))
        stored = load_checkpoint(stem).config
        if stored != dict(case.config):
            return CheckResult(check, case.name, "failed", None, None, {"seed": seed},
                               f"{check} violated: checkpoint round trip changed the config: saved {dict(case.config)}, read {stored}.")
        try:
            loaded = load_model(stem, build=lambda config: case.make_model(seed + 1))  # type: ignore[misc]
        except CheckpointError as exc:
            return CheckResult(check, case.name, "failed", None, None, {"seed": seed},
                               f"{check} violated: checkpoint round trip failed to load: {exc}")
    loaded = loaded.to(case.device).eval()
    d, _ = discrepancy(probe(loaded), expected, case)
    if d > 0 or d != d:
        return CheckResult(
            check, case.name, "failed", d, 0.0, {"seed": seed, "reload_seed": seed + 1},
            f"{check} violated: checkpoint round trip changed outputs by {d:.3g}: some state is not in state_dict() "
            "(a plain tensor attribute or a non-persistent buffer?); register it as a persistent buffer.",
        )
    return CheckResult(check, case.name, "passed", 0.0, 0.0, {"seed": seed}, "identical outputs after save -> load")


def default_bad_inputs(case: ConformanceCase, model: Any) -> Iterable[tuple[str, Callable[[], Any]]]:
    """The invalid-input classes every model of the case's protocol must reject."""
    sizes = {"batch": 2, "n_context": max(6, case.n_classes * 2), "n_query": 3, "n_features": case.n_features}
    x, y = make_rows(case, sizes, 0)
    nc = sizes["n_context"]
    call = case.call
    if case.protocol == "rows":
        q = torch.zeros(x.shape[:2], dtype=torch.bool, device=x.device)
        q[:, nc:] = True

        def with_nan() -> Any:
            y2 = y.clone()
            y2[0, 0] = float("nan")
            return call(model, x, y2, q)

        yield "NaN label in a visible (non-query) row", with_nan
        yield "x is 2-D instead of [batch, rows, features]", lambda: call(model, x[0], y, q)
        yield "query_mask has another shape than y", lambda: call(model, x, y, q[:, :-1])
        return

    def bad_label(value: float, row: int = 0) -> Callable[[], Any]:
        def thunk() -> Any:
            y2 = y.clone()
            y2[0, row] = value
            return call(model, x, y2, nc)

        return thunk

    yield "NaN label in y_context", bad_label(float("nan"))
    yield "inf label in y_context", bad_label(float("inf"))
    yield "x is 2-D instead of [batch, rows, features]", lambda: call(model, x[0], y, nc)
    yield "y_context has more rows than x", lambda: call(model, x[:, : nc - 1], y, nc)
    yield "y_context and x disagree on the batch size", lambda: call(model, x[:1], y, nc)
    if case.n_classes:
        yield "negative class label", bad_label(-1.0)
        yield "non-integer class label", bad_label(0.5)
        max_classes = getattr(model, "max_classes", None)
        if isinstance(max_classes, int):
            yield f"class label {max_classes} >= max_classes", bad_label(float(max_classes))
    max_features = getattr(model, "max_features", None)
    if isinstance(max_features, int):
        wide = torch.randn(x.shape[0], x.shape[1], max_features + 1).to(x)
        yield f"{max_features + 1} features > max_features", lambda: call(model, wide, y, nc)


def check_bad_input(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10) -> CheckResult:
    """Every invalid input class raises :class:`TabzooInputError` with a helpful message."""
    check = cap.BAD_INPUT
    if case.make_model is None:
        return skipped(check, case, "the case has no model")
    model = case.build(seed)
    if case.bad_inputs is not None:
        classes = list(case.bad_inputs(model))
    elif case.protocol == "relational":
        return skipped(check, case, "relational cases must list their invalid inputs with bad_inputs=")
    else:
        classes = list(default_bad_inputs(case, model))
    problems: list[str] = []
    for description, thunk in classes:
        try:
            with torch.no_grad():
                thunk()
        except TabzooInputError as exc:
            if len(str(exc)) < MIN_MESSAGE:
                problems.append(f"{description}: message {str(exc)!r} is too short to name the fix")
        except Exception as exc:  # noqa: BLE001 - any other error is the finding
            problems.append(f"{description}: raised {type(exc).__name__} ({str(exc)[:80]}) instead of TabzooInputError")
        else:
            problems.append(f"{description}: accepted silently")
    if problems:
        return CheckResult(
            check, case.name, "failed", float(len(problems)), 0.0,
            {"seed": seed, "inputs": [p.split(":")[0] for p in problems]},
            f"{check} violated: bad input not rejected in {len(problems)} of {len(classes)} classes: " + "; ".join(problems),
        )
    return CheckResult(check, case.name, "passed", 0.0, 0.0, {"seed": seed},
                       f"all {len(classes)} invalid input classes raise TabzooInputError")
