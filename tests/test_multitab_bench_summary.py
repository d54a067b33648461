"""Issue 26: ``benchmarks/multitab.py summary`` joins runs of the same MultiTab-Bench draw from several
files (the grid's baselines in one run, the single-task MultiTab-Net in another) and decomposes Δm on
the joined rows; the README's ``grid-twin`` block reads that decomposition."""

from __future__ import annotations

import pytest

pytest.importorskip("tabzoo_multitab", reason="the summary computes Δm with tabzoo-multitab's delta_m")
import multitab  # noqa: E402  (benchmarks/ is on sys.path: tests/conftest.py)
from tabzoo_multitab import delta_m  # noqa: E402


def _row(seed: int, n_train: int, scores: dict[str, list[float]]) -> dict:
    return {"design": "sizes", "setting": 11, "seed": seed, "n_train": n_train, "scores": scores,
            "fit_s": dict.fromkeys(scores, 1.0), "epochs": {}, "delta_m": {}}


def test_runs_of_one_draw_are_joined_and_delta_m_is_recomputed_against_the_twin() -> None:
    base = _row(0, 1000, {"stl": [0.90, 0.80], "multitab": [0.88, 0.84], "mmoe": [0.91, 0.80]})
    twin = _row(0, 1000, {"mt_twin": [0.85, 0.82]})
    other_size = _row(0, 5000, {"mt_twin": [0.99, 0.99]})  # same setting index, another draw
    rows = multitab.merge([base, twin, other_size])
    assert len(rows) == 2
    joined = next(r for r in rows if r["n_train"] == 1000)
    assert set(joined["scores"]) == {"stl", "multitab", "mmoe", "mt_twin"}
    assert joined["delta_m"]["mt_twin"]["multitab"] == pytest.approx(delta_m([0.88, 0.84], [0.85, 0.82]))
    assert joined["delta_m"]["stl"]["mt_twin"] == pytest.approx(delta_m([0.85, 0.82], [0.90, 0.80]))
    assert "mt_twin" not in base["scores"]  # the inputs are not modified


def test_summary_spread_and_scores_are_over_seeds_of_a_setting() -> None:
    rows = multitab.merge([_row(0, 300, {"stl": [0.9], "multitab": [0.81]}),
                           _row(1, 300, {"stl": [0.9], "multitab": [0.99]})])
    s = multitab.summarise(rows, "setting")["stl"]["multitab"]
    assert s["per_setting_mean"]["11"] == pytest.approx(0.0, abs=1e-9)
    assert s["per_setting_std"]["11"] == pytest.approx(10.0)
    assert s["settings_positive"] == 0
    sc = multitab.scores(rows)["11"]["multitab"]
    assert sc == {"mean": pytest.approx(0.9), "std": pytest.approx(0.09), "runs": 2}


def test_require_keeps_the_draws_a_partial_run_shares_with_the_complete_ones() -> None:
    full = [_row(0, 300, {"stl": [0.9], "multitab": [0.9]}), _row(1, 300, {"stl": [0.9], "multitab": [0.9]})]
    partial = [_row(0, 300, {"mt_single": [0.8], "mt_twin": [0.85]})]
    rows = multitab.merge(full + partial)
    kept = multitab.require(rows, ["mt_single", "mt_twin"])
    assert [r["seed"] for r in kept] == [0]
    assert set(kept[0]["scores"]) == {"stl", "multitab", "mt_single", "mt_twin"}
    assert multitab.require(rows, []) == rows


def test_cpu_models_name_each_inputs_host() -> None:
    reps = [{"machine": {"cpu_model": "AMD EPYC"}}, {"machine": {"cpu_model": "Intel(R) Xeon(R) Processor"}}, {}]
    got = multitab.cpu_models(["a.json", "b.json", "c.json"], reps)
    assert got == {"a.json": "AMD EPYC", "b.json": "Intel(R) Xeon(R) Processor", "c.json": None}
