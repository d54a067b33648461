"""Every Triton kernel against the torch reference on CPU tensors, in Triton's interpreter.

Runs only in a process started with ``TRITON_INTERPRET=1`` (``test_kernels_triton.py`` starts
one); elsewhere it is skipped. Shapes are small (the interpreter runs every program in Python)
but cross several tiles/chunks, with ragged edges. Outputs and gradients of every floating input,
fp32 and bf16. (bf16 ``tl.dot`` is wrong in the triton 3.9 interpreter, so on CPU the attention
kernels cast 16-bit dot operands to fp32; the bf16 loads, stores and dtype handling are tested,
the bf16 tensor-core path itself only on a GPU.)
"""

from __future__ import annotations

import importlib

import pytest
import torch
from tabzoo import kernels as K
from tabzoo import masks as M
from tabzoo.kernels.op_registry import ENV_VAR
from tabzoo.kernels.triton import implementation, interpreting

pytestmark = pytest.mark.skipif(
    not interpreting(), reason="needs TRITON_INTERPRET=1 before triton is imported; test_kernels_triton.py runs it")

TOL = {torch.float32: 1e-4, torch.bfloat16: 3e-2}
attn_ref = importlib.import_module("tabzoo.kernels.attention").attention_reference
lin_ref = importlib.import_module("tabzoo.kernels.linear_attention").linear_attention_reference
scan_ref = importlib.import_module("tabzoo.kernels.selective_scan").selective_scan_reference


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def _compare(fn_a, fn_b, inputs: dict, dtype: torch.dtype, seed: int = 0) -> None:
    """Outputs and gradients (of every floating tensor input) of two implementations agree."""
    results = []
    for fn in (fn_a, fn_b):
        leaves = {k: v.detach().clone().requires_grad_(True) for k, v in inputs.items()
                  if isinstance(v, torch.Tensor) and v.is_floating_point()}
        out = fn(**{**inputs, **leaves})
        outs = out if isinstance(out, tuple) else (out,)
        g = torch.Generator().manual_seed(seed)
        loss = sum((o.float() * torch.randn(o.shape, generator=g)).sum() for o in outs)
        grads = torch.autograd.grad(loss, list(leaves.values()), allow_unused=True)
        results.append((outs, dict(zip(leaves, grads, strict=True))))
    (oa, ga), (ob, gb) = results
    tol = TOL[dtype]
    for i, (a, b) in enumerate(zip(oa, ob, strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, (i, a.shape, b.shape, a.dtype, b.dtype)
        scale = max(1.0, float(b.detach().float().abs().max()))
        assert float((a.detach().float() - b.detach().float()).abs().max()) <= tol * scale, f"output {i}"
    for name in ga:
        a, b = ga[name], gb[name]
        if b is None:
            continue
        assert a is not None, name
        scale = max(1.0, float(b.float().abs().max()))
        err = float((a.float() - b.float()).abs().max())
        assert err <= tol * scale, f"grad of {name}: {err:.3g} > {tol * scale:.3g}"


def _rand(*shape: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed)).to(dtype)


# ------------------------------------------------------------------ masked_attention (block-sparse)
def _bool_mask() -> torch.Tensor:
    m = torch.rand(21, 37, generator=torch.Generator().manual_seed(3)) < 0.3
    m[0] = False  # a row with no allowed key: output 0, gradients 0
    return m


ATTN_CASES = [
    ("causal", 1, 2, 40, 40, 16, M.causal(), None, torch.float32),
    ("context_query", 2, 1, 35, 35, 8, M.context_query(20), 0.5, torch.float32),
    ("window|global", 1, 1, 34, 34, 16, M.window(2) | M.global_tokens(1), None, torch.float32),
    ("bool 2-d, empty row", 1, 2, 21, 37, 16, _bool_mask(), None, torch.float32),
    ("none", 1, 1, 18, 25, 32, None, None, torch.float32),
    ("causal bf16", 1, 2, 40, 40, 16, M.causal(), None, torch.bfloat16),
    ("context_query bf16", 1, 1, 35, 35, 16, M.context_query(20), None, torch.bfloat16),
]


@pytest.mark.parametrize("name, b, h, nq, nk, dh, mask, scale, dtype", ATTN_CASES, ids=[c[0] for c in ATTN_CASES])
def test_block_sparse_attention_matches_reference(name, b, h, nq, nk, dh, mask, scale, dtype) -> None:
    inputs = {"q": _rand(b, h, nq, dh, dtype=dtype, seed=1), "k": _rand(b, h, nk, dh, dtype=dtype, seed=2),
              "v": _rand(b, h, nk, dh, dtype=dtype, seed=3), "mask": mask, "scale": scale}
    _compare(implementation("masked_attention"), attn_ref, inputs, dtype)


def test_block_layout_skips_empty_tiles_and_reads_bits_only_for_partial_ones() -> None:
    from tabzoo.kernels.triton.attention import build_layout

    lay = build_layout(M.causal(), 64, 64, 16, torch.device("cpu"))
    assert lay.nnz == 10  # 4 x 4 tiles, lower triangle with the diagonal
    assert int((lay.row_tile >= 0).sum()) == 4 and lay.tiles.shape[0] == 4  # only the diagonal is partial
    assert lay.row_ptr.tolist() == [0, 1, 3, 6, 10] and lay.col_ptr.tolist() == [0, 4, 7, 9, 10]


# ------------------------------------------------------------------ linear attention + stateful pair
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("b, h, n, dh, dv, nc", [(1, 2, 150, 8, 4, 97), (2, 1, 7, 16, 32, 7)])
def test_linear_attention_matches_reference(b, h, n, dh, dv, nc, dtype) -> None:
    inputs = {"q": _rand(b, h, n, dh, dtype=dtype, seed=1), "k": _rand(b, h, n, dh, dtype=dtype, seed=2),
              "v": _rand(b, h, n, dv, dtype=dtype, seed=3), "n_context": nc, "eps": 1e-6}
    _compare(implementation("linear_attention"), lin_ref, inputs, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_state_and_read_match_reference_and_accumulate_over_chunks(dtype) -> None:
    k, v, q = _rand(1, 2, 90, 8, dtype=dtype, seed=4), _rand(1, 2, 90, 12, dtype=dtype, seed=5), \
        _rand(1, 2, 33, 8, dtype=dtype, seed=6)
    state, read = implementation("linear_attention_state"), implementation("linear_attention_read")
    with K.use("reference"):
        _compare(state, lambda **kw: K.linear_attention_state(**kw), {"k": k, "v": v}, dtype)
        S, z = K.linear_attention_state(k, v)
        _compare(read, lambda **kw: K.linear_attention_read(**kw), {"q": q, "S": S, "z": z, "eps": 1e-6}, dtype)
    parts = [state(k=k[:, :, a:e], v=v[:, :, a:e]) for a, e in ((0, 64), (64, 65), (65, 90))]
    torch.testing.assert_close(sum(p[0] for p in parts), S, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(sum(p[1] for p in parts), z, rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ selective scan
@pytest.mark.parametrize("dtype, reverse, with_d, length, chunk", [
    (torch.float32, False, True, 15, 4), (torch.float32, True, False, 13, 5),
    (torch.bfloat16, False, False, 13, 4), (torch.bfloat16, True, True, 9, None),
])
def test_chunked_scan_matches_reference(dtype, reverse, with_d, length, chunk) -> None:
    b, d, n = 1, 20, 3  # 20 channels: two channel blocks of 16 on CPU
    inputs = {"x": _rand(b, length, d, dtype=dtype, seed=1),
              "delta": torch.nn.functional.softplus(_rand(b, length, d, dtype=torch.float32, seed=2)).to(dtype),
              "A": (-torch.exp(_rand(d, n, dtype=torch.float32, seed=3))).to(dtype),
              "B": _rand(b, length, n, dtype=dtype, seed=4), "C": _rand(b, length, n, dtype=dtype, seed=5),
              "D": _rand(d, dtype=dtype, seed=6) if with_d else None, "reverse": reverse}
    impl = implementation("selective_scan")
    _compare(lambda **kw: impl(**kw, chunk=chunk), scan_ref, inputs, dtype)


# ------------------------------------------------------------------ dispatch and the conformance kit
def test_in_the_interpreter_dispatch_may_pick_triton_on_cpu() -> None:
    q = torch.randn(1, 1, 8, 16)
    assert K.select_backend("masked_attention", q=q, k=q, v=q).name == "triton"
    with K.use("reference"):
        assert K.select_backend("masked_attention", q=q, k=q, v=q).name == "reference"


def test_kit_kernel_equivalence_covers_the_triton_backends() -> None:
    from tabzoo.kernels.linear_state import EXAMPLE_INPUTS
    from tabzoo.testing import ConformanceCase
    from tabzoo.testing import capabilities as cap
    from tabzoo.testing.checks import check_kernel_equivalence

    ops = ("masked_attention", "linear_attention", "selective_scan", "linear_attention_read")
    case = ConformanceCase("triton_interp", capabilities=frozenset({cap.KERNEL_EQUIVALENCE}), kernel_ops=ops,
                           kernel_inputs={"linear_attention_read": EXAMPLE_INPUTS["linear_attention_read"]})
    result = check_kernel_equivalence(case, seed=0, max_examples=2)
    assert result.status == "passed", result
