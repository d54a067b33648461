"""Writing batches of predictions incrementally: Parquet (one row group per batch) or CSV.

The writer gets a temporary file from :func:`tabzoo.files.write_via`, which renames it over the
output only when every batch is written (a failure or Ctrl-C leaves no partial output).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from tabzoo.batch.source import PARQUET, SUFFIXES
from tabzoo.errors import TabzooInputError

__all__ = ["Sink", "check_out_suffix"]


def check_out_suffix(out: str | Path, flag: str = "out") -> str:
    """``"csv"`` or ``"parquet"`` by the suffix of ``out``."""
    suffix = Path(out).suffix.lower()
    if suffix not in SUFFIXES:
        raise TabzooInputError(f"{flag} {out}: unknown file type {suffix!r}; use .csv or .parquet.")
    return "parquet" if suffix in PARQUET else "csv"


class Sink:
    """Appends pandas DataFrames to ``path`` (``None``: CSV on stdout) in the format ``kind``."""

    def __init__(self, path: Path | None, kind: str) -> None:
        self.path, self.kind = path, kind
        self._writer: Any = None
        self._schema: Any = None
        self._fh: Any = None
        self.rows = 0

    def write(self, frame: Any) -> None:
        if self.kind == "csv":
            if self._fh is None:
                self._fh = sys.stdout if self.path is None else open(self.path, "w", newline="", encoding="utf-8")
            frame.to_csv(self._fh, index=False, header=self.rows == 0)
        else:
            import pyarrow as pa
            import pyarrow.parquet as pq

            table = pa.Table.from_pandas(frame, preserve_index=False)
            if self._writer is None:
                self._schema = table.schema
                self._writer = pq.ParquetWriter(str(self.path), self._schema)
            elif table.schema != self._schema:
                table = table.cast(self._schema)
            self._writer.write_table(table)
        self.rows += len(frame)

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        if self._fh is sys.stdout:
            sys.stdout.flush()
        elif self._fh is not None:
            self._fh.close()
