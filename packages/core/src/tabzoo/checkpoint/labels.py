"""Class labels in a saved state's JSON: an estimator's ``classes_`` written and read back exactly.

Used by the plugins' pickle-free saves (NPT, MultiTab-Net), so every saved estimator encodes its
labels one way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tabzoo.errors import TabzooInputError

__all__ = ["labels_from_state", "labels_state"]


def labels_state(classes: np.ndarray | None) -> dict[str, Any] | None:
    """``classes [k]`` as JSON: the labels as Python ``str`` / ``int`` / ``float`` / ``bool`` values
    and the array's dtype (``None`` stays ``None``).

    :raises TabzooInputError: a label of another type (it could not be read back as it was).
    """
    if classes is None:
        return None
    classes = np.asarray(classes)
    labels = [c.item() if isinstance(c, np.generic) else c for c in classes.tolist()]
    if not all(isinstance(c, (str, int, float, bool)) for c in labels):
        raise TabzooInputError("only str, int, float or bool class labels can be saved; convert y's labels "
                               "to one of those types before fit.")
    return {"labels": labels, "dtype": classes.dtype.str}


def labels_from_state(state: dict[str, Any] | None) -> np.ndarray | None:
    """The ``classes`` array :func:`labels_state` wrote, with its dtype. An object array keeps its
    Python values (``np.asarray`` would turn ints into floats); ``"str"`` (the dtype NPT's saves
    wrote before 2026-11-29) reads as an object array of strings."""
    if state is None:
        return None
    kind = state["dtype"]
    dtype = np.dtype(object) if kind == "str" else np.dtype(kind)
    if dtype.kind == "O":
        out = np.empty(len(state["labels"]), dtype=object)
        out[:] = state["labels"]
        return out
    return np.asarray(state["labels"], dtype=dtype)
