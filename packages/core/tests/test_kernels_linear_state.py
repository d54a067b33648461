"""The stateful pair ``linear_attention_state`` / ``linear_attention_read``: backends, algebra, errors."""

from __future__ import annotations

import contextlib

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tabzoo import kernels as K
from tabzoo.errors import TabzooInputError
from tabzoo.kernels.op_registry import ENV_VAR
from tabzoo.testing.fixtures import spy_backend

SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = {torch.float32: 2e-4, torch.bfloat16: 3e-2}


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def _close(a: torch.Tensor, b: torch.Tensor, tol: float, what: str) -> None:
    a, b = a.detach().float(), b.detach().float()
    assert a.shape == b.shape, what
    if b.numel() == 0:
        return
    err, scale = float((a - b).abs().max()), max(1.0, float(b.abs().max()))
    assert torch.isfinite(a).all(), what
    assert err <= tol * scale, f"{what}: {err:.3g} > {tol * scale:.3g}"


def _qkv(b: int, h: int, n: int, dh: int, dv: int, dtype: torch.dtype, seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(b, h, n, d, generator=g).to(dtype) for d in (dh, dh, dv))


@SETTINGS
@given(b=st.integers(1, 2), h=st.integers(1, 2), n=st.integers(0, 40), dh=st.sampled_from([4, 8, 16]),
       dv=st.sampled_from([4, 8]), dtype=st.sampled_from([torch.float32, torch.bfloat16]),
       seed=st.integers(0, 10_000), grad=st.booleans())
def test_state_and_read_backends_match_reference(b, h, n, dh, dv, dtype, seed, grad) -> None:
    q, k, v = _qkv(b, h, max(n, 1), dh, dv, dtype, seed)
    k, v = k[:, :, :n], v[:, :, :n]
    for backend in ("einsum",):
        leaves_r = [t.clone().requires_grad_(grad) for t in (q, k, v)]
        leaves_b = [t.clone().requires_grad_(grad) for t in (q, k, v)]
        with contextlib.nullcontext() if grad else torch.no_grad():
            with K.use("reference"):
                s_r, z_r = K.linear_attention_state(leaves_r[1], leaves_r[2])
                o_r = K.linear_attention_read(leaves_r[0], s_r + 0.5, z_r + 1.0)
            with K.use(backend):
                s_b, z_b = K.linear_attention_state(leaves_b[1], leaves_b[2])
                o_b = K.linear_attention_read(leaves_b[0], s_b + 0.5, z_b + 1.0)
        assert s_b.dtype == z_b.dtype == torch.float32 and o_b.dtype == dtype
        assert s_b.shape == (b, h, dh, dv) and z_b.shape == (b, h, dh) and o_b.shape == (b, h, max(n, 1), dv)
        _close(s_b, s_r, 1e-5, "S")
        _close(z_b, z_r, 1e-5, "z")
        _close(o_b, o_r, TOL[dtype], "read")
        if grad:
            w = torch.linspace(-1, 1, o_r.numel()).reshape(o_r.shape)
            (o_r.float() * w).sum().backward()
            (o_b.float() * w).sum().backward()
            for name, lr, lb in zip("qkv", leaves_r, leaves_b, strict=True):
                if lr.grad is None:
                    continue
                _close(lb.grad, lr.grad, TOL[dtype], f"d{name}")


@pytest.mark.parametrize("backend", ["reference", "einsum"])
def test_state_is_accumulable_over_chunks_and_read_equals_linear_attention(backend: str) -> None:
    q, k, v = _qkv(2, 3, 37, 8, 5, torch.float32, 0)
    nc = 29
    with torch.no_grad(), K.use(backend):
        s_all, z_all = K.linear_attention_state(k[:, :, :nc], v[:, :, :nc])
        s, z = torch.zeros_like(s_all), torch.zeros_like(z_all)
        for a, e in ((0, 7), (7, 8), (8, 20), (20, 29)):
            ds, dz = K.linear_attention_state(k[:, :, a:e], v[:, :, a:e])
            s += ds
            z += dz
        out = K.linear_attention_read(q, s, z)
        direct = K.linear_attention(q, k, v, nc)
    torch.testing.assert_close(s, s_all, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(z, z_all, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out, direct, rtol=1e-4, atol=1e-5)
    empty_s, empty_z = K.linear_attention_state(k[:, :, :0], v[:, :, :0])
    assert float(empty_s.abs().max()) == 0.0 and float(empty_z.abs().max()) == 0.0


def test_bf16_state_keeps_fp32_sums() -> None:
    n = 4096
    k = torch.full((1, 1, n, 4), 0.3, dtype=torch.bfloat16)
    v = torch.full((1, 1, n, 4), 0.7, dtype=torch.bfloat16)
    for backend in ("reference", "einsum"):
        with torch.no_grad(), K.use(backend):
            s, z = K.linear_attention_state(k, v)
        phi = 1.0 + float(torch.tensor(0.3, dtype=torch.bfloat16))
        assert abs(float(z[0, 0, 0]) - n * phi) < 1e-2 * n, backend  # a bf16 sum would stall near 256
        assert abs(float(s[0, 0, 0, 0]) - n * phi * float(torch.tensor(0.7, dtype=torch.bfloat16))) < 1e-2 * n


def test_use_reference_forces_the_reference_of_both_ops() -> None:
    q, k, v = _qkv(1, 2, 10, 8, 8, torch.float32, 1)
    with spy_backend("linear_attention_state", "reference") as st_calls, \
            spy_backend("linear_attention_read", "reference") as rd_calls, \
            spy_backend("linear_attention_state", "einsum") as st_fast, \
            spy_backend("linear_attention_read", "einsum") as rd_fast:
        with torch.no_grad():
            K.linear_attention_read(q, *K.linear_attention_state(k, v))
            assert (len(st_calls), len(rd_calls), len(st_fast), len(rd_fast)) == (0, 0, 1, 1)
            with K.use("reference"):
                K.linear_attention_read(q, *K.linear_attention_state(k, v))
            assert (len(st_calls), len(rd_calls)) == (1, 1) and (len(st_fast), len(rd_fast)) == (1, 1)


def test_validation_messages_name_the_fix() -> None:
    q, k, v = _qkv(1, 2, 6, 8, 4, torch.float32, 2)
    with pytest.raises(TabzooInputError, match=r"\[B, H, N, Dh\]"):
        K.linear_attention_state(k[0], v)
    with pytest.raises(TabzooInputError, match="share"):
        K.linear_attention_state(k, v[:, :, :3])
    with pytest.raises(TabzooInputError, match="cast"):
        K.linear_attention_state(k, v.double())
    s, z = K.linear_attention_state(k, v)
    with pytest.raises(TabzooInputError, match=r"must be \[B=1, H=2, Dh=4"):
        K.linear_attention_read(q[..., :4], s, z)
    with pytest.raises(TabzooInputError, match="z must be"):
        K.linear_attention_read(q, s, z[..., :3])
    with pytest.raises(TabzooInputError, match="S must be"):
        K.linear_attention_read(q, s[0], z)
