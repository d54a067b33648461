"""``tabzoo.batch.dask``: a fitted estimator over a Dask dataframe on a two-process LocalCluster; each
worker loads the model from its safetensors checkpoint once (issue 29 item 2)."""

from __future__ import annotations

import pytest
from _engine_case import EngineCase, check_scores

dd = pytest.importorskip("dask.dataframe", reason="needs the dask extra: pip install 'tabzoo-core[dask]'")
distributed = pytest.importorskip("distributed", reason="needs the dask extra: pip install 'tabzoo-core[dask]'")


def _loads() -> int:
    from tabzoo.batch.load import _load

    return int(_load.cache_info().misses)


def test_two_worker_processes_match_the_in_memory_path(engine_case: EngineCase) -> None:
    from tabzoo.batch.dask import predict_partitions

    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  worker_dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        rows = dd.read_parquet(str(engine_case.folder))
        got = predict_partitions(engine_case.stem, rows, keep=["id"]).compute()
        loads = client.run(_loads)
    assert len(loads) == 2 and all(v == 1 for v in loads.values()), loads  # once per worker process
    check_scores(engine_case, got)
