"""The multitask protocol's gallery (issue 23, item 1): a correct tiny multitask row-attention model
that READS labels (so label and task properties have something to break), one broken variant per
new property, and the property that must catch it.

:class:`TinyMultitask` keeps one stream per task: ``h_t = x W + (visible labels embedded)``, then
one masked attention layer over rows (context rows read the context; a query row, every task
masked, reads the context and itself) and a head per task. With ``share_labels`` each stream
embeds every task's visible labels (tasks help each other: NOT independent); without, stream
``t`` embeds only task ``t``'s labels (claims :data:`~tabzoo.testing.capabilities.INDEPENDENT_TASKS`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from tabzoo.errors import TabzooInputError
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import ConformanceCase, task_width
from torch import nn

from kit_models.broken import path_of, resolve

MAX_FEATURES, MAX_CLASSES, D = 8, 6, 8
TASKS = (2, 3, 0)


class TinyMultitask(nn.Module):
    """``forward(x [B, N, F], y [B, N, T], query_mask [B, N, T]) -> [B, N, sum of task widths]``."""

    share_labels = True

    def __init__(self, seed: int = 0, tasks: tuple[int, ...] = TASKS) -> None:
        super().__init__()
        self.tasks = tuple(tasks)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.embed = nn.Linear(MAX_FEATURES, D)
            self.label = nn.ModuleList(nn.Linear(max(k, 1), D) for k in self.tasks)
            self.qkv = nn.Linear(D, 3 * D)
            self.heads = nn.ModuleList(nn.Linear(D, task_width(k)) for k in self.tasks)

    def validate(self, x: torch.Tensor, y: torch.Tensor, qmask: torch.Tensor) -> None:
        if not all(isinstance(t, torch.Tensor) for t in (x, y, qmask)) or x.dim() != 3:
            raise TabzooInputError("x [batch, rows, features], y and query_mask [batch, rows, tasks] must be tensors.")
        want = (*x.shape[:2], len(self.tasks))
        if y.shape != want or qmask.shape != want or qmask.dtype != torch.bool or not y.is_floating_point():
            raise TabzooInputError(f"y (float) and query_mask (bool) must be {want}; fix their shapes.")
        if x.shape[2] > MAX_FEATURES or torch.isinf(x).any():
            raise TabzooInputError(f"x needs at most {MAX_FEATURES} finite (or NaN) features; select or clip them.")
        if bool(qmask.all(-1).all(1).any()):
            raise TabzooInputError("a set has no context row (every row masked in every task); keep one.")
        seen = torch.where(qmask, torch.zeros_like(y), y)
        if not torch.isfinite(seen).all():
            raise TabzooInputError("a visible label is NaN or inf; impute it or mask it.")
        for t, k in enumerate(self.tasks):
            col = seen[..., t]
            if k and bool(((col < 0) | (col >= k) | (col != col.round())).any()):
                raise TabzooInputError(f"task {t}: labels must be classes 0..{k - 1}; re-encode them.")

    def mask_of(self, qmask: torch.Tensor, t: int) -> torch.Tensor:
        """Which labels of task ``t`` are hidden ``[B, N]``."""
        return qmask[..., t]

    def sources(self, t: int) -> list[int]:
        """The tasks whose labels stream ``t`` embeds."""
        return list(range(len(self.tasks))) if self.share_labels else [t]

    def embed_label(self, y: torch.Tensor, hidden: torch.Tensor, s: int) -> torch.Tensor:
        """Task ``s``'s labels embedded ``[B, N, D]``, zero where ``hidden``."""
        k = self.tasks[s]
        col = torch.where(hidden, torch.zeros_like(y[..., s]), y[..., s])
        feat = nn.functional.one_hot(col.long().clamp(0, k - 1), k).to(y) if k else col.unsqueeze(-1)
        return self.label[s](feat) * (~hidden).unsqueeze(-1).to(y)

    def stream(self, x: torch.Tensor, y: torch.Tensor, qmask: torch.Tensor, t: int) -> torch.Tensor:
        h = self.embed(nn.functional.pad(torch.nan_to_num(x), (0, MAX_FEATURES - x.shape[2])))
        for s in self.sources(t):
            h = h + self.embed_label(y, self.mask_of(qmask, s), s)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        return h + nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=self.allowed(qmask, t))

    def allowed(self, qmask: torch.Tensor, t: int) -> torch.Tensor:
        """``[B, N, N]`` bool, which rows each row of stream ``t`` attends to: every row reads the
        context rows, a query row (every task masked) also itself."""
        query, n = qmask.all(-1), qmask.shape[1]  # [B, N]
        return (~query)[:, None, :] | torch.eye(n, dtype=torch.bool, device=qmask.device)

    def forward(self, x: torch.Tensor, y: torch.Tensor, qmask: torch.Tensor) -> torch.Tensor:
        self.validate(x, y, qmask)
        return torch.cat([head(self.stream(x, y, qmask, t)) for t, head in enumerate(self.heads)], dim=-1)


class IndependentMultitask(TinyMultitask):
    """Correct control that claims independent tasks: stream ``t`` embeds task ``t``'s labels only."""

    share_labels = False


class ReadsOtherTaskLabels(IndependentMultitask):
    """Predicts task ``t`` from task ``t+1``'s labels as well, ignoring that task's mask: task B's
    labels of query rows reach task A's outputs."""

    def stream(self, x: torch.Tensor, y: torch.Tensor, qmask: torch.Tensor, t: int) -> torch.Tensor:
        s = (t + 1) % len(self.tasks)
        return super().stream(x, y, qmask, t) + self.embed_label(y, torch.zeros_like(qmask[..., s]), s)


class SharesContextLabels(IndependentMultitask):
    """Claims independent tasks but embeds every task's visible labels in every stream."""

    share_labels = True


class MasksWrongTask(TinyMultitask):
    """Hides task ``t``'s labels with the mask column of task ``t+1``: a label missing for its task
    is read wherever the next task's label is known."""

    def mask_of(self, qmask: torch.Tensor, t: int) -> torch.Tensor:
        return qmask[..., (t + 1) % len(self.tasks)]


class TwoLogitBinary(TinyMultitask):
    """Gives a binary task two logits: the outputs no longer split into the declared tasks."""

    def __init__(self, seed: int = 0, tasks: tuple[int, ...] = TASKS) -> None:
        super().__init__(seed, tasks)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 1)
            self.heads = nn.ModuleList(nn.Linear(D, k if k >= 2 else 1) for k in self.tasks)


class PositionalInOneTask(TinyMultitask):
    """Adds each row's position to the LAST task's stream: that task's outputs follow row order, not
    the rows (the other tasks stay equivariant, so only a per-task comparison sees it)."""

    def stream(self, x: torch.Tensor, y: torch.Tensor, qmask: torch.Tensor, t: int) -> torch.Tensor:
        h = super().stream(x, y, qmask, t)
        if t != len(self.tasks) - 1:
            return h
        return h + 0.1 * torch.arange(x.shape[1], dtype=h.dtype, device=h.device)[None, :, None]


class ContextReadsQueryInOneTask(TinyMultitask):
    """In the LAST task's stream, context rows attend to query rows too: that task's context-row
    outputs depend on the query rows (the other tasks' do not)."""

    def allowed(self, qmask: torch.Tensor, t: int) -> torch.Tensor:
        if t != len(self.tasks) - 1:
            return super().allowed(qmask, t)
        context = ~qmask.all(-1)  # [B, N]
        return context[:, :, None] | super().allowed(qmask, t)  # context rows read every row


class LeaksFromFourTasks(ReadsOtherTaskLabels):
    """Correct with up to three tasks; from four tasks on (another code path, say a fused head
    group) it reads the next task's labels, query rows included. Only the task-count search
    reaches it (the gallery's case declares three tasks)."""

    def stream(self, x: torch.Tensor, y: torch.Tensor, qmask: torch.Tensor, t: int) -> torch.Tensor:
        if len(self.tasks) < 4:
            return TinyMultitask.stream(self, x, y, qmask, t)
        return super().stream(x, y, qmask, t)


def make_sized(model_cls: Any) -> Any:
    """``make_sized(seed, sizes)`` building ``model_cls`` for the searched task list."""
    return lambda seed, sizes: model_cls(seed, tuple(sizes["tasks"]))


def multitask_case(name: str = "tiny_multitask", model_cls: type[TinyMultitask] | str = TinyMultitask,
                   independent: bool = False) -> ConformanceCase:
    """A multitask case for ``model_cls`` (claims independent tasks when ``independent``)."""
    cls = resolve(model_cls)
    caps = cap.MULTITASK_DEFAULTS | {cap.QUERY_INDEPENDENCE} | ({cap.INDEPENDENT_TASKS} if independent else set())
    case = ConformanceCase(name, make_model=lambda seed: cls(seed), capabilities=caps, config={"d": D},
                           protocol="multitask", n_features=4, n_classes=0, tasks=TASKS, max_features=MAX_FEATURES,
                           max_classes=MAX_CLASSES, max_tasks=4, make_sized=make_sized(cls), max_rows=24)
    return replace(case, factory="kit_models.broken_multitask:multitask_case",
                   factory_args={"name": name, "model_cls": path_of(cls), "independent": independent})


BROKEN_MULTITASK: dict[str, list[tuple[str, Any]]] = {
    cap.TASK_ISOLATION: [
        ("reads task B's labels (query rows too) to predict task A",
         lambda: multitask_case("other_task_labels", ReadsOtherTaskLabels)),
        ("claims independent tasks but shares context labels across tasks",
         lambda: multitask_case("shares_context", SharesContextLabels, independent=True)),
    ],
    cap.TASK_MASK: [
        ("masks task t's labels with task t+1's mask column", lambda: multitask_case("wrong_mask", MasksWrongTask)),
        ("two logits for a binary task (outputs do not split into the declared tasks)",
         lambda: multitask_case("two_logit_binary", TwoLogitBinary)),
    ],
    cap.ROW_EQUIVARIANCE: [
        ("one task's outputs follow row positions", lambda: multitask_case("positional_task", PositionalInOneTask)),
    ],
    cap.NO_CONTEXT_QUERY_LEAK: [
        ("one task's context rows attend to the query rows",
         lambda: multitask_case("context_reads_query_task", ContextReadsQueryInOneTask)),
    ],
}
"""property -> [(what is broken, case factory)]: each case must FAIL that property (and
:class:`LeaksFromFourTasks` must fail ``task_isolation`` shrunk to four tasks: its own test)."""

CONTROLS_MULTITASK: list[tuple[str, Any]] = [
    ("tasks share their visible labels", lambda: multitask_case()),
    ("independent tasks", lambda: multitask_case("independent", IndependentMultitask, independent=True)),
]
"""Correct multitask models: they must pass every check the kit runs for them."""
