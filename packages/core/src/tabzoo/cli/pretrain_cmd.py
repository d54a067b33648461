"""``tabzoo pretrain --model NAME --prior NAME --steps N --out DIR [--resume] [--workers N]``.

Runs under ``torchrun`` too (``torchrun --nproc_per_node=2 -m tabzoo.cli pretrain ...``): each
process takes its share of every global batch and gradients are averaged.

``--workers N`` draws prior batches in N background processes while the model trains
(``PretrainConfig.workers``; default ``auto``); the batches are the same as without them.

When done, rank 0 prints one line on stderr: what was trained, the steps, the final loss, where
the checkpoint was written and how long it took (``--json`` adds a JSON summary on stdout).
The progress bar needs tqdm (``tabzoo-core[progress]``); without it the run says so once.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from typing import Any

from tabzoo.cli.argtypes import finite, whole


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "pretrain",
        help="pretrain an in-context architecture on a prior",
        description="Pretrain a registered in-context architecture on a registered prior, with "
        "periodic atomic checkpoints in --out and exact --resume after an interruption.",
    )
    p.add_argument("--model", required=True, help="registered architecture name (see `tabzoo plugins`)")
    p.add_argument("--prior", required=True, help="registered prior name, e.g. scm")
    p.add_argument("--steps", type=whole(1), required=True, help="optimizer steps")
    p.add_argument("--out", required=True, help="output folder: checkpoints, model, learning curve")
    p.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out")
    p.add_argument("--overwrite", action="store_true",
                   help="start afresh in an --out that already holds a run, replacing it (without "
                        "--resume or --overwrite, a non-empty --out is refused)")
    p.add_argument("--batch-size", type=whole(1), default=None, help="episodes per step over all processes")
    p.add_argument("--lr", type=finite(0.0, strict=True), default=None, help="peak learning rate")
    p.add_argument("--seed", type=whole(0), default=None, help="seed of weights and batches")
    p.add_argument(
        "--config", default=None,
        help='JSON object of further PretrainConfig fields, e.g. \'{"amp": "off", "checkpoint_every": 50, '
        '"model_config": {...}, "prior_config": {...}}\' (or @file.json)',
    )
    p.add_argument("--workers", type=_workers, default=None, metavar="N|auto",
                   help="background processes drawing prior batches ahead of the training step (0 = draw "
                        "in the training process; default auto = 1 on a CPU with >= 2 cores for runs of >= 16 "
                        "steps). Batches, and so the run, are the same either way.")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--json", action="store_true", help="print a JSON summary at the end")
    p.set_defaults(func=run)


def _workers(text: str) -> int | str:
    if text == "auto":
        return text
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 0:
        raise argparse.ArgumentTypeError(f"expected 'auto' or a whole number >= 0, got {text!r}")
    return n


def train_options(args: argparse.Namespace) -> dict[str, Any]:
    """The PretrainConfig fields given by the command line (``--config`` first, flags win)."""
    options = _load_json(args.config)
    options["steps"] = args.steps
    for name, value in (("batch_size", args.batch_size), ("lr", args.lr), ("seed", args.seed),
                        ("workers", args.workers)):
        if value is not None:
            options[name] = value
    if args.no_progress:
        options["progress"] = False
    return options


def _load_json(text: str | None) -> dict[str, Any]:
    from tabzoo.errors import TabzooInputError

    if not text:
        return {}
    if text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise TabzooInputError(f"--config {text}: cannot read {text[1:]} ({exc}); check the path.") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TabzooInputError(f"--config is not valid JSON ({exc}); pass an object like '{{\"amp\": \"off\"}}'.") from exc
    if not isinstance(data, dict):
        raise TabzooInputError("--config must be a JSON object of PretrainConfig fields.")
    return data


def run(args: argparse.Namespace) -> int:
    import time

    from tabzoo.cli._extras import is_missing, note_once
    from tabzoo.train import PretrainConfig, pretrain
    from tabzoo.train.lock import run_lock
    from tabzoo.train.state import require_resumable

    t0 = time.perf_counter()
    main_rank = int(os.environ.get("RANK", "0")) == 0
    options = train_options(args)
    if options.get("progress", True) and is_missing("tqdm"):
        if main_rank:
            note_once("no progress bar: tqdm is not installed (pip install 'tabzoo-core[progress]'); "
                      "--no-progress silences this note.")
        options["progress"] = False
    cfg = PretrainConfig.from_dict(options)
    if args.resume:
        require_resumable(args.out)
    with run_lock(args.out) if main_rank else contextlib.nullcontext():
        result = pretrain(args.model, args.prior, out=args.out, config=cfg, resume=args.resume,
                          overwrite=args.overwrite)
    if main_rank:  # one summary under torchrun
        loss = f", final loss {result.losses[-1]:.4g}" if result.losses else ""
        start = f"steps {result.resumed_from}->{result.steps}" if result.resumed_from else f"{result.steps} steps"
        print(f"tabzoo pretrain: {args.model} on {args.prior}, {start} ({result.episodes_seen} episodes){loss}; "
              f"checkpoint written to {result.out}/model.safetensors + model.json, resume state in {result.out}, "
              f"in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    if args.json:
        if main_rank:
            summary = {
                "model": args.model, "prior": args.prior, "steps": result.steps,
                "episodes_seen": result.episodes_seen, "wall_time_s": round(result.wall_time_s, 3),
                "resumed_from": result.resumed_from, "workers": result.workers,
                "final_loss": result.losses[-1] if result.losses else None, "out": str(result.out),
            }
            json.dump(summary, sys.stdout, sort_keys=True)
            sys.stdout.write("\n")
    return 0
