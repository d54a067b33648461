"""Preprocessing of the estimators: encoding, missing values, robust scaling, soft clipping.

Every statistic is fitted on the training rows only; :meth:`TabularPreprocessor.transform`
applies the stored statistics to any rows. What happens per column type:

* **numeric** (int, float, numeric strings in object columns, datetimes as seconds since the
  epoch): a missing value (``NaN``/``None``/``pd.NA``/``NaT``) is replaced by the training
  median.
* **boolean** (bool dtype, or object columns holding only ``True``/``False``): encoded 0/1; a
  missing value becomes 0.5 (neither state).
* **categorical** (strings, pandas ``category`` columns, any non-numeric object values):
  ordinal-encoded by the order of the pandas categories when the column has them, else by
  sorted training values. A missing value *and* a category never seen in training both become
  the code ``-1``, a separate level below every real category, so the model can tell them apart
  from the real categories.

Then every column, whatever its type, is robustly normalised with the training median and the
interquartile range (``IQR / 1.349``, the standard deviation of a normal; the standard deviation
when the IQR is 0; 1 when the column is constant, which includes a spread below ``1e-12`` of
the column's largest magnitude or below ``1e-300``, e.g. columns of subnormal numbers;
``scaling="standard"``: numeric columns by their mean and standard deviation instead). A column
whose values exceed ``1e300`` is first divided by a power of two, so values up to the float64 limit
(``1.8e308``) are normalised without overflow; the result does not depend on a column's scale.
Then outliers are soft-clipped: values within
``clip`` (default 4) robust standard deviations are unchanged, beyond that they grow only
logarithmically, ``sign(z) * (clip + log1p(|z| - clip))`` (a query value so far out that ``z``
overflows counts as ``z = 1e300``). The output is finite ``float32``.

Object columns must hold one kind of value: numbers (and numeric strings), strings, or booleans.
A column mixing them, or holding dicts, lists, bytes or timedeltas, raises (see ``_object_kind``).
"""

from __future__ import annotations

import decimal
import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tabzoo.errors import InputTypeError, TabzooInputError
from tabzoo.estimators.scaling import finite_mean_std

NUMERIC, BOOLEAN, CATEGORICAL = "numeric", "boolean", "categorical"
MISSING_CODE = -1.0

__all__ = [
    "BOOLEAN",
    "CATEGORICAL",
    "NUMERIC",
    "TabularPreprocessor",
    "soft_clip",
]


def _is_missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float | np.floating):
        return math.isnan(v)
    try:  # pd.NA, pd.NaT, np.datetime64("NaT")
        return bool(v != v)
    except (TypeError, ValueError):
        return False


def _is_dataframe(X: Any) -> bool:
    return hasattr(X, "columns") and hasattr(X, "dtypes") and hasattr(X, "iloc")


def _sort_key(v: Any) -> tuple[str, Any]:
    if isinstance(v, bool | np.bool_):
        return ("0bool", int(v))
    if isinstance(v, int | float | np.integer | np.floating):
        return ("1num", float(v))
    return ("2" + type(v).__name__, str(v))


def _datetime_seconds(col: np.ndarray) -> np.ndarray:
    ns = col.astype("datetime64[ns]")
    out = ns.astype(np.int64).astype(np.float64) / 1e9
    out[np.isnat(ns)] = np.nan
    return out


def _value_kind(v: Any) -> str:
    if isinstance(v, bool | np.bool_):
        return "bool"
    if isinstance(v, numbers.Real | decimal.Decimal):  # int, float, numpy numbers, Fraction, Decimal
        return "number"
    if isinstance(v, str | np.str_):
        try:
            float(v)
        except ValueError:
            return "str"
        return "numeric str"
    return "other"


def _object_kind(col: np.ndarray, name: str) -> str:
    """Decide the type of an object column from its non-missing training values.

    All booleans: boolean. Numbers and numeric strings: numeric. Strings (with or without
    numeric strings among them): categorical. Anything else raises: a dict, list, bytes,
    timedelta, ... (:class:`InputTypeError`, a ``TypeError`` as scikit-learn expects), and a
    column that mixes booleans with numbers or strings, or numbers with non-numeric strings
    (:class:`TabzooInputError`); the message names the column, the rows and the fix.
    """
    first: dict[str, int] = {}
    for i, v in enumerate(col):
        if not _is_missing(v):
            first.setdefault(_value_kind(v), i)
    if "other" in first:
        i = first["other"]
        v = col[i]
        fix = ("convert it to seconds, e.g. df[col].dt.total_seconds()" if "timedelta" in type(v).__name__.lower()
               else "decode bytes to str" if isinstance(v, bytes | np.bytes_)
               else "encode it as a number or a string, or drop the column")
        raise InputTypeError(
            f"column {name!r} row {i} holds a {type(v).__name__} ({v!r:.60}): float() argument must be a "
            f"string or a real number, not {type(v).__name__!r}; {fix}."
        )
    kinds = set(first)
    if not kinds or kinds <= {"number", "numeric str"}:
        return NUMERIC
    if kinds == {"bool"}:
        return BOOLEAN
    if kinds <= {"str", "numeric str"}:
        return CATEGORICAL
    (ka, ra), (kb, rb) = sorted(first.items(), key=lambda kv: kv[1])[:2]
    raise TabzooInputError(
        f"column {name!r} mixes value types: row {ra} is a {ka} ({col[ra]!r}) but row {rb} is a {kb} "
        f"({col[rb]!r}). Clean the column, or make it one type, e.g. df[{name!r}].astype(str) for a "
        "categorical column."
    )


def _to_float(col: np.ndarray, name: str) -> np.ndarray:
    if col.dtype.kind in "fiub":
        return col.astype(np.float64)
    if col.dtype.kind == "M":
        return _datetime_seconds(col)
    out = np.empty(len(col), dtype=np.float64)
    for i, v in enumerate(col):
        if _is_missing(v):
            out[i] = np.nan
            continue
        if not isinstance(v, str | np.str_ | numbers.Real | decimal.Decimal) or isinstance(v, bool | np.bool_):
            raise InputTypeError(
                f"column {name!r} was numeric in fit but row {i} holds a {type(v).__name__} ({v!r:.60}): "
                f"float() argument must be a string or a real number, not {type(v).__name__!r}. Pass "
                "numbers in this column, as in fit."
            )
        try:
            out[i] = float(v)
        except ValueError as exc:
            raise TabzooInputError(
                f"column {name!r} was numeric in fit but row {i} holds {v!r}, which is not a "
                "number. Pass the same column types as in fit, or refit with this column as a "
                "category."
            ) from exc
    return out


def soft_clip(z: np.ndarray, clip: float) -> np.ndarray:
    """Identity within ``[-clip, clip]``, logarithmic growth beyond (continuous, monotone)."""
    a = np.abs(z)
    return np.where(a <= clip, z, np.sign(z) * (clip + np.log1p(np.maximum(a - clip, 0.0))))


@dataclass
class _Column:
    kind: str
    categories: tuple[Any, ...] = ()


class TabularPreprocessor:
    """Turn a table (numpy array or pandas DataFrame) into a finite ``float32`` matrix.

    :param clip: soft-clipping threshold in (robust) standard deviations.
    :param scaling: ``"robust"`` (median and IQR, the default) or ``"standard"``: numeric columns
        centred on their mean and divided by their standard deviation (missing values left out),
        for models trained on z-scores (MultiTab); other columns stay robust.
    """

    def __init__(self, clip: float = 4.0, scaling: str = "robust") -> None:
        if scaling not in ("robust", "standard"):
            raise TabzooInputError(f"scaling={scaling!r}: use 'robust' or 'standard'.")
        self.clip = float(clip)
        self.scaling = scaling
        self.columns: list[_Column] = []
        self.fill = np.zeros(0)
        self.center = np.zeros(0)
        self.scale = np.ones(0)
        self.prescale = np.ones(0)

    # -- splitting an input into raw columns --------------------------------------------------
    @staticmethod
    def _raw_columns(X: Any) -> tuple[list[np.ndarray], list[str], list[Any]]:
        """Columns as 1-d arrays, their names and their pandas categories (or None)."""
        if _is_dataframe(X):
            cols, names, cats = [], [], []
            for j, name in enumerate(X.columns):
                series = X.iloc[:, j]
                dtype = series.dtype
                cat = list(dtype.categories) if str(dtype) == "category" else None
                if cat is not None:
                    arr = np.asarray(series.astype(object), dtype=object)
                elif str(dtype) in ("bool", "boolean"):
                    arr = np.asarray(series.astype(object), dtype=object)
                elif getattr(dtype, "kind", "O") in "fiu":
                    arr = series.to_numpy(dtype=np.float64, na_value=np.nan)
                elif getattr(dtype, "kind", "O") == "M" or "datetime" in str(dtype):
                    arr = series.to_numpy(dtype="datetime64[ns]")
                else:
                    arr = np.asarray(series.astype(object), dtype=object)
                cols.append(arr)
                names.append(str(name))
                cats.append(cat)
            return cols, names, cats
        arr = np.asarray(X)
        if arr.ndim != 2:
            raise TabzooInputError(f"expected a 2-d table [rows, features], got shape {arr.shape}.")
        return [arr[:, j] for j in range(arr.shape[1])], [str(j) for j in range(arr.shape[1])], [None] * arr.shape[1]

    def _encode(self, cols: list[np.ndarray], names: Sequence[str]) -> np.ndarray:
        out = np.empty((len(cols[0]) if cols else 0, len(cols)), dtype=np.float64)
        for j, (col, spec) in enumerate(zip(cols, self.columns, strict=True)):
            if spec.kind == CATEGORICAL:
                lookup = {c: float(i) for i, c in enumerate(spec.categories)}
                codes = np.empty(len(col), dtype=np.float64)
                for i, v in enumerate(col):
                    codes[i] = MISSING_CODE if _is_missing(v) else lookup.get(_hashable(v), MISSING_CODE)
                out[:, j] = codes
            elif spec.kind == BOOLEAN:
                vals = np.empty(len(col), dtype=np.float64)
                for i, v in enumerate(col):
                    if _is_missing(v):
                        vals[i] = np.nan
                    elif isinstance(v, bool | np.bool_):
                        vals[i] = float(bool(v))
                    else:
                        raise TabzooInputError(
                            f"column {names[j]!r} was boolean in fit but row {i} holds {v!r}; pass "
                            "True/False (or None for missing), or refit with the new column type."
                        )
                out[:, j] = vals
            else:
                out[:, j] = _to_float(col, names[j])
        return out

    # -- fit / transform --------------------------------------------------------------------
    def fit(self, X: Any, categorical: Sequence[int] = ()) -> TabularPreprocessor:
        """Fit column types, categories and statistics on the training rows ``X``.

        :param categorical: column indices to treat as categorical whatever their dtype (numbers
            become categories, ordered by value); other columns are typed from their dtype/values.
        """
        cols, names, cats = self._raw_columns(X)
        forced = {int(j) for j in categorical}
        self.columns = []
        for j, (col, name, cat) in enumerate(zip(cols, names, cats, strict=True)):
            if j in forced and cat is None:
                present = {_hashable(v) for v in col if not _is_missing(v)}
                self.columns.append(_Column(CATEGORICAL, tuple(sorted(present, key=_sort_key))))
            elif cat is not None:
                present = {_hashable(v) for v in col if not _is_missing(v)}
                self.columns.append(_Column(CATEGORICAL, tuple(_hashable(c) for c in cat if _hashable(c) in present)))
            elif col.dtype.kind == "b":
                self.columns.append(_Column(BOOLEAN))
            elif col.dtype.kind in "fiuM":
                self.columns.append(_Column(NUMERIC))
            else:
                kind = _object_kind(col, name)
                categories: tuple[Any, ...] = ()
                if kind == CATEGORICAL:
                    present = {_hashable(v) for v in col if not _is_missing(v)}
                    categories = tuple(sorted(present, key=_sort_key))
                self.columns.append(_Column(kind, categories))
        enc = self._encode(cols, names)
        n = enc.shape[1]
        self.fill = np.zeros(n)
        self.center = np.zeros(n)
        self.scale = np.ones(n)
        # a power of two dividing columns whose values come near the float64 range (1e308), so
        # that the median, quartiles and differences below can't overflow (exact: powers of 2)
        with np.errstate(invalid="ignore"):
            top = np.nanmax(np.abs(enc), axis=0, initial=0.0) if enc.size else np.zeros(n)
        huge = np.isfinite(top) & (top > 1e300)
        self.prescale = np.ones(n)
        self.prescale[huge] = np.exp2(np.floor(np.log2(top[huge])))  # values land in [-2, 2]
        enc = enc / self.prescale[None, :]
        for j, spec in enumerate(self.columns):
            col = enc[:, j]
            finite = col[np.isfinite(col)]
            if spec.kind == BOOLEAN:
                self.fill[j] = 0.5
            elif spec.kind == NUMERIC:
                self.fill[j] = float(np.median(finite)) if finite.size else 0.0
            col = np.where(np.isnan(col), self.fill[j], col)
            med = float(np.median(col)) if col.size else 0.0
            q75, q25 = (np.percentile(col, [75, 25]) if col.size else (0.0, 0.0))
            scale = float(q75 - q25) / 1.349
            # a spread below 1e-12 of the column's magnitude is rounding noise, and one below the
            # smallest normal float64 can't be divided by accurately: both count as constant
            floor = max(1e-12 * float(np.max(np.abs(col))) if col.size else 0.0, 1e-300)
            if not scale > floor:
                scale = float(np.std(col)) if col.size else 0.0
            self.center[j] = med
            self.scale[j] = scale if scale > floor else 1.0
            if self.scaling == "standard" and spec.kind == NUMERIC:
                self.center[j], self.scale[j] = finite_mean_std(enc[:, j])
        return self

    def transform(self, X: Any) -> np.ndarray:
        """Encode, impute, normalise and clip rows with the fitted statistics.

        :returns: ``float32 [rows, features]``, all finite.
        """
        return self.standardize(self.encode(X))

    def encode(self, X: Any) -> np.ndarray:
        """Typed values before imputation and scaling: ``float64 [rows, features]``.

        Numbers as they are (datetimes in seconds), booleans 0/1, a categorical column as the index
        of the category in ``columns[j].categories`` (``-1`` = missing or unseen in fit); a missing
        number or boolean is ``NaN``. Raises on another column count than fit's and on ``inf``.
        """
        cols, names, _ = self._raw_columns(X)
        if len(cols) != len(self.columns):
            raise TabzooInputError(
                f"X has {len(cols)} columns but the preprocessor was fitted on {len(self.columns)}; "
                "pass the same columns as in fit."
            )
        enc = self._encode(cols, names)
        if not np.isfinite(enc[~np.isnan(enc)]).all():
            r, c = (int(i) for i in np.argwhere(np.isinf(enc))[0])
            raise TabzooInputError(
                f"X row {r}, column {names[c]!r} is infinite; replace inf by NaN (missing) or a finite value."
            )
        return enc

    def standardize(self, enc: np.ndarray, impute: bool = True) -> np.ndarray:
        """Impute, normalise and soft-clip :meth:`encode`'s ``[rows, features]`` values.

        :param impute: ``False`` keeps a missing value ``NaN`` (for models with a missing token).
        :returns: ``float32 [rows, features]``, finite except where ``impute=False`` kept ``NaN``.
        """
        enc = enc / self.prescale[None, :]
        if impute:
            enc = np.where(np.isnan(enc), self.fill[None, :], enc)
        with np.errstate(over="ignore"):
            z = (enc - self.center[None, :]) / self.scale[None, :]
        # a query value far beyond the training range may overflow: it is an outlier like any other
        z = np.clip(z, -1e300, 1e300)
        return soft_clip(z, self.clip).astype(np.float32)

    def fit_transform(self, X: Any) -> np.ndarray:
        return self.fit(X).transform(X)

    @property
    def kinds(self) -> list[str]:
        return [c.kind for c in self.columns]

    # -- pickle-free state ------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """JSON/array state for :func:`tabzoo.checkpoint.save_state` (no pickle)."""
        return {
            "clip": self.clip,
            **({"scaling": self.scaling} if self.scaling != "robust" else {}),  # robust states stay as before
            "kinds": [c.kind for c in self.columns],
            "categories": [[_json_value(v) for v in c.categories] for c in self.columns],
            "fill": self.fill.astype(np.float64),
            "center": self.center.astype(np.float64),
            "scale": self.scale.astype(np.float64),
            "prescale": self.prescale.astype(np.float64),
        }

    @classmethod
    def from_state_dict(cls, state: dict[str, Any]) -> TabularPreprocessor:
        pre = cls(clip=float(state["clip"]), scaling=str(state.get("scaling", "robust")))
        pre.columns = [
            _Column(kind, tuple(_from_json_value(v) for v in cats))
            for kind, cats in zip(state["kinds"], state["categories"], strict=True)
        ]
        pre.fill = np.asarray(state["fill"], dtype=np.float64)
        pre.center = np.asarray(state["center"], dtype=np.float64)
        pre.scale = np.asarray(state["scale"], dtype=np.float64)
        pre.prescale = np.asarray(state.get("prescale", np.ones_like(pre.scale)), dtype=np.float64)
        return pre


def _hashable(v: Any) -> Any:
    if isinstance(v, np.generic):
        return v.item()
    return v


def _json_value(v: Any) -> Any:
    v = _hashable(v)
    if isinstance(v, bool | int | str) or v is None:
        return {"t": type(v).__name__, "v": v}
    if isinstance(v, float):
        return {"t": "float", "v": repr(v)}
    raise TabzooInputError(
        f"category {v!r} of type {type(v).__name__} cannot be saved without pickle; convert the "
        "column to strings before fit to save this estimator."
    )


def _from_json_value(d: Any) -> Any:
    t, v = d["t"], d["v"]
    return float(v) if t == "float" else v
