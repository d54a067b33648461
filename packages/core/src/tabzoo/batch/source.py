"""Reading a CSV or Parquet source in record batches of a fixed number of rows (bounded memory).

A source is a file, a folder of files (every ``.csv`` or every ``.parquet``/``.pq`` below it; names
starting with ``.`` or ``_`` are skipped, as Spark/Dask write them) or a ``pyarrow.dataset.Dataset``.
Nothing is read whole: :func:`iter_tables` yields ``pyarrow.Table`` objects of exactly
``batch_rows`` rows (the last one smaller) from the dataset's record batches.

CSV: integer columns are read as float64 (a later block holding ``1.5`` would otherwise fail the
type inferred from the first block), empty fields and pandas' null markers are missing values in
every column, as ``pandas.read_csv`` has them; a row with too few or too many fields is refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from tabzoo.errors import TabzooInputError
from tabzoo.table.errors import DTypeError, DuplicateColumnError

__all__ = ["PARQUET", "SUFFIXES", "Source", "iter_tables", "open_source"]

PARQUET = (".parquet", ".pq")
SUFFIXES = (".csv", *PARQUET)


class Source:
    """An opened source: its ``dataset``, the ``files`` it reads (empty for a dataset given as one)
    and its ``label`` for messages."""

    def __init__(self, dataset: Any, files: list[Path], label: str, kind: str, owns_files: bool = False) -> None:
        self.dataset, self.files, self.label, self.kind = dataset, files, label, kind
        #: the files were named by a path (not a given dataset, which may add partition columns)
        self.owns_files = owns_files

    @property
    def columns(self) -> list[str]:
        return list(self.dataset.schema.names)

    def count_rows(self) -> int | None:
        """Rows in the source when that is cheap (Parquet metadata); ``None`` for CSV (a full scan)."""
        if self.kind != "parquet":
            return None
        return int(self.dataset.count_rows())


def _files_of(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES
                       and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts))
        if not files:
            raise TabzooInputError(f"{path} holds no .csv or .parquet file; point at a file or a folder of them.")
        kinds = {p.suffix.lower() in PARQUET for p in files}
        if len(kinds) > 1:
            raise TabzooInputError(f"{path} mixes CSV and Parquet files; put one kind in a folder, or pass one file.")
        return files
    if not path.exists():
        raise TabzooInputError(f"{path} does not exist; check the path.")
    if path.suffix.lower() not in SUFFIXES:
        raise TabzooInputError(f"{path}: unknown file type {path.suffix.lower()!r}; use .csv or .parquet.")
    return [path]


def _csv_format(ds: Any, column_types: dict[str, Any] | None = None) -> Any:
    import pyarrow.csv as pcsv

    convert = pcsv.ConvertOptions(strings_can_be_null=True, column_types=column_types or {})
    return ds.CsvFileFormat(convert_options=convert)


def open_source(source: Any) -> Source:
    """Open ``source`` (path, folder or ``pyarrow.dataset.Dataset``) without reading its rows.

    :raises TabzooInputError: a missing path, an unknown type, duplicate or nested columns, a file
        that is not CSV/Parquet; each names the fix.
    """
    import pyarrow as pa
    import pyarrow.dataset as ds

    if isinstance(source, ds.Dataset):
        files = [Path(f) for f in getattr(source, "files", None) or []]
        kind = "parquet" if all(f.suffix.lower() in PARQUET for f in files) and files else "dataset"
        out = Source(source, files, "the given dataset", kind)
    else:
        path = Path(source)
        files = _files_of(path)
        names = [str(f) for f in files]
        try:
            if files[0].suffix.lower() in PARQUET:
                out = Source(ds.dataset(names, format="parquet"), files, str(path), "parquet", owns_files=True)
            else:
                first = ds.dataset(names, format=_csv_format(ds))
                ints = {f.name: pa.float64() for f in first.schema if pa.types.is_integer(f.type)}
                out = Source(ds.dataset(names, format=_csv_format(ds, ints)), files, str(path), "csv")
        except (pa.ArrowException, OSError) as exc:
            raise TabzooInputError(f"{path} is not a readable CSV/Parquet source ({exc}); check the file.") from exc
    _check_schema(out)
    return out


def _check_schema(src: Source) -> None:
    import pyarrow as pa

    names = src.columns
    dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if dup is not None:
        raise DuplicateColumnError(f"{src.label} has two columns named {dup!r}; rename one.")
    for field in src.dataset.schema:
        if pa.types.is_nested(field.type):
            raise DTypeError(f"{src.label}: column {field.name!r} has the nested type {field.type}; flatten it into "
                             "scalar columns first.")


def _scan_options(dataset: Any) -> dict[str, Any]:
    """Parquet: no pre-buffering. pyarrow's default caches the byte ranges of every row group read so far
    until the file is done (measured: its pool grew 93 -> 235 MB over 13 batches of 65,536 x 20; ~50 MB flat
    without it)."""
    import pyarrow.dataset as ds

    if isinstance(getattr(dataset, "format", None), ds.ParquetFileFormat):
        return {"fragment_scan_options": ds.ParquetFragmentScanOptions(pre_buffer=False)}
    return {}


def _conform(batch: Any, schema: Any) -> Any:
    """``batch`` in ``schema``: columns cast to its types, a column the file lacks as nulls (as the scanner does)."""
    import pyarrow as pa

    if batch.schema == schema:
        return batch
    names = batch.schema.names
    return pa.RecordBatch.from_arrays([batch.column(f.name).cast(f.type) if f.name in names
                                       else pa.nulls(batch.num_rows, f.type) for f in schema], schema=schema)


def _parquet_batches(src: Source, columns: Sequence[str], batch_rows: int) -> Iterator[Any]:
    """Record batches of the Parquet files of a path source, read one at a time, row group by row group,
    in the source's schema (the first file's; :func:`_conform`).

    The dataset scanner reads ahead of a slow consumer without bound, whatever ``batch_readahead`` says
    (measured, pyarrow 26, one 10^7-row file, a consumer taking 0.3 s a batch: its pool grew 39 -> 449 MB
    over 40 batches of 65,536 x 20, i.e. the input read ahead of the model); ``ParquetFile.iter_batches``
    holds a few row groups (flat at ~45 MB there)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = pa.schema([src.dataset.schema.field(c) for c in columns])
    for path in src.files:
        f = pq.ParquetFile(str(path), pre_buffer=False)
        try:
            have = [c for c in columns if c in f.schema_arrow.names]
            for batch in f.iter_batches(batch_size=batch_rows, columns=have, use_threads=False):
                yield _conform(batch, schema)
        finally:
            f.close()


def iter_tables(src: Source, columns: Sequence[str], batch_rows: int) -> Iterator[Any]:
    """``pyarrow.Table`` objects of ``columns``, exactly ``batch_rows`` rows each (the last one fewer).

    About ``3 * batch_rows`` rows are held at once (the pending rows, the next batch read ahead, the
    table yielded), whatever the size of the source; Parquet files are read one row group at a time
    (:func:`_parquet_batches`), without pre-buffering, which would keep every row group read so far
    until the file ends.

    :raises TabzooInputError: a missing column, or a file that fails to parse mid-way (ragged row,
        a non-number in a number column, bad UTF-8), naming the source and the fix.
    """
    import pyarrow as pa

    missing = [c for c in columns if c not in src.columns]
    if missing:
        raise TabzooInputError(f"{src.label} lacks the feature columns {missing}; its columns are {src.columns}.")
    pending: list[Any] = []
    held = 0
    try:
        # no read-ahead beyond one batch of one file: pyarrow's default (16 batches, 4 files) would
        # hold up to 16 x batch_rows rows besides the one being scored
        if src.kind == "parquet" and src.owns_files:  # files named by a path: one row group at a time
            read = _parquet_batches(src, columns, batch_rows)
        else:  # CSV, or a given dataset (it may add partition columns): the scanner, read-ahead limited
            read = src.dataset.to_batches(columns=list(columns), batch_size=batch_rows, batch_readahead=1,
                                          fragment_readahead=1, **_scan_options(src.dataset))
        for batch in read:
            if batch.num_rows == 0:
                continue
            pending.append(batch)
            held += batch.num_rows
            while held >= batch_rows:
                table = pa.Table.from_batches(pending)
                yield table.slice(0, batch_rows)
                rest = table.slice(batch_rows)
                pending, held = rest.to_batches(), rest.num_rows
    except pa.ArrowException as exc:
        raise TabzooInputError(
            f"{src.label} could not be read past a point ({exc}); fix that row (a number column holding text, a "
            "line with too few or too many fields, or text that is not UTF-8)."
        ) from exc
    if held:
        yield pa.Table.from_batches(pending)
