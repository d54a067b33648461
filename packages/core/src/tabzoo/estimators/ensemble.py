"""The core's in-context prediction path, shared by every in-context plugin.

:class:`EnsemblePath` is mixed into :class:`~tabzoo.estimators.base.InContextEstimator`. One prediction:

1. the query rows are preprocessed and encoded like the context (:meth:`InContextEstimator._transform_query`);
2. per ensemble member, its view of the context (feature order or subset, transform, category codes;
   :mod:`tabzoo.estimators.members`) and its class shift of the labels (:meth:`_member_proba`);
3. the context state from the plugin's :class:`~tabzoo.estimators.forward.InContextForward`, cached per
   (rows, labels, members) with ``fit_mode="fit_with_cache"`` (:meth:`_state`);
4. the query rows in chunks of ``chunk_size`` through the hook's ``predict_query``, divided by
   ``softmax_temperature`` (:meth:`_stream`);
5. the members averaged (:func:`~tabzoo.estimators.forward.average_members`); more classes than the
   head through the class tree or error-correcting codes (:meth:`_proba`); optionally local contexts
   (:mod:`tabzoo.estimators.local`) for large training sets, or chosen per table on an inner
   validation split (``context_strategy="select"``, :mod:`tabzoo.train.retrieval`).

A plugin supplies its model (``_load_model``), optionally its :class:`InContextForward`
(``_context_forward``; default :class:`~tabzoo.estimators.forward.ConcatForward`) and its capabilities as
class attributes: ``pad_to_max_features``, ``auto_class_balance``, ``feature_subsample``,
``shuffle_categories``, ``standardize_members``.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch

from tabzoo.errors import TabzooError, TabzooInputError
from tabzoo.estimators.encoding import class_balance
from tabzoo.estimators.forward import (
    ConcatForward,
    InContextForward,
    average_members,
    class_log_proba,
    member_batch,
)
from tabzoo.estimators.hierarchy import ecoc_proba, hierarchical_proba
from tabzoo.estimators.local import LocalContexts, fit_local_contexts
from tabzoo.estimators.options import resolve_inference_dtype
from tabzoo.kernels.memory import check_memory, in_context_bytes
from tabzoo.kernels.threads import host_threads, model_flops_per_row, op_threads

__all__ = ["AUTO_LOCAL_ROWS", "CONTEXT_STRATEGIES", "MANY_CLASS", "N_CODES", "EnsemblePath", "NonFiniteOutputError"]

#: ``many_class``: more classes than the head
MANY_CLASS = ("ecoc", "hierarchical")
#: codes of the error-correcting output code path
N_CODES = 16
#: ``context_strategy``: one context for every query, local contexts (and the two mixed), or the mix chosen per
#: table on an inner validation split of the training rows (``"select"``)
CONTEXT_STRATEGIES = ("auto", "global", "local", "local+global", "select")
#: ``context_strategy="auto"`` uses local contexts above this many context rows
AUTO_LOCAL_ROWS = 8192


class NonFiniteOutputError(TabzooError, FloatingPointError):
    """The model returned NaN or inf for finite, validated inputs: a bug of the model, never passed on."""


def _key(rows: np.ndarray | None, labels: np.ndarray, k: int, members: Sequence[int]) -> str:
    h = hashlib.sha1(b"all" if rows is None else np.ascontiguousarray(rows, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(labels, dtype=np.int64).tobytes())
    h.update(np.asarray(list(members), dtype=np.int64).tobytes())
    return f"{k}:{h.hexdigest()}"


class EnsemblePath:
    """Members, cached context states, chunked queries and the ensemble average (see the module doc)."""

    # fitted state the estimator provides
    X_context_: np.ndarray
    y_context_: np.ndarray
    members_: list[Any]
    model_: torch.nn.Module
    device_: str
    chunk_size: int
    #: the resolved ``inference_precision`` (None: resolve on first use, after ``load``)
    inference_dtype_: torch.dtype | None

    #: zero-pad every member's rows to the model's ``max_features`` columns
    pad_to_max_features: bool = True
    #: ``class_balance="auto"`` means this strength (0: context rows as they are)
    auto_class_balance: float = 0.0
    #: how members are averaged when the estimator has no ``average`` parameter
    average: str = "probabilities"

    # -- hooks -----------------------------------------------------------------------------------
    def _context_forward(self) -> InContextForward:
        """The plugin's hook into the model (default: ``model(cat(context, query), y_context)``)."""
        return ConcatForward(self.model_)

    def _context_subsets(self, rows: np.ndarray, y: np.ndarray, k: int) -> list[np.ndarray] | None:
        """Per member of ``members_``, positions into ``rows`` of the context it reads (equal counts), or None:
        all rows. (A call for some of the members, e.g. one ECOC code, reads the entries of those members.)"""
        return None

    def _views(self) -> list[Any]:  # provided by InContextEstimator
        raise NotImplementedError

    def _chunks(self, n_query: int) -> Iterator[slice]:  # provided by InContextEstimator
        raise NotImplementedError

    def _model_limit(self, name: str) -> int | None:  # provided by InContextEstimator
        raise NotImplementedError

    # -- precision and options -------------------------------------------------------------------
    def _autocast(self) -> Any:
        """The autocast context of ``inference_precision`` (fp32 when the estimator has none)."""
        dtype = getattr(self, "inference_dtype_", None)
        if dtype is None:  # restored by load(): resolved on the device it was loaded to
            dtype = self.inference_dtype_ = resolve_inference_dtype(getattr(self, "inference_precision", "fp32"),
                                                                    self.device_)
        if dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(torch.device(self.device_).type, dtype=dtype)

    def _balance_strength(self) -> float:
        """Resolved ``class_balance``: 0 for regressors (bins are not classes to balance)."""
        from tabzoo.estimators.sk import RegressorMixin

        value = getattr(self, "class_balance", 0.0)
        if isinstance(self, RegressorMixin):
            return 0.0
        if value == "auto":
            return float(self.auto_class_balance)
        if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating) \
                or not np.isfinite(value) or value < 0:
            raise TabzooInputError(
                f"class_balance={value!r} is not valid; pass 'auto', 0 (context rows as they are) or a strength "
                "> 0 (class c's rows weigh (n_largest / n_c) ** strength; 1 = balanced classes)."
            )
        return float(value)

    def _width(self, member_ids: Sequence[int]) -> int | None:
        """Columns of the members' model inputs (None: their own, equal widths)."""
        if not self.pad_to_max_features:
            return None
        widest = max(len(self.members_[i].features) for i in member_ids)
        pad = self._model_limit("max_features")
        return widest if pad is None else max(pad, widest)

    def _check_memory(self, member_ids: Sequence[int], n_context: int, batch: int, width: int | None) -> None:
        """Refuse before encoding when one pass (``batch`` members of ``n_context`` rows plus a query
        chunk) would exceed the memory limit (:mod:`tabzoo.kernels.memory`)."""
        cols = width or max(len(self.members_[i].features) for i in member_ids)
        rows = n_context + int(getattr(self, "chunk_size", 1024))
        check_memory(f"{type(self).__name__}.predict", in_context_bytes(self.model_, batch, rows, cols),
                     "use fewer context rows (fit on a sample, or context_strategy='local'), fewer n_estimators "
                     "or a smaller chunk_size", device=torch.device(self.device_),
                     detail=f"{batch} members x {rows} rows x {cols} features")

    # -- context state ---------------------------------------------------------------------------
    def _state(self, member_ids: Sequence[int], rows: np.ndarray | None, labels: np.ndarray, k: int,
               contexts: list[np.ndarray], y_members: list[np.ndarray], weights: np.ndarray | None) -> Any:
        """The hook's state of the members' contexts (cached with ``fit_mode="fit_with_cache"``).

        :param contexts: per member, its context rows ``[n, F]`` (preprocessed, before its view).
        :param y_members: per member, the labels it shows the model ``[n]``.
        """
        cache = getattr(self, "context_cache_", None)
        keep = getattr(self, "fit_mode", "fit_preprocessors") == "fit_with_cache" or getattr(self, "cache_all_", False)
        key = _key(rows, labels, k, member_ids)
        if cache is not None and key in cache:
            return cache[key]
        hook = self._context_forward()
        dev = torch.device(self.device_)
        views = [self._views()[i] for i in member_ids]
        width = self._width(member_ids)
        self._check_memory(member_ids, max(len(c) for c in contexts), 1 if hook.per_member else len(views), width)
        w = None if weights is None else torch.from_numpy(np.asarray(weights, dtype=np.float32)).unsqueeze(0).to(dev)
        flops = model_flops_per_row(self.model_) * max(len(c) for c in contexts) * (1 if hook.per_member else len(views))
        with torch.inference_mode(), self._autocast(), op_threads(flops):
            if hook.per_member:
                states = []
                for v, c, ym in zip(views, contexts, y_members, strict=True):
                    y1 = torch.from_numpy(np.stack([ym]).astype(np.float32)).to(dev)
                    states.append(hook.encode_context(member_batch([v], [c], width).to(dev), y1, w))
                state = hook.merge(states)
            else:
                y_m = torch.from_numpy(np.stack(y_members).astype(np.float32)).to(dev)
                state = hook.encode_context(member_batch(views, contexts, width).to(dev), y_m, w)
        if keep and cache is not None:
            cache[key] = state
        return state

    def _stream(self, member_ids: Sequence[int], state: Any, x_query: np.ndarray) -> Iterator[tuple[slice, torch.Tensor]]:
        """Per chunk of query rows: its slice and ``[members, chunk, n_out]`` outputs / temperature (fp32, cpu)."""
        hook = self._context_forward()
        dev = torch.device(self.device_)
        views = [self._views()[i] for i in member_ids]
        width = self._width(member_ids)
        temp = float(getattr(self, "softmax_temperature", 1.0))
        per_row = model_flops_per_row(self.model_) * len(views)
        n_context = int(state[0].shape[1]) if isinstance(hook, ConcatForward) else 0  # it reruns the context
        for sl in self._chunks(x_query.shape[0]):
            q = member_batch(views, [x_query[sl]] * len(views), width).to(dev)
            with torch.inference_mode(), self._autocast(), op_threads(per_row * (n_context + sl.stop - sl.start)):
                out = hook.predict_query(state, q)
            if out.dim() != 3 or out.shape[:2] != (len(views), sl.stop - sl.start):
                raise TabzooInputError(
                    f"the model returned shape {tuple(out.shape)} for {sl.stop - sl.start} query rows and "
                    f"{len(views)} members; an in-context model must return [batch, n_query, n_out]."
                )
            out = (out.float() / temp).cpu()
            bad = ~torch.isfinite(out)
            if bool(bad.any()):
                member, row = (int(i) for i in torch.nonzero(bad)[0][:2])
                raise NonFiniteOutputError(
                    f"the model of {type(self).__name__} returned a non-finite value for query row "
                    f"{sl.start + row} (ensemble member {member}) although its inputs were finite; tabzoo "
                    "never returns NaN predictions. Report it to the model's authors, with that row."
                )
            yield sl, out

    def _member_inputs(self, member_ids: Sequence[int], rows: np.ndarray | None, y: np.ndarray,
                       shifts: np.ndarray, k: int) -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Per member, its context rows and its shifted labels ``(y + shift) % k`` (``k=0``: labels as they are)."""
        n = self.X_context_.shape[0] if rows is None else rows.size
        subsets = self._context_subsets(np.arange(n) if rows is None else rows, y, k) if k else None
        if subsets is None:
            ctx = self.X_context_ if rows is None else self.X_context_[rows]
            return [ctx] * len(member_ids), [(y + s) % k if k else y for s in shifts]
        at = np.arange(n) if rows is None else rows
        subsets = [subsets[i] for i in member_ids]
        return ([self.X_context_[at[sub]] for sub in subsets],
                [(y[sub] + s) % k for s, sub in zip(shifts, subsets, strict=True)])

    # -- one ensemble ----------------------------------------------------------------------------
    def _class_weights(self, y: np.ndarray, k: int) -> tuple[np.ndarray | None, torch.Tensor | None]:
        """``class_balance``: the context rows' weights ``[n]`` (None: all 1) and the log-prior correction ``[k]``
        (None: no balancing) for labels ``y in 0..k-1``."""
        strength = self._balance_strength()
        if strength <= 0:
            return None, None
        weights, corr = class_balance(y, k, strength)
        return (None if np.all(weights == 1.0) else weights), torch.from_numpy(corr)

    def _member_proba(self, member_ids: Sequence[int], rows: np.ndarray | None, y: np.ndarray, k: int,
                      x_query: np.ndarray) -> np.ndarray:
        """Ensemble probabilities ``[n_query, k]`` of members ``member_ids`` for labels ``y in 0..k-1`` of the
        context rows ``rows`` (None: all); class shifts per member, averaged as ``average``."""
        shifts = np.array([self.members_[i].class_shift % k for i in member_ids])
        contexts, y_members = self._member_inputs(member_ids, rows, y, shifts, k)
        weights, prior = self._class_weights(y, k)
        state = self._state(member_ids, rows, y, k, contexts, y_members, weights)
        out = np.zeros((x_query.shape[0], k))
        for sl, logits in self._stream(member_ids, state, x_query):
            out[sl] = average_members(class_log_proba(logits, k, shifts), str(self.average), prior)
        return out

    @host_threads
    def _proba(self, y: np.ndarray, k: int, x_query: np.ndarray, member_ids: Sequence[int] | None = None,
               context_rows: np.ndarray | None = None) -> np.ndarray:
        """Probabilities ``[n_query, k]`` for labels ``y [n_context]`` of the whole context, read from the
        context rows ``context_rows`` only (None: all, and local contexts when fitted). Beyond the head's
        classes: ``many_class="ecoc"`` (one member per code) or the balanced class tree."""
        ids = list(range(len(self.members_))) if member_ids is None else list(member_ids)
        limit = self._model_limit("max_classes") or k
        base = None if context_rows is None else np.asarray(context_rows, dtype=np.int64)
        ys = y if base is None else y[base]

        def at(rows: np.ndarray | None) -> np.ndarray | None:  # rows of ys -> rows of the context
            if base is None:
                return rows
            return base if rows is None else base[rows]

        if k <= limit:
            local = getattr(self, "local_", None)
            if local is not None and local.serves(base):
                return self._local_proba(ids, y, k, x_query, base)
            return self._member_proba(ids, at(None), ys, k, x_query)
        if getattr(self, "many_class", "hierarchical") == "ecoc":
            def code(i: int, labels: np.ndarray, kk: int) -> np.ndarray:  # one member per code, cycling
                return self._member_proba([ids[i % len(ids)]], at(None), labels, kk, x_query)

            return ecoc_proba(code, ys, k, limit, x_query.shape[0], n_codes=N_CODES, seed=int(self.members_[0].seed))

        def predict(rows: np.ndarray, labels: np.ndarray, kk: int) -> np.ndarray:
            return self._member_proba(ids, at(rows), labels, kk, x_query)

        return hierarchical_proba(predict, ys, k, limit, x_query.shape[0])

    @host_threads
    def _member_values(self, x_query: np.ndarray, values: Any) -> np.ndarray:
        """Regression: the members' mean of ``values(outputs [M, chunk, n_out]) -> [M, chunk]`` ``[n_query]``."""
        ids = list(range(len(self.members_)))
        y = np.asarray(self.y_context_)
        contexts, y_members = self._member_inputs(ids, None, y, np.zeros(len(ids), dtype=np.int64), 0)
        state = self._state(ids, None, np.zeros(0, dtype=np.int64), 0, contexts, y_members, None)
        out = np.zeros(x_query.shape[0], dtype=np.float64)
        for sl, logits in self._stream(ids, state, x_query):
            out[sl] = values(logits).double().mean(0).numpy()
        return out

    # -- local contexts --------------------------------------------------------------------------
    def _strategy(self) -> str:
        """The resolved context strategy: ``"global"``, ``"local"``, ``"local+global"`` or ``"select"``."""
        value = getattr(self, "context_strategy", "global")
        size = getattr(self, "local_size", 2048)
        if value not in CONTEXT_STRATEGIES:
            raise TabzooInputError(
                f"context_strategy={value!r} is not valid; pass one of {CONTEXT_STRATEGIES} ('local' answers each "
                "query from the context of its nearest cluster of training rows, for large training sets; 'select' "
                "chooses the mix of local and global contexts on an inner validation split of the training rows)."
            )
        if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 16:
            raise TabzooInputError(f"local_size must be an int >= 16 (rows per local context), got {size!r}.")
        if value == "auto":
            return "local+global" if self.X_context_.shape[0] > AUTO_LOCAL_ROWS else "global"
        return str(value)

    def _local_weight(self) -> float:
        """Weight of the local contexts' log-probabilities against the global context's (1: local only)."""
        strategy = self._strategy()
        if strategy == "select":
            return float((getattr(self, "retrieval_", None) or {}).get("local_weight", 0.0))
        return 1.0 if strategy == "local" else 0.5

    def _fit_local(self) -> None:
        """Cluster the context rows for local context strategies (deterministic: seed of member 0); with
        ``"select"``, at the size the inner validation split chose (``retrieval_``), if it chose local contexts."""
        self.local_: LocalContexts | None = None
        strategy = self._strategy()
        size = int(getattr(self, "local_size", 2048))
        if strategy == "select":
            choice = getattr(self, "retrieval_", None) or {}
            if not choice.get("local_weight"):
                return
            size = int(choice["local_size"])
        if strategy == "global" or self.X_context_.shape[0] <= size:
            return
        y = np.asarray(self.y_context_, dtype=np.float64)
        self.local_ = fit_local_contexts(self.X_context_, size, seed=int(self.members_[0].seed), labels=y)

    def _local_proba(self, ids: list[int], y: np.ndarray, k: int, x_query: np.ndarray,
                     base: np.ndarray | None = None) -> np.ndarray:
        """Each query row answered from the context of its nearest cluster ``[n_query, k]``, mixed with the global
        context (``base`` rows, None: all) as a weighted geometric mean (weight :meth:`_local_weight`)."""
        local = self.local_
        assert local is not None
        route = local.route(x_query)
        out = np.zeros((x_query.shape[0], k))
        for c in np.unique(route):
            q = np.flatnonzero(route == c)
            rows = local.rows[int(c)]
            out[q] = self._member_proba(ids, rows, y[rows], k, x_query[q])
        w = self._local_weight()
        if w < 1.0:
            glob = self._member_proba(ids, base, y if base is None else y[base], k, x_query)
            if w == 0.5:  # the geometric mean, as before weights existed (bit-identical saved outputs)
                out = np.sqrt(np.clip(out, 1e-300, None) * np.clip(glob, 1e-300, None))
            else:
                out = np.exp(w * np.log(np.clip(out, 1e-300, None)) + (1 - w) * np.log(np.clip(glob, 1e-300, None)))
            out /= out.sum(axis=1, keepdims=True)
        return out
