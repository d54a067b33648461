"""Fixed-context prediction: each query row is predicted from a fixed, seeded context.

The context is the whole training table when it has at most ``context_size`` rows, otherwise a
sample of ``context_size`` training rows drawn once from ``seed`` (the same for every query
row). Query rows are appended to the context in chunks and are *isolated*: they read the context
rows and themselves, and no row reads them. A query row's prediction therefore depends on its own
cells, the context and the weights only, never on which other rows share its chunk.

In ``attention="full"`` (transductive mode) the query rows read one another too and all of them
are predicted in one pass with the context.
"""

from __future__ import annotations

import numpy as np
import torch
from tabzoo.errors import TabzooInputError

from tabzoo_npt.model import NPT

__all__ = ["context_indices", "predict_cells"]


def context_indices(n_rows: int, context_size: int, seed: int) -> np.ndarray:
    """Sorted indices of the fixed context: all rows, or a seeded sample of ``context_size``."""
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


@torch.no_grad()
def predict_cells(
    model: NPT,
    context: np.ndarray,
    queries: np.ndarray,
    hide: np.ndarray,
    *,
    context_size: int = 1024,
    seed: int = 0,
    chunk_size: int = 256,
    attention: str = "isolated",
    context_hide: np.ndarray | None = None,
) -> torch.Tensor:
    """Logits for every cell of ``queries``.

    :param context: ``[n_context, d]`` float (NaN = missing), targets visible.
    :param queries: ``[n_query, d]`` float (NaN = missing).
    :param hide: ``[n_query, d]`` bool: cells to hide besides the missing ones (the targets).
    :param context_hide: optional ``[n_context, d]`` bool: context cells to hide (e.g. unlabeled
        targets in semi-supervised fits).
    :param attention: ``"isolated"`` (default: fixed context, query rows independent) or ``"full"``.
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
    idx = context_indices(len(context), context_size, seed)
    cv, cm = _tensor(context[idx], device)
    if context_hide is not None:
        cm = cm | torch.as_tensor(context_hide[idx], device=device)
    qv, qm = _tensor(queries, device)
    qm = qm | torch.as_tensor(hide, dtype=torch.bool, device=device)
    n_c, n_q = len(idx), len(queries)
    step = n_q if attention == "full" else max(1, chunk_size)
    outs = []
    try:
        for start in range(0, n_q, step):
            sl = slice(start, min(n_q, start + step))
            values = torch.cat([cv, qv[sl]])[None]
            mask = torch.cat([cm, qm[sl]])[None]
            isolated = None
            if attention == "isolated":
                isolated = torch.zeros(1, values.shape[1], dtype=torch.bool, device=device)
                isolated[:, n_c:] = True
            outs.append(model(values, mask, isolated)[0, n_c:].float().cpu())
    finally:
        model.train(was_training)
    if not outs:
        return torch.zeros(0, queries.shape[1], model.out_width)
    return torch.cat(outs)
