"""Shared pieces of the bad-input fuzz tests (issue 16 item 4).

Every fuzz test draws a valid base input with hypothesis, applies one corruption from the
input classes of the issue at a drawn position, and calls :func:`outcome`: the call must either
raise a :class:`~tabzoo.errors.TabzooInputError` (a ``ValueError``) whose message contains the
expected pieces (the row / column / line it names, and the fix), or return a result that the
test then checks (finite, the right shape, documented behaviour). Anything else fails the test
with the corruption that caused it.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import numpy as np
import pandas as pd
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError

#: the input classes of issue 16, by the names the tests use
CLASSES = (
    "mixed_labels", "mixed_object_column", "single_class", "empty", "duplicate_names",
    "int_names", "mixed_names", "huge", "subnormal", "constant", "all_nan", "all_none",
)


@contextlib.contextmanager
def alarm(seconds: int) -> Iterator[None]:
    """Raise ``TimeoutError`` in the main thread when the block runs past ``seconds`` (a hang)."""

    def hang(signum: int, frame: Any) -> None:
        raise TimeoutError(f"the call ran past {seconds} s")

    old = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


class Raised:
    """The TabzooInputError an entry point raised (returned by :func:`outcome`)."""

    def __init__(self, exc: TabzooInputError) -> None:
        self.exc = exc
        self.message = str(exc)

    def expect(self, *pieces: str, kind: type | None = None) -> None:
        """The message contains every piece (case-insensitive); the error is of ``kind``."""
        assert isinstance(self.exc, ValueError), "TabzooInputError must stay a ValueError"
        if kind is not None:
            assert isinstance(self.exc, kind), f"{type(self.exc).__name__} is not a {kind.__name__}: {self.message}"
        low = self.message.lower()
        missing = [p for p in pieces if p.lower() not in low]
        assert not missing, f"message lacks {missing}: {self.message}"
        assert len(self.message) >= 40, f"message too short to say the fix: {self.message}"


def outcome(call: Callable[[], Any]) -> Any:
    """The result of ``call()``, or :class:`Raised` for a TabzooInputError; anything else fails."""
    try:
        return call()
    except TabzooInputError as exc:
        return Raised(exc)


def must_raise(result: Any, *pieces: str, kind: type | None = None) -> None:
    assert isinstance(result, Raised), f"expected a TabzooInputError naming {pieces}, got a result: {result!r:.300}"
    result.expect(*pieces, kind=kind)


def must_return(result: Any) -> Any:
    assert not isinstance(result, Raised), f"expected a result, got {type(result.exc).__name__}: {result.message}"
    return result


def finite(values: Iterable[Any]) -> bool:
    return bool(np.isfinite(np.asarray(values, dtype=np.float64)).all())


@st.composite
def base_frames(draw: st.DrawFn, min_rows: int = 6, max_rows: int = 14, max_cols: int = 4) -> tuple[pd.DataFrame, np.ndarray]:
    """A valid numeric DataFrame ``[rows, cols]`` with columns ``f0..`` and int labels of 2-3 classes."""
    n = draw(st.integers(min_rows, max_rows))
    d = draw(st.integers(1, max_cols))
    k = draw(st.integers(2, 3))
    seed = draw(st.integers(0, 2**16))
    rng = np.random.default_rng(seed)
    y = rng.permutation(np.arange(n) % k)
    X = rng.normal(size=(n, d)) + y[:, None]  # some signal
    return pd.DataFrame(X, columns=[f"f{j}" for j in range(d)]), y


def corrupt(
    kind: str, X: pd.DataFrame, y: np.ndarray, row: int, col: int
) -> tuple[pd.DataFrame, Any, str]:
    """Apply input class ``kind`` at ``row`` / ``col``; returns ``(X, y, name of the touched column)``."""
    X = X.copy()
    name = str(X.columns[col])
    if kind == "mixed_labels":
        labels = y.astype(object)
        labels[row] = "class_" + str(labels[row])
        return X, labels, name
    if kind == "mixed_object_column":
        values = X[name].astype(object)
        values.iloc[row] = "text"
        X[name] = values
        return X, y, name
    if kind == "single_class":
        return X, np.zeros_like(y), name
    if kind == "empty":
        return X.iloc[:0], y[:0], name
    if kind == "duplicate_names":
        if X.shape[1] < 2:
            X["f_extra"] = X[name]
        cols = list(X.columns)
        cols[(col + 1) % len(cols)] = cols[col]
        X.columns = cols
        return X, y, str(cols[col])
    if kind == "int_names":
        X.columns = list(range(X.shape[1]))
        return X, y, str(col)
    if kind == "mixed_names":
        if X.shape[1] < 2:
            X["f_extra"] = 1.0
        X.columns = [0, *X.columns[1:]]
        return X, y, name
    if kind == "huge":
        X[name] = X[name] / np.abs(X[name]).max() * 1e308
        return X, y, name
    if kind == "subnormal":
        X[name] = X[name] * 5e-324
        return X, y, name
    if kind == "constant":
        X[name] = 7.0
        return X, y, name
    if kind == "all_nan":
        X[name] = np.nan
        return X, y, name
    if kind == "all_none":
        X[name] = pd.Series([None] * len(X), dtype=object)
        return X, y, name
    raise AssertionError(kind)
