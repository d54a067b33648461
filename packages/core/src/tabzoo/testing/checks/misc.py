"""Checkpoint round trip and bad-input validation (apply to every model)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tabzoo.errors import TabzooInputError
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import MASKED_PROTOCOLS, CheckResult, ConformanceCase
from tabzoo.testing.checks._common import (
    claims_missing,
    discrepancy,
    make_rows,
    query_mask_for,
    skipped,
)

MIN_MESSAGE = 20  # characters: "what was wrong and the fix" does not fit in fewer


def _probe_args(case: ConformanceCase, seed: int, *, labels_from: int | None = None) -> tuple[Any, ...]:
    """A fixed input for this case (the forward's positional arguments after ``model``).

    ``labels_from``: keep the features of ``seed`` but take the context labels of another seed
    (a new context of the same shapes)."""
    if case.protocol == "relational":
        from tabzoo.testing.checks.relational import database_for

        return database_for(case, seed)
    sizes = {"batch": 2, "n_context": max(6, case.n_classes * 2), "n_query": 4, "n_features": case.n_features}
    x, y = make_rows(case, {"sizes": sizes, "data_seed": seed, "missing": claims_missing(case)})
    nc = sizes["n_context"]
    if labels_from is not None:
        _, y2 = make_rows(case, sizes, labels_from)
        y = y.clone()
        y[:, :nc] = y2[:, :nc]
    if case.protocol in MASKED_PROTOCOLS:
        return x, y, query_mask_for(case, x, nc)
    return x, y, nc


def _probe(case: ConformanceCase, seed: int, *, labels_from: int | None = None) -> Callable[[Any], Any]:
    """``model -> outputs`` on a fixed input (every output the case exposes)."""
    args = _probe_args(case, seed, labels_from=labels_from)
    return lambda model: _run_probe(case, model, args)


def _run_probe(case: ConformanceCase, model: Any, args: tuple[Any, ...]) -> Any:
    """The case's forward on ``args`` (and ``context_repr`` when given), without gradients."""
    out = _no_grad(case.call, model, *args)
    if case.context_repr is not None and case.protocol != "relational":
        x, y = args[0], args[1]
        nc = args[2] if case.protocol == "in-context" else int((~args[2][0].reshape(x.shape[1], -1).any(-1)).sum())
        return (out, _no_grad(case.context_repr, model, x, y, nc))
    return out


def _no_grad(fn: Callable[..., Any], *args: Any) -> Any:
    with torch.no_grad():
        return fn(*args)


def _replay_of(check: str, model_seed: int, **extra: Any) -> dict[str, Any]:
    import json

    spec = {"check": check, "model_seed": model_seed, **extra}
    return {"model_seed": model_seed, **extra, "replay": json.dumps(spec, sort_keys=True, separators=(",", ":"))}


def check_checkpoint_roundtrip(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                               replay: dict[str, Any] | None = None) -> CheckResult:
    """Save then load (into a model built from ANOTHER seed) gives identical outputs.

    An ``nn.Module`` goes through :func:`~tabzoo.checkpoint.save_checkpoint` /
    :func:`~tabzoo.checkpoint.load_model` (the config must survive too). Any other model must
    offer a state_dict-like protocol, ``state_dict() -> Mapping[str, Tensor]`` and
    ``load_state_dict(mapping)``; its state is written with safetensors and loaded back. A model
    with neither FAILS: a model whose state cannot be saved cannot be shipped."""
    check = cap.CHECKPOINT_ROUNDTRIP
    if case.make_model is None:
        return skipped(check, case, "the case has no model")
    seed = int(replay.get("model_seed", seed)) if replay else seed
    tol = {"tolerance": case.effective_tolerance()}
    repro = {"seed": seed, **_replay_of(check, seed)}

    def fail(message: str, d: float | None = None) -> CheckResult:
        return CheckResult(check, case.name, "failed", d, 0.0 if d is not None else None, repro,
                           f"{check} violated: {message}", tol)

    model = case.build(seed)
    from tabzoo.checkpoint import load_checkpoint, load_model, save_checkpoint
    from tabzoo.errors import CheckpointError

    probe = _probe(case, seed)
    expected = probe(model)
    module = isinstance(model, torch.nn.Module)
    if not module and not (callable(getattr(model, "state_dict", None))
                           and callable(getattr(model, "load_state_dict", None))):
        return fail(f"the model is a {type(model).__name__}, not a torch.nn.Module, and has no state_dict() / "
                    "load_state_dict(mapping) pair; implement that protocol (a mapping of name -> tensor holding "
                    "ALL of its state) so it can be saved and loaded.")
    with tempfile.TemporaryDirectory(prefix="tabzoo-conformance-") as tmp:
        stem = Path(tmp) / case.name
        try:
            state = model if module else dict(model.state_dict())
            if not module and not all(isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
                return fail("state_dict() must map str -> torch.Tensor (safetensors stores nothing else); got "
                            f"{sorted({type(v).__name__ for v in state.values()})}.")
            own = getattr(model, "architecture", None)  # the name the model answers to (load_model checks it)
            arch = case.architecture or (own if isinstance(own, str) else case.name)
            save_checkpoint(stem, state, architecture=arch, config=dict(case.config))
            stored = load_checkpoint(stem)
        except CheckpointError as exc:
            return fail(f"the state could not be saved: {exc}")
        if stored.config != dict(case.config):
            return fail(f"checkpoint round trip changed the config: saved {dict(case.config)}, read {stored.config}.")
        try:
            if module:
                loaded = load_model(stem, build=lambda config: case.make_model(seed + 1))  # type: ignore[misc]
                loaded = loaded.to(case.device).eval()
            else:
                loaded = case.build(seed + 1)
                loaded.load_state_dict({k: v.to(case.device) for k, v in stored.tensors.items()})
        except (CheckpointError, RuntimeError, KeyError, TypeError, ValueError) as exc:
            return fail(f"checkpoint round trip failed to load: {type(exc).__name__}: {exc}")
    d, _ = discrepancy(probe(loaded), expected, case)
    if not d <= 0:
        return fail(f"checkpoint round trip changed outputs by {d:.3g}: some state is not in state_dict() (a plain "
                    "tensor attribute, a non-persistent buffer, a Python-side seed?); register it as a persistent "
                    "buffer / include it in state_dict().", d)
    how = "tabzoo.checkpoint" if module else "state_dict() -> safetensors -> load_state_dict()"
    return CheckResult(check, case.name, "passed", 0.0, 0.0, {"seed": seed},
                       f"identical outputs after save -> load ({how})", tol)


NOT_EXPRESSIBLE = {
    "a label seen only in the query": "the tensor forward never receives query labels (reading them is a label leak); "
                                      "the estimator / tabzoo.table layer rejects it",
    "query columns differ from the context's": "one x tensor [B, N, F] holds context and query rows, so their columns "
                                               "cannot differ; the estimator / tabzoo.table layer rejects it",
}
"""DESIGN §2.1 input classes the tensor forwards cannot express (listed in the result's details)."""


def default_bad_inputs(case: ConformanceCase, model: Any) -> Iterable[tuple[str, Callable[[], Any]]]:
    """The invalid-input classes every model of the case's protocol must reject (DESIGN §2.1).

    In-context and rows: an empty context, a single class (classification), NaN and inf labels,
    +inf / -inf features (NaN features mean "missing" and are valid), mixed label types (a
    label array mixing str and int), wrong ranks, shapes and batch sizes, invalid class labels,
    too many features. Relational: an unknown seed table, a seed key not in its table, a NaT time.
    """
    if case.protocol == "relational":
        yield from _relational_bad_inputs(case, model)
        return
    sizes = {"batch": 2, "n_context": max(6, case.n_classes * 2), "n_query": 3, "n_features": case.n_features}
    x, y = make_rows(case, sizes, 0)
    nc = sizes["n_context"]
    call = case.call
    mixed = np.array([[("a" if (i % 2) else i % max(2, case.n_classes)) for i in range(y.shape[1])]] * y.shape[0],
                     dtype=object)

    def with_y(change: Callable[[torch.Tensor], None], xx: torch.Tensor = x) -> Callable[[], Any]:
        def thunk() -> Any:
            y2 = y.clone()
            change(y2)
            return call(model, xx, y2, q if case.protocol in MASKED_PROTOCOLS else nc)

        return thunk

    def with_x(row: int, value: float) -> Callable[[], Any]:
        def thunk() -> Any:
            x2 = x.clone()
            x2[0, row, 0] = value
            return call(model, x2, y, q if case.protocol in MASKED_PROTOCOLS else nc)

        return thunk

    def setv(row: int, value: float) -> Callable[[torch.Tensor], None]:
        def change(t: torch.Tensor) -> None:
            t[0, row] = value

        return change

    q = query_mask_for(case, x, nc)
    if case.tasks:
        yield from _multitask_bad_inputs(case, model, x, y, q)
    if case.protocol in MASKED_PROTOCOLS:
        yield "empty context (every row is a masked query row)", lambda: call(model, x, y, torch.ones_like(q))
        yield "NaN label in a visible (non-query) row", with_y(setv(0, float("nan")))
        yield "inf label in a visible (non-query) row", with_y(setv(0, float("inf")))
        yield "x is 2-D instead of [batch, rows, features]", lambda: call(model, x[0], y, q)
        yield "query_mask has another shape than y", lambda: call(model, x, y, q[:, :-1])
        yield "mixed label types (an object array of str and int)", lambda: call(model, x, mixed, q)
    else:
        yield "empty context (n_context=0)", lambda: call(model, x, y, 0)
        yield "NaN label in y_context", with_y(setv(0, float("nan")))
        yield "inf label in y_context", with_y(setv(0, float("inf")))
        yield "x is 2-D instead of [batch, rows, features]", lambda: call(model, x[0], y, nc)
        yield "y_context has more rows than x", lambda: call(model, x[:, : nc - 1], y, nc)
        yield "y_context and x disagree on the batch size", lambda: call(model, x[:1], y, nc)
        yield "mixed label types (an object array of str and int)", lambda: call(model, x, mixed, nc)
    yield "+inf feature in a context row", with_x(0, float("inf"))
    yield "-inf feature in a query row", with_x(nc, float("-inf"))
    if case.n_classes:
        def single(t: torch.Tensor) -> None:
            t[:, :nc] = 0.0
            t[:, nc:] = 0.0

        yield "a single class in the context", with_y(single)
        yield "negative class label", with_y(setv(0, -1.0))
        yield "non-integer class label", with_y(setv(0, 0.5))
        max_classes = getattr(model, "max_classes", None)
        if isinstance(max_classes, int):
            yield f"class label {max_classes} >= max_classes", with_y(setv(0, float(max_classes)))
    max_features = getattr(model, "max_features", None)
    if isinstance(max_features, int):
        wide = torch.randn(x.shape[0], x.shape[1], max_features + 1).to(x)
        yield f"{max_features + 1} features > max_features", lambda: call(model, wide, y, q if case.protocol in MASKED_PROTOCOLS else nc)


def _multitask_bad_inputs(case: ConformanceCase, model: Any, x: torch.Tensor, y: torch.Tensor,
                          q: torch.Tensor) -> Iterable[tuple[str, Callable[[], Any]]]:
    """Multitask: a label column too few, a query mask of another task count, invalid class labels
    of a classification task."""
    call = case.call
    yield "y has one task column fewer than the declared tasks", lambda: call(model, x, y[..., :-1], q[..., :-1])
    yield "query_mask has one task column fewer than y", lambda: call(model, x, y, q[..., :-1])
    for t, k in enumerate(case.tasks):
        if k:
            for what, value in (("negative", -1.0), ("non-integer", 0.5), (f"{k} >= its classes", float(k))):
                def thunk(t: int = t, value: float = value) -> Any:
                    y2 = y.clone()
                    y2[0, 0, t] = value
                    return call(model, x, y2, q)

                yield f"class label {what} in a visible row of task {t}", thunk
            break


def _relational_bad_inputs(case: ConformanceCase, model: Any) -> Iterable[tuple[str, Callable[[], Any]]]:
    from tabzoo.testing.checks.relational import database_for

    db, seeds = database_for(case, 0)
    table, key, t = seeds[0]

    def run(bad: list[Any]) -> Callable[[], Any]:
        return lambda: case.call(model, db, bad)

    yield "a seed row in an unknown table", run([("no_such_table", key, t)])
    yield "a seed key that is not in its table", run([(table, -987654321, t)])
    yield "a seed time that is NaT", run([(table, key, np.datetime64("NaT"))])


def check_bad_input(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                    replay: dict[str, Any] | None = None) -> CheckResult:
    """Every invalid input class, the kit's defaults PLUS the case's own ``bad_inputs``, raises
    :class:`TabzooInputError` with a message of at least :data:`MIN_MESSAGE` characters."""
    check = cap.BAD_INPUT
    if case.make_model is None:
        return skipped(check, case, "the case has no model")
    model = case.build(seed)
    classes = list(default_bad_inputs(case, model))
    n_default = len(classes)
    if case.bad_inputs is not None:
        classes += list(case.bad_inputs(model))
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
    details = {"defaults": n_default, "plugin_classes": len(classes) - n_default,
               "not_applicable": NOT_EXPRESSIBLE if case.protocol != "relational" else {}}
    if problems:
        return CheckResult(
            check, case.name, "failed", float(len(problems)), 0.0,
            {"seed": seed, "inputs": [p.split(":")[0] for p in problems], **_replay_of(check, seed)},
            f"{check} violated: bad input not rejected in {len(problems)} of {len(classes)} classes: " + "; ".join(problems),
            details,
        )
    return CheckResult(check, case.name, "passed", 0.0, 0.0, {"seed": seed},
                       f"all {len(classes)} invalid input classes ({n_default} kit defaults + "
                       f"{len(classes) - n_default} of the plugin's) raise TabzooInputError", details)
