"""The one hook an in-context plugin supplies to the core's prediction path, and the core's pure steps.

A plugin's model enters :class:`~tabzoo.estimators.InContextClassifier` /
:class:`~tabzoo.estimators.InContextRegressor` only through an :class:`InContextForward`: the core
builds each ensemble member's view of the rows, encodes the context once (and caches it with
``fit_mode="fit_with_cache"``), streams the query rows in chunks, and averages the members
(:mod:`tabzoo.estimators.ensemble`). A model with the plain signature
``model(x [B, n_context + n_query, F], y_context [B, n_context]) -> [B, n_query, n_out]`` needs no code:
:class:`ConcatForward` wraps it. A model that can sum its context once (linear attention) supplies
its own :class:`InContextForward` with ``encode_context`` / ``predict_query``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from tabzoo.errors import TabzooInputError

__all__ = ["AVERAGES", "ConcatForward", "InContextForward", "average_members", "class_log_proba", "member_batch"]

#: how the members are averaged: their probabilities, or their log-probabilities (a geometric mean)
AVERAGES = ("probabilities", "logits")


@runtime_checkable
class InContextForward(Protocol):
    """What a plugin supplies to the core's in-context prediction path.

    ``per_member``: the core calls :meth:`encode_context` once per member (batch of 1, memory of one
    member's context) and :meth:`merge` joins the states; otherwise once for all members.
    """

    per_member: bool

    def encode_context(self, x_context: torch.Tensor, y_context: torch.Tensor,
                       weights: torch.Tensor | None) -> Any:
        """The model's state of the context.

        :param x_context: ``[M, n_context, F]`` the members' views of the context rows.
        :param y_context: ``[M, n_context]`` float labels (class indices, or standardised targets).
        :param weights: ``[1, n_context]`` positive row weights, or None (all 1).
        """

    def merge(self, states: Sequence[Any]) -> Any:
        """One state for the members of ``states`` (each from :meth:`encode_context`), in order."""

    def predict_query(self, state: Any, x_query: torch.Tensor) -> torch.Tensor:
        """Outputs ``[M, n_query, n_out]`` of the query rows ``x_query [M, n_query, F]`` read against ``state``."""


class ConcatForward:
    """:class:`InContextForward` of a model ``model(cat(context, query), y_context, **kwargs) -> [M, q, n_out]``.

    The state is the context itself; every chunk of query rows runs the whole model.
    """

    per_member = False

    def __init__(self, model: torch.nn.Module, **kwargs: Any) -> None:
        self.model = model
        self.kwargs = kwargs

    def encode_context(self, x_context: torch.Tensor, y_context: torch.Tensor,
                       weights: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        if weights is not None:
            raise TabzooInputError(
                f"{type(self.model).__name__} reads every context row once; it cannot weight rows. Pass "
                "class_balance=0, or give the plugin an InContextForward that supports weights."
            )
        return x_context, y_context

    def merge(self, states: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> tuple[torch.Tensor, torch.Tensor]:
        if len(states) == 1:
            return states[0]
        return torch.cat([s[0] for s in states], 0), torch.cat([s[1] for s in states], 0)

    def predict_query(self, state: tuple[torch.Tensor, torch.Tensor], x_query: torch.Tensor) -> torch.Tensor:
        x_context, y_context = state
        out = self.model(torch.cat([x_context, x_query], dim=1), y_context, **self.kwargs)
        return out.unsqueeze(-1) if out.dim() == 2 else out


def member_batch(views: Sequence[Any], rows: Sequence[np.ndarray], width: int | None) -> torch.Tensor:
    """``[M, n, width]`` the members' views of their rows (``views[i].apply(rows[i])``), zero-padded to
    ``width`` columns; ``width=None`` stacks them as they are (they must have equal widths)."""
    if width is None:
        return torch.stack([torch.from_numpy(v.apply(r)) for v, r in zip(views, rows, strict=True)])
    out = torch.zeros(len(views), rows[0].shape[0], width)
    for i, (v, r) in enumerate(zip(views, rows, strict=True)):
        x = v.apply(r)
        out[i, :, : x.shape[1]] = torch.from_numpy(x)
    return out


def class_log_proba(logits: torch.Tensor, k: int, shifts: np.ndarray) -> torch.Tensor:
    """Log-probabilities ``[M, q, k]`` (float64) in the original class order.

    :param logits: ``[M, q, n_out]`` the members' outputs; member ``i`` showed class ``c`` at head
        position ``(c + shifts[i]) % k``.
    :param shifts: ``[M]`` class shifts.
    """
    if logits.shape[-1] < k:
        raise TabzooInputError(
            f"the model outputs {logits.shape[-1]} classes but y has {k}; use a model with a larger head."
        )
    gather = torch.from_numpy((np.arange(k)[None, :] + np.asarray(shifts)[:, None]) % k)  # [M, k]
    logp = torch.log_softmax(logits[..., :k].double(), dim=-1)
    return torch.gather(logp, 2, gather[:, None, :].expand(-1, logp.shape[1], -1))


def average_members(logp: torch.Tensor, how: str, prior: torch.Tensor | None = None) -> np.ndarray:
    """The ensemble's probabilities ``[q, k]`` from the members' log-probabilities ``[M, q, k]``.

    ``how="logits"``: softmax of the mean log-probability (plus ``prior [k]``, the log-prior correction
    of weighted context rows); ``"probabilities"``: the mean probability.
    """
    if how == "logits":
        mean = logp.mean(0)
        return torch.softmax(mean if prior is None else mean + prior, dim=-1).numpy()
    if prior is not None:
        raise TabzooInputError('class_balance needs average="logits" (the prior is undone on log-probabilities).')
    return logp.exp().mean(0).numpy()
