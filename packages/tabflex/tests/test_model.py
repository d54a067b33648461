"""The TabFlex network: shapes, equivalence of the streamed path, the in-context properties."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo import kernels
from tabzoo.errors import TabzooInputError
from tabzoo_tabflex.config import CONFIGS, get_config
from tabzoo_tabflex.model import TabFlex, build


def _data(b: int, n: int, nc: int, f: int, k: int = 3, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(b, n, f, generator=g)
    y = torch.randint(0, k, (b, nc), generator=g).float()
    return x, y


def test_paper_configs_have_the_paper_shapes() -> None:
    for name in ("S100", "L100", "H1K"):
        c = CONFIGS[name]
        assert (c.d_model, c.n_heads, c.n_layers, c.d_ff, c.d_decoder, c.max_classes) == (512, 4, 12, 1024, 1024, 10)
    assert CONFIGS["S100"].max_features == 100 and CONFIGS["S100"].train_rows == 1152
    assert CONFIGS["L100"].max_features == 100 and CONFIGS["L100"].train_rows == 50_000
    assert CONFIGS["H1K"].max_features == 1000 and CONFIGS["H1K"].train_rows == 50_000


def test_s100_parameter_count_and_forward_shape() -> None:
    m = TabFlex("S100")
    n_params = sum(p.numel() for p in m.parameters())
    # 12 x (4*512^2 + 2*512*1024 attention/ffn weights) dominate: ~25.3M
    assert 25_000_000 < n_params < 26_500_000
    x, y = _data(1, 12, 8, 7)
    with torch.no_grad():
        assert m(x, y).shape == (1, 4, 10)


def test_post_norm_relu_linear_layers(tiny: TabFlex) -> None:
    layer = tiny.layers[0]
    assert layer.norm == "post" and layer.attn.kind == "linear"
    assert isinstance(layer.ffn.net[1], torch.nn.ReLU)
    assert isinstance(tiny.decoder.net[1], torch.nn.GELU)


@settings(max_examples=10, deadline=None)
@given(b=st.integers(1, 2), nc=st.integers(1, 20), nq=st.integers(1, 15), f=st.integers(1, 16),
       chunk=st.integers(1, 9), seed=st.integers(0, 100))
def test_streamed_equals_forward(b: int, nc: int, nq: int, f: int, chunk: int, seed: int) -> None:
    torch.set_num_threads(1)
    m = build({"preset": "tiny"}).eval()
    x, y = _data(b, nc + nq, nc, f, seed=seed)
    with torch.no_grad():
        full = m(x, y)
        streamed = m.predict_streamed(x[:, :nc], y, x[:, nc:], chunk_size=chunk)
    assert full.shape == (b, nq, 10)
    torch.testing.assert_close(streamed, full, atol=2e-5, rtol=2e-5)


def test_forward_matches_reference_kernel(tiny: TabFlex) -> None:
    x, y = _data(2, 30, 20, 5)
    with torch.no_grad():
        a = tiny(x, y)
        with kernels.use("reference"):
            b = tiny(x, y)
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


@settings(max_examples=10, deadline=None)
@given(nc=st.integers(2, 16), nq=st.integers(2, 8), seed=st.integers(0, 1000))
def test_query_independence_and_context_order(nc: int, nq: int, seed: int) -> None:
    torch.set_num_threads(1)
    m = build({"preset": "tiny"}).eval()
    x, y = _data(1, nc + nq, nc, 4, seed=seed)
    with torch.no_grad():
        base = m(x, y)
        x2 = x.clone()
        x2[:, nc + nq - 1] += 5.0  # change the last query row
        changed = m(x2, y)
        perm = torch.randperm(nc, generator=torch.Generator().manual_seed(seed))
        xp = torch.cat([x[:, :nc][:, perm], x[:, nc:]], dim=1)
        permuted = m(xp, y[:, perm])
    torch.testing.assert_close(changed[:, :-1], base[:, :-1], atol=1e-5, rtol=1e-5)
    assert not torch.allclose(changed[:, -1], base[:, -1])
    torch.testing.assert_close(permuted, base, atol=1e-5, rtol=1e-5)


def test_labels_matter_and_nan_features_are_zero(tiny: TabFlex) -> None:
    x, y = _data(1, 20, 14, 4)
    with torch.no_grad():
        base = tiny(x, y)
        assert not torch.allclose(tiny(x, (y + 1) % 3), base)
        xn = x.clone()
        xn[0, 3, 1] = float("nan")
        xz = x.clone()
        xz[0, 3, 1] = 0.0
        torch.testing.assert_close(tiny(xn, y), tiny(xz, y))


def test_bad_inputs_raise_with_the_fix(tiny: TabFlex) -> None:
    x, y = _data(1, 10, 6, 4)
    with pytest.raises(TabzooInputError, match="RandomProjection"):
        tiny(torch.randn(1, 10, 17), y)
    with pytest.raises(TabzooInputError, match="n_context"):
        tiny(x[:, :5], y)
    with pytest.raises(TabzooInputError):
        tiny(x, y + 20)
    with pytest.raises(TabzooInputError, match="softmax"):
        TabFlex(get_config("tiny", attention="softmax")).encode_context(x[:, :6], y)
    with pytest.raises(TabzooInputError, match="known keys"):
        get_config({"preset": "tiny", "width": 3})


def test_softmax_variant_is_the_same_model_shape() -> None:
    lin = TabFlex("tiny")
    soft = TabFlex(get_config("tiny", attention="softmax"))
    soft.load_state_dict(lin.state_dict())
    x, y = _data(1, 20, 12, 4)
    with torch.no_grad():
        a, b = lin(x, y), soft(x, y)
    assert a.shape == b.shape and not torch.allclose(a, b)


def test_training_step_reduces_loss() -> None:
    torch.manual_seed(0)
    m = TabFlex("tiny").train()
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    x, y = _data(4, 40, 30, 3)
    yq = (x[:, 30:, 0] > 0).long()
    y = (x[:, :30, 0] > 0).float()
    losses = []
    for _ in range(15):
        loss = torch.nn.functional.cross_entropy(m(x, y).reshape(-1, 10), yq.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.7 * losses[0]
