"""Triton backends: registration, declarations, dispatch (real CPU and a simulated CUDA device), and
the interpreter-mode equivalence suite, run in a subprocess with ``TRITON_INTERPRET=1``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from tabzoo import kernels as K
from tabzoo.errors import KernelNotSupportedError
from tabzoo.kernels.op_registry import ENV_VAR, Cost
from tabzoo.kernels.triton import OPS, PRIORITY, interpreting

pytest.importorskip("triton", reason="the Triton backends need the tabzoo-core[triton] extra")


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


def _inputs(op: str) -> dict:
    g = torch.Generator().manual_seed(0)
    q, k, v = torch.randn(3, 1, 2, 40, 16, generator=g).unbind(0)
    if op == "masked_attention":
        from tabzoo import masks as M

        return {"q": q, "k": k, "v": v, "mask": M.causal()}
    if op == "linear_attention":
        return {"q": q, "k": k, "v": v, "n_context": 30}
    if op == "linear_attention_state":
        return {"k": k, "v": v}
    if op == "linear_attention_read":
        S, z = K.linear_attention_state(k, v)
        return {"q": q, "S": S, "z": z}
    return {"x": torch.randn(2, 50, 3), "delta": torch.rand(2, 50, 3), "A": -torch.rand(3, 4),
            "B": torch.randn(2, 50, 4), "C": torch.randn(2, 50, 4)}


def test_every_op_has_a_triton_backend_that_declares_what_it_supports() -> None:
    assert set(OPS) == {"masked_attention", "linear_attention", "linear_attention_state",
                        "linear_attention_read", "selective_scan"}
    for op in OPS:
        backends = K.list_backends(op)
        assert backends[0].name == "triton" and backends[0].priority == PRIORITY, op
        b = backends[0]
        assert "cuda" in b.devices and b.min_capability == (8, 0)
        assert set(b.dtypes) == {torch.float32, torch.bfloat16, torch.float16}
        cost = b.cost(_inputs(op) if op != "linear_attention_read" else {**_inputs(op), "eps": 1e-6})
        assert isinstance(cost, Cost) and cost.flops > 0 and cost.bytes > 0


def test_block_sparse_cost_scales_with_the_mask_density() -> None:
    from tabzoo import masks as M

    backend = K.list_backends("masked_attention")[0]
    q = torch.zeros(1, 1, 256, 16)
    dense = backend.cost({"q": q, "k": q, "v": q, "mask": None, "scale": None})
    causal = backend.cost({"q": q, "k": q, "v": q, "mask": M.causal(), "scale": None})
    window = backend.cost({"q": q, "k": q, "v": q, "mask": M.window(3), "scale": None})
    assert causal.flops == pytest.approx(dense.flops * (16 * 17 / 2) / 256)  # 16 x 16 tiles of 16
    assert window.flops < causal.flops < dense.flops


@pytest.mark.skipif(interpreting(), reason="this process runs the Triton interpreter")
@pytest.mark.parametrize("op", sorted(OPS))
def test_on_cpu_without_the_interpreter_dispatch_refuses_triton_with_a_reason(op: str) -> None:
    inputs = _inputs(op)
    assert K.select_backend(op, **inputs).name != "triton"
    ((backend, reasons),) = [(b, r) for b, r in K.candidates(op, **inputs) if b.name == "triton"]
    assert reasons and "TRITON_INTERPRET=1" in reasons[0] and "GPU" in reasons[0]
    with pytest.raises(KernelNotSupportedError, match="TRITON_INTERPRET"), K.use("triton"):
        K.select_backend(op, **inputs)


@pytest.mark.parametrize("op", sorted(OPS))
def test_on_a_simulated_cuda_device_triton_wins_and_use_reference_forces_the_reference(op: str) -> None:
    inputs = _inputs(op)
    with K.assume_device("cuda", (9, 0)):
        assert K.select_backend(op, **inputs).name == "triton"
        order = [b.name for b, reasons in K.candidates(op, **inputs) if not reasons]
        assert order[0] == "triton" and order[-1] == "reference"
        with K.use("reference"):
            assert K.select_backend(op, **inputs).name == "reference"
    with K.assume_device("cuda", (7, 5)):  # pre-Ampere: refused with the capability reason
        assert K.select_backend(op, **inputs).name != "triton"
        ((_, reasons),) = [(b, r) for b, r in K.candidates(op, **inputs) if b.name == "triton"]
        assert any("capability" in r for r in reasons)


def test_per_head_bool_masks_are_refused_with_a_reason() -> None:
    q = torch.randn(1, 2, 8, 16)
    mask = torch.rand(1, 2, 8, 8) < 0.5
    with K.assume_device("cuda", (9, 0)):
        assert K.select_backend("masked_attention", q=q, k=q, v=q, mask=mask).name != "triton"
        ((_, reasons),) = [(b, r) for b, r in K.candidates("masked_attention", q=q, k=q, v=q, mask=mask)
                           if b.name == "triton"]
    assert any("per batch or head" in r for r in reasons)


@pytest.mark.slow
def test_interpreter_suite_in_a_subprocess() -> None:
    """Every Triton kernel, forward and backward, on CPU tensors in the interpreter (see that file)."""
    here = Path(__file__).parent
    env = {**os.environ, "TRITON_INTERPRET": "1", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    env.pop(ENV_VAR, None)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(here / "test_kernels_triton_interp.py"), "-q", "-p", "no:cacheprovider",
         "-x", "-rs"],
        env=env, capture_output=True, text=True, timeout=900, cwd=str(here),
    )
    tail = (proc.stdout + proc.stderr)[-6000:]
    assert proc.returncode == 0, tail
    assert " passed" in proc.stdout and "skipped" not in proc.stdout.split("\n")[-2], tail
