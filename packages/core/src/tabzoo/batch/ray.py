"""A fitted estimator over a Ray Dataset's batches (``pip install 'tabzoo-core[ray]'``).

``map_batches`` runs a pool of actors; each actor loads the fitted estimator from its safetensors +
JSON pairs once, in its constructor (never a pickled model), and scores pandas batches with the
same one-pass scoring as :func:`tabzoo.batch.predict_dataset`::

    import ray
    from tabzoo.batch.ray import predict_ray

    clf.save("fitted/clf")
    ray.init(num_cpus=2)
    rows = ray.data.read_parquet("queries/")
    predict_ray("fitted/clf", rows).write_parquet("predictions/")
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tabzoo.batch.frames import score_frame
from tabzoo.batch.load import load_estimator
from tabzoo.errors import TabzooInputError
from tabzoo.params import check_number

__all__ = ["Scorer", "actor_cpus", "predict_ray"]


class Scorer:
    """The actor of :func:`predict_ray`: loads the estimator once, scores pandas batches."""

    def __init__(self, path: str, features: Sequence[str] | None, keep: Sequence[str], device: str | None) -> None:
        self.est = load_estimator(path, device=device)
        names = getattr(self.est, "feature_names_in_", None)
        self.features = list(features) if features is not None else None if names is None else [str(c) for c in names]
        self.keep = list(keep)

    def __call__(self, batch: Any) -> Any:
        features = self.features if self.features is not None else [c for c in batch.columns if c not in self.keep]
        missing = [c for c in [*features, *self.keep] if c not in batch.columns]
        if missing:
            raise TabzooInputError(f"the dataset lacks the columns {missing}; its columns are {list(batch.columns)}.")
        return score_frame(self.est, batch[features], batch, self.keep)


def predict_ray(checkpoint: str | Path, dataset: Any, *, columns: Sequence[str] | None = None, keep: Sequence[str] = (),
                device: str | None = "cpu", batch_size: int = 4096, concurrency: int = 2,
                num_cpus: float | None = None) -> Any:
    """A lazy Ray Dataset of ``prediction`` (+ ``proba_<class>``) for every row of ``dataset``.

    :param checkpoint: the stem of a fitted estimator saved with ``est.save(stem)``, readable by every node.
    :param dataset: a ``ray.data.Dataset`` holding the feature columns.
    :param columns: the feature columns (default: the estimator's ``feature_names_in_``).
    :param keep: columns copied to the output (e.g. an id).
    :param batch_size: rows per batch given to an actor.
    :param concurrency: actors (each holds one copy of the model).
    :param num_cpus: CPUs reserved per actor. Default: :func:`actor_cpus` -- at most 1, and small enough
        that the actors leave one of the cluster's CPUs to Ray's read tasks. Actors that reserve every
        CPU starve the Parquet reads they wait for, and the job hangs without an error (seen with 2
        actors of 1 CPU on ``ray.init(num_cpus=2)``).
    """
    check_number("concurrency", concurrency, "positive_int", where="predict_ray: ")
    if num_cpus is None:
        import ray

        num_cpus = actor_cpus(float(ray.cluster_resources().get("CPU", 1.0)), concurrency)
    check_number("num_cpus", num_cpus, "positive", where="predict_ray: ")
    return dataset.map_batches(
        Scorer, fn_constructor_kwargs={"path": str(checkpoint), "features": None if columns is None else list(columns),
                                       "keep": list(keep), "device": device},
        batch_format="pandas", batch_size=batch_size, concurrency=concurrency, num_cpus=num_cpus,
    )


def actor_cpus(cluster_cpus: float, concurrency: int) -> float:
    """CPUs per actor so that ``concurrency`` actors leave one CPU free for reading: ``min(1, (C - 1) / k)``,
    at least 0.05 (a 1-CPU cluster's actors share it with the reads)."""
    return max(0.05, min(1.0, (cluster_cpus - 1.0) / concurrency))
