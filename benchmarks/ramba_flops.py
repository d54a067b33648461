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
"""

from __future__ import annotations

import json
import os
import sys
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


def one(models: dict[str, Any], length: int) -> dict[str, Any]:
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
    for name, (model, fn) in calls.items():
        # Ramba's fused kernels as their eager ops; the dense models' attention as dispatched (the
        # reference would hold the whole L x L score matrix: GBs at 16k)
        with use("reference" if name == "ramba" else None):
            with torch.no_grad():
                rec[f"{name}_fwd"], parts = _count(fn)
            rec[f"{name}_fwdbwd"], _ = _count(lambda m=model, f=fn: _fwd_bwd(m, f))
        rec[f"{name}_fwd_parts"] = parts
    extra = scan_elementwise(ramba.cfg, rec["L"])
    rec["ramba_scan_elementwise_fwd"] = extra
    rec["ramba_fwd_total"] = rec["ramba_fwd"] + extra
    rec["ramba_fwdbwd_total"] = rec["ramba_fwdbwd"] + 3 * extra
    for d in ("dense", "dense_mixer"):
        rec[f"{d}_over_ramba_fwd"] = rec[f"{d}_fwd"] / rec["ramba_fwd_total"]
        rec[f"{d}_over_ramba_fwdbwd"] = rec[f"{d}_fwdbwd"] / rec["ramba_fwdbwd_total"]
    print(json.dumps({k: v for k, v in rec.items() if not k.endswith("parts")}), file=sys.stderr)
    return rec


def main() -> None:
    import argparse

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--lengths", default=",".join(map(str, LENGTHS)))
    args = p.parse_args()
    models = scaling_models()
    cfg = models["ramba"].cfg
    rows = [one(models, int(n)) for n in args.lengths.split(",")]
    out = {
        "what": __doc__.splitlines()[0],
        "method": " ".join(__doc__.split("\n\n")[2].split()),
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
