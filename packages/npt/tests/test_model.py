"""NPT architecture: embedding, ABD/ABA structure, isolation, kernels, validation."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo import kernels
from tabzoo.errors import TabzooInputError
from tabzoo_npt.model import NPT, NPTConfig, build

CARDS = (0, 3, 0, 2)


def _model(seed: int = 0, **kw) -> NPT:
    torch.manual_seed(seed)
    cfg = {"dim": 8, "n_layers": 4, "n_heads": 2, "ff_mult": 2, "dropout": 0.0, **kw}
    return NPT(NPTConfig(cardinalities=CARDS, **cfg)).eval()


def _inputs(b: int, n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(b, n, 4, generator=g)
    v[..., 1] = torch.randint(0, 3, (b, n), generator=g).float()
    v[..., 3] = torch.randint(0, 2, (b, n), generator=g).float()
    mask = torch.rand(b, n, 4, generator=g) < 0.2
    return v, mask


def test_shapes_and_parameter_layout() -> None:
    m = _model()
    v, mask = _inputs(2, 7, 0)
    out = m(v, mask)
    assert out.shape == (2, 7, 4, 3)  # out_width = max cardinality
    assert m.w_in.shape == (4, 4, 8)  # per-attribute input maps: (max K + mask bit) -> e
    assert m.index_emb.shape == (4, 8) and m.type_emb.shape == (2, 8)
    # alternating ABD (width d*e) and ABA (width e)
    widths = [layer.norm1.normalized_shape[0] for layer in m.layers]
    assert widths == [32, 8, 32, 8]


def test_mask_bit_and_hidden_values() -> None:
    m = _model()
    v, _ = _inputs(1, 5, 1)
    none = torch.zeros_like(v, dtype=torch.bool)
    hide = none.clone()
    hide[0, 2, 0] = True
    # the mask bit changes the embedding of that cell
    assert not torch.allclose(m.embed(v, none)[0, 2, 0], m.embed(v, hide)[0, 2, 0])
    # a hidden cell's value is never read (NaN and 1e6 give the same output)
    v1, v2 = v.clone(), v.clone()
    v1[0, 2, 0], v2[0, 2, 0] = float("nan"), 1e6
    assert torch.equal(m(v1, hide), m(v2, hide))


@given(seed=st.integers(0, 1000), n=st.integers(2, 9))
def test_row_equivariance(seed: int, n: int) -> None:
    m = _model(seed % 3)
    v, mask = _inputs(1, n, seed)
    p = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    out = m(v, mask)
    assert torch.allclose(m(v[:, p], mask[:, p]), out[:, p], atol=1e-5)


def test_isolated_rows_do_not_influence_others_but_read_the_context() -> None:
    m = _model()
    v, mask = _inputs(1, 8, 2)
    iso = torch.zeros(1, 8, dtype=torch.bool)
    iso[0, 5:] = True
    out = m(v, mask, iso)
    v2 = v.clone()
    v2[0, 6, 0] += 5.0  # change an isolated row
    out2 = m(v2, mask, iso)
    keep = [i for i in range(8) if i != 6]
    assert torch.allclose(out[0, keep], out2[0, keep], atol=1e-6)
    v3 = v.clone()
    v3[0, 0, 0] += 5.0  # change a context row: isolated rows read it
    assert not torch.allclose(m(v3, mask, iso)[0, 5], out[0, 5])


def test_aba_is_shared_across_rows_and_reads_attributes() -> None:
    """An ABA layer alone: one row's output depends on its own attributes only, same weights per row."""
    m = _model()
    aba = m.layers[1]
    h = torch.randn(6, 4, 8)
    out = aba(h)
    assert torch.allclose(aba(h[2:3]), out[2:3], atol=1e-6)
    h2 = h.clone()
    h2[2, 0] += torch.randn(8)  # not a constant shift: the pre-LayerNorm removes those
    assert not torch.allclose(aba(h2)[2, 1], out[2, 1])  # attribute 1 reads attribute 0


def test_attention_goes_through_the_kernel_registry() -> None:
    m = _model()
    v, mask = _inputs(1, 6, 3)
    iso = torch.zeros(1, 6, dtype=torch.bool)
    iso[0, 4:] = True
    out = m(v, mask, iso)
    with kernels.use("reference"):
        ref = m(v, mask, iso)
    assert torch.allclose(out, ref, atol=1e-5)


def test_bad_inputs_raise_tabzoo_errors() -> None:
    m = _model()
    v, mask = _inputs(1, 4, 0)
    with pytest.raises(TabzooInputError, match="attributes"):
        m(v[..., :3], mask[..., :3])
    with pytest.raises(TabzooInputError, match="mask"):
        m(v, mask.float())
    bad = v.clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(TabzooInputError, match="NaN"):
        m(bad, torch.zeros_like(mask))
    bad = v.clone()
    bad[0, 0, 1] = 7.0  # class 7 of a 3-class attribute
    with pytest.raises(TabzooInputError, match="class index"):
        m(bad, torch.zeros_like(mask))
    with pytest.raises(TabzooInputError, match="cardinalities"):
        NPTConfig(cardinalities=(0, 1))
    with pytest.raises(TabzooInputError, match="n_heads"):
        NPTConfig(cardinalities=(0, 0, 0), dim=5, n_heads=2)
    with pytest.raises(TabzooInputError, match="NPTConfig: dropout=1.0: dropout must be a finite number in"):
        NPTConfig(cardinalities=(0, 2), dropout=1.0)  # the core's check_params: one message style
    with pytest.raises(TabzooInputError, match="preset"):
        build({"preset": "nope", "cardinalities": [0]})


def test_build_from_preset_config() -> None:
    m = build({"preset": "tiny", "cardinalities": [0, 2]})
    assert m.config.dim == 8 and len(m.layers) == 4
