"""``tabzoo bench``: lists the scripts of a benchmarks folder, runs them, collects their JSON."""

from __future__ import annotations

import datetime as dt
import json
import textwrap
from pathlib import Path

import pytest
from tabzoo.cli import main

ROOT = Path(__file__).resolve().parents[3]

FAST = '''
"""A fast benchmark for the tests; prints JSON."""
import json, sys
print("some progress line that is not JSON")
print(json.dumps({
    "benchmark": "fast", "machine": {"cpu_model": "test cpu", "cpu_count": 2, "torch_threads": 1},
    "matmul_gflops": {"fp32": 100.0},
    "sizes": [{"n": 1000, "speedup_vs_dense": 2.5, "linear_fraction_of_fp32_peak": 0.4, "memory_ratio": 9.0},
              {"n": 8000, "speedup_vs_dense": 11.0, "linear_fraction_of_fp32_peak": 0.5}],
    "scaling": {"time_slope": 1.02, "slopes": {"dense": {"time": 1.98}}},
    "args": sys.argv[1:],
}, indent=2))
'''

REFUSES = '''
"""Needs a GPU; prints a JSON refusal and exits 2 without one."""
import json
print(json.dumps({"error": "no CUDA device"}))
raise SystemExit(2)
'''


HANGS = '''
"""Blocks forever: a benchmark waiting on something that never comes."""
import time
time.sleep(3600)
'''


@pytest.fixture
def bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "benchmarks"
    folder.mkdir()
    (folder / "fast.py").write_text(textwrap.dedent(FAST))
    (folder / "gpu_only.py").write_text(textwrap.dedent(REFUSES))
    (folder / "hangs.py").write_text(textwrap.dedent(HANGS))
    (folder / "_shared.py").write_text("'''a helper, not a benchmark'''\n")
    monkeypatch.chdir(tmp_path)
    return folder


def test_lists_the_scripts(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--json"]) == 0
    scripts = json.loads(capsys.readouterr().out)
    assert [s["name"] for s in scripts] == ["fast", "gpu_only", "hangs"]
    assert scripts[0]["summary"] == "A fast benchmark for the tests; prints JSON."


def test_no_benchmarks_folder_says_where_to_run_from(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["bench"]) == 2
    err = capsys.readouterr().err
    assert "no benchmarks folder at" in err and "root of a clone" in err and "--dir" in err


def test_runs_a_script_keeps_its_json_and_collects_it(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    day = dt.date.today().isoformat()
    assert main(["bench", "fast", "--args=--quick --threads 1", "--out", "rep1"]) == 0
    summary = json.loads(capsys.readouterr().out)
    saved = bench / "results" / f"fast-{day}.json"
    assert Path(summary["runs"][0]["json"]).resolve() == saved.resolve()
    assert json.loads(saved.read_text())["args"] == ["--quick", "--threads", "1"]
    figures = summary["files"][0]["figures"]
    assert {f["name"]: f["value"] for f in figures["speedup"]} == {
        "sizes.[n=1000].speedup_vs_dense": 2.5, "sizes.[n=8000].speedup_vs_dense": 11.0}  # not memory_ratio
    assert {f["name"] for f in figures["slope"]} == {"scaling.time_slope", "scaling.slopes.dense.time"}
    assert [f["value"] for f in figures["fraction_of_peak"]] == [0.4, 0.5]
    assert [f["value"] for f in figures["peak_gflops"]] == [100.0]
    report = (bench.parent / "rep1" / "report.md").read_text()
    assert "| fast-" in report and "sizes.[n=8000].speedup_vs_dense | 11 |" in report
    for png in ("slopes.png", "speedups.png", "peak.png"):
        assert (bench.parent / "rep1" / png).read_bytes()[:4] == b"\x89PNG"
    # a second run never overwrites the first result, nor a report folder
    assert main(["bench", "fast"]) == 0
    assert (bench / "results" / f"fast-{day}-2.json").exists() and saved.exists()
    assert (bench.parent / f"tabzoo-bench-{day}" / "report.md").exists()
    capsys.readouterr()
    assert main(["bench", "fast", "--out", "rep1"]) == 2
    assert "already exists and is not empty" in capsys.readouterr().err


def test_a_failing_script_is_reported_and_keeps_nothing(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "gpu_only", "fast", "--out", "rep"]) == 1
    runs = {r["name"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    assert runs["gpu_only"]["returncode"] == 2 and "no CUDA device" in runs["gpu_only"]["error"]
    assert runs["fast"]["error"] is None
    assert [p.name.split("-")[0] for p in (bench / "results").iterdir()] == ["fast"]


def test_a_hung_script_is_stopped_with_the_option_to_raise_the_limit(
    bench: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "hangs", "fast", "--timeout", "1.5", "--out", "rep"]) == 1
    captured = capsys.readouterr()
    runs = {r["name"]: r for r in json.loads(captured.out)["runs"]}
    assert runs["hangs"]["error"].startswith("HangError: benchmark hangs made no progress for 1.5 s")
    assert "`tabzoo bench --timeout SECONDS` (now 1.5)" in runs["hangs"]["error"] and "HangError" in captured.err
    assert runs["fast"]["error"] is None and Path(runs["fast"]["json"]).is_file()
    assert [p.name.split("-")[0] for p in (bench / "results").iterdir()] == ["fast"]


def test_unknown_name_lists_the_benchmarks(bench: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "nope"]) == 2
    assert "no benchmark named ['nope']" in capsys.readouterr().err


@pytest.mark.skipif(not (ROOT / "benchmarks" / "results").is_dir(), reason="needs the repository checkout")
def test_collects_the_committed_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--collect", "kernels", "--dir", str(ROOT / "benchmarks"), "--out", str(tmp_path / "r")]) == 0
    files = json.loads(capsys.readouterr().out)["files"]
    assert files and all(f["file"].startswith("kernels") for f in files)
    names = {f["name"] for item in files for f in item["figures"]["speedup"]}
    assert any("speedup_vs_sdpa" in n for n in names) and any("speedup_vs_sequential" in n for n in names)
