"""The top-level README's demo paragraph, generated from the committed all-plugin ``tabzoo demo`` report.

    uv run python benchmarks/demo_readme.py --write    # rewrite the paragraph in README.md
    uv run python benchmarks/demo_readme.py --check    # exit 1 when README.md disagrees

The paragraph sits between ``<!-- results:demo -->`` and ``<!-- /results:demo -->``. It links the newest
committed report folder ``benchmarks/results/demo-*/`` in which every model plugin ran (an all-plugin
``tabzoo demo``, not a ``--model`` one), and quotes the in-context models' figures (TabFlex, ORION-MSP: their
accuracy on each data set beside the best baseline) from that folder's ``results.json``.
``tests/test_demo_report.py`` checks the paragraph, and that the folder's ``report.md`` shows the same
figures as its ``results.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _readme_blocks import block_cli, blocks_in, write_blocks  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
RESULTS = ROOT / "benchmarks" / "results"
#: the model plugins of this repository: an all-plugin report holds each of them
MODEL_PLUGINS = ("multitab", "npt", "orion-msp", "ramba", "tabflex")
#: the in-context models whose figures the README quotes, with their display names
IN_CONTEXT = {"tabflex": "TabFlex", "orion-msp": "ORION-MSP"}


def load(folder: Path) -> dict[str, Any]:
    """The ``results.json`` of a demo report folder."""
    return json.loads((folder / "results.json").read_text(encoding="utf-8"))


def is_all_plugin(results: dict[str, Any]) -> bool:
    """Every model plugin ran in this report (an all-plugin ``tabzoo demo``)."""
    return set(MODEL_PLUGINS) <= {p["plugin"] for p in results["plugins"]}


def newest_all_plugin_report() -> Path:
    """The committed all-plugin demo folder with the latest ``date``."""
    found = [(load(f)["date"], f) for f in RESULTS.glob("demo-*") if (f / "results.json").is_file()]
    found = [(d, f) for d, f in found if is_all_plugin(load(f))]
    if not found:
        raise SystemExit("no all-plugin demo report under benchmarks/results/; run `tabzoo demo --out ...`")
    return max(found)[1]


def _fmt(x: float) -> str:
    return f"{x:.3f}"


def in_context_figures(results: dict[str, Any]) -> dict[str, list[tuple[str, float, float]]]:
    """plugin -> [(data set, the model's accuracy, the best baseline's accuracy)] of the in-context models."""
    out: dict[str, list[tuple[str, float, float]]] = {}
    for p in results["plugins"]:
        if p["plugin"] not in IN_CONTEXT or p["error"]:
            continue
        rows: dict[str, list[dict[str, Any]]] = {}
        for r in p["rows"]:
            rows.setdefault(r["dataset"], []).append(r)
        out[p["plugin"]] = [(ds, max(r["value"] for r in rs if not r["baseline"]),
                             max(r["value"] for r in rs if r["baseline"])) for ds, rs in rows.items()]
    return out


def render(folder: Path) -> str:
    """The README paragraph for the report in ``folder``."""
    res = load(folder)
    rel = folder.relative_to(ROOT).as_posix()
    parts = []
    for plugin, name in IN_CONTEXT.items():
        figs = in_context_figures(res).get(plugin)
        if figs:
            parts.append(f"{name} " + ", ".join(f"{ds} {_fmt(m)} (best baseline {_fmt(b)})" for ds, m, b in figs))
    date = res["date"][:10]
    return (f"`{rel}/report.md` (`tabzoo demo` of {date}, every model plugin, {res['wall_time_s']:.0f} s on 2 "
            "shared cores) shows where each model stands beside LogisticRegression/Ridge and gradient boosting on "
            "the same splits. The in-context models' accuracy there: " + "; ".join(parts) + ".")


def block_in(text: str) -> str:
    """The demo paragraph of ``text`` (between its ``results:demo`` markers)."""
    body = blocks_in(text).get("demo")
    if body is None:
        raise SystemExit("README.md has no <!-- results:demo --> block")
    return body


def write(text: str, folder: Path) -> str:
    """``text`` with the demo block re-rendered."""
    return write_blocks(text, ["demo"], lambda _name: render(folder))


def main(argv: list[str] | None = None) -> int:
    """Print the paragraph; ``--write`` rewrites it in README.md; ``--check`` exits 1 when it is stale."""
    folder = newest_all_plugin_report()
    return block_cli(argv, README, ["demo"], lambda _name: render(folder), __doc__, "benchmarks/demo_readme.py")


if __name__ == "__main__":
    raise SystemExit(main())
