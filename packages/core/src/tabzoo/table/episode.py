"""``Episode`` (one in-context task) and ``EpisodeBatch`` (a padded batch of them)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tabzoo.table.errors import (
    DTypeError,
    EmptyContextError,
    InvalidValueError,
    RaggedRowsError,
    SchemaMismatchError,
    ShapeError,
)
from tabzoo.table.validation import (
    check_categorical,
    check_class_labels,
    check_context_classes,
    check_finite_features,
    check_finite_labels,
    check_task,
    check_tensor,
)

__all__ = ["Episode", "EpisodeBatch"]


@dataclass(frozen=True, eq=False)
class Episode:
    """One in-context task, validated on construction.

    :param x_context: ``[n_context, n_features]`` float (NaN = missing; inf is rejected).
    :param y_context: ``[n_context]`` float: class index (classification) or value (regression).
    :param x_query: ``[n_query, n_features]`` float, the same features as ``x_context``.
    :param y_query: ``[n_query]`` float or None (unknown query labels).
    :param task: ``"classification"`` or ``"regression"``.
    :param n_classes: number of classes (>= 2) for classification, 0 for regression.
    :param categorical: indices of categorical features (their values are codes >= 0 or NaN).
    :raises EmptyContextError, SchemaMismatchError, InvalidLabelError, SingleClassError,
        UnseenLabelError, InvalidTaskError, InvalidValueError, ShapeError, DTypeError:
        see :mod:`tabzoo.table.errors`.
    """

    x_context: torch.Tensor
    y_context: torch.Tensor
    x_query: torch.Tensor
    y_query: torch.Tensor | None
    task: str
    n_classes: int
    categorical: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        xc = check_tensor("x_context", self.x_context, 2)
        yc = check_tensor("y_context", self.y_context, 1)
        xq = check_tensor("x_query", self.x_query, 2)
        yq = None if self.y_query is None else check_tensor("y_query", self.y_query, 1)
        devices = {t.device for t in (xc, yc, xq, yq) if t is not None}
        if len(devices) > 1:
            raise DTypeError(f"episode tensors sit on several devices {devices}; move them to one")
        if xc.shape[0] == 0:
            raise EmptyContextError(
                "the episode has no context rows (x_context has shape "
                f"{tuple(xc.shape)}); give it at least one labelled context row"
            )
        if yc.shape[0] != xc.shape[0]:
            raise ShapeError(f"y_context has {yc.shape[0]} rows but x_context has {xc.shape[0]}")
        if xq.shape[1] != xc.shape[1]:
            raise SchemaMismatchError(
                f"x_query has {xq.shape[1]} features but x_context has {xc.shape[1]}; the query "
                "must have exactly the context's columns, in the same order"
            )
        if yq is not None and yq.shape[0] != xq.shape[0]:
            raise ShapeError(f"y_query has {yq.shape[0]} rows but x_query has {xq.shape[0]}")
        check_task(self.task, self.n_classes)
        check_finite_features("x_context", xc)
        check_finite_features("x_query", xq)
        check_finite_labels("y_context", yc)
        if yq is not None:
            check_finite_labels("y_query", yq)
        if self.task == "classification":
            check_class_labels("y_context", yc, self.n_classes)
            if yq is not None:
                check_class_labels("y_query", yq, self.n_classes)
            check_context_classes(yc, yq)
        check_categorical(self.categorical, torch.cat([xc, xq]), xc.shape[1])

    @classmethod
    def from_arrays(
        cls,
        x_context: Any,
        y_context: Any,
        x_query: Any,
        y_query: Any = None,
        *,
        task: str,
        n_classes: int | None = None,
        categorical: Sequence[int] = (),
        device: torch.device | str | None = None,
    ) -> Episode:
        """An episode from array-likes (numpy, lists, tensors), converted to float32 tensors.

        :param n_classes: for classification, defaults to ``max label + 1`` over all given labels.
        """

        def t(a: Any, name: str) -> torch.Tensor:
            if isinstance(a, torch.Tensor):
                return a.to(device=device, dtype=torch.float32)
            return torch.as_tensor(_float32_array(a, name)).to(device=device)

        yc = t(y_context, "y_context")
        yq = None if y_query is None else t(y_query, "y_query")
        if n_classes is None:
            if task != "classification":
                n_classes = 0
            else:
                ys = yc if yq is None else torch.cat([yc, yq])
                finite = ys[torch.isfinite(ys)]
                n_classes = int(finite.max()) + 1 if finite.numel() else 0
                if n_classes < 2 and yc.numel() and bool(torch.isfinite(yc).all()):
                    check_context_classes(yc, None)  # SingleClassError, naming the class
        return cls(
            t(x_context, "x_context"), yc, t(x_query, "x_query"), yq, task, n_classes,
            tuple(int(i) for i in categorical),
        )

    @property
    def n_context(self) -> int:
        """Number of context rows."""
        return int(self.x_context.shape[0])

    @property
    def n_query(self) -> int:
        """Number of query rows."""
        return int(self.x_query.shape[0])

    @property
    def n_features(self) -> int:
        """Number of features."""
        return int(self.x_context.shape[1])

    def to(self, device: torch.device | str) -> Episode:
        """This episode with every tensor on ``device``."""
        yq = None if self.y_query is None else self.y_query.to(device)
        return dataclasses.replace(
            self,
            x_context=self.x_context.to(device),
            y_context=self.y_context.to(device),
            x_query=self.x_query.to(device),
            y_query=yq,
        )


@dataclass(frozen=True, eq=False)
class EpisodeBatch:
    """A padded batch of episodes that share ``n_context`` and ``task``.

    :param x: ``[B, N, F]`` float32; rows ``[0, n_context)`` are context, the rest query; padding
        rows and features are exactly 0 (NaN in real cells = missing).
    :param y: ``[B, N]`` float32 labels of all rows (0 on padding; 0 on query rows when
        ``has_query_labels`` is False). Models must read only ``y[:, :n_context]``.
    :param n_context: context rows, shared by the whole batch (>= 1).
    :param row_mask: ``[B, N]`` bool, True = real row; real rows come first.
    :param feature_mask: ``[B, F]`` bool, True = real feature; real features come first.
    :param n_classes: ``[B]`` long, class count per episode (0 = regression).
    :param task: ``"classification"`` or ``"regression"``.
    :param categorical: per episode, the categorical feature indices (``()`` = none anywhere).
    :param has_query_labels: whether ``y`` holds real query labels.
    """

    x: torch.Tensor
    y: torch.Tensor
    n_context: int
    row_mask: torch.Tensor
    feature_mask: torch.Tensor
    n_classes: torch.Tensor
    task: str
    categorical: tuple[tuple[int, ...], ...] = ()
    has_query_labels: bool = True

    def __post_init__(self) -> None:
        from tabzoo.table.batch_checks import check_batch

        check_batch(self)

    @classmethod
    def collate(cls, episodes: Sequence[Episode]) -> EpisodeBatch:
        """Pad and stack ``episodes`` (same ``n_context``, ``task`` and query-label presence).

        Rows are padded to ``n_context + max n_query`` and features to the largest count; padding
        is 0. Tensors are cast to float32 on the first episode's device.
        """
        eps = list(episodes)
        if not eps:
            raise ShapeError("collate got no episodes; pass a non-empty list of Episode")
        first = eps[0]
        for b, e in enumerate(eps):
            if not isinstance(e, Episode):
                raise DTypeError(f"item {b} is a {type(e).__name__}, not an Episode")
            if e.n_context != first.n_context:
                raise SchemaMismatchError(
                    f"episode {b} has {e.n_context} context rows but episode 0 has "
                    f"{first.n_context}; a batch shares n_context: resample or batch by size"
                )
            if e.task != first.task:
                raise SchemaMismatchError(
                    f"episode {b} is {e.task} but episode 0 is {first.task}; batch one task at a time"
                )
            if (e.y_query is None) != (first.y_query is None):
                raise SchemaMismatchError(
                    f"episode {b} {'lacks' if e.y_query is None else 'has'} query labels unlike "
                    "episode 0; give all episodes y_query, or none"
                )
        n_ctx, dev = first.n_context, first.x_context.device
        n_rows = n_ctx + max(e.n_query for e in eps)
        n_feat = max(e.n_features for e in eps)
        bsz = len(eps)
        x = torch.zeros(bsz, n_rows, n_feat, dtype=torch.float32, device=dev)
        y = torch.zeros(bsz, n_rows, dtype=torch.float32, device=dev)
        row_mask = torch.zeros(bsz, n_rows, dtype=torch.bool, device=dev)
        feature_mask = torch.zeros(bsz, n_feat, dtype=torch.bool, device=dev)
        for b, e in enumerate(eps):
            n = n_ctx + e.n_query
            x[b, :n_ctx, : e.n_features] = e.x_context.to(dev, torch.float32)
            x[b, n_ctx:n, : e.n_features] = e.x_query.to(dev, torch.float32)
            y[b, :n_ctx] = e.y_context.to(dev, torch.float32)
            if e.y_query is not None:
                y[b, n_ctx:n] = e.y_query.to(dev, torch.float32)
            row_mask[b, :n] = True
            feature_mask[b, : e.n_features] = True
        n_classes = torch.tensor([e.n_classes for e in eps], dtype=torch.long, device=dev)
        cats = tuple(e.categorical for e in eps)
        cats = cats if any(cats) else ()
        return cls(
            x,
            y,
            n_ctx,
            row_mask,
            feature_mask,
            n_classes,
            first.task,
            cats,
            first.y_query is not None,
        )

    def episodes(self) -> list[Episode]:
        """The batch's episodes, padding removed (inverse of :meth:`collate`)."""
        out = []
        n_q = self.row_mask[:, self.n_context :].sum(dim=1).tolist()
        n_f = self.feature_mask.sum(dim=1).tolist()
        for b in range(self.batch_size):
            end, f = self.n_context + int(n_q[b]), int(n_f[b])
            yq = self.y[b, self.n_context : end] if self.has_query_labels else None
            out.append(
                Episode(
                    self.x[b, : self.n_context, :f],
                    self.y[b, : self.n_context],
                    self.x[b, self.n_context : end, :f],
                    yq,
                    self.task,
                    int(self.n_classes[b]),
                    self.categorical[b] if self.categorical else (),
                )
            )
        return out

    def to(self, device: torch.device | str, non_blocking: bool = False) -> EpisodeBatch:
        """This batch with every tensor on ``device`` (not re-validated: moving keeps validity)."""
        new = object.__new__(EpisodeBatch)
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, torch.Tensor):
                v = v.to(device, non_blocking=non_blocking)
            object.__setattr__(new, f.name, v)
        return new

    @property
    def device(self) -> torch.device:
        """The device of the batch tensors."""
        return self.x.device

    @property
    def batch_size(self) -> int:
        """B."""
        return int(self.x.shape[0])

    @property
    def n_rows(self) -> int:
        """N, padded rows per episode (context + query)."""
        return int(self.x.shape[1])

    @property
    def n_features(self) -> int:
        """F, padded features per episode."""
        return int(self.x.shape[2])

    @property
    def n_query(self) -> torch.Tensor:
        """``[B]`` long: real query rows per episode."""
        return self.row_mask[:, self.n_context :].sum(dim=1)

    @property
    def x_context(self) -> torch.Tensor:
        """``[B, n_context, F]``."""
        return self.x[:, : self.n_context]

    @property
    def y_context(self) -> torch.Tensor:
        """``[B, n_context]``."""
        return self.y[:, : self.n_context]

    @property
    def x_query(self) -> torch.Tensor:
        """``[B, N - n_context, F]`` (padding rows included; see :attr:`query_mask`)."""
        return self.x[:, self.n_context :]

    @property
    def y_query(self) -> torch.Tensor | None:
        """``[B, N - n_context]``, or None when the batch has no query labels."""
        return self.y[:, self.n_context :] if self.has_query_labels else None

    @property
    def query_mask(self) -> torch.Tensor:
        """``[B, N - n_context]`` bool, True = real query row."""
        return self.row_mask[:, self.n_context :]


def _float32_array(a: Any, name: str) -> np.ndarray:
    """``a`` as float32, refusing what would be coerced: text, ragged rows, values beyond float32.

    :raises RaggedRowsError, DTypeError, InvalidValueError: naming the row (and column) and the fix.
    """
    try:
        arr = np.asarray(a)
    except ValueError as exc:  # numpy refuses inhomogeneous nesting
        raise RaggedRowsError(
            f"{name} has rows of different lengths ({exc}); give every row the same number of "
            "values (NaN for a missing one)"
        ) from exc
    if arr.dtype.kind in "OUSV":
        flat = arr.reshape(-1)
        for i, v in enumerate(flat):
            if isinstance(v, bool | np.bool_):
                continue
            try:
                float(v) if not isinstance(v, str | bytes | np.str_ | np.bytes_) else _raise()
            except (TypeError, ValueError):
                where = np.unravel_index(i, arr.shape)
                at = f"row {where[0]}" + (f", feature {where[1]}" if len(where) > 1 else "")
                fix = ("encode labels as class indices 0..K-1, e.g. "
                       "np.unique(y, return_inverse=True)[1]" if name.startswith("y")
                       else "encode it as a number first (categories as integer codes)")
                raise DTypeError(f"{name} {at} is {v!r}, not a number; {fix}") from None
        arr = arr.astype(np.float64)
    if arr.dtype.kind == "c":
        raise DTypeError(f"{name} is complex; split it into real and imaginary features")
    if arr.dtype.kind == "f" and arr.dtype.itemsize > 4:
        big = float(np.finfo(np.float32).max)
        with np.errstate(invalid="ignore"):
            over = np.isfinite(arr) & (np.abs(arr) > big)
        if over.any():
            pos: tuple[int, ...] = tuple(int(i) for i in np.argwhere(over)[0].tolist())
            at = f"row {pos[0]}" + (f", feature {pos[1]}" if len(pos) > 1 else "")
            raise InvalidValueError(
                f"{name} {at} is {arr[pos]!r}, beyond the float32 range (+-3.4e38) of episodes; "
                "rescale it (e.g. standardise the column) first"
            )
    try:
        return arr.astype(np.float32)
    except (TypeError, ValueError) as exc:
        raise DTypeError(f"{name} can't be converted to float32 ({exc}); pass numbers") from exc


def _raise() -> None:
    raise ValueError
