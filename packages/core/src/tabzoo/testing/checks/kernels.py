"""Kernel equivalence: every registered backend matches the op's reference, outputs and gradients.

Inputs come from the generators in :data:`INPUT_GENERATORS` (one per core op, shapes and masks
drawn from the seed) or from ``case.kernel_inputs`` for ops a plugin adds. Each backend is
called directly with the full keyword dict (so dispatch and forcing play no part); backends that
are unavailable or refuse the inputs are listed in the message, not failed.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

import torch

from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import CheckResult, ConformanceCase
from tabzoo.testing.checks._common import skipped

InputGen = Callable[[int, torch.dtype, str], dict[str, Any]]


def _randn(g: torch.Generator, *shape: int, dtype: torch.dtype, device: str) -> torch.Tensor:
    return torch.randn(*shape, generator=g).to(device, dtype)


def masked_attention_inputs(seed: int, dtype: torch.dtype, device: str) -> dict[str, Any]:
    """q ``[B, H, Nq, Dh]``, k/v ``[B, H, Nk, Dh]`` and a mask drawn from None, a bool matrix,
    a per-head bool tensor or a :class:`~tabzoo.masks.Mask` (context_query, causal, window | global)."""
    rnd, g = random.Random(seed), torch.Generator().manual_seed(seed)
    b, h, nq, dh = rnd.randint(1, 2), rnd.randint(1, 2), rnd.randint(1, 9), rnd.choice([4, 8])
    kind = rnd.choice(["none", "bool", "bool4d", "context_query", "causal", "window"])
    nk = nq if kind in ("context_query", "causal", "window") else rnd.randint(1, 9)
    mask: Any = None
    if kind == "bool":
        mask = torch.rand(nq, nk, generator=g) < 0.6
    elif kind == "bool4d":
        mask = torch.rand(b, h, nq, nk, generator=g) < 0.6
    elif kind != "none":
        from tabzoo import masks

        mask = {
            "context_query": lambda: masks.context_query(max(1, nq // 2)),
            "causal": masks.causal,
            "window": lambda: masks.window(1) | masks.global_tokens(1),
        }[kind]()
    return {
        "q": _randn(g, b, h, nq, dh, dtype=dtype, device=device),
        "k": _randn(g, b, h, nk, dh, dtype=dtype, device=device),
        "v": _randn(g, b, h, nk, dh, dtype=dtype, device=device),
        "mask": mask.to(device) if isinstance(mask, torch.Tensor) else mask,
        "scale": rnd.choice([None, 0.5]),
    }


def linear_attention_inputs(seed: int, dtype: torch.dtype, device: str) -> dict[str, Any]:
    """q/k/v ``[B, H, N, Dh]`` and ``1 <= n_context <= N``."""
    rnd, g = random.Random(seed), torch.Generator().manual_seed(seed)
    b, h, n, dh = rnd.randint(1, 2), rnd.randint(1, 2), rnd.randint(2, 12), rnd.choice([4, 8])
    return {
        "q": _randn(g, b, h, n, dh, dtype=dtype, device=device),
        "k": _randn(g, b, h, n, dh, dtype=dtype, device=device),
        "v": _randn(g, b, h, n, dh, dtype=dtype, device=device),
        "n_context": rnd.randint(1, n),
        "eps": 1e-6,
    }


def selective_scan_inputs(seed: int, dtype: torch.dtype, device: str) -> dict[str, Any]:
    """x, delta ``[batch, L, D]`` (delta > 0), A ``[D, N]`` (< 0), B, C ``[batch, L, N]``, D ``[D]``."""
    rnd, g = random.Random(seed), torch.Generator().manual_seed(seed)
    b, length, d, n = rnd.randint(1, 2), rnd.randint(1, 12), rnd.randint(1, 6), rnd.randint(1, 4)
    return {
        "x": _randn(g, b, length, d, dtype=dtype, device=device),
        "delta": torch.nn.functional.softplus(_randn(g, b, length, d, dtype=torch.float32, device=device)).to(dtype),
        "A": -torch.exp(_randn(g, d, n, dtype=torch.float32, device=device)).to(dtype),
        "B": _randn(g, b, length, n, dtype=dtype, device=device),
        "C": _randn(g, b, length, n, dtype=dtype, device=device),
        "D": rnd.choice([None, _randn(g, d, dtype=dtype, device=device)]),
        "reverse": rnd.random() < 0.5,
    }


def causal_conv1d_inputs(seed: int, dtype: torch.dtype, device: str) -> dict[str, Any]:
    """x ``[batch, L, D]``, weight ``[D, K]``, bias ``[D]`` or None, mask ``[batch, L]`` (zeros
    included) or None, either direction, SiLU or none."""
    rnd, g = random.Random(seed), torch.Generator().manual_seed(seed)
    b, length, d, k = rnd.randint(1, 2), rnd.randint(1, 12), rnd.randint(1, 6), rnd.randint(1, 4)
    mask = (torch.rand(b, length, generator=g) > 0.3).to(device=device, dtype=dtype)
    return {
        "x": _randn(g, b, length, d, dtype=dtype, device=device),
        "weight": _randn(g, d, k, dtype=dtype, device=device),
        "bias": rnd.choice([None, _randn(g, d, dtype=dtype, device=device)]),
        "reverse": rnd.random() < 0.5,
        "activation": rnd.choice([None, "silu"]),
        "mask": rnd.choice([None, mask]),
    }


def gathered_attention_inputs(seed: int, dtype: torch.dtype, device: str) -> dict[str, Any]:
    """qkv ``[T, 3 H Dh]``; the tokens split into rows (some tokens in none), each row's queries
    ``q_tok [R, Qm]`` and keys ``k_tok [R, Km]`` drawn from all tokens (shared between rows; a row
    may have none), ``-1`` padded."""
    rnd, g = random.Random(seed), torch.Generator().manual_seed(seed)
    t, h, dh = rnd.randint(2, 14), rnd.randint(1, 2), rnd.choice([2, 4])
    order = torch.randperm(t, generator=g).tolist()
    r = rnd.randint(1, 4)
    qm, km = rnd.randint(1, 4), rnd.randint(1, 6)
    q_tok = torch.full((r, qm), -1, dtype=torch.int64)
    k_tok = torch.full((r, km), -1, dtype=torch.int64)
    for i in range(r):
        for j in range(qm):
            if order and rnd.random() < 0.8:
                q_tok[i, j] = order.pop()
        for j in range(km):
            if rnd.random() < 0.7:
                k_tok[i, j] = rnd.randrange(t)
    return {"qkv": _randn(g, t, 3 * h * dh, dtype=dtype, device=device), "q_tok": q_tok.to(device),
            "k_tok": k_tok.to(device), "n_heads": h, "scale": rnd.choice([None, 0.5])}


def bimamba_inner_inputs(seed: int, dtype: torch.dtype, device: str) -> dict[str, Any]:
    """x, z ``[batch, L, E]``, gate ``[batch, L]`` in [0, 1) with zeros, open_ = ``gate > 0``, and
    each direction's conv, projections, ``A_log``, ``D`` (:data:`tabzoo.kernels.bimamba.PARAMS`)."""
    rnd, g = random.Random(seed), torch.Generator().manual_seed(seed)
    b, length, e = rnd.randint(1, 2), rnd.randint(1, 10), rnd.randint(1, 6)
    k, r, n = rnd.randint(1, 4), rnd.randint(1, 2), rnd.randint(1, 4)
    gate = torch.rand(b, length, generator=g) * (torch.rand(b, length, generator=g) > 0.2)
    out: dict[str, Any] = {"x": _randn(g, b, length, e, dtype=dtype, device=device),
                           "z": _randn(g, b, length, e, dtype=dtype, device=device),
                           "gate": gate.to(device, dtype), "open_": (gate > 0).to(device, dtype)}
    for s in ("f", "b"):
        out.update({f"conv_weight_{s}": _randn(g, e, k, dtype=dtype, device=device),
                    f"conv_bias_{s}": _randn(g, e, dtype=dtype, device=device),
                    f"x_proj_{s}": (0.5 * torch.randn(r + 2 * n, e, generator=g)).to(device, dtype),
                    f"dt_proj_{s}": (0.5 * torch.randn(e, r, generator=g)).to(device, dtype),
                    f"dt_bias_{s}": _randn(g, e, dtype=dtype, device=device),
                    f"A_log_{s}": (0.5 * torch.randn(e, n, generator=g)).to(device, dtype),
                    f"D_{s}": _randn(g, e, dtype=dtype, device=device)})
    return out


INPUT_GENERATORS: dict[str, InputGen] = {
    "bimamba_inner": bimamba_inner_inputs,
    "gathered_attention": gathered_attention_inputs,
    "causal_conv1d": causal_conv1d_inputs,
    "masked_attention": masked_attention_inputs,
    "linear_attention": linear_attention_inputs,
    "selective_scan": selective_scan_inputs,
}


def _generators() -> dict[str, InputGen]:
    """The core ops' generators, plus those the stateful linear-attention pair ships with."""
    from tabzoo.kernels.linear_state import EXAMPLE_INPUTS

    return {**INPUT_GENERATORS, **EXAMPLE_INPUTS}


def _grads(fn: Callable[..., Any], inputs: dict[str, Any], seed: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Output and gradients of ``sum(out * cotangent)`` w.r.t. every floating tensor input."""
    leaves = {
        k: v.detach().clone().requires_grad_(True)
        for k, v in inputs.items()
        if isinstance(v, torch.Tensor) and v.is_floating_point()
    }
    call = {**inputs, **leaves}
    result = fn(**call)
    # an op may return several tensors (linear_attention_state -> (S, z)): compare them flattened
    parts = list(result) if isinstance(result, tuple | list) else [result]
    out = torch.cat([p.reshape(-1).float() for p in parts]).to(parts[0].dtype)
    g = torch.Generator().manual_seed(seed + 7)
    cot = torch.randn(out.shape, generator=g).to(out.device, out.dtype)
    grads = torch.autograd.grad((out * cot).sum(), list(leaves.values()), allow_unused=True)
    return out.detach(), {k: (gr if gr is not None else torch.zeros_like(leaves[k])) for k, gr in zip(leaves, grads, strict=True)}


def _diff(a: torch.Tensor, b: torch.Tensor, atol: float, rtol: float) -> tuple[float, float]:
    a64, b64 = a.detach().double().cpu(), b.detach().double().cpu()
    d = torch.nan_to_num((a64 - b64).abs(), nan=float("inf"))
    return (float(d.max()) if d.numel() else 0.0), atol + rtol * (float(b64.abs().max()) if b64.numel() else 0.0)


def check_kernel_equivalence(case: ConformanceCase, *, seed: int = 0, max_examples: int = 10,
                             replay: dict[str, Any] | None = None) -> CheckResult:
    """Every registered non-reference backend of ``case.kernel_ops`` (default: all ops) matches the
    reference in outputs and in gradients of all floating inputs, within the dtype tolerance."""
    check = cap.KERNEL_EQUIVALENCE
    from tabzoo.kernels import list_backends, list_ops

    generators: dict[str, InputGen] = {**_generators(), **dict(case.kernel_inputs)}
    ops = list(case.kernel_ops) if case.kernel_ops is not None else list_ops()
    if replay:
        ops = [replay["op"]]
    dtype = getattr(torch, case.dtype)
    atol, rtol = case.tolerance(scale=10.0)  # several reductions: 10x the elementwise tolerance
    compared, notes, worst = 0, [], (0.0, 1.0)
    for op in ops:
        backends = {b.name: b for b in list_backends(op)}
        reference = backends.pop("reference", None)
        if reference is None:
            notes.append(f"{op}: no reference backend registered")
            continue
        if op not in generators:
            notes.append(f"{op}: no input generator (give case.kernel_inputs[{op!r}])")
            continue
        for name, backend in sorted(backends.items()):
            if replay and name != replay.get("backend"):
                continue
            refused: list[str] = []
            for i in range(1 if replay else max_examples):
                ex_seed = int(replay["data_seed"]) if replay else seed * 1000 + i
                inputs = generators[op](ex_seed, dtype, case.device)
                reasons = backend.reasons(inputs)
                if reasons:
                    refused = reasons
                    continue
                out_r, grads_r = _grads(reference.fn, inputs, ex_seed)
                out_b, grads_b = _grads(backend.fn, inputs, ex_seed)
                compared += 1
                parts = [("output", *_diff(out_b, out_r, atol, rtol))] if out_b.shape == out_r.shape else [
                    ("output shape", float("inf"), 0.0)]
                parts += [(f"grad of {k}", *_diff(grads_b[k], grads_r[k], atol, rtol)) for k in grads_r]
                for what, d, t in parts:
                    if not d <= t:
                        shapes = {k: list(v.shape) for k, v in inputs.items() if isinstance(v, torch.Tensor)}
                        mask = inputs.get("mask")
                        return CheckResult(
                            check, case.name, "failed", d, t,
                            {"seed": ex_seed, "data_seed": ex_seed, "op": op, "backend": name, "sizes": shapes,
                             "replay": json.dumps({"check": check, "op": op, "backend": name, "data_seed": ex_seed},
                                                  sort_keys=True, separators=(",", ":")),
                             "mask": repr(mask) if not isinstance(mask, torch.Tensor) else "bool tensor",
                             "generator": f"{generators[op].__module__}.{generators[op].__name__}"},
                            f"{check} violated: {op}/{name} {what} differs from the reference by "
                            f"{d:.3g} > tolerance {t:.3g} ({case.dtype}) at shapes {shapes}, seed {ex_seed}.",
                        )
                    if d / max(t, 1e-30) > worst[0] / max(worst[1], 1e-30):
                        worst = (d, t)
            if refused:
                notes.append(f"{op}/{name} refused some inputs: {refused[0]}")
    if compared == 0:
        return skipped(check, case, "no backend besides the reference could run here" + (
            f" ({'; '.join(notes)})" if notes else ""))
    note = f"; {'; '.join(notes)}" if notes else ""
    return CheckResult(check, case.name, "passed", worst[0], worst[1], {"seed": seed, "ops": ops},
                       f"{compared} comparisons, worst {worst[0]:.3g} <= {worst[1]:.3g}{note}")

