"""Property tests: numpy / pandas / arrow -> Table -> pandas / arrow keep values and missing masks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.table import ColumnType, Table

SETTINGS = settings(max_examples=20, deadline=None)

finite_or_nan = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, width=64), st.just(float("nan"))
)
maybe_int = st.one_of(st.none(), st.integers(-(2**40), 2**40))
maybe_str = st.one_of(st.none(), st.text(alphabet="abcxyz", min_size=0, max_size=4))
maybe_bool = st.one_of(st.none(), st.booleans())
maybe_time = st.one_of(st.none(), st.integers(-(10**9), 10**9))


@st.composite
def frames(draw: st.DrawFn) -> tuple[pd.DataFrame, dict[str, ColumnType]]:
    n = draw(st.integers(0, 12))
    col = lambda s: draw(st.lists(s, min_size=n, max_size=n))  # noqa: E731
    secs = col(maybe_time)
    df = pd.DataFrame(
        {
            "f": np.array(col(finite_or_nan), dtype=np.float64),
            "i": pd.array(col(maybe_int), dtype="Int64"),
            "b": pd.array(col(maybe_bool), dtype="boolean"),
            "c": pd.Series(col(maybe_str), dtype="string"),
            "t": pd.Series(col(maybe_str), dtype=object),
            "d": pd.Series(
                np.array(
                    [np.datetime64("NaT") if s is None else np.datetime64(s, "s") for s in secs],
                    dtype="datetime64[s]",
                )
            ),
        },
        index=pd.RangeIndex(n),
    )
    types = {
        "f": ColumnType.NUMERIC,
        "i": ColumnType.NUMERIC,
        "b": ColumnType.BOOLEAN,
        "c": ColumnType.CATEGORICAL,
        "t": ColumnType.TEXT,
        "d": ColumnType.DATETIME,
    }
    return df, types


def _assert_same_values(a: np.ndarray, b: np.ndarray, missing: np.ndarray) -> None:
    assert list(a[~missing]) == list(b[~missing])


@SETTINGS
@given(frames())
def test_pandas_round_trip(data: tuple[pd.DataFrame, dict[str, ColumnType]]) -> None:
    df, types = data
    t = Table.from_pandas(df, types={"t": ColumnType.TEXT})
    assert t.types == types
    expected_missing = df.isna().to_numpy()
    np.testing.assert_array_equal(t.missing, expected_missing)
    back = t.to_pandas()
    np.testing.assert_array_equal(back.isna().to_numpy(), expected_missing)
    for name in df.columns:
        m = expected_missing[:, df.columns.get_loc(name)]
        _assert_same_values(
            np.asarray(back[name].astype(object)), np.asarray(df[name].astype(object)), m
        )
    again = Table.from_pandas(back, types=t.types)
    assert again.equals(t)


@SETTINGS
@given(frames())
def test_arrow_round_trip(data: tuple[pd.DataFrame, dict[str, ColumnType]]) -> None:
    df, _ = data
    t = Table.from_pandas(df, types={"t": ColumnType.TEXT})
    arrow = t.to_arrow()
    assert isinstance(arrow, pa.Table) and arrow.num_rows == t.n_rows
    nulls = (
        np.stack([np.asarray(c.is_null()) for c in arrow.columns], axis=1)
        if t.n_rows
        else t.missing
    )
    np.testing.assert_array_equal(nulls.reshape(t.missing.shape), t.missing)
    back = Table.from_arrow(arrow, types={"t": ColumnType.TEXT})
    assert back.equals(t)
    assert back.categories("c") == t.categories("c")


@SETTINGS
@given(st.integers(0, 10), st.integers(1, 5), st.data())
def test_numpy_round_trip(n: int, f: int, data: st.DataObject) -> None:
    values = data.draw(st.lists(finite_or_nan, min_size=n * f, max_size=n * f))
    arr = np.array(values, dtype=np.float64).reshape(n, f)
    t = Table.from_numpy(arr)
    np.testing.assert_array_equal(t.missing, np.isnan(arr))
    np.testing.assert_array_equal(t.to_numpy(np.float64), arr)  # NaN == NaN for array_equal
    np.testing.assert_array_equal(t.to_pandas().to_numpy(dtype=np.float64), arr)


@SETTINGS
@given(st.lists(maybe_str, min_size=1, max_size=15), st.data())
def test_take_then_pandas_preserves_rows(values: list[str | None], data: st.DataObject) -> None:
    t = Table.from_dict({"c": values, "k": list(range(len(values)))})
    rows = data.draw(st.lists(st.integers(0, len(values) - 1), max_size=10))
    sub = t.take(np.array(rows, dtype=np.int64)).to_pandas()
    assert sub["k"].tolist() == rows
    assert [None if pd.isna(v) else v for v in sub["c"].tolist()] == [values[r] for r in rows]
