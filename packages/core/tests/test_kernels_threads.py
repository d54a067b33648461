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


def _threads_seen(monkeypatch, load: float, call) -> dict[str, set[int]]:  # noqa: ANN001
    """Torch thread counts seen by every torch function that ``call()`` runs, by function name."""
    from torch.overrides import TorchFunctionMode

    seen: dict[str, set[int]] = {}

    class Record(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001, ANN204
            seen.setdefault(getattr(func, "__name__", str(func)), set()).add(torch.get_num_threads())
            return func(*args, **(kwargs or {}))

    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    with Record():
        call()
    return seen


@pytest.mark.parametrize("kind", ["classifier", "regressor"])
def test_a_busy_machine_runs_every_torch_op_of_an_estimator_call_on_one_thread(monkeypatch, kind: str) -> None:
    """The ops between the forward passes (isfinite, stack, softmax...) ran on the caller's 2 threads and made
    2 threads 1.6x slower than 1 in realdata.py's runner (issue 28); now the whole call is scoped."""
    import numpy as np
    from _icl_testmodel import ICLTestClassifier, ICLTestRegressor

    rng = np.random.default_rng(0)
    X = rng.standard_normal((80, 4)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int) if kind == "classifier" else X[:, 0].astype(np.float64)
    est = ICLTestClassifier(n_estimators=2) if kind == "classifier" else ICLTestRegressor(n_estimators=2)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        run = (lambda: est.fit(X, y).predict_proba(X[:7])) if kind == "classifier" else (lambda: est.fit(X, y).predict(X[:7]))
        busy = _threads_seen(monkeypatch, 99.0, run)
        assert torch.get_num_threads() == 2  # the caller's count is restored
        assert "isfinite" in busy  # an op outside the forward passes' op_threads scope
        assert set().union(*busy.values()) == {1}, busy
        idle = _threads_seen(monkeypatch, 0.0, run)
        assert 2 in idle["isfinite"]  # an idle machine keeps the caller's threads there
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("order, want", [("torch, tabzoo", "default"), ("tabzoo, torch", "passive")])
def test_wait_policy_reports_what_torch_loaded_with_whatever_the_import_order(order: str, want: str) -> None:
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    code = f"import {order}; from tabzoo.kernels.threads import wait_policy; print(wait_policy())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == want
