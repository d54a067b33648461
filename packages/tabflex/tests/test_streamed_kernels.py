"""Streamed inference goes through the kernel registry, so ``kernels.use`` and ``TABZOO_KERNELS`` apply."""

from __future__ import annotations

import pytest
import torch
from tabzoo import kernels as K
from tabzoo.kernels.op_registry import ENV_VAR
from tabzoo.testing.fixtures import spy_backend
from tabzoo_tabflex.model import TabFlex


@pytest.fixture
def model_and_data() -> tuple[TabFlex, torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    model = TabFlex("tiny").eval()
    x = torch.randn(2, 30, 5)
    y = torch.randint(0, 3, (2, 20))
    return model, x[:, :20], y, x[:, 20:]


@pytest.mark.parametrize("how", ["use", "env"])
def test_forcing_reference_reaches_streamed_inference(model_and_data, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    model, xc, yc, xq = model_and_data
    n_layers = len(model.layers)
    monkeypatch.delenv(ENV_VAR, raising=False)
    with spy_backend("linear_attention_state", "reference") as s_ref, \
            spy_backend("linear_attention_read", "reference") as r_ref, \
            spy_backend("linear_attention_state", "einsum") as s_fast, \
            spy_backend("linear_attention_read", "einsum") as r_fast:
        fast = model.predict_streamed(xc, yc, xq, chunk_size=8)
        assert not s_ref and not r_ref and s_fast and r_fast
        n_state, n_read = len(s_fast), len(r_fast)
        # 20 context rows in chunks of 8: 3 state sums per layer; reads: 3 context + 2 query chunks per layer
        assert (n_state, n_read) == (3 * n_layers, 5 * n_layers)
        if how == "use":
            with K.use("reference"):
                ref = model.predict_streamed(xc, yc, xq, chunk_size=8)
        else:
            monkeypatch.setenv(ENV_VAR, "reference")
            ref = model.predict_streamed(xc, yc, xq, chunk_size=8)
        assert (len(s_ref), len(r_ref)) == (n_state, n_read)
        assert (len(s_fast), len(r_fast)) == (n_state, n_read)  # the fast backends were not called again
    torch.testing.assert_close(ref, fast, rtol=1e-4, atol=1e-4)
    with torch.no_grad():
        direct = model(torch.cat([xc, xq], dim=1), yc)
    torch.testing.assert_close(fast, direct, rtol=1e-4, atol=1e-4)
