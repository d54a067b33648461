"""Local contexts for large training sets (any in-context plugin can use them).

An in-context model pretrained on prompts of a few thousand rows does not, by itself, read more
out of 50,000 context rows than out of 5,000: its prediction is an average over the context, and a
larger context mostly averages over more rows that are far from the query. Local contexts turn the
size into resolution instead (the idea of LoCalPFN's retrieval and MixturePFN's routing of queries
to prompts): the training rows are clustered, each cluster's context is the ``size`` rows nearest
to its centre (so neighbouring clusters overlap), and each query row is answered from the context
of its nearest centre. More rows give more, smaller and denser neighbourhoods.

Everything here is deterministic and independent of the order of the context rows (rows are put in
a canonical order before the seeded k-means), and a query's context depends only on that query's
features, so predictions of query rows stay independent of each other.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tabzoo.errors import TabzooInputError

__all__ = ["LocalContexts", "fit_local_contexts", "kmeans"]


def _sq_dist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``[n, m]`` squared Euclidean distances of rows ``a [n, f]`` to rows ``b [m, f]`` (float64)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = (a * a).sum(1)[:, None] - 2.0 * a @ b.T + (b * b).sum(1)[None, :]
    return np.maximum(d, 0.0)


def kmeans(x: np.ndarray, k: int, seed: int, iters: int = 20, n_init: int = 3) -> np.ndarray:
    """Centres ``[k, f]`` of a seeded k-means of rows ``x [n, f]``: ``n_init`` k-means++ starts, Lloyd
    steps, the run with the lowest within-cluster sum of squares kept.

    The rows are first put in a canonical (lexicographic) order, so the result does not depend on
    the order in which they are given.
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    if not 1 <= k <= n:
        raise TabzooInputError(f"kmeans needs 1 <= k <= rows, got k={k} for {n} rows.")
    x = x[np.lexsort(x.T[::-1])] if x.shape[1] else x
    rng = np.random.default_rng(seed)
    best, best_sse = None, np.inf
    for _ in range(max(1, int(n_init))):
        centres = [x[int(rng.integers(n))]]
        d2 = _sq_dist(x, centres[0][None, :])[:, 0]
        for _ in range(1, k):
            total = d2.sum()
            j = int(rng.choice(n, p=d2 / total)) if total > 0 else int(rng.integers(n))
            centres.append(x[j])
            d2 = np.minimum(d2, _sq_dist(x, x[j][None, :])[:, 0])
        c = np.stack(centres)
        for _ in range(iters):
            assign = np.argmin(_sq_dist(x, c), axis=1)
            new = c.copy()
            for j in range(k):
                members = x[assign == j]
                if len(members):
                    new[j] = members.mean(0)
            if np.allclose(new, c):
                break
            c = new
        sse = float(np.min(_sq_dist(x, c), axis=1).sum())
        if sse < best_sse:
            best, best_sse = c, sse
    assert best is not None
    return best


@dataclass
class LocalContexts:
    """Cluster centres and, per centre, the context rows it answers from.

    :param centres: ``[K, f]`` float64 centres in the space of the (preprocessed) context rows.
    :param rows: per centre, the sorted indices ``[m]`` of its context rows (positions in the estimator's context).
    :param subset: the context rows the clusters were fitted on (positions, sorted), or None: all of them. A
        prediction reads these local contexts only when it reads from exactly that subset (an inner split's
        training rows while the context strategy is chosen, all rows afterwards).
    """

    centres: np.ndarray
    rows: list[np.ndarray]
    subset: np.ndarray | None = None

    def serves(self, context_rows: np.ndarray | None) -> bool:
        """Whether a prediction read from ``context_rows`` (None: all) uses these local contexts."""
        if self.subset is None or context_rows is None:
            return self.subset is None and context_rows is None
        return bool(np.array_equal(self.subset, context_rows))

    def route(self, x_query: np.ndarray) -> np.ndarray:
        """``[n_query]`` index of the nearest centre of each query row (ties: the lower index)."""
        return np.argmin(_sq_dist(x_query, self.centres), axis=1)


def fit_local_contexts(x_context: np.ndarray, size: int, seed: int, overlap: float = 1.5,
                       labels: np.ndarray | None = None, subset: np.ndarray | None = None) -> LocalContexts:
    """Cluster the context rows into ``ceil(n / size)`` groups; each centre's context is the
    ``min(n, round(overlap * size))`` rows nearest to it.

    :param x_context: ``[n, f]`` preprocessed context rows.
    :param size: target rows per cluster (about the context size the model was trained on).
    :param seed: seed of the k-means start.
    :param overlap: context rows per centre as a multiple of ``size`` (>= 1; neighbouring contexts overlap).
    :param labels: ``[n]`` numeric labels of the rows, used only to break ties between identical rows, so the
        chosen rows do not depend on the order of the context.
    :param subset: cluster only these rows of ``x_context`` (sorted positions; ``labels`` stays full-length); the
        contexts' ``rows`` are positions in ``x_context`` either way.
    """
    if subset is not None:
        subset = np.sort(np.asarray(subset, dtype=np.int64))
        inner = fit_local_contexts(np.asarray(x_context)[subset], size, seed, overlap,
                                   None if labels is None else np.asarray(labels)[subset])
        return LocalContexts(inner.centres, [subset[r] for r in inner.rows], subset)
    x = np.asarray(x_context, dtype=np.float64)
    n = x.shape[0]
    if size < 1 or not overlap >= 1:
        raise TabzooInputError(f"local contexts need size >= 1 and overlap >= 1, got size={size}, overlap={overlap}.")
    k = max(1, math.ceil(n / int(size)))
    centres = kmeans(x, k, seed)
    m = min(n, int(round(overlap * size)))
    d = _sq_dist(x, centres)  # [n, K]
    rows = []
    for j in range(k):
        # the m nearest rows; ties broken by the row's values (order-free), not by its index
        extra = () if labels is None else (np.asarray(labels, dtype=np.float64),)
        key = np.lexsort((*extra, *x.T[::-1], d[:, j]))
        rows.append(np.sort(key[:m]))
    return LocalContexts(centres, rows)
