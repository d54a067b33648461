"""Tests of tabzoo.nn set blocks (MAB, ISAB, PMA) and the Perceiver cross-attention block."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.nn import ISAB, MAB, PMA, CrossAttentionBlock

SETTINGS = settings(max_examples=15, deadline=None)
ATOL = 1e-5


@SETTINGS
@given(b=st.integers(1, 3), nx=st.integers(1, 5), ny=st.integers(1, 6), norm=st.sampled_from(["pre", "post", None]),
       seed=st.integers(0, 10_000))
def test_mab_shape_and_key_permutation_invariance(b, nx, ny, norm, seed):
    torch.manual_seed(seed)
    mab = MAB(8, 2, norm=norm).eval()
    x, y = torch.randn(b, nx, 8), torch.randn(b, ny, 8)
    out = mab(x, y)
    assert out.shape == (b, nx, 8)
    assert torch.allclose(mab(x, y[:, torch.randperm(ny)]), out, atol=ATOL)


@SETTINGS
@given(n_ctx=st.integers(1, 6), n_q=st.integers(1, 5), n_ind=st.integers(1, 4), seed=st.integers(0, 10_000),
       norm=st.sampled_from(["pre", "post"]))
def test_isab_context_only_keys(n_ctx, n_q, n_ind, seed, norm):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    isab = ISAB(8, 2, n_ind, norm=norm).eval()
    x = torch.randn(2, n_ctx + n_q, 8, generator=gen)
    out = isab(x, n_context=n_ctx)
    assert out.shape == x.shape
    j = n_ctx + int(torch.randint(n_q, (1,), generator=gen))
    x2 = x.clone()
    x2[:, j] = 10 * torch.randn(2, 8, generator=gen)
    out2 = isab(x2, n_context=n_ctx)
    others = [i for i in range(n_ctx + n_q) if i != j]
    # no context row and no other query row sees the change of query row j
    assert torch.allclose(out[:, others], out2[:, others], atol=ATOL)
    assert not torch.allclose(out[:, j], out2[:, j], atol=1e-4)


def test_isab_without_context_limit_mixes_all_rows():
    # negative control: the property above is not trivially true
    torch.manual_seed(0)
    isab = ISAB(8, 2, 3).eval()
    x = torch.randn(1, 6, 8)
    x2 = x.clone()
    x2[:, 5] = 3 * torch.randn(1, 8)
    assert not torch.allclose(isab(x)[:, :4], isab(x2)[:, :4], atol=1e-4)


@SETTINGS
@given(b=st.integers(1, 3), n=st.integers(1, 8), n_seeds=st.integers(1, 4), seed=st.integers(0, 10_000),
       rff=st.booleans())
def test_pma_permutation_invariance(b, n, n_seeds, seed, rff):
    torch.manual_seed(seed)
    pma = PMA(8, 2, n_seeds, rff=rff).eval()
    x = torch.randn(b, n, 8)
    out = pma(x)
    assert out.shape == (b, n_seeds, 8)
    assert torch.allclose(pma(x[:, torch.randperm(n)]), out, atol=ATOL)


def test_pma_key_mask_ignores_padding_and_slot_seeds():
    torch.manual_seed(0)
    pma = PMA(8, 2, 3).eval()
    x = torch.randn(2, 5, 8)
    km = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], dtype=torch.bool)
    out = pma(x, key_mask=km)
    x2 = x.clone()
    x2[0, 3:] = 50.0
    out2 = pma(x2, key_mask=km)
    assert torch.allclose(out, out2, atol=ATOL)
    assert torch.allclose(out[0], pma(x[:1, :3])[0], atol=ATOL)
    slot = torch.randn(3, 8)
    assert not torch.allclose(pma(x, seeds=slot), pma(x), atol=1e-4)
    with pytest.raises(TabzooInputError):
        PMA(8, 2, 0)


def test_set_blocks_gradients_flow():
    torch.manual_seed(0)
    isab, pma = ISAB(8, 2, 3), PMA(8, 2, 2)
    x = torch.randn(2, 7, 8, requires_grad=True)
    pma(isab(x, n_context=4)).pow(2).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    for name, p in [*isab.named_parameters(), *pma.named_parameters()]:
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name


@SETTINGS
@given(n_ctx=st.integers(1, 5), n_q=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_perceiver_write_reads_context_only_and_read_is_row_independent(n_ctx, n_q, seed):
    torch.manual_seed(seed)
    write = CrossAttentionBlock(8, 2, n_latents=4).eval()
    read = CrossAttentionBlock(8, 2).eval()
    rows = torch.randn(2, n_ctx + n_q, 8)
    mem = write(None, rows, n_context=n_ctx)
    assert mem.shape == (2, 4, 8)
    out = read(rows, mem)
    assert out.shape == rows.shape
    rows2 = rows.clone()
    rows2[:, -1] = 3 * torch.randn(2, 8)
    mem2 = write(None, rows2, n_context=n_ctx)
    assert torch.allclose(mem, mem2, atol=ATOL)
    out2 = read(rows2, mem2)
    assert torch.allclose(out[:, :-1], out2[:, :-1], atol=ATOL)
    assert not torch.allclose(out[:, -1], out2[:, -1], atol=1e-4)
    rows3 = rows.clone()
    rows3[:, 0] = 3 * torch.randn(2, 8)
    assert not torch.allclose(write(None, rows3, n_context=n_ctx), mem, atol=1e-4)


def test_cross_attention_block_options():
    torch.manual_seed(0)
    blk = CrossAttentionBlock(8, 2, d_ff=0, d_kv=5)
    assert blk.ffn is None
    out = blk(torch.randn(2, 3, 8), torch.randn(2, 6, 5), key_mask=torch.ones(2, 6, dtype=torch.bool))
    assert out.shape == (2, 3, 8)
    with pytest.raises(TabzooInputError, match="latents"):
        blk(None, torch.randn(2, 6, 5))
