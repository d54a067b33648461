"""Stochastic masking: exact selected and randomised shares, for small counts too."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo_npt.masking import randomise, select_exact, stochastic_count, stochastic_mask


@given(n=st.integers(1, 40), d=st.integers(1, 6), p=st.floats(0.0, 1.0), seed=st.integers(0, 2**31 - 1),
       density=st.floats(0.0, 1.0))
def test_counts_are_within_one_cell_of_the_shares(n: int, d: int, p: float, seed: int, density: float) -> None:
    g = torch.Generator().manual_seed(seed)
    cand = torch.rand(n, d, generator=g) < density
    draw = stochastic_mask(cand, p, g, random_share=0.1)
    c = int(cand.sum())
    m = int(draw.selected.sum())
    r = int(draw.randomised.sum())
    assert math.floor(p * c) <= m <= math.ceil(p * c)  # exact share of the candidates
    assert math.floor(0.1 * m) <= r <= math.ceil(0.1 * m)  # exact 10% of the selected, any m
    assert not bool((draw.masked & draw.randomised).any())  # disjoint
    assert not bool((draw.selected & ~cand).any())  # only candidates are selected


@pytest.mark.parametrize("m", [1, 3, 5, 7, 12, 25])
def test_randomised_share_is_exactly_ten_percent_in_expectation(m: int) -> None:
    """A fixed int(0.1 * m) would randomise nothing for m < 10; the stochastic count is unbiased."""
    g = torch.Generator().manual_seed(m)
    selected = torch.ones(m, dtype=torch.bool)
    draws = 3000
    total = sum(int(select_exact(selected, 0.1, g).sum()) for _ in range(draws))
    mean = total / draws
    sd = math.sqrt(0.25 / draws)  # a Bernoulli(frac) part has variance <= 1/4
    assert abs(mean - 0.1 * m) < 4 * sd + 1e-9


def test_stochastic_count_is_deterministic_for_integers() -> None:
    g = torch.Generator().manual_seed(0)
    assert [stochastic_count(x, g) for x in (0.0, 1.0, 7.0)] == [0, 1, 7]
    with pytest.raises(TabzooInputError, match="share"):
        select_exact(torch.ones(3, dtype=torch.bool), 1.5, g)


@given(seed=st.integers(0, 10_000))
def test_randomise_draws_valid_classes_and_keeps_other_cells(seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    cards = torch.tensor([0, 3, 2, 0])
    values = torch.tensor([[0.5, 2.0, 1.0, -1.0]] * 50)
    where = torch.rand(values.shape, generator=g) < 0.5
    out = randomise(values, where, cards, g)
    assert torch.equal(out[~where], values[~where])
    cat = out[:, 1:3]
    assert bool(((cat >= 0) & (cat < cards[1:3].float()) & (cat == cat.round())).all())
