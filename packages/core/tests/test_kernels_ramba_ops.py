"""``gathered_attention`` and ``bimamba_inner`` (Ramba's block as two core ops): the compiled
``cpu_fused`` backends against the references, outputs and the gradients of every floating input
(hypothesis, fp32 and fp64 inputs, the fused pass computing in fp32); the refusals (dtype, CPU
autocast, the library unbuilt) and the ops' input errors. The numeric tests run where the library is
built (``python -m tabzoo.kernels.scan_build``); refusals and errors are checked everywhere."""

from __future__ import annotations

import pytest
import torch
from _compiled_kernels import BUILT, no_kernel_env  # noqa: F401  (the fixture is used by pytestmark)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tabzoo import kernels as K
from tabzoo.errors import TabzooInputError
from tabzoo.kernels import scan_cpu
from tabzoo.kernels.bimamba import bimamba_inner_cpu, bimamba_inner_reference
from tabzoo.kernels.gathered_attention import gathered_attention_cpu, gathered_attention_reference
from tabzoo.kernels.op_registry import _complete, list_backends
from tabzoo.testing.checks.kernels import bimamba_inner_inputs, gathered_attention_inputs

pytestmark = pytest.mark.usefixtures("no_kernel_env")


def _grads(fn, inputs: dict, dtype: torch.dtype) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    leaves = {k: v.detach().to(dtype).requires_grad_() for k, v in inputs.items()
              if isinstance(v, torch.Tensor) and v.is_floating_point()}
    out = fn(**{**inputs, **leaves})
    cot = torch.randn(out.shape, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    (out * cot.to(out.dtype)).sum().backward()
    return out.detach().double(), {k: v.grad.double() for k, v in leaves.items()}


def _amax(t: torch.Tensor) -> float:
    return float(t.abs().max()) if t.numel() else 0.0


def _close(fused, ref, rtol: float, atol: float) -> None:
    out_f, g_f = fused
    out_r, g_r = ref
    torch.testing.assert_close(out_f, out_r, rtol=rtol, atol=atol * max(1.0, _amax(out_r)))
    for k in g_r:
        torch.testing.assert_close(g_f[k], g_r[k], rtol=rtol,
                                   atol=atol * max(1.0, _amax(g_r[k])), msg=k)


@BUILT
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_gathered_attention_fused_matches_reference(seed: int, dtype: torch.dtype) -> None:
    """fp32 fused pass against the reference in ``dtype`` (fp64: the exact answer), within 1e-5."""
    inputs = gathered_attention_inputs(seed, torch.float64, "cpu")
    ref = _grads(gathered_attention_reference, inputs, dtype)
    fused = _grads(gathered_attention_cpu, inputs, torch.float32)
    _close(fused, ref, 1e-5, 1e-5)


@BUILT
@pytest.mark.parametrize("threads", [1, 2])
def test_gathered_attention_shared_keys_across_threads(threads: int) -> None:
    """Keys shared by many rows (the relational case): the backward's per-thread buffers sum to the
    reference's gradient with one thread and with two."""
    g = torch.Generator().manual_seed(0)
    qkv = torch.randn(40, 3 * 2 * 4, generator=g, dtype=torch.float64)
    q_tok = torch.arange(40).view(10, 4)
    k_tok = torch.randint(0, 40, (10, 12), generator=g)
    k_tok[3] = -1  # a row without keys: 0 out, no gradient
    inputs = {"qkv": qkv, "q_tok": q_tok, "k_tok": k_tok, "n_heads": 2}
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        fused = _grads(gathered_attention_cpu, inputs, torch.float32)
    finally:
        torch.set_num_threads(before)
    ref = _grads(gathered_attention_reference, inputs, torch.float64)
    _close(fused, ref, 1e-5, 1e-5)
    assert (fused[0].view(10, 4, 8)[3] == 0).all()


@BUILT
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 100_000), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_bimamba_inner_fused_matches_reference(seed: int, dtype: torch.dtype) -> None:
    """Both directions, every parameter's gradient and those of x, z, gate and open_; the fused
    scan's vectorised exp / softplus round a little differently (within 1e-4 of the fp64 answer)."""
    inputs = bimamba_inner_inputs(seed, torch.float64, "cpu")
    ref = _grads(bimamba_inner_reference, inputs, dtype)
    fused = _grads(bimamba_inner_cpu, inputs, torch.float32)
    _close(fused, ref, 1e-4, 1e-4)


@BUILT
def test_dispatch_picks_the_fused_backends_and_refuses_under_autocast() -> None:
    ga = gathered_attention_inputs(0, torch.float32, "cpu")
    bm = bimamba_inner_inputs(0, torch.float32, "cpu")
    assert K.select_backend("gathered_attention", **ga).name == "cpu_fused"
    assert K.select_backend("bimamba_inner", **bm).name == "cpu_fused"
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert K.select_backend("gathered_attention", **ga).name == "reference"
        assert K.select_backend("bimamba_inner", **bm).name == "reference"
    torch.testing.assert_close(K.gathered_attention(**ga), gathered_attention_reference(**ga), rtol=1e-5, atol=1e-5)


def test_fused_backends_refuse_with_reasons() -> None:
    """fp64 and bf16 are refused by dtype, CPU autocast by a reason of its own."""
    by_name = {(b.op, b.name): b for b in list_backends()}
    for op, gen in (("gathered_attention", gathered_attention_inputs), ("bimamba_inner", bimamba_inner_inputs)):
        fused = by_name[(op, "cpu_fused")]
        for dtype in (torch.float64, torch.bfloat16):
            reasons = fused.reasons(_complete(op, gen(1, dtype, "cpu")))
            assert reasons and any("dtype" in r or "not available" in r for r in reasons), reasons
        with torch.autocast("cpu", dtype=torch.bfloat16):
            reasons = fused.not_supported_reasons(_complete(op, gen(1, torch.float32, "cpu")))
        assert any("autocast" in r for r in reasons)
        assert by_name[(op, "reference")].priority < fused.priority


def test_library_off_falls_back_to_the_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(scan_cpu.ENV_VAR, "0")
    ga = gathered_attention_inputs(2, torch.float32, "cpu")
    assert K.select_backend("gathered_attention", **ga).name == "reference"
    assert K.select_backend("bimamba_inner", **bimamba_inner_inputs(2, torch.float32, "cpu")).name == "reference"
    assert K.gathered_attention(**ga).shape == (ga["qkv"].shape[0], ga["qkv"].shape[1] // 3)


def test_input_errors() -> None:
    ga = gathered_attention_inputs(3, torch.float32, "cpu")
    with pytest.raises(TabzooInputError, match="n_heads"):
        K.gathered_attention(ga["qkv"], ga["q_tok"], ga["k_tok"], n_heads=7 * ga["qkv"].shape[1])
    with pytest.raises(TabzooInputError, match="int64"):
        K.gathered_attention(ga["qkv"], ga["q_tok"].int(), ga["k_tok"], n_heads=ga["n_heads"])
    bm = bimamba_inner_inputs(3, torch.float32, "cpu")
    bm.pop("D_b")
    with pytest.raises(TabzooInputError, match="missing"):
        K.bimamba_inner(**bm)


def test_the_kit_has_a_generator_for_every_registered_op() -> None:
    """``tabzoo.testing``'s kernel-equivalence check reaches every core op, these two included."""
    from tabzoo.testing.checks.kernels import _generators

    assert set(K.list_ops()) <= set(_generators())


@BUILT
def test_the_kits_kernel_equivalence_check_passes_on_the_new_ops() -> None:
    from tabzoo.testing.case import ConformanceCase
    from tabzoo.testing.checks import check_kernel_equivalence

    for op in ("gathered_attention", "bimamba_inner"):
        case = ConformanceCase(f"ramba_ops_{op}", kernel_ops=[op])
        result = check_kernel_equivalence(case, seed=0, max_examples=4)
        assert result.status == "passed", result.message
