"""``tabzoo demo``: the main job, on embedded defaults and with no network.

It finds every installed plugin's demo (see :mod:`tabzoo.cli._demo` for the contract: demos are
registered through the ``tabzoo_register_demos`` hook; an in-context classifier without one gets
the core's default demo), runs each with a progress bar on stderr, prints one
table (each plugin's model beside its LogisticRegression/Ridge and gradient-boosting baselines,
on the same splits, with the metric and the fit+predict time) and writes ``report.md``,
``results.json``, ``metric.png`` and ``time.png`` into a new folder whose path it prints last.

Needs scikit-learn (``tabzoo-core[sklearn]``); the PNGs need matplotlib (``tabzoo-core[plot]``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from functools import partial
from pathlib import Path
from typing import Any

from tabzoo.cli.argtypes import finite, whole
from tabzoo.errors import TabzooError, TabzooInputError


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "demo", help="the main job: every installed model beside its baselines on bundled data",
        description="Run every installed plugin's demo (its model beside LogisticRegression/Ridge and "
        "gradient boosting, on the same splits of bundled data, no network); print the table and "
        "write a Markdown report with PNG plots into a new folder.",
    )
    p.add_argument("--model", action="append", default=None, metavar="NAME",
                   help="only this plugin or architecture (repeatable); an unknown name lists the installed ones")
    p.add_argument("--out", default=None, help="report folder (must not hold files); default: a new "
                   "./tabzoo-demo-YYYY-MM-DD[-N]")
    p.add_argument("--full", action="store_true", help="the longer demos (quick=False): more data sets, more steps")
    p.add_argument("--seed", type=whole(0), default=0, help="seed of every split and model")
    p.add_argument("--timeout", type=finite(0.0, strict=True), default=300.0, metavar="SECONDS",
                   help="stop a plugin's demo that makes no progress (uses almost no CPU) for this long; "
                   "its row is reported as failed and the others are kept (default 300)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    p.add_argument("--no-report", action="store_true", help="print the table only; write no folder")
    p.add_argument("--json", action="store_true", help="print stable JSON instead of the table")
    p.set_defaults(func=run)


def _install_tabflex() -> str:
    from tabzoo.plugins.records import install_command

    return install_command("tabzoo-tabflex")


def _select(entries: list[Any], models: dict[str, list[str]], only: list[str] | None) -> list[Any]:
    if not only:
        return entries
    known = {n for plugin, archs in models.items() for n in (plugin, *archs)}
    unknown = [n for n in only if n not in known]
    if unknown:
        listing = "; ".join(f"{p} ({', '.join(a)})" if a != [p] else p for p, a in sorted(models.items()))
        raise TabzooInputError(
            f"--model {', '.join(unknown)}: no installed plugin provides that model. Installed models: "
            f"{listing or f'none; install one from a clone of this repository: {_install_tabflex()}'}."
        )
    picked = [e for e in entries if e.plugin in only or set(e.architectures) & set(only)]
    if not picked:
        raise TabzooInputError(f"--model {', '.join(only)}: installed, but it ships no demo.")
    return picked


def _conflicts(only: list[str] | None) -> list[dict[str, Any]]:
    """A failed item per architecture name that several distributions claim (none of them runs)."""
    from tabzoo.plugins import get_registry

    items = []
    registry = get_registry()
    for name, records in sorted(registry.conflicts().get("architectures", {}).items()):
        if only and name not in only and not {r.name for r in records} & set(only):
            continue
        try:
            registry.check_name("architectures", name)
        except TabzooError as exc:
            items.append({"plugin": name, "distribution": " / ".join(r.distribution for r in records),
                          "version": " / ".join(r.version for r in records), "demo": "-", "rows": [],
                          "error": f"{type(exc).__name__}: {exc}", "warnings": [], "seconds": 0.0})
    return items


def _progress(entries: list[Any], enabled: bool) -> Any:
    from tabzoo.cli._extras import is_missing

    if enabled and not is_missing("tqdm"):
        from tqdm.auto import tqdm

        return tqdm(entries, desc="tabzoo demo", unit="plugin", file=sys.stderr)
    return entries


def _rows_of(entry: Any, args: argparse.Namespace) -> list[dict[str, Any]]:
    from tabzoo.cli._demo import check_rows

    return check_rows(entry.run(seed=args.seed, quick=not args.full), entry.target)


def _run_all(entries: list[Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    from tabzoo.cli._demo import is_baseline
    from tabzoo.cli._watchdog import run_watched

    results = []
    bar = _progress(entries, not args.no_progress)
    for i, entry in enumerate(bar):
        if hasattr(bar, "set_postfix_str"):
            bar.set_postfix_str(entry.plugin)
        elif not args.no_progress:
            print(f"tabzoo demo [{i + 1}/{len(entries)}] {entry.plugin} ...", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        item: dict[str, Any] = {"plugin": entry.plugin, "distribution": entry.distribution,
                                "version": entry.version, "demo": entry.target, "rows": [], "error": None}
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # in a watched thread: a demo that hangs is stopped, one that raises anything (SystemExit
            # too) fails alone; either way the other demos run and their results are kept
            outcome = run_watched(partial(_rows_of, entry, args), args.timeout, f"the demo of {entry.plugin}",
                                  "tabzoo demo --timeout")
        if outcome.error is None:
            for row in outcome.value:
                row["baseline"] = is_baseline(row, entry.plugin, entry.architectures)
            item["rows"] = outcome.value
        else:
            if isinstance(outcome.error, KeyboardInterrupt):
                raise outcome.error
            item["error"] = f"{type(outcome.error).__name__}: {outcome.error}"
            item["traceback"] = outcome.traceback
            caught = []
        # the demo's warnings go to the report (once each), not over the progress bar
        item["warnings"] = list(dict.fromkeys(f"{w.category.__name__}: {w.message}" for w in caught))[:8]
        item["seconds"] = round(time.perf_counter() - t0, 2)
        results.append(item)
    return results


def _groups(item: dict[str, Any]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in item["rows"]:
        groups.setdefault((str(row["dataset"]), str(row["task"])), []).append(row)
    for rows in groups.values():
        rows.sort(key=lambda r: (r["baseline"], str(r["model"])))
    return groups


def _best(rows: list[dict[str, Any]]) -> float | None:
    from tabzoo.cli._demo import lower_is_better

    vals = [r["value"] for r in rows if r["value"] is not None and r["value"] == r["value"]]
    if not vals:
        return None
    return min(vals) if lower_is_better(str(rows[0]["metric"])) else max(vals)


def table_rows(results: list[dict[str, Any]]) -> list[list[Any]]:
    """``[plugin, dataset, task, model, role, metric, value, fit_predict_s, best]`` rows."""
    out = []
    for item in results:
        for (ds, task), rows in _groups(item).items():
            best = _best(rows)
            for r in rows:
                out.append([item["plugin"], ds, task, r["model"], "baseline" if r["baseline"] else "model",
                            r["metric"], r["value"], r["fit_predict_s"], "best" if r["value"] == best else ""])
    return out


def _print_table(results: list[dict[str, Any]]) -> None:
    from tabzoo.cli._report import fmt

    header = ["plugin", "dataset", "task", "model", "role", "metric", "value", "fit+predict s", ""]
    rows = [[fmt(c) for c in r] for r in table_rows(results)]
    widths = [max([len(header[i])] + [len(r[i][:40]) for r in rows]) for i in range(len(header))]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip())
    for r in rows:
        print("  ".join(c[:40].ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    for item in results:
        if item["error"]:
            print(f"{item['plugin']}: FAILED ({item['error']})")


def _panels(results: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    panels = []
    for item in results:
        for (ds, task), rows in _groups(item).items():
            panels.append({
                "title": f"{item['plugin']}: {ds} / {task}",
                "labels": [str(r["model"]) for r in rows], "values": [r[key] for r in rows],
                "highlight": [not r["baseline"] for r in rows],
                "xlabel": "fit + predict seconds (log)" if key == "fit_predict_s" else str(rows[0]["metric"]),
                "log": key == "fit_predict_s",
            })
    return panels


def _winner(own: float | None, base: float | None, metric: str) -> str:
    from tabzoo.cli._demo import lower_is_better

    if own is None or base is None:
        return "-"
    if own == base:
        return "tie"
    return "model" if (own < base) == lower_is_better(metric) else "baseline"


def write_report(folder: Path, results: list[dict[str, Any]], seconds: float, argv: list[str]) -> Path:
    """``report.md``, ``results.json``, ``metric.png``, ``time.png`` in ``folder``; returns report.md."""
    import datetime as dt

    from tabzoo.cli._report import bar_grid, machine, md_table
    from tabzoo.files import write_text

    info = machine()
    pngs = [bar_grid(folder / "metric.png", _panels(results, "value"), "tabzoo demo: metric per model and data set"),
            bar_grid(folder / "time.png", _panels(results, "fit_predict_s"), "tabzoo demo: fit + predict time")]
    data = {"command": argv, "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "wall_time_s": round(seconds, 2), "machine": info, "plugins": results}
    write_text(folder / "results.json", json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    lines = [
        "# tabzoo demo", "",
        f"`{' '.join(argv)}` on {data['date']}, {seconds:.1f} s wall in all. Machine: {info['processor']}, "
        f"{info['cpu_count']} cores, torch {info['torch']} with {info['torch_threads']} threads, "
        f"CUDA {'yes' if info['cuda'] else 'no'}. No network was used.", "",
        "Each plugin's model (role `model`) beside its baselines on the same splits of bundled data. "
        "`best` marks the best value of each data set and task (RMSE-like metrics: lowest). "
        "Times are fit + predict on this machine, one run each: expect noise.", "",
        "## Summary", "",
    ]
    summary = []
    for item in results:
        for (ds, task), rows in _groups(item).items():
            own = [r for r in rows if not r["baseline"]]
            base = [r for r in rows if r["baseline"]]
            b_own, b_base = _best(own), _best(base)
            summary.append([item["plugin"], ds, task, rows[0]["metric"], b_own, b_base,
                            _winner(b_own, b_base, str(rows[0]["metric"]))])
    lines += [md_table(["plugin", "dataset", "task", "metric", "best model", "best baseline", "winner"], summary), ""]
    for item in results:
        lines += [f"## {item['plugin']} ({item['distribution']} {item['version']})", "",
                  f"Demo `{item['demo']}`, {item['seconds']:.1f} s.", ""]
        if item.get("warnings"):
            lines += ["Warnings it raised (each once):", ""] + [f"- {w}" for w in item["warnings"]] + [""]
        if item["error"]:
            lines += [f"**Failed:** `{item['error']}`", ""]
            continue
        table = [r[1:] for r in table_rows([item])]
        lines += [md_table(["dataset", "task", "model", "role", "metric", "value", "fit+predict s", ""], table), ""]
    if any(pngs):
        lines += ["## Plots", ""] + [f"![{p.stem}]({p.name})" for p in pngs if p] + [""]
    else:
        lines += ["No plots: matplotlib is not installed (pip install 'tabzoo-core[plot]').", ""]
    report = folder / "report.md"
    return write_text(report, "\n".join(lines))


def run(args: argparse.Namespace) -> int:
    from tabzoo.cli._demo import discover
    from tabzoo.cli._extras import is_missing, note_once, require

    require("demo", {"sklearn": "for the baselines and the bundled data sets"})
    entries, models = discover()
    conflicts = _conflicts(args.model)
    if args.model and conflicts:  # an ambiguous --model is reported as failed, not as unknown
        entries = [e for e in entries if e.plugin in args.model or set(e.architectures) & set(args.model)]
    else:
        entries = _select(entries, models, args.model)
    if not entries and not conflicts:
        msg = (f"no installed plugin has a demo; install a model, e.g. from a clone of this repository: "
               f"`{_install_tabflex()}` (README, 'Installing only one model'), then run `tabzoo demo` "
               "again. `tabzoo plugins` lists what is installed.")
        print(json.dumps({"plugins": [], "message": msg}) if args.json else msg)
        return 0
    if not args.no_report and is_missing("matplotlib"):
        note_once("no plots in the report: matplotlib is missing (pip install 'tabzoo-core[plot]').")
    folder = None if args.no_report else new_folder(args.out)
    t0 = time.perf_counter()
    results = _run_all(entries, args) + conflicts
    seconds = time.perf_counter() - t0
    report = None
    if folder is not None:
        report = write_report(folder, results, seconds, ["tabzoo", *sys.argv[1:]] if sys.argv[1:2] == ["demo"]
                              else ["tabzoo", "demo"])
    if args.json:
        json.dump({"plugins": results, "wall_time_s": round(seconds, 2),
                   "report": str(report) if report else None}, sys.stdout, indent=2, sort_keys=True, default=str)
        sys.stdout.write("\n")
    else:
        _print_table(results)
        done = f"tabzoo demo: {len(results)} plugin demos in {seconds:.1f} s"
        print(f"{done}; report written to {_written(report.parent)}" if report else done)
    return 1 if any(item["error"] for item in results) else 0


def _written(folder: Path) -> str:
    """The files of the report in ``folder``, by name: only those that were written."""
    names = [n for n in ("report.md", "results.json", "metric.png", "time.png") if (folder / n).is_file()]
    return f"{folder}/ ({', '.join(names)})"


def new_folder(out: str | None) -> Path:
    from tabzoo.cli._report import new_report_dir

    return new_report_dir(out, "tabzoo-demo")
