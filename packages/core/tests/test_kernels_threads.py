"""Thread counts per operation size (tabzoo.kernels.threads, issue 28 item 5)."""

from __future__ import annotations

import os

import pytest
import torch
from tabzoo.kernels import threads as th


def test_small_passes_run_on_one_thread() -> None:
    assert th.threads_for(th.SMALL_PASS_FLOPS / 2, available=2) == 1
    assert th.threads_for(1e12, available=1) == 1


@pytest.mark.parametrize("policy, load, want", [("PASSIVE", 99.0, 1), ("ACTIVE", 99.0, 1), ("ACTIVE", 0.0, 2),
                                                ("PASSIVE", 0.0, 2)])
def test_a_busy_machine_gets_one_thread_per_pass(monkeypatch, policy: str, load: float, want: int) -> None:
    monkeypatch.setenv("OMP_WAIT_POLICY", policy)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    assert th.threads_for(1e12, available=2) == want


def test_op_threads_restores_the_callers_count(monkeypatch) -> None:
    before = torch.get_num_threads()
    monkeypatch.setattr(th, "threads_for", lambda flops, available=None: 1)
    try:
        torch.set_num_threads(2)
        with th.op_threads(1.0) as n:
            assert n == 1 and torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_import_tabzoo_prefers_passive_waiting_before_torch_loads() -> None:
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    code = "import os, tabzoo, torch; print(os.environ.get('OMP_WAIT_POLICY'))"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "PASSIVE"
    env["OMP_WAIT_POLICY"] = "ACTIVE"  # a user's own choice is kept
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "ACTIVE"


def test_model_flops_per_row_falls_back_to_twice_the_parameters() -> None:
    lin = torch.nn.Linear(10, 5)
    assert th.model_flops_per_row(lin) == 2.0 * 55
