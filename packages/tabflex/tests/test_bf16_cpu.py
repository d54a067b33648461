"""The tests on a CPU with native bf16 (AVX512-BF16 / AMX), simulated at torch's own probe (issue 24).

On such CPUs ``inference_precision="auto"`` picks bf16, and two row-order tests of test_large_context
failed on fresh clones by bf16 rounding (0.698075 vs 0.697045; calibration -0.011427 vs -0.011182).
The conftest pins "auto" to fp32 (:func:`tabzoo.testing.fixtures.auto_precision_is_fp32`). Here every
machine looks like such a CPU (``torch.cpu._is_avx512_bf16_supported`` and ``_is_amx_tile_supported``
return True, the probe that both the code before the fix and the core's
:func:`tabzoo.kernels.hardware.cpu_has_fast_bf16` read), so a missing pin fails on any machine, not
only on those with the flags.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the estimators need scikit-learn (tabzoo-core[sklearn])")

import torch  # noqa: E402
from tabzoo_tabflex.estimators import TabFlexClassifier, TabFlexRegressor  # noqa: E402
from test_large_context import _blobs, _local  # noqa: E402  (the table whose seed 0 failed on fresh clones)

PROBES = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")


def _simulate_a_bf16_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROBES:
        monkeypatch.setattr(torch.cpu, name, lambda: True, raising=False)


def test_the_simulation_makes_auto_bf16_where_nothing_pins_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # the guard of the test below: without the conftest's pin (undone here), the simulated CPU does
    # make "auto" bf16, so the simulation reaches the precision choice
    monkeypatch.undo()
    _simulate_a_bf16_cpu(monkeypatch)
    X, y = _blobs(60, seed=0)
    clf = TabFlexClassifier(device="cpu", n_estimators=1).fit(X, y)
    assert clf.inference_dtype_ == torch.bfloat16


def test_auto_stays_fp32_and_row_order_holds_on_a_bf16_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    _simulate_a_bf16_cpu(monkeypatch)
    X, y = _blobs(200, seed=0)
    clf = _local().fit(X[:160], y[:160])
    full = clf.predict_proba(X[160:])
    perm = np.random.default_rng(0).permutation(160)
    again = _local().fit(X[:160][perm], y[:160][perm]).predict_proba(X[160:])
    np.testing.assert_allclose(again, full, rtol=1e-4, atol=1e-5)  # 0.698075 vs 0.697045 in bf16
    assert clf.inference_dtype_ == torch.float32, "the tests' 'auto' must be fp32 on every CPU (conftest pin)"


def test_regressor_calibration_ignores_row_order_on_a_bf16_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    _simulate_a_bf16_cpu(monkeypatch)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(150, 3))[:120]  # the draws of test_large_context's calibration test
    y = 3 * X[:, 0] + X[:, 1] + 0.1 * rng.normal(size=150)[:120]
    # untuned: fine-tuning (the default) amplifies the rounding of a permuted context sum over its Adam steps
    reg = TabFlexRegressor(device="cpu", n_estimators=2, n_bins=8, fine_tune=False).fit(X, y)
    perm = rng.permutation(120)
    again = TabFlexRegressor(device="cpu", n_estimators=2, n_bins=8, fine_tune=False).fit(X[perm], y[perm])
    np.testing.assert_allclose(again.calibration_, reg.calibration_, rtol=1e-4, atol=1e-5)
    assert reg.inference_dtype_ == torch.float32, "the tests' 'auto' must be fp32 on every CPU (conftest pin)"
