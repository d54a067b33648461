"""``tabzoo.batch.ray``: a fitted estimator over a Ray Dataset with a local ``ray.init(num_cpus=2)``;
actors load the model from its safetensors checkpoint once each (issue 29 item 2). Runs in the
``ray`` nox session (ray is not in the core test group: it is large)."""

from __future__ import annotations

import os

import pytest
from _engine_case import EngineCase, check_scores

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install 'tabzoo-core[ray]' (nox -s ray)")


def test_ray_map_batches_matches_the_in_memory_path(engine_case: EngineCase) -> None:
    from tabzoo.batch.ray import predict_ray

    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": os.environ["PYTHONPATH"]}})
    try:
        rows = ray.data.read_parquet(str(engine_case.folder))
        got = predict_ray(engine_case.stem, rows, keep=["id"], batch_size=128, concurrency=2).to_pandas()
    finally:
        ray.shutdown()
    check_scores(engine_case, got)
