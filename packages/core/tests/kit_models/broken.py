"""Tiny models for the kit's meta-tests: one correct model, and one deliberately broken model
per check (a check that catches nothing is a defect). Each ``*_case`` returns a
:class:`~tabzoo.testing.ConformanceCase`; :data:`BROKEN` maps check -> cases that must fail it.

The correct model :class:`TinyICL` is a one-layer TabFlex: ``h = x W (+ label embedding on
context rows)``, then ``h + linear_attention(h)`` where every row reads only the context rows,
then a linear head on query rows. It is linear in rows and claims every in-context property.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from tabzoo.errors import TabzooInputError
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import ConformanceCase
from torch import nn

MAX_FEATURES, MAX_CLASSES, D = 6, 4, 8


def validate_icl(x: torch.Tensor, y_context: torch.Tensor, max_features: int, max_classes: int) -> None:
    """The in-context protocol's input validation, as every model should do it."""
    if not isinstance(y_context, torch.Tensor) or not y_context.is_floating_point():
        raise TabzooInputError(f"y_context must be a float tensor of class indices; got {type(y_context).__name__}. "
                               "Encode the labels as 0..K-1 first.")
    if not isinstance(x, torch.Tensor) or x.dim() != 3:
        raise TabzooInputError(f"x must be a tensor [batch, rows, features]; got shape {tuple(getattr(x, 'shape', ()))}.")
    if y_context.dim() != 2 or y_context.shape[0] != x.shape[0]:
        raise TabzooInputError(
            f"y_context must be [batch, n_context] with the batch of x ({x.shape[0]}); got {tuple(y_context.shape)}.")
    if y_context.shape[1] >= x.shape[1] or y_context.shape[1] == 0:
        raise TabzooInputError(
            f"y_context has {y_context.shape[1]} rows but x has {x.shape[1]}: put the context rows first and keep "
            "at least one context and one query row.")
    if x.shape[2] > max_features:
        raise TabzooInputError(f"x has {x.shape[2]} features, more than max_features={max_features}; select fewer.")
    if not torch.isfinite(y_context).all():
        raise TabzooInputError("y_context holds NaN or inf labels; drop those rows or impute the labels.")
    if ((y_context < 0) | (y_context >= max_classes) | (y_context != y_context.round())).any():
        raise TabzooInputError(f"class labels must be integers in [0, {max_classes}); re-encode the labels.")
    if torch.isinf(x).any():
        raise TabzooInputError("x holds inf; features may be NaN (missing) but not inf: clip or replace them.")
    if any(torch.unique(row).numel() < 2 for row in y_context):
        raise TabzooInputError("an episode's context holds a single class; add context rows of another class.")


class TinyICL(nn.Module):
    """Correct tiny in-context classifier: ``forward(x [B, N, F], y_context [B, n_context]) -> [B, n_query, C]``."""

    max_features, max_classes, task = MAX_FEATURES, MAX_CLASSES, "classification"

    def __init__(self, seed: int = 0, validate: bool = True) -> None:
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.embed = nn.Linear(self.max_features, D)
            self.labels = nn.Embedding(self.max_classes, D)
            self.qkv = nn.Linear(D, 3 * D)
            self.head = nn.Linear(D, self.max_classes)
        self.validate = validate

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        """Row states ``[B, N, D]`` after the attention layer."""
        if self.validate:
            validate_icl(x, y_context, self.max_features, self.max_classes)
        nc = y_context.shape[1]
        x = nn.functional.pad(x, (0, self.max_features - x.shape[2]))
        h = self.embed(x)
        h = torch.cat([h[:, :nc] + self.labels(y_context.long().clamp(0, self.max_classes - 1)), h[:, nc:]], dim=1)
        return h + self.mix(h, nc)

    def mix(self, h: torch.Tensor, nc: int) -> torch.Tensor:
        from tabzoo.kernels import linear_attention

        q, k, v = self.qkv(h).unsqueeze(1).chunk(3, dim=-1)  # [B, 1, N, D] each
        return linear_attention(q, k, v, nc).squeeze(1)

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        return self.head(self.encode(x, y_context)[:, y_context.shape[1]:])


def icl_context_repr(model: Any, x: torch.Tensor, y: torch.Tensor, nc: int) -> torch.Tensor:
    """Context-row states ``[B, n_context, D]`` of :class:`TinyICL` and its subclasses."""
    return model.encode(x, y[:, :nc])[:, :nc]


def _icl_masks(nc: int, n: int) -> list[Any]:
    from tabzoo.masks import context_query

    return [context_query(nc)]


def resolve(model_cls: Any) -> Any:
    """A class, or ``"module:Class"`` (as a fresh process receives it) imported."""
    if isinstance(model_cls, str):
        from importlib import import_module

        module, _, qual = model_cls.partition(":")
        return getattr(import_module(module), qual)
    return model_cls


def path_of(model_cls: Any) -> str:
    """``"module:Class"`` of a class."""
    return f"{model_cls.__module__}:{model_cls.__qualname__}"


def icl_case(name: str = "tiny_icl", model_cls: type[TinyICL] | str = TinyICL, **kw: Any) -> ConformanceCase:
    """A case for ``model_cls`` claiming every in-context property, rows scaling and its kernel
    (``model_cls`` may be ``"module:Class"``; a fresh process rebuilds the case from that)."""
    options: dict[str, Any] = dict(
        capabilities=cap.IN_CONTEXT_DEFAULTS | {cap.NO_CONTEXT_QUERY_LEAK, cap.LINEAR_IN_ROWS, cap.KERNEL_EQUIVALENCE},
        config={"d": D}, context_repr=icl_context_repr, masks=_icl_masks, n_features=4, n_classes=3,
        kernel_ops=("linear_attention",),
    )
    return gallery_case("kit_models.broken:icl_case", name, model_cls, options, kw)


def gallery_case(factory: str, name: str, model_cls: Any, options: dict[str, Any], kw: dict[str, Any]) -> ConformanceCase:
    """``ConformanceCase(name, make_model=model_cls, **options, **kw)``, rebuildable by a fresh
    process through ``factory(name=..., model_cls="module:Class", **kw)`` when ``kw`` is JSON-able."""
    cls = resolve(model_cls)
    if all(isinstance(v, (str, int, float, bool)) for v in kw.values()):
        options = {**options, "factory": factory, "factory_args": {"name": name, "model_cls": path_of(cls), **kw}}
    return ConformanceCase(name, make_model=lambda seed: cls(seed), **{**options, **kw})


# -- broken in-context models -------------------------------------------------------------
class QuerySeesQuery(TinyICL):
    """Query rows also read the mean of all query rows."""

    def mix(self, h: torch.Tensor, nc: int) -> torch.Tensor:
        out = super().mix(h, nc)
        return torch.cat([out[:, :nc], out[:, nc:] + h[:, nc:].mean(1, keepdim=True)], dim=1)


class ContextReadsQuery(TinyICL):
    """Context rows read the mean of the query rows."""

    def mix(self, h: torch.Tensor, nc: int) -> torch.Tensor:
        out = super().mix(h, nc)
        return torch.cat([out[:, :nc] + h[:, nc:].mean(1, keepdim=True), out[:, nc:]], dim=1)


class ReadsQueryLabels(TinyICL):
    """Called as ``model(x, y_all, n_context)``: embeds the labels of query rows too."""

    def forward(self, x: torch.Tensor, y: torch.Tensor, nc: int = 0) -> torch.Tensor:  # type: ignore[override]
        out = super().forward(x, y[:, :nc])
        return out + self.head(self.labels(y[:, nc:].long().clamp(0, MAX_CLASSES - 1)))


class QuadraticPath(TinyICL):
    """A hidden dense softmax attention over all rows: FLOPs and memory grow as N^2."""

    def mix(self, h: torch.Tensor, nc: int) -> torch.Tensor:
        dense = torch.softmax(h @ h.transpose(1, 2) / D, dim=-1) @ h
        return super().mix(h, nc) + 1e-3 * dense


class PositionalContext(TinyICL):
    """Context rows get a row-index embedding: outputs depend on the context order."""

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        nc = y_context.shape[1]
        x = x.clone()
        x[:, :nc, 0] += torch.arange(nc, dtype=x.dtype, device=x.device) / nc
        return super().encode(x, y_context)


class PositionalQuery(TinyICL):
    """Query rows get a row-index embedding: outputs do not follow a query permutation."""

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        nc = y_context.shape[1]
        x = x.clone()
        x[:, nc:, 0] += torch.arange(x.shape[1] - nc, dtype=x.dtype, device=x.device)
        return super().encode(x, y_context)


class NonDeterministic(TinyICL):
    """Draws noise from the global RNG at every call (like unseeded random links)."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        out = super().forward(x, y_context)
        return out + 1e-3 * torch.randn(out.shape)


class LosesStateOnSave(TinyICL):
    rotation: torch.Tensor
    """Keeps a seeded projection in a non-persistent buffer: a reloaded model differs."""

    def __init__(self, seed: int = 0, validate: bool = True) -> None:
        super().__init__(seed, validate)
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("rotation", torch.randn(MAX_FEATURES, MAX_FEATURES, generator=g), persistent=False)

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        x = nn.functional.pad(x, (0, self.max_features - x.shape[2])) @ self.rotation if x.dim() == 3 else x
        return super().encode(x, y_context)


class NoValidation(TinyICL):
    """Accepts anything: NaN labels, wrong shapes and out-of-range classes are not rejected."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed, validate=False)


# -- broken kernel backends ----------------------------------------------------------------
def _reference(op: str) -> Callable[..., Any]:
    from tabzoo.kernels import list_backends

    return next(b.fn for b in list_backends(op) if b.name == "reference")


def offset_backend(op: str = "linear_attention", offset: float = 1e-2) -> Any:
    """A backend whose output is the reference's plus ``offset``."""
    from tabzoo.kernels import Backend

    ref = _reference(op)
    return Backend("broken_offset", op, lambda **kw: ref(**kw) + offset, priority=-100, origin="kit_models.broken")


def wrong_grad_backend(op: str = "linear_attention", factor: float = 1.01) -> Any:
    """A backend with the reference's output but gradients scaled by ``factor``."""
    from tabzoo.kernels import Backend

    ref = _reference(op)

    def fn(**kw: Any) -> torch.Tensor:
        out = ref(**kw)
        return out.detach() + (out - out.detach()) * factor

    return Backend("broken_grad", op, fn, priority=-100, origin="kit_models.broken")
