"""Overflow-safe standardisation of regression targets and numeric columns, shared by every
estimator (one path: NPT, MultiTab and the in-context regressors use these, never their own).

Statistics are computed in a pre-scaled space (values divided by their largest magnitude), so
values anywhere in the float64 range, e.g. near 1e300, give finite means and scales instead of
``inf``/``NaN``: ``|mean| <= max|y|`` and ``std <= max|y|``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TINY_SCALE", "finite_mean_std", "standardize_targets", "unstandardize"]

TINY_SCALE = 1e-12
"""A standard deviation at or below this fraction of the largest magnitude is treated as constant
(the scale becomes 1). Relative, so targets of any scale, 1e-300 as well as 1e300, are
standardised."""


def finite_mean_std(v: np.ndarray) -> tuple[float, float]:
    """``(mean, std)`` of the finite entries of 1-d ``v`` without overflow; ``(0, 1)`` when there
    are none, and ``std = 1`` for a constant column."""
    v = np.asarray(v, dtype=np.float64)
    v = v[np.isfinite(v)]
    if v.size == 0:
        return 0.0, 1.0
    top = float(np.max(np.abs(v)))
    if top == 0.0:
        return 0.0, 1.0
    s = v / top
    mean_s, std_s = float(s.mean()), float(s.std())
    return mean_s * top, (std_s * top if std_s > TINY_SCALE else 1.0)


def standardize_targets(y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standardise finite targets ``y [n]`` or ``[n, t]`` column by column.

    :return: ``(mean [t], scale [t], z)`` with ``z`` shaped like ``y``, ``z = (y - mean) / scale``
        computed without overflow; ``scale`` is 1 for a constant column (std at most
        ``TINY_SCALE`` times its largest magnitude; then ``z = y - mean``).
    """
    y = np.asarray(y, dtype=np.float64)
    y2 = y.reshape(len(y), -1)
    t = y2.shape[1]
    mean, scale, z = np.zeros(t), np.ones(t), np.zeros_like(y2)
    for j in range(t):
        col = y2[:, j]
        top = float(np.max(np.abs(col))) if col.size else 0.0
        top = top if top > 0 else 1.0
        s = col / top
        mean_s, std_s = float(s.mean()) if s.size else 0.0, float(s.std()) if s.size else 0.0
        mean[j] = mean_s * top
        if std_s > TINY_SCALE:
            scale[j] = std_s * top
            z[:, j] = (s - mean_s) / std_s
        else:
            z[:, j] = col - mean[j]
    return mean, scale, z.reshape(y.shape)


def unstandardize(z: np.ndarray, mean: np.ndarray | float, scale: np.ndarray | float) -> np.ndarray:
    """``z * scale + mean`` in float64, clipped to the float64 range (never ``inf``)."""
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.asarray(z, dtype=np.float64) * scale + mean
    big = np.finfo(np.float64).max
    return np.clip(out, -big, big)
