"""What the compiled-kernel tests share: the skip marker for an unbuilt CPU library, and a fixture
that clears the backend-forcing environment variables so each test sees the default dispatch."""

from __future__ import annotations

import pytest
from tabzoo.kernels import scan_cpu
from tabzoo.kernels.op_registry import ENV_VAR

BUILT = pytest.mark.skipif(
    not scan_cpu.built(),
    reason="the compiled CPU library is not built here (python -m tabzoo.kernels.scan_build)",
)


@pytest.fixture
def no_kernel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Unset ``TABZOO_KERNELS`` (the registry's backend override) and ``TABZOO_SCAN_CPU`` (the library switch)."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv(scan_cpu.ENV_VAR, raising=False)
