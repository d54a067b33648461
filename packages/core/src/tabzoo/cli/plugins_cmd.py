"""``tabzoo plugins [--json]``: what is installed, what it provides, and what failed to load."""

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
    """Plugin records as JSON-able data: the stable schema behind ``tabzoo plugins --json``."""
    from tabzoo import __version__
    from tabzoo.plugins import get_registry

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # failures are reported in the output itself
        reg = get_registry()
    out = []
    for rec in reg.records:
        item = rec.as_dict()
        item["architectures"] = [
            {
                "name": name,
                "kind": reg.get("architectures", name).kind,
                "capabilities": sorted(reg.get("architectures", name).capabilities),
            }
            for name in rec.provides.get("architectures", [])
        ]
        item["priors"] = [
            {"name": name, "kind": reg.get("priors", name).kind} for name in rec.provides.get("priors", [])
        ]
        kinds = sorted(k for k, v in rec.provides.items() if v)
        item["kind"] = ",".join(kinds) if kinds else None
        out.append(item)
    return {"core_version": __version__, "plugins": out}


def run(args: argparse.Namespace) -> int:
    data = collect()
    if args.json:
        json.dump(data, sys.stdout, indent=2, sort_keys=True)
        sys.stdout.write("\n")
        return 0
    rows = [("NAME", "DISTRIBUTION", "VERSION", "KIND", "CAPABILITIES / STATUS")]
    for item in data["plugins"]:
        caps = sorted({c for a in item["architectures"] for c in a["capabilities"]})
        status = (
            f"ERROR: {item['error']}" if item["error"]
            else f"skipped: {item['skipped']}" if item["skipped"]
            else ", ".join(caps) or "ok"
        )
        rows.append((item["name"], item["distribution"], item["version"], item["kind"] or "-", status))
    widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
    for r in rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(r[:4], widths, strict=True)) + "  " + r[4])
    if len(rows) == 1:
        print("(no plugins installed: pip install tabzoo-tabflex, tabzoo-priors, ...)")
    return 0
