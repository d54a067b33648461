"""Streamed ensemble inference of the TabFlex estimators (the mixin both estimators share).

Each ensemble member sees its own view of the preprocessed context (:mod:`tabzoo.estimators.members`:
a {none, power, quantile} feature transform fitted on the context rows, shuffled category codes,
its feature order or - for tables wider than the model - its own feature subset, then a z-score on
the context). The model turns the member's context into a per-layer linear-attention state
``(S, z)`` (:meth:`TabFlex.encode_context`); query rows only read that state
(:meth:`TabFlex.predict_query`). With ``fit_mode="fit_with_cache"`` the states are computed at fit
and kept (a few KB per member and class-tree node: ``n_layers x heads x (Dh^2 + Dh)`` floats), so
``predict_proba`` never re-encodes the context; with ``"fit_preprocessors"`` they are recomputed on
every call (less memory held between calls, same outputs).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tabzoo.checkpoint import (
    find_checkpoint,
    load_shipped_model,
    read_checkpoint_cached,
    shipped_checkpoints,
    shipped_dir,
)
from tabzoo.errors import CheckpointError, TabzooInputError
from tabzoo.estimators.base import InContextEstimator
from tabzoo.estimators.ensemble import AUTO_LOCAL_ROWS, CONTEXT_STRATEGIES, MANY_CLASS
from tabzoo.estimators.options import check_fit_mode

from tabzoo_tabflex.config import TabFlexConfig, get_config
from tabzoo_tabflex.model import ContextState, TabFlex, build
from tabzoo_tabflex.projection import RandomProjection
from tabzoo_tabflex.selection import Selection, algorithm1, select_model

logger = logging.getLogger(__name__)

__all__ = ["AUTO_LOCAL_ROWS", "CONTEXT_STRATEGIES", "DEFAULT_CHECKPOINT", "MANY_CLASS", "WIDE_MODES", "TabFlexForward",
           "load_tabflex"]

#: the checkpoint of ``checkpoint="auto"`` (when Algorithm 1's paper model does not ship) and of ``load_tabflex()``:
#: tabflex-long (tabflex-icl pretrained further on long contexts, issue 30) beat tabflex-icl on 22 of 29
#: classification tables (3 losses) and 10 of 11 regression tables of the real-data suite, and matched or beat it
#: with fine-tuning and stacking (README, "Which checkpoint"); tabflex-icl had beaten tabflex-small on 5 of 6
DEFAULT_CHECKPOINT = "tabflex-long"
WIDE_MODES = ("subsample", "project")
#: ``class_balance="auto"``: the strength chosen by measurement on the real-data suite's dev tables
AUTO_BALANCE = 1.0
_PACKAGE = "tabzoo_tabflex"
#: the folder of the shipped checkpoints
_CKPT_DIR = shipped_dir(_PACKAGE)


def load_tabflex(checkpoint: str = DEFAULT_CHECKPOINT) -> TabFlex:
    """A :class:`TabFlex` with the weights of a shipped checkpoint name or a path stem (no network)."""
    model = load_shipped_model(checkpoint, package=_PACKAGE, architecture="tabflex", build=build, model="TabFlex")
    assert isinstance(model, TabFlex)
    return model


def _checkpoint_config(checkpoint: str) -> TabFlexConfig:
    _, config = read_checkpoint_cached(find_checkpoint(checkpoint, package=_PACKAGE, architecture="tabflex",
                                                       model="TabFlex"))
    return get_config(config)


def _shape(X: Any) -> tuple[int, int]:
    """``(rows, columns)`` of an array-like / DataFrame / Table without converting it."""
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        shape = np.shape(np.asarray(X, dtype=object))
    rows = int(shape[0]) if len(shape) >= 1 else 1
    cols = int(shape[1]) if len(shape) == 2 else 1
    return max(rows, 1), max(cols, 1)


class TabFlexForward:
    """TabFlex's hook into the core's prediction path (:class:`tabzoo.estimators.forward.InContextForward`):
    each member's context is summed once into a linear-attention :class:`ContextState`, streamed in chunks;
    query rows only read it."""

    per_member = True

    def __init__(self, model: TabFlex, chunk_size: int) -> None:
        self.model = model
        self.chunk_size = int(chunk_size)

    def encode_context(self, x_context: torch.Tensor, y_context: torch.Tensor,
                       weights: torch.Tensor | None) -> ContextState:
        """State of ``x_context [1, n, F]`` labelled ``y_context [1, n]`` (row weights ``[1, n]`` or None)."""
        return self.model.encode_context(x_context, y_context, chunk_size=self.chunk_size, weights=weights)

    def merge(self, states: Sequence[ContextState]) -> ContextState:
        """The members' states stacked on the batch axis."""
        return ContextState([torch.cat(t, 0) for t in zip(*(s.kv for s in states), strict=True)],
                            [torch.cat(t, 0) for t in zip(*(s.k_sum for s in states), strict=True)],
                            states[0].n_context)

    def predict_query(self, state: ContextState, x_query: torch.Tensor) -> torch.Tensor:
        """``[M, q, max_classes]`` logits of ``x_query [M, q, F]``."""
        return self.model.predict_query(x_query, state, chunk_size=self.chunk_size)

    def train_forward(self, x_context: torch.Tensor, y_context: torch.Tensor, x_query: torch.Tensor) -> torch.Tensor:
        """Differentiable ``[M, q, max_classes]`` logits (the pretraining forward; the streamed path runs
        without gradients), for fine-tuning (:mod:`tabzoo.train.finetune`)."""
        return self.model(torch.cat([x_context, x_query], dim=1), y_context)


class TabFlexMixin(InContextEstimator):
    """What TabFlex adds to the core's in-context estimators: loading, model selection, the random
    projection of wide tables and its :class:`TabFlexForward` hook. Members, cached context states,
    chunked queries, class balance, many classes and local contexts are the core's
    (:mod:`tabzoo.estimators.ensemble`)."""

    checkpoint: str
    projection_seed: int
    softmax_temperature: float
    fit_mode: str
    inference_precision: str
    wide_features: str

    #: members z-score their own view on the context (the scale TabFlex was pretrained on)
    standardize_members = True
    #: members permute category codes (member 0 keeps the fitted order)
    shuffle_categories = True
    #: wide tables: every feature used about equally often across members
    feature_subsample = "balanced"
    #: the model pads features itself
    pad_to_max_features = False
    #: ``class_balance="auto"``: the strength chosen by measurement on the real-data suite's dev tables
    auto_class_balance = AUTO_BALANCE
    #: the members' logits are averaged (as the authors)
    average = "logits"

    # -- model -------------------------------------------------------------------------------
    def _select(self, X: Any, n_classes: int) -> Selection:
        n_rows, n_cols = _shape(X)
        if self.checkpoint == "auto":
            names = shipped_checkpoints(_PACKAGE)
            if not names:
                raise CheckpointError("no TabFlex checkpoint is shipped with this install; pass checkpoint=<stem>.")
            # the paper's model for this shape when it ships, else the default measured on the real-data suite
            preferred = algorithm1(n_rows, n_cols)
            names = [preferred] if preferred in names else [DEFAULT_CHECKPOINT if DEFAULT_CHECKPOINT in names
                                                             else names[0]]
        else:
            names = [self.checkpoint]
        available = {n: _checkpoint_config(n) for n in names}
        # no warning: "auto" falls back to the measured default (README), a named checkpoint is the user's choice
        sel = select_model(n_rows, n_cols, n_classes, available, warn=False)
        logger.info("TabFlex model selection: %s", sel.reason)
        return sel

    def _load_model(self) -> torch.nn.Module:
        name = getattr(self, "selection_", None)
        return load_tabflex(name.name if name is not None else
                            (DEFAULT_CHECKPOINT if self.checkpoint == "auto" else self.checkpoint))

    def _context_forward(self) -> TabFlexForward:
        assert isinstance(self.model_, TabFlex)
        return TabFlexForward(self.model_, int(self.chunk_size))

    def _n_classes_for_selection(self, y: Any) -> int:
        if y is None:
            return 1
        try:
            return int(np.unique(np.asarray(y, dtype=object).astype(str)).size)
        except (TypeError, ValueError):
            return 1

    def _fit_context(self, X: Any, y: Any) -> np.ndarray:
        check_fit_mode(self.fit_mode)
        if self.wide_features not in WIDE_MODES:
            raise TabzooInputError(
                f"wide_features={self.wide_features!r} is not valid; pass 'subsample' (members see different "
                "feature subsets) or 'project' (one seeded Gaussian random projection shared by all members)."
            )
        many_class = getattr(self, "many_class", "hierarchical")
        if many_class not in MANY_CLASS:
            raise TabzooInputError(
                f"many_class={many_class!r} is not valid; pass 'ecoc' (error-correcting output codes) or "
                "'hierarchical' (the balanced class tree) for more classes than the head takes."
            )
        if X is not None and y is not None:
            self.selection_ = self._select(X, self._n_classes_for_selection(y))
        Xt = super()._fit_context(X, y)
        limit = self._model_limit("max_features")
        self.projection_: RandomProjection | None = None
        if limit is not None and Xt.shape[1] > limit and self.wide_features == "project":
            self.projection_ = RandomProjection(limit, seed=int(self.projection_seed)).fit(Xt.shape[1])
            Xt = self.projection_.transform(Xt)
        return np.ascontiguousarray(Xt, dtype=np.float32)

    def _transform_query(self, X: Any) -> np.ndarray:
        xq = super()._transform_query(X)
        if self.projection_ is not None:
            xq = self.projection_.transform(xq)
        return np.ascontiguousarray(xq, dtype=np.float32)

    def _view_categoricals(self) -> tuple[int, ...]:
        # a projection mixes the columns: no column is categorical any more
        return () if getattr(self, "projection_", None) is not None else super()._view_categoricals()

    # -- saved state ---------------------------------------------------------------------------
    def _tabflex_state(self) -> dict[str, Any]:
        proj = self.projection_
        return {
            "selection": self.selection_.name,
            "projection": [] if proj is None else [proj.n_features_in_, proj.n_components, proj.seed],
        }

    def _set_tabflex_state(self, state: dict[str, Any]) -> None:
        self.selection_ = Selection(str(state["selection"]), "", None, False, "restored by load()")
        p = list(state.get("projection") or [])
        self.projection_ = RandomProjection(int(p[1]), seed=int(p[2])).fit(int(p[0])) if p else None
