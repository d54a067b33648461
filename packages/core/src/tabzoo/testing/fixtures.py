"""The pytest hook and fixtures every package's tests share (one place, not a copy per conftest).

pytest finds hooks and fixtures in a ``conftest.py``'s namespace by name, so a package's conftest
imports the ones it wants and they apply to its folder::

    from tabzoo.testing.fixtures import one_torch_thread, pytest_collection_modifyitems  # noqa: F401
    from tabzoo.testing.profiles import register_hypothesis_profiles

    register_hypothesis_profiles(ci=10)

* :func:`pytest_collection_modifyitems`: rounding-only expected failures are not strict
  (:func:`tabzoo.testing.profiles.relax_rounding_xfails`);
* :func:`one_torch_thread` (autouse): one torch thread per test (CI machines are 2 shared cores);
* :func:`auto_precision_is_fp32` (autouse): ``inference_precision="auto"`` means fp32 on every
  machine (:func:`tabzoo.testing.profiles.pin_auto_precision_to_fp32`), for in-context plugins;
* :func:`no_network`: a test that opens a socket fails (``@pytest.mark.usefixtures("no_network")``);
* :func:`blobs`: the small Gaussian-blob classification table the estimator tests share;
* :func:`mixed_frame`: a small pandas table with a categorical column and a missing value;
* :func:`spy_backend`: counts the calls of one kernel backend of the op registry;
* :func:`assert_checkpoint_round_trip`: a case's model saved and loaded by its architecture name alone.

Imports pytest, so only conftests and tests import it; torch loads when a fixture first runs.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tabzoo.testing.profiles import pin_auto_precision_to_fp32, relax_rounding_xfails

__all__ = ["assert_checkpoint_round_trip", "auto_precision_is_fp32", "blobs", "mixed_frame", "no_network", "one_torch_thread", "pytest_collection_modifyitems",
           "spy_backend"]


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """Every expected failure is strict except those whose reason says they are float rounding."""
    relax_rounding_xfails(items)


@pytest.fixture(autouse=True)
def one_torch_thread() -> Iterator[None]:
    """Run each test with one torch thread; the previous count is restored afterwards."""
    import torch

    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture(autouse=True)
def auto_precision_is_fp32(monkeypatch: pytest.MonkeyPatch) -> None:
    """``inference_precision="auto"`` picks fp32 in these tests, whatever the CPU (see
    :func:`~tabzoo.testing.profiles.pin_auto_precision_to_fp32`)."""
    pin_auto_precision_to_fp32(monkeypatch)


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if it opens a network connection (shipped checkpoints load offline)."""
    import socket

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the test tried to open a network connection (socket.socket); "
                             "everything it needs must be on disk")

    monkeypatch.setattr(socket, "socket", refuse)


def blobs(n: int = 120, d: int = 5, k: int = 3, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A small classification table: ``k`` Gaussian centres (scale 3) in ``d`` dimensions and ``n``
    rows around them with unit noise, the same for the same arguments.

    :return: ``X`` of shape (n, d), float64, and ``y`` of shape (n,), int64 labels in [0, k).
    """
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((k, d)) * 3
    y = rng.integers(0, k, n)
    return centers[y] + rng.standard_normal((n, d)), y


def mixed_frame(n: int = 60, seed: int = 0) -> tuple[Any, np.ndarray]:
    """A pandas table (needs pandas) with float columns ``a`` (one NaN, row 3) and ``c`` and a
    categorical ``b`` (``x``/``y``/``z``), and string labels ``"pos"``/``"neg"`` (the sign of ``c``).

    :return: the DataFrame ``[n, 3]`` and the labels ``[n]``.
    """
    import pandas as pd

    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"a": rng.standard_normal(n), "b": pd.Categorical(rng.choice(["x", "y", "z"], n)),
                       "c": rng.standard_normal(n)})
    df.loc[3, "a"] = np.nan
    return df, np.where(df["c"] > 0, "pos", "neg")


@contextlib.contextmanager
def spy_backend(op: str, name: str) -> Iterator[list[int]]:
    """Count the calls of backend ``name`` of kernel op ``op``: inside the block it is registered
    with a counting wrapper (one entry appended to the yielded list per call); restored after.

    :raises KeyError: no such op or backend in :mod:`tabzoo.kernels.op_registry`.
    """
    from tabzoo.kernels.op_registry import _BACKENDS

    original = _BACKENDS[op][name]
    calls: list[int] = []

    def counted(**kw: object) -> object:
        calls.append(1)
        return original.fn(**kw)

    _BACKENDS[op][name] = dataclasses.replace(original, fn=counted)
    try:
        yield calls
    finally:
        _BACKENDS[op][name] = original


def assert_checkpoint_round_trip(case: Any, directory: Any, *inputs: Any, seed: int = 3) -> None:
    """The model of conformance case ``case`` (built with ``seed``), saved with its config through
    :func:`tabzoo.checkpoint.save_checkpoint` into ``directory`` and loaded back by
    :func:`tabzoo.checkpoint.load_model` with no ``build`` (the registered architecture rebuilds it
    from the saved config), gives the same outputs on ``inputs`` (``model(*inputs)``).

    The kit's ``checkpoint_roundtrip`` check builds the loaded model itself; this is the path of a
    user's ``load_model(stem)``, through the plugin registry.
    """
    import torch

    from tabzoo.checkpoint import load_model, save_checkpoint

    model = case.build(seed)
    stem = Path(directory) / case.name
    save_checkpoint(stem, model, architecture=case.architecture or case.name, config=model.config)
    again = load_model(stem)
    assert type(again) is type(model), f"load_model built a {type(again).__name__}, saved a {type(model).__name__}"
    with torch.no_grad():
        torch.testing.assert_close(again(*inputs), model(*inputs))
