"""Saved predictions of every shipped TabFlex checkpoint, reproduced by today's code.

``data/saved_outputs.npz`` holds small fixed inputs and the outputs that the code of
2026-11-27 gave for them (fp32 inference, one torch thread). Any refactoring of the prediction
path (issue 31: one in-context path in the core) must leave them unchanged. On the machine and
torch build that wrote them (``fingerprint`` in the file) they must be bit-identical; elsewhere a
different SIMD path may round differently, so they must agree to within float rounding
(rtol 1e-5, atol 1e-7).

Regenerate (only when a change of the outputs is intended, and say so in the commit):
``OMP_NUM_THREADS=1 uv run python packages/tabflex/tests/test_tabflex_saved_outputs.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from tabzoo.testing import saved

DATA = Path(__file__).parent / "data" / "saved_outputs.npz"


def _cases() -> dict[str, tuple[Any, str, str]]:
    """name -> (estimator, target key, method)."""
    from tabzoo_tabflex import TabFlexClassifier, TabFlexRegressor

    out: dict[str, tuple[Any, str, str]] = {}
    common = {"device": "cpu", "inference_precision": "fp32", "random_state": 0}
    for ck in ("tabflex-small", "tabflex-icl"):
        out[f"{ck}/clf"] = (TabFlexClassifier(ck, n_estimators=4, categorical_features=[5], **common), "y3", "predict_proba")
        out[f"{ck}/clf-cache"] = (TabFlexClassifier(ck, n_estimators=3, fit_mode="fit_with_cache", **common), "y3",
                                  "predict_proba")
        out[f"{ck}/reg-mean"] = (TabFlexRegressor(ck, n_estimators=3, **common), "yr", "predict")
        out[f"{ck}/reg-mode"] = (TabFlexRegressor(ck, n_estimators=2, point="mode", n_bins=12, **common), "yr", "predict")
    out["tabflex-long/clf"] = (TabFlexClassifier("tabflex-long", n_estimators=4, categorical_features=[5], **common), "y3",
                               "predict_proba")
    out["tabflex-small/clf-ecoc"] = (TabFlexClassifier("tabflex-small", n_estimators=2, **common), "y12", "predict_proba")
    out["tabflex-small/clf-tree"] = (TabFlexClassifier("tabflex-small", n_estimators=2, many_class="hierarchical",
                                                       **common), "y12", "predict_proba")
    out["tabflex-small/clf-local"] = (TabFlexClassifier("tabflex-small", n_estimators=2, context_strategy="local+global",
                                                        local_size=16, **common), "y3", "predict_proba")
    return out


def _predict(name: str) -> np.ndarray:
    return saved.fit_predict(*_cases()[name])  # fit on 36 rows of saved.estimator_inputs(), predict 12


CASES = sorted(_cases())
pytestmark = pytest.mark.filterwarnings("ignore::tabzoo_tabflex.selection.ModelFallbackWarning")


@pytest.mark.parametrize("name", CASES)
def test_saved_outputs_are_reproduced(name: str) -> None:
    torch.set_num_threads(1)
    saved.assert_reproduced(DATA, name, _predict(name))


def test_saved_inputs_are_today_inputs() -> None:
    saved.assert_inputs_unchanged(DATA, saved.estimator_inputs())


if __name__ == "__main__":
    saved.write(DATA, saved.estimator_inputs(), CASES, _predict)
