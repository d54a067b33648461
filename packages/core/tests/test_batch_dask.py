"""``tabzoo.batch.dask``: a fitted estimator over a Dask dataframe on a two-process LocalCluster; each
worker loads the model from its safetensors checkpoint once (issue 29 item 2)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _icl_testmodel import ICLTestClassifier

dd = pytest.importorskip("dask.dataframe", reason="needs the dask extra: pip install 'tabzoo-core[dask]'")
distributed = pytest.importorskip("distributed", reason="needs the dask extra: pip install 'tabzoo-core[dask]'")


def _loads() -> int:
    from tabzoo.batch.load import _load

    return int(_load.cache_info().misses)


def test_two_worker_processes_match_the_in_memory_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tabzoo.batch.dask import predict_partitions

    here = str(Path(__file__).resolve().parent)  # workers import the test estimator's module
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    rng = np.random.default_rng(1)
    n = 600
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    frame["id"] = np.arange(n)
    y = np.where(frame.a - frame.c > 0, "up", "down")
    clf = ICLTestClassifier(n_estimators=2, device="cpu").fit(frame[["a", "b", "c"]][:150], y[:150])
    stem = clf.save(tmp_path / "fitted" / "clf")
    folder = tmp_path / "rows"
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(n), 6)):
        frame.iloc[part].to_parquet(folder / f"part-{i}.parquet")
    with distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None,
                                  worker_dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        rows = dd.read_parquet(str(folder))
        got = predict_partitions(stem, rows, keep=["id"]).compute().sort_values("id")
        loads = client.run(_loads)
    assert len(loads) == 2 and all(v == 1 for v in loads.values()), loads  # once per worker process
    want = clf.predict_proba(frame[["a", "b", "c"]])
    assert got["id"].tolist() == list(range(n))
    assert got["prediction"].astype(str).tolist() == clf.predict(frame[["a", "b", "c"]]).tolist()
    np.testing.assert_array_equal(got[["proba_down", "proba_up"]].to_numpy(), want)
