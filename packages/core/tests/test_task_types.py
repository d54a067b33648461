"""The one rule for a target's task type (tabzoo.table.task_types)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.table.task_types import MAX_INTEGER_CLASSES, TaskTypeWarning, infer_task_type


def _infer(col: np.ndarray) -> tuple[str, list[warnings.WarningMessage]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        kind = infer_task_type(col, "y")
    return kind, [w for w in caught if issubclass(w.category, TaskTypeWarning)]


@given(st.lists(st.integers(-1000, 1000), min_size=2, max_size=60))
def test_integers_are_classes_up_to_the_limit_and_amounts_above(values: list[int]) -> None:
    col = np.array(values, dtype=np.int64)
    k = len(set(values))
    kind, warned = _infer(col)
    if k > MAX_INTEGER_CLASSES:
        assert kind == "regression" and len(warned) == 1 and "'multiclass'" in str(warned[0].message)
    else:
        assert kind == ("binary" if k <= 2 else "multiclass") and not warned


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=2, max_size=60))
def test_floats_are_regression_unless_whole_and_few(values: list[float]) -> None:
    col = np.array(values, dtype=np.float64)
    whole = bool(np.all(col == np.round(col)))
    k = len(np.unique(col))
    kind, warned = _infer(col)
    if whole and k <= MAX_INTEGER_CLASSES:
        assert kind in ("binary", "multiclass") and len(warned) == 1 and "'regression'" in str(warned[0].message)
    else:
        assert kind == "regression" and not warned


@pytest.mark.parametrize(("col", "kind"), [
    (np.array(["a", "b", "a"]), "binary"),
    (np.array(["a", "b", "c"], dtype=object), "multiclass"),
    (np.array([True, False, True]), "binary"),
    (np.array([1, 2, 3], dtype=object), "multiclass"),
    (np.array([0.5, 1, 2], dtype=object), "regression"),
])
def test_non_numeric_storage(col: np.ndarray, kind: str) -> None:
    assert _infer(col)[0] == kind
