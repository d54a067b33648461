"""``tabzoo.batch.predict_dataset``: streamed prediction equals the in-memory path, reads in bounded
batches, writes atomically and never overwrites (issue 29 item 1)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.dataset as ds
import pytest
from _icl_testmodel import ICLTestClassifier, ICLTestRegressor
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.batch import load_estimator, predict_dataset
from tabzoo.errors import TabzooInputError

N = 700


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(N, 4)), columns=["a", "b", "c", "d"])
    frame.loc[rng.random(N) < 0.05, "c"] = np.nan
    frame["colour"] = rng.choice(["red", "green", "blue"], N)
    frame["id"] = np.arange(N)
    frame["y"] = np.where(frame.a + frame.b > 0, "yes", "no")
    return frame


FEATURES = ["a", "b", "c", "d", "colour"]


@pytest.fixture(scope="module")
def clf(table: pd.DataFrame) -> ICLTestClassifier:
    return ICLTestClassifier(n_estimators=2, device="cpu", chunk_size=64).fit(table[FEATURES][:200], table.y[:200])


def _expected(clf: ICLTestClassifier, frame: pd.DataFrame) -> pd.DataFrame:
    proba = clf.predict_proba(frame[FEATURES])
    return pd.DataFrame({"prediction": clf.predict(frame[FEATURES]), "proba_no": proba[:, 0], "proba_yes": proba[:, 1]})


@settings(max_examples=6, deadline=None)
@given(batch_rows=st.integers(1, 900), csv=st.booleans())
def test_streamed_equals_in_memory(tmp_path_factory: pytest.TempPathFactory, table: pd.DataFrame,
                                   clf: ICLTestClassifier, batch_rows: int, csv: bool) -> None:
    d = tmp_path_factory.mktemp("s")
    src = d / ("q.csv" if csv else "q.parquet")
    table.to_csv(src, index=False) if csv else table.to_parquet(src)
    out = d / "pred.parquet"
    report = predict_dataset(clf, src, out, batch_rows=batch_rows, keep=["id"])
    got = pd.read_parquet(out)
    want = _expected(clf, pd.read_csv(src) if csv else table)
    assert report.rows == N and report.max_batch_rows == min(batch_rows, N)
    assert report.batches == -(-N // batch_rows)
    assert got["id"].tolist() == list(range(N))
    pd.testing.assert_frame_equal(got.drop(columns="id"), want, check_exact=True)


def test_csv_output_and_folder_of_files(tmp_path: Path, table: pd.DataFrame, clf: ICLTestClassifier) -> None:
    folder = tmp_path / "parts"
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(N), 3)):
        table.iloc[part].to_parquet(folder / f"part-{i}.parquet")
    (folder / "_SUCCESS").write_text("")  # markers are skipped
    out = tmp_path / "pred.csv"
    predict_dataset(clf, folder, out, batch_rows=128)
    got = pd.read_csv(out)
    want = _expected(clf, table)
    assert got["prediction"].tolist() == want["prediction"].tolist()
    np.testing.assert_allclose(got[["proba_no", "proba_yes"]], want[["proba_no", "proba_yes"]], rtol=1e-15)
    # a pyarrow dataset directly
    out2 = tmp_path / "pred2.parquet"
    predict_dataset(clf, ds.dataset(str(folder), format="parquet"), out2, batch_rows=1000)
    pd.testing.assert_frame_equal(pd.read_parquet(out2), want, check_exact=True)


def test_regressor_writes_values_only(tmp_path: Path, table: pd.DataFrame) -> None:
    num = ["a", "b", "c", "d"]
    reg = ICLTestRegressor(n_estimators=2, device="cpu").fit(table[num][:200], table.a[:200] * 2)
    table.to_parquet(tmp_path / "q.parquet")
    predict_dataset(reg, tmp_path / "q.parquet", tmp_path / "o.parquet", batch_rows=100)
    got = pd.read_parquet(tmp_path / "o.parquet")
    assert list(got.columns) == ["prediction"]
    np.testing.assert_array_equal(got["prediction"], reg.predict(table[num]))


def test_memory_is_bounded_by_the_batch(tmp_path: Path, table: pd.DataFrame, clf: ICLTestClassifier,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Fails if the source is read whole: every whole-file reader raises, and the estimator never sees
    more than ``batch_rows`` rows at once."""
    big = pd.concat([table] * 4, ignore_index=True)
    big.to_parquet(tmp_path / "q.parquet", row_group_size=1000)
    big.to_csv(tmp_path / "q.csv", index=False)

    def whole(*a: object, **k: object) -> None:
        raise AssertionError("the source was read whole")

    import pyarrow.parquet as pq

    read: list[int] = []  # rows of every record batch the reader materialised
    scans: list[dict[str, object]] = []  # the options of every scan

    class Counted:
        """The dataset, with every whole-table read refused and every batch counted."""

        def __init__(self, inner: ds.Dataset) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> object:
            if name in ("to_table", "head", "take"):
                return whole
            return getattr(self.inner, name)

        def to_batches(self, **kw: object):  # noqa: ANN201
            scans.append(kw)
            for b in self.inner.to_batches(**kw):
                read.append(b.num_rows)
                yield b

    pre_buffer: list[object] = []  # pre_buffer of every Parquet file opened

    class CountedFile:
        """A Parquet file, with whole-file reads refused and every batch counted."""

        def __init__(self, *a: object, **k: object) -> None:
            self.inner = real_file(*a, **k)
            pre_buffer.append(k.get("pre_buffer"))

        def __getattr__(self, name: str) -> object:
            if name in ("read", "read_row_groups"):
                return whole
            return getattr(self.inner, name)

        def iter_batches(self, **kw: object):  # noqa: ANN201
            for b in self.inner.iter_batches(**kw):
                read.append(b.num_rows)
                yield b

    real_dataset, real_file = ds.dataset, pq.ParquetFile
    monkeypatch.setattr(ds, "dataset", lambda *a, **k: Counted(real_dataset(*a, **k)))
    monkeypatch.setattr(pq, "ParquetFile", CountedFile)
    monkeypatch.setattr(pd, "read_csv", whole)
    monkeypatch.setattr(pd, "read_parquet", whole)
    monkeypatch.setattr(pq, "read_table", whole)
    seen: list[int] = []
    real = clf.predict_with_proba
    monkeypatch.setattr(clf, "predict_with_proba", lambda X: seen.append(len(X)) or real(X))
    for src in ("q.parquet", "q.csv"):
        seen.clear()
        read.clear()
        predict_dataset(clf, tmp_path / src, tmp_path / f"o-{src}.parquet", batch_rows=150)
        assert 0 < max(read) <= 150 and sum(read) == len(big)
        assert max(seen) == 150 and sum(seen) == len(big) and len(seen) == -(-len(big) // 150)
        if src.endswith(".parquet"):  # pre-buffering would keep every row group read until the file ends
            assert pre_buffer == [False] and not scans  # one row group at a time, never the read-ahead scanner
    monkeypatch.undo()
    assert len(pd.read_parquet(tmp_path / "o-q.csv.parquet")) == len(big)


def test_parquet_is_not_read_ahead_of_a_slow_model(tmp_path: Path) -> None:
    """Fails with pyarrow's dataset scanner, which reads a file ahead of a slow consumer without bound
    (its pool grew to 449 MB over 40 batches of a 10^7-row file): while the first batch is being scored
    (a pause here), Arrow holds a few row groups (measured 4.5; the scanner: all 30), not the file."""
    import time

    import pyarrow as pa
    from tabzoo.batch.source import iter_tables, open_source

    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(60_000, 20)), columns=[f"f{j}" for j in range(20)])
    frame.to_parquet(tmp_path / "q.parquet", row_group_size=2_000)  # 30 row groups of 320 kB
    tables = iter_tables(open_source(tmp_path / "q.parquet"), list(frame.columns), 2_000)
    before = pa.total_allocated_bytes()
    first = next(tables)
    time.sleep(0.5)  # a slow model: a reading thread would fill the pool meanwhile
    held = pa.total_allocated_bytes() - before
    assert first.num_rows == 2_000 and held < 10 * 2_000 * 20 * 8, held
    assert sum(t.num_rows for t in tables) == 58_000


def test_a_folder_of_parquet_files_is_read_in_the_first_files_schema(
        tmp_path: Path, table: pd.DataFrame, clf: ICLTestClassifier) -> None:
    """Files read one at a time are cast to the source's schema (the first file's), and a column a later
    file lacks is missing values, as pyarrow's dataset scanner had them."""
    folder = tmp_path / "parts"
    folder.mkdir()
    table[FEATURES].iloc[:60].to_parquet(folder / "a.parquet")
    table[FEATURES].iloc[60:].astype({"a": "float32", "b": "float32"}).drop(columns="d").to_parquet(folder / "b.parquet")
    predict_dataset(clf, folder, tmp_path / "o.parquet", batch_rows=50)
    got = pd.read_parquet(tmp_path / "o.parquet")
    rows = table[FEATURES].astype({"a": "float32", "b": "float32"}).astype({"a": "float64", "b": "float64"})
    rows.loc[60:, "d"] = np.nan
    want = _expected(clf, rows)
    assert got.dtypes["proba_no"] == np.float64 and len(got) == len(table)
    np.testing.assert_allclose(got[["proba_no", "proba_yes"]].to_numpy(), want[["proba_no", "proba_yes"]].to_numpy(),
                               rtol=1e-5, atol=1e-9)  # batches of 50 vs one pass: rounding only


def test_never_overwrites_and_never_writes_onto_an_input(tmp_path: Path, table: pd.DataFrame,
                                                         clf: ICLTestClassifier) -> None:
    src = tmp_path / "q.parquet"
    table.to_parquet(src)
    out = tmp_path / "pred.parquet"
    out.write_text("mine")
    with pytest.raises(TabzooInputError, match="already exists"):
        predict_dataset(clf, src, out)
    assert out.read_text() == "mine"
    with pytest.raises(TabzooInputError, match="input"):
        predict_dataset(clf, src, src, overwrite=True)
    folder = tmp_path / "parts"
    folder.mkdir()
    table.to_parquet(folder / "p.parquet")
    with pytest.raises(TabzooInputError, match="inside the folder"):
        predict_dataset(clf, folder, folder / "pred.parquet")
    predict_dataset(clf, src, out, overwrite=True)
    assert len(pd.read_parquet(out)) == N


def test_a_failure_mid_way_leaves_no_output(tmp_path: Path, table: pd.DataFrame, clf: ICLTestClassifier) -> None:
    src = tmp_path / "q.csv"
    text = table.to_csv(index=False)
    lines = text.splitlines()
    lines[600] = lines[600] + ",extra"  # a ragged row late in the file
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "pred.parquet"
    with pytest.raises(TabzooInputError, match="fields|columns"):
        predict_dataset(clf, src, out, batch_rows=100)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["q.csv"]


def test_bad_sources_are_refused(tmp_path: Path, clf: ICLTestClassifier, table: pd.DataFrame) -> None:
    with pytest.raises(TabzooInputError, match="does not exist"):
        predict_dataset(clf, tmp_path / "nope.parquet", tmp_path / "o.parquet")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TabzooInputError, match="no .csv or .parquet"):
        predict_dataset(clf, tmp_path / "empty", tmp_path / "o.parquet")
    table.drop(columns=["colour"]).to_parquet(tmp_path / "q.parquet")
    with pytest.raises(TabzooInputError, match="lacks the feature columns"):
        predict_dataset(clf, tmp_path / "q.parquet", tmp_path / "o.parquet")
    with pytest.raises(TabzooInputError, match="batch_rows"):
        predict_dataset(clf, tmp_path / "q.parquet", tmp_path / "o.parquet", batch_rows=0)
    assert not (tmp_path / "o.parquet").exists()


def test_load_estimator_round_trip(tmp_path: Path, table: pd.DataFrame, clf: ICLTestClassifier) -> None:
    stem = clf.save(tmp_path / "fitted")
    back = load_estimator(stem, device="cpu")
    assert back is load_estimator(stem, device="cpu")  # once per process
    np.testing.assert_array_equal(back.predict_proba(table[FEATURES]), clf.predict_proba(table[FEATURES]))
