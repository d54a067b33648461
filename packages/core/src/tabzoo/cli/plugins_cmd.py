"""``tabzoo plugins [--json]``: what is installed, what it provides, what failed, what is ambiguous."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("plugins", help="list installed plugins and what they provide")
    p.add_argument("--json", action="store_true", help="print stable JSON instead of a table")
    p.set_defaults(func=run)


def collect() -> dict[str, Any]:
    """Plugin records as JSON-able data: the stable schema behind ``tabzoo plugins --json``.

    ``{"core_version", "plugins": [record + architectures/priors/commands/kind], "conflicts":
    [{"kind", "name", "distributions": [{"name", "distribution", "version"}], "message"}]}``.
    """
    from tabzoo import __version__
    from tabzoo.plugins import get_registry
    from tabzoo.plugins.discovery import cached_listing, describe

    listing = cached_listing()  # from the discovery cache: no plugin is imported here
    if listing is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # failures are reported in the output itself
            listing = describe(get_registry())
    return {"core_version": __version__, **listing}


def _status(item: dict[str, Any]) -> str:
    if item["skipped"]:
        return f"skipped: {item['skipped']}"
    caps = sorted({c for a in item["architectures"] for c in a["capabilities"]})
    problems = [f for f in item["failures"] if f["stage"] != "conflict"]
    if not item["loaded"]:
        return f"ERROR: {item['error']}"
    if problems:
        first = problems[0]
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        label = first["hook"] or first["stage"]
        named = f" {first['name']!r}" if first["name"] else ""
        return f"PARTLY LOADED: {label}{named}: {first['error']}{more}"
    shown = caps + [f"prior {p['name']} ({p['kind']})" for p in item["priors"]]
    shown += [f"command `tabzoo {c}`" for c in item.get("commands", [])]
    return ", ".join(shown) or "ok"


def run(args: argparse.Namespace) -> int:
    data = collect()
    if args.json:
        json.dump(data, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    rows = [("NAME", "DISTRIBUTION", "VERSION", "KIND", "CAPABILITIES / STATUS")]
    for item in data["plugins"]:
        rows.append((item["name"], item["distribution"], item["version"], item["kind"] or "-", _status(item)))
    widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4])
    if len(rows) == 1:
        from tabzoo.plugins.records import install_command

        print(f"(no plugins installed; from a clone of this repository: {install_command('tabzoo-tabflex')}, "
              "and the same for tabzoo-priors, tabzoo-npt, ...)")
    if data["conflicts"]:
        print("\nAMBIGUOUS NAMES (registered by several distributions; unusable until one is disabled):")
        for c in data["conflicts"]:
            dists = ", ".join(f"{d['distribution']} {d['version']}" for d in c["distributions"])
            disable = " or ".join(f"TABZOO_DISABLE_PLUGINS={d['name']}" for d in c["distributions"])
            print(f"  {c['kind'][:-1].replace('_', ' ')} {c['name']!r}: {dists}  (fix: {disable})")
    return 0
