"""Estimator options shared by every in-context plugin: categorical columns, inference precision,
fit mode. Each resolver validates a constructor parameter at ``fit`` and raises a
:class:`~tabzoo.errors.TabzooInputError` whose message says the fix.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from tabzoo.errors import TabzooInputError

logger = logging.getLogger(__name__)

__all__ = [
    "FIT_MODES",
    "PRECISIONS",
    "PrecisionFallbackWarning",
    "as_table_input",
    "check_fit_mode",
    "resolve_categorical_features",
    "resolve_inference_dtype",
]

FIT_MODES = ("fit_preprocessors", "fit_with_cache")
PRECISIONS = ("auto", "fp32", "bf16", "fp16")


class PrecisionFallbackWarning(UserWarning):
    """The requested inference precision is slow or unsupported on this device; another one runs."""


def check_fit_mode(fit_mode: Any) -> str:
    """``"fit_preprocessors"`` (predict encodes the context each call) or ``"fit_with_cache"``
    (fit also computes the model's context state, and predict only reads it)."""
    if fit_mode not in FIT_MODES:
        raise TabzooInputError(
            f"fit_mode={fit_mode!r} is not valid; pass one of {FIT_MODES} (\"fit_with_cache\" computes the "
            "context state once at fit, so predict does not re-encode the context)."
        )
    return str(fit_mode)


def as_table_input(X: Any) -> tuple[Any, tuple[int, ...] | None]:
    """A :class:`tabzoo.table.Table` becomes a DataFrame plus its categorical column indices;
    anything else passes through with ``None``."""
    from tabzoo.table import Table

    if isinstance(X, Table):
        return X.to_pandas(), tuple(X.categorical_indices)
    return X, None


def _dtype_categoricals(X: Any) -> tuple[int, ...]:
    """Columns a DataFrame marks as categorical by dtype (``category``). Object and string columns
    are typed by the preprocessor from their values (strings: categorical; a mixture raises)."""
    dtypes = getattr(X, "dtypes", None)
    if dtypes is None or not hasattr(X, "columns"):
        return ()
    return tuple(j for j, dt in enumerate(list(dtypes)) if str(dt) == "category")


def resolve_categorical_features(spec: Any, X: Any, n_features: int,
                                 table_categoricals: Sequence[int] | None = None) -> tuple[int, ...]:
    """Indices of the columns to encode as categories.

    :param spec: ``"auto"`` (a :class:`~tabzoo.table.Table`'s CATEGORICAL columns, or a DataFrame's
        ``category`` columns; the preprocessor also makes string columns categorical), ``None``
        (only what the preprocessor detects), a list of column indices, a list of column names (a
        DataFrame), or a boolean mask of length ``n_features``.
    :param X: the training table (for column names and dtypes).
    :param n_features: columns of ``X``.
    :param table_categoricals: the categorical indices of a Table input (from :func:`as_table_input`).
    :returns: sorted distinct indices in ``0 .. n_features - 1``.
    """
    if spec is None:
        return ()
    if isinstance(spec, str):
        if spec != "auto":
            raise TabzooInputError(
                f"categorical_features={spec!r} is not valid; pass 'auto', None, a list of column indices, a "
                "list of column names, or a boolean mask with one entry per column."
            )
        return tuple(sorted(table_categoricals)) if table_categoricals is not None else _dtype_categoricals(X)
    try:
        arr = np.asarray(list(spec), dtype=object)
    except TypeError as exc:
        raise TabzooInputError(
            f"categorical_features={spec!r} is not a list; pass 'auto', None, column indices, column names "
            "or a boolean mask."
        ) from exc
    if arr.size == 0:
        return ()
    if all(isinstance(v, bool | np.bool_) for v in arr):
        if arr.size != n_features:
            raise TabzooInputError(
                f"categorical_features is a boolean mask of length {arr.size} but X has {n_features} columns; "
                "pass one True/False per column, or a list of column indices."
            )
        return tuple(int(i) for i in np.flatnonzero(arr.astype(bool)))
    if all(isinstance(v, str | np.str_) for v in arr):
        names = [str(c) for c in getattr(X, "columns", [])]
        missing = [v for v in arr if str(v) not in names]
        if not names or missing:
            raise TabzooInputError(
                f"categorical_features names {missing or list(arr)} are not columns of X "
                f"({names[:10] if names else 'X has no column names: pass a DataFrame, or column indices'}); "
                "pass names of existing columns or their integer indices."
            )
        idx = [names.index(str(v)) for v in arr]
    elif all(isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_) for v in arr):
        idx = [int(v) for v in arr]
        bad = [i for i in idx if not 0 <= i < n_features]
        if bad:
            raise TabzooInputError(
                f"categorical_features indices {bad} are out of range for X with {n_features} columns; pass "
                f"indices in 0..{n_features - 1} (negative indices are not accepted)."
            )
    else:
        raise TabzooInputError(
            f"categorical_features={list(arr)!r} mixes types; pass only int column indices, only column names, "
            "or a boolean mask."
        )
    if len(set(idx)) != len(idx):
        dup = sorted({i for i in idx if idx.count(i) > 1})
        raise TabzooInputError(f"categorical_features names column(s) {dup} more than once; list each column once.")
    return tuple(sorted(idx))


def resolve_inference_dtype(precision: Any, device: torch.device | str) -> torch.dtype:
    """The dtype inference runs in.

    * ``"fp32"``: float32 everywhere.
    * ``"auto"``: bf16 on CUDA devices that support it, and on CPUs with native bf16 matrix units
      (AVX512-BF16 / AMX: :func:`tabzoo.kernels.hardware.cpu_has_fast_bf16`); fp32 elsewhere (on other CPUs
      bf16 matmuls are an order of magnitude slower than fp32).
    * ``"bf16"`` / ``"fp16"``: that dtype. On a CUDA device without bf16 support, ``"bf16"`` warns
      (:class:`PrecisionFallbackWarning`) and runs fp16; on a CPU without native support it runs as asked
      but warns that it is slow.
    """
    if precision not in PRECISIONS:
        raise TabzooInputError(
            f"inference_precision={precision!r} is not valid; pass one of {PRECISIONS} ('auto' picks bf16 only "
            "where it is fast)."
        )
    dev = torch.device(device)
    from tabzoo.kernels.hardware import cpu_has_fast_bf16

    if precision == "fp32":
        return torch.float32
    if dev.type == "cuda":
        bf16_ok = bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())
        if precision == "auto":
            return torch.bfloat16 if bf16_ok else torch.float16
        if precision == "bf16" and not bf16_ok:
            warnings.warn(f"{dev} does not support bf16; running fp16 instead (pass inference_precision='fp16' "
                          "to silence this).", PrecisionFallbackWarning, stacklevel=3)
            return torch.float16
        return torch.bfloat16 if precision == "bf16" else torch.float16
    if dev.type == "cpu":
        fast = cpu_has_fast_bf16()
        if precision == "auto":
            return torch.bfloat16 if fast else torch.float32
        if not (precision == "bf16" and fast):
            warnings.warn(
                f"inference_precision={precision!r} on this CPU has no native {precision} matrix units and is "
                "slower than fp32; pass 'auto' or 'fp32' for speed.", PrecisionFallbackWarning, stacklevel=3)
        return torch.bfloat16 if precision == "bf16" else torch.float16
    # other devices (mps, xpu, ...): honour explicit requests, 'auto' stays fp32
    return {"auto": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
