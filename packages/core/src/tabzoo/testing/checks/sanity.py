"""Output sanity (every model) and feature-order invariance (models that claim it).

``finite_outputs``: on valid generated input every output is finite. Every classification
example (3+ classes) runs twice: as drawn, and with one class (``data_seed % n_classes``)
absent from every row, the case a per-class average turns into 0/0. A case whose ``outputs`` are ``"probabilities"`` must also give values in [0, 1] that sum to
1 over the last axis.

``feature_order_invariance``: one permutation of the feature columns, applied to every row,
leaves every output unchanged (the property of set-based feature encoders).
"""

from __future__ import annotations

from typing import Any

import torch

from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import ROW_PROTOCOLS, CheckResult, ConformanceCase
from tabzoo.testing.checks._common import (
    Outcome,
    _as_tensor,
    discrepancy,
    fresh_rows,
    make_rows,
    run_examples,
    sized,
    skipped,
)

_ROW_PROTOCOLS = ROW_PROTOCOLS


def output_kind(case: ConformanceCase) -> str:
    """``"logits"``, ``"probabilities"`` or ``"values"`` (``"auto"`` resolved by ``n_classes``)."""
    if case.outputs != "auto":
        return case.outputs
    return "logits" if case.n_classes else "values"


def insanity(case: ConformanceCase, outputs: Any) -> tuple[float, str]:
    """How far ``outputs`` are from sane: ``(0.0, "")`` when sane, else ``(amount, what)``.

    Non-finite values give ``inf``; declared probabilities give the largest excursion outside
    [0, 1] or of the class-axis sum from 1."""
    parts = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    worst, what = 0.0, ""
    for part in parts:
        if part is None:
            continue
        t = _as_tensor(part).detach().double()
        if t.numel() == 0:
            continue
        n_bad = int((~torch.isfinite(t)).sum())
        if n_bad:
            return float("inf"), f"{n_bad} of {t.numel()} outputs are NaN or infinite"
        if output_kind(case) == "probabilities" and part is parts[0] and t.dim() >= 1:
            outside = max(float(torch.clamp(-t, min=0).max()), float(torch.clamp(t - 1, min=0).max()))
            off = float((t.sum(-1) - 1).abs().max())
            if max(outside, off) > worst:
                worst = max(outside, off)
                what = (f"probabilities leave [0, 1] by {outside:.3g}" if outside >= off
                        else f"probabilities sum to 1 +- {off:.3g} over the class axis")
    return worst, what


def check_finite_outputs(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                         replay: dict[str, Any] | None = None) -> CheckResult:
    """Every output is finite on valid input (also with a class absent from the context), and
    declared probabilities lie in [0, 1] and sum to 1."""
    check = cap.FINITE_OUTPUTS
    if case.make_model is None:
        return skipped(check, case, "the case has no model")
    if case.protocol == "relational":
        return _relational_finite(case, seed, max_examples, replay)
    tol = case.tolerance()[0] * 10

    def example(spec: dict[str, Any]) -> Outcome:
        nc = spec["sizes"]["n_context"]
        variants = [dict(spec, absent_class=None)]
        k = sized(case, spec).n_classes
        if k >= 3:  # every example also runs with one class absent from every row
            absent = spec.get("absent_class")
            variants.append(dict(spec, absent_class=int(spec["data_seed"]) % k if absent is None else absent))
        for variant in variants:
            x, y = make_rows(case, variant)
            amount, what = insanity(case, fresh_rows(case, variant, x, y, nc))
            if what:
                absent = variant["absent_class"]
                where = f" (class {absent} absent from the context)" if absent is not None else ""
                return Outcome(amount, tol, {"absent_class": absent}, note=what + where)
        return Outcome(0.0, tol, {})

    return run_examples(case, check, example, seed=seed, max_examples=max_examples, replay=replay,
                        control=None, what="outputs are not finite or not probabilities")


def _relational_finite(case: ConformanceCase, seed: int, max_examples: int,
                       replay: dict[str, Any] | None) -> CheckResult:
    from tabzoo.testing.checks.relational import _call, _run, spec_database

    def example(spec: dict[str, Any]) -> Outcome:
        db, seeds = spec_database(case, spec)
        amount, what = insanity(case, _call(case, case.build(spec["model_seed"]), db, seeds))
        return Outcome(amount, 0.0, {}, note=what)

    return _run(case, cap.FINITE_OUTPUTS, example, seed, max_examples, replay, "outputs are not finite")


def check_feature_order_invariance(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                                   replay: dict[str, Any] | None = None) -> CheckResult:
    """Permuting the feature columns (one permutation for all rows) leaves every output unchanged."""
    check = cap.FEATURE_ORDER_INVARIANCE
    if case.protocol not in _ROW_PROTOCOLS or case.make_model is None:
        return skipped(check, case, f"needs a model of the in-context or rows protocol, not {case.protocol!r}")

    def example(spec: dict[str, Any]) -> Outcome:
        x, y = make_rows(case, spec)
        nc, f = spec["sizes"]["n_context"], spec["sizes"]["n_features"]
        given = spec.get("feature_permutation")
        p = torch.as_tensor(given) if given is not None else torch.randperm(
            f, generator=torch.Generator().manual_seed(int(spec["data_seed"]) + 7))
        q1, _ = fresh_rows(case, spec, x, y, nc)
        q2, _ = fresh_rows(case, spec, x[..., p], y, nc)
        d, t = discrepancy(q2, q1, case)
        return Outcome(d, t, {"feature_permutation": p.tolist()})

    return run_examples(case, check, example, seed=seed, max_examples=max_examples, replay=replay,
                        what="outputs changed when the feature columns were permuted")
