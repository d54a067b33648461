"""``MultiTargetTable``: features plus several named targets (multi-task learning)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tabzoo.table.errors import DTypeError, DuplicateColumnError, InvalidLabelError, ShapeError
from tabzoo.table.table import Table
from tabzoo.table.types import ColumnType

__all__ = ["MultiTargetTable"]

_TASK = {
    ColumnType.NUMERIC: "regression",
    ColumnType.CATEGORICAL: "classification",
    ColumnType.BOOLEAN: "classification",
}


class MultiTargetTable:
    """Features ``[rows, features]`` and targets ``[rows, targets]`` over the same rows.

    Targets are NUMERIC (regression), CATEGORICAL or BOOLEAN (classification). A target may be
    missing on some rows (partially labelled multi-task data); a numeric target may not be inf.

    :raises ShapeError: row counts differ, or there is no target.
    :raises DuplicateColumnError: a name is both a feature and a target.
    :raises DTypeError: a target is DATETIME or TEXT.
    :raises InvalidLabelError: a numeric target holds inf.
    """

    __slots__ = ("_features", "_targets")

    def __init__(self, features: Table, targets: Table) -> None:
        if not isinstance(features, Table) or not isinstance(targets, Table):
            raise DTypeError("features and targets must be tabzoo Tables (see Table.from_pandas)")
        if targets.n_columns == 0:
            raise ShapeError("a MultiTargetTable needs at least one target column")
        if features.n_rows != targets.n_rows and features.n_columns:
            raise ShapeError(
                f"features have {features.n_rows} rows but targets have {targets.n_rows}; "
                "targets must be given for the same rows, in the same order"
            )
        both = sorted(set(features.names) & set(targets.names))
        if both:
            raise DuplicateColumnError(
                f"column(s) {both} are both features and targets; drop them from the features"
            )
        for name, t in targets.types.items():
            if t not in _TASK:
                raise DTypeError(
                    f"target {name!r} is {t.value}; targets must be numeric, categorical or "
                    f"boolean: convert it with with_types or drop it"
                )
            if t is ColumnType.NUMERIC:
                v = targets.column(name).astype(np.float64)
                if np.isinf(v).any():
                    row = int(np.flatnonzero(np.isinf(v))[0])
                    raise InvalidLabelError(
                        f"target {name!r} row {row} is {v[row]}; targets must be finite: fix the "
                        "value or mark it missing (NaN)"
                    )
        self._features = features
        self._targets = targets

    @classmethod
    def from_table(cls, table: Table, targets: Sequence[str]) -> MultiTargetTable:
        """Split ``table`` into features and the columns ``targets``."""
        targets = list(targets)
        return cls(table.drop(targets), table.select(targets))

    @classmethod
    def from_pandas(
        cls, df: Any, targets: Sequence[str], types: Mapping[str, ColumnType | str] | None = None
    ) -> MultiTargetTable:
        """From a DataFrame whose columns ``targets`` are the targets."""
        return cls.from_table(Table.from_pandas(df, types=types), targets)

    @property
    def features(self) -> Table:
        """The feature table ``[rows, features]``."""
        return self._features

    @property
    def targets(self) -> Table:
        """The target table ``[rows, targets]``."""
        return self._targets

    @property
    def target_names(self) -> tuple[str, ...]:
        """Target names, in order."""
        return self._targets.names

    @property
    def target_types(self) -> dict[str, ColumnType]:
        """``{target: ColumnType}``."""
        return self._targets.types

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return self._targets.n_rows

    @property
    def n_targets(self) -> int:
        """Number of targets."""
        return self._targets.n_columns

    @property
    def target_missing(self) -> np.ndarray:
        """``[rows, targets]`` bool, True where a target is unknown."""
        return self._targets.missing

    def task(self, name: str) -> str:
        """``"regression"`` for a numeric target, ``"classification"`` otherwise."""
        return _TASK[self._targets.column_type(name)]

    def target(self, name: str) -> np.ndarray:
        """Values of target ``name`` ``[rows]``."""
        return self._targets.column(name)

    def take(self, rows: Any) -> MultiTargetTable:
        """Rows ``rows`` (int indices or bool mask) of features and targets."""
        return MultiTargetTable(self._features.take(rows), self._targets.take(rows))

    def to_table(self) -> Table:
        """Features then targets as one table."""
        cols = [*self._features._columns, *self._targets._columns]
        return Table(cols)

    def __len__(self) -> int:
        return self.n_rows

    def __repr__(self) -> str:
        return (
            f"MultiTargetTable({self.n_rows} rows, {self._features.n_columns} features, "
            f"targets={list(self.target_names)})"
        )
