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

import contextlib
import hashlib
import logging
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tabzoo.checkpoint import load_weights, read_checkpoint_cached, resolve_checkpoint
from tabzoo.errors import CheckpointError, TabzooInputError
from tabzoo.estimators import InContextRegressor
from tabzoo.estimators.encoding import class_balance
from tabzoo.estimators.hierarchy import ecoc_proba, hierarchical_proba
from tabzoo.estimators.local import LocalContexts, fit_local_contexts
from tabzoo.estimators.options import check_fit_mode, resolve_inference_dtype

from tabzoo_tabflex.config import TabFlexConfig, get_config
from tabzoo_tabflex.model import ContextState, TabFlex
from tabzoo_tabflex.projection import RandomProjection
from tabzoo_tabflex.selection import Selection, select_model

logger = logging.getLogger(__name__)

__all__ = ["AUTO_LOCAL_ROWS", "CONTEXT_STRATEGIES", "DEFAULT_CHECKPOINT", "MANY_CLASS", "WIDE_MODES", "load_tabflex"]

DEFAULT_CHECKPOINT = "tabflex-small"
WIDE_MODES = ("subsample", "project")
MANY_CLASS = ("ecoc", "hierarchical")
#: codes of the error-correcting output code path (more classes than the head)
N_CODES = 16
#: ``context_strategy``: one context for every query, or local contexts (and the two mixed)
CONTEXT_STRATEGIES = ("auto", "global", "local", "local+global")
#: ``context_strategy="auto"`` uses local contexts above this many context rows (the largest prompts
#: the shipped ``tabflex-icl`` checkpoint was trained on)
AUTO_LOCAL_ROWS = 8192
#: ``class_balance="auto"``: the strength chosen by measurement on the real-data suite's dev tables
AUTO_BALANCE = 1.0
_CKPT_DIR = Path(__file__).parent / "checkpoints"


def _stem(checkpoint: str) -> Path:
    return resolve_checkpoint(checkpoint, _CKPT_DIR, model="TabFlex", cli_name="tabflex")


def load_tabflex(checkpoint: str = DEFAULT_CHECKPOINT) -> TabFlex:
    """A :class:`TabFlex` with the weights of a shipped checkpoint name or a path stem (no network)."""
    stem = _stem(checkpoint)
    tensors, config = read_checkpoint_cached(stem)
    model = TabFlex({k: v for k, v in config.items() if k != "preset"} | {"preset": config.get("preset", "small")})
    load_weights(model, tensors, what=f"TabFlex checkpoint {stem}", target="its stored config",
                 fix="Re-export it with tabzoo.checkpoint.save_checkpoint.")
    return model.eval()


def _checkpoint_config(checkpoint: str) -> TabFlexConfig:
    stem = _stem(checkpoint)
    _, config = read_checkpoint_cached(stem)
    return get_config(config)


def _shape(X: Any) -> tuple[int, int]:
    """``(rows, columns)`` of an array-like / DataFrame / Table without converting it."""
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        shape = np.shape(np.asarray(X, dtype=object))
    rows = int(shape[0]) if len(shape) >= 1 else 1
    cols = int(shape[1]) if len(shape) == 2 else 1
    return max(rows, 1), max(cols, 1)


def _key(rows: np.ndarray | None, labels: np.ndarray, k: int, members: Sequence[int]) -> str:
    h = hashlib.sha1(b"all" if rows is None else np.ascontiguousarray(rows, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
    h.update(np.asarray(list(members), dtype=np.int64).tobytes())
    return f"{k}:{h.hexdigest()}"


class TabFlexMixin:
    """Loading, selection, member views, cached context states and precision for both estimators."""

    checkpoint: str
    projection_seed: int
    softmax_temperature: float
    n_estimators: int
    fit_mode: str
    inference_precision: str
    wide_features: str

    #: members z-score their own view on the context (the scale TabFlex was pretrained on)
    standardize_members = True
    #: members permute category codes (member 0 keeps the fitted order)
    shuffle_categories = True
    #: wide tables: every feature used about equally often across members
    feature_subsample = "balanced"

    # -- model -------------------------------------------------------------------------------
    def _select(self, X: Any, n_classes: int) -> Selection:
        n_rows, n_cols = _shape(X)
        if self.checkpoint == "auto":
            names = sorted(q.stem for q in _CKPT_DIR.glob("*.json"))
            if not names:
                raise CheckpointError("no TabFlex checkpoint is shipped with this install; pass checkpoint=<stem>.")
        else:
            names = [self.checkpoint]
        available = {n: _checkpoint_config(n) for n in names}
        sel = select_model(n_rows, n_cols, n_classes, available)
        logger.info("TabFlex model selection: %s", sel.reason)
        return sel

    def _load_model(self) -> torch.nn.Module:
        name = getattr(self, "selection_", None)
        return load_tabflex(name.name if name is not None else
                            (DEFAULT_CHECKPOINT if self.checkpoint == "auto" else self.checkpoint))

    def _n_classes_for_selection(self, y: Any) -> int:
        if y is None:
            return 1
        try:
            if isinstance(self, InContextRegressor):
                # regression runs as classification over target bins: select for that many classes
                return max(1, min(int(self.n_bins), int(np.unique(np.asarray(y, dtype=float)).size)))  # type: ignore[attr-defined]
            return int(np.unique(np.asarray(y, dtype=object).astype(str)).size)
        except (TypeError, ValueError):
            return 1

    def _fit_context(self, X: Any, y: Any) -> np.ndarray:  # type: ignore[override]
        check_fit_mode(self.fit_mode)
        if self.wide_features not in WIDE_MODES:
            raise TabzooInputError(
                f"wide_features={self.wide_features!r} is not valid; pass 'subsample' (members see different "
                "feature subsets) or 'project' (one seeded Gaussian random projection shared by all members)."
            )
        if getattr(self, "many_class", "hierarchical") not in MANY_CLASS:
            raise TabzooInputError(
                f"many_class={self.many_class!r} is not valid; pass 'ecoc' (error-correcting output codes) or "  # type: ignore[attr-defined]
                "'hierarchical' (the balanced class tree) for more classes than the head takes."
            )
        if X is not None and y is not None:
            self.selection_ = self._select(X, self._n_classes_for_selection(y))
        Xt = super()._fit_context(X, y)  # type: ignore[misc]
        self.inference_dtype_ = resolve_inference_dtype(self.inference_precision, self.device_)  # type: ignore[attr-defined]
        self.context_cache_: dict[str, list[ContextState]] = {}
        limit = int(self.model_.max_features)  # type: ignore[attr-defined]
        self.projection_ = None
        if Xt.shape[1] > limit and self.wide_features == "project":
            self.projection_ = RandomProjection(limit, seed=int(self.projection_seed)).fit(Xt.shape[1])
            Xt = self.projection_.transform(Xt)
        return np.ascontiguousarray(Xt, dtype=np.float32)

    def _transform_query(self, X: Any) -> np.ndarray:
        xq = super()._transform_query(X)  # type: ignore[misc]
        if getattr(self, "projection_", None) is not None:
            xq = self.projection_.transform(xq)
        return np.ascontiguousarray(xq, dtype=np.float32)

    def _view_categoricals(self) -> tuple[int, ...]:
        # a projection mixes the columns: no column is categorical any more
        return () if getattr(self, "projection_", None) is not None else super()._view_categoricals()  # type: ignore[misc]

    def _autocast(self) -> Any:
        dtype = getattr(self, "inference_dtype_", None)
        if dtype is None:  # restored by load(): resolved on the device it was loaded to
            dtype = self.inference_dtype_ = resolve_inference_dtype(self.inference_precision, self.device_)  # type: ignore[attr-defined]
        if dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(torch.device(self.device_).type, dtype=dtype)  # type: ignore[attr-defined]

    # -- context states ------------------------------------------------------------------------
    def _balance_strength(self) -> float:
        """Resolved ``class_balance``: 0 for regressors (bins are not classes to balance)."""
        value = getattr(self, "class_balance", 0.0)
        if isinstance(self, InContextRegressor):
            return 0.0
        if value == "auto":
            return AUTO_BALANCE
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating) \
                or not np.isfinite(value) or value < 0:
            raise TabzooInputError(
                f"class_balance={value!r} is not valid; pass 'auto', 0 (context rows as they are) or a strength "
                "> 0 (class c's rows weigh (n_largest / n_c) ** strength; 1 = balanced classes)."
            )
        return float(value)

    def _encode(self, member_ids: Sequence[int], rows: np.ndarray | None, y_members: list[np.ndarray],
                weights: np.ndarray | None = None) -> list[ContextState]:
        """Per member, the context state of its view of the context rows ``rows`` (None = all),
        with optional row weights ``weights [n_rows]``."""
        model: TabFlex = self.model_  # type: ignore[attr-defined]
        dev = torch.device(self.device_)  # type: ignore[attr-defined]
        views = self._views()  # type: ignore[attr-defined]
        xc_all = self.X_context_ if rows is None else self.X_context_[rows]  # type: ignore[attr-defined]
        w = None if weights is None else torch.from_numpy(np.asarray(weights, dtype=np.float32)).unsqueeze(0).to(dev)
        out = []
        with torch.inference_mode(), self._autocast():
            for i, ym in zip(member_ids, y_members, strict=True):
                xc = torch.from_numpy(views[i].apply(xc_all)).unsqueeze(0).to(dev)
                yc = torch.from_numpy(np.asarray(ym, dtype=np.float32)).unsqueeze(0).to(dev)
                out.append(model.encode_context(xc, yc, chunk_size=int(self.chunk_size), weights=w))  # type: ignore[attr-defined]
        return out

    def _states(self, member_ids: Sequence[int], rows: np.ndarray | None, labels: np.ndarray, k: int,
                y_members: list[np.ndarray], weights: np.ndarray | None = None) -> list[ContextState]:
        cache = getattr(self, "context_cache_", None)
        key = _key(rows, labels, k, member_ids)
        if cache is not None and key in cache:
            return cache[key]
        states = self._encode(member_ids, rows, y_members, weights)
        if self.fit_mode == "fit_with_cache" and cache is not None:
            cache[key] = states
        return states

    def _stream(self, member_ids: Sequence[int], states: list[ContextState],
                x_query: np.ndarray) -> Iterator[tuple[slice, torch.Tensor]]:
        """Per chunk of query rows: ``[members, chunk, max_classes]`` logits / temperature (fp32, cpu)."""
        model: TabFlex = self.model_  # type: ignore[attr-defined]
        dev = torch.device(self.device_)  # type: ignore[attr-defined]
        views = [self._views()[i] for i in member_ids]  # type: ignore[attr-defined]
        state = ContextState([torch.cat(t, 0) for t in zip(*(s.kv for s in states), strict=True)],
                             [torch.cat(t, 0) for t in zip(*(s.k_sum for s in states), strict=True)],
                             states[0].n_context)
        temp = float(self.softmax_temperature)
        for sl in self._chunks(x_query.shape[0]):  # type: ignore[attr-defined]
            q = torch.stack([torch.from_numpy(v.apply(x_query[sl])) for v in views]).to(dev)
            with torch.inference_mode(), self._autocast():
                logits = model.predict_query(q, state, chunk_size=int(self.chunk_size))  # type: ignore[attr-defined]
            yield sl, (logits.float() / temp).cpu()

    def _member_proba(self, member_ids: Sequence[int], rows: np.ndarray | None, y: np.ndarray, k: int,
                      x_query: np.ndarray) -> np.ndarray:
        """Ensemble probabilities ``[n_query, k]`` of members ``member_ids`` for labels ``y in 0..k-1``
        of the context rows ``rows`` (class shifts applied per member; logits averaged)."""
        members = [self.members_[i] for i in member_ids]  # type: ignore[attr-defined]
        shifts = np.array([m.class_shift % k for m in members])
        y_members = [(y + s) % k for s in shifts]
        strength = self._balance_strength()
        weights, corr = class_balance(y, k, strength) if strength > 0 else (None, np.zeros(k))
        if weights is not None and np.all(weights == 1.0):
            weights = None
        states = self._states(member_ids, rows, y, k, y_members, weights)
        gather = torch.from_numpy((np.arange(k)[None, :] + shifts[:, None]) % k)
        prior = torch.from_numpy(corr)
        out = np.zeros((x_query.shape[0], k))
        for sl, logits in self._stream(member_ids, states, x_query):
            logp = torch.log_softmax(logits[..., :k].double(), dim=-1)
            logp = torch.gather(logp, 2, gather[:, None, :].expand(-1, logp.shape[1], -1))
            # logits averaged (as the authors); the weighted context's class prior undone
            out[sl] = torch.softmax(logp.mean(0) + prior, dim=-1).numpy()
        return out

    def _proba(self, y: np.ndarray, k: int, x_query: np.ndarray, member_ids: Sequence[int] | None = None,
               context_rows: np.ndarray | None = None) -> np.ndarray:
        """Probabilities ``[n_query, k]`` for labels ``y [n_context]`` of the whole context, read from the
        context rows ``context_rows`` only (None: all, and local contexts when fitted)."""
        ids = list(range(len(self.members_))) if member_ids is None else list(member_ids)  # type: ignore[attr-defined]
        limit = int(self.model_.max_classes)  # type: ignore[attr-defined]
        base = None if context_rows is None else np.asarray(context_rows, dtype=np.int64)
        ys = y if base is None else y[base]

        def at(rows: np.ndarray | None) -> np.ndarray | None:  # rows of ys -> rows of the context
            if base is None:
                return rows
            return base if rows is None else base[rows]

        if k <= limit:
            if base is None and getattr(self, "local_", None) is not None:
                return self._local_proba(ids, y, k, x_query)
            return self._member_proba(ids, at(None), ys, k, x_query)
        if getattr(self, "many_class", "hierarchical") == "ecoc":
            def code(i: int, labels: np.ndarray, kk: int) -> np.ndarray:  # one member per code, cycling
                return self._member_proba([ids[i % len(ids)]], at(None), labels, kk, x_query)

            return ecoc_proba(code, ys, k, limit, x_query.shape[0], n_codes=N_CODES,
                              seed=int(self.members_[0].seed))  # type: ignore[attr-defined]

        def predict(rows: np.ndarray, labels: np.ndarray, kk: int) -> np.ndarray:
            return self._member_proba(ids, at(rows), labels, kk, x_query)

        return hierarchical_proba(predict, ys, k, limit, x_query.shape[0])

    # -- local contexts ------------------------------------------------------------------------
    def _strategy(self) -> str:
        """The resolved context strategy for the fitted context: ``"global"``, ``"local"`` or ``"local+global"``."""
        value = getattr(self, "context_strategy", "global")
        size = getattr(self, "local_size", 2048)
        if value not in CONTEXT_STRATEGIES:
            raise TabzooInputError(
                f"context_strategy={value!r} is not valid; pass one of {CONTEXT_STRATEGIES} ('local' answers each "
                "query from the context of its nearest cluster of training rows, for large training sets)."
            )
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 16:
            raise TabzooInputError(f"local_size must be an int >= 16 (rows per local context), got {size!r}.")
        if value == "auto":
            return "local+global" if self.X_context_.shape[0] > AUTO_LOCAL_ROWS else "global"  # type: ignore[attr-defined]
        return str(value)

    def _fit_local(self) -> None:
        """Cluster the context rows for ``context_strategy`` local (deterministic: seed of member 0)."""
        self.local_: LocalContexts | None = None
        if self._strategy() == "global" or self.X_context_.shape[0] <= int(self.local_size):  # type: ignore[attr-defined]
            return
        y = np.asarray(self.y_context_, dtype=np.float64)  # type: ignore[attr-defined]
        self.local_ = fit_local_contexts(self.X_context_, int(self.local_size), seed=int(self.members_[0].seed),  # type: ignore[attr-defined]
                                         labels=y)

    def _local_proba(self, ids: list[int], y: np.ndarray, k: int, x_query: np.ndarray) -> np.ndarray:
        """Each query row answered from the context of its nearest cluster ``[n_query, k]``."""
        local = self.local_
        assert local is not None
        route = local.route(x_query)
        out = np.zeros((x_query.shape[0], k))
        for c in np.unique(route):
            q = np.flatnonzero(route == c)
            rows = local.rows[int(c)]
            out[q] = self._member_proba(ids, rows, y[rows], k, x_query[q])
        if self._strategy() == "local+global":
            glob = self._member_proba(ids, None, y, k, x_query)
            out = np.sqrt(np.clip(out, 1e-300, None) * np.clip(glob, 1e-300, None))
            out /= out.sum(axis=1, keepdims=True)
        return out

    def _warm_cache(self) -> None:
        """``fit_mode="fit_with_cache"``: compute every context state now (one throwaway query row)."""
        if self.fit_mode == "fit_with_cache":
            self._predict_transformed(self.X_context_[:1])  # type: ignore[attr-defined]

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
        self.inference_dtype_ = None
        self.context_cache_ = {}
        self._fit_local()  # deterministic from the stored context and members
