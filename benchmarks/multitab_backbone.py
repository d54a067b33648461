"""Which backbone change lets MultiTab-Net match the single-task MLP (issue 26, Deliver 1); JSON lines.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/multitab_backbone.py \
        --variants base plr skip plr_skip --settings 1 3 2 4 --seeds 0 --out /tmp/backbone.jsonl
    ... python benchmarks/multitab_backbone.py --summary /tmp/backbone.jsonl --out benchmarks/results/x.json

Each variant is MultiTab-Net (multi-token, T-/->T mask) with the recipe of the committed grid
(``benchmarks/multitab.py grid --design sizes --epochs 100 --patience 8 --patience-steps 150
--batch-size auto --lr 2e-3 --d-embed 8``) plus the variant's settings, fitted on settings of that
grid (the same seeded draws: ``MultiTabBench(...).sample(seed=1000 * seed + setting)``). A line
holds the test scores and the validation scores of the kept epoch (the best mean validation EV,
the early-stopping criterion). Variants are *chosen on the validation scores only*; the test
scores and Δm against the committed single-task MLP of the same draw
(``multitab-grid-sizes{,-b,-c}-2026-11-28.json``) are reported beside them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from multitab import SIZES, draw, patience, recipe  # noqa: E402
from tabzoo_multitab import delta_m  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
COMMITTED = [RESULTS / f"multitab-grid-sizes{s}-2026-11-28.json" for s in ("", "-b", "-c")]
#: the variants: settings over the grid's recipe (``base`` = the committed grid's MultiTab-Net, linear embeddings)
VARIANTS: dict[str, dict[str, Any]] = {
    "base": dict(num_embedding="linear", skip_hidden=0),
    # Gorishniy et al. 2022 (NeurIPS), PLR numeric embeddings; sigma = initial frequency scale
    "plr": dict(num_embedding="plr", plr_sigma=0.1, skip_hidden=0),
    "plr_s1": dict(num_embedding="plr", plr_sigma=1.0, skip_hidden=0),
    "plr_s001": dict(num_embedding="plr", plr_sigma=0.01, skip_hidden=0),
    # a wide-and-deep skip path: flattened feature tokens -> MLP -> added to the task tokens
    "skip": dict(num_embedding="linear", skip_hidden=128, skip_layers=1),
    "plr_skip": dict(num_embedding="plr", plr_sigma=0.1, skip_hidden=128),
    "plr_skip_s1": dict(num_embedding="plr", plr_sigma=1.0, skip_hidden=128),
    # round 2 (after the grid with skip): a wider or deeper skip path, no dropout
    "skip256": dict(num_embedding="linear", skip_hidden=256, skip_layers=1),
    "skip2": dict(num_embedding="linear", skip_hidden=128, skip_layers=2),
    "skip_drop0": dict(num_embedding="linear", skip_hidden=128, skip_layers=1, dropout=0.0),
    "skip_e16": dict(num_embedding="linear", skip_hidden=128, d_embed=16, n_heads=4),
    "plr_e16": dict(num_embedding="plr", plr_sigma=0.1, skip_hidden=0, d_embed=16, n_heads=4),
    # round 3 (issue 26 item 4, speed): the default (skip2) with one encoder block instead of two; one
    # block's step costs ~1.4x MMoE's instead of ~2.2x (the epoch-time result of 2026-11-29, "fast")
    "skip2_l1": dict(num_embedding="linear", skip_hidden=128, skip_layers=2, n_layers=1),
}


def committed(model: str = "stl", files: list[Path] | None = None) -> dict[tuple[int, int], list[float]]:
    """Test scores of ``model`` in the committed grid (or in ``files``), per (setting, seed)."""
    out = {}
    for p in files or COMMITTED:
        for r in json.loads(p.read_text())["grid"]:
            if model in r["scores"]:
                out[(r["setting"], r["seed"])] = r["scores"][model]
    return out


def run(variant: str, setting: int, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    st = SIZES[setting]
    n_train = st["n_train"]
    _, ((xt, yt), (xv, yv), (xe, ye)) = draw(st, setting, seed, (n_train, max(args.n_val, n_train // 5), 1000), 8)
    kw = recipe(args, n_train) | {"patience": patience(args, n_train)}
    kw |= VARIANTS[variant]
    t0 = time.perf_counter()
    est = MultiTabEstimator(
        architecture="multitab", task_types=["regression"] * st["t"], random_state=seed, **kw
    )
    est.fit(xt, yt, eval_set=(xv, yv))
    fit_s = time.perf_counter() - t0
    test = est.task_scores(xe, ye)
    best = est.fit_result_.best
    val = best.details["val_metrics"] if best is not None else est.task_scores(xv, yv)
    return {
        "variant": variant,
        "settings": VARIANTS[variant],
        "setting": setting,
        "seed": seed,
        "n_train": n_train,
        "val": val,
        "val_mean": float(np.mean(val)),
        "test": test,
        "epochs": est.n_epochs_,
        "best_epoch": est.fit_result_.best_epoch,
        "fit_s": round(fit_s, 2),
    }


def summarise(paths: list[Path], reference: list[Path] | None = None) -> dict[str, Any]:
    """Per variant over the draws every variant ran on; Δm against the single-task MLP of ``reference``
    (result files of ``benchmarks/multitab.py grid``; default the committed 2026-11-28 grid)."""
    rows = [json.loads(line) for p in paths for line in p.read_text().splitlines() if line.strip()]
    stl, mt, mmoe = (committed(m, reference) for m in ("stl", "multitab", "mmoe"))
    keys = sorted({(r["setting"], r["seed"]) for r in rows})
    by = {(r["variant"], r["setting"], r["seed"]): r for r in rows}
    variants = sorted({r["variant"] for r in rows})
    common = [k for k in keys if all((v, *k) in by for v in variants)]  # draws every variant ran on
    out: dict[str, Any] = {}
    for v in variants:
        sel = [by[(v, *k)] for k in common]
        dm = [delta_m(r["test"], stl[(r["setting"], r["seed"])]) for r in sel]
        out[v] = {
            "settings": VARIANTS.get(v),
            "runs": len(sel),
            "val_mean_ev": round(float(np.mean([r["val_mean"] for r in sel])), 5),
            "test_mean_ev": round(float(np.mean([np.mean(r["test"]) for r in sel])), 5),
            "dm_test_vs_committed_stl": round(float(np.mean(dm)), 3),
            "dm_positive": int(sum(d > 0 for d in dm)),
            "per_draw": {
                f"s{r['setting']}-seed{r['seed']}": {
                    "val_mean": round(r["val_mean"], 5),
                    "dm_test_vs_stl": round(d, 3),
                    "epochs": r["epochs"],
                    "fit_s": r["fit_s"],
                }
                for r, d in zip(sel, dm, strict=True)
            },
            "fit_s_mean": round(float(np.mean([r["fit_s"] for r in sel])), 2),
        }
    ref = {
        "committed_multitab_dm_vs_stl": round(
            float(np.mean([delta_m(mt[k], stl[k]) for k in common])), 3
        ),
        "committed_mmoe_dm_vs_stl": round(
            float(np.mean([delta_m(mmoe[k], stl[k]) for k in common])), 3
        ),
    }
    chosen = max(variants, key=lambda v: out[v]["val_mean_ev"])
    return {
        "benchmark": "multitab-backbone",
        "draws": [list(k) for k in common],
        "variants": out,
        "committed": ref,
        "chosen_on_validation": chosen,
        "rule": "the variant with the highest mean validation EV (kept epoch) over the draws every variant ran on",
        **({"reference": [p.name for p in reference]} if reference else {}),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--variants", nargs="+", default=["base", "plr", "skip", "plr_skip"], choices=list(VARIANTS)
    )
    ap.add_argument("--settings", type=int, nargs="+", default=[1, 3, 2, 4])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--summary", type=Path, nargs="*")
    ap.add_argument("--reference", type=Path, nargs="*",
                    help="summary: grid result files whose single-task MLP (and MultiTab-Net, MMoE) are the reference "
                         "(default: the committed 2026-11-28 grid)")
    # the committed grid's recipe (benchmarks/multitab.py's defaults and flags of multitab-grid-sizes-2026-11-28)
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--patience", type=int, default=8)
    ap.add_argument("--patience-steps", type=int, default=150)
    ap.add_argument("--batch-size", default="auto")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--d-embed", type=int, default=8)
    ap.add_argument("--hidden", type=int, nargs="+", default=[128, 64])
    ap.add_argument("--n-val", type=int, default=150)
    args = ap.parse_args()
    if args.summary:
        s = summarise(args.summary, args.reference)
        print(json.dumps(s, indent=1))
        if args.out:
            args.out.write_text(json.dumps(s, indent=1) + "\n")
        return
    torch.set_num_threads(1)
    for seed in args.seeds:
        for setting in args.settings:
            for v in args.variants:
                row = run(v, setting, seed, args)
                print(
                    json.dumps(
                        {
                            k: row[k]
                            for k in ("variant", "setting", "seed", "val_mean", "epochs", "fit_s")
                        }
                    ),
                    file=sys.stderr,
                    flush=True,
                )
                if args.out:
                    with args.out.open("a") as f:
                        f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
