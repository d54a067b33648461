"""Fixed-context prediction: each query row is predicted from the whole training table.

The context is every training row. Up to ``context_size`` rows (the dense-attention limit,
:data:`DENSE_CONTEXT`) it is encoded once, in one dense attention over all its rows
(:meth:`NPT.encode_context`), and the query rows are then run against it in chunks of
``chunk_size``. Query rows are *isolated*: they read the context rows and themselves, and no row
reads them. A query row's prediction therefore depends on its own cells, the context and the
weights only, never on which other rows share its chunk: every chunk runs at one padded shape
and a row's own key sits in a fixed column, so its logits are the same bits whatever the number,
order or grouping of the query rows (for a given ``chunk_size``).

Beyond ``context_size`` rows dense attention over the whole table would need memory and time
quadratic in its size, so the context is split into ``k = ceil(n / context_size)`` disjoint
partitions of near-equal size (a seeded permutation, :func:`context_partitions`); each is encoded
once, every query row is predicted against each of them, and the ``k`` logits are averaged.
Every training row is read; nothing is sampled. The estimators say so in a warning.

In ``attention="full"`` (transductive mode) the query rows read one another too and all of them
are predicted in one pass with each context partition.
"""

from __future__ import annotations

import numpy as np
import torch
from tabzoo.errors import TabzooInputError

from tabzoo_npt.model import NPT

__all__ = ["DENSE_CONTEXT", "context_indices", "context_partitions", "predict_cells"]

# the most training rows one dense attention encodes (default ``context_size`` of the estimators):
# 4,096 rows give 64 MiB of float32 scores per head and ABD layer; beyond it the context is partitioned
DENSE_CONTEXT = 4096


def context_indices(n_rows: int, context_size: int, seed: int) -> np.ndarray:
    """Sorted indices of a seeded sample of ``context_size`` rows (all rows when fewer).

    Prediction never samples (:func:`predict_cells` reads every row); the corruption diagnostic
    (:mod:`tabzoo_npt.diagnostics`) uses this explicit sample."""
    if n_rows < 1:
        raise TabzooInputError("the context is empty: fit on at least one row.")
    if context_size < 1:
        raise TabzooInputError(f"context_size={context_size} must be >= 1.")
    if n_rows <= context_size:
        return np.arange(n_rows)
    rng = np.random.default_rng(seed)
    return np.sort(rng.choice(n_rows, size=context_size, replace=False))


def _tensor(a: np.ndarray, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    t = torch.as_tensor(np.asarray(a, dtype=np.float32), device=device)
    missing = torch.isnan(t)
    return torch.nan_to_num(t, nan=0.0), missing


def context_partitions(n_rows: int, context_size: int, seed: int) -> list[np.ndarray]:
    """Disjoint, sorted index sets covering ``range(n_rows)``, each of at most ``context_size`` rows.

    One set (all rows) when ``n_rows <= context_size``; otherwise ``ceil(n_rows / context_size)``
    sets of near-equal size from a permutation seeded by ``seed``.
    """
    if n_rows < 1:
        raise TabzooInputError("the context is empty: fit on at least one row.")
    if context_size < 1:
        raise TabzooInputError(f"context_size={context_size} must be >= 1.")
    if n_rows <= context_size:
        return [np.arange(n_rows)]
    k = -(-n_rows // context_size)
    order = np.random.default_rng(seed).permutation(n_rows)
    return [np.sort(part) for part in np.array_split(order, k)]


def _query_chunks(model: NPT, qv: torch.Tensor, qm: torch.Tensor,
                  states: list[tuple[torch.Tensor, torch.Tensor]], step: int) -> torch.Tensor:
    """``[n_query, d, out_width]`` logits of query rows ``qv, qm [n_query, d]`` in chunks of ``step``.

    Every chunk runs at the one shape ``[1, step, d]``: the last (or only) chunk is padded with
    all-hidden rows, whose logits are dropped. Query rows never read one another and every
    operation is row-wise at a fixed shape (:meth:`NPT.forward_queries`), so a row's logits are
    bit-identical whatever the number of query rows, their order, or the other rows of its chunk.
    """
    n, d = qv.shape
    pad = -n % step
    if pad:
        qv = torch.cat([qv, qv.new_zeros(pad, d)])
        qm = torch.cat([qm, qm.new_ones(pad, d)])
    return torch.cat([model.forward_queries(qv[None, s:s + step], qm[None, s:s + step], states)[0].float().cpu()
                      for s in range(0, n + pad, step)])[:n]


@torch.no_grad()
def predict_cells(
    model: NPT,
    context: np.ndarray,
    queries: np.ndarray,
    hide: np.ndarray,
    *,
    context_size: int = DENSE_CONTEXT,
    seed: int = 0,
    chunk_size: int = 256,
    attention: str = "isolated",
    context_hide: np.ndarray | None = None,
) -> torch.Tensor:
    """Logits for every cell of ``queries``, from every row of ``context`` (see the module docstring).

    :param context: ``[n_context, d]`` float (NaN = missing), targets visible.
    :param queries: ``[n_query, d]`` float (NaN = missing).
    :param hide: ``[n_query, d]`` bool: cells to hide besides the missing ones (the targets).
    :param context_size: the most context rows encoded in one dense attention; a larger context
        is split into partitions whose logits are averaged.
    :param context_hide: optional ``[n_context, d]`` bool: context cells to hide (e.g. unlabeled
        targets in semi-supervised fits).
    :param attention: ``"isolated"`` (default: query rows independent) or ``"full"``.
    :return: ``[n_query, d, out_width]`` logits (float32, CPU).
    """
    if attention not in ("isolated", "full"):
        raise TabzooInputError(f"attention={attention!r}; use 'isolated' or 'full'.")
    if queries.ndim != 2 or hide.shape != queries.shape or context.ndim != 2 or context.shape[1] != queries.shape[1]:
        raise TabzooInputError(
            f"context {context.shape}, queries {queries.shape} and hide {hide.shape} must be 2-d with equal widths."
        )
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    parts = context_partitions(len(context), context_size, seed)
    qv, qm = _tensor(queries, device)
    qm = qm | torch.as_tensor(hide, dtype=torch.bool, device=device)
    n_q = len(queries)
    total = torch.zeros(n_q, queries.shape[1], model.out_width)
    try:
        for idx in parts:
            cv, cm = _tensor(context[idx], device)
            if context_hide is not None:
                cm = cm | torch.as_tensor(context_hide[idx], device=device)
            if attention == "full":
                logits = model(torch.cat([cv, qv])[None], torch.cat([cm, qm])[None])[0, len(idx):].float().cpu()
            else:
                states = model.encode_context(cv[None], cm[None])
                logits = _query_chunks(model, qv, qm, states, max(1, chunk_size)) if n_q else total
            total = logits if len(parts) == 1 else total + logits / len(parts)
    finally:
        model.train(was_training)
    return total
