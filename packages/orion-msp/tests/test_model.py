"""The network: shapes, leak proofs on the exposed masks, query independence, sparse rows, bad input."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.masks import GlobalTokens, RandomLinks, Window, leaks
from tabzoo_orion_msp.config import CONFIGS, OrionConfig, get_config
from tabzoo_orion_msp.model import OrionMSP
from tabzoo_orion_msp.rows import row_mask


def _data(n: int, nc: int, f: int = 5, seed: int = 0, k: int = 3) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(2, n, f, generator=g)
    y = torch.randint(0, k, (2, nc), generator=g).float()
    return x, y


def test_forward_shapes_and_paper_preset_shape(tiny) -> None:
    x, y = _data(12, 8)
    with torch.no_grad():
        out = tiny(x, y)
    assert out.shape == (2, 4, 10) and torch.isfinite(out).all()
    paper = CONFIGS["paper"]
    assert (paper.d, paper.col_inducing, paper.col_blocks, paper.row_heads, paper.icl_blocks) == (128, 128, 3, 8, 12)
    assert paper.d_row == 512 and paper.icl_ff == 1024 and paper.memory_slots == 32 and paper.scales == (1, 4, 16)
    assert paper.window == 8 and paper.random_links == 2 and paper.rope_base == 1e5 and paper.temperature == 0.9


@given(nc=st.integers(1, 10), nq=st.integers(1, 6), qsq=st.booleans())
def test_mask_stack_proves_no_query_to_context_leak(nc: int, nq: int, qsq: bool) -> None:
    model = OrionMSP(CONFIGS["tiny"].with_(query_sees_query=qsq))
    n = nc + nq
    stack = model.mask_stack(nc, n)
    assert leaks(stack, range(nc, n), range(nc), n) == []
    cross = leaks(stack, range(nc, n), range(nc, n), n)
    assert (cross != []) == (qsq and nq > 1)  # eq. 29 holds exactly when query rows do not read each other


def test_query_rows_are_independent_by_default_and_not_with_the_paper_mask() -> None:
    x, y = _data(14, 9)
    x2 = x.clone()
    x2[:, 12] += 3.0  # change query row 3
    for qsq, independent in ((False, True), (True, False)):
        torch.manual_seed(0)
        model = OrionMSP(CONFIGS["tiny"].with_(query_sees_query=qsq)).eval()
        with torch.no_grad():
            a, b = model(x, y), model(x2, y)
        other = [0, 1, 2, 4]
        diff = float((a[:, other] - b[:, other]).abs().max())
        assert (diff == 0.0) == independent, diff
        assert float((a[:, 3] - b[:, 3]).abs().max()) > 0  # the changed row itself moves


def test_context_rows_never_see_query_rows_numerically(tiny) -> None:
    x, y = _data(12, 7)
    x2 = x.clone()
    x2[:, 7:] = torch.randn(2, 5, 5) * 10
    with torch.no_grad():
        torch.testing.assert_close(tiny.encode(x, y)[:, :7], tiny.encode(x2, y)[:, :7], rtol=0, atol=0)


def test_row_mask_is_the_papers_sparse_pattern_and_fixed() -> None:
    cfg = CONFIGS["small"]
    m = row_mask(cfg, 0)
    kinds = {type(t) for t in m.terms}
    assert kinds == {GlobalTokens, Window, RandomLinks}
    assert next(t for t in m.terms if isinstance(t, Window)).radius == 8
    assert next(t for t in m.terms if isinstance(t, GlobalTokens)).k == 8
    dense = m.materialize(60)
    assert dense.diagonal().all() and dense[:8].all() and dense[:, :8].all()
    assert (dense[8:].sum(1) <= 17 + 8 + 2).all()  # window + global + 2 random keys per feature token
    torch.testing.assert_close(row_mask(cfg, 0).materialize(60), dense)  # same links on every call
    assert not torch.equal(row_mask(cfg, 1).materialize(60), dense)  # each scale its own links
    assert not torch.equal(row_mask(cfg.with_(link_seed=5), 0).materialize(60), dense)


def test_outputs_do_not_depend_on_the_global_rng(tiny) -> None:
    x, y = _data(10, 6)
    with torch.no_grad():
        torch.manual_seed(1)
        a = tiny(x, y)
        torch.manual_seed(2)
        b = tiny(x, y)
    assert torch.equal(a, b)


def test_block_pma_reads_its_own_group_only_and_global_reads_all() -> None:
    torch.manual_seed(0)
    model = OrionMSP(CONFIGS["tiny"]).eval()
    enc = model.rows.scales[1]  # scale 4
    e = torch.randn(3, 10, 8)
    e2 = e.clone()
    e2[:, 9] += 1.0  # feature 9 belongs to group 2 = [8, 12)
    with torch.no_grad():
        a, b = enc.group(e), enc.group(e2)
    assert a.shape == (3, 3, 8)
    assert torch.equal(a[:, :2], b[:, :2]) and not torch.equal(a[:, 2], b[:, 2])
    torch.manual_seed(0)
    glob = OrionMSP(CONFIGS["tiny"].with_(pma_scope="global")).eval().rows.scales[1]
    with torch.no_grad():
        assert not torch.equal(glob.group(e)[:, 0], glob.group(e2)[:, 0])


def test_padding_columns_are_ignored(tiny) -> None:
    x, y = _data(12, 8, f=4)
    padded = torch.cat([x, torch.zeros(2, 12, 3)], dim=2)
    with torch.no_grad():
        torch.testing.assert_close(tiny(padded, y), tiny(x, y), rtol=1e-5, atol=1e-5)
    z, valid = tiny.standardise(padded, 8)
    assert z.shape[2] == 4 and valid.all()
    torch.testing.assert_close(z[:, :8].mean(1), torch.zeros(2, 4), atol=1e-5, rtol=0)


def test_missing_and_infinite_cells_are_imputed(tiny) -> None:
    x, y = _data(12, 8)
    x[0, 2, 1] = float("nan")
    x[1, 9, 0] = float("inf")
    with torch.no_grad():
        assert torch.isfinite(tiny(x, y)).all()


def test_row_flops_are_linear_in_features() -> None:
    model = OrionMSP("small")
    f = [model.row_flops(m) for m in (500, 1000, 2000, 4000)]
    for a, b in zip(f, f[1:], strict=False):
        assert 1.9 < b / a < 2.1


@pytest.mark.parametrize("bad", [
    lambda m: m(torch.randn(4, 3), torch.zeros(1, 2)),  # x not 3-d
    lambda m: m(torch.randn(1, 5, 3), torch.zeros(2, 2)),  # batch mismatch
    lambda m: m(torch.randn(1, 5, 3), torch.zeros(1, 0)),  # no context
    lambda m: m(torch.randn(1, 5, 3), torch.zeros(1, 6)),  # more labels than rows
    lambda m: m(torch.randn(1, 5, 33), torch.zeros(1, 3)),  # more features than trained on
    lambda m: m(torch.randn(1, 5, 3), torch.tensor([[0.0, 1.5, 2.0]])),  # fractional label
    lambda m: m(torch.randn(1, 5, 3), torch.tensor([[0.0, 10.0, 2.0]])),  # label beyond the head
    lambda m: m(torch.randint(0, 3, (1, 5, 3)), torch.zeros(1, 3)),  # integer cells
])
def test_bad_input_raises_with_a_fix(tiny, bad) -> None:
    with pytest.raises(TabzooInputError) as info:
        bad(tiny)
    assert len(str(info.value)) > 30


def test_config_validation_and_presets() -> None:
    assert get_config({"preset": "tiny", "window": None}).window == CONFIGS["tiny"].window
    assert get_config({"preset": "small", "query_sees_query": True}).query_sees_query
    with pytest.raises(TabzooInputError, match="known keys"):
        get_config({"width": 3})
    with pytest.raises(TabzooInputError, match="scales"):
        OrionConfig(scales=(1, 1))
    with pytest.raises(TabzooInputError, match="pma_scope"):
        OrionConfig(pma_scope="rows")
    with pytest.raises(TabzooInputError, match="preset"):
        get_config("huge")


@given(n_features=st.integers(1, 20), seed=st.integers(0, 50))
def test_pad_features_reproduces_the_pretraining_layout(n_features, seed) -> None:
    """``pad_features=True`` on one episode == that episode in a pretraining batch whose widest episode
    fills every slot (the trainer pads to max_features; the batch keeps the columns up to its widest)."""
    from tabzoo_orion_msp.conformance import make_model

    tiny = make_model(0)
    gen = torch.Generator().manual_seed(seed)
    width = tiny.max_features
    x = torch.randn(1, 14, n_features, generator=gen)
    y = torch.randint(0, 3, (1, 9), generator=gen).float()
    wide = torch.randn(1, 14, width, generator=gen)
    batch = torch.cat([torch.nn.functional.pad(x, (0, width - n_features)), wide])
    with torch.no_grad():
        in_batch = tiny(batch, torch.cat([y, y]))[0]
        padded = tiny(x, y, pad_features=True)[0]
        cut = tiny(x, y)[0]
    torch.testing.assert_close(padded, in_batch, atol=1e-5, rtol=1e-5)
    if n_features < width:  # the empty tokens take part in the row attention
        assert not torch.allclose(cut, padded, atol=1e-4)


def test_the_row_stage_in_chunks_of_rows_equals_one_piece(tiny, monkeypatch: pytest.MonkeyPatch) -> None:
    """``RowInteraction`` runs about ``ROW_TOKENS`` tokens of rows at a time (cache-sized, and it bounds
    the memory); rows are independent, so chunks of 3 rows (11 chunks here, the last one short) give
    what one piece gives."""
    from tabzoo_orion_msp import rows as rows_mod

    torch.manual_seed(0)
    e = torch.randn(2, 16, 7, tiny.cfg.d)  # [B, N, m, d]: 32 rows of 7 + 8 special tokens
    whole = tiny.rows(e)
    monkeypatch.setattr(rows_mod, "ROW_TOKENS", 3 * (7 + tiny.cfg.n_special))
    assert rows_mod.rows_per_chunk(7 + tiny.cfg.n_special) == 3
    chunked = tiny.rows(e)
    assert chunked.shape == whole.shape == (2, 16, tiny.cfg.n_cls * tiny.cfg.d)
    torch.testing.assert_close(chunked, whole, rtol=0, atol=1e-6)


def _isab_columns(model, x: torch.Tensor, n_context: int) -> torch.Tensor:
    """The column embedding written with the core's ``ISAB.forward`` in one piece (eqs. 1-9)."""
    col = model.columns
    b, n, m = x.shape
    cols = x.transpose(1, 2).reshape(b * m, n, 1)
    h = col.proj(cols)
    for isab in col.isabs:
        h = isab(h, n_context=n_context)
    w, bias = col.out(col.generator(h)).chunk(2, dim=-1)
    return (cols * col.norm_w(w) + col.norm_b(bias)).view(b, m, n, col.d).transpose(1, 2)


@pytest.mark.parametrize("blocks", [1, 2])
def test_the_column_stage_from_context_summaries_equals_the_isab_stack(blocks: int) -> None:
    """``ColumnEmbedding`` computes the inducing points' summaries of the context rows once and embeds
    rows in any chunks against them; that equals the core's ISAB blocks run on the whole column."""
    from tabzoo_orion_msp.model import OrionMSP

    torch.manual_seed(blocks)
    model = OrionMSP({"preset": "tiny", "col_blocks": blocks}).eval()
    x = torch.randn(2, 13, 5)
    with torch.no_grad():
        ref = _isab_columns(model, x, 9)
        summary = model.columns.summarise(x, 9)
        pieces = torch.cat([model.columns.embed(x[:, i:i + 4], summary) for i in range(0, 13, 4)], dim=1)
        whole = model.columns(x, 9)
    assert ref.shape == (2, 13, 5, model.cfg.d)
    torch.testing.assert_close(whole, ref, rtol=0, atol=1e-6)
    torch.testing.assert_close(pieces, ref, rtol=1e-5, atol=1e-5)  # another matmul blocking: rounding
    # a query row's change moves only that row (the summaries read the context rows)
    x2 = x.clone()
    x2[:, 11] += 3.0
    with torch.no_grad():
        moved = model.columns(x2, 9)
    assert not torch.allclose(moved[:, 11], ref[:, 11])
    torch.testing.assert_close(moved[:, :11], ref[:, :11], rtol=0, atol=1e-6)
    torch.testing.assert_close(moved[:, 12], ref[:, 12], rtol=0, atol=1e-6)


@pytest.mark.parametrize("col_tokens", [1, 9 * 3, 9 * 4, 9 * 10])
def test_the_summaries_in_pieces_of_columns_equal_one_piece(col_tokens: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """``summarise`` runs about ``COL_TOKENS`` context cells (whole columns) at a time; the pieces give
    the keys and values of one piece, in the same ``[B*m]`` order, for 1 or 2 ISAB blocks."""
    from tabzoo_orion_msp import rows as rows_mod
    from tabzoo_orion_msp.model import OrionMSP

    x = torch.randn(2, 13, 5, generator=torch.Generator().manual_seed(col_tokens))
    for blocks in (1, 2):
        torch.manual_seed(blocks)
        model = OrionMSP({"preset": "tiny", "col_blocks": blocks}).eval()
        with torch.no_grad():
            whole = model.columns.summarise(x, 9)
            monkeypatch.setattr(rows_mod, "COL_TOKENS", col_tokens)  # 1, 3, 4 or all 10 columns a piece
            pieces = model.columns.summarise(x, 9)
            monkeypatch.undo()
        assert len(pieces) == len(whole) == blocks
        for (k0, v0), (k1, v1) in zip(whole, pieces, strict=True):
            assert k1.shape == k0.shape == (2 * 5, model.cfg.col_heads, model.cfg.col_inducing, model.cfg.d // model.cfg.col_heads)
            # pieces are other matmul batch shapes: bitwise on some CPUs, fp32 rounding (~3e-5 relative) on others
            torch.testing.assert_close(k1, k0, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(v1, v0, rtol=1e-4, atol=1e-5)


def test_fused_row_embeddings_equal_the_stages_in_one_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    """``OrionMSP.row_embeddings`` runs blocks of rows through the column stage (a few columns at a
    time) and then the row stage, and skips the columns invalid in every episode; the result equals
    embedding the whole table, then the rows."""
    from tabzoo_orion_msp import rows as rows_mod
    from tabzoo_orion_msp.model import OrionMSP

    torch.manual_seed(3)
    model = OrionMSP("tiny").eval()
    x = torch.randn(2, 17, 6)
    x[:, :, 2] = 1.5  # constant: invalid in both episodes, skipped
    x[0, :, 4] = 0.0  # invalid in the first episode only
    with torch.no_grad():
        z, valid = model.standardise(x, 10, pad_features=True)
        ref = model.rows(_isab_columns(model, z, 10) * valid[:, None, :, None])
        fused_once = model.row_embeddings(x, 10, pad_features=True)
        # blocks of 5 rows, pieces of 2 columns (the last block and piece short)
        monkeypatch.setattr(rows_mod, "CELLS", 2 * model.max_features * 5)
        monkeypatch.setattr(rows_mod, "COL_TOKENS", 2 * 5 * 2)
        fused = model.row_embeddings(x, 10, pad_features=True)
    torch.testing.assert_close(fused_once, ref, rtol=0, atol=1e-5)
    assert fused.shape == ref.shape == (2, 17, model.cfg.d_row)
    torch.testing.assert_close(fused, ref, rtol=0, atol=1e-5)
