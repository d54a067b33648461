"""NPT's TableEncoder uses the core's one scaler (issue 31): a column's model-space values do not
depend on its units (from a spread of 1e-200 to values near 1e308, which the core pre-scales), and
inverse_numeric undoes both scalings."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo_npt.encoding import TableEncoder


def _frame(rng: np.random.Generator, unit: float) -> pd.DataFrame:
    x = rng.normal(size=40)
    x[3] = np.nan
    return pd.DataFrame({"x": x * unit, "c": rng.choice(["a", "b", None], size=40)})


@settings(max_examples=8, deadline=None)
@given(exponent=st.sampled_from([-200, -20, 0, 20, 305]), seed=st.integers(0, 3))
def test_model_space_values_do_not_depend_on_the_units(exponent: int, seed: int) -> None:
    unit = 10.0**exponent
    base = _frame(np.random.default_rng(seed), 1.0)
    scaled = _frame(np.random.default_rng(seed), unit)
    a = TableEncoder().fit(base).transform(base)
    b = TableEncoder().fit(scaled).transform(scaled)
    assert a.dtype == np.float32 and a.shape == (40, 2)
    assert np.isnan(a[3, 0]) and np.isnan(b[3, 0]), "a missing number stays NaN (NPT's mask token)"
    np.testing.assert_allclose(b[:, 0], a[:, 0], rtol=1e-5, atol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(b[:, 1], a[:, 1])  # category codes, NaN where missing


@settings(max_examples=6, deadline=None)
@given(exponent=st.sampled_from([-200, 0, 305]))
def test_inverse_numeric_returns_the_data_units(exponent: int) -> None:
    df = _frame(np.random.default_rng(0), 10.0**exponent)
    enc = TableEncoder().fit(df)
    z = enc.transform(df)[:, 0]
    back = enc.inverse_numeric(0, z)
    keep = ~np.isnan(df["x"].to_numpy())
    inside = np.abs(z[keep]) < 0.9 * enc.pre.clip  # the soft clip's tails are not invertible in float32
    np.testing.assert_allclose(back[keep][inside], df["x"].to_numpy()[keep][inside], rtol=2e-4)
