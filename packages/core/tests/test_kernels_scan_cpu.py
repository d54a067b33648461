"""The opt-in compiled CPU scan (``selective_scan/cpu_fused``, :mod:`tabzoo.kernels.scan_cpu`)."""

from __future__ import annotations

import pytest
import torch
from tabzoo import kernels as K
from tabzoo.kernels import scan_cpu
from tabzoo.kernels.selective_scan import selective_scan_reference

needs_build = pytest.mark.skipif(
    not scan_cpu.built(), reason="the C++ scan is not built here (it is opt-in and builds for minutes); build it once "
    "with TABZOO_SCAN_CPU=1 python -c 'from tabzoo.kernels import scan_cpu; scan_cpu.available()'")


def _inputs(b: int, length: int, d: int, n: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    return {"x": r(b, length, d), "delta": torch.nn.functional.softplus(r(b, length, d)),
            "A": -(torch.rand(d, n, generator=g, dtype=torch.float64) * 2 + 0.05), "B": r(b, length, n),
            "C": r(b, length, n), "D": r(d)}


def test_off_unless_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(scan_cpu.ENV_VAR, raising=False)
    assert not scan_cpu.available()
    assert K.select_backend("selective_scan", **_inputs(1, 4, 2, 3, 0)).name == "chunked"
    monkeypatch.setenv(scan_cpu.ENV_VAR, "0")
    assert not scan_cpu.available()


@needs_build
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape", [(2, 150, 5, 4), (1, 64, 3, 2), (3, 1, 2, 1), (1, 129, 4, 16)])
def test_matches_reference_with_gradients(monkeypatch: pytest.MonkeyPatch, reverse: bool,
                                          shape: tuple[int, int, int, int]) -> None:
    """Output and every gradient against the fp64 reference, across segment boundaries (64)."""
    monkeypatch.setenv(scan_cpu.ENV_VAR, "1")
    assert K.select_backend("selective_scan", **_inputs(*shape, 0)).name == "cpu_fused"
    base = _inputs(*shape, 1)
    outs = []
    for fn in (selective_scan_reference, K.selective_scan):
        ins = {k: v.clone().requires_grad_() for k, v in base.items()}
        y = fn(**ins, reverse=reverse)
        gy = torch.randn(y.shape, generator=torch.Generator().manual_seed(2), dtype=y.dtype)
        (y * gy).sum().backward()
        outs.append([y.detach()] + [ins[k].grad for k in base])
    for name, ref, got in zip(["y", *base], *outs, strict=True):
        assert got.dtype == ref.dtype
        err = float((ref - got).abs().max() / ref.abs().max().clamp(min=1e-6))
        assert err < 2e-5, f"{name}: relative error {err}"
