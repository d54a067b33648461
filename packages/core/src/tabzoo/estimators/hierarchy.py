"""Past the head's class limit: hierarchical classification (ORION-MSP appendix A.6), for any
in-context classifier: one shared implementation for every plugin (tabflex and orion-msp use it).

A head with ``max_classes`` logits cannot name more classes. Reference implementations have merged the
extra classes into one and given it their probability; here no class is merged. The classes
``0 .. C-1`` are split into at most ``max_classes`` balanced, contiguous groups, recursively, until
every group fits the head. Each internal node is one in-context task: its context is the context
rows whose class lies under the node, relabelled by child group. A query row's probability of class
``c`` is the product of the probabilities along the path to ``c``::

    p(c | x) = p(group_1 | x) * p(group_2 | x, group_1) * ... * p(c | x, group_k)

so the probabilities are exact under the model and sum to 1. A group holding one class needs no
call. Cost: one pass per internal node; with ``C <= max_classes ** 2`` that is ``1 + g`` passes
(``g = ceil(C / max_classes)`` groups), each over all query rows and a subset of the context.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from tabzoo.errors import TabzooInputError

__all__ = ["ClassNode", "CodeFn", "PredictFn", "class_tree", "ecoc_codebook", "ecoc_proba", "hierarchical_proba"]

PredictFn = Callable[[np.ndarray, np.ndarray, int], np.ndarray]
"""``predict(context_rows [m] int, labels [m] int in 0..k-1, k) -> [n_query, k]`` probabilities."""


@dataclass
class ClassNode:
    """A node of the class tree: ``classes`` under it; ``children`` empty for a leaf (<= max_classes)."""

    classes: np.ndarray
    children: list[ClassNode] = field(default_factory=list)

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def depth(self) -> int:
        return 1 + max((c.depth() for c in self.children), default=0)

    def n_calls(self) -> int:
        """Model passes needed for this subtree (nodes with more than one class)."""
        if self.classes.size < 2:
            return 0
        return 1 + sum(c.n_calls() for c in self.children)


def class_tree(n_classes: int, max_classes: int) -> ClassNode:
    """Balanced contiguous split of ``0 .. n_classes-1`` into a tree whose nodes have ``<= max_classes``
    children (a leaf holds ``<= max_classes`` classes)."""
    if max_classes < 2:
        raise TabzooInputError(f"max_classes must be >= 2, got {max_classes}.")
    if n_classes < 1:
        raise TabzooInputError(f"n_classes must be >= 1, got {n_classes}.")
    return _split(np.arange(n_classes), max_classes)


def _split(classes: np.ndarray, max_classes: int) -> ClassNode:
    if classes.size <= max_classes:
        return ClassNode(classes)
    n_groups = min(max_classes, math.ceil(classes.size / max_classes))
    return ClassNode(classes, [_split(g, max_classes) for g in np.array_split(classes, n_groups)])


def hierarchical_proba(predict: PredictFn, y_context: np.ndarray, n_classes: int, max_classes: int,
                       n_query: int) -> np.ndarray:
    """Class probabilities ``[n_query, n_classes]`` for ``n_classes`` beyond the head's limit.

    :param predict: runs the in-context model on a subset of the context with relabelled targets.
    :param y_context: ``[n_context]`` int class indices in ``0 .. n_classes-1``.
    :param n_classes: total classes.
    :param max_classes: the head's limit.
    :param n_query: query rows.
    """
    y = np.asarray(y_context, dtype=np.int64)
    out = np.zeros((n_query, n_classes), dtype=np.float64)
    _fill(class_tree(n_classes, max_classes), predict, y, np.arange(y.size), np.ones(n_query), out)
    return out


def _fill(node: ClassNode, predict: PredictFn, y: np.ndarray, rows: np.ndarray, weight: np.ndarray,
          out: np.ndarray) -> None:
    if node.classes.size == 1:
        out[:, node.classes[0]] = weight
        return
    yr = y[rows]
    if node.is_leaf:
        labels = yr - node.classes[0]  # contiguous classes
        p = np.asarray(predict(rows, labels, node.classes.size), dtype=np.float64)
        out[:, node.classes] = weight[:, None] * p
        return
    bounds = np.array([c.classes[0] for c in node.children[1:]])
    group = np.searchsorted(bounds, yr, side="right")
    p = np.asarray(predict(rows, group, len(node.children)), dtype=np.float64)
    for j, child in enumerate(node.children):
        _fill(child, predict, y, rows[group == j], weight * p[:, j], out)


CodeFn = Callable[[int, np.ndarray, int], np.ndarray]
"""``predict(code_index, labels [n_context] int in 0..k-1, k) -> [n_query, k]`` probabilities."""


def ecoc_codebook(n_classes: int, max_classes: int, n_codes: int, seed: int) -> np.ndarray:
    """``[n_codes, n_classes]`` int codebook: code ``i`` maps class ``c`` to one of ``max_classes``
    groups, balanced (group sizes differ by at most one), a fresh random assignment per code."""
    if max_classes < 2 or n_classes < 1 or n_codes < 1:
        raise TabzooInputError(
            f"ecoc_codebook needs max_classes >= 2, n_classes >= 1 and n_codes >= 1, got {max_classes}, "
            f"{n_classes}, {n_codes}."
        )
    rng = np.random.default_rng(seed)
    groups = min(max_classes, n_classes)
    book = np.empty((n_codes, n_classes), dtype=np.int64)
    for i in range(n_codes):
        book[i, rng.permutation(n_classes)] = np.arange(n_classes) % groups
    return book


def ecoc_proba(predict: CodeFn, y_context: np.ndarray, n_classes: int, max_classes: int, n_query: int,
               n_codes: int = 16, seed: int = 0) -> np.ndarray:
    """Class probabilities ``[n_query, n_classes]`` by error-correcting output codes.

    Each of ``n_codes`` random balanced codes relabels the context classes into at most
    ``max_classes`` groups; the model predicts group probabilities per code, and the score of class
    ``c`` is ``sum_i log p_i(code_i(c) | x)``, soft-maxed over the classes. No class is merged, every
    class keeps a probability, and each code is one model pass over the whole context. On the
    26-class FLAVIA leaves this beat the hierarchical split by ~2 accuracy points (16 codes; see
    ``benchmarks/tabflex_quality.py``).
    """
    y = np.asarray(y_context, dtype=np.int64)
    book = ecoc_codebook(n_classes, max_classes, n_codes, seed)
    logp = np.zeros((n_query, n_classes), dtype=np.float64)
    for i, code in enumerate(book):
        k = int(code.max()) + 1
        p = np.asarray(predict(i, code[y], k), dtype=np.float64)
        logp += np.log(np.clip(p[:, code], 1e-12, 1.0))
    logp -= logp.max(axis=1, keepdims=True)
    out = np.exp(logp)
    return out / out.sum(axis=1, keepdims=True)
