"""Numbers are checked at the command line's boundary; an empty conformance name is refused."""

from __future__ import annotations

import argparse
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.cli import main
from tabzoo.cli.argtypes import finite, whole


@given(st.integers(-10**6, 10**6), st.integers(0, 5))
def test_whole_accepts_exactly_the_numbers_at_or_above_its_minimum(value: int, minimum: int) -> None:
    parse = whole(minimum)
    if value >= minimum:
        assert parse(str(value)) == value
    else:
        with pytest.raises(argparse.ArgumentTypeError, match=f">= {minimum}"):
            parse(str(value))


@pytest.mark.parametrize("text", ["1.5", "abc", "", "nan"])
def test_whole_refuses_what_is_not_a_whole_number(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="whole number"):
        whole(0)(text)


@given(st.floats(allow_nan=True, allow_infinity=True), st.booleans())
def test_finite_accepts_exactly_the_finite_numbers_in_range(value: float, strict: bool) -> None:
    parse = finite(0.0, strict=strict)
    ok = math.isfinite(value) and (value > 0.0 if strict else value >= 0.0)
    if ok:
        assert parse(repr(value)) == value
    else:
        with pytest.raises(argparse.ArgumentTypeError, match="finite number"):
            parse(repr(value))


@pytest.mark.parametrize("name", ["", " ", ",", " , "])
def test_conformance_without_a_name_is_refused(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", name]) == 2
    err = capsys.readouterr().err
    assert "no case named" in err and "all" in err
