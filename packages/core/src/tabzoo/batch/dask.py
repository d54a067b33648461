"""A fitted estimator over the partitions of a Dask dataframe (``pip install 'tabzoo-core[dask]'``).

Workers never receive a pickled model: each task carries the checkpoint's path, and each worker
process loads the fitted estimator from its safetensors + JSON pairs once
(:func:`tabzoo.batch.load.load_estimator` caches it per process), then scores its partitions with
the same one-pass scoring as :func:`tabzoo.batch.predict_dataset`::

    import dask.dataframe as dd
    from distributed import Client
    from tabzoo.batch.dask import predict_partitions

    clf.save("fitted/clf")                                # once, after fit
    with Client(n_workers=2, threads_per_worker=1):
        rows = dd.read_parquet("queries/")               # a folder of Parquet files
        predict_partitions("fitted/clf", rows).to_parquet("predictions/")
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tabzoo.batch.frames import score_frame
from tabzoo.batch.load import load_estimator
from tabzoo.errors import TabzooInputError

__all__ = ["output_meta", "predict_partitions", "score_partition"]


def output_meta(est: Any, keep_dtypes: dict[str, Any]) -> Any:
    """An empty pandas DataFrame with the output's columns and dtypes (Dask's ``meta``)."""
    import pandas as pd

    cols: dict[str, Any] = {k: pd.Series(dtype=d) for k, d in keep_dtypes.items()}
    classes = getattr(est, "classes_", None)
    if classes is None or not hasattr(est, "predict_proba"):
        cols["prediction"] = pd.Series(dtype="float64")
        return pd.DataFrame(cols)
    labels = np.asarray(classes)
    cols["prediction"] = pd.Series(dtype=object if labels.dtype.kind in "OUS" else labels.dtype)
    for c in labels:
        cols[f"proba_{c}"] = pd.Series(dtype="float64")
    return pd.DataFrame(cols)


def score_partition(part: Any, path: str, features: Sequence[str], keep: Sequence[str], device: str | None) -> Any:
    """Score one partition (a pandas DataFrame) with the estimator saved at ``path``, keeping its index."""
    est = load_estimator(path, device=device)  # once per worker process
    if len(part) == 0:
        return output_meta(est, {k: part[k].dtype for k in keep})
    out = score_frame(est, part[list(features)], part, keep)
    out.index = part.index
    return out


def predict_partitions(checkpoint: str | Path, ddf: Any, *, columns: Sequence[str] | None = None,
                       keep: Sequence[str] = (), device: str | None = "cpu") -> Any:
    """A lazy Dask dataframe of ``prediction`` (+ ``proba_<class>``) for every row of ``ddf``.

    :param checkpoint: the stem a fitted estimator was saved to (``est.save(stem)``), readable by
        every worker (a shared or local path).
    :param ddf: the rows, a ``dask.dataframe.DataFrame`` holding the feature columns.
    :param columns: the feature columns (default: the estimator's ``feature_names_in_``).
    :param keep: columns of ``ddf`` copied to the output (e.g. an id).
    :param device: the workers' device (``None``: the saved one).
    """
    est = load_estimator(checkpoint, device=device)
    names = getattr(est, "feature_names_in_", None)
    features = [str(c) for c in (columns if columns is not None else names if names is not None else ddf.columns)]
    missing = [c for c in [*features, *keep] if c not in ddf.columns]
    if missing:
        raise TabzooInputError(f"the dataframe lacks the columns {missing}; its columns are {list(ddf.columns)}.")
    meta = output_meta(est, {k: ddf[k].dtype for k in keep})
    return ddf.map_partitions(score_partition, str(checkpoint), features, list(keep), device, meta=meta)
