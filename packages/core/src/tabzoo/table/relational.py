"""``RelationalDatabase``: tables linked by primary and foreign keys, with time columns.

Rules (checked on construction; each violation raises a specific TabzooInputError):

- a primary key is one existing column of its table, with no missing and no duplicate values;
- a foreign key ``(table, column) -> (ref_table, ref_column)`` names existing tables and columns;
  ``ref_column`` defaults to ``ref_table``'s primary key and must be unique; key types must be
  compatible (numeric with numeric; categorical/text with categorical/text); every non-missing
  foreign-key value must exist in the referenced column (``dangling="null"`` marks dangling values
  missing instead, with a logged warning); missing foreign-key values are allowed (nullable keys);
- a time column is a DATETIME column with no missing value. With ``require_sorted_time=True`` each
  timed table's rows must also be in non-decreasing time order (use :meth:`sort_by_time`).

Composite keys are not represented (one column per key).

Foreign-key cycles are valid input, as in SQL: a table may reference itself (an employee's
manager) and tables may reference each other (``a -> b -> a``). They are kept as they are;
:meth:`RelationalDatabase.fk_cycles` lists them for models that need an acyclic schema. Rows out
of time order are valid too unless ``require_sorted_time=True``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np

from tabzoo.table.errors import (
    DTypeError,
    DuplicateKeyError,
    ForeignKeyError,
    PrimaryKeyError,
    TimeColumnError,
    UnknownTableError,
)
from tabzoo.table.table import Table
from tabzoo.table.types import ColumnType, ForeignKey

__all__ = ["ForeignKey", "RelationalDatabase"]

log = logging.getLogger(__name__)

_KEY_FAMILY = {
    ColumnType.NUMERIC: "numeric",
    ColumnType.CATEGORICAL: "string",
    ColumnType.TEXT: "string",
    ColumnType.BOOLEAN: "boolean",
    ColumnType.DATETIME: "datetime",
}


def _present(table: Table, column: str) -> tuple[np.ndarray, np.ndarray]:
    """Non-missing values of a key column and their row indices."""
    values, miss = table.column(column), table.missing[:, table.names.index(column)]
    rows = np.flatnonzero(~miss)
    return values[rows], rows


class RelationalDatabase:
    """Named :class:`Table` objects with primary keys, foreign keys and time columns.

    :param tables: ``{name: Table}``.
    :param primary_keys: ``{table: column}``.
    :param foreign_keys: :class:`ForeignKey` list; stored resolved (``ref_column`` filled in).
    :param time_columns: ``{table: datetime column}`` giving each row's timestamp.
    :param require_sorted_time: also require each timed table sorted by time.
    :param dangling: ``"raise"`` (default) or ``"null"``: what to do with a foreign-key value
        that matches no referenced row.
    """

    def __init__(
        self,
        tables: Mapping[str, Table],
        primary_keys: Mapping[str, str] | None = None,
        foreign_keys: Iterable[ForeignKey] = (),
        time_columns: Mapping[str, str] | None = None,
        *,
        require_sorted_time: bool = False,
        dangling: Literal["raise", "null"] = "raise",
    ) -> None:
        if dangling not in ("raise", "null"):
            raise DTypeError(f"dangling={dangling!r}; use 'raise' or 'null'")
        self._tables: dict[str, Table] = {}
        for name, t in tables.items():
            if not isinstance(t, Table):
                raise DTypeError(
                    f"table {name!r} is a {type(t).__name__}, not a tabzoo Table; build it with "
                    "Table.from_pandas (or use RelationalDatabase.from_dataframes)"
                )
            self._tables[str(name)] = t
        self._pks = dict(primary_keys or {})
        self._times = dict(time_columns or {})
        for table, col in self._pks.items():
            self._check_pk(table, col)
        self._fks = [self._check_fk(fk, dangling) for fk in foreign_keys]
        for table, col in self._times.items():
            self._check_time(table, col, require_sorted_time)

    # ------------------------------------------------------------- validation
    def _check_pk(self, table: str, col: str) -> None:
        if table not in self._tables:
            raise PrimaryKeyError(
                f"primary key given for table {table!r}, which is not in the database "
                f"{sorted(self._tables)}; add the table or drop the key"
            )
        t = self._tables[table]
        if col not in t:
            raise PrimaryKeyError(
                f"primary key {table}.{col} names no column of {table!r} {list(t.names)}"
            )
        miss = t.missing[:, t.names.index(col)]
        if miss.any():
            raise PrimaryKeyError(
                f"primary key {table}.{col} is missing in row {int(np.flatnonzero(miss)[0])}; "
                "give every row a key, or drop those rows"
            )
        values = t.column(col)
        seen: dict[Any, int] = {}
        for i, v in enumerate(values.tolist()):
            if v in seen:
                raise DuplicateKeyError(
                    f"primary key {table}.{col} has value {v!r} in rows {seen[v]} and {i}; keys "
                    "must be unique: deduplicate the rows or choose another key column"
                )
            seen[v] = i

    def _check_fk(self, fk: ForeignKey, dangling: str) -> ForeignKey:
        if not isinstance(fk, ForeignKey):
            raise DTypeError(f"foreign key {fk!r} is not a ForeignKey(table, column, ref_table)")
        for tname, role in ((fk.table, "its table"), (fk.ref_table, "the table it points to")):
            if tname not in self._tables:
                raise ForeignKeyError(
                    f"foreign key {fk}: {role} {tname!r} is not in the database "
                    f"{sorted(self._tables)}; add that table or drop the foreign key"
                )
        child, parent = self._tables[fk.table], self._tables[fk.ref_table]
        if fk.column not in child:
            raise ForeignKeyError(f"foreign key {fk}: {fk.table!r} has no column {fk.column!r}")
        ref_col = fk.ref_column or self._pks.get(fk.ref_table)
        if ref_col is None:
            raise ForeignKeyError(
                f"foreign key {fk}: {fk.ref_table!r} has no primary key; declare one in "
                "primary_keys or give ref_column"
            )
        if ref_col not in parent:
            raise ForeignKeyError(f"foreign key {fk}: {fk.ref_table!r} has no column {ref_col!r}")
        resolved = ForeignKey(fk.table, fk.column, fk.ref_table, ref_col)
        ct, pt = child.column_type(fk.column), parent.column_type(ref_col)
        if _KEY_FAMILY[ct] != _KEY_FAMILY[pt]:
            raise ForeignKeyError(
                f"foreign key {resolved}: {ct.value} values can't match {pt.value} keys; give "
                "both columns the same type (Table.with_types)"
            )
        ref_values, _ = _present(parent, ref_col)
        ref_set = set(ref_values.tolist())
        if ref_col != self._pks.get(fk.ref_table) and len(ref_set) != len(ref_values):
            raise ForeignKeyError(
                f"foreign key {resolved}: the referenced column has duplicate values, so a "
                "reference is ambiguous; point the key at a unique column"
            )
        values, rows = _present(child, fk.column)
        found = np.fromiter((v in ref_set for v in values.tolist()), dtype=bool, count=len(values))
        if not found.all():
            bad = rows[~found]
            if dangling == "raise":
                raise ForeignKeyError(
                    f"foreign key {resolved}: row {int(bad[0])} of {fk.table!r} holds "
                    f"{values[~found].tolist()[0]!r}, which no row of {fk.ref_table!r} has "
                    f"({len(bad)} such rows); add the missing rows to {fk.ref_table!r}, set "
                    "those values missing, or pass dangling='null'"
                )
            log.warning("foreign key %s: %d dangling values set missing", resolved, len(bad))
            mask = np.zeros(child.n_rows, dtype=bool)
            mask[bad] = True
            self._tables[fk.table] = child.with_missing(fk.column, mask)
        return resolved

    def _check_time(self, table: str, col: str, require_sorted: bool) -> None:
        if table not in self._tables:
            raise TimeColumnError(
                f"time column given for table {table!r}, which is not in the database; add the "
                "table or drop the entry"
            )
        t = self._tables[table]
        if col not in t:
            raise TimeColumnError(f"time column {table}.{col} names no column of {list(t.names)}")
        if t.column_type(col) is not ColumnType.DATETIME:
            raise TimeColumnError(
                f"time column {table}.{col} is {t.column_type(col).value}, not datetime; convert "
                f"it, e.g. table.with_types({{{col!r}: ColumnType.DATETIME}})"
            )
        ts = t.column(col)
        if np.isnat(ts).any():
            row = int(np.flatnonzero(np.isnat(ts))[0])
            raise TimeColumnError(
                f"time column {table}.{col} has no timestamp in row {row}; every row needs one: "
                "fill it or drop the row"
            )
        if require_sorted and len(ts) > 1 and (ts[1:] < ts[:-1]).any():
            row = int(np.flatnonzero(ts[1:] < ts[:-1])[0]) + 1
            raise TimeColumnError(
                f"time column {table}.{col} decreases at row {row} ({ts[row]} after "
                f"{ts[row - 1]}); sort the rows by time (db.sort_by_time()) or pass "
                "require_sorted_time=False"
            )

    # --------------------------------------------------------------- access
    @property
    def tables(self) -> dict[str, Table]:
        """``{name: Table}`` (a copy of the mapping)."""
        return dict(self._tables)

    @property
    def table_names(self) -> tuple[str, ...]:
        """Table names, in insertion order."""
        return tuple(self._tables)

    @property
    def primary_keys(self) -> dict[str, str]:
        """``{table: primary-key column}``."""
        return dict(self._pks)

    @property
    def foreign_keys(self) -> list[ForeignKey]:
        """Foreign keys, each with ``ref_column`` resolved."""
        return list(self._fks)

    @property
    def time_columns(self) -> dict[str, str]:
        """``{table: time column}``."""
        return dict(self._times)

    def table(self, name: str) -> Table:
        """The table called ``name``."""
        try:
            return self._tables[name]
        except KeyError:
            raise UnknownTableError(
                f"no table {name!r}; the database has {sorted(self._tables)}"
            ) from None

    def __getitem__(self, name: str) -> Table:
        return self.table(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tables

    def primary_key(self, table: str) -> str | None:
        """The primary-key column of ``table``, or None."""
        self.table(table)
        return self._pks.get(table)

    def parents(self, table: str) -> list[ForeignKey]:
        """Foreign keys going out of ``table`` (to the tables it references)."""
        self.table(table)
        return [fk for fk in self._fks if fk.table == table]

    def children(self, table: str) -> list[ForeignKey]:
        """Foreign keys pointing at ``table`` (from the tables that reference it)."""
        self.table(table)
        return [fk for fk in self._fks if fk.ref_table == table]

    def fk_cycles(self) -> list[list[str]]:
        """Every cycle of the foreign-key graph (child table -> referenced table), each as the list
        of its tables starting from its smallest name; a self-reference is ``[table]``. Sorted."""
        graph: dict[str, set[str]] = {n: set() for n in self._tables}
        for fk in self._fks:
            graph[fk.table].add(fk.ref_table)
        found: set[tuple[str, ...]] = set()

        def walk(start: str, node: str, path: list[str]) -> None:
            for nxt in sorted(graph[node]):
                if nxt == start:
                    found.add(tuple(path))
                elif nxt > start and nxt not in path:  # each cycle once, from its smallest table
                    walk(start, nxt, [*path, nxt])

        for start in sorted(graph):
            walk(start, start, [start])
        return [list(c) for c in sorted(found)]

    def timestamps(self, table: str) -> np.ndarray | None:
        """Row timestamps ``[rows]`` datetime64 of ``table``, or None if it has no time column."""
        col = self._times.get(table)
        return None if col is None else self.table(table).column(col)

    def sort_by_time(self) -> RelationalDatabase:
        """A copy whose timed tables are stably sorted by their time column."""
        tables = {
            n: t.take(np.argsort(t.column(self._times[n]), kind="stable"))
            if n in self._times
            else t
            for n, t in self._tables.items()
        }
        return RelationalDatabase(
            tables, self._pks, self._fks, self._times, require_sorted_time=True
        )

    def __repr__(self) -> str:
        parts = [f"{n}({t.n_rows}x{t.n_columns})" for n, t in self._tables.items()]
        return f"RelationalDatabase({', '.join(parts)}; {len(self._fks)} foreign keys)"

    # ------------------------------------------------------------ loaders
    @classmethod
    def from_dataframes(
        cls,
        frames: Mapping[str, Any],
        primary_keys: Mapping[str, str] | None = None,
        foreign_keys: Iterable[ForeignKey] = (),
        time_columns: Mapping[str, str] | None = None,
        types: Mapping[str, Mapping[str, ColumnType | str]] | None = None,
        **kwargs: Any,
    ) -> RelationalDatabase:
        """From ``{name: pandas.DataFrame}``; ``types`` is ``{table: {column: type}}``.

        Time columns that pandas holds as strings are parsed as DATETIME (explicitly requested).
        """
        merged: dict[str, dict[str, ColumnType | str]] = {k: dict(v) for k, v in (types or {}).items()}
        for table, col in (time_columns or {}).items():
            if table in frames and col in [str(c) for c in frames[table].columns]:
                merged.setdefault(table, {}).setdefault(col, ColumnType.DATETIME)
        tables = {n: Table.from_pandas(df, types=merged.get(n)) for n, df in frames.items()}
        return cls(tables, primary_keys, foreign_keys, time_columns, **kwargs)

    @classmethod
    def from_sqlite(
        cls, path_or_connection: Any, time_columns: Mapping[str, str] | None = None, **kwargs: Any
    ) -> RelationalDatabase:
        """From a SQLite file or ``sqlite3.Connection``; see :func:`relational_io.read_sqlite`."""
        from tabzoo.table.relational_io import read_sqlite

        return read_sqlite(cls, path_or_connection, time_columns, **kwargs)

    @classmethod
    def from_duckdb(
        cls, path_or_connection: Any, time_columns: Mapping[str, str] | None = None, **kwargs: Any
    ) -> RelationalDatabase:
        """From a DuckDB file or connection (needs ``duckdb``); see ``relational_io.read_duckdb``."""
        from tabzoo.table.relational_io import read_duckdb

        return read_duckdb(cls, path_or_connection, time_columns, **kwargs)

    def to_sqlite(self, path_or_connection: Any) -> None:
        """Write every table, with PRIMARY KEY / FOREIGN KEY clauses, to a SQLite database."""
        from tabzoo.table.relational_io import write_sqlite

        write_sqlite(self, path_or_connection)
