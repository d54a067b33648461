"""masked_attention/banded: exact against the reference on window | global | random-link masks, linear memory."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo import kernels as K
from tabzoo import masks as M
from tabzoo.kernels.attention import attention_reference
from tabzoo.kernels.banded import MIN_TOKENS, attention_banded, decompose
from tabzoo.kernels.op_registry import ENV_VAR


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def _mask(w: int, g: int, r: int, seed: int) -> M.Mask:
    parts = []
    if w >= 0:
        parts.append(M.window(w))
    if g:
        parts.append(M.global_tokens(g))
    if r:
        parts.append(M.random_links(r, seed=seed))
    out = parts[0]
    for p in parts[1:]:
        out = out | p
    return out


@given(n=st.integers(1, 40), w=st.integers(-1, 9), g=st.integers(0, 9), r=st.integers(0, 3),
       seed=st.integers(0, 1000), dh=st.sampled_from([4, 8]), dtype=st.sampled_from([torch.float32, torch.bfloat16]))
def test_banded_matches_reference_outputs_and_gradients(n, w, g, r, seed, dh, dtype) -> None:
    if w < 0 and not g and not r:
        w = 0
    mask = _mask(w, g, r, seed)
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(2, 2, n, dh, generator=gen).to(dtype).requires_grad_(True) for _ in range(3))
    ref = attention_reference(q, k, v, mask)
    out = attention_banded(q, k, v, mask)
    tol = 2e-4 if dtype == torch.float32 else 5e-2
    assert out.dtype == dtype and out.shape == ref.shape
    torch.testing.assert_close(out.float(), ref.float(), atol=tol, rtol=tol)
    cot = torch.randn(ref.shape, generator=gen)
    g_ref = torch.autograd.grad((ref.float() * cot).sum(), (q, k, v))
    g_out = torch.autograd.grad((out.float() * cot).sum(), (q, k, v))
    for a, b in zip(g_out, g_ref, strict=True):
        torch.testing.assert_close(a.float(), b.float(), atol=tol * 5, rtol=tol * 5)


def test_decompose_accepts_only_the_sparse_family() -> None:
    assert decompose(M.window(3) | M.global_tokens(2) | M.random_links(2, seed=1))[:2] == (3, 2)
    assert decompose(M.window(1) | M.window(4)) == (4, 0, [])
    assert decompose(M.causal()) is None
    assert decompose(M.window(2) | M.context_query(3)) is None


def test_dispatch_uses_banded_for_long_rows_and_sdpa_for_short() -> None:
    mask = M.global_tokens(8) | M.window(8) | M.random_links(2, seed=0)
    long = {"q": torch.randn(1, 1, MIN_TOKENS + 8, 8)}
    long["k"] = long["v"] = long["q"]
    assert K.select_backend("masked_attention", mask=mask, **long).name == "banded"
    short = {"q": torch.randn(1, 1, 16, 8)}
    short["k"] = short["v"] = short["q"]
    assert K.select_backend("masked_attention", mask=mask, **short).name == "sdpa"
    with K.use("banded"):
        assert K.select_backend("masked_attention", mask=mask, **short).name == "banded"
    # a mask outside the family is refused with a reason, even when forced
    with K.use("banded"), pytest.raises(Exception, match="union of window"):
        K.masked_attention(short["q"], short["k"], short["v"], mask=M.causal())


def test_banded_memory_grows_linearly_while_dense_grows_quadratically() -> None:
    from tabzoo.testing.checks.scaling import LiveBytes, fitted_slope

    mask = M.global_tokens(8) | M.window(8) | M.random_links(2, seed=0)
    ns = [256, 512, 1024]
    peaks: dict[str, list[float]] = {"banded": [], "sdpa": []}
    for n in ns:
        q = torch.randn(1, 2, n, 8)
        for name in peaks:
            with torch.no_grad(), K.use(name):
                tracker = LiveBytes()
                with tracker:
                    K.masked_attention(q, q, q, mask=mask)
            peaks[name].append(float(tracker.peak))
    assert fitted_slope(ns, peaks["banded"]) <= 1.15
    assert fitted_slope(ns, peaks["sdpa"]) > 1.5  # the dense mask is [N, N]


def test_cost_is_linear_in_tokens() -> None:
    backend = next(b for b in K.list_backends("masked_attention") if b.name == "banded")
    mask = M.global_tokens(8) | M.window(8) | M.random_links(2, seed=0)
    flops = []
    for n in (500, 1000, 2000):
        q = torch.zeros(1, 1, n, 8)
        flops.append(backend.cost({"q": q, "k": q, "v": q, "mask": mask, "scale": None}).flops)
    assert flops[2] / flops[1] == pytest.approx(2.0, rel=0.05) and flops[1] / flops[0] == pytest.approx(2.0, rel=0.05)


@given(n=st.integers(1, 120), w=st.integers(-1, 12), g=st.integers(0, 9), r=st.integers(0, 3), seed=st.integers(0, 99))
def test_layout_opens_each_allowed_key_exactly_once(n, w, g, r, seed) -> None:
    """The cached block layout is the mask: per real query row, the open slots are its allowed keys, once each."""
    from tabzoo.kernels.banded import block_layout

    if w < 0 and not g and not r:
        w = 0
    mask = _mask(w, g, r, seed)
    lay = block_layout(mask, n)
    dense = mask.materialize(n, n)
    keys = lay.keys.view(lay.nb, lay.n_slots)
    open_ = torch.isfinite(lay.bias)
    for i in range(lay.dense_rows, n):
        b, j = divmod(i, lay.bs)
        got = keys[b][open_[b, j]]
        assert got.unique().numel() == got.numel()  # no key twice
        assert torch.equal(got.sort().values, dense[i].nonzero().flatten())
    assert block_layout(mask, n) is lay  # computed once per (mask, n, device)


def test_strided_inputs_and_padding_on_a_long_row() -> None:
    """Per-head views of a [B, N, H, Dh] projection (as MultiHeadAttention passes them), N not a multiple of
    the block, many random links: still exact against the reference."""
    mask = M.global_tokens(8) | M.window(8) | M.random_links(2, seed=3)
    gen = torch.Generator().manual_seed(0)
    n = MIN_TOKENS + 13
    q, k, v = (torch.randn(2, n, 3, 8, generator=gen).transpose(1, 2) for _ in range(3))
    torch.testing.assert_close(attention_banded(q, k, v, mask), attention_reference(q, k, v, mask), atol=2e-5, rtol=2e-5)


def test_rows_without_keys_are_zero_like_the_reference() -> None:
    mask = M.random_links(0, seed=1) | M.global_tokens(0)
    q = torch.randn(1, 2, 10, 4)
    out = attention_banded(q, q, q, mask)
    torch.testing.assert_close(out, attention_reference(q, q, q, mask))
    assert bool((out == 0).all())
