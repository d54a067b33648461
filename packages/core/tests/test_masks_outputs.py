"""Every output of a mask agrees with ``materialize`` on random mask expressions."""

from __future__ import annotations

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tabzoo.masks import (
    Mask,
    causal,
    context_query,
    global_tokens,
    random_links,
    same_group,
    window,
)
from tabzoo.masks.strategies import sized_masks

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _layout_oracle(dense: torch.Tensor, block: int) -> set[tuple[int, int]]:
    n_q, n_k = dense.shape
    return {
        (a, b)
        for a in range(-(-n_q // block))
        for b in range(-(-n_k // block))
        if dense[a * block : (a + 1) * block, b * block : (b + 1) * block].any()
    }


@SETTINGS
@given(sized_masks(max_n=70))
def test_allowed_matches_materialize(case: tuple[Mask, int, int]) -> None:
    mask, n_q, n_k = case
    dense = mask.materialize(n_q, n_k)
    assert dense.shape == (n_q, n_k) and dense.dtype == torch.bool
    q = torch.randint(0, n_q, (50,))
    k = torch.randint(0, n_k, (50,))
    assert torch.equal(mask.allowed(q, k, n_k=n_k), dense[q, k])
    # broadcasting: a column of queries against a row of keys gives the whole matrix
    grid = mask.allowed(torch.arange(n_q)[:, None], torch.arange(n_k)[None, :], n_k=n_k)
    assert torch.equal(torch.broadcast_to(grid, (n_q, n_k)), dense)


@SETTINGS
@given(sized_masks(max_n=70), st.sampled_from([torch.float32, torch.float16, torch.bfloat16]))
def test_bias_matches_materialize(case: tuple[Mask, int, int], dtype: torch.dtype) -> None:
    mask, n_q, n_k = case
    dense = mask.materialize(n_q, n_k)
    bias = mask.bias(n_q, n_k, dtype=dtype)
    assert bias.dtype == dtype and bias.shape == (n_q, n_k)
    assert torch.equal(bias == 0, dense)
    assert torch.equal(torch.isneginf(bias), ~dense)


@SETTINGS
@given(sized_masks(max_n=70))
def test_nnz_matches_materialize(case: tuple[Mask, int, int]) -> None:
    mask, n_q, n_k = case
    assert mask.nnz(n_q, n_k) == int(mask.materialize(n_q, n_k).sum())


@SETTINGS
@given(sized_masks(max_n=70), st.sampled_from([1, 3, 8, 16, 128]))
def test_block_layout_matches_materialize(case: tuple[Mask, int, int], block: int) -> None:
    mask, n_q, n_k = case
    layout = mask.block_layout(n_q, n_k, block=block)
    assert layout.dtype == torch.int64 and layout.ndim == 2 and layout.shape[1] == 2
    pairs = [tuple(p) for p in layout.tolist()]
    assert pairs == sorted(set(pairs))
    assert set(pairs) == _layout_oracle(mask.materialize(n_q, n_k), block)


def test_block_layout_is_chunked(monkeypatch) -> None:
    """Chunked evaluation (tiny chunk budget) gives the same layout and count."""
    from tabzoo.masks import outputs

    mask = (window(3) | global_tokens(2) | random_links(2, seed=5)) & ~context_query(10)
    full_layout, full_nnz = mask.block_layout(67, 50, block=8), mask.nnz(67, 50)
    monkeypatch.setattr(outputs, "CHUNK_ELEMENTS", 100)
    assert torch.equal(mask.block_layout(67, 50, block=8), full_layout)
    assert outputs.chunked_nnz(mask, 67, 50) == full_nnz == int(mask.materialize(67, 50).sum())


@SETTINGS
@given(st.integers(0, 6), st.integers(0, 4), st.integers(0, 3), st.integers(1, 70), st.integers(1, 70),
       st.integers(0, 2**31 - 1), st.booleans(), st.integers(1, 40))
def test_sparse_union_is_counted_on_candidates_exactly(radius: int, glob: int, links: int, n_q: int, n_k: int,
                                                       seed: int, fixed: bool, chunk: int) -> None:
    """``window | global_tokens | random_links`` (ORION's row mask) is counted on each row's
    candidate keys, O(n K) instead of O(n^2) (issue 23: its cost report took minutes at 32k
    features); the count is exact, chunked or not, fixed-length links included."""
    import pytest
    from tabzoo.masks import outputs

    if fixed:  # a fixed-length mask is square
        n_q = n_k
    mask = window(radius) | global_tokens(glob) | random_links(links, seed=seed, n=n_k if fixed else None)
    counts = mask._row_counts(n_q, n_k)
    assert counts is not None  # the sparse path, not the dense fallback
    assert torch.equal(counts, mask.materialize(n_q, n_k).sum(dim=1))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(outputs, "CHUNK_ELEMENTS", chunk)
        assert mask.nnz(n_q, n_k) == int(counts.sum())


def test_sparse_union_count_is_fast_at_32k() -> None:
    """The count at 32,768 + 4 positions evaluates O(n K) entries, never an [n, n] chunk."""
    from tabzoo.masks import outputs

    calls: list[int] = []
    dense = outputs._dense

    def spy(mask: Mask, a: int, b: int, n_k: int, device: object) -> torch.Tensor:
        calls.append((b - a) * n_k)
        return dense(mask, a, b, n_k, device)  # type: ignore[arg-type]

    n = 32768 + 4
    mask = global_tokens(4) | window(8) | random_links(2, seed=7)
    outputs._dense, saved = spy, outputs._dense  # type: ignore[assignment]
    try:
        total = mask.nnz(n)
    finally:
        outputs._dense = saved  # type: ignore[assignment]
    assert sum(calls) == 4 * n  # only the 4 global rows densely
    assert 4 * n + (n - 4 - 16) * 17 <= total <= 4 * n + (n - 4) * (17 + 4 + 2)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sized_masks(max_n=70), st.sampled_from([16, 32, 128]))
def test_block_mask_matches_materialize(case: tuple[Mask, int, int], block: int) -> None:
    mask, n_q, n_k = case
    dense = mask.materialize(n_q, n_k)
    bm = mask.block_mask(n_q, n_k, block=block)
    assert bm.shape[-2:] == (n_q, n_k)
    blocks = bm.to_dense()[0, 0]  # [q_blocks, k_blocks], nonzero = block is computed
    expected = torch.zeros_like(blocks, dtype=torch.bool)
    for a, b in mask.block_layout(n_q, n_k, block=block).tolist():
        expected[a, b] = True
    assert torch.equal(blocks != 0, expected)
    z = torch.zeros((), dtype=torch.int64)
    mod = bm.mask_mod(z, z, torch.arange(n_q)[:, None], torch.arange(n_k)[None, :])
    assert torch.equal(torch.broadcast_to(mod, (n_q, n_k)), dense)


def test_allowed_works_as_flex_mask_mod() -> None:
    """The documented lambda form builds a BlockMask and flex_attention honours the mask."""
    import warnings

    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    n = 40
    mask = (same_group([i // 7 for i in range(n)]) | causal()) & window(9)
    bm = create_block_mask(
        lambda b, h, q, kv: mask.allowed(q, kv), None, None, n, n, device="cpu", BLOCK_SIZE=16
    )
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, n, 8) for _ in range(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = flex_attention(q, k, v, block_mask=bm)
    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask.materialize(n))
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)


def test_materialize_device_and_defaults() -> None:
    m = window(1)
    assert m.materialize(4).shape == (4, 4)
    assert m.materialize(4, 6, device="cpu").device.type == "cpu"
    assert m.bias(3).dtype == torch.float32
    assert m.nnz(5) == 13  # 5 diagonal + 2 * 4 off-diagonal
