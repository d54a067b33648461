"""Pretraining resolves its prior through the core's registry."""

from __future__ import annotations

import pytest
from tabzoo.errors import PluginLoadError
from tabzoo.plugins import manager
from tabzoo_ramba.pretraining import synthetic_source


def test_synthetic_source_resolves_the_prior_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("tabzoo_priors", reason="the relational prior is registered by tabzoo-priors")
    db = synthetic_source(n_tables=(2, 2), root_rows=(20, 20))(0)
    assert len(db.table_names) == 2
    monkeypatch.setattr(manager, "_registry", manager.PluginRegistry())  # nothing registered
    with pytest.raises(PluginLoadError, match="pip install tabzoo-priors"):
        synthetic_source()
