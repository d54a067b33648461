"""``tabzoo.batch.ray``: a fitted estimator over a Ray Dataset with a local ``ray.init(num_cpus=2)``;
actors load the model from its safetensors checkpoint once each (issue 29 item 2). Runs in the
``ray`` nox session (ray is not in the core test group: it is large)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _engine_case import EngineCase, check_scores

ray = pytest.importorskip("ray", reason="needs the ray extra: pip install 'tabzoo-core[ray]' (nox -s ray)")

#: A small local node: 2 CPUs, no GPU, no dashboard, a 128 MB object store.
LOCAL_NODE: dict[str, Any] = {"num_cpus": 2, "num_gpus": 0, "include_dashboard": False,
                              "object_store_memory": 128 * 1024 * 1024}
#: Node starts tried. Ray's raylet aborts when its dashboard agent has not written its port file within a
#: fixed 15 s (not configurable in Ray 2.60); on a loaded 2-core machine (load 8-18) the agent's
#: Python start took 16-25 s, so a first start can fail; a later one finds the imports warm.
STARTS = 3


def _children() -> set[int]:
    """The ids of this process's child processes (from ``/proc``)."""
    me, kids = os.getpid(), set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            kids.add(int(stat.parent.name))
    return kids


@pytest.fixture
def local_ray(engine_case: EngineCase) -> Iterator[None]:
    """A local Ray node whose workers see the test estimator's module (``PYTHONPATH``); shut down after."""
    env = {"env_vars": {"PYTHONPATH": os.environ["PYTHONPATH"]}}
    for start in range(1, STARTS + 1):
        before = _children()
        try:
            ray.init(**LOCAL_NODE, runtime_env=env)
            break
        except Exception as err:  # Ray raises a bare Exception when its node does not start in time.
            ray.shutdown()
            for pid in _children() - before:  # the failed start's GCS and agents, which Ray leaves running
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if start == STARTS or "timed out during startup" not in str(err):
                raise
    try:
        yield
    finally:
        ray.shutdown()


@pytest.mark.usefixtures("local_ray")
def test_ray_map_batches_matches_the_in_memory_path(engine_case: EngineCase) -> None:
    from tabzoo.batch.ray import predict_ray

    rows = ray.data.read_parquet(str(engine_case.folder))
    got = predict_ray(engine_case.stem, rows, keep=["id"], batch_size=128, concurrency=2).to_pandas()
    check_scores(engine_case, got)
