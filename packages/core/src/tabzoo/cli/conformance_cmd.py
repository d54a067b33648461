"""``tabzoo conformance NAME|all [--json] [--strict] [--replay JSON]``: run the conformance kit.

Prints one status per (case, check), then a summary: proven (passed or expected failure), NOT
proven (skipped), failed, and every expected failure with its reason. Exit code:

* ``0``: every check proven;
* ``1``: a check failed or errored unexpectedly, or a plugin's case could not be built
  (its hook or factory raised, the case is invalid or lacks its protocol's minimum
  capabilities), or a check was skipped: its property is NOT proven (issue 23: not proven is
  not passed);
* ``3``: with ``--allow-unproven``, nothing failed but some check was skipped.

Each result is printed as soon as its check finishes (with ``--json``, a ``[i/n]`` progress line
per check goes to stderr and stdout stays one JSON document). ``--check`` runs only those of the
named checks that a case calls for (its claims and the universal ones). Every waiver (expected
failure) is printed with its reason.

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

from tabzoo.cli.argtypes import device, json_object, readable_file, whole

EXIT_OK, EXIT_FAILED, EXIT_NOT_PROVEN = 0, 1, 3


def add_parser(sub: Any) -> None:
    p = sub.add_parser("conformance", help="run the conformance kit on installed plugins")
    p.add_argument("name", metavar="NAME|all", help="case, plugin or distribution name (comma-separated), or all")
    p.add_argument("--json", action="store_true", help="print stable JSON instead of a table")
    p.add_argument("--max-examples", type=whole(1), default=10, metavar="N", help="small-phase examples per property check (10)")
    p.add_argument("--seed", type=whole(0), default=0, help="base seed (0)")
    p.add_argument("--device", default=None, type=device, help="device for models and inputs (default: each case's own)")
    p.add_argument("--xfails", default=None, type=readable_file, metavar="FILE", help="JSON/TOML map case -> check -> reason")
    p.add_argument("--check", action="append", default=None, metavar="CHECK", help="run only this check (repeatable)")
    p.add_argument("--strict", action="store_true", help="(the default) a skipped (not proven) check is a failure")
    p.add_argument("--allow-unproven", action="store_true",
                   help="a skipped (not proven) check exits 3 instead of failing (1)")
    p.add_argument("--thorough", action="store_true",
                   help="the thorough search: contexts up to 4,096 rows, 5x the examples (slow; nightly)")
    p.add_argument("--replay", default=None, metavar="JSON", type=json_object,
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


def _wanted(case: Any, only: list[str] | None) -> list[str]:
    """The checks the case calls for (its claims and the universal ones), limited to ``--check``."""
    from tabzoo.testing.runner import checks_for

    names = checks_for(case)
    return names if only is None else [c for c in names if c in only]


def _check_names(names: list[str] | None) -> None:
    """Refuse a ``--check`` name that is no conformance check (it would silently run nothing)."""
    from tabzoo.errors import TabzooInputError
    from tabzoo.testing.capabilities import PROPERTIES

    unknown = [n for n in names or [] if n not in PROPERTIES]
    if unknown:
        raise TabzooInputError(f"--check {unknown[0]!r} is no conformance check; known checks: {list(PROPERTIES)}.")


def _progress(as_json: bool, width: int, total: int) -> Any:
    """``emit(result) -> result``: print each result as it comes (``--json``: a progress line on
    stderr, so that stdout stays one JSON document)."""
    done = [0]

    def emit(r: Any) -> Any:
        done[0] += 1
        status = "NOT PROVEN" if r.status == "skipped" else r.status.upper()
        seconds = r.details.get("seconds")
        cpu = r.details.get("cpu_seconds")
        took = f" ({seconds:.1f} s" + (f", {cpu:.1f} s CPU)" if isinstance(cpu, (int, float)) else ")") \
            if isinstance(seconds, (int, float)) else ""
        if as_json:
            print(f"[{done[0]}/{total}] {r.case}-{r.check}: {status}{took}", file=sys.stderr, flush=True)
            return r
        print(f"{(r.case + '-' + r.check).ljust(width)}  {status:10s} {r.message}{took}", flush=True)
        if r.status in ("failed", "error"):
            line = f"replay: {r.replay}" if r.replay else \
                f"reproducer: {json.dumps(r.as_dict()['reproducer'], sort_keys=True)}"
            print(f"{' ' * width}  {line}", flush=True)
        return r

    return emit


def run(args: argparse.Namespace) -> int:
    import dataclasses
    import os
    import tempfile

    # hypothesis keeps a cache under ./.hypothesis by default: never write into the user's directory
    os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", os.path.join(tempfile.gettempdir(), "tabzoo-hypothesis"))
    if args.thorough:
        from tabzoo.testing.checks._common import PROFILE_ENV

        os.environ[PROFILE_ENV] = "thorough"

    from tabzoo import __version__
    from tabzoo.errors import TabzooInputError

    if not args.name.strip(" ,"):
        raise TabzooInputError("no case named: give a case, plugin or distribution name (comma-separated), or 'all'; "
                               "`tabzoo plugins` lists what is installed.")
    _check_names(args.check)
    from tabzoo.testing._xfails import load_xfails
    from tabzoo.testing.runner import (
        CORE_CASE,
        _expected_for,
        checks_for,
        collect_cases,
        registration_results,
        replay,
        run_check,
    )

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # broken plugins are reported below as failed registrations
        cases, results = collect_cases(args.name)
    xfails = load_xfails(args.xfails)
    note = None
    if args.name.strip() == "all" and all(c.name == CORE_CASE for c in cases) and not results:
        note = "no plugin conformance cases installed (pip install a tabzoo plugin); ran only the core's kernel checks"
    width = max((len(f"{c.name}-{k}") for c in cases for k in checks_for(c)), default=10)
    registrations = [registration_results(c) if args.check is None and not args.replay else [] for c in cases]
    total = len(results) + sum(len(r) for r in registrations) + sum(len(_wanted(c, args.check)) for c in cases)
    if total == 0 and cases and not args.replay:
        calls = {c.name: checks_for(c) for c in cases}
        raise TabzooInputError(f"no check ran: none of --check {args.check} applies to {sorted(calls)}, whose checks "
                               f"are {calls}; name one of those (nothing is proven by running nothing).")
    emit = _progress(args.json, width, 1 if args.replay else total)
    if not args.replay and any("determinism" in _wanted(c, args.check) for c in cases):
        from tabzoo.testing.checks.fresh import prestart

        prestart()  # the fresh-process worker starts up while the first checks run
    for r in results:
        emit(r)
    for case, registered in zip(cases, registrations, strict=True):
        if args.device:
            case = dataclasses.replace(case, device=args.device)
        if args.replay:
            results.append(emit(replay(case, args.replay)))
            continue
        expected = _expected_for(case, xfails)
        results += [emit(r) for r in registered]
        for name in _wanted(case, args.check):
            results.append(emit(run_check(case, name, seed=args.seed, max_examples=args.max_examples,
                                          expected_failures=expected)))
    report = _summarise(results, not args.allow_unproven)
    ok = report["exit_code"] == EXIT_OK
    if args.json:
        doc = {"core_version": __version__, "selector": args.name, "cases": [c.name for c in cases],
               "results": [r.as_dict() for r in results], "ok": ok, "strict": not args.allow_unproven, "note": note,
               **report}
        json.dump(doc, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return int(report["exit_code"])
    if note:
        print(note)
    for x in report["expected_failures"]:
        print(f"waiver (expected failure) {x['case']}-{x['check']} ({x['status']}): {x['reason']}")
    for x in report["not_proven"]:
        print(f"NOT proven {x['case']}-{x['check']}: {x['reason']}")
    counts = ", ".join(f"{n} {s}" for s, n in sorted(report["summary"].items())) or "no checks ran"
    verdict = {EXIT_OK: "all proven", EXIT_FAILED: "FAILED",
               EXIT_NOT_PROVEN: f"{len(report['not_proven'])} NOT proven (skipped; allowed by --allow-unproven)"}
    print(f"{counts}; {report['proven']} proven; {verdict[report['exit_code']]}")
    return int(report["exit_code"])
