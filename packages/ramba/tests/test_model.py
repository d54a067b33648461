"""The model: exact equivalence of the gather and tabzoo.masks attention paths, batch/padding
independence, masked values never read, the schema gate scaling delta, and the losses."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo_ramba.api import sequences_for
from tabzoo_ramba.conformance import LOOKBACK_S, SHOP_TARGET, shop_database
from tabzoo_ramba.layers import GatedBiSSM, row_structure
from tabzoo_ramba.model import RambaModel, make_config
from tabzoo_ramba.sampling import SamplerConfig
from tabzoo_ramba.serialize import collate
from tabzoo_ramba.text import default_encoder

ENC = default_encoder("hashing")


def _model(seed: int = 0, **over) -> RambaModel:
    torch.manual_seed(seed)
    return RambaModel({"preset": "tiny", "text_encoder": "hashing", **over}).eval()


def _seqs(seed: int, mask_rate: float = 0.0):
    db, seeds = shop_database(seed)
    return sequences_for(db, seeds, SHOP_TARGET, lookback_s=LOOKBACK_S, sampler=SamplerConfig(n_child=5, max_rows=30))


@given(seed=st.integers(0, 1000))
def test_gather_path_equals_tabzoo_masks_path(seed: int) -> None:
    batch = collate(_seqs(seed), ENC)
    gather = _model(seed, attention="gather")
    masked = _model(seed, attention="masked")
    masked.load_state_dict(gather.state_dict())
    with torch.no_grad():
        torch.testing.assert_close(masked(batch), gather(batch), rtol=1e-4, atol=1e-5)


@given(seed=st.integers(0, 1000))
@settings(max_examples=10, deadline=None)
def test_gather_path_gradients_equal_tabzoo_masks_path(seed: int) -> None:
    """The gather path's backward (q, k, v unbound from the gathered qkv) against the masks path:
    the gradients of the input and of every parameter of both structural attentions."""
    batch = collate(_seqs(seed), ENC)
    grads = []
    for impl in ("gather", "masked"):
        model = _model(seed, attention=impl)
        blk = model.blocks[0]
        x = torch.randn(*batch["kind"].shape, model.cfg.d_model, generator=torch.Generator().manual_seed(seed),
                        requires_grad=True)
        struct = row_structure(batch["row"], batch["edges"], int(batch["n_rows"]), model.cfg.max_rel_rows)
        keep = (~batch["pad"])[..., None].float()
        y = (blk.intra(x, struct, impl) + blk.rel(x, struct, impl)) * keep
        (y * torch.linspace(-1, 1, y.numel()).view_as(y)).sum().backward()
        grads.append([x.grad] + [p.grad for m in (blk.intra, blk.rel) for p in m.parameters()])
    for got, ref in zip(*grads, strict=True):
        torch.testing.assert_close(got, ref, rtol=1e-4, atol=1e-5)


def test_row_structure_matches_the_masks() -> None:
    from tabzoo.masks import edges, same_group

    batch = collate(_seqs(1), ENC)
    st_ = row_structure(batch["row"], batch["edges"], batch["n_rows"], max_rel_rows=10**6)
    row = batch["row"][0]
    ids = row.clone()
    ids[row < 0] = -1 - torch.nonzero(row < 0).squeeze(-1)
    n = len(row)
    intra = same_group(ids).materialize(n, n) & (row >= 0)[:, None]
    rel = edges(st_["pairs"][:, 0], st_["pairs"][:, 1], group_ids=ids).materialize(n, n)
    for mask, keys in ((intra, st_["row_tok"]), (rel, st_["rel_keys"])):
        dense = torch.zeros(n, n, dtype=torch.bool)
        for r in range(st_["row_tok"].shape[0]):
            q = st_["row_tok"][r][(st_["row_tok"][r] >= 0) & (st_["row_tok"][r] < n)]
            k = keys[r][(keys[r] >= 0) & (keys[r] < n)]
            dense[q[:, None], k[None, :]] = True
        assert torch.equal(dense, mask)


@pytest.mark.parametrize("mixer", ["ssm", "dense"])
def test_prediction_does_not_depend_on_the_rest_of_the_batch(mixer: str) -> None:
    seqs = _seqs(2) + _seqs(3)
    model = _model(1, mixer=mixer)
    with torch.no_grad():
        together = model.predict_target(collate(seqs, ENC))
        alone = torch.cat([model.predict_target(collate([s], ENC)) for s in seqs])
    torch.testing.assert_close(together, alone, rtol=1e-4, atol=1e-5)


def test_masked_and_missing_values_are_never_read() -> None:
    batch = collate(_seqs(4), ENC)
    model = _model(2)
    val = batch["val"].clone()
    hide = batch["state"] != 0
    val[hide] = 123.0
    with torch.no_grad():
        torch.testing.assert_close(model({**batch, "val": val}), model(batch), rtol=0, atol=0)


def test_dense_mixer_reads_every_token_and_has_no_ssm() -> None:
    """The dense baseline (``mixer="dense"``): no SSM or gate parameters, and the target's output
    moves when an observed numeric cell of another row is changed."""
    model = _model(3, mixer="dense")
    assert not any("A_log" in n or "gate" in n for n, _ in model.named_parameters())
    batch = collate(_seqs(5)[:1], ENC)
    pos = int(batch["target_pos"][0])
    row = batch["row"][0]
    far = [i for i in range(row.shape[0]) if row[i] >= 0 and row[i] != row[pos] and batch["state"][0, i] == 0
           and batch["kind"][0, i] == 1]
    assert far, "the shop sequence has an observed numeric cell in another row"
    val = batch["val"].clone()
    val[0, far[-1], 0] += 3.0
    with torch.no_grad():
        assert not torch.allclose(model.predict_target({**batch, "val": val}), model.predict_target(batch))
    with pytest.raises(TabzooInputError, match="mixer"):
        make_config({"mixer": "rnn"})


def test_gate_scales_delta_of_the_scan(monkeypatch) -> None:
    """delta = softplus(W x + b) * g (eq. 29), for both scan directions; g = 0 passes the state."""
    import tabzoo_ramba.layers as layers

    seen: list[tuple[torch.Tensor, bool]] = []
    real = layers.selective_scan

    def spy(x, delta, A, B, C, D=None, reverse=False, **fused):
        from tabzoo.kernels.selective_scan import scan_prologue

        assert fused["delta_softplus"] and fused["delta_bias"] is not None
        step = scan_prologue(delta, fused["delta_bias"], fused["delta_softplus"], fused["delta_scale"])
        seen.append((step.detach().clone(), reverse))
        return real(x, delta, A, B, C, D, reverse=reverse, **fused)

    monkeypatch.setattr(layers, "selective_scan", spy)
    monkeypatch.setattr(layers, "_fused", lambda op, inputs: None)  # the eager chain (the fused op: below)
    torch.manual_seed(0)
    ssm = GatedBiSSM(8, 4, 4, 2, 16, 8)
    h, pad = torch.randn(1, 12, 8), torch.zeros(1, 12, dtype=torch.bool)
    g = torch.rand(1, 12) * 0.9 + 0.05
    with torch.no_grad():
        ssm(h, torch.ones(1, 12), pad)
        ssm(h, g, pad)
    (d1, r1), (d1b, r1b), (dg, _), (dgb, _) = seen
    assert (r1, r1b) == (False, True)
    torch.testing.assert_close(dg, d1 * g[..., None])
    torch.testing.assert_close(dgb, d1b * g[..., None])
    # a zero gate makes the recurrence an identity: the state after the span equals the state before
    x = torch.randn(1, 6, 3)
    A = -torch.rand(3, 2) - 0.1
    Bm, Cm = torch.randn(1, 6, 2), torch.randn(1, 6, 2)
    delta = torch.rand(1, 6, 3)
    delta[0, 2:4] = 0.0
    y = real(x, delta, A, Bm, Cm)
    x2 = x.clone()
    x2[0, 2:4] += 7.0
    torch.testing.assert_close(real(x2, delta, A, Bm, Cm)[0, 4:], y[0, 4:])


@pytest.mark.parametrize("pad_tail", [0, 3])
def test_fused_mixer_and_attention_equal_the_eager_chain(monkeypatch, pad_tail: int) -> None:
    """Where the compiled library runs, GatedBiSSM is one ``bimamba_inner`` call and the gather path
    one ``gathered_attention`` call: outputs and every gradient equal the eager per-op chain."""
    import tabzoo_ramba.layers as layers
    from tabzoo.kernels import select_backend

    torch.manual_seed(1)
    ssm = GatedBiSSM(8, 4, 4, 2, 16, 8)
    h, pad = torch.randn(2, 12, 8), torch.zeros(2, 12, dtype=torch.bool)
    if pad_tail:
        pad[1, -pad_tail:] = True
    g = (torch.rand(2, 12) * 0.9 + 0.05) * (~pad)
    if select_backend("bimamba_inner", x=h, z=h, gate=g, open_=g, **ssm._params("f", ssm.fwd),
                      **ssm._params("b", ssm.bwd)).name == "reference":
        pytest.skip("the compiled CPU library is not built here")

    def run() -> tuple[torch.Tensor, list[torch.Tensor]]:
        ssm.zero_grad()
        hh = h.clone().requires_grad_(True)
        out = ssm(hh, g, pad)
        (out * torch.linspace(-1, 1, out.numel()).view_as(out)).sum().backward()
        return out.detach(), [hh.grad] + [p.grad.clone() for p in ssm.parameters() if p.grad is not None]

    fused_out, fused_grads = run()
    monkeypatch.setattr(layers, "_fused", lambda op, inputs: None)
    eager_out, eager_grads = run()
    torch.testing.assert_close(fused_out, eager_out, rtol=1e-5, atol=1e-6)
    assert len(fused_grads) == len(eager_grads)
    for a, b in zip(fused_grads, eager_grads, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_gate_uses_schema_and_target() -> None:
    model = _model(3)
    batch = collate(_seqs(5), ENC)
    g = model.gates(batch)[0]
    assert g.shape == batch["kind"].shape and ((g > 0) & (g < 1))[~batch["pad"]].all()
    cols = batch["col"][0][~batch["pad"][0]]
    gg = g[0][~batch["pad"][0]]
    for c in cols.unique():  # one gate per column (schema only, not values)
        assert torch.allclose(gg[cols == c], gg[cols == c][0])


def test_scan_goes_through_the_kernel_registry() -> None:
    from tabzoo.kernels import use

    batch = collate(_seqs(6), ENC)
    model = _model(4)
    with torch.no_grad():
        fast = model(batch)
        with use("reference"):
            ref = model(batch)
    torch.testing.assert_close(fast, ref, rtol=1e-4, atol=1e-4)


def test_mlm_loss_and_gradients() -> None:
    from tabzoo_ramba.train import mlm_sequences

    db, _ = shop_database(7)
    seqs = mlm_sequences(db, 4, np.random.default_rng(0), SamplerConfig(n_child=5, max_rows=30))
    assert all(len(s.mlm) for s in seqs)
    batch = collate(seqs, ENC)
    model = _model(5).train()
    loss, parts = model.mlm_loss(batch)
    assert torch.isfinite(loss) and set(parts) <= {"huber", "bce", "ce"} and parts
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    assert grads and all(torch.isfinite(g).all() for g in grads)


def test_config_validation() -> None:
    with pytest.raises(TabzooInputError, match="unknown Ramba config"):
        make_config({"width": 3})
    with pytest.raises(TabzooInputError, match="preset"):
        make_config({"preset": "huge"})
    with pytest.raises(TabzooInputError, match="divisible"):
        make_config({"d_model": 30, "n_heads": 4})
    with pytest.raises(TabzooInputError, match="RambaConfig: n_heads=0: n_heads must be an integer >= 1"):
        make_config({"n_heads": 0})  # the core's check_params, before any division by it
    assert make_config({"preset": "paper"}).n_layers == 12


@given(seed=st.integers(0, 1000), length=st.integers(1, 9), reverse=st.booleans())
def test_causal_conv_equals_torch_conv1d(seed: int, length: int, reverse: bool) -> None:
    """The shifted multiply-add conv equals nn.Conv1d on the (flipped) channel-major layout."""
    torch.manual_seed(seed)
    ssm = GatedBiSSM(8, 4, 4, 2, 16, 8)
    x = torch.randn(2, length, 16)
    d = ssm.bwd if reverse else ssm.fwd
    with torch.no_grad():
        xs = x.flip(1) if reverse else x
        ref = d.conv(xs.transpose(1, 2))[..., :length].transpose(1, 2)
        ref = ref.flip(1) if reverse else ref
        torch.testing.assert_close(d.causal_conv(x, reverse), ref, rtol=1e-5, atol=1e-6)
