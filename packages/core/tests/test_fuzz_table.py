"""Bad-input fuzzing of ``Table`` (dict, numpy, pandas, arrow) and ``Episode`` (issue 16 item 4)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import torch
from _fuzz import CLASSES, base_frames, corrupt, must_raise, must_return, outcome
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.table import ColumnType, Episode, Table
from tabzoo.table.errors import (
    DTypeError,
    DuplicateColumnError,
    EmptyContextError,
    InvalidValueError,
    RaggedRowsError,
    SingleClassError,
)

BUILDERS = ("dict", "pandas", "arrow")


def _build(builder: str, X: pd.DataFrame) -> Table:
    if builder == "dict":
        return Table.from_dict({c: X[c].tolist() for c in X.columns}) if X.columns.is_unique else Table.from_dict(
            dict(zip(X.columns, (X.iloc[:, j].tolist() for j in range(X.shape[1])), strict=False)))
    if builder == "pandas":
        return Table.from_pandas(X)
    return Table.from_arrow(pa.Table.from_arrays([pa.array(X.iloc[:, j].tolist()) for j in range(X.shape[1])],
                                                 names=[str(c) for c in X.columns]))


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("kind", [k for k in CLASSES if k not in ("mixed_labels", "single_class")])
@given(base=base_frames(), row=st.integers(0, 100), col=st.integers(0, 100))
def test_table_builders_on_every_input_class(builder: str, kind: str, base, row: int, col: int) -> None:  # type: ignore[no-untyped-def]
    X0, y = base
    row, col = row % len(X0), col % X0.shape[1]
    X, _, name = corrupt(kind, X0, y, row, col)
    if builder == "dict" and kind == "duplicate_names":
        return  # a dict can't hold one key twice; names colliding after str() are tested below
    if builder == "arrow" and kind == "mixed_object_column":
        with pytest.raises(pa.ArrowException):  # pyarrow itself refuses mixed arrays
            _build(builder, X)
        return
    result = outcome(lambda: _build(builder, X))
    if kind == "mixed_object_column":
        must_raise(result, f"column {name!r}", "mixes value types", "declare its type", kind=DTypeError)
    elif kind == "duplicate_names":
        must_raise(result, repr(name), "appears twice", "rename", kind=DuplicateColumnError)
    else:
        table = must_return(result)
        assert table.n_rows == len(X)
        # documented: names go through str()
        assert table.names == tuple(str(c) for c in X.columns)
        col_name = table.names[col]
        values = table.column(col_name)
        if kind == "huge":
            np.testing.assert_array_equal(values, X.iloc[:, col].to_numpy())  # kept exactly in float64
            np.testing.assert_array_equal(table.to_numpy(np.float64)[:, col], X.iloc[:, col].to_numpy())
            must_raise(outcome(lambda: table.to_numpy(np.float32)), f"column {col_name!r}", "row",
                       "float64", kind=InvalidValueError)
        elif kind == "subnormal":
            np.testing.assert_array_equal(values, X.iloc[:, col].to_numpy())  # subnormals kept exactly
        elif kind == "constant":
            assert np.all(values == 7.0) and table.column_type(col_name) is ColumnType.NUMERIC
        elif kind in ("all_nan", "all_none"):
            # documented: an all-missing column is NUMERIC with every row missing
            assert table.column_type(col_name) is ColumnType.NUMERIC
            assert table.missing[:, col].all()
        elif kind == "empty":
            assert table.n_rows == 0 and table.to_numpy().shape == (0, X.shape[1])


@given(n=st.integers(1, 6), width=st.integers(1, 4), row=st.integers(1, 100), delta=st.sampled_from([-1, 1, 2]))
def test_table_from_numpy_ragged_rows(n: int, width: int, row: int, delta: int) -> None:
    rows = [[float(i + j) for j in range(width)] for i in range(n + 1)]
    row = 1 + row % n
    rows[row] = rows[row][: width + delta] if delta < 0 else rows[row] + [0.0] * delta
    if len(rows[row]) == width:
        return
    must_raise(outcome(lambda: Table.from_numpy(rows)), f"row {row}", "same number of values",
               kind=RaggedRowsError)


@given(names=st.lists(st.one_of(st.integers(-3, 3), st.text("ab1", min_size=1, max_size=2), st.none()),
                      min_size=1, max_size=6))
def test_table_non_string_names(names: list) -> None:  # type: ignore[no-untyped-def]
    data = {k: [1.0, 2.0] for k in names}  # dict keys: duplicates collapse as in Python
    as_str = [str(k) for k in data]
    result = outcome(lambda: Table.from_dict(data))
    if len(set(as_str)) < len(as_str):  # e.g. 1 and "1"
        dup = next(s for i, s in enumerate(as_str) if s in as_str[:i])
        must_raise(result, repr(dup), "appears twice", kind=DuplicateColumnError)
    else:
        assert must_return(result).names == tuple(as_str)


@given(values=st.lists(st.one_of(st.integers(-5, 5), st.floats(allow_nan=True, allow_infinity=False),
                                 st.text(max_size=3), st.booleans(), st.none()), min_size=1, max_size=8))
def test_table_object_column_of_any_mix(values: list) -> None:  # type: ignore[no-untyped-def]
    result = outcome(lambda: Table.from_dict({"c": values}))
    present = [v for v in values if not (v is None or (isinstance(v, float) and np.isnan(v)))]
    kinds = {"bool" if isinstance(v, bool) else "num" if isinstance(v, int | float) else "str" for v in present}
    if len(kinds) > 1:
        must_raise(result, "column 'c'", "mixes value types", kind=DTypeError)
    else:
        table = must_return(result)
        expected = {"bool": ColumnType.BOOLEAN, "num": ColumnType.NUMERIC, "str": ColumnType.CATEGORICAL}
        assert table.column_type("c") is expected.get(next(iter(kinds), "num"))
        assert table.missing[:, 0].tolist() == [v is None or (isinstance(v, float) and np.isnan(v)) for v in values]


def test_table_nested_arrow_types_name_the_column() -> None:
    for array in (pa.array([[1, 2], [3]]), pa.array([{"x": 1}, {"x": 2}]),
                  pa.array([[("k", 1)], [("k", 2)]], pa.map_(pa.string(), pa.int64()))):
        tbl = pa.table({"ok": [1, 2], "nested": array})
        must_raise(outcome(lambda tbl=tbl: Table.from_arrow(tbl)), "column 'nested'", "flatten", kind=DTypeError)


EPISODE_CLASSES = ("mixed_labels", "text_feature", "single_class", "empty", "huge", "subnormal", "constant",
                   "all_nan", "ragged", "nan_label", "unseen_query_label")


@pytest.mark.parametrize("kind", EPISODE_CLASSES)
@given(base=base_frames(), row=st.integers(0, 100), col=st.integers(0, 100), n_query=st.integers(1, 5))
def test_episode_from_arrays_on_every_input_class(kind: str, base, row: int, col: int, n_query: int) -> None:  # type: ignore[no-untyped-def]
    X, y = base
    row, col = row % len(X), col % X.shape[1]
    xc: object = X.to_numpy()
    yc: object = y.astype(np.float64)
    xq: object = X.to_numpy()[:n_query]
    yq: object = None
    if kind == "mixed_labels":
        yc = y.astype(object)
        yc[row] = "a"  # type: ignore[index]
    elif kind == "text_feature":
        xc = X.to_numpy().astype(object)
        xc[row, col] = "x"  # type: ignore[index]
    elif kind == "single_class":
        yc = np.zeros(len(y))
    elif kind == "empty":
        xc, yc = X.to_numpy()[:0], y[:0]
    elif kind == "huge":
        xc = X.to_numpy().copy()
        xc[row, col] = 1e308  # type: ignore[index]
    elif kind == "subnormal":
        xc = X.to_numpy() * 5e-324
    elif kind == "constant":
        xc = np.full(X.shape, 3.0)
    elif kind == "all_nan":
        xc = X.to_numpy().copy()
        xc[:, col] = np.nan  # type: ignore[index]
    elif kind == "ragged":
        xc = [list(r) for r in X.to_numpy()]
        xc[row] = xc[row] + [1.0]  # type: ignore[index]
    elif kind == "nan_label":
        yc = y.astype(np.float64)
        yc[row] = np.nan  # type: ignore[index]
    elif kind == "unseen_query_label":
        yq = np.full(n_query, float(y.max() + 1))
    result = outcome(lambda: Episode.from_arrays(xc, yc, xq, yq, task="classification"))
    expect = {
        "mixed_labels": ((f"y_context row {row}", "not a number", "np.unique"), DTypeError),
        "text_feature": ((f"x_context row {row}, feature {col}", "not a number"), DTypeError),
        "single_class": (("only class 0", "another class"), SingleClassError),
        "empty": (("no context rows",), EmptyContextError),
        "huge": ((f"row {row}, feature {col}", "float32 range", "rescale"), InvalidValueError),
        "ragged": (("x_context", "different lengths"), RaggedRowsError),
        "nan_label": ((f"y_context row {row}", "nan"), None),
    }
    if kind in expect:
        pieces, cls = expect[kind]
        must_raise(result, *pieces, kind=cls)
    elif kind == "unseen_query_label":
        must_raise(result, "y_query row", "which no context row has")
    else:
        episode = must_return(result)
        assert episode.x_context.dtype == torch.float32
        if kind == "subnormal":  # documented: float32 storage rounds float64 subnormals to 0
            assert torch.all(episode.x_context == 0)
        if kind == "all_nan":  # documented: NaN marks missing values, allowed in features
            assert torch.isnan(episode.x_context[:, col]).all()
