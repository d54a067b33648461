"""Every backend of every op matches the reference (outputs and gradients), plus edge cases."""

from __future__ import annotations

import contextlib
import importlib

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tabzoo import kernels as K
from tabzoo.errors import TabzooInputError
from tabzoo.kernels.op_registry import ENV_VAR, _complete

SETTINGS = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOL = {torch.float32: 2e-4, torch.bfloat16: 5e-2}
DTYPES = st.sampled_from([torch.float32, torch.bfloat16])


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def _run(op_fn, backend: str, grad: bool, **inputs):
    """Run one backend by forcing it; returns (output, grads of the float leaf tensors)."""
    leaves = {k: v.detach().clone().requires_grad_(grad) for k, v in inputs.items()
              if isinstance(v, torch.Tensor) and v.is_floating_point()}
    args = {**inputs, **leaves}
    ctx = contextlib.nullcontext() if grad else torch.no_grad()
    with ctx, K.use(backend):
        out = op_fn(**args)
    grads = {}
    if grad:
        weight = torch.linspace(-1, 1, out.numel()).reshape(out.shape)
        (out.float() * weight).sum().backward()
        grads = {k: v.grad for k, v in leaves.items()}
    return out, grads


def _close(a: torch.Tensor, b: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    tol = TOL[dtype]
    a, b = a.detach().float(), b.detach().float()
    scale = max(1.0, float(b.abs().max()))
    err = float((a - b).abs().max())
    assert torch.isfinite(a).all(), f"{what}: non-finite values"
    assert err <= tol * scale, f"{what}: max abs error {err:.3g} > {tol * scale:.3g}"


def _check_all_backends(op: str, op_fn, dtype: torch.dtype, **inputs) -> list[str]:
    ref_out, ref_grads = _run(op_fn, "reference", True, **inputs)
    checked = []
    for backend in K.list_backends(op):
        if backend.name == "reference":
            continue
        grad = True
        with K.use(backend.name):
            full = _complete(op, {k: v.detach().requires_grad_(v.is_floating_point()) if isinstance(v, torch.Tensor) else v
                                  for k, v in inputs.items()})
            if backend.reasons(full):
                grad = False
                with torch.no_grad():
                    if backend.reasons(_complete(op, inputs)):
                        continue  # e.g. a GPU-only plugin backend
        # the no-autograd path (backends may use buffers there) and, where supported, autograd
        for with_grad in (False, True) if grad else (False,):
            out, grads = _run(op_fn, backend.name, with_grad, **inputs)
            assert out.shape == ref_out.shape and out.dtype == ref_out.dtype
            _close(out, ref_out, dtype, f"{op}/{backend.name} output (grad={with_grad})")
            for name, g in grads.items():
                _close(g, ref_grads[name], dtype, f"{op}/{backend.name} d{name}")
        checked.append(backend.name)
    return checked


# --------------------------------------------------------------------------- masked_attention
def _mask_choices(nq: int, nk: int, seed: int):
    from tabzoo import masks as M

    gen = torch.Generator().manual_seed(seed)
    bool_mask = torch.rand(nq, nk, generator=gen) < 0.4
    bool_mask[0] = False  # always one fully masked row
    choices = [None, bool_mask, torch.rand(2, 1, nq, nk, generator=gen) < 0.5]
    if nq == nk:
        choices += [M.full(), M.causal(), M.window(2), M.global_tokens(1) | M.window(1),
                    M.context_query(max(1, nq // 2)), ~M.causal()]
    return choices


@SETTINGS
@given(b=st.integers(1, 2), h=st.integers(1, 2), nq=st.integers(1, 20), square=st.booleans(),
       nk=st.integers(1, 20), dh=st.sampled_from([8, 16]), dtype=DTYPES, seed=st.integers(0, 10_000),
       which=st.integers(0, 8), scale=st.sampled_from([None, 0.5]))
def test_masked_attention_backends_match_reference(b, h, nq, square, nk, dh, dtype, seed, which, scale) -> None:
    nk = nq if square else nk
    torch.manual_seed(seed)
    q, k, v = (torch.randn(b, h, n, dh).to(dtype) for n in (nq, nk, nk))
    choices = _mask_choices(nq, nk, seed)
    mask = choices[which % len(choices)]
    if isinstance(mask, torch.Tensor) and mask.dim() == 4:
        mask = mask.expand(b, h, nq, nk) if b == 2 else mask[:1]
    checked = _check_all_backends("masked_attention", K.masked_attention, dtype, q=q, k=k, v=v, mask=mask, scale=scale)
    assert "sdpa" in checked and "flex" in checked


@pytest.mark.parametrize("backend", ["reference", "sdpa", "flex"])
def test_fully_masked_rows_are_zero_with_finite_grads(backend: str) -> None:
    q, k, v = torch.randn(3, 1, 2, 6, 8).unbind(0)
    mask = torch.ones(6, 6, dtype=torch.bool)
    mask[2] = False
    mask[5] = False
    grad = backend != "flex"  # flex_attention has no CPU backward
    out, grads = _run(K.masked_attention, backend, grad, q=q, k=k, v=v, mask=mask)
    assert out[:, :, [2, 5]].abs().max() == 0
    assert out[:, :, [0, 1, 3, 4]].abs().max() > 0
    for g in grads.values():
        assert torch.isfinite(g).all()
    if grad:
        assert grads["q"][:, :, [2, 5]].abs().max() == 0


def test_mask_object_equals_its_materialised_form() -> None:
    from tabzoo import masks as M

    q, k, v = torch.randn(3, 2, 2, 10, 8).unbind(0)
    m = M.window(2) & ~M.causal() | M.global_tokens(1)
    a = K.masked_attention(q, k, v, m)
    b = K.masked_attention(q, k, v, m.materialize(10))
    assert torch.allclose(a, b, atol=1e-6)
    none_out = K.masked_attention(q, k, v, M.none())
    assert none_out.abs().max() == 0


def test_masked_attention_validation() -> None:
    q = torch.randn(1, 2, 4, 8)
    with pytest.raises(TabzooInputError, match="4-d"):
        K.masked_attention(q[0], q, q)
    with pytest.raises(TabzooInputError, match="does not broadcast"):
        K.masked_attention(q, q, q, torch.ones(3, 4, dtype=torch.bool))
    with pytest.raises(TabzooInputError, match="bool"):
        K.masked_attention(q, q, q, torch.zeros(4, 4))
    with pytest.raises(TabzooInputError, match="dtypes differ"):
        K.masked_attention(q, q.double(), q)


# --------------------------------------------------------------------------- linear_attention
@SETTINGS
@given(b=st.integers(1, 2), h=st.integers(1, 2), n=st.integers(1, 40), frac=st.floats(0.0, 1.0),
       dh=st.sampled_from([4, 16]), dv=st.sampled_from([4, 8]), dtype=DTYPES, seed=st.integers(0, 10_000),
       chunk=st.sampled_from([None, 1, 3, 16]))
def test_linear_attention_backends_match_reference(b, h, n, frac, dh, dv, dtype, seed, chunk) -> None:
    la_mod = importlib.import_module("tabzoo.kernels.linear_attention")

    nc = max(1, round(frac * n))
    torch.manual_seed(seed)
    q, k = (torch.randn(b, h, n, dh).to(dtype) for _ in range(2))
    v = torch.randn(b, h, n, dv).to(dtype)
    old = la_mod.DEFAULT_CHUNK_ROWS
    la_mod.DEFAULT_CHUNK_ROWS = chunk or old
    try:
        checked = _check_all_backends("linear_attention", K.linear_attention, dtype, q=q, k=k, v=v, n_context=nc)
    finally:
        la_mod.DEFAULT_CHUNK_ROWS = old
    assert "einsum" in checked


def test_linear_attention_reads_context_only() -> None:
    q, k, v = torch.randn(3, 1, 2, 12, 8).unbind(0)
    out = K.linear_attention(q, k, v, n_context=7)
    k2, v2 = k.clone(), v.clone()
    k2[:, :, 7:] += 5.0
    v2[:, :, 7:] -= 3.0
    assert torch.equal(out, K.linear_attention(q, k2, v2, n_context=7))
    k2[:, :, 3] += 1.0
    assert not torch.allclose(out, K.linear_attention(q, k2, v2, n_context=7))


def test_linear_attention_bf16_keeps_fp32_sums() -> None:
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 1, 1, 3000, 8).unbind(0)
    ref = K.linear_attention(q, k, v, n_context=2900)
    low = K.linear_attention(q.bfloat16(), k.bfloat16(), v.bfloat16(), n_context=2900)
    assert low.dtype == torch.bfloat16
    assert (low.float() - ref).abs().max() < 0.05


def test_linear_attention_validation() -> None:
    q = torch.randn(1, 1, 5, 4)
    for bad in (0, 6, 2.0, True):
        with pytest.raises(TabzooInputError, match="n_context"):
            K.linear_attention(q, q, q, bad)
    with pytest.raises(TabzooInputError, match="share"):
        K.linear_attention(q, q[:, :, :4], q, 2)


# --------------------------------------------------------------------------- selective_scan
def _scan_inputs(b, length, d, n, dtype, seed, with_d, a_max=4.0):
    gen = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=gen)  # noqa: E731
    inputs = {
        "x": r(b, length, d).to(dtype),
        "delta": torch.nn.functional.softplus(r(b, length, d)).to(dtype),
        "A": -(torch.rand(d, n, generator=gen) * a_max + 0.05),
        "B": r(b, length, n).to(dtype), "C": r(b, length, n).to(dtype),
        "D": r(d) if with_d else None,
    }
    return inputs


@SETTINGS
@given(b=st.integers(1, 2), length=st.integers(1, 70), d=st.integers(1, 5), n=st.integers(1, 6), dtype=DTYPES,
       seed=st.integers(0, 10_000), with_d=st.booleans(), reverse=st.booleans())
def test_selective_scan_backends_match_reference(b, length, d, n, dtype, seed, with_d, reverse) -> None:
    inputs = _scan_inputs(b, length, d, n, dtype, seed, with_d)
    checked = _check_all_backends("selective_scan", K.selective_scan, dtype, **inputs, reverse=reverse)
    assert "chunked" in checked


@pytest.mark.parametrize("chunk", [1, 2, 5, 16, 64, 100])
def test_chunked_scan_any_chunk_length(chunk: int) -> None:
    from tabzoo.kernels.selective_scan import selective_scan_chunked, selective_scan_reference

    inputs = _scan_inputs(2, 64, 3, 4, torch.float32, 1, True)
    for reverse in (False, True):
        ref = selective_scan_reference(**inputs, reverse=reverse)
        got = selective_scan_chunked(**inputs, reverse=reverse, chunk=chunk)
        assert (ref - got).abs().max() < 1e-4


def test_scan_reverse_is_flip_scan_flip() -> None:
    inputs = _scan_inputs(1, 20, 2, 3, torch.float32, 3, False)
    flipped = {k: (v.flip(1) if k in ("x", "delta", "B", "C") else v) for k, v in inputs.items()}
    assert torch.allclose(K.selective_scan(**inputs, reverse=True), K.selective_scan(**flipped).flip(1), atol=1e-5)
    assert not torch.allclose(K.selective_scan(**inputs, reverse=True), K.selective_scan(**inputs), atol=1e-3)


def test_scan_long_strong_decay_and_positive_a_stay_exact() -> None:
    # strong decay over long chunks: nothing may overflow (no exp of positive cumulative sums)
    inputs = _scan_inputs(1, 600, 2, 3, torch.float32, 4, False, a_max=50.0)
    inputs["delta"] = inputs["delta"] * 5
    with K.use("reference"):
        ref = K.selective_scan(**inputs)
    got = K.selective_scan(**inputs)
    assert torch.isfinite(got).all() and (ref - got).abs().max() < 1e-4
    # positive A (growing state) is accepted and computed faithfully by both backends
    inputs = _scan_inputs(1, 30, 2, 3, torch.float32, 5, False)
    inputs["A"] = inputs["A"].abs() * 0.1
    with K.use("reference"):
        ref = K.selective_scan(**inputs)
    assert torch.allclose(K.selective_scan(**inputs), ref, rtol=1e-4, atol=1e-4)


def _fused_inputs(b, length, d, n, seed, dtype=torch.float32):
    """Raw step sizes with a bias, softplus, a per-position scale (zeros included) and a gate."""
    inputs = _scan_inputs(b, length, d, n, dtype, seed, True)
    gen = torch.Generator().manual_seed(seed + 1)
    inputs["delta"] = (torch.randn(b, length, d, generator=gen) * 2).to(dtype)
    scale = torch.rand(b, length, generator=gen)
    scale[:, ::3] = 0.0  # padding-like positions: the state passes through unchanged
    return {**inputs, "delta_bias": torch.randn(d, generator=gen), "delta_softplus": True,
            "delta_scale": scale.to(dtype), "z": (torch.randn(b, length, d, generator=gen) * 2).to(dtype)}


def _fused_fp64(x, delta, A, B, C, D, delta_bias, delta_softplus, delta_scale, z, reverse=False):
    """The fused scan written out in fp64, a loop over positions (the obvious definition)."""
    x, delta, A, B, C, D, bias, scale, z = (t.double() for t in (x, delta, A, B, C, D, delta_bias, delta_scale, z))
    dt = delta + bias
    dt = torch.nn.functional.softplus(dt, threshold=1e9) if delta_softplus else dt
    dt = dt * scale[..., None]
    h = torch.zeros(x.shape[0], x.shape[2], A.shape[1], dtype=torch.float64)
    ys = [None] * x.shape[1]
    for t in (range(x.shape[1] - 1, -1, -1) if reverse else range(x.shape[1])):
        h = torch.exp(dt[:, t, :, None] * A) * h + (dt[:, t] * x[:, t])[..., None] * B[:, t, None, :]
        ys[t] = (h * C[:, t, None, :]).sum(-1) + D * x[:, t]
    return torch.stack(ys, 1) * torch.nn.functional.silu(z)


@SETTINGS
@given(b=st.integers(1, 2), length=st.integers(1, 70), d=st.integers(1, 5), n=st.integers(1, 6),
       seed=st.integers(0, 10_000), reverse=st.booleans())
def test_selective_scan_fused_arguments_every_backend_agrees(b, length, d, n, seed, reverse) -> None:
    """``delta_bias``, ``delta_softplus``, ``delta_scale`` and ``z``: every backend (the fusing
    ``cpu_fused`` where built, the others through the op's torch prologue/epilogue) matches the
    reference, outputs and the gradients of every input."""
    inputs = _fused_inputs(b, length, d, n, seed)
    checked = _check_all_backends("selective_scan", K.selective_scan, torch.float32, **inputs, reverse=reverse)
    assert "chunked" in checked


_BUILT = importlib.import_module("tabzoo.kernels.scan_cpu").built()


@pytest.mark.parametrize("backend", ["reference", "chunked", None, pytest.param("cpu_fused", marks=pytest.mark.skipif(
    not _BUILT, reason="the compiled scan is not built here (python -m tabzoo.kernels.scan_build)"))])
@pytest.mark.parametrize("reverse", [False, True])
def test_selective_scan_fused_arguments_match_fp64(backend: str | None, reverse: bool) -> None:
    """Output and the gradients of all nine inputs against the fp64 loop, across the compiled
    scan's segment boundary (64 positions); ``None`` = what dispatch picks (``cpu_fused`` where built)."""
    if backend == "cpu_fused":
        assert K.select_backend("selective_scan", **{k: v for k, v in _fused_inputs(1, 4, 2, 3, 0).items()
                                                     if k in ("x", "delta", "A", "B", "C", "D")}).name == "cpu_fused"
    base = {k: v for k, v in _fused_inputs(2, 150, 5, 4, 7).items() if k != "delta_softplus"}
    outs = []
    for fn in (_fused_fp64, K.selective_scan):
        ins = {k: v.detach().clone().double().requires_grad_() if fn is _fused_fp64 else v.detach().clone().requires_grad_()
               for k, v in base.items()}
        with K.use(backend) if backend else contextlib.nullcontext():
            y = fn(**ins, delta_softplus=True, reverse=reverse)
        gy = torch.randn(y.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64).to(y.dtype)
        (y * gy).sum().backward()
        outs.append([y.detach()] + [ins[k].grad for k in base])
    for name, ref, got in zip(["y", *base], *outs, strict=True):
        assert got.dtype == torch.float32
        err = float((ref - got.double()).abs().max() / ref.abs().max().clamp(min=1e-6))
        assert err < 2e-5, f"{name}: relative error {err}"


def test_selective_scan_fused_arguments_are_validated() -> None:
    good = _fused_inputs(1, 5, 2, 3, 0)
    for name, bad in (("delta_bias", torch.randn(3)), ("delta_scale", torch.randn(1, 5, 1)), ("z", torch.randn(1, 4, 2))):
        with pytest.raises(TabzooInputError, match=f"{name} must be a floating tensor of shape"):
            K.selective_scan(**{**good, name: bad})


def test_scan_matches_a_hand_computed_case() -> None:
    x = torch.tensor([[[1.0], [2.0]]])
    delta = torch.tensor([[[0.5], [1.0]]])
    A = torch.tensor([[-1.0]])
    B = torch.tensor([[[2.0], [1.0]]])
    C = torch.tensor([[[1.0], [3.0]]])
    h0 = 0.5 * 1.0 * 2.0  # 1.0
    h1 = torch.exp(torch.tensor(-1.0)) * h0 + 1.0 * 2.0 * 1.0
    expected = torch.tensor([[[h0 * 1.0 + 0.1], [float(h1) * 3.0 + 0.2]]])
    for name in ("reference", "chunked"):
        with K.use(name):
            got = K.selective_scan(x, delta, A, B, C, D=torch.tensor([0.1]))
        assert torch.allclose(got, expected, atol=1e-6), name


def test_selective_scan_validation() -> None:
    good = _scan_inputs(1, 5, 2, 3, torch.float32, 0, True)
    with pytest.raises(TabzooInputError, match="A must be"):
        K.selective_scan(**{**good, "A": torch.randn(3, 3)})
    with pytest.raises(TabzooInputError, match="delta must have shape"):
        K.selective_scan(**{**good, "delta": good["delta"][:, :4]})
    with pytest.raises(TabzooInputError, match="D must have shape"):
        K.selective_scan(**{**good, "D": torch.ones(5)})
    with pytest.raises(TabzooInputError, match="floating"):
        K.selective_scan(**{**good, "B": good["B"].long()})


@SETTINGS
@given(b=st.integers(1, 2), length=st.integers(1, 90), d=st.integers(1, 4), n=st.integers(1, 5),
       block=st.integers(1, 300), seed=st.integers(0, 10_000), reverse=st.booleans(), with_d=st.booleans())
def test_chunked_scan_over_many_blocks_matches_reference(b, length, d, n, block, seed, reverse, with_d) -> None:
    """Small blocks (so the state is carried block to block, forward and backward) give the
    reference's outputs and gradients."""
    from tabzoo.kernels import scan_chunked

    inputs = _scan_inputs(b, length, d, n, torch.float32, seed, with_d)
    saved = scan_chunked.BLOCK_ELEMENTS
    scan_chunked.BLOCK_ELEMENTS = block
    try:
        got, got_grads = _run(K.selective_scan, "chunked", True, **inputs, reverse=reverse)
    finally:
        scan_chunked.BLOCK_ELEMENTS = saved
    ref, ref_grads = _run(K.selective_scan, "reference", True, **inputs, reverse=reverse)
    _close(got, ref, torch.float32, "output")
    for name, grad in ref_grads.items():
        _close(got_grads[name], grad, torch.float32, f"grad {name}")


# --------------------------------------------------------------------------- causal_conv1d
def _conv_inputs(b, length, d, k, seed, dtype=torch.float32):
    gen = torch.Generator().manual_seed(seed)
    mask = (torch.rand(b, length, generator=gen) > 0.3).to(dtype)
    return {"x": torch.randn(b, length, d, generator=gen).to(dtype), "weight": torch.randn(d, k, generator=gen).to(dtype),
            "bias": torch.randn(d, generator=gen).to(dtype), "mask": mask}


@SETTINGS
@given(b=st.integers(1, 2), length=st.integers(1, 40), d=st.integers(1, 9), k=st.integers(1, 5),
       seed=st.integers(0, 10_000), reverse=st.booleans(), silu=st.booleans(), with_mask=st.booleans())
def test_causal_conv1d_backends_match_reference(b, length, d, k, seed, reverse, silu, with_mask) -> None:
    inputs = _conv_inputs(b, length, d, k, seed)
    if not with_mask:
        inputs["mask"] = None
    checked = _check_all_backends("causal_conv1d", K.causal_conv1d, torch.float32, **inputs, reverse=reverse,
                                  activation="silu" if silu else None)
    assert checked == (["cpu_fused"] if _BUILT else [])


@pytest.mark.parametrize("backend", ["reference", pytest.param("cpu_fused", marks=pytest.mark.skipif(
    not _BUILT, reason="the compiled library is not built here (python -m tabzoo.kernels.scan_build)"))])
@pytest.mark.parametrize("reverse", [False, True])
def test_causal_conv1d_is_torch_conv1d_then_silu_and_mask(backend: str, reverse: bool) -> None:
    """Against torch's depthwise ``conv1d`` in fp64 on the channel-major layout (flipped for
    ``reverse``), SiLU, mask: outputs and the gradients of x, weight, bias and mask."""
    base = _conv_inputs(2, 37, 6, 4, 3)
    outs = []
    for ours in (False, True):
        ins = {k: v.detach().clone().double().requires_grad_() if not ours else v.detach().clone().requires_grad_()
               for k, v in base.items()}
        if ours:
            with K.use(backend):
                y = K.causal_conv1d(ins["x"], ins["weight"], ins["bias"], reverse=reverse, activation="silu",
                                    mask=ins["mask"])
        else:
            xs = ins["x"].flip(1) if reverse else ins["x"]
            y = torch.nn.functional.conv1d(xs.transpose(1, 2), ins["weight"][:, None, :], ins["bias"], padding=3,
                                           groups=6)[..., :37].transpose(1, 2)
            y = torch.nn.functional.silu(y.flip(1) if reverse else y) * ins["mask"][..., None]
        gy = torch.randn(y.shape, generator=torch.Generator().manual_seed(2), dtype=torch.float64).to(y.dtype)
        (y * gy).sum().backward()
        outs.append([y.detach()] + [ins[k].grad for k in base])
    for name, ref, got in zip(["y", *base], *outs, strict=True):
        assert got.dtype == torch.float32
        err = float((ref - got.double()).abs().max() / ref.abs().max().clamp(min=1e-6))
        assert err < 2e-6, f"{name}: relative error {err}"


def test_causal_conv1d_validation() -> None:
    good = _conv_inputs(1, 5, 2, 3, 0)
    for bad, match in (({"weight": torch.randn(3, 3)}, "weight must be"), ({"mask": torch.ones(1, 4)}, "mask must be"),
                       ({"bias": torch.ones(3)}, "bias must be"), ({"activation": "relu"}, "activation='relu'")):
        with pytest.raises(TabzooInputError, match=match):
            K.causal_conv1d(**{**good, **bad})
