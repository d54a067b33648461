"""MultiTab's feature encoding is the core's preprocessing split into tokens: the same column
types, categories and scaled numbers as :class:`tabzoo.estimators.TabularPreprocessor` (z-scores, clip 10), with
missing numbers kept as NaN (the embedding's missing token) and categories as codes 1..K."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.estimators import TabularPreprocessor
from tabzoo_multitab.preprocess import FeatureEncoder


def _frame() -> pd.DataFrame:
    return pd.DataFrame({
        "cat": ["b", "a", None, "b", "c"],
        "x": [1.0, np.nan, 3.0, 4.0, 500.0],
        "flag": [True, False, None, True, False],
        "k": pd.Categorical(["lo", "hi", "hi", None, "lo"], categories=["lo", "hi", "unused"]),
        "n": [5, 6, 7, 8, 9],
    })


def test_column_types_and_numbers_are_the_cores() -> None:
    df = _frame()
    enc = FeatureEncoder().fit(df)
    pre = TabularPreprocessor(clip=10.0, scaling="standard").fit(df)
    assert enc.pre.kinds == pre.kinds == ["categorical", "numeric", "boolean", "categorical", "numeric"]
    x_num, x_cat = enc.transform(df)
    assert x_num.dtype == np.float32 and x_cat is not None and x_cat.dtype == np.int64
    # numeric tokens: the core's scaling (z-scores) and soft clip; the missing value stays NaN
    core = pre.transform(df)[:, [1, 4]]
    assert np.isnan(x_num[1, 0]) and not np.isnan(np.delete(x_num, 1, axis=0)).any()
    np.testing.assert_array_equal(np.delete(x_num, 1, axis=0), np.delete(core, 1, axis=0))
    x = np.array([1.0, 3.0, 4.0, 500.0])  # the z-scores MultiTab-Net was tuned on: mean/std of the present values
    np.testing.assert_allclose(np.delete(x_num[:, 0], 1), (x - x.mean()) / x.std(), rtol=1e-6)
    # coded tokens: categories 1..K in the core's order, booleans 1/2, missing 0
    assert x_cat[:, 0].tolist() == [2, 1, 0, 2, 3]
    assert x_cat[:, 1].tolist() == [2, 1, 0, 2, 1]
    assert x_cat[:, 2].tolist() == [1, 2, 2, 0, 1]  # pandas category order; unused level dropped
    assert enc.n_num == 2 and enc.cardinalities == (3, 2, 2)


def test_unseen_category_is_code_zero_and_clip_is_the_cores_parameter() -> None:
    df = _frame()
    enc = FeatureEncoder(clip=2.0).fit(df)
    assert enc.pre.clip == 2.0
    x_num, _ = enc.transform(df)
    assert np.nanmax(np.abs(x_num)) < 2.0 + np.log1p(1e3)
    q = df.iloc[:1].copy()
    q["cat"] = "never seen"
    assert enc.transform(q)[1][0, 0] == 0


def test_refusals_name_the_fix() -> None:
    enc = FeatureEncoder().fit(_frame())
    with pytest.raises(TabzooInputError, match="same columns"):
        enc.transform(_frame().iloc[:, :3])
    with pytest.raises(TabzooInputError, match="infinite"):
        enc.transform(_frame().assign(x=np.inf))


@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=3, max_size=12))
def test_numeric_only_tables_have_no_coded_tokens(values: list[float]) -> None:
    X = np.asarray(values)[:, None]
    x_num, x_cat = FeatureEncoder().fit(X).transform(X)
    assert x_cat is None and x_num.shape == (len(values), 1) and np.isfinite(x_num).all()
    np.testing.assert_array_equal(x_num, TabularPreprocessor(clip=10.0, scaling="standard").fit_transform(X))


@given(st.lists(st.sampled_from(["union", "non-union", "Yes", "No", "2. Married", "1. Never Married"]), min_size=2, max_size=30),
       st.randoms(use_true_random=False))
def test_category_codes_do_not_depend_on_row_order(values: list[str], rnd) -> None:
    # a string column's codes come from its sorted categories, never from set / hash order: the same rows in
    # another order (or another process's PYTHONHASHSEED) give every value the same code
    X = np.array(values, dtype=object)[:, None]
    shuffled = list(values)
    rnd.shuffle(shuffled)
    a, b = FeatureEncoder().fit(X), FeatureEncoder().fit(np.array(shuffled, dtype=object)[:, None])
    assert a.pre.columns[0].categories == b.pre.columns[0].categories == tuple(sorted(set(values)))
    np.testing.assert_array_equal(a.transform(X)[1], b.transform(X)[1])
