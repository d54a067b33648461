"""Shared fixtures of the orion-msp tests (tiny sizes: the machine has 2 shared cores)."""

from __future__ import annotations

import pytest
from tabzoo.testing.fixtures import (  # noqa: F401  (pytest finds them here)
    auto_precision_is_fp32,
    no_network,
    one_torch_thread,
    pytest_collection_modifyitems,
)
from tabzoo.testing.profiles import register_hypothesis_profiles

register_hypothesis_profiles(
    ci=10
)  # ci: derandomized; random: fresh examples (nox -s tests_random)


@pytest.fixture
def few_auto_fine_tune_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    """``fine_tune="auto"`` fine-tunes tables of 64-400 training rows with the core's 100 steps; with this fixture the
    same decision runs 4 tiny steps without a progress bar, so a test of what "auto" does stays fast (the rule
    itself is tested unpatched in ``test_orion_finetune_auto.py``, the real steps in ``benchmarks/realdata.py`` runs)."""
    import dataclasses

    import tabzoo_orion_msp.estimators as est_mod
    from tabzoo_orion_msp.fine_tune import auto_fine_tune

    def rule(n_rows: int):  # type: ignore[no-untyped-def]
        cfg = auto_fine_tune(n_rows)
        return (
            None
            if cfg is None
            else dataclasses.replace(
                cfg, steps=4, eval_every=2, context_size=64, query_size=32, progress=False
            )
        )

    monkeypatch.setattr(est_mod, "auto_fine_tune", rule)


@pytest.fixture
def tiny():  # type: ignore[no-untyped-def]
    from tabzoo_orion_msp.conformance import make_model

    return make_model(0)
