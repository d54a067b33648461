"""Loading a :class:`RelationalDatabase` from SQLite / DuckDB, and writing it to SQLite.

Column types when reading SQLite (first rule that matches the declared type, case-insensitive):
``BOOL`` -> BOOLEAN; ``DATE`` or ``TIME`` -> DATETIME (ISO 8601 text); ``INT`` -> NUMERIC;
``CHAR``/``CLOB``/``TEXT`` -> CATEGORICAL; ``REAL``/``FLOA``/``DOUB``/``NUMERIC``/``DEC`` -> NUMERIC;
anything else -> inferred from the values. Declared time columns are DATETIME. ``types=`` (a
``{table: {column: type}}`` mapping) overrides all of this. Composite primary or foreign keys can't
be represented: they are skipped with a logged warning. DuckDB columns are typed from their arrow
types (see :mod:`tabzoo.table.types`).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from tabzoo.table.columns import make_column
from tabzoo.table.errors import DTypeError, MissingFileError
from tabzoo.table.interop import columns_from_arrow, optional_import
from tabzoo.table.table import Table
from tabzoo.table.types import ColumnType, ForeignKey

if TYPE_CHECKING:
    from tabzoo.table.relational import RelationalDatabase

__all__ = ["read_duckdb", "read_sqlite", "sqlite_declared_type", "write_sqlite"]

log = logging.getLogger(__name__)

TypesMap = Mapping[str, Mapping[str, ColumnType | str]]


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sqlite_declared_type(decl: str) -> ColumnType | None:
    """The ColumnType for a SQLite declared column type (None = infer from values)."""
    d = (decl or "").upper()
    if "BOOL" in d:
        return ColumnType.BOOLEAN
    if "DATE" in d or "TIME" in d:
        return ColumnType.DATETIME
    if "INT" in d:
        return ColumnType.NUMERIC
    if any(s in d for s in ("CHAR", "CLOB", "TEXT")):
        return ColumnType.CATEGORICAL
    if any(s in d for s in ("REAL", "FLOA", "DOUB", "NUMERIC", "DEC")):
        return ColumnType.NUMERIC
    return None


def _existing(path: Any, what: str) -> str:
    p = Path(os.fspath(path))
    if not p.is_file():
        state = "is a folder, not a file" if p.is_dir() else "does not exist"
        raise MissingFileError(f"{what} database {str(p)!r} {state}; check the path")
    return str(p)


def _column_types(
    table: str, decl: dict[str, ColumnType | None], time_columns: Mapping[str, str], types: TypesMap
) -> dict[str, ColumnType | str | None]:
    out: dict[str, ColumnType | str | None] = dict(decl)
    if table in time_columns and time_columns[table] in out:
        out[time_columns[table]] = ColumnType.DATETIME
    out.update(types.get(table, {}))
    return out


def read_sqlite(
    cls: type[RelationalDatabase],
    path_or_connection: Any,
    time_columns: Mapping[str, str] | None = None,
    *,
    types: TypesMap | None = None,
    **kwargs: Any,
) -> RelationalDatabase:
    """Read every table of a SQLite database, its primary and foreign keys (from ``PRAGMA
    table_info`` / ``foreign_key_list``). A given connection is left open; a path is opened
    read-only. Extra ``kwargs`` go to :class:`RelationalDatabase`."""
    own = not isinstance(path_or_connection, sqlite3.Connection)
    con = (
        sqlite3.connect(f"file:{_existing(path_or_connection, 'SQLite')}?mode=ro", uri=True)
        if own
        else path_or_connection
    )
    time_columns, types = dict(time_columns or {}), types or {}
    try:
        try:
            con.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            raise DTypeError(
                f"{path_or_connection} is not a SQLite database ({exc}); check the path, or load "
                "other formats with RelationalDatabase.from_dataframes / from_duckdb"
            ) from exc
        names = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' "
                "ORDER BY rowid"
            )
        ]
        tables: dict[str, Table] = {}
        pks: dict[str, str] = {}
        fks = []
        for t in names:
            info = con.execute(f"PRAGMA table_info({_q(t)})").fetchall()
            cols = [r[1] for r in info]
            pk_cols = [r[1] for r in sorted(info, key=lambda r: r[5]) if r[5] > 0]
            if len(pk_cols) == 1:
                pks[t] = pk_cols[0]
            elif pk_cols:
                log.warning("table %s: composite primary key %s skipped", t, pk_cols)
            groups: dict[int, list[Any]] = {}
            for r in con.execute(f"PRAGMA foreign_key_list({_q(t)})").fetchall():
                groups.setdefault(r[0], []).append(r)
            for rows in groups.values():
                if len(rows) > 1:
                    log.warning("table %s: composite foreign key to %s skipped", t, rows[0][2])
                    continue
                _, _, ref, frm, to, *_ = rows[0]
                fks.append(ForeignKey(t, frm, ref, to))
            ctypes = _column_types(
                t, {r[1]: sqlite_declared_type(r[2]) for r in info}, time_columns, types
            )
            data = con.execute(f"SELECT * FROM {_q(t)}").fetchall()
            columns = []
            for j, c in enumerate(cols):
                values = np.empty(len(data), dtype=object)
                values[:] = [row[j] for row in data]
                columns.append(make_column(c, values, ctypes.get(c)))
            tables[t] = Table(columns)
    finally:
        if own:
            con.close()
    return cls(tables, pks, fks, time_columns, **kwargs)


def read_duckdb(
    cls: type[RelationalDatabase],
    path_or_connection: Any,
    time_columns: Mapping[str, str] | None = None,
    *,
    types: TypesMap | None = None,
    **kwargs: Any,
) -> RelationalDatabase:
    """Read every base table of the ``main`` schema of a DuckDB database with its single-column
    primary and foreign keys (from ``duckdb_constraints()``). Needs ``duckdb`` and ``pyarrow``."""
    duckdb = optional_import("duckdb", "duckdb")
    optional_import("pyarrow", "arrow")
    own = not hasattr(path_or_connection, "execute")
    con = (
        duckdb.connect(_existing(path_or_connection, "DuckDB"), read_only=True)
        if own
        else path_or_connection
    )
    time_columns, types = dict(time_columns or {}), types or {}

    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
                "AND table_type = 'BASE TABLE' ORDER BY table_name"
            ).fetchall()
        ]
        cons = con.execute(
            "SELECT table_name, constraint_type, constraint_column_names, referenced_table, "
            "referenced_column_names FROM duckdb_constraints() WHERE schema_name = 'main' AND "
            "constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')"
        ).fetchall()
        tables = {}
        for t in names:
            rel = con.sql(f"SELECT * FROM {_q(t)}")
            fetch = getattr(rel, "to_arrow_table", None) or rel.arrow  # duckdb 2.x / 1.x
            arrow = fetch()
            ctypes = _column_types(t, dict.fromkeys(arrow.column_names), time_columns, types)
            given = {k: v for k, v in ctypes.items() if v is not None}
            tables[t] = Table(columns_from_arrow(arrow, given))
    finally:
        if own:
            con.close()
    pks: dict[str, str] = {}
    fks = []
    for table, kind, cols, ref, ref_cols in cons:
        if len(cols) != 1:
            log.warning("table %s: composite %s %s skipped", table, kind.lower(), cols)
        elif kind == "PRIMARY KEY":
            pks[table] = cols[0]
        else:
            fks.append(ForeignKey(table, cols[0], ref, ref_cols[0] if ref_cols else None))
    return cls(tables, pks, fks, time_columns, **kwargs)


def _sql_type(table: Table, name: str) -> str:
    t = table.column_type(name)
    if t is ColumnType.NUMERIC:
        return "INTEGER" if table.column(name).dtype.kind == "i" else "REAL"
    if t is ColumnType.BOOLEAN:
        return "BOOLEAN"
    if t is ColumnType.DATETIME:
        return "DATETIME"
    if t is ColumnType.CATEGORICAL:
        cats = table.categories(name)
        if cats and all(isinstance(c, int | np.integer) for c in cats):
            return "INTEGER"
        if cats and all(isinstance(c, float | np.floating) for c in cats):
            return "REAL"
    return "TEXT"


def _sql_values(table: Table, name: str) -> list[Any]:
    values = table.column(name)
    miss = table.missing[:, table.names.index(name)]
    if table.column_type(name) is ColumnType.DATETIME:
        out: list[Any] = np.datetime_as_string(values).tolist()
    elif values.dtype.kind == "f":
        out = values.tolist()
    else:
        out = [v.item() if isinstance(v, np.generic) else v for v in values.tolist()]
    return [None if m else v for v, m in zip(out, miss.tolist(), strict=True)]


def write_sqlite(db: RelationalDatabase, path_or_connection: Any) -> None:
    """Write ``db`` to a new SQLite file (or an open connection): one table each, with PRIMARY
    KEY and FOREIGN KEY clauses and declared types that :func:`read_sqlite` maps back."""
    own = not isinstance(path_or_connection, sqlite3.Connection)
    if own and Path(os.fspath(path_or_connection)).exists():
        raise FileExistsError(
            f"{os.fspath(path_or_connection)!r} already exists; delete it or choose a new path"
        )
    con = sqlite3.connect(os.fspath(path_or_connection)) if own else path_or_connection
    try:
        for name, table in db.tables.items():
            defs = [f"{_q(c)} {_sql_type(table, c)}" for c in table.names]
            pk = db.primary_keys.get(name)
            if pk is not None:
                defs.append(f"PRIMARY KEY ({_q(pk)})")
            for fk in db.parents(name):
                defs.append(
                    f"FOREIGN KEY ({_q(fk.column)}) REFERENCES {_q(fk.ref_table)}"
                    f"({_q(fk.ref_column or '')})"
                )
            con.execute(f"CREATE TABLE {_q(name)} ({', '.join(defs)})")
            cols = [_sql_values(table, c) for c in table.names]
            rows = list(zip(*cols, strict=True)) if cols else []
            marks = ", ".join("?" * table.n_columns)
            con.executemany(f"INSERT INTO {_q(name)} VALUES ({marks})", rows)
        con.commit()
    finally:
        if own:
            con.close()
