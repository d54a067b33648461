"""MultiTab-Net's short-key attention backend (``masked_attention/multitab_short_keys``): the same
outputs and gradients as the core's reference and its sdpa path (rounding only), chosen only
inside MultiTab-Net's encoder and only where it wins, refusing everything else with a reason."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo import kernels
from tabzoo.kernels.attention import attention_reference
from tabzoo.masks import context_query, task_tokens
from tabzoo_multitab import MultiTabConfig, MultiTabNet
from tabzoo_multitab.attention import MIN_PROBLEMS, NAME, short_key_attention, short_keys

OP = "masked_attention"


def _qkv(b: int, h: int, nq: int, nk: int, d: int, seed: int, dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, n, d, generator=g, dtype=dtype).requires_grad_() for n in (nq, nk, nk)]


@given(b=st.integers(1, 3), h=st.integers(1, 3), nq=st.integers(1, 12), nk=st.integers(1, 12), d=st.integers(1, 6),
       kind=st.sampled_from(["none", "bool", "task", "context"]), scale=st.sampled_from([None, 0.3]),
       seed=st.integers(0, 50))
def test_matches_the_reference_in_outputs_and_gradients(b, h, nq, nk, d, kind, scale, seed) -> None:
    if kind in ("task", "context"):  # token-role masks are square
        nq = nk
    q, k, v = _qkv(b, h, nq, nk, d, seed)
    g = torch.Generator().manual_seed(seed + 1)
    mask = {"none": None, "bool": torch.rand(nq, nk, generator=g) < 0.5,  # rows with no key included
            "task": task_tokens(max(1, nk - 2), min(2, nk - 1), "T-/->T") if nk > 1 else None,
            "context": context_query(max(1, nk // 2))}[kind]
    got = short_key_attention(q, k, v, mask, scale)
    want = attention_reference(q, k, v, mask, scale)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)  # the reference computes in fp32
    w = torch.randn(got.shape, generator=g, dtype=got.dtype)
    grads = torch.autograd.grad((got * w).sum(), (q, k, v))
    wants = torch.autograd.grad((want * w).sum(), (q, k, v))
    for a, e in zip(grads, wants, strict=True):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-5)
    assert all(torch.isfinite(a).all() for a in grads)


def test_a_row_that_reads_no_key_is_exactly_zero() -> None:
    q, k, v = _qkv(2, 1, 3, 4, 2, seed=0)
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[1] = False
    out = short_key_attention(q, k, v, mask)
    assert bool((out[:, :, 1] == 0).all()) and bool((out[:, :, 0] != 0).all())


def _inputs(b: int = 64, h: int = 2, n: int = 11, d: int = 4) -> dict:
    q, k, v = (t.detach() for t in _qkv(b, h, n, n, d, seed=0))
    return {"q": q, "k": k, "v": v, "mask": task_tokens(n - 3, 3, "T-/->T")}


def test_chosen_only_inside_multitab_scope_and_where_it_wins() -> None:
    inputs = _inputs()
    assert kernels.select_backend(OP, **inputs).name != NAME  # other models keep the core's backends
    with short_keys():
        assert kernels.select_backend(OP, **inputs).name == NAME
        reasons = dict((b.name, r) for b, r in kernels.candidates(OP, **inputs))
        assert reasons[NAME] == []
        few = _inputs(b=MIN_PROBLEMS // 2 - 1)
        long = _inputs(n=40)
        wide = _inputs(b=64, d=32)
        per_batch = dict(inputs, mask=torch.ones(64, 2, 11, 11, dtype=torch.bool))
        half = {k: (v.bfloat16() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
        for bad, words in ((few, "attention problems"), (long, "keys"), (wide, "head width"),
                           (per_batch, "per-batch"), (half, "dtype")):
            why = dict((b.name, r) for b, r in kernels.candidates(OP, **bad))[NAME]
            assert any(words in r for r in why), why
            assert kernels.select_backend(OP, **bad).name != NAME
        with kernels.assume_device("cuda", (9, 0)):
            assert dict((b.name, r) for b, r in kernels.candidates(OP, **inputs))[NAME]
    outside = dict((b.name, r) for b, r in kernels.candidates(OP, **inputs))[NAME]
    assert any("MultiTab-Net's encoder" in r for r in outside)


def _net(dropout: float = 0.0) -> MultiTabNet:
    torch.manual_seed(0)
    cfg = MultiTabConfig(n_num=8, tasks=[("a", "binary"), ("b", "multiclass", 3), ("c", "regression")], d_embed=8,
                         n_heads=2, row_heads=4, dropout=dropout)
    return MultiTabNet(cfg)


@pytest.mark.parametrize("rows,uses", [(40, False), (200, True)])
def test_model_matches_the_sdpa_path(rows, uses, monkeypatch) -> None:
    """A training step's outputs and gradients, and a prediction, against the core's sdpa path:
    rounding only (at 200 rows, 400 problems, the short-key backend runs the inter-feature attention)."""
    from tabzoo_multitab import attention

    calls = []
    apply = attention._ShortKeyAttention.apply
    monkeypatch.setattr(attention._ShortKeyAttention, "apply", lambda *a: calls.append(1) or apply(*a))
    model = _net().train()
    x = torch.randn(rows, 8, generator=torch.Generator().manual_seed(1))

    def run() -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        model.zero_grad(set_to_none=True)
        out = model(x)
        out.square().sum().backward()
        return out.detach(), [None if p.grad is None else p.grad.clone() for p in model.parameters()]

    out, grads = run()
    assert bool(calls) == uses
    with kernels.use("sdpa"):
        ref, ref_grads = run()
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    assert sum(a is not None for a in grads) > 30
    for a, e in zip(grads, ref_grads, strict=True):
        torch.testing.assert_close(a, e, rtol=1e-4, atol=1e-4)
    model.eval()
    ctx = (x[: rows // 2], None)
    got = model.predict(x[rows // 2:], None, ctx)
    with kernels.use("sdpa"):
        want = model.predict(x[rows // 2:], None, ctx)
    assert got.shape == (rows - rows // 2, 5)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
