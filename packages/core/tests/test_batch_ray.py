"""``tabzoo.batch.ray``: a fitted estimator over a Ray Dataset with a local ``ray.init(num_cpus=2)``;
actors load the model from its safetensors checkpoint once each (issue 29 item 2). Runs in the
``ray`` nox session (ray is not in the core test group: it is large)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _icl_testmodel import ICLTestClassifier

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install 'tabzoo-core[ray]' (nox -s ray)")


def test_ray_map_batches_matches_the_in_memory_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tabzoo.batch.ray import predict_ray

    here = str(Path(__file__).resolve().parent)  # actors import the test estimator's module
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    rng = np.random.default_rng(2)
    n = 500
    frame = pd.DataFrame(rng.normal(size=(n, 3)), columns=["a", "b", "c"])
    frame["id"] = np.arange(n)
    y = np.where(frame.b > 0, "pos", "neg")
    clf = ICLTestClassifier(n_estimators=2, device="cpu").fit(frame[["a", "b", "c"]][:150], y[:150])
    stem = clf.save(tmp_path / "clf")
    folder = tmp_path / "rows"
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(n), 4)):
        frame.iloc[part].to_parquet(folder / f"part-{i}.parquet")
    ray.init(num_cpus=2, include_dashboard=False, runtime_env={"env_vars": {"PYTHONPATH": os.environ["PYTHONPATH"]}})
    try:
        rows = ray.data.read_parquet(str(folder))
        got = predict_ray(stem, rows, keep=["id"], batch_size=128, concurrency=2).to_pandas().sort_values("id")
    finally:
        ray.shutdown()
    assert got["id"].tolist() == list(range(n))
    assert got["prediction"].tolist() == clf.predict(frame[["a", "b", "c"]]).tolist()
    np.testing.assert_array_equal(got[["proba_neg", "proba_pos"]].to_numpy(), clf.predict_proba(frame[["a", "b", "c"]]))
