"""Host-side cost of Ramba's forward (issue 27: on an H100 the forward took ~80 ms at every length
while its GPU kernels took ~1-2 ms): the index structure is built in collation, the forward
reads nothing back to the host, and no gather
group's attention goes to flex_attention on a GPU (a BlockMask rebuilt per call and flex
recompiled per shape were that cost)."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from tabzoo import kernels as K
from tabzoo_ramba.api import sequences_for
from tabzoo_ramba.conformance import LOOKBACK_S, SHOP_TARGET, shop_database
from tabzoo_ramba.layers import row_structure
from tabzoo_ramba.model import RambaModel
from tabzoo_ramba.sampling import SamplerConfig
from tabzoo_ramba.serialize import collate
from tabzoo_ramba.text import default_encoder
from torch.overrides import TorchFunctionMode

HOST_READS = {"__bool__", "__int__", "__float__", "__index__", "item", "tolist", "nonzero", "unique",
              "unique_consecutive", "argwhere", "cpu", "numpy"}


class _HostReads(TorchFunctionMode):
    """Records every torch call that reads a tensor's values back to the host (a GPU sync)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []
        self.paused = False

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = getattr(func, "__name__", "")
        if name in HOST_READS and not self.paused:
            self.seen.append(name)
        return func(*args, **(kwargs or {}))


def _batch(seed: int = 0, max_rel_rows: int | None = 32) -> dict[str, Any]:
    db, seeds = shop_database(seed)
    seqs = sequences_for(db, seeds, SHOP_TARGET, lookback_s=LOOKBACK_S, sampler=SamplerConfig(n_child=5, max_rows=30))
    return collate(seqs, default_encoder("hashing"), max_rel_rows=max_rel_rows)


def _same(a: Any, b: Any) -> None:
    """``a`` and ``b`` hold equal tensors (exactly) and plain values, in the same nesting."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype and torch.equal(a, b)
    elif isinstance(a, dict):
        assert sorted(a) == sorted(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    else:
        assert a == b


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_collation_builds_the_forward_structure(seed: int) -> None:
    """The structure and gate pairs collated into the batch are those the forward builds from
    ``row``/``edges``/``col`` (the fallback), and the forward's output is identical either way."""
    torch.manual_seed(seed)
    model = RambaModel({"preset": "tiny", "text_encoder": "hashing"}).eval()
    batch = _batch(seed, max_rel_rows=model.cfg.max_rel_rows)
    bare = {k: v for k, v in batch.items() if k not in ("struct", "gate_index")}
    _same(batch["struct"], row_structure(batch["row"], batch["edges"], int(batch["n_rows"]), model.cfg.max_rel_rows))
    for got, want in zip(model.gate_inputs(batch), model.gate_inputs(bare), strict=True):
        assert torch.equal(got, want)
    other = _batch(seed, max_rel_rows=model.cfg.max_rel_rows + 7)  # built for another model: rebuilt
    with torch.no_grad():
        z = model(batch)
        assert torch.equal(z, model(bare)) and torch.equal(z, model(other))
    intra = batch["struct"]["intra"]["groups"]
    assert all(k is q for q, k, *_ in intra), "intra-row groups gather q, k and v with one index"


def test_the_forward_reads_nothing_back_to_the_host(monkeypatch) -> None:
    """With the structure from collation the whole forward (embedding, gates, blocks) runs without
    a host read (masked_attention's own check for rows without keys, core, is not counted); a
    batch collated without it pays the reads of building it."""
    import tabzoo_ramba.layers as layers

    torch.manual_seed(0)
    model = RambaModel({"preset": "tiny", "text_encoder": "hashing"}).eval()
    batch = _batch(max_rel_rows=model.cfg.max_rel_rows)
    spy = _HostReads()
    real = layers.masked_attention

    def attention(*args: Any, **kwargs: Any) -> torch.Tensor:
        spy.paused = True
        try:
            return real(*args, **kwargs)
        finally:
            spy.paused = False

    monkeypatch.setattr(layers, "masked_attention", attention)
    with torch.no_grad(), spy:
        x = model(batch)
    assert spy.seen == []
    with spy:  # the spy does see a host read
        bool(x.sum() > 0)
    assert spy.seen == ["__bool__"]
    import tabzoo_ramba.structure as structure

    reads: list[str] = []
    real_host = structure.host_structure
    monkeypatch.setattr(structure, "host_structure", lambda *a, **k: reads.append("built") or real_host(*a, **k))
    with torch.no_grad():
        model({k: v for k, v in batch.items() if k != "struct"})
    assert reads == ["built"]


def test_gather_groups_do_not_go_to_flex_on_a_gpu() -> None:
    """Intra-row groups need no mask (rows of one size share a group); every group, masked or not,
    is run by a dense kernel (Triton or sdpa) on a GPU, not flex_attention."""
    batch = _batch(1)
    struct = row_structure(batch["row"], batch["edges"], int(batch["n_rows"]), max_rel_rows=32)
    assert all(mask is None for *_, mask in struct["intra"]["groups"])
    masked = 0
    for kind in ("intra", "rel"):
        for _, _, (rows, q_w, k_w), mask in struct[kind]["groups"]:
            q, k = torch.randn(rows, 2, q_w, 16), torch.randn(rows, 2, k_w, 16)
            masked += mask is not None
            with K.assume_device("cuda", (9, 0)):
                assert K.select_backend("masked_attention", q=q, k=k, v=k, mask=mask).name != "flex"
    assert masked, "the shop batch has rel groups with padded keys"
