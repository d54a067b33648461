"""``tabzoo estimate``: memory and time before work (issue 29 item 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _icl_testmodel import ICLTestClassifier, use_plugin_env
from tabzoo.cli import main
from tabzoo.estimators.estimate import estimate_in_context, forward_flops
from tabzoo.plugins import reset_registry


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    yield use_plugin_env(tmp_path / "site", monkeypatch)
    reset_registry()


def test_cli_prints_one_json_document(site: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["estimate", "--model", "icl_test", "--rows", "500", "--features", "8", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"] == 500 and doc["predict_rows"] == 500
    assert doc["fit_bytes"] > 500 * 8 * 4 and doc["predict_bytes"] > doc["fit_bytes"] > 0
    assert doc["flops"] > 0 and doc["throughput"] > 0 and doc["predict_seconds"] > 0


def test_cli_refuses_bad_numbers(site: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["estimate", "--model", "icl_test", "--rows", "0", "--features", "8"])


def test_estimates_grow_with_the_table() -> None:
    est = ICLTestClassifier(n_estimators=2, device="cpu")
    small = estimate_in_context(est, 200, 4, throughput=1e9, calibrate=False)
    big = estimate_in_context(est, 2000, 4, throughput=1e9, calibrate=False)
    assert big.fit_bytes > small.fit_bytes and big.predict_bytes > small.predict_bytes
    assert big.predict_seconds > small.predict_seconds
    model = est._fit_model()
    one = forward_flops(model, 1, 100, 50, 4)
    assert one > 0 and forward_flops(model, 2, 100, 50, 4) == pytest.approx(2 * one)


def test_calibrated_estimate_runs_the_estimator_on_a_probe() -> None:
    est = ICLTestClassifier(n_estimators=2, device="cpu")
    guess = estimate_in_context(est, 300, 4, predict_rows=200)
    assert "calibrated on a probe run of 300 + 200 rows" in guess.detail
    assert guess.predict_bytes > 200 * 4 * 8 and guess.fit_seconds > 0 and guess.predict_seconds > 0


def test_probe_models_the_tensor_peak_of_a_larger_pass() -> None:
    """The probe's linear model (context and query-chunk rows, from three small profiled passes)
    predicts the profiled tensor peak of a pass four times its query chunk within 30%."""
    import numpy as np
    from tabzoo.estimators.estimate import _probe, tensor_peak_bytes

    pr = _probe(ICLTestClassifier(n_estimators=2, device="cpu"), 200, 4, 128)
    assert pr.per_query > 0 and pr.fixed >= 0 and pr.per_context >= 0
    rng = np.random.default_rng(1)
    x, q = rng.normal(size=(200, 4)), rng.normal(size=(512, 4))
    est = ICLTestClassifier(n_estimators=2, device="cpu", chunk_size=512, verbose=False).fit(x, x[:, 0] > 0)
    est.predict_proba(q[:8])
    measured = tensor_peak_bytes(lambda: est.predict_proba(q))[1]
    assert pr.tensor_peak(200, 512) == pytest.approx(measured, rel=0.3)


def test_context_plan_counts_local_contexts() -> None:
    """Above 8,192 rows ``context_strategy="auto"`` encodes ``ceil(n / local_size)`` local contexts of
    ``1.5 * local_size`` rows besides the global one, and reads the queries twice (the 0.24x time at 16k)."""
    from tabzoo.estimators.estimate import context_plan

    est = ICLTestClassifier(n_estimators=2, device="cpu")
    est.context_strategy, est.local_size = "auto", 2048  # type: ignore[attr-defined]
    assert context_plan(est, 8192) == (1, 8192, 1)
    assert context_plan(est, 16000) == (9, 8 * 3072 + 16000, 2)
    est.context_strategy = "local"  # type: ignore[attr-defined]
    assert context_plan(est, 16000) == (8, 8 * 3072, 1)
    est.context_strategy = "global"  # type: ignore[attr-defined]
    assert context_plan(est, 16000) == (1, 16000, 1)
