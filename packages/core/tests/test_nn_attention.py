"""Tests of tabzoo.nn attention, transformer blocks and RoPE."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo import kernels
from tabzoo.errors import TabzooInputError
from tabzoo.masks import context_query
from tabzoo.nn import MultiHeadAttention, RotaryEmbedding, TransformerBlock, apply_rope

SETTINGS = settings(max_examples=15, deadline=None)
ATOL = 1e-5

sizes = st.tuples(st.integers(1, 3), st.integers(2, 9), st.sampled_from([(8, 2), (12, 3), (16, 4)]))


def _seeded(seed: int) -> torch.Generator:
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


@SETTINGS
@given(sizes=sizes, seed=st.integers(0, 10_000))
def test_mha_shapes_and_permutation_equivariance(sizes, seed):
    b, n, (d, h) = sizes
    _seeded(seed)
    mha = MultiHeadAttention(d, h).eval()
    x = torch.randn(b, n, d)
    out = mha(x)
    assert out.shape == (b, n, d)
    perm = torch.randperm(n)
    assert torch.allclose(mha(x[:, perm]), out[:, perm], atol=ATOL)


@SETTINGS
@given(sizes=sizes, seed=st.integers(0, 10_000), norm=st.sampled_from(["pre", "post"]),
       act=st.sampled_from(["gelu", "relu"]))
def test_transformer_block_permutation_equivariance(sizes, seed, norm, act):
    b, n, (d, h) = sizes
    _seeded(seed)
    blk = TransformerBlock(d, h, 2 * d, norm=norm, activation=act).eval()
    x = torch.randn(b, n, d)
    out = blk(x)
    assert out.shape == (b, n, d)
    perm = torch.randperm(n)
    assert torch.allclose(blk(x[:, perm]), out[:, perm], atol=ATOL)


def test_post_norm_output_is_layer_normed_and_differs_from_pre_norm():
    torch.manual_seed(0)
    post = TransformerBlock(8, 2, 16, norm="post").eval()
    pre = TransformerBlock(8, 2, 16, norm="pre").eval()
    pre.load_state_dict(post.state_dict())
    x = 3 * torch.randn(2, 5, 8) + 1
    y = post(x)
    # default LayerNorm affine is identity at init: rows have mean 0 and std 1
    assert torch.allclose(y.mean(-1), torch.zeros(2, 5), atol=1e-5)
    assert torch.allclose(y.var(-1, unbiased=False), torch.ones(2, 5), atol=1e-3)
    assert not torch.allclose(pre(x), y, atol=1e-3)


@SETTINGS
@given(n_ctx=st.integers(1, 6), n_q=st.integers(2, 5), seed=st.integers(0, 10_000))
def test_linear_attention_block_query_row_independence(n_ctx, n_q, seed):
    gen = _seeded(seed)
    blk = TransformerBlock(8, 2, 16, attention_kind="linear", norm="post").eval()
    x = torch.randn(2, n_ctx + n_q, 8, generator=gen)
    out = blk(x, n_context=n_ctx)
    j = n_ctx + int(torch.randint(n_q, (1,), generator=gen))
    x2 = x.clone()
    x2[:, j] = torch.randn(2, 8, generator=gen) * 5
    out2 = blk(x2, n_context=n_ctx)
    others = [i for i in range(n_ctx + n_q) if i != j]
    assert torch.allclose(out[:, others], out2[:, others], atol=ATOL)
    assert not torch.allclose(out[:, j], out2[:, j], atol=1e-4)
    # a context row does influence the query rows
    x3 = x.clone()
    x3[:, 0] = 3 * torch.randn(2, 8)
    assert not torch.allclose(blk(x3, n_context=n_ctx)[:, n_ctx:], out[:, n_ctx:], atol=1e-4)


def test_linear_attention_validates_arguments():
    mha = MultiHeadAttention(8, 2, kind="linear")
    x = torch.randn(1, 4, 8)
    with pytest.raises(TabzooInputError, match="n_context"):
        mha(x)
    with pytest.raises(TabzooInputError, match="mask"):
        mha(x, n_context=2, mask=torch.ones(4, 4, dtype=torch.bool))
    with pytest.raises(TabzooInputError, match="self-attention"):
        mha(x, torch.randn(1, 3, 8), n_context=2)


@SETTINGS
@given(n_ctx=st.integers(1, 5), n_q=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_softmax_n_context_equals_bool_mask_and_mask_object(n_ctx, n_q, seed):
    _seeded(seed)
    n = n_ctx + n_q
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(2, n, 8)
    by_slice = mha(x, n_context=n_ctx)
    keys = torch.arange(n)[None, :] < n_ctx
    by_tensor = mha(x, mask=keys.expand(n, n))
    assert torch.allclose(by_slice, by_tensor, atol=ATOL)
    # context_query: context rows read context; query rows read context and themselves
    cq = mha(x, mask=context_query(n_ctx))
    manual = (torch.arange(n)[None, :] < n_ctx) | torch.eye(n, dtype=torch.bool)
    assert torch.allclose(cq, mha(x, mask=manual), atol=ATOL)
    assert torch.allclose(cq[:, :n_ctx], by_slice[:, :n_ctx], atol=ATOL)


def test_key_mask_hides_padding_rows_and_batched_masks():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(2, 6, 8)
    key_mask = torch.tensor([[1, 1, 1, 1, 0, 0], [1, 1, 1, 1, 1, 1]], dtype=torch.bool)
    out = mha(x, key_mask=key_mask)
    x2 = x.clone()
    x2[0, 4:] = 100.0
    out2 = mha(x2, key_mask=key_mask)
    assert torch.allclose(out[0, :4], out2[0, :4], atol=ATOL)
    assert torch.allclose(out[1], out2[1], atol=ATOL)
    # [B, Nq, Nk] mask equals key_mask
    batched = key_mask[:, None, :].expand(2, 6, 6)
    assert torch.allclose(mha(x, mask=batched), out, atol=ATOL)
    with pytest.raises(TabzooInputError, match="bool"):
        mha(x, mask=torch.ones(6, 6))
    with pytest.raises(TabzooInputError, match="shape"):
        mha(x, mask=torch.ones(5, 6, dtype=torch.bool))


def test_cross_attention_shapes_and_d_kv():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2, d_kv=5)
    out = mha(torch.randn(3, 4, 8), torch.randn(3, 7, 5))
    assert out.shape == (3, 4, 8)
    with pytest.raises(TabzooInputError, match="divisible"):
        MultiHeadAttention(10, 3)


@SETTINGS
@given(dim=st.sampled_from([2, 4, 8, 16]), m=st.integers(-50, 50), n=st.integers(-50, 50),
       shift=st.integers(-1000, 1000), seed=st.integers(0, 10_000))
def test_rope_dot_products_depend_only_on_offsets(dim, m, n, shift, seed):
    gen = _seeded(seed)
    q, k = torch.randn(2, dim, generator=gen, dtype=torch.float64).unbind(0)
    rope = RotaryEmbedding(dim)

    def dot(a: int, b: int) -> torch.Tensor:
        qa = rope(q[None], torch.tensor([a]))[0]
        kb = rope(k[None], torch.tensor([b]))[0]
        return (qa * kb).sum()

    assert torch.allclose(dot(m, n), dot(m + shift, n + shift), atol=1e-6)
    # rotation preserves norms, position 0 is the identity
    assert torch.allclose(rope(q[None], torch.tensor([m])).norm(), q.norm(), atol=1e-6)
    assert torch.allclose(apply_rope(q[None], torch.tensor([0])), q[None])


def test_rope_rotates_only_first_dim_channels_and_changes_result():
    x = torch.randn(3, 6)
    out = apply_rope(x, torch.arange(3), dim=4)
    assert torch.equal(out[:, 4:], x[:, 4:])
    assert not torch.allclose(out[1:, :4], x[1:, :4])
    with pytest.raises(TabzooInputError):
        RotaryEmbedding(3)


def test_mha_with_rope_is_shift_invariant_and_position_sensitive():
    torch.manual_seed(0)
    mha = MultiHeadAttention(8, 2).eval()
    rope = RotaryEmbedding(4)
    x = torch.randn(2, 5, 8)
    pos = torch.arange(5)
    out = mha(x, rope=rope, positions=pos)
    assert torch.allclose(out, mha(x, rope=rope, positions=pos + 17), atol=1e-4)
    assert torch.allclose(out, mha(x, rope=rope, positions=(pos + 3).expand(2, 5)), atol=1e-4)
    assert not torch.allclose(out, mha(x, rope=rope, positions=pos.flip(0)), atol=1e-4)
    assert not torch.allclose(out, mha(x), atol=1e-4)


@pytest.mark.parametrize("kind", ["softmax", "linear"])
def test_gradients_flow_to_every_parameter(kind):
    torch.manual_seed(0)
    blk = TransformerBlock(8, 2, 16, attention_kind=kind)
    x = torch.randn(2, 6, 8, requires_grad=True)
    blk(x, n_context=4).pow(2).sum().backward()
    assert x.grad is not None and x.grad.abs().sum() > 0
    for name, p in blk.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all(), name
        assert p.grad.abs().sum() > 0, name


@pytest.mark.parametrize("case", ["mask", "key_mask", "linear"])
def test_reference_kernels_match_default_dispatch(case):
    torch.manual_seed(0)
    blk = TransformerBlock(16, 4, 32, attention_kind="linear" if case == "linear" else "softmax").eval()
    x = torch.randn(2, 9, 16)
    kw: dict = {"n_context": 5} if case == "linear" else {"mask": context_query(5)}
    if case == "key_mask":
        kw["key_mask"] = torch.tensor([[True] * 7 + [False] * 2, [True] * 9])
    default = blk(x, **kw)
    with kernels.use("reference"):
        ref = blk(x, **kw)
    assert torch.allclose(default, ref, atol=1e-5)
    assert default.abs().sum() > 0


@settings(max_examples=15, deadline=None)
@given(n=st.integers(1, 12), half=st.integers(1, 4), extra=st.integers(0, 3), seed=st.integers(0, 1000),
       double=st.booleans())
def test_rope_cached_tables_equal_the_uncached_rotation(n, half, extra, seed, double):
    """Positions ``0 .. n-1`` (``positions=None``) read the cached cos / sin tables: bitwise what an
    explicit ``arange`` computes, for float32 and float64 inputs and ``dim`` below the last dimension."""
    dtype = torch.float64 if double else torch.float32
    rope = RotaryEmbedding(2 * half, base=100.0)
    x = torch.randn(2, 3, n, 2 * half + extra, generator=torch.Generator().manual_seed(seed), dtype=dtype)
    cached = rope(x)
    again = rope(x)  # a cache hit
    explicit = rope(x, torch.arange(n))
    assert torch.equal(cached, explicit) and torch.equal(again, explicit)
    assert torch.equal(cached, apply_rope(x, torch.arange(n), base=100.0, dim=2 * half))


def test_rope_table_cache_is_keyed_by_length_dtype_and_device():
    rope = RotaryEmbedding(4)
    a = rope.cos_sin(5, torch.float32, torch.device("cpu"))
    assert rope.cos_sin(5, torch.float32, torch.device("cpu")) is a  # same key: the same tensors
    b = rope.cos_sin(6, torch.float32, torch.device("cpu"))
    c = rope.cos_sin(5, torch.float64, torch.device("cpu"))
    assert b[0].shape == (6, 2) and c[0].dtype == torch.float64 and a[0].dtype == torch.float32
    assert torch.equal(b[0][:5], a[0]) and torch.allclose(c[1].float(), a[1])
    assert set(rope._tables) == {(5, torch.float32, torch.device("cpu")), (6, torch.float32, torch.device("cpu")),
                                 (5, torch.float64, torch.device("cpu"))}
    for n in range(20):  # bounded: the oldest keys go
        rope.cos_sin(100 + n, torch.float32, torch.device("cpu"))
    assert len(rope._tables) == RotaryEmbedding.CACHE_SIZE


def test_rope_with_cached_tables_passes_gradients_to_its_input():
    rope = RotaryEmbedding(4)
    x = torch.randn(1, 2, 5, 4, requires_grad=True)
    rope(x).sum().backward()
    rope(x).pow(2).sum().backward()  # the cached tables carry no graph of a previous call
    assert x.grad is not None and torch.isfinite(x.grad).all()
