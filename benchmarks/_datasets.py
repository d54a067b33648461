"""The small classification tables of the TabFlex and ORION-MSP accuracy benchmarks (one copy)."""

from __future__ import annotations

import numpy as np


def small_classification() -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """scikit-learn's breast_cancer, wine, iris, digits and (with the bench group) palmerpenguins: name -> (X, y)."""
    from sklearn.datasets import load_breast_cancer, load_digits, load_iris, load_wine

    out = {n: f(return_X_y=True) for n, f in
           [("breast_cancer", load_breast_cancer), ("wine", load_wine), ("iris", load_iris), ("digits", load_digits)]}
    try:
        from palmerpenguins import load_penguins
    except ImportError:  # pragma: no cover - bench group not installed
        return out
    df = load_penguins().dropna(subset=["species"])
    X = df.drop(columns=["species", "year"])
    X = X.assign(island=X["island"].astype("category").cat.codes.replace(-1, np.nan),
                 sex=X["sex"].astype("category").cat.codes.replace(-1, np.nan)).to_numpy(dtype=float)
    out["palmerpenguins"] = (X, df["species"].astype("category").cat.codes.to_numpy())
    return out
