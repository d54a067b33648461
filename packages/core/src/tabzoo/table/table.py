"""``Table``: column-typed data with names, types and a missing-value mask."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from tabzoo.table.columns import Column, make_column
from tabzoo.table.errors import (
    DTypeError,
    DuplicateColumnError,
    InvalidValueError,
    RaggedRowsError,
    ShapeError,
    UnknownColumnError,
)
from tabzoo.table.interop import (
    columns_from_arrow,
    columns_from_pandas,
    to_arrow_table,
    to_pandas_frame,
)
from tabzoo.table.types import ColumnType

__all__ = ["Table"]

TypesArg = Mapping[str, ColumnType | str] | Sequence[ColumnType | str] | None


class Table:
    """An immutable table of typed columns ``[rows, columns]``.

    Build it with :meth:`from_numpy`, :meth:`from_pandas`, :meth:`from_arrow` or :meth:`from_dict`
    (``Table(mapping)`` is :meth:`from_dict`). Types are inferred by the documented rules of
    :mod:`tabzoo.table.types` unless given; a requested type the data can't be raises
    :class:`~tabzoo.table.errors.DTypeError`. Column names are strings (other names go through
    ``str``) and must be unique.
    """

    __slots__ = ("_columns", "_index")

    def __init__(
        self,
        columns: Mapping[str, Any] | Sequence[Column] = (),
        types: Mapping[str, ColumnType | str] | None = None,
    ) -> None:
        if isinstance(columns, Mapping):
            columns = Table.from_dict(columns, types=types)._columns
        elif types is not None:
            raise TypeError("types= applies only when building from a mapping of columns")
        cols = tuple(columns)
        _check_names([c.name for c in cols])
        lengths = {len(c) for c in cols}
        if len(lengths) > 1:
            first = len(cols[0])
            bad = next(c for c in cols if len(c) != first)
            raise RaggedRowsError(
                f"column {bad.name!r} has {len(bad)} rows but column {cols[0].name!r} has "
                f"{first}; give every column the same number of rows"
            )
        self._columns: tuple[Column, ...] = cols
        self._index = {c.name: i for i, c in enumerate(cols)}

    # ----------------------------------------------------------------- builders
    @classmethod
    def from_dict(
        cls, data: Mapping[Any, Any], types: Mapping[str, ColumnType | str] | None = None
    ) -> Table:
        """A table from ``{name: sequence [rows]}``. Sequences must have equal length."""
        names = [str(k) for k in data]
        _check_names(names)
        types = _types_mapping(types, names)
        cols = [make_column(n, v, types.get(n)) for n, v in zip(names, data.values(), strict=True)]
        return cls(cols)

    @classmethod
    def from_numpy(
        cls, array: Any, names: Sequence[str] | None = None, types: TypesArg = None
    ) -> Table:
        """A table from a 2-D array ``[rows, columns]``, a structured array, or a list of rows.

        :param names: column names (default ``x0, x1, ...``; a structured array's field names).
        :param types: one type per column, or ``{name: type}``; ``None`` infers each column.
        :raises RaggedRowsError: when rows of a list have different lengths.
        """
        if isinstance(array, np.ndarray) and array.dtype.names is not None:
            fields = list(array.dtype.names)
            names = list(names) if names is not None else fields
            data = [array[f].reshape(-1) for f in fields]
        else:
            if not isinstance(array, np.ndarray):
                array = _rows_to_array(array)
            if array.ndim != 2:
                raise ShapeError(
                    f"from_numpy needs a 2-D array [rows, columns], got shape {array.shape}; "
                    "use array.reshape(-1, 1) for one column"
                )
            data = [array[:, j] for j in range(array.shape[1])]
            names = list(names) if names is not None else [f"x{j}" for j in range(len(data))]
        if len(names) != len(data):
            raise ShapeError(f"got {len(names)} names for {len(data)} columns; pass one per column")
        names = [str(n) for n in names]
        _check_names(names)
        tmap = _types_mapping(types, names)
        return cls([make_column(n, d, tmap.get(n)) for n, d in zip(names, data, strict=True)])

    @classmethod
    def from_pandas(cls, df: Any, types: Mapping[str, ColumnType | str] | None = None) -> Table:
        """A table from a pandas DataFrame (the index is ignored; row order is kept)."""
        names = [str(c) for c in getattr(df, "columns", [])]
        _check_names(names)
        return cls(columns_from_pandas(df, _types_mapping(types, names)))

    @classmethod
    def from_arrow(cls, tbl: Any, types: Mapping[str, ColumnType | str] | None = None) -> Table:
        """A table from a ``pyarrow.Table`` or ``RecordBatch``; nulls become missing values."""
        names = [str(c) for c in getattr(tbl, "column_names", [])]
        _check_names(names)
        return cls(columns_from_arrow(tbl, _types_mapping(types, names)))

    # --------------------------------------------------------------- properties
    @property
    def names(self) -> tuple[str, ...]:
        """Column names, in order."""
        return tuple(c.name for c in self._columns)

    @property
    def types(self) -> dict[str, ColumnType]:
        """``{name: ColumnType}`` in column order (a copy)."""
        return {c.name: c.type for c in self._columns}

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return len(self._columns[0]) if self._columns else 0

    @property
    def n_columns(self) -> int:
        """Number of columns."""
        return len(self._columns)

    @property
    def shape(self) -> tuple[int, int]:
        """``(n_rows, n_columns)``."""
        return (self.n_rows, self.n_columns)

    @property
    def missing(self) -> np.ndarray:
        """Missing-value mask ``[rows, columns]`` bool (True = missing)."""
        if not self._columns:
            return np.zeros((0, 0), dtype=bool)
        return np.stack([c.missing for c in self._columns], axis=1)

    @property
    def categorical_indices(self) -> tuple[int, ...]:
        """Indices of the CATEGORICAL columns (e.g. for ``Episode.categorical``)."""
        return tuple(i for i, c in enumerate(self._columns) if c.type is ColumnType.CATEGORICAL)

    def __len__(self) -> int:
        return self.n_rows

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __repr__(self) -> str:
        cols = ", ".join(f"{c.name}: {c.type.value}" for c in self._columns[:8])
        more = ", ..." if self.n_columns > 8 else ""
        return f"Table({self.n_rows} rows; {cols}{more})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Table) and self.equals(other)

    __hash__ = None  # type: ignore[assignment]

    def equals(self, other: Table) -> bool:
        """True when names, types, missing masks, categories and present values are equal."""
        if self.names != other.names or self.types != other.types or self.n_rows != other.n_rows:
            return False
        for a, b in zip(self._columns, other._columns, strict=True):
            if not np.array_equal(a.missing, b.missing):
                return False
            pa_, pb = a.public()[~a.missing], b.public()[~b.missing]
            if not np.array_equal(pa_, pb):
                return False
            if a.type is ColumnType.CATEGORICAL and a.categories.tolist() != b.categories.tolist():  # type: ignore[union-attr]
                return False
        return True

    # ------------------------------------------------------------------ access
    def _col(self, name: str) -> Column:
        try:
            return self._columns[self._index[name]]
        except KeyError:
            raise UnknownColumnError(
                f"no column {name!r}; the table has {list(self.names)}"
            ) from None

    def column(self, name: str) -> np.ndarray:
        """Values of column ``name`` ``[rows]`` (a copy); see :meth:`Column.public` for dtypes."""
        return self._col(name).public()

    def column_type(self, name: str) -> ColumnType:
        """The :class:`ColumnType` of column ``name``."""
        return self._col(name).type

    def categories(self, name: str) -> tuple[Any, ...]:
        """The categories of CATEGORICAL column ``name``, in code order (code i = category i)."""
        col = self._col(name)
        if col.type is not ColumnType.CATEGORICAL:
            raise DTypeError(
                f"column {name!r} is {col.type.value}, not categorical; convert it with "
                f"table.with_types({{{name!r}: ColumnType.CATEGORICAL}})"
            )
        return tuple(col.categories.tolist())  # type: ignore[union-attr]

    def codes(self, name: str) -> np.ndarray:
        """Integer codes ``[rows]`` int64 of CATEGORICAL column ``name`` (-1 = missing)."""
        self.categories(name)
        return self._col(name).values.copy()

    def to_numpy(self, dtype: Any = np.float32) -> np.ndarray:
        """Numeric view ``[rows, columns]``: categorical -> ordinal codes, boolean -> 0/1,
        datetime -> seconds since 1970-01-01, missing -> NaN.

        :raises DTypeError: when a column is TEXT (drop it or encode it first).
        """
        if not self._columns:
            return np.zeros((0, 0), dtype=dtype)
        full = np.stack([c.numeric() for c in self._columns], axis=1)
        target = np.dtype(dtype)
        if target.kind == "f" and target.itemsize < 8 and full.size:
            big = float(np.finfo(target).max)
            with np.errstate(invalid="ignore"):
                over = np.isfinite(full) & (np.abs(full) > big)
            if over.any():
                r, c = (int(i) for i in np.argwhere(over)[0])
                raise InvalidValueError(
                    f"column {self.names[c]!r} row {r} is {full[r, c]!r}, beyond the {target} range "
                    f"(+-{big:.3g}); call to_numpy(np.float64), or rescale the column"
                )
        return full.astype(dtype)

    def to_dict(self) -> dict[str, np.ndarray]:
        """``{name: column(name)}``."""
        return {c.name: c.public() for c in self._columns}

    def to_pandas(self) -> Any:
        """A pandas DataFrame (see :func:`tabzoo.table.interop.to_pandas_frame` for dtypes)."""
        return to_pandas_frame(list(self._columns))

    def to_arrow(self) -> Any:
        """A ``pyarrow.Table``; missing values are nulls, categoricals are dictionary-encoded."""
        return to_arrow_table(list(self._columns))

    # --------------------------------------------------------------- derived
    def select(self, names: Iterable[str]) -> Table:
        """The columns ``names``, in that order."""
        names = list(names)
        _check_names(names)
        return Table([self._col(n) for n in names])

    def drop(self, names: Iterable[str]) -> Table:
        """All columns except ``names``."""
        drop = set(names)
        for n in drop:
            self._col(n)
        return Table([c for c in self._columns if c.name not in drop])

    def take(self, rows: Any) -> Table:
        """Rows ``rows``: int indices ``[k]`` (negative allowed) or a bool mask ``[n_rows]``."""
        idx = np.asarray(rows)
        if idx.dtype == bool:
            if idx.shape != (self.n_rows,):
                raise ShapeError(
                    f"bool row mask has shape {idx.shape}; it needs shape ({self.n_rows},)"
                )
            idx = np.flatnonzero(idx)
        elif idx.size == 0:
            idx = idx.astype(np.int64).reshape(0)
        elif idx.dtype.kind not in "iu" or idx.ndim != 1:
            raise DTypeError(
                f"rows must be 1-D int indices or a bool mask, got {idx.dtype}{idx.shape}"
            )
        bad = (idx >= self.n_rows) | (idx < -self.n_rows)
        if bad.any():
            raise InvalidValueError(
                f"row index {int(idx[bad][0])} is out of range for a table of {self.n_rows} rows; "
                f"use indices in [-{self.n_rows}, {self.n_rows})"
            )
        return Table([c.take(idx) for c in self._columns])

    def with_types(self, types: Mapping[str, ColumnType | str]) -> Table:
        """This table with the columns in ``types`` converted (same explicit rules as building)."""
        tmap = _types_mapping(types, list(self.names))
        cols = []
        for c in self._columns:
            want = tmap.get(c.name)
            if want is None or ColumnType.parse(want) is c.type:
                cols.append(c)
            else:
                cols.append(make_column(c.name, c.public(), want, missing=c.missing))
        return Table(cols)

    def with_missing(self, name: str, mask: Any) -> Table:
        """This table with column ``name`` also missing where bool ``mask [rows]`` is True."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.n_rows,):
            raise ShapeError(
                f"mask for column {name!r} has shape {mask.shape}, not ({self.n_rows},)"
            )
        col = self._col(name).with_missing(mask)
        return Table([col if c.name == name else c for c in self._columns])

    def with_column(self, name: str, data: Any, ctype: ColumnType | str | None = None) -> Table:
        """This table with column ``name`` replaced (or appended) by ``data [rows]``."""
        col = make_column(name, data, ctype)
        if name in self._index:
            return Table([col if c.name == name else c for c in self._columns])
        return Table([*self._columns, col])


def _check_names(names: Sequence[str]) -> None:
    seen: dict[str, int] = {}
    for i, n in enumerate(names):
        if n in seen:
            raise DuplicateColumnError(
                f"column name {n!r} appears twice (positions {seen[n]} and {i}); rename one "
                "of them so every column name is unique"
            )
        seen[n] = i


def _types_mapping(types: TypesArg, names: Sequence[str]) -> dict[str, ColumnType | str]:
    if types is None:
        return {}
    if isinstance(types, Mapping):
        tmap = {str(k): v for k, v in types.items()}
    elif isinstance(types, ColumnType | str):
        raise DTypeError(
            "types must be a mapping {name: type} or one type per column, not a single type"
        )
    else:
        types = list(types)
        if len(types) != len(names):
            raise ShapeError(
                f"got {len(types)} types for {len(names)} columns; pass one per column"
            )
        tmap = dict(zip(names, types, strict=True))
    unknown = [k for k in tmap if k not in set(names)]
    if unknown:
        raise UnknownColumnError(
            f"types= names unknown column(s) {unknown}; the columns are {list(names)}"
        )
    return {k: ColumnType.parse(v) for k, v in tmap.items()}


def _rows_to_array(rows: Any) -> np.ndarray:
    """A list of rows as a 2-D object array, checking that every row has the same length."""
    rows = list(rows)
    if not rows:
        return np.empty((0, 0), dtype=object)
    try:
        lengths = [len(r) for r in rows]
    except TypeError:
        raise ShapeError(
            "from_numpy needs rows that are sequences (a 2-D array); for one column use "
            "Table.from_dict({'name': values})"
        ) from None
    for i, n in enumerate(lengths):
        if n != lengths[0]:
            raise RaggedRowsError(
                f"row {i} has {n} values but row 0 has {lengths[0]}; give every row the same "
                "number of values (use None for a missing value)"
            )
    out = np.empty((len(rows), lengths[0]), dtype=object)
    for i, r in enumerate(rows):
        for j, v in enumerate(r):
            out[i, j] = v
    return out
