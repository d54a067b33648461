"""One typed column: storage and the explicit conversions that build it.

Storage per :class:`~tabzoo.table.types.ColumnType` (``missing`` is always a bool array ``[rows]``):

- ``NUMERIC``: ``int64`` (integer input; missing rows hold 0) or ``float64`` (missing rows hold NaN).
- ``CATEGORICAL``: ``int64`` codes into ``categories`` (object array, sorted unless the input
  carried an order, e.g. a pandas ``category``); missing rows hold -1.
- ``BOOLEAN``: ``bool`` (missing rows hold False).
- ``DATETIME``: ``datetime64`` in the input's unit (s/ms/us/ns; coarser units become ``s``);
  missing rows hold NaT.
- ``TEXT``: object array of ``str`` (missing rows hold None).
"""

from __future__ import annotations

import datetime as _dt
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tabzoo.table.convert import (
    bad_value,
    to_boolean,
    to_categorical,
    to_datetime,
    to_numeric,
    to_text,
)
from tabzoo.table.errors import DTypeError, ShapeError
from tabzoo.table.types import ColumnType

__all__ = ["Column", "is_missing_value", "make_column"]


def is_missing_value(v: Any) -> bool:
    """True for ``None``, float NaN, NaT and ``pd.NA`` (checked without importing pandas)."""
    if v is None:
        return True
    if isinstance(v, float | np.floating):
        return bool(np.isnan(v))
    if isinstance(v, np.datetime64 | np.timedelta64):
        return bool(np.isnat(v))
    return type(v).__name__ in ("NAType", "NaTType")


@dataclass(frozen=True, eq=False)
class Column:
    """A typed column. See the module docstring for the storage of each type."""

    name: str
    type: ColumnType
    values: np.ndarray
    missing: np.ndarray
    categories: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def take(self, rows: np.ndarray) -> Column:
        """Rows ``rows`` (int indices ``[k]``) of this column; categories are kept whole."""
        return Column(self.name, self.type, self.values[rows], self.missing[rows], self.categories)

    def with_missing(self, mask: np.ndarray) -> Column:
        """This column with the rows in bool ``mask [rows]`` also marked missing."""
        values = self.values.copy()
        fill: dict[ColumnType, Any] = {
            ColumnType.CATEGORICAL: -1,
            ColumnType.BOOLEAN: False,
            ColumnType.DATETIME: np.datetime64("NaT"),
            ColumnType.TEXT: None,
        }
        if self.type is ColumnType.NUMERIC:
            values[mask] = 0 if values.dtype.kind == "i" else np.nan
        else:
            values[mask] = fill[self.type]
        return Column(self.name, self.type, values, self.missing | mask, self.categories)

    def public(self) -> np.ndarray:
        """The user-facing values ``[rows]`` (what :meth:`Table.column` returns).

        NUMERIC: int64 when integer and complete, else float64 with NaN. CATEGORICAL: object array
        of the category values, None where missing. BOOLEAN: bool when complete, else object with
        None. DATETIME: datetime64 with NaT. TEXT: object array of str with None.
        """
        t, v, m = self.type, self.values, self.missing
        if t is ColumnType.NUMERIC:
            if v.dtype.kind == "i" and m.any():
                out = v.astype(np.float64)
                out[m] = np.nan
                return out
            return v.copy()
        if t is ColumnType.CATEGORICAL:
            assert self.categories is not None
            out = np.empty(len(v), dtype=object)
            out[~m] = self.categories[v[~m]]
            out[m] = None
            return out
        if t is ColumnType.BOOLEAN and m.any():
            out = v.astype(object)
            out[m] = None
            return out
        return v.copy()

    def numeric(self) -> np.ndarray:
        """Float64 view ``[rows]``: ordinal codes, 0/1, seconds since epoch; NaN where missing.

        :raises DTypeError: for TEXT columns.
        """
        t, v, m = self.type, self.values, self.missing
        if t is ColumnType.TEXT:
            raise DTypeError(
                f"column {self.name!r} is TEXT and has no numeric view; drop it with "
                f"table.drop([{self.name!r}]), or encode it first, e.g. "
                f"table.with_types({{{self.name!r}: ColumnType.CATEGORICAL}}) or a text encoder"
            )
        if t is ColumnType.DATETIME:
            out = (v - np.datetime64(0, "s")) / np.timedelta64(1, "s")
        else:
            out = v.astype(np.float64)
        out[m] = np.nan
        return out


def _as_1d(name: str, data: Any) -> np.ndarray:
    """``data`` as a 1-D array; Python sequences become object arrays (no silent str-casting)."""
    if isinstance(data, np.ndarray):
        arr = data
    elif isinstance(data, str | bytes) or not isinstance(data, Sequence | np.ndarray):
        try:
            data = list(data)
        except TypeError:
            raise DTypeError(
                f"column {name!r}: expected a sequence of values, got {type(data).__name__}; "
                "pass a list or a 1-D array"
            ) from None
        arr = np.fromiter(data, dtype=object, count=len(data))
    else:
        arr = np.empty(len(data), dtype=object)
        for i, v in enumerate(data):
            arr[i] = v
    if arr.ndim != 1:
        raise ShapeError(
            f"column {name!r} has shape {arr.shape}; a column must be 1-D: pass one sequence "
            "per column (split a 2-D array with Table.from_numpy)"
        )
    return arr


def _kind_of_type(t: type) -> str:
    if issubclass(t, bool | np.bool_):
        return "bool"
    if issubclass(t, numbers.Integral):
        return "int"
    if issubclass(t, numbers.Real):
        return "float"
    if issubclass(t, _dt.date | np.datetime64):
        return "datetime"
    if issubclass(t, str | bytes):
        return "str"
    return "other"


_NEVER_MISSING = frozenset({str, int, bool, bytes})


def _object_missing(arr: np.ndarray) -> np.ndarray:
    """Missing mask ``[rows]`` of an object array (fast path when only None can be missing)."""
    types = list(map(type, arr))
    if set(types) <= _NEVER_MISSING | {type(None)}:
        return np.fromiter((t is type(None) for t in types), dtype=bool, count=len(arr))
    return np.fromiter((is_missing_value(v) for v in arr), dtype=bool, count=len(arr))


def _classify(name: str, arr: np.ndarray, missing: np.ndarray) -> str:
    """The natural kind of ``arr``: bool, int, float, datetime, str or mixed."""
    k = arr.dtype.kind
    if k == "b":
        return "bool"
    if k in "iu":
        return "int"
    if k == "f":
        return "float"
    if k == "M":
        return "datetime"
    if k in "US":
        return "str"
    if k != "O":
        raise DTypeError(
            f"column {name!r} has dtype {arr.dtype}, which no column type holds; convert it "
            "(e.g. timedelta -> seconds as float, complex -> two real columns)"
        )
    kinds = {_kind_of_type(t) for t in set(map(type, arr[~missing]))}
    if not kinds:
        return "empty"
    if kinds == {"int", "float"}:
        return "float"
    return kinds.pop() if len(kinds) == 1 else "mixed"


_INFER = {
    "bool": ColumnType.BOOLEAN,
    "int": ColumnType.NUMERIC,
    "float": ColumnType.NUMERIC,
    "empty": ColumnType.NUMERIC,
    "datetime": ColumnType.DATETIME,
    "str": ColumnType.CATEGORICAL,
}


def make_column(
    name: str,
    data: Any,
    ctype: ColumnType | str | None = None,
    missing: np.ndarray | None = None,
    categories: np.ndarray | None = None,
) -> Column:
    """Build a :class:`Column` from 1-D ``data [rows]`` with explicit, non-lossy conversions.

    :param ctype: the requested type; ``None`` infers it (see :mod:`tabzoo.table.types`).
    :param missing: extra missing mask ``[rows]`` (e.g. arrow validity), OR-ed with NaN/None/NaT.
    :param categories: when given with ``ctype=CATEGORICAL``, ``data`` must be int codes ``[rows]``
        into these categories (-1 = missing), as from a pandas ``category`` column.
    :raises DTypeError: when the data can't be the requested type, or mixes types.
    """
    arr = _as_1d(name, data)
    if categories is not None:
        codes = arr.astype(np.int64)
        miss = codes < 0
        if missing is not None:
            miss = miss | missing
        codes = np.where(miss, -1, codes)
        cats = np.asarray(categories, dtype=object)
        return Column(name, ColumnType.CATEGORICAL, codes, miss, cats)
    if arr.dtype.kind == "f":
        miss = np.isnan(arr)
    elif arr.dtype.kind == "M":
        miss = np.isnat(arr)
    elif arr.dtype.kind == "O":
        miss = _object_missing(arr)
    else:
        miss = np.zeros(len(arr), dtype=bool)
    if missing is not None:
        if missing.shape != miss.shape:
            raise ShapeError(f"column {name!r}: missing mask shape {missing.shape} != {miss.shape}")
        miss = miss | missing.astype(bool)
    kind = _classify(name, arr, miss)
    target = ColumnType.parse(ctype) if ctype is not None else _INFER.get(kind)
    if target is None:
        seen = sorted({type(v).__name__ for v in arr[~miss]})
        raise DTypeError(
            f"column {name!r} mixes value types {seen}; clean the column, or declare its type "
            f"explicitly, e.g. types={{{name!r}: ColumnType.CATEGORICAL}}"
        )
    if target is ColumnType.NUMERIC:
        return Column(name, target, to_numeric(name, arr, miss, kind), miss)
    if target is ColumnType.BOOLEAN:
        return Column(name, target, to_boolean(name, arr, miss, kind), miss)
    if target is ColumnType.DATETIME:
        if kind in ("int", "float", "bool"):
            row = int(np.flatnonzero(~miss)[0]) if (~miss).any() else 0
            raise bad_value(
                name,
                row,
                arr[row] if len(arr) else None,
                "is a number, not a date/time",
                "convert epoch numbers yourself, e.g. pd.to_datetime(values, unit='s')",
            )
        return Column(name, target, to_datetime(name, arr, miss, kind), miss)
    if target is ColumnType.TEXT:
        return Column(name, target, to_text(name, arr, miss), miss)
    codes, cats = to_categorical(arr, miss)
    return Column(name, target, codes, miss, cats)
