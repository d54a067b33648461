"""Checks shared by :class:`~tabzoo.table.episode.Episode` and ``EpisodeBatch``.

Each check raises one specific :class:`~tabzoo.errors.TabzooInputError` subclass whose message names
the tensor, the row (and column) and the fix.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from tabzoo.params import (
    check_number,  # re-exported: the estimator boundary's number check lives there
)
from tabzoo.table.errors import (
    DTypeError,
    EmptyContextError,
    InvalidLabelError,
    InvalidTaskError,
    InvalidValueError,
    ShapeError,
    SingleClassError,
    UnseenLabelError,
)

__all__ = [
    "TASKS",
    "check_categorical",
    "check_class_labels",
    "check_finite_features",
    "check_finite_labels",
    "check_in_context_call",
    "check_number",
    "check_target_values",
    "check_task",
    "check_tensor",
]

TASKS = ("classification", "regression")


def _where(mask: torch.Tensor) -> tuple[int, ...]:
    """Index of the first True entry of ``mask``."""
    return tuple(int(i) for i in torch.nonzero(mask)[0].tolist())


def check_tensor(name: str, t: object, ndim: int, floating: bool = True) -> torch.Tensor:
    """``t`` must be a tensor with ``ndim`` dims (and a floating dtype if ``floating``)."""
    if not isinstance(t, torch.Tensor):
        raise DTypeError(
            f"{name} must be a torch.Tensor, got {type(t).__name__}; convert it with "
            "torch.as_tensor(..., dtype=torch.float32) or use Episode.from_arrays"
        )
    if t.ndim != ndim:
        raise ShapeError(f"{name} must have {ndim} dimensions, got shape {tuple(t.shape)}")
    if floating and not t.is_floating_point():
        raise DTypeError(f"{name} has dtype {t.dtype}; it must be floating point, e.g. t.float()")
    return t


def check_task(task: object, n_classes: object, where: str = "") -> None:
    """``task`` is classification (``n_classes >= 2``) or regression (``n_classes == 0``)."""
    if task not in TASKS:
        raise InvalidTaskError(f"{where}task {task!r} is not one of {TASKS}; pass one of them")
    if isinstance(n_classes, bool) or not isinstance(n_classes, int):
        raise InvalidTaskError(f"{where}n_classes must be an int, got {n_classes!r}")
    if task == "regression" and n_classes != 0:
        raise InvalidTaskError(
            f"{where}n_classes is {n_classes} for a regression task; use n_classes=0, or "
            "task='classification'"
        )
    if task == "classification" and n_classes < 2:
        raise InvalidTaskError(
            f"{where}n_classes is {n_classes} for a classification task; it must be >= 2 (use "
            "task='regression' for a continuous target)"
        )


def check_finite_labels(name: str, y: torch.Tensor, where: str = "") -> None:
    """Every entry of ``y`` is finite; names the first NaN/inf row."""
    bad = ~torch.isfinite(y)
    if bool(bad.any()):
        idx = _where(bad)
        raise InvalidLabelError(
            f"{where}{name} row {idx[-1]} is {float(y[idx])}; labels must be finite: drop that "
            "row or impute its label"
        )


def check_finite_features(name: str, x: torch.Tensor, where: str = "") -> None:
    """No ``inf`` in features (NaN means missing and is allowed)."""
    bad = torch.isinf(x)
    if bool(bad.any()):
        idx = _where(bad)
        raise InvalidValueError(
            f"{where}{name} row {idx[-2]}, feature {idx[-1]} is {float(x[idx])}; features may be "
            "NaN (missing) but not inf: clip it or replace it with NaN"
        )


def check_class_labels(name: str, y: torch.Tensor, n_classes: int, where: str = "") -> None:
    """Classification labels are integers in ``0..n_classes-1``."""
    bad = (y != torch.round(y)) | (y < 0) | (y >= n_classes)
    if bool(bad.any()):
        idx = _where(bad)
        raise InvalidLabelError(
            f"{where}{name} row {idx[-1]} is {float(y[idx])}; classification labels must be "
            f"integer class indices in 0..{n_classes - 1}: encode labels as 0..K-1 (e.g. "
            "np.unique(y, return_inverse=True)) and pass n_classes=K"
        )


def check_context_classes(y_context: torch.Tensor, y_query: torch.Tensor | None) -> None:
    """At least two classes in the context, and every query label seen in the context."""
    seen = torch.unique(y_context)
    if seen.numel() < 2:
        raise SingleClassError(
            f"the context holds only class {int(seen[0])} (all {y_context.numel()} rows); a "
            "classifier needs at least two classes: add context rows of another class"
        )
    if y_query is not None and y_query.numel():
        unseen = ~torch.isin(y_query, seen)
        if bool(unseen.any()):
            j = _where(unseen)[0]
            raise UnseenLabelError(
                f"y_query row {j} has class {int(y_query[j])}, which no context row has; put "
                "rows of that class into the context, or drop that query row"
            )


def check_categorical(
    categorical: Sequence[int], x: torch.Tensor, n_features: int, where: str = ""
) -> None:
    """Categorical feature indices are unique ints in ``[0, n_features)``; their values are
    non-negative integer codes or NaN. ``x`` is ``[rows, n_features]``."""
    if not isinstance(categorical, tuple):
        raise DTypeError(
            f"{where}categorical must be a tuple of ints, got {type(categorical).__name__}"
        )
    for i in categorical:
        if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < n_features:
            raise InvalidValueError(
                f"{where}categorical index {i!r} is not a feature index in [0, {n_features}); "
                "list only existing feature columns"
            )
    if len(set(categorical)) != len(categorical):
        raise InvalidValueError(
            f"{where}categorical {categorical} repeats an index; list each once"
        )
    if categorical and x.numel():
        v = x[:, list(categorical)]
        bad = ~torch.isnan(v) & ((v < 0) | (v != torch.round(v)))
        if bool(bad.any()):
            r, c = _where(bad)
            raise InvalidValueError(
                f"{where}row {r}, categorical feature {categorical[c]} is {float(v[r, c])}; "
                "categorical features hold integer codes >= 0 (NaN = missing): encode them"
            )


def check_in_context_call(x: object, y: object, n_context: int, max_classes: int) -> torch.Tensor:
    """Validate one call of the in-context protocol before a model sees it.

    What every in-context classifier checks (its estimator does the same on tables): shapes, finite
    features (NaN = missing is allowed, +-inf is not), finite integer labels below ``max_classes``,
    and at least two classes in each episode's context. Query labels are never read.

    :param x: ``[B, N, F]`` float, context rows first.
    :param y: ``[B, >= n_context]`` labels; only ``y[:, :n_context]`` is looked at.
    :param n_context: number of context rows, ``1 <= n_context < N``.
    :param max_classes: the model's class limit.
    :return: the context labels ``[B, n_context]``.
    :raises TabzooInputError: naming the offending tensor, episode or row and the fix.
    """
    xt = check_tensor("x", x, 3)
    yt = check_tensor("y", y, 2)
    if not 0 < n_context < xt.shape[1] or yt.shape[1] < n_context or yt.shape[0] != xt.shape[0]:
        raise EmptyContextError(
            f"need 1 <= n_context < rows and labels for every context row of every episode; got "
            f"n_context={n_context}, x {tuple(xt.shape)}, y {tuple(yt.shape)}: put the context rows first.")
    y_context = yt[:, :n_context]
    check_finite_features("x", xt)
    check_finite_labels("y_context", y_context)
    check_class_labels("y_context", y_context, max_classes)
    for episode in y_context:
        check_context_classes(episode, None)
    return y_context


# -- estimator boundaries (numpy; no scikit-learn needed) --------------------------------------
def check_target_values(
    name: str, y: object, kind: str, n_rows: int | None = None, classes: Sequence[float] | None = None
) -> np.ndarray:
    """Numeric labels at an estimator's boundary, checked once here for every estimator: 1-d,
    one per row, finite, and for ``kind="classification"`` only values in ``classes`` (the
    classes declared by the task or seen at fit).

    :param y: ``[n]`` labels (anything ``np.asarray`` takes).
    :return: ``y`` as float64 ``[n]``.
    :raises InvalidLabelError: naming the first bad row and the fix.
    """
    if kind not in TASKS:
        raise InvalidTaskError(f"task kind {kind!r} is not one of {TASKS}; pass one of them")
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InvalidLabelError(f"{name} must hold numbers ({exc}); encode the labels as numbers") from exc
    if arr.ndim != 1:
        raise ShapeError(f"{name} must be 1-d (one label per row), got shape {arr.shape}")
    if n_rows is not None and len(arr) != n_rows:
        raise ShapeError(f"{name} has {len(arr)} labels for {n_rows} rows; pass one label per row")
    bad = ~np.isfinite(arr)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        every = " (every label is missing)" if bad.all() else ""
        raise InvalidLabelError(
            f"{name} row {row} is {arr[row]}{every}; labels must be finite: drop the rows without a "
            "label or impute them")
    if kind == "classification" and classes is not None:
        unseen = ~np.isin(arr, np.asarray(classes, dtype=np.float64))
        if unseen.any():
            row = int(np.flatnonzero(unseen)[0])
            raise UnseenLabelError(
                f"{name} row {row} is {arr[row]}, not one of the task's classes "
                f"{[float(c) for c in classes]}; encode the labels as those classes (e.g. binarise)")
    return arr
