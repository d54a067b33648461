"""Explicit, non-lossy value conversions used by :func:`tabzoo.table.columns.make_column`.

Each ``to_*`` function takes the raw 1-D array ``[rows]``, its missing mask ``[rows]`` and its natural
kind (bool/int/float/datetime/str/mixed/empty) and returns the storage array of one ColumnType, or
raises :class:`~tabzoo.table.errors.DTypeError` naming the column, the row, the value and the fix.
"""

from __future__ import annotations

import datetime as _dt
import numbers
from typing import Any

import numpy as np

from tabzoo.table.errors import DTypeError

_TRUE = {"true", "1"}
_FALSE = {"false", "0"}
_DT_UNITS = ("s", "ms", "us", "ns")
_INT64_MAX = np.iinfo(np.int64).max


def bad_value(name: str, row: int, value: Any, what: str, fix: str) -> DTypeError:
    """A DTypeError naming the column, the row, the value, what is wrong and the fix."""
    return DTypeError(f"column {name!r}: row {row} holds {value!r}, which {what}; {fix}")


def to_numeric(name: str, arr: np.ndarray, missing: np.ndarray, kind: str) -> np.ndarray:
    if kind in ("int", "bool"):
        if arr.dtype.kind == "u" and arr.size and arr.max() > _INT64_MAX:
            row = int(np.argmax(arr > _INT64_MAX))
            raise bad_value(
                name, row, arr[row], "overflows int64", "store it as float or as a category"
            )
        if arr.dtype.kind != "O":
            return arr.astype(np.int64)
        out = np.zeros(len(arr), dtype=np.int64)
        try:
            out[~missing] = np.array([int(v) for v in arr[~missing]], dtype=np.int64)
        except OverflowError:
            for i in np.flatnonzero(~missing):
                if not -_INT64_MAX - 1 <= int(arr[i]) <= _INT64_MAX:
                    raise bad_value(
                        name, int(i), arr[i], "overflows int64", "store it as float or category"
                    ) from None
        return out
    if kind in ("float", "empty"):
        out = arr.astype(np.float64) if arr.dtype.kind != "O" else np.full(len(arr), np.nan)
        if arr.dtype.kind == "O":
            out[~missing] = [float(v) for v in arr[~missing]]
        out[missing] = np.nan
        return out
    if kind in ("str", "mixed"):  # explicit NUMERIC request: parse every value, all must parse
        parsed: list[Any] = [0] * len(arr)  # int | float, numpy scalars included
        all_int = True
        for i in np.flatnonzero(~missing):
            v = arr[i]
            if isinstance(v, bytes):
                v = v.decode()
            if isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_):
                parsed[i] = v
                all_int &= isinstance(v, numbers.Integral)
                continue
            try:
                parsed[i] = int(v)
            except (TypeError, ValueError):
                try:
                    parsed[i] = float(v)
                    all_int = False
                except (TypeError, ValueError):
                    raise bad_value(
                        name,
                        int(i),
                        arr[i],
                        "is not a number",
                        "fix or remove the value, mark it missing (None/NaN), or declare the "
                        "column CATEGORICAL or TEXT",
                    ) from None
        if all_int:
            return to_numeric(name, np.array(parsed, dtype=object), missing, "int")
        out = np.array(parsed, dtype=np.float64)
        out[missing] = np.nan
        return out
    rows = np.flatnonzero(~missing)
    row = int(rows[0]) if len(rows) else 0
    raise bad_value(
        name,
        row,
        arr[row] if len(arr) else None,
        "is a date/time, not a number",
        "declare the column DATETIME, or convert it to seconds yourself",
    )


def to_boolean(name: str, arr: np.ndarray, missing: np.ndarray, kind: str) -> np.ndarray:
    if kind == "bool":
        out = arr.astype(bool) if arr.dtype.kind != "O" else np.zeros(len(arr), dtype=bool)
        if arr.dtype.kind == "O":
            out[~missing] = [bool(v) for v in arr[~missing]]
        out[missing] = False
        return out
    out = np.zeros(len(arr), dtype=bool)
    for i in np.flatnonzero(~missing):
        v = arr[i]
        if isinstance(v, bool | np.bool_):
            out[i] = bool(v)
        elif isinstance(v, numbers.Real) and v in (0, 1):
            out[i] = bool(v)
        elif isinstance(v, str) and v.strip().lower() in _TRUE | _FALSE:
            out[i] = v.strip().lower() in _TRUE
        else:
            raise bad_value(
                name,
                int(i),
                v,
                "is not a boolean (True/False, 0/1, 'true'/'false')",
                "fix the value, mark it missing, or declare another column type",
            )
    return out


def normalize_dt(arr: np.ndarray) -> np.ndarray:
    unit = np.datetime_data(arr.dtype)[0]
    return arr if unit in _DT_UNITS else arr.astype("datetime64[s]")


def to_datetime(name: str, arr: np.ndarray, missing: np.ndarray, kind: str) -> np.ndarray:
    if arr.dtype.kind == "M":
        out = normalize_dt(arr).copy()
        out[missing] = np.datetime64("NaT")
        return out
    parsed: list[np.datetime64] = [np.datetime64("NaT")] * len(arr)
    for i in np.flatnonzero(~missing):
        v = arr[i]
        try:
            if hasattr(v, "to_datetime64"):  # pandas Timestamp (tz-aware -> UTC)
                if getattr(v, "tzinfo", None) is not None:
                    v = v.tz_convert("UTC").tz_localize(None)
                parsed[i] = v.to_datetime64()
            elif isinstance(v, _dt.datetime):
                if v.tzinfo is not None:
                    v = v.astimezone(_dt.UTC).replace(tzinfo=None)
                parsed[i] = np.datetime64(v, "us")
            elif isinstance(v, _dt.date):
                parsed[i] = np.datetime64(v, "D")
            elif isinstance(v, np.datetime64):
                parsed[i] = v
            elif isinstance(v, str):
                parsed[i] = np.datetime64(v.strip())
            else:
                raise TypeError
        except (TypeError, ValueError):
            raise bad_value(
                name,
                int(i),
                arr[i],
                "is not a date/time (datetime, date or ISO 8601 string)",
                "fix the value or mark it missing; convert epoch numbers yourself, e.g. "
                "pd.to_datetime(values, unit='s')",
            ) from None
    return normalize_dt(np.array(parsed)) if parsed else np.array([], dtype="datetime64[s]")


def sort_key(v: Any) -> tuple[str, str]:
    return (type(v).__name__, repr(v))


def to_categorical(arr: np.ndarray, missing: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    codes = np.full(len(arr), -1, dtype=np.int64)
    present = arr[~missing]
    if arr.dtype.kind in "US":
        present = present.astype(object)
    try:
        cats, inverse = np.unique(present, return_inverse=True)
    except TypeError:  # values of mixed types: order by (type name, repr)
        order = sorted(set(present.tolist()), key=sort_key)
        lookup = {v: j for j, v in enumerate(order)}
        cats = np.empty(len(order), dtype=object)
        cats[:] = order
        inverse = np.array([lookup[v] for v in present], dtype=np.int64)
    codes[~missing] = inverse.reshape(-1)
    return codes, np.asarray(cats, dtype=object)


def to_text(name: str, arr: np.ndarray, missing: np.ndarray) -> np.ndarray:
    out = np.empty(len(arr), dtype=object)
    for i in np.flatnonzero(~missing):
        v = arr[i]
        if not isinstance(v, str):
            raise bad_value(
                name,
                int(i),
                v,
                "is not a string",
                "convert the column to str yourself, or declare it CATEGORICAL/NUMERIC",
            )
        out[i] = str(v)
    return out
