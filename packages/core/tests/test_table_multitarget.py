"""MultiTargetTable."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from tabzoo.table import (
    ColumnType,
    DTypeError,
    DuplicateColumnError,
    InvalidLabelError,
    MultiTargetTable,
    ShapeError,
    Table,
)


def df() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "a": [1.0, 2.0, 3.0],
            "b": ["x", "y", "x"],
            "price": [1.5, None, 2.0],
            "churn": [True, False, True],
        }
    )


def test_split_and_accessors() -> None:
    m = MultiTargetTable.from_pandas(df(), targets=["price", "churn"])
    assert m.features.names == ("a", "b") and m.target_names == ("price", "churn")
    assert m.target_types == {"price": ColumnType.NUMERIC, "churn": ColumnType.BOOLEAN}
    assert (m.task("price"), m.task("churn")) == ("regression", "classification")
    assert m.target_missing.tolist() == [[False, False], [True, False], [False, False]]
    assert m.take([2, 0]).target("churn").tolist() == [True, True]
    assert m.to_table().names == ("a", "b", "price", "churn")
    assert len(m) == 3 and m.n_targets == 2


def test_bad_multitarget_input() -> None:
    t = Table.from_pandas(df())
    with pytest.raises(DuplicateColumnError, match="both features and targets"):
        MultiTargetTable(t, t.select(["price"]))
    with pytest.raises(ShapeError, match="same rows"):
        MultiTargetTable(t.drop(["price"]), t.select(["price"]).take([0, 1]))
    with pytest.raises(ShapeError, match="at least one target"):
        MultiTargetTable(t, Table([]))
    with pytest.raises(DTypeError, match="targets must be numeric, categorical or boolean"):
        MultiTargetTable.from_table(t.with_types({"b": "text"}), ["b"])
    inf = Table.from_dict({"a": [1.0, 2.0], "y": [0.0, np.inf]})
    with pytest.raises(InvalidLabelError, match="target 'y' row 1 is inf"):
        MultiTargetTable.from_table(inf, ["y"])
