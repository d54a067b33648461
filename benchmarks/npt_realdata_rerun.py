"""Re-run NPT's rows of the real-data suite without re-running its peers (issue 25).

NPT is the only model whose settings changed, so its new records (from ``realdata.py --models npt``
runs, any number of them, e.g. one per group of tables in parallel) are put beside the peers'
records of an earlier run with the same protocol (the same splits, 500 training and <= 500 test
rows, the same seeds; ``combine`` refuses a record whose row counts differ from the old run's);
``realdata.py --salvage`` then builds the result JSON and its plots.

    python benchmarks/npt_realdata_rerun.py combine OLD.json NEW_NPT_1.json [...] --out COMBINED.jsonl
    python benchmarks/realdata.py --salvage COMBINED.jsonl --models npt,tabflex,linear,random_forest,\
        xgboost,lightgbm,catboost --splits 1 --train-cap 500 --test-cap 500 --no-curves --out RESULT.json
    python benchmarks/npt_realdata_rerun.py wins RESULT.json      # NPT's wins/losses per peer

A ``NEW`` file may be a finished JSON or a ``.partial.jsonl`` of a run still going; ``NEW::TASK``
takes only that task's records of it (e.g. the classification rows of a run whose regression rows
were rerun with other settings).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

PRIMARY = {"classification": "roc_auc", "regression": "r2"}


def _records(path: str) -> list[dict[str, Any]]:
    text = Path(path).read_text(encoding="utf-8")
    if path.endswith(".jsonl"):
        return [r for r in (json.loads(line) for line in text.splitlines() if line.strip()) if "table" in r]
    return list(json.loads(text)["records"])


def _new_records(spec: str, model: str) -> list[dict[str, Any]]:
    """``model``'s records of ``PATH`` or ``PATH::TASK`` (only that task's records of the file)."""
    path, _, task = spec.partition("::")
    return [r for r in _records(path) if r["model"] == model and (not task or r["task"] == task)]


def combine(old: str, new: list[str], model: str = "npt") -> list[dict[str, Any]]:
    """The peers' records of ``old`` (every model but ``model``) and ``model``'s records of ``new``
    (each ``PATH`` or ``PATH::TASK``); a (table, split) given twice is refused."""
    fresh = [r for spec in new for r in _new_records(spec, model)]
    if not fresh:
        raise SystemExit(f"no {model} record in {new}")
    seen: set[tuple[str, int]] = set()
    for r in fresh:
        if (r["table"], r["split"]) in seen:
            raise SystemExit(f"{r['table']} split {r['split']}: two {model} records in {new}; pass each once "
                             "(PATH::TASK keeps one task of a file)")
        seen.add((r["table"], r["split"]))
    before = _records(old)
    rows = {(r["table"], r["split"]): (r["train_rows"], r["test_rows"]) for r in before if r["model"] == model}
    for r in fresh:  # the same split: the same training and test row counts as the old run's record
        if rows.get((r["table"], r["split"]), (r["train_rows"], r["test_rows"])) != (r["train_rows"], r["test_rows"]):
            raise SystemExit(f"{r['table']} split {r['split']}: {r['train_rows']}/{r['test_rows']} training/test rows, "
                             f"the old run had {rows[(r['table'], r['split'])]}; not the same split")
    keep = [r for r in before if r["model"] != model]
    return keep + [r | {"rerun": True} for r in fresh]


def wins(result: dict[str, Any], model: str = "npt") -> dict[str, dict[str, Any]]:
    """Per task and peer: (table, split) pairs where ``model`` beats / ties / loses to the peer on
    the primary metric (every split; it read split 0 only before the 3-split runs)."""
    by: dict[tuple[str, str, int], dict[str, float]] = defaultdict(dict)
    for r in result["records"]:
        if r["status"] == "ok":
            by[(r["task"], r["table"], int(r["split"]))][r["model"]] = r["metrics"][PRIMARY[r["task"]]]
    out: dict[str, dict[str, Any]] = {}
    for (task, _table, _split), scores in sorted(by.items()):
        if model not in scores:
            continue
        for peer, v in scores.items():
            if peer == model:
                continue
            c = out.setdefault(task, {}).setdefault(peer, {"wins": 0, "ties": 0, "losses": 0, "mean_gap": 0.0, "n": 0})
            m = scores[model]
            c["wins" if m > v else "ties" if m == v else "losses"] += 1
            c["mean_gap"] += m - v
            c["n"] += 1
    for peers in out.values():
        for c in peers.values():
            c["mean_gap"] = round(c["mean_gap"] / max(c["n"], 1), 4)
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("combine")
    c.add_argument("old")
    c.add_argument("new", nargs="+")
    c.add_argument("--out", required=True)
    w = sub.add_parser("wins")
    w.add_argument("result")
    a = p.parse_args(argv)
    if a.cmd == "combine":
        rows = combine(a.old, a.new)
        with open(a.out, "x", encoding="utf-8") as fh:  # never overwrite
            fh.writelines(json.dumps(r) + "\n" for r in rows)
        print(f"{a.out}: {len(rows)} records ({sum('rerun' in r for r in rows)} new npt)")
    else:
        print(json.dumps(wins(json.loads(Path(a.result).read_text(encoding="utf-8"))), indent=1))


if __name__ == "__main__":
    main()
