"""``tabzoo.checkpoint.labels_state`` / ``labels_from_state``: an estimator's ``classes_`` survive the
saved state's JSON exactly (values and dtype), whatever label type a user fits on."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.checkpoint import labels_from_state, labels_state
from tabzoo.errors import TabzooInputError

_VALUES = st.one_of(
    st.lists(st.text(max_size=5), min_size=1, max_size=5, unique=True).map(lambda v: np.array(v)),
    st.lists(st.text(max_size=5), min_size=1, max_size=5, unique=True).map(lambda v: np.array(v, dtype=object)),
    st.lists(st.integers(-(2**40), 2**40), min_size=1, max_size=5, unique=True).map(lambda v: np.array(v, np.int64)),
    st.lists(st.integers(0, 255), min_size=1, max_size=5, unique=True).map(lambda v: np.array(v, np.uint8)),
    st.lists(st.floats(allow_nan=False, width=32), min_size=1, max_size=5, unique=True).map(
        lambda v: np.array(v, np.float32)),
    st.just(np.array([False, True])),
    st.lists(st.one_of(st.integers(0, 9), st.text(max_size=3)), min_size=1, max_size=5).map(
        lambda v: np.array(v, dtype=object)),
)


@settings(max_examples=40, deadline=None)
@given(classes=_VALUES)
def test_labels_round_trip_through_json_with_their_dtype(classes: np.ndarray) -> None:
    back = labels_from_state(json.loads(json.dumps(labels_state(classes))))
    assert back is not None and back.dtype == classes.dtype and back.shape == classes.shape
    assert [type(a) for a in back.tolist()] == [type(b) for b in classes.tolist()]
    assert back.tolist() == classes.tolist()


def test_none_and_the_legacy_str_dtype() -> None:
    assert labels_state(None) is None and labels_from_state(None) is None
    old = labels_from_state({"labels": ["a", "b"], "dtype": "str"})  # NPT's saves before 2026-11-29
    assert old is not None and old.dtype == object and old.tolist() == ["a", "b"]


def test_a_label_json_cannot_hold_is_refused_with_the_fix() -> None:
    with pytest.raises(TabzooInputError, match="convert y's labels"):
        labels_state(np.array([(1, 2), "a"], dtype=object))
