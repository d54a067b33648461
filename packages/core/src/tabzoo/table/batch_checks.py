"""Structural validation of :class:`~tabzoo.table.episode.EpisodeBatch`."""

from __future__ import annotations

from typing import Any

import torch

from tabzoo.table.errors import (
    DTypeError,
    EmptyContextError,
    InvalidLabelError,
    InvalidTaskError,
    InvalidValueError,
    ShapeError,
)
from tabzoo.table.validation import TASKS, check_tensor

__all__ = ["check_batch"]


def _is_prefix(mask: torch.Tensor) -> bool:
    """Each row of bool ``mask [B, L]`` is True...True False...False."""
    if mask.shape[1] < 2:
        return True
    return bool((mask[:, 1:] <= mask[:, :-1]).all())


def check_batch(b: Any) -> None:
    """Validate an EpisodeBatch: shapes, dtypes, masks, zero padding, finite in-range labels
    (vectorised: a constant number of device syncs, whatever the batch size).

    Per-episode class coverage (single class, unseen query labels) is checked by
    :meth:`EpisodeBatch.episodes`, which builds validated :class:`Episode` objects.
    """
    x = check_tensor("x", b.x, 3)
    y = check_tensor("y", b.y, 2)
    bsz, n, f = x.shape
    if y.shape != (bsz, n):
        raise ShapeError(f"y has shape {tuple(y.shape)}; it must be [B, N] = {(bsz, n)}")
    rm = check_tensor("row_mask", b.row_mask, 2, floating=False)
    fm = check_tensor("feature_mask", b.feature_mask, 2, floating=False)
    nc = check_tensor("n_classes", b.n_classes, 1, floating=False)
    if rm.dtype != torch.bool or fm.dtype != torch.bool:
        raise DTypeError("row_mask and feature_mask must be torch.bool; use mask.bool()")
    if nc.dtype != torch.long:
        raise DTypeError(f"n_classes has dtype {nc.dtype}; it must be torch.long")
    if rm.shape != (bsz, n) or fm.shape != (bsz, f) or nc.shape != (bsz,):
        raise ShapeError(
            f"row_mask {tuple(rm.shape)}, feature_mask {tuple(fm.shape)}, n_classes "
            f"{tuple(nc.shape)} must be [B, N]={(bsz, n)}, [B, F]={(bsz, f)}, [B]={(bsz,)}"
        )
    if isinstance(b.n_context, bool) or not isinstance(b.n_context, int):
        raise DTypeError(f"n_context must be an int, got {b.n_context!r}")
    if b.n_context < 1:
        raise EmptyContextError(f"n_context is {b.n_context}; a batch needs >= 1 context row")
    if b.n_context > n:
        raise ShapeError(f"n_context {b.n_context} exceeds the {n} rows of x")
    if not bool(rm[:, : b.n_context].all()):
        ep = int(torch.nonzero(~rm[:, : b.n_context])[0, 0])
        raise ShapeError(f"episode {ep}: a context row is marked padding; context rows are real")
    if not _is_prefix(rm) or not _is_prefix(fm):
        raise ShapeError("row_mask/feature_mask must put real entries first, then padding")
    if b.task not in TASKS:
        raise InvalidTaskError(f"task {b.task!r} is not one of {TASKS}")
    if b.task == "regression" and bool((nc != 0).any()):
        raise InvalidTaskError("a regression batch must have n_classes == 0 for every episode")
    if b.task == "classification" and bool((nc < 2).any()):
        ep = int(torch.nonzero(nc < 2)[0])
        raise InvalidTaskError(
            f"episode {ep} has n_classes {int(nc[ep])}; classification needs >= 2"
        )
    real = rm[:, :, None] & fm[:, None, :]
    if bool((x[~real] != 0).any()) or bool((y[~rm] != 0).any()):
        raise ShapeError("padding entries of x or y are not 0; zero them (x[~mask] = 0)")
    if not b.has_query_labels and bool((y[:, b.n_context :] != 0).any()):
        raise ShapeError("has_query_labels is False but y holds non-zero query labels; zero them")
    if b.categorical and len(b.categorical) != bsz:
        raise ShapeError(f"categorical has {len(b.categorical)} entries for {bsz} episodes")
    bad_x = torch.isinf(x) & real
    if bool(bad_x.any()):
        e, r, c = (int(i) for i in torch.nonzero(bad_x)[0])
        raise InvalidValueError(
            f"episode {e}: x row {r}, feature {c} is {float(x[e, r, c])}; features may be NaN "
            "(missing) but not inf: clip it or replace it with NaN"
        )
    labelled = rm.clone()
    if not b.has_query_labels:
        labelled[:, b.n_context :] = False
    bad_y = ~torch.isfinite(y) & labelled
    if b.task == "classification":
        bad_y |= labelled & ((y != torch.round(y)) | (y < 0) | (y >= nc[:, None]))
    if bool(bad_y.any()):
        e, r = (int(i) for i in torch.nonzero(bad_y)[0])
        kind = "context" if r < b.n_context else "query"
        fix = (
            f"labels must be finite integer class indices in 0..{int(nc[e]) - 1}"
            if b.task == "classification"
            else "labels must be finite"
        )
        raise InvalidLabelError(
            f"episode {e}: y row {r} ({kind}) is {float(y[e, r])}; {fix}: fix or drop that row"
        )
