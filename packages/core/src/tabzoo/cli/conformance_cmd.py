"""``tabzoo conformance NAME|all [--json]``: run the conformance kit on installed plugins.

Prints one status per (case, check); the exit code is 1 when any check that is not expected to
fail fails or errors, else 0. ``all`` runs every installed plugin's cases plus the core's own
``core_kernels`` case (kernel equivalence of every registered backend); with no plugin cases
installed it says so and still runs the core case, so it exits 0 on a healthy install.
``--json`` prints a stable document: ``{"core_version", "selector", "cases", "results":
[{case, check, status, discrepancy, tolerance, reproducer, message, details}], "summary", "ok"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("conformance", help="run the conformance kit on installed plugins")
    p.add_argument("name", metavar="NAME|all", help="case, plugin or distribution name (comma-separated), or all")
    p.add_argument("--json", action="store_true", help="print stable JSON instead of a table")
    p.add_argument("--max-examples", type=int, default=10, metavar="N", help="examples per property check (10)")
    p.add_argument("--seed", type=int, default=0, help="base seed (0)")
    p.add_argument("--device", default=None, help="device for models and inputs (default: each case's own)")
    p.add_argument("--xfails", default=None, metavar="FILE", help="JSON/TOML map case -> check -> reason")
    p.add_argument("--check", action="append", default=None, metavar="CHECK", help="run only this check (repeatable)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import dataclasses

    from tabzoo import __version__
    from tabzoo.testing._xfails import load_xfails
    from tabzoo.testing.runner import CORE_CASE, check_conformance, find_cases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # broken plugins show in `tabzoo plugins`
        cases = find_cases(args.name)
    xfails = load_xfails(args.xfails)
    note = None
    if args.name.strip() == "all" and all(c.name == CORE_CASE for c in cases):
        note = "no plugin conformance cases installed (pip install a tabzoo plugin); ran only the core's kernel checks"
    results = []
    for case in cases:
        if args.device:
            case = dataclasses.replace(case, device=args.device)
        results += check_conformance(case, on_fail=None, checks=args.check, seed=args.seed,
                                     max_examples=args.max_examples, expected_failed_checks=xfails)
    summary: dict[str, int] = {}
    for r in results:
        summary[r.status] = summary.get(r.status, 0) + 1
    ok = all(r.ok for r in results)
    if args.json:
        doc = {"core_version": __version__, "selector": args.name, "cases": [c.name for c in cases],
               "results": [r.as_dict() for r in results], "summary": summary, "ok": ok, "note": note}
        json.dump(doc, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
    else:
        if note:
            print(note)
        width = max((len(f"{r.case}-{r.check}") for r in results), default=10)
        for r in results:
            print(f"{(r.case + '-' + r.check).ljust(width)}  {r.status.upper():7s}  {r.message}")
            if not r.ok:
                print(f"{' ' * width}  reproducer: {json.dumps(r.as_dict()['reproducer'], sort_keys=True)}")
        print(", ".join(f"{n} {s}" for s, n in sorted(summary.items())) or "no checks ran")
    return 0 if ok else 1
