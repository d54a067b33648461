"""The ``multitab`` conformance case: a tiny MultiTab-Net with a binary, a 3-class and a
regression head, held to the multitask protocol (the rows checks per task, task isolation and
the task mask).

A row whose every task is flagged in ``query_mask [B, N, T]`` is a prediction row: it reads the
other (context) rows and itself; context rows read only each other. MultiTab-Net never reads
labels, so label leaks and task isolation hold by construction (it claims independent tasks);
``y [B, N, T]`` is still validated (a NaN or invalid class label in a visible cell is bad input).
The output per row is the concatenation of the task heads, ``[B, N, 5]``. The size search builds
models of 1..64 features and 2..4 tasks of up to 12 classes (:func:`make_sized`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from tabzoo.errors import TabzooInputError
from tabzoo.masks import Mask, context_query
from tabzoo.testing.case import ConformanceCase

from tabzoo_multitab.capabilities import CAPABILITIES
from tabzoo_multitab.config import MultiTabConfig
from tabzoo_multitab.model import MultiTabNet

__all__ = ["CONFIG", "TASKS", "make_case", "make_model", "make_sized", "multitask_forward", "rows_forward", "row_masks"]

CONFIG: dict[str, Any] = MultiTabConfig(
    n_num=4, tasks=(("t_bin", "binary", 2), ("t_multi", "multiclass", 3), ("t_reg", "regression", 0)),
    d_embed=8, n_layers=2, n_heads=2, row_heads=2, head_hidden=8, dropout=0.0,
).to_dict()


TASKS = (2, 3, 0)
"""The classes of each task of :data:`CONFIG` (0 = regression), as the kit declares them."""


def make_model(seed: int) -> MultiTabNet:
    """A tiny MultiTab-Net with weights drawn from ``seed`` (the global RNG is left as it was)."""
    return _seeded(CONFIG, seed)


def make_sized(seed: int, sizes: Mapping[str, Any]) -> MultiTabNet:
    """:func:`make_model` at the kit's searched sizes: ``sizes["n_features"]`` numeric features and
    one task per entry of ``sizes["tasks"]`` (its classes; 0 = regression, 2 = binary)."""
    kinds = {0: "regression", 2: "binary"}
    tasks = tuple((f"t{i}", kinds.get(int(k), "multiclass"), int(k)) for i, k in enumerate(sizes["tasks"]))
    return _seeded({**CONFIG, "n_num": int(sizes["n_features"]), "tasks": tasks}, seed)


def _seeded(config: Mapping[str, Any], seed: int) -> MultiTabNet:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = MultiTabNet(MultiTabConfig.from_dict(dict(config)))
    return model.eval()


def rows_forward(model: MultiTabNet, x: torch.Tensor, y: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
    """Rows protocol: ``x [B, N, F]``, ``y [B, N]``, ``query_mask [B, N]`` -> ``[B, N, sum(n_out)]``."""
    if not all(isinstance(t, torch.Tensor) for t in (x, y, query_mask)):
        raise TabzooInputError(
            "x, y and query_mask must be torch tensors (float x and y, bool query_mask); convert labels of "
            "mixed types (e.g. str and int) to numbers first."
        )
    if not y.is_floating_point() or query_mask.dtype != torch.bool:
        raise TabzooInputError(f"y must be float and query_mask bool, got {y.dtype} and {query_mask.dtype}; convert them.")
    if x.dim() != 3:
        raise TabzooInputError(f"x must be [batch, rows, features], got shape {tuple(x.shape)}; add the batch axis.")
    if y.shape != x.shape[:2] or query_mask.shape != y.shape:
        raise TabzooInputError(
            f"y {tuple(y.shape)} and query_mask {tuple(query_mask.shape)} must both be [batch, rows] = {tuple(x.shape[:2])}."
        )
    if bool(query_mask.all(dim=1).any()):
        raise TabzooInputError("a set has every row flagged as a query (empty context); keep at least one context row.")
    if not torch.isfinite(torch.where(query_mask, torch.zeros_like(y), y)).all():
        raise TabzooInputError("y holds NaN or inf in a visible (non-query) row; impute it or flag the row as a query.")
    return model(x, None, query_mask=query_mask)


def multitask_forward(model: MultiTabNet, x: torch.Tensor, y: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
    """Multitask protocol: ``x [B, N, F]``, ``y [B, N, T]``, ``query_mask [B, N, T]`` ->
    ``[B, N, sum(n_out)]``; a row with every task masked is a query row."""
    if not all(isinstance(t, torch.Tensor) for t in (x, y, query_mask)):
        raise TabzooInputError("x, y and query_mask must be torch tensors (float x and y, bool query_mask); convert "
                               "labels of mixed types (e.g. str and int) to numbers first.")
    tasks = model.cfg.tasks
    if x.dim() != 3:
        raise TabzooInputError(f"x must be [batch, rows, features], got shape {tuple(x.shape)}; add the batch axis.")
    want = (*x.shape[:2], len(tasks))
    if not y.is_floating_point() or query_mask.dtype != torch.bool or y.shape != want or query_mask.shape != want:
        raise TabzooInputError(f"y (float) and query_mask (bool) must both be [batch, rows, tasks] = {want}; got "
                               f"{y.dtype} {tuple(y.shape)} and {query_mask.dtype} {tuple(query_mask.shape)}.")
    rows_q = query_mask.all(-1)
    if bool(rows_q.all(dim=1).any()):
        raise TabzooInputError("a set has every row flagged as a query (empty context); keep at least one context row.")
    seen = torch.where(query_mask, torch.zeros_like(y), y)
    if not torch.isfinite(seen).all():
        raise TabzooInputError("y holds NaN or inf in a visible (unmasked) cell; impute it or mask that task of the row.")
    for t, spec in enumerate(tasks):
        col = seen[..., t]
        if spec.n_classes and bool(((col < 0) | (col >= spec.n_classes) | (col != col.round())).any()):
            raise TabzooInputError(f"task {spec.name!r}: visible labels must be classes 0..{spec.n_classes - 1}; "
                                   "re-encode the labels.")
    return model(x, None, query_mask=rows_q)


def row_masks(n_context: int, n_rows: int) -> list[Mask]:
    """Inter-sample masks of the stack over rows (context first), for the static leak proofs."""
    return [context_query(n_context)] * CONFIG["n_layers"]


def make_case() -> ConformanceCase:
    """The registered case."""
    return ConformanceCase(
        name="multitab",
        make_model=make_model,
        capabilities=CAPABILITIES,
        config=CONFIG,
        protocol="multitask",
        forward=multitask_forward,
        masks=row_masks,
        n_features=4,
        n_classes=0,
        tasks=TASKS,
        max_features=64,
        max_classes=12,
        max_tasks=4,
        make_sized=make_sized,
        max_rows=24,
        description="tiny MultiTab-Net: T-/->T task tokens, inter-sample attention, query rows read context + self",
    )
