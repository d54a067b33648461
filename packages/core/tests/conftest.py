"""Shared fixtures of the core tests."""

from __future__ import annotations

import pytest
from tabzoo.testing.fixtures import pytest_collection_modifyitems  # noqa: F401  (pytest finds it here)
from tabzoo.testing.profiles import register_hypothesis_profiles

register_hypothesis_profiles(ci=20)  # ci: derandomized; random: fresh examples (nox -s tests_random)


@pytest.fixture(autouse=True, scope="session")
def _private_plugin_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Plugin discovery caches in a folder of this test session, never the user's cache
    (subprocesses inherit it)."""
    import os

    os.environ.setdefault("TABZOO_CACHE_DIR", str(tmp_path_factory.mktemp("tabzoo-cache")))


@pytest.fixture
def engine_case(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """The Dask and Ray tests' shared case (:mod:`_engine_case`): a saved classifier and a Parquet folder."""
    from _engine_case import make_engine_case

    return make_engine_case(tmp_path, monkeypatch, seed=1, n=600, parts=6)
