"""The task type of a target column: one documented rule for every multi-output estimator.

Rule (``infer_task_type``), applied to a column that holds no missing values:

1. booleans, strings and other non-numbers are **classification**;
2. numbers with any non-whole value are **regression**;
3. whole numbers with at most :data:`MAX_INTEGER_CLASSES` distinct values are **classification**,
   with more they are **regression** (counts, amounts, years).

Binary or multiclass follows from the number of distinct values. The inference is *ambiguous*,
and :class:`TaskTypeWarning` says so with the fix, when the column's storage and the rule disagree:
an integer column with more than ``MAX_INTEGER_CLASSES`` values (many class ids, or an amount?)
or a float column holding few whole values (amounts, or float-coded labels?). Pass the type
explicitly (``task_types=[...]``) to silence it.
"""

from __future__ import annotations

import warnings

import numpy as np

MAX_INTEGER_CLASSES = 10
"""Whole-number targets with more distinct values than this are regression (scikit-learn's
``type_of_target`` calls every integer column multiclass; an integer count with 50 values is far
more often an amount than 50 classes)."""

TASK_TYPES = ("binary", "multiclass", "regression")


class TaskTypeWarning(UserWarning):
    """The task type of a target was inferred from an ambiguous column; pass it explicitly."""


def infer_task_type(values: np.ndarray, name: str) -> str:
    """``"binary"``, ``"multiclass"`` or ``"regression"`` for one target column ``values [N]``
    (no missing values), warning with :class:`TaskTypeWarning` where the rule is ambiguous."""
    col = np.asarray(values)
    if col.dtype.kind not in "iuf":
        if col.dtype.kind == "O" and len(col) and all(isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
                                                      for v in col):
            col = col.astype(np.float64)
        else:
            return "binary" if len(np.unique(col.astype(str))) <= 2 else "multiclass"
    if col.dtype.kind == "f" and not np.all(col == np.round(col)):
        return "regression"
    k = len(np.unique(col))
    kind = "regression" if k > MAX_INTEGER_CLASSES else ("binary" if k <= 2 else "multiclass")
    if kind == "regression" and col.dtype.kind in "iu":
        warnings.warn(f"target {name!r}: integers with {k} distinct values taken as regression (more than "
                      f"{MAX_INTEGER_CLASSES}); pass task type 'multiclass' if they are class labels.",
                      TaskTypeWarning, stacklevel=3)
    elif kind != "regression" and col.dtype.kind == "f":
        warnings.warn(f"target {name!r}: floats holding {k} whole values taken as {kind} classification; pass task "
                      "type 'regression' if they are amounts.", TaskTypeWarning, stacklevel=3)
    return kind
