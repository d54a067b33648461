"""Tiny row-attention and relational models for the meta-tests, correct and broken.

* :class:`TinyRows` (rows protocol, NPT-like): ``forward(x [B, N, F], y [B, N], query_mask [B, N])
  -> [B, N, 1]``; labels of query rows are replaced by a learned mask token, then one dense
  softmax attention across rows. :class:`RowPositional` adds a row-index embedding;
  :class:`ReadsMaskedTargets` forgets to hide the masked targets.
* :class:`TinyRelational` (relational protocol): for a seed row ``(events, event_id, t)`` it
  averages the user's ``amount`` over events at or before ``t`` and the ``label`` over events whose
  label is available (``time + horizon <= t``, never the seed row). The broken variants read future
  rows, read unavailable labels, or depend on the stored row order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tabzoo.errors import TabzooInputError
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import ConformanceCase
from torch import nn

from kit_models.broken import gallery_case

F, D = 4, 8


class TinyRows(nn.Module):
    """Correct tiny row-attention regressor (rows protocol)."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.embed = nn.Linear(F + 1, D)
            self.mask_token = nn.Parameter(torch.randn(D))
            self.head = nn.Linear(D, 1)

    def rows(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def forward(self, x: torch.Tensor, y: torch.Tensor, query_mask: torch.Tensor) -> torch.Tensor:
        if not all(isinstance(t, torch.Tensor) for t in (x, y, query_mask)) or not y.is_floating_point():
            raise TabzooInputError("x, y and query_mask must be tensors (y float); encode mixed labels as numbers first.")
        if x.dim() != 3 or y.shape != x.shape[:2] or query_mask.shape != y.shape:
            raise TabzooInputError("x must be [batch, rows, features] with y and query_mask [batch, rows]; fix the shapes.")
        if bool(query_mask.all(dim=1).any()):
            raise TabzooInputError("an episode has no visible (unmasked) row: the context is empty; unmask some rows.")
        if bool(torch.isinf(x).any()):
            raise TabzooInputError("x holds inf; features may be NaN (missing) but not inf: clip or replace them.")
        visible = torch.where(query_mask, torch.zeros_like(y), y)
        if not torch.isfinite(visible).all():
            raise TabzooInputError("y holds NaN or inf in a visible row; impute it or mark the row as a query.")
        h = self.embed(torch.cat([self.rows(x), self.targets(y, visible)[..., None]], dim=-1))
        h = torch.where(query_mask[..., None], h + self.mask_token, h)
        h = h + torch.softmax(h @ h.transpose(1, 2) / D, dim=-1) @ h
        return self.head(h)

    def targets(self, y: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        return visible


class RowPositional(TinyRows):
    """Adds the row index to the first feature: outputs do not follow a row permutation."""

    def rows(self, x: torch.Tensor) -> torch.Tensor:
        x = x.clone()
        x[..., 0] += torch.arange(x.shape[1], dtype=x.dtype)
        return x


class ReadsMaskedTargets(TinyRows):
    """Feeds the raw targets, masked ones included."""

    def targets(self, y: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        return torch.nan_to_num(y)


def rows_case(name: str = "tiny_rows", model_cls: type[TinyRows] | str = TinyRows, **kw: Any) -> ConformanceCase:
    options: dict[str, Any] = dict(
        capabilities=cap.ROW_ATTENTION_DEFAULTS - {cap.NO_CONTEXT_QUERY_LEAK}, protocol="rows", n_features=F,
        n_classes=0, expected_failures={cap.NO_CONTEXT_QUERY_LEAK: (
            "transductive: context rows attend to query rows, shown by "
            "tests/test_conformance_broken.py::test_tiny_rows_context_rows_read_query_rows")},
    )
    return gallery_case("kit_models.broken_rows:rows_case", name, model_cls, options, kw)


class TinyRelational(nn.Module):
    """Correct tiny relational model: ``forward(db, seeds) -> [n_seeds, 3]``."""

    horizon_s = 0

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            self.head = nn.Linear(3, 3)

    def history(self, times: np.ndarray, t: Any, order: np.ndarray) -> np.ndarray:
        return times <= t

    def available(self, times: np.ndarray, t: Any, is_seed: np.ndarray) -> np.ndarray:
        return (times + np.timedelta64(self.horizon_s, "s") <= t) & ~is_seed

    def forward(self, db: Any, seeds: list[tuple[str, Any, Any]]) -> torch.Tensor:
        events = db.table("events")
        ids, users, times = events.column("event_id"), events.column("user_id"), events.column("time")
        amount, label = events.column("amount").astype(np.float64), events.column("label").astype(np.float64)
        feats = []
        for table, pk, t in seeds:
            if table != "events":
                raise TabzooInputError(f"seed table {table!r} is not predicted by this model; use 'events'.")
            if np.isnat(np.datetime64(t)):
                raise TabzooInputError(f"seed {pk} has no time (NaT); every seed needs the time to predict at.")
            row = np.flatnonzero(ids == pk)
            if len(row) != 1:
                raise TabzooInputError(f"seed event_id {pk} is not in table events; pass an existing primary key.")
            mine = users == users[row[0]]
            seen = mine & self.history(times, t, np.arange(len(times)))
            known = mine & self.available(times, t, ids == pk)
            feats.append([float(np.sort(amount[seen]).mean()) if seen.any() else 0.0,
                          float(np.sort(label[known]).sum()), float(seen.sum())])
        return self.head(torch.tensor(feats, dtype=torch.float32))


class ReadsFuture(TinyRelational):
    """Averages over all the user's events, later ones included."""

    def history(self, times: np.ndarray, t: Any, order: np.ndarray) -> np.ndarray:
        return np.ones_like(times, dtype=bool)


class ReadsUnavailableLabels(TinyRelational):
    """Uses labels as soon as the row exists, the seed row's own label included."""

    def available(self, times: np.ndarray, t: Any, is_seed: np.ndarray) -> np.ndarray:
        return times <= t


class StorageOrder(TinyRelational):
    """Keeps only the first half of the rows in storage order: shuffling the table changes the output."""

    def history(self, times: np.ndarray, t: Any, order: np.ndarray) -> np.ndarray:
        return (times <= t) & (order < len(order) // 2)


def _relational_bad_inputs(model: Any) -> list[tuple[str, Any]]:
    from tabzoo.testing.checks.relational import toy_database

    db, _ = toy_database(0)
    return [("seed row not in the database", lambda: model(db, [("events", -1, np.datetime64("2024-01-02"))]))]


def relational_case(name: str = "tiny_relational", model_cls: type[TinyRelational] | str = TinyRelational,
                    **kw: Any) -> ConformanceCase:
    options: dict[str, Any] = dict(capabilities=cap.RELATIONAL_DEFAULTS, protocol="relational",
                                   target=("events", "label"), horizon=0.0, bad_inputs=_relational_bad_inputs)
    return gallery_case("kit_models.broken_rows:relational_case", name, model_cls, options, kw)
