"""The saved-output fingerprint (tabzoo.testing.saved) tells CPU generations apart: the same torch build
rounds differently on AVX2 and AVX512 kernels, so bitwise equality is only asked where both agree."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tabzoo.testing import saved


def test_fingerprint_names_the_cpu_kernel_capability() -> None:
    fp = saved.fingerprint()
    assert torch.backends.cpu.get_cpu_capability() in fp.split()
    assert f"torch {torch.__version__}" in fp


def test_other_capability_compares_within_tolerance(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    want = np.array([0.25, 0.75])
    path = tmp_path / "s.npz"
    np.savez(path, fingerprint=np.array(saved.fingerprint()), **{"out/case": want})
    near = want * (1 + 1e-7)
    with pytest.raises(AssertionError, match="bitwise"):
        saved.assert_reproduced(path, "case", near)  # same machine: bit for bit
    cap = torch.backends.cpu.get_cpu_capability()
    monkeypatch.setattr(torch.backends.cpu, "get_cpu_capability", lambda: "OTHER" if cap != "OTHER" else "X")
    saved.assert_reproduced(path, "case", near)  # another CPU generation: within rtol 1e-5
    with pytest.raises(AssertionError):
        saved.assert_reproduced(path, "case", want * (1 + 1e-3))
