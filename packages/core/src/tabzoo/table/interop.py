"""Conversions between :class:`~tabzoo.table.columns.Column` lists and pandas / pyarrow.

pandas and pyarrow are optional dependencies: they are imported lazily, and a clear error names the
extra to install when one is missing.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from tabzoo.table.columns import Column, make_column
from tabzoo.table.errors import DTypeError
from tabzoo.table.types import ColumnType

__all__ = ["columns_from_arrow", "columns_from_pandas", "to_arrow_table", "to_pandas_frame"]


def optional_import(module: str, extra: str) -> Any:
    """Import optional ``module`` or raise ImportError naming the pip extra that provides it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{module} is required for this; install it with `pip install 'tabzoo-core[{extra}]'`"
        ) from exc


def columns_from_pandas(df: Any, types: Mapping[str, ColumnType | str]) -> list[Column]:
    """Columns of a pandas DataFrame ``[rows, columns]``; names become ``str(name)``."""
    pd = optional_import("pandas", "pandas")
    if isinstance(df, pd.Series):
        raise DTypeError("got a pandas Series; pass a DataFrame, e.g. series.to_frame()")
    if not isinstance(df, pd.DataFrame):
        raise DTypeError(f"expected a pandas DataFrame, got {type(df).__name__}")
    api = pd.api.types
    out = []
    for j, raw in enumerate(df.columns):
        name = str(raw)
        s = df.iloc[:, j]
        ctype = types.get(name)
        dt = s.dtype
        if isinstance(dt, pd.CategoricalDtype):
            if ctype is None or ColumnType.parse(ctype) is ColumnType.CATEGORICAL:
                cats = np.asarray(dt.categories.to_numpy(dtype=object), dtype=object)
                out.append(
                    make_column(
                        name, s.cat.codes.to_numpy(), ColumnType.CATEGORICAL, categories=cats
                    )
                )
                continue
            miss = s.isna().to_numpy()
            data = s.astype(object).to_numpy()
            data[miss] = None
            out.append(make_column(name, data, ctype, missing=miss))
            continue
        if isinstance(dt, pd.DatetimeTZDtype):
            s = s.dt.tz_convert("UTC").dt.tz_localize(None)
            dt = s.dtype
        if api.is_extension_array_dtype(dt):
            if ctype is None and api.is_string_dtype(dt):
                ctype = ColumnType.CATEGORICAL  # a string dtype says so even when all missing
            miss = s.isna().to_numpy(dtype=bool)
            if api.is_bool_dtype(dt):
                data = s.to_numpy(dtype=bool, na_value=False)
            elif api.is_integer_dtype(dt):
                data = s.to_numpy(dtype=np.int64, na_value=0)
            elif api.is_float_dtype(dt):
                data = s.to_numpy(dtype=np.float64, na_value=np.nan)
            else:
                data = s.to_numpy(dtype=object, na_value=None)
            out.append(make_column(name, data, ctype, missing=miss))
        else:
            out.append(make_column(name, s.to_numpy(), ctype))
    return out


def to_pandas_frame(columns: list[Column]) -> Any:
    """A pandas DataFrame with one column per :class:`Column`, dtypes preserving missingness.

    NUMERIC int with missing -> ``Int64``; BOOLEAN with missing -> ``boolean``; CATEGORICAL ->
    ``category`` (all categories, in order); TEXT -> object of str; DATETIME -> ``datetime64``.
    """
    pd = optional_import("pandas", "pandas")
    data: dict[str, Any] = {}
    for c in columns:
        t, v, m = c.type, c.values, c.missing
        if t is ColumnType.NUMERIC and v.dtype.kind == "i" and m.any():
            data[c.name] = pd.arrays.IntegerArray(v.copy(), m.copy())
        elif t is ColumnType.BOOLEAN and m.any():
            data[c.name] = pd.arrays.BooleanArray(v.copy(), m.copy())
        elif t is ColumnType.CATEGORICAL:
            assert c.categories is not None
            cats = pd.Index(c.categories, dtype=object)
            data[c.name] = pd.Categorical.from_codes(v, categories=cats)
        elif t is ColumnType.TEXT:
            data[c.name] = pd.Series(c.public(), dtype=object)
        else:
            data[c.name] = c.public()
    n = len(columns[0]) if columns else 0
    return pd.DataFrame(data, index=pd.RangeIndex(n))


def columns_from_arrow(tbl: Any, types: Mapping[str, ColumnType | str]) -> list[Column]:
    """Columns of a ``pyarrow.Table`` or ``RecordBatch``. Arrow nulls are missing values."""
    pa = optional_import("pyarrow", "arrow")
    if isinstance(tbl, pa.RecordBatch):
        tbl = pa.Table.from_batches([tbl])
    if not isinstance(tbl, pa.Table):
        raise DTypeError(f"expected a pyarrow Table or RecordBatch, got {type(tbl).__name__}")
    pat = pa.types
    out = []
    for name, col in zip(tbl.column_names, tbl.columns, strict=True):
        name = str(name)
        t, ctype = col.type, types.get(name)
        miss = np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
        if (
            pat.is_dictionary(t)
            and col.num_chunks == 1
            and (ctype is None or ColumnType.parse(ctype) is ColumnType.CATEGORICAL)
        ):
            chunk = col.chunk(0)
            codes = chunk.indices.fill_null(-1).to_numpy(zero_copy_only=False)
            cats = np.empty(len(chunk.dictionary), dtype=object)
            cats[:] = chunk.dictionary.to_pylist()
            out.append(
                make_column(name, codes, ColumnType.CATEGORICAL, missing=miss, categories=cats)
            )
            continue
        if pat.is_boolean(t):
            data = col.fill_null(False).to_numpy(zero_copy_only=False)
        elif pat.is_integer(t):
            data = col.fill_null(0).to_numpy(zero_copy_only=False)
        elif pat.is_floating(t) or pat.is_decimal(t):
            data = col.cast(pa.float64()).to_numpy(zero_copy_only=False)
        elif pat.is_timestamp(t):
            data = col.cast(pa.timestamp(t.unit)).to_numpy(zero_copy_only=False)
        elif pat.is_date(t):
            data = col.cast(pa.timestamp("s")).to_numpy(zero_copy_only=False)
        elif (
            pat.is_string(t)
            or pat.is_large_string(t)
            or pat.is_dictionary(t)
            or pat.is_null(t)
            or pat.is_binary(t)
            or pat.is_large_binary(t)
            or str(t) == "string_view"
        ):
            data = np.empty(len(col), dtype=object)
            data[:] = col.to_pylist()
            if ctype is None and not pat.is_null(t):
                ctype = ColumnType.CATEGORICAL  # a string type says so even when all null
        else:
            raise DTypeError(
                f"column {name!r} has arrow type {t}, which no column type holds; flatten or "
                "cast it (e.g. pyarrow.compute.cast) before building a Table"
            )
        out.append(make_column(name, np.asarray(data), ctype, missing=miss))
    return out


def to_arrow_table(columns: list[Column]) -> Any:
    """A ``pyarrow.Table``; missing values become nulls, CATEGORICAL becomes dictionary-encoded."""
    pa = optional_import("pyarrow", "arrow")
    arrays, names = [], []
    for c in columns:
        t, v, m = c.type, c.values, c.missing
        if t is ColumnType.CATEGORICAL:
            assert c.categories is not None
            try:
                arr = pa.DictionaryArray.from_arrays(
                    pa.array(v.astype(np.int32), mask=m), pa.array(c.categories.tolist())
                )
            except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
                raise DTypeError(
                    f"column {c.name!r}: arrow can't hold its mixed-type categories ({exc}); "
                    f"make them one type, e.g. table.with_types({{{c.name!r}: ColumnType.TEXT}})"
                ) from None
        elif t is ColumnType.TEXT:
            arr = pa.array(c.public().tolist(), type=pa.string())
        else:
            arr = pa.array(v, mask=m)
        arrays.append(arr)
        names.append(c.name)
    return pa.Table.from_arrays(arrays, names=names)
