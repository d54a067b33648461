"""FLOPs of Ramba against the dense models of the scaling benchmark, printed as one JSON document.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/ramba_flops.py \
        > benchmarks/results/ramba-flops-<date>.json

The models and inputs of ``benchmarks/ramba.py``'s scaling runs (:func:`ramba.scaling_models`:
the ``small`` preset, hashing encoder; ``dense`` = the pre-norm transformer of equal width, depth
and FFN 4d on ``[1, L, d_model]``; ``dense_mixer`` = the same RambaModel config with
``mixer="dense"``) on the synthetic batch of L tokens (:func:`ramba._synthetic_batch`), at
L = 512 .. 16384: forward (no grad) and forward + backward.

What is counted: ``torch.utils.flop_counter.FlopCounterMode`` counts the matmul-like ops (mm,
bmm, addmm, convolution, scaled-dot-product attention; a multiply-add = 2 FLOPs), per module.
Ramba runs with ``tabzoo.kernels.use("reference")`` so that its fused kernels (the compiled
bidirectional scan and gathered attention, which the counter cannot see into) run as the eager
torch ops they fuse (the dense models' attention runs as dispatched: the reference would hold
the whole L x L score matrix); the elementwise work of the selective scan, which no counter sees, is added
analytically (``ramba_scan_elementwise``: per token, layer and direction, ``7 * E * N`` FLOPs for
``exp(dt A)`` times-in, ``dt B x``, the state update and ``C h``, plus ``E * N`` exponentials
counted as one FLOP each; ``E = expand * d_model``, ``N = d_state``; backward twice the forward).
Norms, activations and the other elementwise ops of every model are left out (a few per cent).

Under ``use("reference")`` Ramba's block runs its eager chain (``bimamba_inner`` and
``gathered_attention`` report only the reference, so the layers take the per-op path) with every
op's reference backend: the recurrence is ``selective_scan``'s reference, a Python loop over the
tokens forward and backward (it had not finished 16,384 tokens after 12 minutes). ``--scan
compiled`` (the default) keeps that whole chain and swaps only the function of
``selective_scan``'s reference backend for the compiled scan (:mod:`tabzoo.kernels.scan_cpu`,
the same numbers), which the counter cannot see into; the one op of the loop it counts, the readout
``y_t = <h_t, C_t>`` (an einsum counted as a bmm: ``2 E N`` FLOPs per token, direction and layer
forward, two such backward), is added back analytically (``scan_readout``), so both give the same
counts, checked against the reference rows of 2026-11-29 at 512 .. 4,096 tokens (equal to the
FLOP); ``--scan reference``
runs the loop as the first run did. Above ``--count-dense-up-to`` tokens (default 4,096) the dense
models are not run (under the counter their attention took the math path, holding the ``L x L``
scores): the dense transformer's FLOPs come from its exact formula (``dense_formula``, equal to
the counted rows at every length counted) and the plugin's dense variant is left out.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import torch
from torch.utils.flop_counter import FlopCounterMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402
from ramba import _fwd_bwd, _synthetic_batch, scaling_models  # noqa: E402

torch.set_num_threads(1)
LENGTHS = (512, 1024, 2048, 4096, 16384)


def _count(fn: Any) -> tuple[int, dict[str, int]]:
    """Total FLOPs of ``fn()`` and those of each top-level module part (by FlopCounterMode)."""
    counter = FlopCounterMode(display=False, depth=3)
    with counter:
        fn()
    per_module = {
        k: int(sum(v.values())) for k, v in counter.get_flop_counts().items() if k != "Global"
    }
    return int(counter.get_total_flops()), per_module


def scan_elementwise(cfg: Any, length: int) -> int:
    """Forward FLOPs of the selective scan's elementwise work that no counter sees: per token,
    layer and direction ``8 * E * N`` (see the module docstring)."""
    e = cfg.expand * cfg.d_model
    return 8 * e * cfg.d_state * length * cfg.n_layers * 2


def dense_formula(cfg: Any, length: int) -> tuple[int, int]:
    """The dense transformer's counted FLOPs (forward, forward + backward): per layer the products
    ``2 L 12 d^2`` (qkv, out, FFN 4d) and attention ``4 L^2 d``; forward + backward 3x the products
    and 3.5x the attention (as SDPA's backward is counted)."""
    d = cfg.d_model
    prod, attn = 2 * length * 12 * d * d, 4 * length * length * d
    return cfg.n_layers * (prod + attn), cfg.n_layers * (3 * prod + 7 * attn // 2)


def scan_readout(cfg: Any, length: int) -> int:
    """Forward FLOPs the counter sees in the reference recurrence: its readout einsum ``bdn,bn->bd``
    (a bmm), ``2 E N`` per token, direction and layer (batch 1); its backward is two such."""
    return 2 * cfg.expand * cfg.d_model * cfg.d_state * length * 2 * cfg.n_layers


@contextmanager
def compiled_recurrence() -> Iterator[None]:
    """``selective_scan``'s reference backend with the compiled scan as its function (the same
    numbers, no counted op either way: see the module docstring)."""
    from tabzoo.kernels import op_registry, scan_cpu

    if not scan_cpu.available():
        raise SystemExit(
            "--scan compiled needs the compiled library: python -m tabzoo.kernels.scan_build"
        )
    table = op_registry._BACKENDS["selective_scan"]
    ref = table["reference"]

    def scan(
        x: torch.Tensor,
        delta: torch.Tensor,
        A: torch.Tensor,
        B: torch.Tensor,
        C: torch.Tensor,
        D: torch.Tensor | None = None,
        reverse: bool = False,
    ) -> torch.Tensor:
        return scan_cpu.selective_scan_cpu(x, delta, A, B, C, D, reverse)

    table["reference"] = dataclasses.replace(ref, fn=scan)
    try:
        yield
    finally:
        table["reference"] = ref


def one(
    models: dict[str, Any], length: int, scan: str = "compiled", count_dense_up_to: int = 4096
) -> dict[str, Any]:
    from tabzoo.kernels import use

    ramba = models["ramba"]
    batch = _synthetic_batch(length, ramba.cfg.d_text, max_rel_rows=ramba.cfg.max_rel_rows)
    x = torch.randn(1, batch["kind"].shape[1], ramba.cfg.d_model)
    calls = {
        "ramba": (ramba, lambda: ramba(batch)),
        "dense": (models["dense"], lambda: models["dense"](x)),
        "dense_mixer": (models["dense_mixer"], lambda: models["dense_mixer"](batch)),
    }
    rec: dict[str, Any] = {"L": int(batch["kind"].shape[1])}
    formula = dense_formula(ramba.cfg, rec["L"])
    if length > count_dense_up_to:
        calls = {"ramba": calls["ramba"]}
        rec["dense_fwd"], rec["dense_fwdbwd"] = formula
        rec["dense_source"] = "formula (dense_formula)"
    for name, (model, fn) in calls.items():
        # Ramba's fused kernels as their eager ops; the dense models' attention as dispatched (the
        # reference would hold the whole L x L score matrix: GBs at 16k)
        recurrence = (
            compiled_recurrence() if name == "ramba" and scan == "compiled" else nullcontext()
        )
        with use("reference" if name == "ramba" else None), recurrence:
            with torch.no_grad():
                rec[f"{name}_fwd"], parts = _count(fn)
            rec[f"{name}_fwdbwd"], _ = _count(lambda m=model, f=fn: _fwd_bwd(m, f))
        rec[f"{name}_fwd_parts"] = parts
    if scan == "compiled":  # the reference loop's counted readout, added back
        readout = scan_readout(ramba.cfg, rec["L"])
        rec["ramba_scan_readout_fwd"] = readout
        rec["ramba_fwd"] += readout
        rec["ramba_fwdbwd"] += 3 * readout
    if "dense_source" not in rec:
        rec["dense_source"] = "counted"
        rec["dense_formula_equal"] = (rec["dense_fwd"], rec["dense_fwdbwd"]) == formula
    extra = scan_elementwise(ramba.cfg, rec["L"])
    rec["ramba_scan_elementwise_fwd"] = extra
    rec["ramba_fwd_total"] = rec["ramba_fwd"] + extra
    rec["ramba_fwdbwd_total"] = rec["ramba_fwdbwd"] + 3 * extra
    for d in ("dense", "dense_mixer"):
        if f"{d}_fwd" not in rec:
            continue
        rec[f"{d}_over_ramba_fwd"] = rec[f"{d}_fwd"] / rec["ramba_fwd_total"]
        rec[f"{d}_over_ramba_fwdbwd"] = rec[f"{d}_fwdbwd"] / rec["ramba_fwdbwd_total"]
    print(json.dumps({k: v for k, v in rec.items() if not k.endswith("parts")}), file=sys.stderr)
    return rec


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    p.add_argument(
        "--scan",
        choices=("compiled", "reference"),
        default="compiled",
        help="selective_scan's reference recurrence, or the compiled scan in its place",
    )
    p.add_argument(
        "--count-dense-up-to",
        type=int,
        default=4096,
        help="longer: the dense transformer by its formula, the dense variant left out",
    )
    args = p.parse_args()
    models = scaling_models()
    cfg = models["ramba"].cfg
    rows = [one(models, int(n), args.scan, args.count_dense_up_to) for n in args.lengths.split(",")]
    out = {
        "what": __doc__.splitlines()[0],
        "method": " ".join(__doc__.split("\n\n")[2].split()),
        "scan": " ".join(__doc__.split("\n\n")[3].split()),
        "model": {
            "ramba": cfg.__dict__,
            "dense": {
                "d_model": cfg.d_model,
                "n_heads": cfg.n_heads,
                "n_layers": cfg.n_layers,
                "d_ff": 4 * cfg.d_model,
            },
            "dense_mixer": "the same RambaModel config with mixer='dense'",
        },
        "rows": rows,
        "load_average": list(os.getloadavg()),
        "machine": machine_info(),
    }
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
