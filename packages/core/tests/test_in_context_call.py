"""check_in_context_call: the in-context protocol's shared input validation."""

import math

import pytest
import torch
from tabzoo.errors import TabzooInputError
from tabzoo.table.validation import check_in_context_call


def _ok():
    x = torch.randn(2, 6, 3)
    y = torch.tensor([[0, 1, 0, 1, 0, 0], [1, 2, 1, 2, 0, 0]], dtype=torch.float32)
    return x, y


def test_valid_call_returns_the_context_labels():
    x, y = _ok()
    assert torch.equal(check_in_context_call(x, y, 4, 3), y[:, :4])


def test_nan_features_are_missing_values_not_errors():
    x, y = _ok()
    x[0, 1, 2] = math.nan
    check_in_context_call(x, y, 4, 3)


@pytest.mark.parametrize("case", ["inf_feature", "nan_label", "single_class", "too_many_classes",
                                  "empty_context", "no_query", "batch_mismatch"])
def test_each_bad_call_raises_with_a_fix(case):
    x, y, n = *_ok(), 4
    if case == "inf_feature":
        x[1, 5, 0] = -math.inf
    elif case == "nan_label":
        y[0, 2] = math.nan
    elif case == "single_class":
        y[1, :4] = 1
    elif case == "too_many_classes":
        y[0, 0] = 3
    elif case == "empty_context":
        n = 0
    elif case == "no_query":
        n = 6
    else:
        y = y[:1]
    with pytest.raises(TabzooInputError) as err:
        check_in_context_call(x, y, n, 3)
    assert len(str(err.value)) >= 20
