"""What the machine's processors do fast (read by the estimators' and the trainer's precision choices)."""

from __future__ import annotations

import torch

__all__ = ["cpu_has_fast_bf16"]


def cpu_has_fast_bf16() -> bool:
    """True when the CPU has native bf16 matrix instructions (AVX512-BF16 or AMX)."""
    cpu = getattr(torch, "cpu", None)
    checks = [getattr(cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    return any(bool(f()) for f in checks if callable(f))
