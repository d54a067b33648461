"""Issue 28 item 8: the top-level README links the newest all-plugin ``tabzoo demo`` report, its in-context
figures are generated from that report's ``results.json`` (``benchmarks/demo_readme.py``), and the report's
``report.md`` shows the figures of its ``results.json``; each test fails when a figure and its file disagree."""

from __future__ import annotations

import re
from typing import Any

import demo_readme as GEN  # benchmarks/ is on sys.path: tests/conftest.py

LINK = re.compile(r"benchmarks/results/(demo-[\w-]+)/report\.md")


def _report_lines(results: dict[str, Any]) -> list[str]:
    """The per-plugin table rows ``tabzoo demo`` writes into report.md for these results."""
    from tabzoo.cli._report import md_table
    from tabzoo.cli.demo_cmd import table_rows

    lines = []
    for item in results["plugins"]:
        if not item["error"]:
            lines += md_table(["h"] * 8, [r[1:] for r in table_rows([item])]).splitlines()[2:]
    return lines


def _disagreeing(report: str, results: dict[str, Any]) -> list[str]:
    return [line for line in _report_lines(results) if line not in report.splitlines()]


def test_the_readme_links_the_newest_all_plugin_demo_report() -> None:
    text = GEN.README.read_text(encoding="utf-8")
    linked = set(LINK.findall(text))
    newest = GEN.newest_all_plugin_report()
    assert linked == {newest.name}, f"README.md links {sorted(linked)}, the newest all-plugin report is {newest.name}"
    res = GEN.load(newest)
    assert GEN.is_all_plugin(res) and not [p["plugin"] for p in res["plugins"] if p["error"]]


def test_the_readme_demo_figures_match_the_report() -> None:
    text = GEN.README.read_text(encoding="utf-8")
    assert GEN.block_in(text) == GEN.render(GEN.newest_all_plugin_report()), (
        "README.md's demo paragraph disagrees with its report: run `uv run python benchmarks/demo_readme.py --write`")
    figs = GEN.in_context_figures(GEN.load(GEN.newest_all_plugin_report()))
    assert set(figs) == set(GEN.IN_CONTEXT)  # both in-context models are quoted


def test_a_changed_readme_demo_figure_is_caught() -> None:
    text = GEN.README.read_text(encoding="utf-8")
    body = GEN.block_in(text)
    value = re.search(r"\d\.\d{3}", body)
    assert value is not None, body
    tampered = text.replace(body, body.replace(value.group(0), f"{float(value.group(0)) - 0.01:.3f}", 1))
    assert GEN.block_in(tampered) != GEN.render(GEN.newest_all_plugin_report())
    assert GEN.write(tampered, GEN.newest_all_plugin_report()) == text  # --write restores it


def test_the_report_shows_the_figures_of_its_results_file() -> None:
    folder = GEN.newest_all_plugin_report()
    res = GEN.load(folder)
    report = (folder / "report.md").read_text(encoding="utf-8")
    assert _report_lines(res) and not _disagreeing(report, res)
    # an in-context model's figure changed in report.md is caught
    row = next(line for line in _report_lines(res) if "| tabflex |" in line)
    value = re.search(r"\| (0\.\d+|1) \|", row)
    assert value is not None, row
    assert _disagreeing(report.replace(row, row.replace(value.group(0), "| 0.1234 |", 1)), res) == [row]
