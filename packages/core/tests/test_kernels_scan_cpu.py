"""The compiled CPU scan (``selective_scan/cpu_fused``, :mod:`tabzoo.kernels.scan_cpu`): used when
built, built only when asked."""

from __future__ import annotations

import pytest
import torch
from tabzoo import kernels as K
from tabzoo.kernels import scan_cpu
from tabzoo.kernels.selective_scan import selective_scan_reference

needs_build = pytest.mark.skipif(
    not scan_cpu.built(), reason="the C++ scan is not built for this torch installation (it builds only when asked, "
    "for minutes); build it once with python -m tabzoo.kernels.scan_build")


def _inputs(b: int, length: int, d: int, n: int, seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g, dtype=torch.float64)  # noqa: E731
    return {"x": r(b, length, d), "delta": torch.nn.functional.softplus(r(b, length, d)),
            "A": -(torch.rand(d, n, generator=g, dtype=torch.float64) * 2 + 0.05), "B": r(b, length, n),
            "C": r(b, length, n), "D": r(d)}


def test_never_built_unasked_and_off_with_0(monkeypatch: pytest.MonkeyPatch) -> None:
    """Default (variable unset): the library is used only when already built, never compiled;
    ``0`` turns it off whatever is built."""
    def no_build(verbose: bool = False) -> None:
        raise AssertionError("the scan was compiled without being asked")

    monkeypatch.setattr(scan_cpu, "build", no_build)
    monkeypatch.setattr(scan_cpu, "_LOADED", [])
    monkeypatch.setattr(scan_cpu, "built", lambda: False)
    monkeypatch.delenv(scan_cpu.ENV_VAR, raising=False)
    assert not scan_cpu.available()
    assert K.select_backend("selective_scan", **_inputs(1, 4, 2, 3, 0)).name == "chunked"
    monkeypatch.setattr(scan_cpu, "built", lambda: True)
    monkeypatch.setattr(scan_cpu, "_LOADED", [object()])  # as if loaded
    assert scan_cpu.available()
    monkeypatch.setenv(scan_cpu.ENV_VAR, "0")
    assert not scan_cpu.available()
    assert K.select_backend("selective_scan", **_inputs(1, 4, 2, 3, 0)).name == "chunked"


def test_a_failed_build_falls_back_once(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """``1`` without a compiler: the next backend runs, and the build is tried (and logged) once."""
    calls = []

    def failing(verbose: bool = False) -> None:
        calls.append(1)
        raise OSError("no c++ here")

    monkeypatch.setattr(scan_cpu, "build", failing)
    monkeypatch.setattr(scan_cpu, "_LOADED", [])
    monkeypatch.setattr(scan_cpu, "_FAILED", set())
    monkeypatch.setattr(scan_cpu, "built", lambda: False)
    monkeypatch.setenv(scan_cpu.ENV_VAR, "1")
    with caplog.at_level("INFO", logger="tabzoo.kernels"):
        assert not scan_cpu.available() and not scan_cpu.available()
    assert calls == [1]
    assert "compiling the C++ scan" in caplog.text and "no c++ here" in caplog.text
    assert K.select_backend("selective_scan", **_inputs(1, 4, 2, 3, 0)).name == "chunked"


def test_build_folder_is_per_torch_installation(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two environments' torch folders get two build folders (one shared folder was rebuilt by
    ninja whenever another environment's headers were named)."""
    here = scan_cpu.build_directory()
    assert here.name.startswith(scan_cpu.NAME + "-")
    monkeypatch.setattr(torch, "__file__", "/elsewhere/site-packages/torch/__init__.py")
    assert scan_cpu.build_directory() != here


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


def test_prebuild_command_says_what_it_did(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m tabzoo.kernels.scan_build``: reports an existing build, and a failed one with the fix."""
    from tabzoo.kernels import scan_build

    monkeypatch.setattr(scan_build, "built", lambda: True)
    assert scan_build.main() == 0
    assert "already built" in capsys.readouterr().out

    def failing(verbose: bool = False) -> None:
        raise OSError("no c++ here")

    monkeypatch.setattr(scan_build, "built", lambda: False)
    monkeypatch.setattr(scan_build, "build", failing)
    assert scan_build.main() == 1
    captured = capsys.readouterr()
    assert "compiling into" in captured.out and "no c++ here" in captured.err and "ninja" in captured.err
