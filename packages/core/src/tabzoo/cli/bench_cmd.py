"""``tabzoo bench [NAME ...] [--collect] [--dir benchmarks]``: run the benchmark scripts, collect their JSON.

The benchmarks are scripts in the repository's ``benchmarks/`` folder, not package data: the
command looks for them in ``--dir`` (default ``./benchmarks``, relative to the current folder, so
run it from a clone's root) and says so when the folder is absent.

* ``tabzoo bench`` lists the scripts there (``--json`` for JSON).
* ``tabzoo bench NAME ...`` runs each script with this Python (``--args`` passes options, e.g.
  ``--args=--quick``), keeps the JSON it prints as ``<dir>/results/<NAME>-<date>[-N].json`` (never
  overwriting), then collects those files into a report.
* ``tabzoo bench --collect [NAME ...]`` only collects the JSON already in ``<dir>/results/``
  (optionally those whose file name starts with a NAME).

The report (``report.md``, ``collected.json``, ``slopes.png``, ``speedups.png``, ``peak.png``)
goes into a new folder (``--out``, or ``./tabzoo-bench-<date>[-N]``): scaling slopes, speed-ups
against the dense or sequential baselines, and fractions of the matmul peak measured in the same
run (see :mod:`tabzoo.cli._bench` for how fields are recognised). The JSON summary is printed on
stdout, the report's folder on stderr. Some scripts need the benchmark peers
(``uv run --group bench tabzoo bench NAME``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from tabzoo.cli.argtypes import finite
from tabzoo.errors import TabzooInputError


def add_parser(sub: Any) -> None:
    p = sub.add_parser("bench", help="list / run the benchmark scripts; collect their JSON into a report",
                       description="Without NAME: list the benchmark scripts of --dir (default ./benchmarks, "
                       "run from a clone's root). With NAME: run those scripts, keep the JSON each prints "
                       "under <dir>/results/ (never overwriting) and collect it into a report. With "
                       "--collect: only collect the JSON already in <dir>/results/ into one report of "
                       "scaling slopes, speed-ups and fractions of the measured peak.")
    p.add_argument("names", nargs="*", metavar="NAME", help="benchmark scripts to run (see `tabzoo bench`)")
    p.add_argument("--dir", default="benchmarks", help="the benchmarks folder (default: ./benchmarks)")
    p.add_argument("--collect", action="store_true", help="run nothing; collect <dir>/results/*.json")
    p.add_argument("--args", default="", help="options passed to every script, e.g. --args=--quick")
    p.add_argument("--out", default=None, help="report folder (must not hold files); default ./tabzoo-bench-DATE")
    p.add_argument("--timeout", type=finite(0.0, strict=True), default=600.0, metavar="SECONDS",
                   help="stop a script that makes no progress (uses almost no CPU) for this long; it is "
                   "reported as failed and the other scripts' results are kept (default 600)")
    p.add_argument("--json", action="store_true", help="list as JSON (runs and collections always print JSON)")
    p.set_defaults(func=run)


def _folder(arg: str) -> Path:
    folder = Path(arg)
    if not folder.is_dir():
        raise TabzooInputError(
            f"no benchmarks folder at {folder.resolve()}: the benchmarks are scripts in the tabzoo "
            "repository, not in the installed packages. Run from the root of a clone, or pass --dir PATH."
        )
    return folder


def _json_of(stdout: str) -> Any:
    """The JSON a script printed: all of stdout, else its last top-level object."""
    text = stdout.strip()
    try:
        return json.loads(text)
    except ValueError:
        pass
    for start in [i for i, ch in enumerate(text) if ch == "{" and (i == 0 or text[i - 1] == "\n")][::-1]:
        try:
            return json.loads(text[start:])
        except ValueError:
            continue
    raise ValueError("the script printed no JSON object")


def _new_file(results: Path, name: str) -> Path:
    day = dt.date.today().isoformat()
    for i in range(1, 1000):
        path = results / (f"{name}-{day}.json" if i == 1 else f"{name}-{day}-{i}.json")
        if not path.exists():
            return path
    raise TabzooInputError(f"{results}/{name}-{day}-*.json: too many results today.")


def _run_scripts(folder: Path, names: list[str], extra: str,
                 timeout: float = 600.0) -> tuple[list[Path], list[dict[str, Any]]]:
    from tabzoo.cli._bench import list_scripts

    scripts = {s["name"]: s for s in list_scripts(folder)}
    unknown = [n for n in names if n not in scripts]
    if unknown:
        raise TabzooInputError(f"no benchmark named {unknown} in {folder}; there are: {sorted(scripts)}.")
    results = folder / "results"
    results.mkdir(exist_ok=True)
    runs = [_run_one(folder, name, scripts[name]["path"], extra, timeout) for name in names]
    return [Path(r["json"]) for r in runs if r["json"] is not None], runs


def _run_one(folder: Path, name: str, script: str, extra: str, timeout: float) -> dict[str, Any]:
    """Run one script; its row for the report. ``json`` is the result file written, ``error`` why none was."""
    from tabzoo.cli._watchdog import run_process
    from tabzoo.files import write_text

    t0 = time.perf_counter()
    print(f"tabzoo bench: running {script} {extra}".rstrip(), file=sys.stderr, flush=True)
    code, stdout, outcome = run_process([sys.executable, script, *shlex.split(extra)], timeout,
                                        f"benchmark {name}", "tabzoo bench --timeout", cwd=folder.resolve().parent)
    run: dict[str, Any] = {"name": name, "returncode": code,
                           "seconds": round(time.perf_counter() - t0, 2), "json": None, "error": None}
    if outcome.error is not None:  # stopped as hung: its partial output is not kept
        run["error"] = f"{type(outcome.error).__name__}: {outcome.error}"
        print(f"tabzoo bench: {run['error']}", file=sys.stderr, flush=True)
        return run
    try:
        data = _json_of(stdout)
    except ValueError as exc:
        run["error"] = f"{exc} (exit code {code})"
        return run
    if code != 0:
        run["error"] = f"exit code {code}: {json.dumps(data)[:300]}"
        return run
    path = _new_file(folder / "results", name.replace("_", "-"))
    write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
    run["json"] = str(path)
    return run


def _panels(collected: list[dict[str, Any]], category: str, xlabel: str, log: bool) -> list[dict[str, Any]]:
    panels = []
    for item in collected:
        figs = item["figures"][category][:24]
        if figs:
            panels.append({"title": item["file"], "labels": [f["name"][-34:] for f in figs],
                           "values": [f["value"] for f in figs], "highlight": [False] * len(figs),
                           "xlabel": xlabel, "log": log})
    return panels


def write_report(folder: Path, collected: list[dict[str, Any]], runs: list[dict[str, Any]], source: Path) -> Path:
    """The collected report in ``folder``; returns ``report.md``."""
    from tabzoo.cli._report import bar_grid, machine, md_table
    from tabzoo.files import write_text

    pngs = {
        "slopes.png": bar_grid(folder / "slopes.png", _panels(collected, "slope", "log-log slope (1 = linear)", False),
                               "scaling slopes"),
        "speedups.png": bar_grid(folder / "speedups.png", _panels(collected, "speedup", "x faster (log)", True),
                                 "speed-ups against the baseline measured in the same run"),
        "peak.png": bar_grid(folder / "peak.png", _panels(collected, "fraction_of_peak", "fraction of peak", False),
                             "fractions of the matmul peak measured in the same run"),
    }
    write_text(folder / "collected.json", json.dumps({"source": str(source), "runs": runs, "files": collected},
                                                     indent=2, sort_keys=True) + "\n")
    lines = ["# tabzoo bench: collected results", "",
             f"{len(collected)} JSON files from `{source}`, collected on "
             f"{dt.datetime.now(dt.UTC).isoformat(timespec='seconds')} (collector machine: "
             f"{machine()['processor']}). Each figure was measured by its script on its own machine and "
             "date (below); ratios and slopes compare peers measured in the same run.", ""]
    if runs:
        lines += ["## Runs", "", md_table(["script", "exit", "seconds", "JSON", "error"],
                                          [[r["name"], r["returncode"], r["seconds"], r["json"], r["error"]] for r in runs]), ""]
    titles = {"slope": "Scaling slopes (log-log, 1 = linear)",
              "speedup": "Speed-ups against the dense / sequential baseline or the peer",
              "fraction_of_peak": "Fractions of the measured matmul peak", "peak_gflops": "Measured matmul peak, GFLOP/s"}
    for cat, title in titles.items():
        rows = [[item["file"], f["name"], f["value"]] for item in collected for f in item["figures"][cat]]
        lines += [f"## {title}", "", md_table(["file", "figure", "value"], rows) if rows else "(none)", ""]
    lines += ["## Files", "", md_table(
        ["file", "benchmark", "machine", "figures"],
        [[i["file"], i["benchmark"], _machine_text(i.get("machine")), i.get("error") or
          sum(len(v) for v in i["figures"].values())] for i in collected]), ""]
    shown = [name for name, p in pngs.items() if p]
    lines += (["## Plots", ""] + [f"![{n[:-4]}]({n})" for n in shown] + [""]) if shown else \
        ["No plots: matplotlib is not installed (pip install 'tabzoo-core[plot]').", ""]
    report = folder / "report.md"
    return write_text(report, "\n".join(lines))


def _machine_text(m: Any) -> str:
    if not isinstance(m, dict):
        return "-"
    cpu = m.get("cpu_model") or m.get("processor") or "?"
    threads = m.get("torch_threads")
    return f"{cpu}, {m.get('cpu_count') or m.get('cpus') or '?'} cores" + (f", {threads} threads" if threads else "")


def run(args: argparse.Namespace) -> int:
    from tabzoo.cli._bench import collect, list_scripts
    from tabzoo.cli._report import new_report_dir

    folder = _folder(args.dir)
    if not args.names and not args.collect:
        scripts = list_scripts(folder)
        if args.json:
            json.dump(scripts, sys.stdout, indent=2)
            sys.stdout.write("\n")
        else:
            width = max([len(s["name"]) for s in scripts] + [4])
            for s in scripts:
                print(f"{s['name']:<{width}}  {s['summary']}")
            print(f"\nrun: tabzoo bench NAME [--args=...]; collect {folder / 'results'}: tabzoo bench --collect")
        return 0
    runs: list[dict[str, Any]] = []
    if args.collect:
        results = folder / "results"
        only = sorted({v for n in args.names for v in (n, n.replace("_", "-"))}) or None
        collected = collect(results, only)
        if not collected:
            raise TabzooInputError(f"no *.json in {results}{' for ' + str(args.names) if args.names else ''}.")
    else:
        written, runs = _run_scripts(folder, args.names, args.args, args.timeout)
        from tabzoo.cli._bench import collect_file

        collected = [collect_file(p) for p in written]
    out = new_report_dir(args.out, "tabzoo-bench")
    report = write_report(out, collected, runs, folder / "results")
    json.dump({"report": str(report), "runs": runs, "files": collected}, sys.stdout, indent=2, sort_keys=True)
    sys.stdout.write("\n")
    print(f"tabzoo bench: {len(collected)} result files collected; report written to {out}/", file=sys.stderr)
    return 1 if any(r["error"] for r in runs) else 0
