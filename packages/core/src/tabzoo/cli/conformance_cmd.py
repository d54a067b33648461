"""``tabzoo conformance NAME|all [--json] [--strict] [--replay JSON]``: run the conformance kit.

Prints one status per (case, check), then a summary: proven (passed or expected failure), NOT
proven (skipped), failed, and every expected failure with its reason. Exit code:

* ``0``: every check proven;
* ``1``: a check failed or errored unexpectedly, or a plugin's case could not be built
  (its hook or factory raised, the case is invalid or lacks its protocol's minimum
  capabilities); with ``--strict`` also any skipped (not proven) check;
* ``3``: nothing failed, but some check was skipped: its property is NOT proven.

A broken plugin never crashes the run: it is reported as a failed ``registration`` result and
the other cases still run. ``all`` also runs the core's own ``core_kernels`` case.
``--replay '<json>'`` runs exactly the example of a failure's reproducer again (the one-line
command is printed under each failure). ``--json`` prints a stable document:
``{"core_version", "selector", "cases", "results": [{case, check, status, discrepancy,
tolerance, reproducer, message, details}], "summary", "proven", "not_proven",
"expected_failures", "failures", "strict", "ok", "exit_code", "note"}``.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_NOT_PROVEN = 0, 1, 3


def add_parser(sub: Any) -> None:
    p = sub.add_parser("conformance", help="run the conformance kit on installed plugins")
    p.add_argument("name", metavar="NAME|all", help="case, plugin or distribution name (comma-separated), or all")
    p.add_argument("--json", action="store_true", help="print stable JSON instead of a table")
    p.add_argument("--max-examples", type=int, default=10, metavar="N", help="small-phase examples per property check (10)")
    p.add_argument("--seed", type=int, default=0, help="base seed (0)")
    p.add_argument("--device", default=None, help="device for models and inputs (default: each case's own)")
    p.add_argument("--xfails", default=None, metavar="FILE", help="JSON/TOML map case -> check -> reason")
    p.add_argument("--check", action="append", default=None, metavar="CHECK", help="run only this check (repeatable)")
    p.add_argument("--strict", action="store_true", help="a skipped (not proven) check counts as a failure")
    p.add_argument("--replay", default=None, metavar="JSON",
                   help="re-run exactly one failing example: the 'replay' JSON printed under a failure")
    p.set_defaults(func=run)


def _summarise(results: list[Any], strict: bool) -> dict[str, Any]:
    summary: dict[str, int] = {}
    for r in results:
        summary[r.status] = summary.get(r.status, 0) + 1
    failed = [r for r in results if r.status in ("failed", "error")]
    not_proven = [r for r in results if r.status == "skipped"]
    code = EXIT_FAILED if failed or (strict and not_proven) else EXIT_NOT_PROVEN if not_proven else EXIT_OK
    return {
        "summary": summary,
        "proven": sum(r.proven for r in results),
        "not_proven": [{"case": r.case, "check": r.check, "reason": r.message} for r in not_proven],
        "expected_failures": [{"case": r.case, "check": r.check, "status": r.status,
                               "reason": r.details.get("expected_failure", "")}
                              for r in results if r.details.get("expected_failure")],
        "failures": [{"case": r.case, "check": r.check, "replay": r.replay} for r in failed],
        "exit_code": code,
    }


def run(args: argparse.Namespace) -> int:
    import dataclasses
    import os
    import tempfile

    # hypothesis keeps a cache under ./.hypothesis by default: never write into the user's directory
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "tabzoo-hypothesis"))

    from tabzoo import __version__
    from tabzoo.testing._xfails import load_xfails
    from tabzoo.testing.runner import CORE_CASE, check_conformance, collect_cases, replay

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # broken plugins are reported below as failed registrations
        cases, results = collect_cases(args.name)
    xfails = load_xfails(args.xfails)
    note = None
    if args.name.strip() == "all" and all(c.name == CORE_CASE for c in cases) and not results:
        note = "no plugin conformance cases installed (pip install a tabzoo plugin); ran only the core's kernel checks"
    for case in cases:
        if args.device:
            case = dataclasses.replace(case, device=args.device)
        if args.replay:
            results.append(replay(case, args.replay))
            continue
        results += check_conformance(case, on_fail=None, checks=args.check, seed=args.seed,
                                     max_examples=args.max_examples, expected_failed_checks=xfails)
    report = _summarise(results, args.strict)
    ok = report["exit_code"] == EXIT_OK
    if args.json:
        doc = {"core_version": __version__, "selector": args.name, "cases": [c.name for c in cases],
               "results": [r.as_dict() for r in results], "ok": ok, "strict": args.strict, "note": note, **report}
        json.dump(doc, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return int(report["exit_code"])
    if note:
        print(note)
    width = max((len(f"{r.case}-{r.check}") for r in results), default=10)
    for r in results:
        status = "NOT PROVEN" if r.status == "skipped" else r.status.upper()
        print(f"{(r.case + '-' + r.check).ljust(width)}  {status:10s} {r.message}")
        if r.status in ("failed", "error"):
            if r.replay:
                print(f"{' ' * width}  replay: {r.replay}")
            else:
                print(f"{' ' * width}  reproducer: {json.dumps(r.as_dict()['reproducer'], sort_keys=True)}")
    for x in report["expected_failures"]:
        print(f"expected failure {x['case']}-{x['check']} ({x['status']}): {x['reason']}")
    counts = ", ".join(f"{n} {s}" for s, n in sorted(report["summary"].items())) or "no checks ran"
    verdict = {EXIT_OK: "all proven", EXIT_FAILED: "FAILED",
               EXIT_NOT_PROVEN: f"{len(report['not_proven'])} NOT proven (skipped; --strict makes this a failure)"}
    print(f"{counts}; {report['proven']} proven; {verdict[report['exit_code']]}")
    return int(report["exit_code"])
