"""Helpers shared by the Triton backends; importing this module does not import triton."""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Mapping
from typing import Any

import torch

#: every Triton backend needs at least Ampere (bf16 tl.dot, cp.async)
MIN_CAPABILITY = (8, 0)
DTYPES = (torch.float32, torch.bfloat16, torch.float16)
MAX_HEAD_DIM = 256


def triton_installed() -> bool:
    """Whether the ``triton`` package can be imported (the ``tabzoo-core[triton]`` extra). A found
    package is remembered (every dispatch asks; the file-system search cost ~1 ms of host time
    each); a missing one is searched again, so installing it into a running process is seen."""
    if _TRITON_FOUND:
        return True
    try:
        found = importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):
        return False
    if found:
        _TRITON_FOUND.append(True)
    return found


_TRITON_FOUND: list[bool] = []


def interpreting() -> bool:
    """Whether Triton kernels in this process run in the interpreter (on CPU tensors).

    Triton decides at import: its library functions and our kernels are interpreted only if
    ``TRITON_INTERPRET=1`` was set before ``triton`` was imported. Once imported, that decision
    is read back from the library itself (setting the variable later changes nothing).
    """
    lang = sys.modules.get("triton.language")
    if lang is not None:
        try:
            from triton.runtime.interpreter import InterpretedFunction
        except ImportError:  # pragma: no cover - very old triton
            return False
        return isinstance(getattr(lang, "sum", None), InterpretedFunction)
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "yes", "on")


def is_available() -> bool:
    """Triton is installed (where it may run is decided per call by :func:`device_reasons`)."""
    return triton_installed()


def device_reasons(inputs: Mapping[str, Any]) -> list[str]:
    """Refuse CPU tensors unless the interpreter is on (the registry already checked the device list)."""
    from tabzoo.kernels.op_registry import device_type

    devs = {device_type(t) for t in inputs.values() if isinstance(t, torch.Tensor)}
    if "cpu" in devs and not interpreting():
        return ["Triton kernels compile for CUDA; CPU tensors run only under the Triton interpreter "
                "(set TRITON_INTERPRET=1 before triton is imported; for tests), so move the inputs to a GPU"]
    return []


def block_dim(d: int) -> int:
    """A power of two >= max(d, 16): the padded tile width for a head or state dimension."""
    return max(16, 1 << max(0, int(d) - 1).bit_length())


def dot_precision(dtype: torch.dtype) -> str:
    """``tl.dot`` input precision for fp32 operands: exact for fp32 inputs, tf32 for 16-bit inputs
    (whose own rounding is coarser than tf32's); accumulation is fp32 either way."""
    return "ieee" if dtype in (torch.float32, torch.float64) else "tf32"


def splits_for(n: int, programs: int, block: int, device: torch.device) -> int:
    """How many row ranges to split a reduction over ``n`` rows into, so that ``programs * splits``
    fills the device (about 4 programs per SM; 1 split per program on CPU)."""
    if device.type != "cuda" or n <= block:
        return max(1, min(4, -(-n // block)))
    sms = torch.cuda.get_device_properties(device).multi_processor_count
    want = max(1, -(-4 * sms // max(1, programs)))
    return max(1, min(want, -(-n // block)))


def upcast_dots(t: torch.Tensor) -> bool:
    """Whether kernels cast 16-bit ``tl.dot`` operands to fp32: on CPU tensors (the interpreter of
    triton 3.9 gives wrong results for bf16 ``tl.dot``), never on a GPU."""
    return t.device.type != "cuda" and t.dtype != torch.float32
