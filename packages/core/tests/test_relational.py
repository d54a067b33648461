"""RelationalDatabase: keys, time columns, SQLite / DuckDB / DataFrame loaders."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from tabzoo.table import (
    ColumnType,
    DuplicateKeyError,
    ForeignKey,
    ForeignKeyError,
    PrimaryKeyError,
    RelationalDatabase,
    Table,
    TimeColumnError,
    UnknownTableError,
)

SCHEMA = """
CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, vip BOOLEAN, joined DATE);
CREATE TABLE orders (
    oid INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id), amount REAL,
    ts TIMESTAMP, note VARCHAR(20)
);
CREATE TABLE items (order_id INTEGER, sku TEXT, PRIMARY KEY (order_id, sku),
                    FOREIGN KEY (order_id) REFERENCES orders);
"""


def _sqlite(path: Path) -> Path:
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.executemany(
        "INSERT INTO users VALUES (?, ?, ?, ?)",
        [(1, "ann", 1, "2020-01-01"), (2, "bob", 0, None), (3, "cy", None, "2020-03-01")],
    )
    con.executemany(
        "INSERT INTO orders VALUES (?, ?, ?, ?, ?)",
        [
            (10, 1, 9.5, "2021-01-01 10:00:00", "x"),
            (11, 2, None, "2021-01-02 11:00:00", None),
            (12, None, 3.0, "2021-01-03 12:00:00", "y"),
        ],
    )
    con.executemany("INSERT INTO items VALUES (?, ?)", [(10, "a"), (10, "b"), (12, "a")])
    con.commit()
    con.close()
    return path


def frames() -> dict[str, pd.DataFrame]:
    return {
        "users": pd.DataFrame({"id": [1, 2, 3], "name": ["ann", "bob", "cy"]}),
        "orders": pd.DataFrame(
            {
                "oid": [10, 11, 12],
                "user_id": [1, 3, None],
                "ts": ["2021-01-01", "2021-01-02", "2021-01-03"],
            }
        ),
    }


def db_from(fr: dict[str, pd.DataFrame], **kw: object) -> RelationalDatabase:
    args: dict[str, object] = dict(
        primary_keys={"users": "id", "orders": "oid"},
        foreign_keys=[ForeignKey("orders", "user_id", "users")],
        time_columns={"orders": "ts"},
    )
    args.update(kw)
    return RelationalDatabase.from_dataframes(fr, **args)  # type: ignore[arg-type]


def test_from_dataframes_structure() -> None:
    db = db_from(frames())
    assert db.table_names == ("users", "orders")
    assert db.foreign_keys == [ForeignKey("orders", "user_id", "users", "id")]
    assert db.children("users") == db.foreign_keys and db.parents("users") == []
    assert db.parents("orders") == db.foreign_keys
    ts = db.timestamps("orders")
    assert ts is not None and ts.dtype.kind == "M" and ts[1] == np.datetime64("2021-01-02")
    assert db.timestamps("users") is None
    assert db["orders"].types["ts"] is ColumnType.DATETIME
    with pytest.raises(UnknownTableError, match="no table 'nope'"):
        db.table("nope")


def test_foreign_key_to_a_missing_row() -> None:
    fr = frames()
    fr["orders"].loc[1, "user_id"] = 7
    with pytest.raises(ForeignKeyError, match=r"row 1 of 'orders' holds 7\.0.*dangling='null'"):
        db_from(fr)
    db = db_from(fr, dangling="null")
    assert db["orders"].missing[:, 1].tolist() == [False, True, True]


def test_foreign_key_to_no_table_or_column() -> None:
    with pytest.raises(ForeignKeyError, match="'accounts' is not in the database"):
        db_from(frames(), foreign_keys=[ForeignKey("orders", "user_id", "accounts")])
    with pytest.raises(ForeignKeyError, match="has no column 'uid'"):
        db_from(frames(), foreign_keys=[ForeignKey("orders", "uid", "users")])
    with pytest.raises(ForeignKeyError, match="has no primary key"):
        db_from(frames(), primary_keys={"orders": "oid"})
    with pytest.raises(ForeignKeyError, match="can't match"):
        db_from(frames(), foreign_keys=[ForeignKey("orders", "user_id", "users", "name")])


def test_duplicate_and_missing_primary_keys() -> None:
    fr = frames()
    fr["users"].loc[2, "id"] = 1
    with pytest.raises(DuplicateKeyError, match=r"users\.id has value 1 in rows 0 and 2"):
        db_from(fr)
    fr = frames()
    fr["users"]["id"] = [1.0, None, 3.0]
    with pytest.raises(PrimaryKeyError, match="missing in row 1"):
        db_from(fr)
    with pytest.raises(PrimaryKeyError, match="not in the database"):
        db_from(frames(), primary_keys={"people": "id"})


def test_time_column_rules() -> None:
    fr = frames()
    fr["orders"]["ts"] = ["2021-01-02", "2021-01-01", "2021-01-03"]
    db = db_from(fr)  # unsorted is fine unless required
    with pytest.raises(TimeColumnError, match=r"decreases at row 1.*sort_by_time"):
        db_from(fr, require_sorted_time=True)
    sorted_db = db.sort_by_time()
    assert sorted_db["orders"].column("oid").tolist() == [11, 10, 12]
    fr["orders"]["ts"] = ["2021-01-02", None, "2021-01-03"]
    with pytest.raises(TimeColumnError, match="no timestamp in row 1"):
        db_from(fr)
    with pytest.raises(TimeColumnError, match="not datetime"):
        RelationalDatabase({"t": Table.from_dict({"x": [1, 2]})}, time_columns={"t": "x"})
    with pytest.raises(TimeColumnError, match="names no column"):
        db_from(frames(), time_columns={"orders": "when"})


def test_from_sqlite_reads_keys_and_types(tmp_path: Path) -> None:
    db = RelationalDatabase.from_sqlite(_sqlite(tmp_path / "a.db"), time_columns={"orders": "ts"})
    assert db.primary_keys == {"users": "id", "orders": "oid"}  # composite pk of items skipped
    assert ForeignKey("orders", "user_id", "users", "id") in db.foreign_keys
    assert ForeignKey("items", "order_id", "orders", "oid") in db.foreign_keys  # to-pk resolved
    assert db["users"].types == {
        "id": ColumnType.NUMERIC,
        "name": ColumnType.CATEGORICAL,
        "vip": ColumnType.BOOLEAN,
        "joined": ColumnType.DATETIME,
    }
    assert db["users"].column("vip").tolist() == [True, False, None]
    assert db["orders"].types["note"] is ColumnType.CATEGORICAL
    assert db.timestamps("orders")[0] == np.datetime64("2021-01-01T10:00:00")
    with sqlite3.connect(tmp_path / "a.db") as con:
        again = RelationalDatabase.from_sqlite(con, types={"orders": {"note": "text"}})
    assert again["orders"].types["note"] is ColumnType.TEXT


def test_from_sqlite_dangling_reference(tmp_path: Path) -> None:
    path = _sqlite(tmp_path / "b.db")
    with sqlite3.connect(path) as con:
        con.execute("INSERT INTO orders VALUES (13, 99, 1.0, '2021-02-01', NULL)")
    with pytest.raises(ForeignKeyError, match="holds 99"):
        RelationalDatabase.from_sqlite(path)
    with pytest.raises(FileNotFoundError):
        RelationalDatabase.from_sqlite(tmp_path / "missing.db")


@pytest.mark.parametrize(("name", "state"), [("missing.db", "does not exist"), ("folder", "is a folder, not a file")])
def test_a_database_path_that_is_not_a_file_is_an_input_error(tmp_path: Path, name: str, state: str) -> None:
    # issue 24: a bare FileNotFoundError, so `tabzoo ramba missing.db` ended in the CLI's "This is a bug" line
    from tabzoo.errors import TabzooInputError

    (tmp_path / "folder").mkdir()
    with pytest.raises(TabzooInputError, match=f"{name}' {state}; check the path") as info:
        RelationalDatabase.from_sqlite(tmp_path / name)
    assert isinstance(info.value, FileNotFoundError)  # still what callers caught before
    assert not (tmp_path / "missing.db").exists()  # opened read-only: never created


def test_to_sqlite_round_trip(tmp_path: Path) -> None:
    db = db_from(frames())
    out = tmp_path / "out.db"
    db.to_sqlite(out)
    back = RelationalDatabase.from_sqlite(out, time_columns={"orders": "ts"})
    assert back.primary_keys == db.primary_keys and back.foreign_keys == db.foreign_keys
    for name in db.table_names:
        assert back[name].equals(db[name]), name
    with pytest.raises(FileExistsError):
        db.to_sqlite(out)


def test_from_duckdb(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb", reason="duckdb is an optional extra")
    path = tmp_path / "d.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name VARCHAR)")
    con.execute(
        "CREATE TABLE orders (oid INTEGER PRIMARY KEY, user_id INTEGER REFERENCES users(id),"
        " ts TIMESTAMP, price DECIMAL(8, 2))"
    )
    con.execute("INSERT INTO users VALUES (1, 'ann'), (2, NULL)")
    con.execute(
        "INSERT INTO orders VALUES (10, 1, '2021-01-01 10:00:00', 1.25),"
        " (11, NULL, '2021-01-02', NULL)"
    )
    con.close()
    db = RelationalDatabase.from_duckdb(path, time_columns={"orders": "ts"})
    assert db.primary_keys == {"users": "id", "orders": "oid"}
    assert db.foreign_keys == [ForeignKey("orders", "user_id", "users", "id")]
    assert db["orders"].types["price"] is ColumnType.NUMERIC
    assert db["users"].missing[:, 1].tolist() == [False, True]
    assert db.timestamps("orders")[1] == np.datetime64("2021-01-02")


def test_from_duckdb_missing_dependency(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import builtins

    real_import = builtins.__import__

    def fake(name: str, *args: object, **kwargs: object) -> object:
        if name == "duckdb":
            raise ImportError("no duckdb")
        return real_import(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", fake)
    monkeypatch.delitem(__import__("sys").modules, "duckdb", raising=False)
    with pytest.raises(ImportError, match=r"tabzoo-core\[duckdb\]"):
        RelationalDatabase.from_duckdb(tmp_path / "x.duckdb")
