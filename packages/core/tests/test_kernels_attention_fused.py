"""``masked_attention/cpu_fused`` (the compiled short-sequence loop of :mod:`tabzoo.kernels.attention`,
in the library of :mod:`tabzoo.kernels.scan_cpu`): against the fp32 reference on strided heads (the
token-major layout Ramba's gather path passes), with key-padding masks and queries that may read no
key; which inputs dispatch sends to it and which it refuses. The numeric tests run where the library
is built (``python -m tabzoo.kernels.scan_build``); the refusals are checked everywhere."""

from __future__ import annotations

import pytest
import torch
from _compiled_kernels import BUILT, no_kernel_env  # noqa: F401  (the fixture is used by pytestmark)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tabzoo import kernels as K
from tabzoo.kernels.attention import FUSED_MAX_KEYS, _fused_reasons, attention_reference
from tabzoo.kernels.op_registry import _complete

pytestmark = pytest.mark.usefixtures("no_kernel_env")


def _heads(b: int, h: int, nq: int, nk: int, dh: int, seed: int) -> tuple[torch.Tensor, ...]:
    """q, k, v as [B, H, N, dh] views of one token-major [B, N, 3, H, dh] buffer (not contiguous)."""
    g = torch.Generator().manual_seed(seed)
    buf = torch.randn(b, max(nq, nk), 3, h, dh, generator=g)
    return buf[:, :nq, 0].transpose(1, 2), buf[:, :nk, 1].transpose(1, 2), buf[:, :nk, 2].transpose(1, 2)


def _run(fn, q, k, v, mask, scale):
    ins = [t.detach().clone().requires_grad_() for t in (q, k, v)]
    out = fn(*ins, mask=mask, scale=scale)
    go = torch.randn(out.shape, generator=torch.Generator().manual_seed(1))
    (out * go).sum().backward()
    return [out.detach()] + [t.grad for t in ins]


@BUILT
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(b=st.integers(1, 4), h=st.integers(1, 3), nq=st.integers(1, 9), nk=st.integers(1, FUSED_MAX_KEYS),
       dh=st.sampled_from([1, 8, 16]), masked=st.booleans(), empty_row=st.booleans(),
       scale=st.sampled_from([None, 0.3]), seed=st.integers(0, 10_000))
def test_fused_matches_reference(b, h, nq, nk, dh, masked, empty_row, scale, seed) -> None:
    """Output and the gradients of q, k, v within 1e-5 of the reference; a batch whose keys are all
    masked gets exactly 0 and zero gradients."""
    q, k, v = _heads(b, h, nq, nk, dh, seed)
    mask = None
    if masked:
        mask = torch.rand(b, 1, 1, nk, generator=torch.Generator().manual_seed(seed + 1)) > 0.3
        mask[..., 0] = True
        if empty_row:
            mask[0] = False
    inputs = {"q": q, "k": k, "v": v, "mask": mask, "scale": scale}
    assert not _fused_reasons(_complete("masked_attention", inputs))
    with K.use("cpu_fused"):
        got = _run(K.masked_attention, q, k, v, mask, scale)
    ref = _run(attention_reference, q, k, v, mask, scale)
    for name, r, o in zip(("out", "dq", "dk", "dv"), ref, got, strict=True):
        assert o.shape == r.shape and torch.isfinite(o).all(), name
        assert float((o - r).abs().max()) <= 1e-5 * max(1.0, float(r.abs().max())), name
    if masked and empty_row:
        for t in got:
            assert t[0].abs().max() == 0


@BUILT
def test_dispatch_takes_short_key_sequences_only() -> None:
    """Ramba's intra-row groups (8 keys) go to cpu_fused, longer key sequences and bf16 to sdpa."""
    q, k, v = _heads(3, 4, 8, 8, 16, 0)
    assert K.select_backend("masked_attention", q=q, k=k, v=v).name == "cpu_fused"
    mask = torch.ones(3, 1, 1, 8, dtype=torch.bool)
    assert K.select_backend("masked_attention", q=q, k=k, v=v, mask=mask).name == "cpu_fused"
    q2, k2, v2 = _heads(3, 4, 8, FUSED_MAX_KEYS + 1, 16, 0)
    assert K.select_backend("masked_attention", q=q2, k=k2, v=v2).name == "sdpa"
    qb, kb, vb = (t.to(torch.bfloat16) for t in (q, k, v))
    assert K.select_backend("masked_attention", q=qb, k=kb, v=vb).name == "sdpa"


def test_fused_refuses_masks_it_cannot_read() -> None:
    """A per-query mask, a per-head mask and a mask object are refused with a reason."""
    from tabzoo import masks as M

    q, k, v = _heads(2, 2, 5, 5, 8, 0)
    for mask in (torch.ones(5, 5, dtype=torch.bool), torch.ones(2, 2, 1, 5, dtype=torch.bool), M.causal()):
        reasons = _fused_reasons(_complete("masked_attention", {"q": q, "k": k, "v": v, "mask": mask}))
        assert reasons and "mask" in reasons[0]
