"""Prediction at scale (issue 29): stream a CSV/Parquet source of any size through a fitted estimator.

* :func:`predict_dataset` (:mod:`tabzoo.batch.stream`): a file, a folder of files or a
  ``pyarrow.dataset.Dataset`` scored ``batch_rows`` at a time, labels and probabilities from one
  model pass, written incrementally to Parquet or CSV and renamed into place at the end.
* :func:`load_estimator` (:mod:`tabzoo.batch.load`): a fitted estimator back from the safetensors +
  JSON pairs of its ``save`` (no pickle), as the Dask and Ray workers load it.
* :mod:`tabzoo.batch.dask` (``tabzoo-core[dask]``) and :mod:`tabzoo.batch.ray` (``tabzoo-core[ray]``):
  the same scoring over a Dask dataframe's partitions or a Ray Dataset's batches.

Needs pandas and pyarrow (``tabzoo-core[pandas,arrow]``).
"""

from __future__ import annotations

from tabzoo.batch.frames import proba_columns, score_frame
from tabzoo.batch.load import load_estimator
from tabzoo.batch.stream import DEFAULT_BATCH_ROWS, BatchReport, predict_dataset

__all__ = ["DEFAULT_BATCH_ROWS", "BatchReport", "load_estimator", "predict_dataset", "proba_columns", "score_frame"]
