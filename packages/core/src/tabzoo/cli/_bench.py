"""Collecting benchmark JSON into one report: scaling slopes, speed-ups, fractions of measured peak.

The benchmark scripts write JSON of their own shapes; the collector reads any of them by the
names of their numeric fields (whatever the nesting):

* **scaling slope**: a field whose name, or that of one of its two parents, contains ``slope``
  (log-log slope of time or memory
  against size; 1.0 is linear);
* **speed-up**: ``speedup`` / ``speed_up``, ``ratio_at_*``, or ``A_vs_B`` under a ``ratios``
  object, unless it is about memory, bytes or errors (how many times faster than the dense or
  sequential baseline, or the peer, measured in the same run);
* **fraction of peak**: a field whose name contains both ``fraction`` and ``peak`` (achieved
  GFLOP/s over the matmul peak measured in the same run);
* **measured peak**: ``fp32``/``bf16`` GFLOP/s of the matmul the script measured.

A list item's label gets its size field (``n``, ``rows``, ``m``, ``L``, ...) so the figures of
one benchmark at several sizes stay apart.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = ["CATEGORIES", "collect_file", "collect", "list_scripts"]

CATEGORIES = ("slope", "speedup", "fraction_of_peak", "peak_gflops")
_SIZE_KEYS = ("n", "N", "rows", "n_rows", "m", "L", "length", "size", "n_features", "features", "d", "n_context")
_NOT_SPEED = re.compile(r"memory|bytes|_mb\b|err|loss", re.IGNORECASE)


def _category(path: list[str]) -> str | None:
    leaf = path[-1].lower()
    parent = path[-2].lower() if len(path) > 1 else ""
    if any("slope" in k.lower() for k in path[-3:]):  # e.g. slopes.banded.row_path_time
        return "slope"
    if "fraction" in leaf and "peak" in leaf:
        return "fraction_of_peak"
    if _NOT_SPEED.search(leaf):
        return None
    if "speedup" in leaf or "speed_up" in leaf or leaf.startswith("ratio_at") or (parent == "ratios" and "_vs_" in leaf):
        return "speedup"
    if "gflops" in (leaf + parent) and re.search(r"fp32|bf16", leaf + parent) and "fraction" not in leaf:
        if not re.search(r"linear|sdpa|einsum|banded|adjacent|after|start|end", leaf):
            return "peak_gflops"
    return None


def _size(item: dict[str, Any]) -> str:
    for key in _SIZE_KEYS:
        if isinstance(item.get(key), int | float) and not isinstance(item.get(key), bool):
            return f"{key}={item[key]:g}"
    return ""


def collect_file(path: Path) -> dict[str, Any]:
    """``{"file", "benchmark", "machine", "figures": {category: [{"name", "value"}]}}`` of one JSON."""
    data = json.loads(path.read_text())
    figures: dict[str, list[dict[str, Any]]] = {c: [] for c in CATEGORIES}

    def walk(obj: Any, keys: list[str], label: list[str]) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(v, [*keys, str(k)], [*label, str(k)])
        elif isinstance(obj, list):
            for i, v in enumerate(obj[:200]):
                size = _size(v) if isinstance(v, dict) else ""
                walk(v, [*keys, str(i)], [*label, f"[{size or i}]"])
        elif isinstance(obj, int | float) and not isinstance(obj, bool) and obj == obj:
            named = [k for k in keys if not k.isdigit()]
            cat = _category(named) if named else None
            if cat is not None:
                figures[cat].append({"name": ".".join(label), "value": float(obj)})

    walk({k: v for k, v in data.items() if k not in ("machine", "targets")} if isinstance(data, dict) else data,
         [], [])
    machine = data.get("machine") if isinstance(data, dict) else None
    if isinstance(machine, dict):  # some scripts keep the measured peak beside the machine
        for key in ("fp32_gflops", "bf16_gflops"):
            if isinstance(machine.get(key), int | float):
                figures["peak_gflops"].append({"name": f"machine.{key}", "value": float(machine[key])})
    name = data.get("benchmark") if isinstance(data, dict) else None
    return {"file": path.name, "benchmark": name or path.stem, "machine": machine, "figures": figures}


def collect(results: Path, only: list[str] | None = None) -> list[dict[str, Any]]:
    """Every ``*.json`` directly in ``results`` (optionally only names starting with ``only``)."""
    files = sorted(p for p in results.glob("*.json") if not only or any(p.name.startswith(n) for n in only))
    out = []
    for path in files:
        try:
            out.append(collect_file(path))
        except (OSError, ValueError) as exc:
            out.append({"file": path.name, "benchmark": path.stem, "machine": None,
                        "figures": {c: [] for c in CATEGORIES}, "error": f"{type(exc).__name__}: {exc}"})
    return out


def list_scripts(folder: Path) -> list[dict[str, str]]:
    """The benchmark scripts of ``folder`` (``*.py`` not starting with ``_``): name, path, summary."""
    out = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        doc = ""
        text = path.read_text(encoding="utf-8", errors="replace")
        m = re.search(r'^\s*(?:#[^\n]*\n)*\s*(?:r?"""|\'\'\')\s*(.+?)\s*$', text, re.M)
        if m:
            doc = m.group(1).strip().rstrip('"')
        out.append({"name": path.stem, "path": str(path), "summary": doc})
    return out
