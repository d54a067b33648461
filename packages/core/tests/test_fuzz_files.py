"""Bad-input fuzzing of the file entry points (issue 16 item 4): ``tabzoo predict`` on CSV and
Parquet (in process, through ``tabzoo.cli.main``, with the core's test estimator) and
``RelationalDatabase.from_sqlite``."""

from __future__ import annotations

import io
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _fuzz import base_frames, finite
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tabzoo.cli import main
from tabzoo.table import RelationalDatabase
from tabzoo.table.errors import DTypeError, ForeignKeyError, TimeColumnError

pytest.importorskip("sklearn")
FILES = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow], deadline=None)


def _predict(tmp: Path, train: Path, test: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["predict", "--model", "unused", "--estimator", "_icl_testmodel:ICLTestClassifier", "--train",
               str(train), "--test", str(test), "--target", "y", "--device", "cpu", "--n-estimators", "2"])
    out = capsys.readouterr()
    return rc, out.out, out.err


def _ok(rc: int, out: str, err: str, n_test: int) -> pd.DataFrame:
    assert rc == 0, err
    pred = pd.read_csv(io.StringIO(out))
    assert len(pred) == n_test and finite(pred.filter(like="proba_").to_numpy())
    return pred


def _refused(rc: int, err: str, *pieces: str) -> None:
    assert rc == 2, f"expected exit code 2 (TabzooInputError), got {rc}: {err}"
    assert err.startswith("tabzoo: error: ") and "Traceback" not in err
    for p in pieces:
        assert p.lower() in err.lower(), f"{p!r} not in {err}"


CSV_CLASSES = ("ragged_long", "ragged_short", "bom", "duplicate_header", "not_utf8", "empty_file",
               "header_only", "single_class", "mixed_labels", "huge", "subnormal", "all_missing", "constant",
               "numeric_header")


@pytest.mark.parametrize("kind", CSV_CLASSES)
@FILES
@given(base=base_frames(min_rows=8), row=st.integers(0, 100))
def test_predict_csv_on_every_input_class(kind: str, base, row: int, tmp_path: Path,  # type: ignore[no-untyped-def]
                                          capsys: pytest.CaptureFixture[str]) -> None:
    X, y = base
    frame = X.assign(y=y)
    row = row % len(frame)
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    X.iloc[:3].to_csv(test, index=False)
    if kind == "huge":
        frame["f0"] = frame["f0"] / frame["f0"].abs().max() * 1e308
    elif kind == "subnormal":
        frame["f0"] = frame["f0"] * 5e-324
    elif kind == "all_missing":
        frame["f0"] = np.nan
    elif kind == "constant":
        frame["f0"] = 1.0
    elif kind == "single_class":
        frame["y"] = 4
    elif kind == "mixed_labels":
        frame["y"] = frame["y"].astype(object)
        frame.loc[frame.index[row], "y"] = "other"
    lines = frame.to_csv(index=False).splitlines()
    line = row + 2  # 1-based, after the header
    if kind == "ragged_long":
        lines[line - 1] += ",9"
    elif kind == "ragged_short":
        lines[line - 1] = lines[line - 1].rsplit(",", 1)[0]
    elif kind == "duplicate_header":
        lines[0] = lines[0].replace("y", "f0") if "f1" not in lines[0] else lines[0].replace("f1", "f0")
    elif kind == "header_only":
        lines = lines[:1]
    elif kind == "numeric_header":
        lines[0] = ",".join(str(j) for j in range(X.shape[1])) + ",y"
        X.iloc[:3].to_csv(test, index=False, header=[str(j) for j in range(X.shape[1])])
    data = ("\n".join(lines) + "\n").encode()
    if kind == "bom":
        data = b"\xef\xbb\xbf" + data
    elif kind == "not_utf8":
        pos = sum(len(s) + 1 for s in lines[: line - 1])
        data = data[:pos] + b"\xff" + data[pos:]
    elif kind == "empty_file":
        data = b""
    train.write_bytes(data)
    rc, out, err = _predict(tmp_path, train, test, capsys)
    if kind in ("ragged_long", "ragged_short"):
        _refused(rc, err, f"line {line}", "fields but the header has")
    elif kind == "duplicate_header":
        _refused(rc, err, "twice", "rename")
    elif kind == "not_utf8":
        _refused(rc, err, "not UTF-8", f"line {line}", "re-save")
    elif kind == "empty_file":
        _refused(rc, err, "is empty")
    elif kind == "header_only":
        _refused(rc, err, "training set is empty")
    elif kind == "single_class":
        _refused(rc, err, "only one class")
    elif kind == "mixed_labels":
        # documented: a CSV column of numbers and text is read as text (pandas), so labels are strings
        pred = _ok(rc, out, err, 3)
        assert {c for c in pred.columns if c.startswith("proba_")} == {f"proba_{v}" for v in set(
            frame["y"].astype(str))}
    else:
        pred = _ok(rc, out, err, 3)
        if kind == "bom":  # documented: the BOM is stripped; same as without it
            train.write_bytes(data[3:])
            pd.testing.assert_frame_equal(pred, _ok(*_predict(tmp_path, train, test, capsys), 3))


PARQUET_TYPES = {
    "list": lambda n: pa.array([[i, i + 1] for i in range(n)]),
    "struct": lambda n: pa.array([{"a": i} for i in range(n)]),
    "map": lambda n: pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
    "large_list": lambda n: pa.array([[float(i)] for i in range(n)], pa.large_list(pa.float64())),
    "flat_dictionary": lambda n: pa.array([["a", "b"][i % 2] for i in range(n)]).dictionary_encode(),
    "flat_decimal": lambda n: pa.array([i for i in range(n)], pa.decimal128(6, 2)),
    "flat_huge": lambda n: pa.array([(-1) ** i * 1e308 for i in range(n)]),
}


@pytest.mark.parametrize("kind", sorted(PARQUET_TYPES))
@FILES
@given(base=base_frames(min_rows=8), where=st.sampled_from(["train", "test", "target"]))
def test_predict_parquet_nested_and_flat_types(kind: str, base, where: str, tmp_path: Path,  # type: ignore[no-untyped-def]
                                               capsys: pytest.CaptureFixture[str]) -> None:
    X, y = base
    train = pa.Table.from_pandas(X.assign(y=y), preserve_index=False)
    test = pa.Table.from_pandas(X.iloc[:3], preserve_index=False)
    extra = PARQUET_TYPES[kind]
    if where == "target" and not kind.startswith("flat"):
        train = train.set_column(train.column_names.index("y"), "y", extra(len(X)))
    else:
        train = train.append_column("g", extra(len(X)))
        test = test.append_column("g", extra(len(X)).slice(0, 3))
    pq.write_table(train, tmp_path / "train.parquet")
    pq.write_table(test, tmp_path / "test.parquet")
    rc, out, err = _predict(tmp_path, tmp_path / "train.parquet", tmp_path / "test.parquet", capsys)
    if kind.startswith("flat"):
        _ok(rc, out, err, 3)
    else:
        col = "y" if where == "target" else "g"
        _refused(rc, err, f"column {col!r}", "nested type", "flatten")


def _sqlite(path: Path, n_parents: int, n_children: int, rng: np.random.Generator,
            extra_sql: str = "", child_times: list[str] | None = None, refs: list[int] | None = None) -> None:
    con = sqlite3.connect(path)
    con.executescript(
        "CREATE TABLE parent(id INTEGER PRIMARY KEY, x REAL, t TIMESTAMP);"
        "CREATE TABLE child(id INTEGER PRIMARY KEY, pid INTEGER REFERENCES parent(id), v REAL, t TIMESTAMP);"
        + extra_sql
    )
    con.executemany("INSERT INTO parent VALUES (?, ?, ?)",
                    [(i, float(rng.normal()), f"2020-01-{1 + i % 9:02d}") for i in range(n_parents)])
    refs = refs if refs is not None else [int(rng.integers(0, n_parents)) for _ in range(n_children)]
    times = child_times or [f"2021-01-{1 + j:02d}" for j in range(n_children)]
    con.executemany("INSERT INTO child VALUES (?, ?, ?, ?)",
                    [(j, refs[j], float(rng.normal()), times[j]) for j in range(n_children)])
    con.commit()
    con.close()


@pytest.mark.parametrize("kind", ["dangling", "dangling_null", "cycle", "self_cycle", "non_monotone",
                                  "non_monotone_sorted", "not_sqlite"])
@FILES
@given(n_parents=st.integers(1, 6), n_children=st.integers(2, 12), row=st.integers(0, 100),
       seed=st.integers(0, 1000))
def test_sqlite_on_every_input_class(kind: str, tmp_path: Path, n_parents: int, n_children: int, row: int,
                                     seed: int) -> None:
    rng = np.random.default_rng(seed)
    row = row % n_children
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "db.sqlite"  # one per hypothesis example
    times = None
    if kind == "non_monotone" or kind == "non_monotone_sorted":
        times = [f"2021-01-{1 + j:02d}" for j in range(n_children)]
        times[row] = "2019-06-01" if row > 0 else "2030-01-01"
    refs = [int(rng.integers(0, n_parents)) for _ in range(n_children)]
    if kind.startswith("dangling"):
        refs[row] = n_parents + 7
    extra = {"cycle": "CREATE TABLE a(id INTEGER PRIMARY KEY, b_id INTEGER REFERENCES b(id));"
                      "CREATE TABLE b(id INTEGER PRIMARY KEY, a_id INTEGER REFERENCES a(id));",
             "self_cycle": "CREATE TABLE emp(id INTEGER PRIMARY KEY, boss INTEGER REFERENCES emp(id));"}.get(kind, "")
    if kind == "not_sqlite":
        path.write_bytes(bytes(rng.integers(0, 256, size=300, dtype=np.uint8)))
    else:
        _sqlite(path, n_parents, n_children, rng, extra, times, refs)
    time_columns = {"parent": "t", "child": "t"}
    load = lambda **kw: RelationalDatabase.from_sqlite(path, time_columns=time_columns, **kw)  # noqa: E731
    if kind == "not_sqlite":
        with pytest.raises(DTypeError, match="is not a SQLite database"):
            load()
    elif kind == "dangling":
        with pytest.raises(ForeignKeyError, match=rf"child\.pid -> parent\.id: row {row} of 'child' holds "
                                                  rf"{n_parents + 7}.*dangling='null'"):
            load()
    elif kind == "dangling_null":  # documented: dangling values become missing, with a warning logged
        db = load(dangling="null")
        assert db.table("child").missing[row, db.table("child").names.index("pid")]
    elif kind in ("cycle", "self_cycle"):  # documented: cycles are valid; fk_cycles lists them
        db = load()
        assert db.fk_cycles() == ([["a", "b"]] if kind == "cycle" else [["emp"]])
    elif kind == "non_monotone":  # documented: allowed unless require_sorted_time
        db = load()
        assert np.all(np.diff(db.sort_by_time().timestamps("child").astype(np.int64)) >= 0)
    elif kind == "non_monotone_sorted":
        bad = row if row > 0 else 1
        with pytest.raises(TimeColumnError, match=rf"child\.t decreases at row {bad}.*sort_by_time"):
            load(require_sorted_time=True)
