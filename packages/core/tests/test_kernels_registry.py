"""Registry behaviour of tabzoo.kernels: priorities, forcing, env var, errors, costs."""

from __future__ import annotations

import logging

import pytest
import torch
from tabzoo import kernels as K
from tabzoo.errors import KernelNotSupportedError, PluginLoadError
from tabzoo.kernels.op_registry import ENV_VAR

OPS = ["masked_attention", "linear_attention", "selective_scan"]


@pytest.fixture(autouse=True)
def _scan_cpu_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests name the eager default backends; the compiled scan (``cpu_fused``, used where
    it is built) is off here so the choice does not depend on the machine (its own tests:
    test_kernels_scan_cpu.py)."""
    from tabzoo.kernels import scan_cpu

    monkeypatch.setenv(scan_cpu.ENV_VAR, "0")


def _attn_inputs(n: int = 8, requires_grad: bool = False) -> dict:
    q, k, v = torch.randn(3, 1, 2, n, 16).unbind(0)
    if requires_grad:
        q.requires_grad_(True)
    return {"q": q, "k": k, "v": v}


def _scan_inputs(length: int = 9) -> dict:
    b, d, n = 2, 3, 4
    return {
        "x": torch.randn(b, length, d), "delta": torch.rand(b, length, d), "A": -torch.rand(d, n),
        "B": torch.randn(b, length, n), "C": torch.randn(b, length, n),
    }


def _inputs(op: str) -> dict:
    if op == "masked_attention":
        return _attn_inputs()
    if op == "linear_attention":
        return {**_attn_inputs(), "n_context": 5}
    return _scan_inputs()


@pytest.fixture(autouse=True)
def _no_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)


@pytest.fixture
def toy_op():
    """A throwaway op 'toy_add' with two backends, removed afterwards."""
    from tabzoo.kernels.op_registry import _BACKENDS, define_op

    define_op("toy_add", {"y": 1})
    yield "toy_add"
    _BACKENDS.pop("toy_add", None)


def test_every_op_has_reference_and_an_optimised_backend() -> None:
    for op in OPS:
        backends = K.list_backends(op)
        names = [b.name for b in backends]
        assert "reference" in names, op
        assert len(names) >= 2, op
        assert [b.priority for b in backends] == sorted((b.priority for b in backends), reverse=True)
        assert all(b.op == op for b in backends)
    assert {b.op for b in K.list_backends()} >= set(OPS)


def test_dispatch_picks_highest_priority_supported_backend() -> None:
    assert K.select_backend("masked_attention", **_attn_inputs()).name == "sdpa"  # flex refuses CPU unless forced
    assert K.select_backend("linear_attention", **_attn_inputs(), n_context=3).name == "einsum"
    assert K.select_backend("selective_scan", **_scan_inputs()).name == "chunked"


def test_use_forces_backend_and_restores() -> None:
    inp = _attn_inputs()
    with K.use("reference"):
        for op in OPS:
            assert K.select_backend(op, **_inputs(op)).name == "reference"
        assert K.forced_backend() == "reference"
    assert K.forced_backend() is None
    assert K.select_backend("masked_attention", **inp).name == "sdpa"
    with K.use("sdpa"):  # ops without an "sdpa" backend dispatch normally
        assert K.select_backend("masked_attention", **inp).name == "sdpa"
        assert K.select_backend("selective_scan", **_scan_inputs()).name == "chunked"
    with torch.no_grad(), K.use("flex"):
        assert K.select_backend("masked_attention", **inp).name == "flex"


def test_flex_refuses_a_one_block_row_tensor_mask_on_gpu_unless_forced() -> None:
    """A bool tensor mask over <= FLEX_BLOCK queries goes to sdpa on a GPU (a BlockMask rebuilt
    per call, flex recompiled per shape: Ramba's gather groups cost ~80 ms of host time per
    forward on an H100 that way); a Mask object, a longer query axis, or forcing keeps flex."""
    from tabzoo.kernels.attention import FLEX_BLOCK
    from tabzoo.masks import causal

    q, k = torch.randn(2, 4, 8, 16), torch.randn(2, 4, 64, 16)
    small = torch.ones(2, 1, 1, 64, dtype=torch.bool)
    with K.assume_device("cuda", (9, 0)):
        pick = {c.name: r for c, r in K.candidates("masked_attention", q=q, k=k, v=k, mask=small)}
        assert any("one block row" in r for r in pick["flex"]) and pick["sdpa"] == []
        assert K.select_backend("masked_attention", q=q, k=k, v=k, mask=small).name == "sdpa"
        with K.use("flex"):
            assert K.select_backend("masked_attention", q=q, k=k, v=k, mask=small).name == "flex"
        long_q = torch.randn(1, 4, 2 * FLEX_BLOCK, 16)
        big = torch.ones(2 * FLEX_BLOCK, 2 * FLEX_BLOCK, dtype=torch.bool).tril()
        for qq, mask in ((long_q, big), (q, causal())):
            flex = {c.name: r for c, r in K.candidates("masked_attention", q=qq, k=qq, v=qq, mask=mask)}["flex"]
            assert flex == []


def test_forced_backend_that_refuses_raises_with_reasons() -> None:
    with K.use("flex"), pytest.raises(KernelNotSupportedError, match="no backward on CPU"):
        K.masked_attention(**_attn_inputs(requires_grad=True))


def test_use_unknown_name_is_an_error() -> None:
    with pytest.raises(KernelNotSupportedError, match="no op has a backend named 'nope'"):
        with K.use("nope"):
            pass


def test_env_var_forces_and_is_reread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "reference")
    assert K.select_backend("selective_scan", **_scan_inputs()).name == "reference"
    with K.use(None):  # an explicit use() beats the env var
        assert K.select_backend("selective_scan", **_scan_inputs()).name == "chunked"
    with K.use("chunked"):
        assert K.select_backend("selective_scan", **_scan_inputs()).name == "chunked"
    monkeypatch.setenv(ENV_VAR, "einsum")
    assert K.select_backend("selective_scan", **_scan_inputs()).name == "chunked"
    assert K.select_backend("linear_attention", **_attn_inputs(), n_context=2).name == "einsum"
    monkeypatch.setenv(ENV_VAR, "typo")
    with pytest.raises(KernelNotSupportedError, match="typo"):
        K.selective_scan(**_scan_inputs())
    monkeypatch.delenv(ENV_VAR)
    assert K.select_backend("selective_scan", **_scan_inputs()).name == "chunked"


def test_no_backend_fits_lists_every_candidate(toy_op: str) -> None:
    K.register_backend(K.Backend("lo", toy_op, lambda x, y: x + y, priority=1,
                                 not_supported_reasons=lambda inp: ["x too small", "y odd"]))
    K.register_backend(K.Backend("hi", toy_op, lambda x, y: x + y, priority=5, devices=("cuda",)))
    K.register_backend(K.Backend("off", toy_op, lambda x, y: x + y, priority=9, is_available=lambda: False))
    K.register_backend(K.Backend("bf", toy_op, lambda x, y: x + y, priority=3, dtypes=(torch.bfloat16,)))
    with pytest.raises(KernelNotSupportedError) as info:
        K.select_backend(toy_op, x=torch.ones(2))
    msg = str(info.value)
    for expected in ("toy_add/lo", "x too small; y odd", "toy_add/hi", "device 'cpu' not in ['cuda']",
                     "toy_add/off", "not available", "toy_add/bf", "torch.float32"):
        assert expected in msg
    assert msg.index("toy_add/off") < msg.index("toy_add/hi") < msg.index("toy_add/bf") < msg.index("toy_add/lo")


def test_priorities_order_and_defaults(toy_op: str) -> None:
    K.register_backend(K.Backend("a", toy_op, lambda x, y: x + y, priority=1))
    K.register_backend(K.Backend("b", toy_op, lambda x, y: x * 10 + y, priority=2,
                                 not_supported_reasons=lambda inp: [] if inp["y"] == 1 else ["y must be 1"]))
    from tabzoo.kernels.op_registry import dispatch

    assert [b.name for b in K.list_backends(toy_op)] == ["b", "a"]
    assert dispatch(toy_op, {"x": torch.tensor(2.0)}).item() == 21.0  # default y=1 filled in
    assert dispatch(toy_op, {"x": torch.tensor(2.0), "y": 3}).item() == 5.0  # b refuses, a runs
    with K.use("a"):
        assert dispatch(toy_op, {"x": torch.tensor(2.0)}).item() == 3.0


def test_duplicate_registration_names_both(toy_op: str) -> None:
    def first(x, y):
        return x

    def second(x, y):
        return y

    K.register_backend(K.Backend("dup", toy_op, first, origin="dist-one 1.0"))
    with pytest.raises(PluginLoadError) as info:
        K.register_backend(K.Backend("dup", toy_op, second, origin="dist-two 2.0"))
    assert "dist-one 1.0" in str(info.value) and "dist-two 2.0" in str(info.value)
    assert K.list_backends(toy_op)[0].fn is first
    removed = K.unregister_backend(toy_op, "dup")
    assert removed.fn is first and K.list_backends(toy_op) == []
    with pytest.raises(PluginLoadError, match="registered twice"):
        K.register_backend(K.list_backends("selective_scan")[-1])


def test_register_rejects_non_backend() -> None:
    with pytest.raises(TypeError, match="Backend"):
        K.register_backend(("reference", "selective_scan"))  # type: ignore[arg-type]


@pytest.mark.parametrize("op", OPS)
def test_cost_is_present_and_positive(op: str) -> None:
    from tabzoo.kernels.op_registry import _complete

    inputs = _complete(op, _inputs(op))
    for backend in K.list_backends(op):
        cost = backend.cost(inputs)
        assert isinstance(cost, K.Cost)
        assert cost.flops > 0 and cost.bytes > 0, backend.name


def test_cost_models_match_the_documented_formulas() -> None:
    from tabzoo.kernels.op_registry import _complete

    q, k, v = torch.randn(3, 2, 4, 256, 32).unbind(0)
    dense = {b.name: b.cost(_complete("masked_attention", {"q": q, "k": k, "v": v})) for b in K.list_backends("masked_attention")}
    assert dense["sdpa"].flops == dense["reference"].flops == 4 * 2 * 4 * 256 * 256 * 32
    causal = torch.ones(256, 256, dtype=torch.bool).tril()
    (flex,) = [b for b in K.list_backends("masked_attention") if b.name == "flex"]
    sparse = flex.cost(_complete("masked_attention", {"q": q, "k": k, "v": v, "mask": causal}))
    assert sparse.flops == pytest.approx(dense["sdpa"].flops * 3 / 4)  # 3 of 4 blocks of 128 are non-empty
    lin = {b.name: b.cost(_complete("linear_attention", {"q": q, "k": k, "v": v, "n_context": 200}))
           for b in K.list_backends("linear_attention")}
    assert lin["reference"].flops == 4 * 2 * 4 * 256 * 200 * 32
    assert lin["einsum"].flops == 2 * 2 * 4 * (200 + 256) * 32 * 33


def test_unknown_op() -> None:
    with pytest.raises(KernelNotSupportedError, match="unknown kernel op"):
        K.select_backend("no_such_op", x=torch.ones(1))


def test_debug_log_names_the_choice(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="tabzoo.kernels"):
        K.selective_scan(**_scan_inputs())
    assert any("selective_scan -> chunked" in r.getMessage() for r in caplog.records)


def test_mixed_devices_reason() -> None:
    backend = K.list_backends("selective_scan")[-1]
    fake = _scan_inputs()
    fake["x"] = torch.empty(2, 9, 3, device="meta")
    assert any("several device types" in r for r in backend.reasons(fake))


def test_old_module_name_warns_and_is_the_op_registry() -> None:
    import importlib
    import sys

    from tabzoo.kernels import op_registry

    sys.modules.pop("tabzoo.kernels.registry", None)
    with pytest.warns(DeprecationWarning, match="renamed tabzoo.kernels.op_registry"):
        old = importlib.import_module("tabzoo.kernels.registry")
    assert old is op_registry  # same objects, same backends: nothing registered twice
    assert old._BACKENDS is op_registry._BACKENDS
