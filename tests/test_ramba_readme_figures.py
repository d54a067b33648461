"""Issue 27: the quality figures that ``packages/ramba/README.md`` quotes are read from their
committed result files here; a README figure that its JSON does not give fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "packages" / "ramba" / "README.md"
_TASKS = "ramba-tasks-model-{}.json"


def _models(name: str, task: str = "nyc-dep-delayed") -> dict:
    return json.loads((RESULTS / _TASKS.format(name)).read_text())["tasks"][task]["models"]


def _runs(entry: dict) -> list[float]:
    return [r["test"] for r in entry["runs"]]


def _figures() -> list[tuple[str, str]]:
    """(what, the text the README must hold) for each quoted figure."""
    known = _runs(_models("known-2026-11-28")["ramba-known-24x96"])
    recent = _runs(_models("context-2026-11-27")["ramba-context-24x96"])
    kn, rc = _models("known-2026-11-28")["ramba-known-24x96"], _models("context-2026-11-27")["ramba-context-24x96"]
    gap = json.loads((RESULTS / "ramba-tasks-gap-known-2026-11-28.json").read_text())["context_mean_counts"]
    count = {k.split("max_rows=")[1].split(",")[0] + k.split("policy=")[1].split(",")[0]: v["origin_3h_context"]
             for k, v in gap.items() if k != "n_seeds"}
    reg = _models("regression-2026-11-28", "nyc-arr-delay")
    ramba_r2 = reg["ramba-recent-24x96"]
    tr = _models("transfer-2026-11-28")
    small = _models("regression-small-2026-11-28", "nyc-arr-delay")
    mse, huber = small["ramba-mse-8x48"], small["ramba-huber-8x48"]
    big = _models("regression-loss-2026-11-28", "nyc-arr-delay")["ramba-mse-24x96"]

    def val(entry: dict, key: str = "val") -> str:
        return f"{sum(r[key] for r in entry['runs']) / len(entry['runs']):.3f}"

    def ms(key: str) -> str:
        return f"{tr[key]['test_mean']:.3f} +- {tr[key]['test_std']:.3f}"

    return [
        ("transfer zero-shot", f"scores {ms('ramba-transfer-zeroshot')} there zero-shot"),
        ("transfer fine-tuned", f"and {ms('ramba-transfer-ft50')} after 50 steps"),
        ("scratch", f"against {ms('ramba-scratch50')} from scratch"),
        ("scratch at 150 steps equals 50", "at 50 and at 150 steps" if ms("ramba-scratch50") == ms("ramba-scratch150")
         else "scratch at 150 steps differs from 50"),
        ("regression R2 mean +- std", f"R^2 is {ramba_r2['test_mean']:.3f} +- {ramba_r2['test_std']:.3f}"),
        ("regression R2 per seed", " / ".join(f"{x:.3f}" for x in _runs(ramba_r2)) + " at seeds 0 / 1 / 2"),
        ("flat LightGBM R2", f"same draws {reg['lightgbm-flat-train-draw']['test_mean']:.3f} +- "
                             f"{reg['lightgbm-flat-train-draw']['test_std']:.3f} (whole train split "
                             f"{reg['lightgbm-flat-train-all']['test_mean']:.3f})"),
        ("LightGBM with aggregates R2", f"{reg['lightgbm-relational-train-draw']['test_mean']:.3f} +- "
                                        f"{reg['lightgbm-relational-train-draw']['test_std']:.3f} (whole split "
                                        f"{reg['lightgbm-relational-train-all']['test_mean']:.3f})"),
        ("ridge R2", f"ridge {reg['ridge-flat-train-draw']['test_mean']:.3f}, a constant "
                     f"{reg['constant-train-draw']['test_mean']:.3f}"),
        ("mse R2", f"R^2 {mse['test_mean']:.3f} +- {mse['test_std']:.3f} ("
                   + " / ".join(f"{x:.3f}" for x in _runs(mse)) + f"; val {val(mse)})"),
        ("huber R2", f"against Huber {huber['test_mean']:.3f} +- {huber['test_std']:.3f} (val {val(huber)})"),
        ("recalibrated R2", f"R^2 {mse['test_recal_mean']:.3f} +- {mse['test_recal_std']:.3f} (Huber "
                            f"{huber['test_recal_mean']:.3f})"),
        ("recalibration slopes", f"slopes ({min(r['recal'][0] for r in mse['runs']):.1f} to "
                                 f"{max(r['recal'][0] for r in mse['runs']):.1f})"),
        ("recalibration val CV", f"5-fold R^2 on the val draw ({val(mse, 'val_recal_cv')})"),
        ("small-budget baselines", f"flattened rows scores {small['lightgbm-flat-train-draw']['test_mean']:.3f} +- "
                                   f"{small['lightgbm-flat-train-draw']['test_std']:.3f} (whole train split "
                                   f"{small['lightgbm-flat-train-all']['test_mean']:.3f}), ridge "
                                   f"{small['ridge-flat-train-draw']['test_mean']:.3f}, LightGBM with the aggregates "
                                   f"{small['lightgbm-relational-train-draw']['test_mean']:.3f} +- "
                                   f"{small['lightgbm-relational-train-draw']['test_std']:.3f}, a constant "
                                   f"{small['constant-train-draw']['test_mean']:.3f}"),
        ("mse R2 at 5,000 seeds", f"squared error R^2 {big['test_mean']:.3f} +- {big['test_std']:.3f} ("
                                  + " / ".join(f"{x:.3f}" for x in _runs(big)) + "; val "
                                  + " / ".join(f"{r['val']:.3f}" for r in big["runs"]) + ")"),
        ("huber at 5,000 seeds", f"against Huber's {ramba_r2['test_mean']:.3f} +- {ramba_r2['test_std']:.3f} (val "
                                 + " / ".join(f"{r['val']:.3f}" for r in ramba_r2["runs"]) + ")"),
        ("recalibrated at 5,000 seeds", f"recalibrated {big['test_recal_mean']:.3f} +- {big['test_recal_std']:.3f}"),
        ("R2 > 0 on every seed", "R^2 > 0 met (every seed)" if min(_runs(mse)) > 0 else "some seed has R^2 <= 0"),
        ("known-first AUC, seeds 0 / 1", f"{known[0]:.3f} / {known[1]:.3f} at seeds 0 / 1"),
        ("recent AUC on the same seeds", f"against {recent[0]:.3f} / {recent[1]:.3f}"),
        ("known-first third seed", f"and {known[2]:.3f} against {recent[2]:.3f} at seed 2"),
        ("known-first vs recent over 3 seeds", f"{kn['test_mean']:.3f} +- {kn['test_std']:.3f} against "
                                               f"{rc['test_mean']:.3f} +- {rc['test_std']:.3f} over the 3 seeds"),
        ("known origin outcomes in the context", f"raises the origin's {count['96' + repr('recent')]:.1f} to "
                                                 f"{count['96' + repr('known')]:.1f}"),
        ("the same with 128 rows", f"{count['128' + repr('known')]:.1f} with 128 rows"),
    ]


@pytest.mark.parametrize(("what", "text"), _figures())
def test_readme_figure_matches_its_result_file(what: str, text: str) -> None:
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert text in readme, f"{what}: the README should say {text!r} (from benchmarks/results)"
