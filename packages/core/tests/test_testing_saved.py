"""tabzoo.testing.saved: where the saved-output tests expect bitwise equality (issue 24, item 1).

The fingerprint was ``machine processor torch python``; ``platform.processor()`` is empty on Linux,
so every x86_64 machine with the same torch had the same fingerprint, and on an AVX512 machine the
saved outputs written on another CPU failed the bitwise comparison by float rounding (tabflex 10 of
13, npt, ramba, orion-msp: ~4e-7 relative)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the fingerprint names torch's build")
from tabzoo.testing import saved  # noqa: E402


def _with_simd(monkeypatch: pytest.MonkeyPatch, level: str) -> str:
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: level)
    return saved.fingerprint()


def test_the_fingerprint_tells_simd_levels_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    assert _with_simd(monkeypatch, "AVX2") != _with_simd(monkeypatch, "AVX512")
    fp = _with_simd(monkeypatch, "AVX512")
    assert "AVX512" in fp.split() and f"torch {torch.__version__}" in fp


def test_the_fingerprint_tells_compiled_kernels_from_their_references(monkeypatch: pytest.MonkeyPatch) -> None:
    from tabzoo.kernels import scan_cpu

    monkeypatch.setattr(scan_cpu, "available", lambda: True)
    compiled = saved.fingerprint()
    monkeypatch.setattr(scan_cpu, "available", lambda: False)
    reference = saved.fingerprint()
    assert compiled != reference
    assert compiled.endswith("kernels compiled") and reference.endswith("kernels reference")


def test_the_fingerprint_names_the_cpu_model_where_linux_has_one() -> None:
    info = Path("/proc/cpuinfo")
    names = [line.split(":", 1)[1].strip() for line in info.read_text().splitlines()
             if line.startswith("model name")] if info.exists() else []
    if not names:
        pytest.skip("no /proc/cpuinfo model name on this machine")
    assert names[0] in saved.fingerprint()


def test_a_file_from_another_simd_level_is_compared_within_rounding(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "out.npz"
    want = np.array([0.25, 0.75])
    _with_simd(monkeypatch, "AVX2")
    saved.write(data, {}, ["case"], lambda name: want)
    _with_simd(monkeypatch, "AVX512")
    saved.assert_reproduced(data, "case", want * (1 + 4e-7))  # rounding elsewhere: accepted
    with pytest.raises(AssertionError, match="changed"):
        saved.assert_reproduced(data, "case", want * (1 + 1e-3))
    _with_simd(monkeypatch, "AVX2")  # the writing machine: bit for bit
    with pytest.raises(AssertionError, match="bitwise"):
        saved.assert_reproduced(data, "case", want * (1 + 4e-7))


def test_a_plugin_states_a_wider_rounding_bound_with_rtol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "out.npz"
    want = np.array([0.25, 0.75])
    _with_simd(monkeypatch, "AVX2")
    saved.write(data, {}, ["case"], lambda name: want)
    _with_simd(monkeypatch, "AVX512")
    got = want * (1 + 2.4e-5)  # ORION-MSP's spread between SIMD paths
    with pytest.raises(AssertionError, match="changed"):
        saved.assert_reproduced(data, "case", got)  # the default rtol 1e-5
    saved.assert_reproduced(data, "case", got, rtol=1e-4)
    saved.assert_all_reproduced(data, {"case": got}, rtol=1e-4)
    with pytest.raises(AssertionError, match="changed"):
        saved.assert_reproduced(data, "case", want * (1 + 1e-3), rtol=1e-4)
