"""Tasks on a :class:`~tabzoo.table.RelationalDatabase` and the temporal split.

A task is ``(entity table, target column, horizon, timestamps)``: predict the target of a row
of the entity table as of its timestamp ``t``; the label becomes *available* at ``t + horizon``.
``hidden`` lists further outcome columns of the entity table that are only known with the label
(e.g. ``dep_delay`` next to ``arr_delay``): the sampler shows them, like the label, only for
rows whose ``t + horizon`` is at or before the seed time, and never for the seed row.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from tabzoo.errors import TabzooInputError
from tabzoo.table import ColumnType

__all__ = ["RelationalTask", "Split", "Seed", "task_seeds", "temporal_split", "labels_for", "to_seconds"]

Seed = tuple[str, Any, Any]  # (table, primary key, timestamp datetime64)


def to_seconds(t: Any) -> np.ndarray:
    """datetime64 (any unit) -> int64 seconds since the epoch."""
    return np.asarray(t).astype("datetime64[s]").astype(np.int64)


def normalise_horizons(horizons: Any, target: str | None, hidden: tuple[str, ...]) -> tuple[tuple[str, float], ...]:
    """``{column: seconds}`` (or pairs) -> sorted ``(column, seconds)`` pairs, checked: each names a
    hidden column (not the target, whose horizon is ``horizon_s``) and is finite and >= 0."""
    pairs = sorted((str(c), float(h)) for c, h in (horizons.items() if isinstance(horizons, dict) else horizons))
    for c, h in pairs:
        if c == target or c not in hidden:
            raise TabzooInputError(f"column_horizons names {c!r}; list hidden columns {list(hidden)} only "
                                   "(the target's horizon is horizon_s)")
        if not np.isfinite(h) or h < 0:
            raise TabzooInputError(f"column_horizons[{c!r}]={h}; give a finite horizon >= 0 seconds")
    return tuple(pairs)


@dataclass(frozen=True)
class RelationalTask:
    """One prediction task.

    :param entity_table: the table whose rows are predicted (needs a primary and time column).
    :param target: the target column of ``entity_table``.
    :param kind: ``"classification"`` (boolean / two-valued target) or ``"regression"``.
    :param horizon_s: seconds after a row's time at which its label becomes available.
    :param hidden: other outcome columns revealed with the label.
    :param lookback_s: children older than ``seed time - lookback_s`` are not sampled.
    :param column_horizons: ``{hidden column: seconds}``, a hidden column's own availability
        (default: with the label, ``horizon_s``), earlier or later than the label's. E.g. "departed
        more than 15 minutes late" is known 15 minutes after the scheduled departure, the exact
        arrival delay only after the arrival (stored as sorted ``(column, seconds)`` pairs).
    """

    entity_table: str
    target: str
    kind: Literal["classification", "regression"]
    horizon_s: float = 0.0
    hidden: tuple[str, ...] = field(default_factory=tuple)
    lookback_s: float = 30 * 86400.0
    name: str = ""
    column_horizons: Any = ()

    def __post_init__(self) -> None:
        if self.kind not in ("classification", "regression"):
            raise TabzooInputError(f"task kind {self.kind!r}; use 'classification' or 'regression'")
        if not np.isfinite(self.horizon_s) or self.horizon_s < 0:
            raise TabzooInputError(f"horizon_s={self.horizon_s}; give a finite horizon >= 0 seconds")
        if not np.isfinite(self.lookback_s) or self.lookback_s <= 0:
            raise TabzooInputError(f"lookback_s={self.lookback_s}; give a positive look-back window")
        object.__setattr__(self, "hidden", tuple(self.hidden))
        object.__setattr__(self, "column_horizons", normalise_horizons(self.column_horizons, self.target, self.hidden))

    def horizon_of(self, column: str) -> float:
        """Seconds after a row's time at which ``column`` (target or hidden) becomes available."""
        return dict(self.column_horizons).get(column, float(self.horizon_s))

    @property
    def label_columns(self) -> tuple[str, ...]:
        """The target and the hidden outcome columns."""
        return (self.target, *[c for c in self.hidden if c != self.target])

    def validate(self, db: Any) -> None:
        """Raise :class:`TabzooInputError` naming the fix when ``db`` can't hold this task."""
        t = db.table(self.entity_table)
        if db.primary_key(self.entity_table) is None:
            raise TabzooInputError(f"entity table {self.entity_table!r} needs a primary key to name its rows")
        if self.entity_table not in db.time_columns:
            raise TabzooInputError(
                f"entity table {self.entity_table!r} has no time column; declare one in time_columns so the "
                "task has timestamps")
        for c in self.label_columns:
            if c not in t:
                raise TabzooInputError(f"task column {c!r} is not a column of {self.entity_table!r} {list(t.names)}")
        ctype = t.column_type(self.target)
        if self.kind == "regression" and ctype is not ColumnType.NUMERIC:
            raise TabzooInputError(f"regression target {self.target!r} is {ctype.value}; use a numeric column")
        if self.kind == "classification" and ctype not in (ColumnType.BOOLEAN, ColumnType.NUMERIC):
            raise TabzooInputError(
                f"classification target {self.target!r} is {ctype.value}; give a boolean (or 0/1) column")


@dataclass
class Split:
    """Seeds and labels of one part of a temporal split."""

    seeds: list[Seed]
    y: np.ndarray

    def __len__(self) -> int:
        return len(self.seeds)


def labels_for(db: Any, task: RelationalTask) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(primary keys, times datetime64[s], labels float64)`` of the entity rows with a label."""
    task.validate(db)
    t = db.table(task.entity_table)
    pk = t.column(db.primary_key(task.entity_table))
    times = t.column(db.time_columns[task.entity_table]).astype("datetime64[s]")
    y = t.column(task.target).astype(np.float64)
    miss = t.missing[:, t.names.index(task.target)]
    keep = ~miss & np.isfinite(y)
    if task.kind == "classification":
        bad = ~np.isin(y[keep], (0.0, 1.0))
        if bad.any():
            raise TabzooInputError(f"classification target {task.target!r} holds values other than 0/1 "
                                   f"(e.g. {y[keep][bad][0]}); binarise it first")
    return pk[keep], times[keep], y[keep]


def task_seeds(db: Any, task: RelationalTask, start: Any = None, end: Any = None,
               label_by: Any = None) -> Split:
    """Seeds of entity rows with ``start <= t < end`` (None = open) and a label; with
    ``label_by``, only rows whose label is available by then (``t + horizon <= label_by``).
    Sorted by (time, key), so the result does not depend on the stored row order."""
    pk, times, y = labels_for(db, task)
    ts = to_seconds(times)
    keep = np.ones(len(ts), dtype=bool)
    if start is not None:
        keep &= ts >= to_seconds(np.datetime64(start))
    if end is not None:
        keep &= ts < to_seconds(np.datetime64(end))
    if label_by is not None:
        keep &= ts + task.horizon_s <= to_seconds(np.datetime64(label_by))
    idx = np.flatnonzero(keep)
    order = sorted(idx.tolist(), key=lambda i: (int(ts[i]), str(pk[i])))
    return Split([(task.entity_table, pk[i].item() if hasattr(pk[i], "item") else pk[i], times[i]) for i in order],
                 y[order])


def temporal_split(db: Any, task: RelationalTask, val_start: Any, test_start: Any,
                   test_end: Any = None) -> dict[str, Split]:
    """Train / val / test by time: train rows have their label by ``val_start``; val rows lie in
    ``[val_start, test_start)`` with their label by ``test_start``; test rows in
    ``[test_start, test_end)``. Normalisation statistics are fitted at ``val_start``."""
    if np.datetime64(val_start) >= np.datetime64(test_start):
        raise TabzooInputError(f"val_start {val_start} must come before test_start {test_start}")
    return {
        "train": task_seeds(db, task, end=val_start, label_by=val_start),
        "val": task_seeds(db, task, start=val_start, end=test_start, label_by=test_start),
        "test": task_seeds(db, task, start=test_start, end=test_end),
    }
