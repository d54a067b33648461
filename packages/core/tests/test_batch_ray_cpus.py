"""``tabzoo.batch.ray.actor_cpus``: the default CPUs per scoring actor leave one CPU of the cluster to
Ray's read tasks, so that ``predict_ray`` cannot hang with every CPU held by actors waiting for reads
(2 actors x 1 CPU on ``ray.init(num_cpus=2)`` hung: 'requested resources: 3/2 CPU'). Needs no ray."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.batch.ray import actor_cpus, predict_ray
from tabzoo.errors import TabzooInputError


@given(cpus=st.integers(1, 64), actors=st.integers(1, 16))
def test_actors_leave_one_cpu_for_reading(cpus: int, actors: int) -> None:
    share = actor_cpus(float(cpus), actors)
    assert 0 < share <= 1.0
    if cpus >= 2:
        assert share * actors <= cpus - 1 + 1e-9, (cpus, actors, share)


def test_two_actors_on_two_cpus_take_half_a_cpu_each() -> None:
    assert actor_cpus(2.0, 2) == pytest.approx(0.5)
    assert actor_cpus(8.0, 2) == 1.0


@pytest.mark.parametrize("kwargs", [{"concurrency": 0}, {"concurrency": True}, {"num_cpus": 0},
                                    {"num_cpus": -1.0}, {"num_cpus": "1"}])
def test_bad_actor_settings_are_refused_before_ray_is_used(kwargs: dict[str, object]) -> None:
    with pytest.raises(TabzooInputError):
        predict_ray("unused", object(), **kwargs)  # type: ignore[arg-type]
