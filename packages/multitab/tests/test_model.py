"""MultiTab-Net: shapes, task tokens, masks, inter-sample mixing, categorical embeddings."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.masks import task_tokens
from tabzoo_multitab import MultiTabConfig, MultiTabNet
from tabzoo_multitab.model import feature_mask

TASKS = (("b", "binary", 2), ("m", "multiclass", 3), ("r", "regression", 0))


def _model(seed: int = 0, **kw) -> MultiTabNet:
    opts = dict(n_num=3, cat_cardinalities=(4, 2), tasks=TASKS, d_embed=8, n_layers=2, n_heads=2, row_heads=2,
                head_hidden=8, dropout=0.0)
    opts.update(kw)
    torch.manual_seed(seed)
    return MultiTabNet(MultiTabConfig(**opts)).eval()


def _inputs(b: int, n: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    x_num = torch.randn(b, n, 3, generator=g)
    x_cat = torch.stack([torch.randint(0, 5, (b, n), generator=g), torch.randint(0, 3, (b, n), generator=g)], -1)
    return x_num, x_cat


@given(b=st.integers(1, 3), n=st.integers(1, 9), seed=st.integers(0, 100))
def test_output_shape_and_split(b, n, seed) -> None:
    model = _model()
    x_num, x_cat = _inputs(b, n, seed)
    with torch.no_grad():
        out = model(x_num, x_cat)
    assert out.shape == (b, n, 1 + 3 + 1)
    parts = model.split(out)
    assert [p.shape[-1] for p in parts] == [1, 3, 1]
    assert torch.isfinite(out).all()


def test_task_tokens_appended_after_features() -> None:
    model = _model()
    x_num, x_cat = _inputs(1, 4)
    h = model.encode(x_num, x_cat)
    assert h.shape == (1, 4, 5 + 3, 8)  # 5 feature tokens then 3 task tokens
    assert model.task_tokens.shape == (3, 8)


@pytest.mark.parametrize("mode,alias", [("T-/->T", "T↛T"), ("F-/->T", "F↛T"), ("both", "F↛T&T↛T")])
def test_feature_mask_modes_come_from_tabzoo_masks(mode, alias) -> None:
    cfg = MultiTabConfig(n_num=3, tasks=TASKS, mask=alias, d_embed=8, n_heads=2, row_heads=2)
    assert cfg.mask == mode
    m = feature_mask(cfg)
    assert m == task_tokens(3, 3, mode)
    mat = m.materialize(6, 6)
    task_reads_other_task = bool(mat[3, 4])
    feature_reads_task = bool(mat[0, 3])
    assert task_reads_other_task == (mode == "F-/->T")
    assert feature_reads_task == (mode == "T-/->T")
    assert mat[3, :3].all()  # task tokens always read the features


def test_default_mask_blocks_task_to_task_numerically() -> None:
    """Under T-/->T with no inter-sample attention and one layer, a task token's output
    cannot depend on another task token's embedding."""
    model = _model(n_layers=1, inter_sample=False)
    x_num, x_cat = _inputs(1, 3)
    with torch.no_grad():
        base = model.encode(x_num, x_cat)
        model.task_tokens[1] += 3.0 * torch.randn(8, generator=torch.Generator().manual_seed(1))
        moved = model.encode(x_num, x_cat)
    # task tokens sit at positions 5, 6, 7: token 0 and 2 unchanged, token 1 changed
    torch.testing.assert_close(moved[..., [5, 7], :], base[..., [5, 7], :])
    assert (moved[..., 6, :] - base[..., 6, :]).abs().max() > 1e-3
    # features read task tokens under T-/->T, so they do change
    assert (moved[..., :5, :] - base[..., :5, :]).abs().max() > 1e-4


def test_none_mask_lets_task_tokens_interact() -> None:
    model = _model(n_layers=1, inter_sample=False, mask="none")
    x_num, x_cat = _inputs(1, 3)
    with torch.no_grad():
        base = model.encode(x_num, x_cat)
        model.task_tokens[1] += 3.0 * torch.randn(8, generator=torch.Generator().manual_seed(1))
        moved = model.encode(x_num, x_cat)
    assert (moved[..., 5, :] - base[..., 5, :]).abs().max() > 1e-4


@given(seed=st.integers(0, 1000), n=st.integers(2, 8), row_dim=st.sampled_from([0, 8]))
def test_inter_sample_attention_really_mixes_rows(seed, n, row_dim) -> None:
    """Changing another row changes a row's output; with inter-sample attention off it does not.
    (The authors' rotary variant attended over a sequence of length 1 and mixed nothing.) The
    narrow inter-sample block (``row_dim``) mixes rows too."""
    x_num, x_cat = _inputs(1, n, seed)
    x2 = x_num.clone()
    x2[0, n - 1] += 3.0 * torch.randn(3, generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        for inter, should_change in ((True, True), (False, False)):
            model = _model(seed % 7, inter_sample=inter, row_dim=row_dim)
            a, b = model(x_num, x_cat), model(x2, x_cat)
            diff = (a[0, : n - 1] - b[0, : n - 1]).abs().max().item()
            if should_change:
                assert diff > 1e-6, f"row outputs did not change when row {n - 1} changed (diff {diff})"
            else:
                assert diff == 0.0


@pytest.mark.parametrize("row_dim", [0, 8])
def test_context_prediction_mask_isolates_queries(row_dim) -> None:
    model = _model(row_dim=row_dim)
    x_num, x_cat = _inputs(1, 10)
    with torch.no_grad():
        a = model(x_num, x_cat, n_context=6)
        x2 = x_num.clone()
        x2[0, 8] += 4.0
        b = model(x2, x_cat, n_context=6)
    keep = [0, 1, 2, 3, 4, 5, 6, 7, 9]
    torch.testing.assert_close(a[0, keep], b[0, keep])
    assert (a[0, 8] - b[0, 8]).abs().max() > 1e-5


def test_unseen_categories_map_to_reserved_index() -> None:
    model = _model()
    x_num, x_cat = _inputs(1, 4)
    weird = x_cat.clone()
    weird[0, 0, 0] = 99  # never seen: cardinality is 4
    weird[0, 1, 1] = -7
    reserved = x_cat.clone()
    reserved[0, 0, 0] = 0
    reserved[0, 1, 1] = 0
    with torch.no_grad():
        torch.testing.assert_close(model(x_num, weird), model(x_num, reserved))


def test_missing_numeric_values_use_missing_token() -> None:
    model = _model()
    x_num, x_cat = _inputs(1, 4)
    x_num[0, 2, 1] = float("nan")
    with torch.no_grad():
        out = model(x_num, x_cat)
    assert torch.isfinite(out).all()


def test_bad_inputs_raise() -> None:
    model = _model()
    x_num, x_cat = _inputs(1, 4)
    with pytest.raises(TabzooInputError, match="numeric columns"):
        model(x_num[..., :2], x_cat)
    with pytest.raises(TabzooInputError, match="x_cat"):
        model(x_num, None)
    with pytest.raises(TabzooInputError, match="integer"):
        model(x_num, x_cat.float())
    with pytest.raises(TabzooInputError, match="inf"):
        model(x_num.masked_fill(x_num > 0, float("inf")), x_cat)
    with pytest.raises(TabzooInputError, match="n_context"):
        model(x_num, x_cat, n_context=9)
    with pytest.raises(TabzooInputError, match="mask"):
        MultiTabConfig(n_num=3, tasks=TASKS, mask="T->F")
    with pytest.raises(TabzooInputError, match="row_heads"):
        MultiTabConfig(n_num=3, tasks=TASKS, d_embed=8, n_heads=2, row_heads=5)


def test_config_round_trip() -> None:
    cfg = MultiTabConfig(n_num=2, cat_cardinalities=(3,), tasks=TASKS, d_embed=8, n_heads=2, row_heads=2)
    again = MultiTabConfig.from_dict(cfg.to_dict())
    assert again == cfg
    with pytest.raises(TabzooInputError, match="known keys"):
        MultiTabConfig.from_dict({**cfg.to_dict(), "width": 3})


def test_single_shared_task_token_feeds_every_head() -> None:
    """The paper's Table 2 ablation: one shared task token; a T-/->T mask has nothing to mask there."""
    model = _model(task_tokens="single", mask="F-/->T")
    x_num, x_cat = _inputs(1, 4)
    assert model.task_tokens.shape == (1, 8)
    assert model.encode(x_num, x_cat).shape == (1, 4, 5 + 1, 8)
    with torch.no_grad():
        out = model(x_num, x_cat)
    assert out.shape == (1, 4, 1 + 3 + 1)
    assert MultiTabConfig.from_dict(model.cfg.to_dict()) == model.cfg
    with pytest.raises(TabzooInputError, match="single shared task"):
        _model(task_tokens="single")
    with pytest.raises(TabzooInputError, match="task_tokens"):
        _model(task_tokens="two")


def test_narrow_inter_sample_block_has_fewer_parameters_and_checks_its_width() -> None:
    """``row_dim`` shrinks the inter-sample block (8 tokens x e 8 = 64 wide -> 16) and is validated."""
    def count(m: MultiTabNet) -> int:
        return sum(p.numel() for b in m.blocks for p in b.parameters())

    full_model, narrow = _model(), _model(row_dim=16)
    assert count(narrow) < count(full_model) / 2
    assert narrow.blocks[0].rows.attn is not None and narrow.cfg.row_inner == 16
    with pytest.raises(TabzooInputError, match="row_dim"):
        _model(row_dim=-1)
    with pytest.raises(TabzooInputError, match="row_heads=4 must divide row_dim = 6"):
        _model(row_dim=6, row_heads=4)


def test_row_scope_self_keeps_rows_apart_but_keeps_the_row_block() -> None:
    """``row_scope="self"``: a row's output ignores the other rows (as without inter-sample
    attention), yet the per-row block still acts (outputs differ from a model without it)."""
    x_num, x_cat = _inputs(1, 6, 3)
    x2 = x_num.clone()
    x2[0, 5] += 3.0
    with torch.no_grad():
        own = _model(2, row_scope="self")
        a, b = own(x_num, x_cat), own(x2, x_cat)
        torch.testing.assert_close(a[0, :5], b[0, :5])
        assert (a[0, 5] - b[0, 5]).abs().max() > 1e-5
        assert (own(x_num, x_cat) - _model(2, inter_sample=False)(x_num, x_cat)).abs().max() > 1e-4
        torch.testing.assert_close(own(x_num, x_cat, n_context=3), a)  # the context mask changes nothing
    with pytest.raises(TabzooInputError, match="row_scope"):
        _model(row_scope="batch")


def test_plr_embedding_and_skip_path_options() -> None:
    """``num_embedding="plr"`` (Gorishniy et al. 2022) and the wide-and-deep ``skip_hidden`` path:
    shapes, validation, and the skip path stays per row (a query row still ignores other queries)."""
    x_num, x_cat = _inputs(2, 5, 1)
    for kw in ({"num_embedding": "plr", "skip_hidden": 0}, {"num_embedding": "linear", "skip_hidden": 16},
               {"num_embedding": "plr", "plr_frequencies": 3, "plr_sigma": 0.5, "skip_hidden": 16}):
        model = _model(**kw)
        assert MultiTabConfig.from_dict(model.cfg.to_dict()) == model.cfg
        with torch.no_grad():
            out = model(x_num, x_cat)
            assert out.shape == (2, 5, 1 + 3 + 1) and torch.isfinite(out).all()
            x2 = x_num.clone()
            x2[:, 4] += 3.0  # a query row (context = first 3 rows) changes: the other queries do not
            torch.testing.assert_close(model(x2, x_cat, n_context=3)[:, 3], model(x_num, x_cat, n_context=3)[:, 3])
    assert _model(num_embedding="plr", plr_frequencies=3).embed.num_weight.shape == (3, 6, 8)
    assert _model(skip_hidden=0).skip is None and _model(skip_hidden=16).skip is not None
    with pytest.raises(TabzooInputError, match="num_embedding"):
        _model(num_embedding="periodic")
    assert len(_model(skip_hidden=16, skip_layers=2).skip) == 3 * 2 + 1
    with pytest.raises(TabzooInputError, match="skip_hidden"):
        _model(skip_hidden=-1)
    with pytest.raises(TabzooInputError, match="skip_layers"):
        _model(skip_layers=0)
    with pytest.raises(TabzooInputError, match="plr_frequencies"):
        _model(num_embedding="plr", plr_frequencies=0)


def test_checkpoint_config_without_the_new_keys_loads_as_it_was_trained() -> None:
    """A config written before ``num_embedding`` / ``skip_hidden`` existed is the paper's linear
    embedding without a skip path, whatever today's defaults are; its weights load."""
    old = _model(num_embedding="linear", skip_hidden=0)
    d = old.cfg.to_dict()
    for k in ("num_embedding", "plr_frequencies", "plr_sigma", "skip_hidden", "skip_layers"):
        d.pop(k)
    cfg = MultiTabConfig.from_dict(d)
    assert cfg.num_embedding == "linear" and cfg.skip_hidden == 0
    again = MultiTabNet(cfg)
    again.load_state_dict(old.state_dict())
