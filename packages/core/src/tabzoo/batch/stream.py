"""``predict_dataset``: score a CSV/Parquet source of any size in batches, in bounded memory.

Each batch of ``batch_rows`` rows is read (:func:`tabzoo.batch.source.iter_tables`), scored in one
model pass (labels and probabilities together, :func:`tabzoo.batch.frames.score_frame`) and
appended to a temporary file next to ``out``, renamed over ``out`` at the end
(:func:`tabzoo.files.write_via`). Memory is bounded by the batch and the model, not the source.
In-context models score query rows independently (a query attends to the context, never to another
query), so the predictions equal those of ``estimator.predict`` on the whole table.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabzoo.batch.frames import score_frame
from tabzoo.batch.sink import Sink, check_out_suffix
from tabzoo.batch.source import Source, iter_tables, open_source
from tabzoo.errors import TabzooInputError
from tabzoo.files import check_output, same_file, write_via

__all__ = ["BatchReport", "DEFAULT_BATCH_ROWS", "predict_dataset"]

#: rows per batch of :func:`predict_dataset` (a multiple of the estimators' default ``chunk_size``)
DEFAULT_BATCH_ROWS = 65536


@dataclass(frozen=True)
class BatchReport:
    """What :func:`predict_dataset` did: ``rows`` scored in ``batches``, the largest batch
    (``max_batch_rows``), wall ``seconds``, the output path (``None``: stdout) and its ``columns``."""

    rows: int
    batches: int
    max_batch_rows: int
    seconds: float
    out: Path | None
    columns: tuple[str, ...]

    @property
    def rows_per_second(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


def _feature_columns(est: Any, src: Source, columns: Sequence[str] | None) -> list[str]:
    if columns is not None:
        return [str(c) for c in columns]
    names = getattr(est, "feature_names_in_", None)
    if names is not None:
        return [str(c) for c in names]
    return src.columns


def _check_out(out: Path, src: Source, inputs: Sequence[Any], overwrite: bool) -> None:
    check_output(out, inputs=[*src.files, *inputs], overwrite=overwrite, flag="out")
    root = Path(src.label)
    if root.is_dir() and (same_file(out.parent, root) or out.resolve().is_relative_to(root.resolve())):
        raise TabzooInputError(f"out {out} is inside the folder being read ({root}); the output would become "
                                   "an input of the next run. Write it to another folder.")


def _progress(total: int | None, enabled: bool) -> Any:
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        import warnings

        warnings.warn("progress=True needs tqdm (pip install 'tabzoo-core[progress]'); no progress bar.",
                      stacklevel=3)
        return None
    return tqdm(total=total, unit="rows", unit_scale=True, desc="predict", smoothing=0.1)


def predict_dataset(estimator: Any, source: Any, out: str | Path | None = None, *, batch_rows: int = DEFAULT_BATCH_ROWS,
                    overwrite: bool = False, columns: Sequence[str] | None = None, keep: Sequence[str] = (),
                    progress: bool = False, inputs: Sequence[Any] = ()) -> BatchReport:
    """Predict every row of ``source`` with a fitted ``estimator``, ``batch_rows`` rows at a time.

    :param estimator: a fitted scikit-learn estimator (one model pass per batch where it has
        ``predict_with_proba``, as every in-context estimator of tabzoo does).
    :param source: a ``.csv``/``.parquet`` file, a folder of them, or a ``pyarrow.dataset.Dataset``.
    :param out: ``.parquet`` or ``.csv`` file written atomically (``None``: CSV on stdout, as it goes).
    :param batch_rows: rows per batch; memory grows with it, not with the source.
    :param overwrite: replace an existing ``out`` (never one of the inputs).
    :param columns: the feature columns, in the order the estimator was fitted on (default its
        ``feature_names_in_``, else every column of the source).
    :param keep: columns of the source copied to the output before ``prediction`` (e.g. an id).
    :param progress: a tqdm bar with rows/s (and an ETA where the row count is known: Parquet).
    :param inputs: other files the caller read (refused as ``out``).
    :returns: a :class:`BatchReport`.
    :raises TabzooInputError: bad source/out, an existing ``out`` without ``overwrite``, an empty source.
    """
    if isinstance(batch_rows, bool) or not isinstance(batch_rows, int) or batch_rows < 1:
        raise TabzooInputError(f"batch_rows must be a positive int, got {batch_rows!r}.")
    src = open_source(source)
    features = _feature_columns(estimator, src, columns)
    keep = [str(k) for k in keep]
    target = None if out is None else Path(out)
    kind = "csv" if target is None else check_out_suffix(target)
    if target is not None:
        _check_out(target, src, inputs, overwrite)
    wanted = list(dict.fromkeys([*keep, *features]))
    t0 = time.perf_counter()
    bar = _progress(src.count_rows(), progress)
    stats: dict[str, Any] = {"rows": 0, "batches": 0, "max": 0, "columns": ()}

    def run(path: Path | None) -> None:
        sink = Sink(path, kind)
        try:
            for table in iter_tables(src, wanted, batch_rows):
                frame = table.to_pandas()
                scored = score_frame(estimator, frame[features], frame, keep)
                sink.write(scored)
                stats["rows"] += len(frame)
                stats["batches"] += 1
                stats["max"] = max(stats["max"], len(frame))
                stats["columns"] = tuple(scored.columns)
                if bar is not None:
                    bar.update(len(frame))
            if sink.rows == 0:
                raise TabzooInputError(f"{src.label} has no rows to predict; check the source.")
        finally:
            sink.close()
            if bar is not None:
                bar.close()

    if target is None:
        run(None)
    else:
        write_via(target, run)
    return BatchReport(rows=stats["rows"], batches=stats["batches"], max_batch_rows=stats["max"], seconds=time.perf_counter() - t0, out=target,
                       columns=tuple(stats["columns"]))
