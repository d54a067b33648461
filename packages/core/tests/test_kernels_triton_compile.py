"""Every Triton kernel compiles for a Hopper GPU (sm_90) here, without a GPU.

The interpreter checks what the kernels compute; it does not check that they lower to GPU code
(types carried through loops, ``tl.dot`` shapes, shared memory). Triton can compile for a target
it does not see, with the ptxas it ships, so CI catches those errors too. bf16 is compiled (the
production dtype; fp32 lowers the same code with ``input_precision="ieee"`` and takes minutes).
"""

from __future__ import annotations

import pytest
from tabzoo.kernels.triton import interpreting

triton = pytest.importorskip("triton", reason="the Triton backends need the tabzoo-core[triton] extra")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(interpreting(), reason="kernels are interpreted in this process; nothing to compile"),
]

FLOAT_ARGS = {"eps", "qk_scale", "scale", "ln2"}
SHARED_LIMIT_SM90 = 227 * 1024


def _compile(fn, consts: dict, ptr_types: dict):
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    sig = {}
    for name in fn.arg_names:
        if name in consts:
            sig[name] = "constexpr"
        elif name.endswith("_ptr"):
            sig[name] = ptr_types.get(name, "*fp32")
        else:
            sig[name] = "fp32" if name in FLOAT_ARGS else "i32"
    src = ASTSource(fn=fn, signature=sig, constexprs={(fn.arg_names.index(k),): v for k, v in consts.items()})
    return triton.compile(src, target=GPUTarget("cuda", 90, 32))


def _kernels():
    from tabzoo.kernels.triton import attention as A
    from tabzoo.kernels.triton import linear as L
    from tabzoo.kernels.triton import scan as S

    bf = "*bf16"
    lin = {"DH": 64, "DV": 64, "BDH": 64, "BDV": 64, "BN": 64, "PREC": "tf32"}
    att = {"DH": 64, "BD": 64, "BLOCK": 64, "PREC": "tf32", "UP": False}
    att_t = {"q_ptr": bf, "k_ptr": bf, "v_ptr": bf, "o_ptr": bf, "do_ptr": bf, "rp_ptr": "*i32", "cols_ptr": "*i32",
             "tid_ptr": "*i32", "tiles_ptr": "*i8", "cp_ptr": "*i32", "rows_ptr": "*i32"}
    scan_t = {"x_ptr": bf, "dl_ptr": bf, "b_ptr": bf, "c_ptr": bf}
    out = [
        ("linear._state_fwd", L._state_fwd, lin, {"k_ptr": bf, "v_ptr": bf}),
        ("linear._read_fwd", L._read_fwd, {**lin, "BN": L.READ_BLOCK_N_CUDA}, {"q_ptr": bf, "o_ptr": bf}),
        ("linear._read_bwd", L._read_bwd, lin, {"q_ptr": bf, "g_ptr": bf}),
        ("linear._state_bwd", L._state_bwd, lin, {"k_ptr": bf, "v_ptr": bf}),
        ("attention._fwd", A._fwd, att, att_t),
        ("attention._bwd_dq", A._bwd_dq, att, att_t),
        ("attention._bwd_dkv", A._bwd_dkv, att, att_t),
    ]
    for rev in (False, True):
        sc = {"BD": 64, "BN": 16, "REVERSE": rev}
        out += [
            (f"scan._chunk[rev={rev},emit=0]", S._chunk, {**sc, "EMIT": False}, scan_t),
            (f"scan._chunk[rev={rev},emit=1]", S._chunk, {**sc, "EMIT": True}, scan_t),
            (f"scan._carry[backward={rev}]", S._carry, {"BD": 64, "BN": 16, "BACKWARD": rev}, {}),
            (f"scan._chunk_adj[rev={rev}]", S._chunk_adj, sc, scan_t),
            (f"scan._chunk_bwd[rev={rev}]", S._chunk_bwd, sc, scan_t),
        ]
    return out


def test_every_kernel_compiles_for_sm90() -> None:
    try:
        import triton.backends.nvidia  # noqa: F401
    except ImportError:
        pytest.skip("this triton build has no NVIDIA backend to compile for")
    compiled = []
    for name, fn, consts, types in _kernels():
        kernel = _compile(fn, consts, types)
        assert kernel.asm.get("cubin"), f"{name}: no cubin"
        assert kernel.metadata.shared <= SHARED_LIMIT_SM90, f"{name}: {kernel.metadata.shared} B of shared memory"
        compiled.append(name)
    assert len(compiled) == 17
