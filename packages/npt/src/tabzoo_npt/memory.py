"""NPT's memory estimate from a table's shape, before anything is allocated (issue 24 item 7, issue 25).

``fit``: one training step keeps every layer's activations of a batch for the backward pass
(hidden states, feed-forward, the ABD scores ``heads x batch^2`` and the ABA scores ``heads x
batch x columns^2``), plus parameters, gradients and the optimiser's state: LAMB's two moments
(:func:`tabzoo.kernels.memory.training_bytes`) and Lookahead's slow copy of the weights.

``predict`` runs without gradients, one layer at a time: what lives at once is the encoded
context (the keys and values, two ``[p, columns * dim]`` tensors, of each ABD layer, ``p`` = the
rows of one context partition), the working set of the current layer over the ``p`` context rows (its input,
normalised input, queries/keys/values, attention output, feed-forward; the ABA scores, ``heads x
p x columns^2``, counted although the CPU kernel may not keep them), and one query chunk's
attention over the ``p + 1`` keys each query row reads. Measured against peak RSS by ``benchmarks/npt_memory.py``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from numbers import Integral
from typing import Any

import numpy as np
from tabzoo.errors import TabzooInputError
from tabzoo.kernels.memory import FLOAT, training_bytes

from tabzoo_npt.config import NPTConfig

__all__ = ["check_shape", "fit_activations", "fit_bytes", "predict_bytes", "partition_rows"]


def check_shape(cardinalities: Any, n_rows: Any) -> tuple[tuple[int, ...], int]:
    """``cardinalities`` as a tuple of ints and ``n_rows`` as an int, or a :class:`TabzooInputError`
    with the fix (a path, a string, floats such as 2.5, booleans, a negative row count...)."""
    usage = ("pass cardinalities as a sequence of integers, one per column with the targets last "
             "(0 = numeric, K >= 2 = a categorical column with K classes), e.g. (0, 0, 3, 2), and n_rows as an "
             "integer >= 1")
    if isinstance(cardinalities, str | bytes | os.PathLike) or not isinstance(cardinalities, Iterable):
        raise TabzooInputError(f"memory_estimate: cardinalities={cardinalities!r} is not a sequence of integers; "
                               f"{usage}.")
    cards = list(np.asarray(cardinalities, dtype=object).ravel()) if isinstance(cardinalities, np.ndarray) \
        else list(cardinalities)
    bad = [c for c in cards if isinstance(c, bool | np.bool_) or not isinstance(c, Integral)]
    if bad or not cards:
        what = f"{bad[0]!r} is not an integer" if bad else "no column given"
        raise TabzooInputError(f"memory_estimate: cardinalities: {what}; {usage}.")
    if isinstance(n_rows, bool | np.bool_) or not isinstance(n_rows, Integral) or int(n_rows) < 1:
        raise TabzooInputError(f"memory_estimate: n_rows={n_rows!r}; {usage}.")
    return tuple(int(c) for c in cards), int(n_rows)


def partition_rows(n_rows: int, context_size: int) -> int:
    """Rows of the largest context partition at prediction (:func:`tabzoo_npt.predict.context_partitions`)."""
    k = -(-n_rows // context_size)
    return -(-n_rows // k)


def fit_activations(cfg: NPTConfig, rows: int) -> float:
    """Values one training step on ``rows`` rows keeps for its backward pass (every layer)."""
    c, e = len(cfg.cardinalities), cfg.dim
    return cfg.n_layers * (rows * c * e * (cfg.ff_mult + 6) + cfg.n_heads * rows * rows
                           + cfg.heads_aba * rows * c * c)


def predict_bytes(cfg: NPTConfig, params: int, n_rows: int, context_size: int, chunk_size: int) -> float:
    """Peak bytes of ``predict``: parameters, the encoded context of one partition, one layer's
    working set over it and one query chunk's attention (see the module docstring)."""
    c, e = len(cfg.cardinalities), cfg.dim
    p = partition_rows(n_rows, context_size)
    m = min(chunk_size, n_rows)
    abd_layers = (cfg.n_layers + 1) // 2
    states = 2 * abd_layers * p * c * e  # keys and values
    layer = p * c * e * (cfg.ff_mult + 6) + cfg.heads_aba * p * c * c
    query = m * c * e * 6 + cfg.n_heads * m * (p + 1) * 2  # chunk activations; scores and weights
    return FLOAT * (params + states + max(layer, query))


def fit_bytes(cfg: NPTConfig, params: int, batch_rows: int) -> float:
    """Peak bytes of one training step on ``batch_rows`` rows: the core's count (parameters,
    gradients, two moments, activations) plus Lookahead's slow copy of the weights."""
    return training_bytes(params, fit_activations(cfg, batch_rows)) + FLOAT * params
