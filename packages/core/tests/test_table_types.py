"""Type inference, explicit conversions and Table-level bad input."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
import pytest
from tabzoo.errors import TabzooInputError
from tabzoo.table import (
    ColumnType,
    DTypeError,
    DuplicateColumnError,
    RaggedRowsError,
    ShapeError,
    Table,
    UnknownColumnError,
)
from tabzoo.table.errors import InvalidValueError

N, C, B, D, T = (
    ColumnType.NUMERIC,
    ColumnType.CATEGORICAL,
    ColumnType.BOOLEAN,
    ColumnType.DATETIME,
    ColumnType.TEXT,
)


def test_column_type_is_a_str_enum() -> None:
    assert ColumnType.NUMERIC == "numeric"
    assert ColumnType.parse("Text") is T
    with pytest.raises(DTypeError, match="not a column type"):
        ColumnType.parse("number")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (np.array([1, 2, 3]), N),
        (np.array([1.5, np.nan]), N),
        (np.array([True, False]), B),
        (np.array(["2020-01-01", "NaT"], dtype="datetime64[D]"), D),
        (np.array(["a", "b"]), C),
        ([1, None, 3], N),
        ([True, None], B),
        (["1", "2"], C),  # strings are never parsed as numbers unless asked
        ([dt.datetime(2020, 1, 1), None], D),
        ([dt.date(2020, 1, 1)], D),
        ([None, None], N),
    ],
)
def test_inference_rules(values: object, expected: ColumnType) -> None:
    assert Table.from_dict({"c": values}).types["c"] is expected


def test_pandas_inference() -> None:
    df = pd.DataFrame(
        {
            "cat": pd.Categorical(["b", "a", None], categories=["b", "a"]),
            "int": pd.array([1, None, 3], dtype="Int64"),
            "bool": pd.array([True, None, False], dtype="boolean"),
            "s": ["x", "y", None],
            "t": pd.to_datetime(["2020-01-01", None, "2020-01-03"]).tz_localize("Europe/Paris"),
        }
    )
    t = Table.from_pandas(df)
    assert t.types == {"cat": C, "int": N, "bool": B, "s": C, "t": D}
    assert t.categories("cat") == ("b", "a")  # pandas order kept
    assert t.missing.tolist() == [
        [False] * 5,
        [False, True, True, False, True],
        [True, False, False, True, False],
    ]
    assert t.column("t")[0] == np.datetime64("2019-12-31T23:00:00")  # converted to UTC


def test_mixed_object_column_raises_naming_column() -> None:
    with pytest.raises(DTypeError, match=r"column 'm' mixes value types.*ColumnType.CATEGORICAL"):
        Table.from_dict({"m": ["a", 1]})
    assert Table.from_dict({"m": ["a", 1]}, types={"m": "categorical"}).categories("m") == (1, "a")


def test_numeric_from_strings_needs_all_numbers() -> None:
    t = Table.from_dict({"n": ["1", "2.5", None]}, types={"n": N})
    np.testing.assert_array_equal(t.column("n"), [1.0, 2.5, np.nan])
    with pytest.raises(DTypeError, match=r"column 'n': row 1 holds 'abc', which is not a number"):
        Table.from_dict({"n": ["1", "abc"]}, types={"n": N})


@pytest.mark.parametrize(
    ("values", "ctype", "match"),
    [
        ([0, 2], B, "row 1 holds 2"),
        (["yes"], B, "row 0 holds 'yes'"),
        ([1, 2], D, "is a number, not a date/time"),
        (["2020-13-45"], D, "not a date/time"),
        ([1, "a"], T, "row 0 holds 1, which is not a string"),
        (np.array(["2020-01-01"], dtype="datetime64[D]"), N, "is a date/time, not a number"),
    ],
)
def test_requested_type_the_data_cannot_be_raises(
    values: object, ctype: ColumnType, match: str
) -> None:
    with pytest.raises(DTypeError, match=match):
        Table.from_dict({"c": values}, types={"c": ctype})


def test_explicit_boolean_and_datetime_conversions() -> None:
    t = Table.from_dict(
        {"b": [0, 1, None], "d": ["2020-01-02 03:04:05", None, "2021-01-01"]},
        types={"b": B, "d": D},
    )
    assert t.column("b").tolist() == [False, True, None]
    assert t.column("d")[0] == np.datetime64("2020-01-02T03:04:05")
    assert t.missing[:, 1].tolist() == [False, True, False]


def test_empty_string_is_not_missing_but_nan_is() -> None:
    t = Table.from_dict({"s": ["", None, float("nan")]})
    assert t.missing[:, 0].tolist() == [False, True, True]


def test_unsupported_dtypes_raise() -> None:
    with pytest.raises(DTypeError, match="complex"):
        Table.from_dict({"z": np.array([1 + 2j])})
    with pytest.raises(DTypeError, match="timedelta"):
        Table.from_dict({"z": np.array([1], dtype="timedelta64[s]")})
    with pytest.raises(DTypeError, match="overflows int64"):
        Table.from_dict({"u": np.array([2**64 - 1], dtype=np.uint64)})


def test_ragged_rows_and_columns() -> None:
    with pytest.raises(RaggedRowsError, match="row 2 has 1 values but row 0 has 2"):
        Table.from_numpy([[1, 2], [3, 4], [5]])
    with pytest.raises(RaggedRowsError, match="column 'b' has 1 rows but column 'a' has 2"):
        Table.from_dict({"a": [1, 2], "b": [1]})


def test_duplicate_column_names() -> None:
    with pytest.raises(DuplicateColumnError, match="'a' appears twice"):
        Table.from_numpy(np.zeros((2, 2)), names=["a", "a"])
    df = pd.DataFrame(np.zeros((2, 2)), columns=["a", "a"])
    with pytest.raises(DuplicateColumnError):
        Table.from_pandas(df)
    with pytest.raises(DuplicateColumnError):
        Table.from_dict({1: [1], "1": [2]})  # names go through str()


def test_shapes_and_unknown_names() -> None:
    with pytest.raises(ShapeError, match="reshape"):
        Table.from_numpy(np.zeros(3))
    with pytest.raises(ShapeError, match="2 names for 3 columns"):
        Table.from_numpy(np.zeros((2, 3)), names=["a", "b"])
    with pytest.raises(UnknownColumnError, match="types= names unknown column"):
        Table.from_numpy(np.zeros((2, 1)), types={"nope": N})
    t = Table.from_numpy(np.zeros((2, 1)))
    with pytest.raises(UnknownColumnError, match="no column 'y'"):
        t.column("y")
    with pytest.raises(InvalidValueError, match="row index 5 is out of range"):
        t.take([5])


def test_all_errors_are_tabzoo_input_errors() -> None:
    with pytest.raises(TabzooInputError):
        Table.from_numpy([[1], [2, 3]])


def test_to_numpy_views_and_text_refusal() -> None:
    t = Table.from_dict(
        {
            "c": ["b", "a", None],
            "d": np.array(["1970-01-01T00:01", "NaT", "1970-01-02"], dtype="datetime64[m]"),
            "txt": ["hello", "world", None],
        },
        types={"txt": T},
    )
    with pytest.raises(DTypeError, match=r"column 'txt' is TEXT.*with_types"):
        t.to_numpy()
    x = t.drop(["txt"]).to_numpy()
    assert x.dtype == np.float32
    np.testing.assert_array_equal(x, [[1, 60], [0, np.nan], [np.nan, 86400]])
    y = t.with_types({"txt": C}).to_numpy(np.float64)
    np.testing.assert_array_equal(y[:, 2], [0, 1, np.nan])


def test_select_take_structured_and_categorical_indices() -> None:
    arr = np.array([(1, "a"), (2, "b")], dtype=[("n", "i8"), ("s", "U1")])
    t = Table.from_numpy(arr)
    assert t.names == ("n", "s") and t.types == {"n": N, "s": C}
    assert t.categorical_indices == (1,)
    assert t.select(["s"]).names == ("s",)
    sub = t.take(np.array([True, False]))
    assert sub.n_rows == 1 and sub.column("s").tolist() == ["a"]
    assert sub.categories("s") == ("a", "b")  # categories kept whole
    assert t.take([-1]).column("n").tolist() == [2]
    with pytest.raises(DTypeError, match="not categorical"):
        t.categories("n")


def test_numeric_from_numpy_object_rows_infers_per_column() -> None:
    t = Table.from_numpy([[1, "a", True], [2.5, None, False]], names=["n", "c", "b"])
    assert t.types == {"n": N, "c": C, "b": B}
    assert t.column("n").dtype == np.float64
