"""WordDropout (dropout masks from 16-bit random words) and MultiTab-Net's ``dropout_masks`` option."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo_multitab import MultiTabConfig, MultiTabNet
from tabzoo_multitab.dropout import WordDropout, use_word_dropout
from torch import nn

TASKS = (("b", "binary", 2), ("r", "regression", 0))


def _cfg(**kw) -> MultiTabConfig:
    return MultiTabConfig(
        **(
            dict(
                n_num=3,
                tasks=TASKS,
                d_embed=8,
                n_layers=1,
                n_heads=2,
                row_heads=2,
                head_hidden=8,
                skip_hidden=16,
            )
            | kw
        )
    )


@settings(max_examples=10, deadline=None)
@given(p=st.sampled_from([0.05, 0.1, 0.3, 0.5]), seed=st.integers(0, 50))
def test_drop_rate_and_scale(p: float, seed: int) -> None:
    torch.manual_seed(seed)
    y = WordDropout(p).train()(torch.ones(200_000))
    dropped = (y == 0).float().mean().item()
    assert abs(dropped - p) < 0.01
    kept = y[y != 0]
    assert torch.allclose(kept, torch.full_like(kept, 1.0 / (1.0 - p)))
    assert abs(y.mean().item() - 1.0) < 0.02  # unbiased, as nn.Dropout


@given(shape=st.lists(st.integers(1, 7), min_size=1, max_size=4))
def test_shapes_odd_sizes_and_gradient(shape: list[int]) -> None:
    x = (torch.rand(*shape) + 0.5).requires_grad_()  # no zeros, so y == 0 exactly where dropped
    y = WordDropout(0.2).train()(x)
    assert y.shape == x.shape
    y.sum().backward()
    kept = y.detach() != 0
    assert torch.allclose(x.grad, kept.float() / 0.8)  # 1 / (1 - p) where kept, 0 where dropped


def test_eval_zero_one_and_bad_p() -> None:
    x = torch.randn(5, 4)
    assert WordDropout(0.3).eval()(x) is x
    assert WordDropout(0.0).train()(x) is x
    assert torch.equal(WordDropout(1.0).train()(x), torch.zeros_like(x))
    with pytest.raises(TabzooInputError):
        WordDropout(1.5)


def test_seeded_masks_repeat() -> None:
    d = WordDropout(0.1).train()
    torch.manual_seed(3)
    a = d(torch.ones(1000))
    torch.manual_seed(3)
    assert torch.equal(a, d(torch.ones(1000)))


def test_model_option_swaps_every_dropout_and_keeps_the_state_dict() -> None:
    torch.manual_seed(0)
    old = MultiTabNet(_cfg())
    torch.manual_seed(0)
    new = MultiTabNet(_cfg(dropout_masks="words"))
    assert any(type(m) is nn.Dropout for m in old.modules())
    assert not any(type(m) is nn.Dropout for m in new.modules())
    assert sum(isinstance(m, WordDropout) for m in new.modules()) == sum(
        type(m) is nn.Dropout for m in old.modules()
    )
    sd_old, sd_new = old.state_dict(), new.state_dict()
    assert sd_old.keys() == sd_new.keys() and all(torch.equal(sd_old[k], sd_new[k]) for k in sd_old)
    x = torch.randn(1, 6, 3)
    with torch.no_grad():  # prediction does not depend on how training draws its masks
        assert torch.equal(old.eval()(x), new.eval()(x))


def test_config_option_roundtrip_legacy_and_refusal() -> None:
    cfg = _cfg(dropout_masks="words")
    assert MultiTabConfig.from_dict(cfg.to_dict()).dropout_masks == "words"
    legacy = {k: v for k, v in cfg.to_dict().items() if k != "dropout_masks"}
    assert (
        MultiTabConfig.from_dict(legacy).dropout_masks == "bernoulli"
    )  # checkpoints before the option
    with pytest.raises(TabzooInputError, match="dropout_masks"):
        _cfg(dropout_masks="fast")


def test_use_word_dropout_returns_the_module() -> None:
    seq = nn.Sequential(nn.Linear(2, 2), nn.Dropout(0.25))
    assert use_word_dropout(seq) is seq and isinstance(seq[1], WordDropout) and seq[1].p == 0.25


def test_hidden_sites_drop_only_after_hidden_activations() -> None:
    torch.manual_seed(0)
    full = MultiTabNet(_cfg())
    torch.manual_seed(0)
    hidden = MultiTabNet(_cfg(dropout_sites="hidden", dropout_masks="words"))
    block = hidden.blocks[0]
    for tb in (block.feature, block.rows):
        assert isinstance(tb.attn.dropout, nn.Identity) and isinstance(tb.dropout, nn.Identity)
        assert isinstance(
            tb.ffn.net[2], WordDropout
        )  # the feed-forward's hidden layer keeps its dropout
    n_full = sum(type(m) is nn.Dropout for m in full.modules())
    assert sum(isinstance(m, WordDropout) for m in hidden.modules()) == n_full - 4
    assert full.state_dict().keys() == hidden.state_dict().keys()
    assert (
        MultiTabConfig.from_dict(
            {k: v for k, v in _cfg().to_dict().items() if k != "dropout_sites"}
        ).dropout_sites
        == "all"
    )
    with pytest.raises(TabzooInputError, match="dropout_sites"):
        _cfg(dropout_sites="outputs")


def test_estimator_passes_the_options_to_the_model() -> None:
    pytest.importorskip("sklearn")
    import numpy as np
    from tabzoo_multitab.estimator import MultiTabEstimator

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=(40, 2))
    est = MultiTabEstimator(
        d_embed=8,
        n_heads=2,
        row_heads=2,
        max_epochs=1,
        task_types=["regression"] * 2,
        dropout_masks="words",
        dropout_sites="hidden",
        random_state=0,
    ).fit(X, y)
    assert est.model_.cfg.dropout_masks == "words" and est.model_.cfg.dropout_sites == "hidden"
    assert any(isinstance(m, WordDropout) for m in est.model_.modules())
    assert not any(type(m) is nn.Dropout for m in est.model_.modules())
    with pytest.raises(TabzooInputError, match="dropout_masks"):
        MultiTabEstimator(dropout_masks="coin", max_epochs=1).fit(X, y)
