"""The MultiTab-Bench grid and epoch-time figures of ``packages/multitab/README.md``, generated from
committed result files.

    uv run python benchmarks/multitab_readme.py            # print the blocks
    uv run python benchmarks/multitab_readme.py --write    # rewrite them in the README
    uv run python benchmarks/multitab_readme.py --check    # exit 1 when the README disagrees

Each block sits in the README between ``<!-- results:NAME -->`` and ``<!-- /results:NAME -->`` (the
markers of ``benchmarks/tabflex_readme.py``, whose parser this reuses):

* ``grid-skip``: the same table for the grid re-run with the skip path (the default since 2026-11-29);
* ``grid-skip2``: the same with the two-layer skip path (the default since round 2, 2026-11-29);
* ``backbone``, ``backbone-b``: the backbone variants (rounds 1 and 2) of ``benchmarks/multitab_backbone.py`` (validation and test);
* ``grid-sizes``: Δm of every model against each single-task reference, from the summary that
  ``benchmarks/multitab.py summary`` writes of the sample-size grid (``grid``: over all runs;
  ``grid_by_factor``: per number of training rows), and the stopping record of the fits;
* ``grid-twin``: MultiTab-Net's Δm split into the single-task MultiTab-Net's against the MLP and
  MultiTab-Net's against that twin, on the runs that have the twin (the why-experiment);
* ``grid-nostop``: the same draws of two settings trained without early stopping, beside the grid's
  recipe (the why-experiment's second half);
* ``grid-big``: one noisy setting trained on 5,000 (and 10,000) rows;
* ``grid-5000``: the one 5,000-row setting run with every model (the grid's timing run);
* ``epoch``: CPU seconds per epoch against MMoE's, from ``benchmarks/multitab_epoch.py``;
* ``epoch-fast``: the same with one encoder block (``n_layers=1``) beside the default (2026-11-29);
* ``backbone-c``: round 3 of the backbone variants (one encoder block), chosen on validation;
* ``ablations``: the paper's Table 2 ablations and the single-task twin with the default backbone;
* ``pertask``: per-task model selection (``select="per_task"``) beside joint selection, the twin and MMoE;
* ``pertask-all``: the same over all 18 settings (no twin at 3,000 rows);
* ``guarded``: guarded per-task selection (``select="guarded"``) on the grid, joined with the committed runs;
* ``guarded-real``: the real tables with the default, MMoE and the selection variants in one run;
* ``epoch-guarded``: epoch time at 3,000 rows with a validation pass, one block per-task / guarded vs MMoE;
* ``epoch-speedup``: the same for the default before / after one-pass validation and cheaper snapshots;
* ``step-breakdown``: one training step of the default per module (MFLOP) and the step time of cheaper variants;
* ``epoch-lean``: epoch time of the cheaper-step candidates (word dropout masks, dropout sites, ...) side by side;
* ``lite``: the grid run of the "lite" candidate (stopped early: partial), joined with the committed runs;
* ``lean``: the grid run of the "lean" candidate, joined with the committed runs;
* ``lean-rh4``: the lean step with four inter-sample heads on the grid (which change costs quality);
* ``words``: the step before with only the word dropout masks on the grid (their random stream alone);
* ``lean-real``: the real tables with the "lean" candidate, joined with the committed real-table run;
* ``words-skip64`` / ``words-skip64-real``: the word masks with a 64-wide skip path on the grid and the real tables;
* ``words-real``: the word masks alone (the default since the end of 2026-11-29) on the real tables;
* ``demo``: ``tabzoo demo --model multitab``'s report (scores and fit + predict seconds).

``tests/test_multitab_readme_figures.py`` fails when a block and its JSON disagree. Standard library only.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _readme_blocks import block_cli, stale_blocks, write_blocks  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "packages" / "multitab" / "README.md"
RESULTS = ROOT / "benchmarks" / "results"
SUMMARY = "multitab-grid-sizes-summary-2026-11-28.json"
#: the same grid with the skip path (the estimator's default since 2026-11-29), and the backbone diagnosis
SKIP_SUMMARY = "multitab-grid-sizes-skip-summary-2026-11-29.json"
BACKBONE = "multitab-backbone-2026-11-29.json"
BACKBONE_B = "multitab-backbone-b-2026-11-29.json"  # round 2: the skip path's width, depth, dropout
SKIP2_SUMMARY = "multitab-grid-sizes-skip2-summary-2026-11-29.json"  # the grid with the two-layer skip path
#: the paper's Table 2 ablations and the single-task twin with the two-layer skip path, on the grid's draws
ABLATIONS = "multitab-grid-sizes-ablations-summary-2026-11-29.json"
BACKBONE_C = "multitab-backbone-c-2026-11-29.json"  # round 3: one encoder block (speed)
EPOCH_FAST = "multitab-epoch-fast-2026-11-29.json"  # epoch time with one encoder block, side by side
TIMING = "multitab-grid-sizes-timing-2026-11-28.json"
#: per-task model selection on the grid's draws, joined with the committed joint-selection runs
PERTASK = "multitab-grid-sizes-pertask-summary-2026-11-29.json"
#: the same over all 18 settings (the 3,000-row ones too; no twin there)
PERTASK_ALL = "multitab-grid-sizes-pertask-all-summary-2026-11-29.json"
NOSTOP = "multitab-grid-sizes-nostop-summary-2026-11-28.json"
#: guarded per-task selection (``select="guarded"``) on the grid's draws, joined with the committed runs
GUARDED = "multitab-grid-sizes-guarded-all-summary-2026-11-29.json"
#: the real tables with MLP, MMoE, the default and the selection variants in one run (and its summary)
REAL_GUARDED = "multitab-real-guarded-2026-11-29.json"
REAL_GUARDED_SUMMARY = "multitab-real-guarded-summary-2026-11-29.json"
#: epoch time at 3,000 rows with validation: one block per-task / guarded against MMoE joint and per-task
EPOCH_GUARDED = "multitab-epoch-guarded-2026-11-29.json"
EPOCH_GUARDED_RUNS = (EPOCH_GUARDED, "multitab-epoch-guarded-b-2026-11-29.json")  # a second run, pooled
#: epoch time of the default before / after one-pass validation and cheaper snapshots (same flags as ``-b``)
EPOCH_SPEEDUP_RUNS = ("multitab-epoch-guarded-c-2026-11-29.json", "multitab-epoch-guarded-d-2026-11-29.json")
#: issue 26's cheaper training step (2026-11-29, late): the step taken apart, the candidates' epoch time, the grid
#: runs (``mt_lite``: stopped after 14 draws; ``mt_lean``: complete) and the real tables
STEP_BREAKDOWN = "multitab-step-breakdown-2026-11-29.json"
EPOCH_LEAN_RUNS = ("multitab-epoch-words-2026-11-29.json", "multitab-epoch-words-b-2026-11-29.json",
                   "multitab-epoch-words-c-2026-11-29.json", "multitab-epoch-words-d-2026-11-29.json",
                   "multitab-epoch-words-e-2026-11-29.json", "multitab-epoch-words-f-2026-11-29.json")
LITE = "multitab-grid-sizes-lite-summary-2026-11-29.json"
LEAN = "multitab-grid-sizes-lean-all-summary-2026-11-29.json"
LEAN_RH4 = "multitab-grid-sizes-lean-rh4-summary-2026-11-29.json"  # the lean step with four row heads (diagnosis)
WORDS = "multitab-grid-sizes-words-summary-2026-11-29.json"  # the step before with only the word masks (diagnosis)
LEAN_REAL = "multitab-real-lean-2026-11-29.json"
LEAN_REAL_SUMMARY = "multitab-real-lean-summary-2026-11-29.json"
#: the word masks with a 64-wide skip path (every dropout site, four row heads): grid and real tables
WORDS_SKIP64 = "multitab-grid-sizes-words-skip64-summary-2026-11-29.json"
WORDS_SKIP64_REAL = "multitab-real-words-skip64-2026-11-29.json"
WORDS_SKIP64_REAL_SUMMARY = "multitab-real-words-skip64-summary-2026-11-29.json"
#: the real tables with the word masks alone (the estimator's default since the end of 2026-11-29), and its summary
WORDS_REAL = "multitab-real-words-2026-11-29.json"
WORDS_REAL_SUMMARY = "multitab-real-words-summary-2026-11-29.json"
#: ``grid --rows N`` runs of one noisy setting: training rows -> summary
BIG = {5000: "multitab-grid-sizes-5000-noisy-summary-2026-11-28.json",
       10000: "multitab-grid-sizes-10000-noisy-summary-2026-11-28.json"}
EPOCH = "multitab-epoch-2026-11-28c.json"
DEMO = "multitab-demo-2026-11-29c/results.json"  # rerun with the lean default (one block, guarded selection, the lean step)
#: block name -> its result file
BLOCKS = {"step-breakdown": STEP_BREAKDOWN, "epoch-lean": EPOCH_LEAN_RUNS[-1], "lite": LITE, "lean": LEAN, "lean-rh4": LEAN_RH4, "words": WORDS,
          "words-skip64": WORDS_SKIP64, "words-skip64-real": WORDS_SKIP64_REAL_SUMMARY, "words-real": WORDS_REAL_SUMMARY,
          "lean-real": LEAN_REAL_SUMMARY, "epoch-speedup": EPOCH_SPEEDUP_RUNS[1], "guarded": GUARDED, "guarded-real": REAL_GUARDED_SUMMARY, "epoch-guarded": EPOCH_GUARDED, "pertask": PERTASK, "pertask-all": PERTASK_ALL, "ablations": ABLATIONS, "backbone-c": BACKBONE_C, "epoch-fast": EPOCH_FAST, "grid-skip2": SKIP2_SUMMARY, "grid-skip": SKIP_SUMMARY, "backbone": BACKBONE, "backbone-b": BACKBONE_B, "grid-sizes": SUMMARY, "grid-twin": SUMMARY, "grid-nostop": NOSTOP, "grid-big": BIG[5000], "grid-5000": TIMING, "epoch": EPOCH, "demo": DEMO}
#: ``multitab`` in every committed run is two encoder blocks with joint selection (the benchmark's recipe
#: pins both); the estimator's default since the evening of 2026-11-29 is ``mt_l1_guarded``
NAMES = {"multitab": "**MultiTab-Net** (two blocks, joint)", "mt_twin": "single-task MultiTab-Net", "stl": "single-task MLP",
         "gbdt": "GBDT per task", "mmoe": "MMoE", "ple": "PLE",
         "mt_single": "MultiTab-Net, one shared task token (F-/->T)", "mt_nomask": "MultiTab-Net, no task mask",
         "mt_pertask": "MultiTab-Net, per-task selection", "mt_l1": "MultiTab-Net, one block",
         "mt_l1_pertask": "MultiTab-Net, one block, per-task selection", "mmoe_pertask": "MMoE, per-task selection",
         "stl_pertask": "single-task MLP, own early stop per task",
         "mt_l1_guarded": "MultiTab-Net, one block, guarded selection", "mmoe_guarded": "MMoE, guarded selection",
         "mt_guarded": "MultiTab-Net, guarded selection",
         "mt_lite": "MultiTab-Net, one block, guarded, lite step (word masks, skip 64, ff_mult 1, one row head)",
         "mt_lean": "MultiTab-Net, one block, guarded, lean step (word masks, dropout after hidden activations only, one row head)",
         "mt_lean_rh4": "MultiTab-Net, one block, guarded, lean step with four row heads",
         "mt_words": "MultiTab-Net, one block, guarded, the step before with word dropout masks",
         "mt_words_skip64": "MultiTab-Net, one block, guarded, word dropout masks, 64-wide skip path"}
ORDER = ("multitab", "mmoe", "ple", "mt_twin", "stl", "gbdt")
#: the rows that are the estimator's default: one block, guarded selection since 2026-11-29; the lean step (word
#: dropout masks, dropout after hidden activations only, one inter-sample head) for a few hours that night, then
#: the step before with the word dropout masks only (``mt_words``)
DEFAULT_LABELS = {"mt_l1_guarded": "**MultiTab-Net, one block, guarded selection** (the default until the lean step)",
                  "mt_lean": "MultiTab-Net, one block, guarded selection, lean step (the default for a few hours)",
                  "mt_words": "**MultiTab-Net, one block, guarded selection, word dropout masks (the default)**"}


def _load(name: str) -> dict[str, Any]:
    return json.loads((RESULTS / name).read_text(encoding="utf-8"))


def _pm(d: dict[str, Any]) -> str:
    return f"{d['mean']:+.2f} ± {d['std']:.2f}"


def render_grid(summary: str = SUMMARY) -> str:
    s = _load(summary)
    ref = "stl"
    overall = s["grid"][ref]
    sizes = s["grid_by_factor"][ref]["n_train"]
    levels = sorted(sizes, key=int)
    models = [m for m in ORDER if m in overall]
    runs = {m: overall[m]["runs"] for m in models}
    per_setting = {}
    for i, n in s["grid_runs_per_setting"].items():
        per_setting.setdefault(n, []).append(i)
    lines = [f"`benchmarks/results/{summary}`: Δm (%, paper eq. 5) against the single-task MLP on the test draw, "
             f"mean ± std over runs; {overall[models[0]]['settings']} settings, {runs[models[0]]} runs "
             "(settings x seeds; " + ", ".join(f"settings {', '.join(v)}: {k} seed{'s' if k > 1 else ''}"
                                              for k, v in sorted(per_setting.items(), reverse=True))
             + "); settings positive = settings whose mean over seeds is > 0.", "",
             "| model | all runs | settings positive | " + " | ".join(f"{int(n):,} rows" for n in levels) + " |",
             "| --- | --- | --- | " + " | ".join("---" for _ in levels) + " |"]
    for m in models:
        o = overall[m]
        name = NAMES[m] + (f" ({runs[m]} runs)" if runs[m] != runs[models[0]] else "")
        lines.append(f"| {name} | {_pm(o)} | {o['settings_positive']} of {o['settings']} | "
                     + " | ".join(_pm(sizes[n][m]) if m in sizes[n] else "-" for n in levels) + " |")
    factors = s["grid_by_factor"][ref]
    shown = [m for m in ("multitab", "mmoe", "ple") if m in overall]
    lines += ["", "Per level of the other factors (all runs at that level, Δm against the single-task MLP):", "",
              "| factor = level | runs | " + " | ".join(NAMES[m] for m in shown) + " |",
              "| --- | --- | " + " | ".join("---" for _ in shown) + " |"]
    for f, label in (("regime", "noise"), ("t", "tasks"), ("p", "task correlation p")):
        for level, by in sorted(factors.get(f, {}).items()):
            lines.append(f"| {label} = {level} | {by[shown[0]]['runs']} | " + " | ".join(_pm(by[m]) for m in shown) + " |")
    stop = s.get("grid_stopping") or {}
    if stop:
        lines += ["", "Fits stopped early (validation mean EV, before the epoch cap): " + ", ".join(
            f"{NAMES.get(m, m).strip('*')} {d['stopped_early']} of {d['fits']} (median {d['median_epochs']:g} epochs)"
            for m, d in sorted(stop.items(), key=lambda kv: ORDER.index(kv[0]) if kv[0] in ORDER else 99)) + "."]
    return "\n".join(lines)


def render_backbone(name: str = BACKBONE) -> str:
    """The backbone variants of ``benchmarks/multitab_backbone.py``: validation (the choice) and test."""
    b = _load(name)
    v = b["variants"]
    order = sorted(v, key=lambda k: -v[k]["val_mean_ev"])
    ref = (f"of `{'`, `'.join(b['reference'])}` (its MultiTab-Net" if b.get("reference")
           else "of the committed 2026-11-28 grid (the committed MultiTab-Net")
    lines = [f"`benchmarks/results/{name}`: MultiTab-Net variants on {len(b['draws'])} draws of the grid "
             "(setting, seed: " + ", ".join(f"{s}/{d}" for s, d in b["draws"]) + "), the grid's recipe; chosen on the "
             f"mean validation EV only: **{b['chosen_on_validation']}**. Test Δm against the single-task MLP "
             f"{ref}: {b['committed']['committed_multitab_dm_vs_stl']:+.2f}, "
             f"MMoE: {b['committed']['committed_mmoe_dm_vs_stl']:+.2f} on these draws).", "",
             "| variant | settings | validation EV | test EV | test Δm vs MLP | fit s |", "| --- | --- | --- | --- | --- | --- |"]
    for k in order:
        d = v[k]
        opts = ", ".join(f"{a}={c}" for a, c in (d["settings"] or {}).items())
        lines.append(f"| {k} | {opts} | {d['val_mean_ev']:.4f} | {d['test_mean_ev']:.4f} | "
                     f"{d['dm_test_vs_committed_stl']:+.2f} | {d['fit_s_mean']:.1f} |")
    return "\n".join(lines)


def _setting(s: dict[str, Any], i: str) -> str:
    g = s["grid_settings"][i]
    return f"{g['n_train']:,} rows, t = {g['t']}, {g['regime']}, p = {g['p']}"


def render_twin() -> str:
    """Δm of MultiTab-Net split, on the same draws, into the single-task MultiTab-Net's Δm against the
    single-task MLP (the backbone) and MultiTab-Net's against its single-task twin (the multitask gain)."""
    s = _load(SUMMARY)
    w, sc = s["grid_with_twin"], s["grid_with_twin_scores"]
    cols = [("stl", "multitab"), ("stl", "mt_twin"), ("mt_twin", "multitab"), ("stl", "mmoe")]
    head = ["MultiTab-Net vs MLP", "single-task MultiTab-Net vs MLP", "MultiTab-Net vs single-task MultiTab-Net",
            "MMoE vs MLP"]
    settings = sorted(w["stl"]["mt_twin"]["per_setting_mean"], key=lambda i: (
        s["grid_settings"][i]["n_train"], s["grid_settings"][i]["regime"], s["grid_settings"][i]["t"], s["grid_settings"][i]["p"]))
    lines = [f"`benchmarks/results/{SUMMARY}` (`grid_with_twin`, `grid_with_twin_scores`): the runs that also "
             "have the single-task MultiTab-Net (one MultiTab-Net per task, same recipe, same draws); Δm (%) "
             "mean ± std over seeds; test EV averaged over tasks.", "",
             "| setting | runs | " + " | ".join(head) + " | test EV: MLP / MultiTab-Net / single-task MultiTab-Net |",
             "| --- | --- | " + " | ".join("---" for _ in head) + " | --- |"]
    for i in settings:
        runs = sc[i]["mt_twin"]["runs"]
        cells = [f"{w[r][m]['per_setting_mean'][i]:+.2f}" + (f" ± {w[r][m]['per_setting_std'][i]:.2f}" if runs > 1 else "")
                 for r, m in cols]
        ev = " / ".join(f"{sc[i][m]['mean']:.3f}" for m in ("stl", "multitab", "mt_twin"))
        lines.append(f"| {_setting(s, i)} | {runs} | " + " | ".join(cells) + f" | {ev} |")
    lines.append(f"| all runs (settings > 0) | {w['stl']['mt_twin']['runs']} | "
                 + " | ".join(f"{_pm(w[r][m])} ({w[r][m]['settings_positive']} of {w[r][m]['settings']})" for r, m in cols) + " | |")
    return "\n".join(lines)


def render_nostop() -> str:
    """The why-experiment's second half: the same draws trained without early stopping (patience =
    the epoch cap, best validation epoch restored) against the grid's recipe."""
    s, n = _load(SUMMARY), _load(NOSTOP)
    settings = sorted(n["grid"]["stl"]["multitab"]["per_setting_mean"], key=int)
    models = ("multitab", "mmoe")
    lines = [f"`benchmarks/results/{NOSTOP}` against `{SUMMARY}` (same draws; Δm against the single-task MLP "
             "trained with the same recipe, mean ± std over seeds; test EV averaged over tasks).", "",
             "| setting | recipe | runs | " + " | ".join(f"{NAMES[m]} vs MLP" for m in models)
             + " | test EV: MLP / MultiTab-Net / MMoE |", "| --- | --- | --- | " + " | ".join("---" for _ in models) + " | --- |"]
    for i in settings:
        for label, summ in (("early stopping (grid)", s), ("no early stopping", n)):
            g, sc = summ["grid"]["stl"], summ["grid_scores"][i]
            cells = [f"{g[m]['per_setting_mean'][i]:+.2f} ± {g[m]['per_setting_std'][i]:.2f}" for m in models]
            ev = " / ".join(f"{sc[m]['mean']:.3f}" for m in ("stl", "multitab", "mmoe"))
            lines.append(f"| {_setting(s, i)} | {label} | {sc['multitab']['runs']} | " + " | ".join(cells) + f" | {ev} |")
    return "\n".join(lines)


def render_big() -> str:
    """The grid's noisy, p = 1.0, 3-task setting trained on more rows (``grid --rows N``), one summary per N."""
    lines: list[str] = []
    for rows, name in BIG.items():
        b = _load(name)
        g, sc = b["grid"], b["grid_scores"]
        (i,) = sc
        st = b["grid_settings"][i]
        if not lines:
            lines = [f"Grid setting {i} (t = {st['t']}, {st['regime']}, p = {st['p']}; {st['n_train']:,} rows in the grid) "
                     "trained on more rows, same task weights and seeds; mean ± std over seeds: "
                     + ", ".join(f"`benchmarks/results/{n}`" for n in BIG.values()) + ".", "",
                     "| rows | model | runs | test EV (mean over tasks) | Δm vs single-task MLP | Δm vs single-task MultiTab-Net |",
                     "| --- | --- | --- | --- | --- | --- |"]
        for m in ORDER:
            if m not in sc[i]:
                continue
            vs = [f"{g[r][m]['per_setting_mean'][i]:+.2f} ± {g[r][m]['per_setting_std'][i]:.2f}" if m in g.get(r, {}) else "-"
                  for r in ("stl", "mt_twin")]
            lines.append(f"| {rows:,} | {NAMES[m]} | {sc[i][m]['runs']} | {sc[i][m]['mean']:.3f} ± {sc[i][m]['std']:.3f} | "
                         f"{vs[0]} | {vs[1]} |")
    return "\n".join(lines)


def render_5000() -> str:
    t = _load(TIMING)
    r = t["grid"][0]
    dm = r["delta_m"]
    lines = [f"`benchmarks/results/{TIMING}`: {r['n_train']:,} training rows, t = {r['t']}, p = {r['p']}, "
             f"{r['regime']}, seed {r['seed']} (one run: no spread).", "",
             "| model | test EV per task | Δm vs single-task MLP | Δm vs single-task MultiTab-Net | fit s (wall, load "
             f"{t['machine']['load_average_at_start'][0]:.1f} at start) |",
             "| --- | --- | --- | --- | --- |"]
    for m in ORDER:
        if m not in r["scores"]:
            continue
        ev = " / ".join(f"{v:.3f}" for v in r["scores"][m])
        vs_stl = f"{dm['stl'][m]:+.2f}" if m in dm.get("stl", {}) else "-"
        vs_twin = f"{dm['mt_twin'][m]:+.2f}" if m in dm.get("mt_twin", {}) else "-"
        lines.append(f"| {NAMES[m]} | {ev} | {vs_stl} | {vs_twin} | {r['fit_s'][m]:.0f} |")
    return "\n".join(lines)


def render_epoch() -> str:
    e = _load(EPOCH)
    rows = e["rows"]
    variants = [m for m in rows[0]["ratio_to_mmoe_median"] if m != "mmoe"]
    lines = [f"`benchmarks/results/{EPOCH}`: CPU seconds per epoch over MMoE's at the same token width, "
             "median per-epoch time inside the training loop (whole fit ÷ epochs in brackets), median of "
             f"{e['settings']['repeats']} alternated repeats, one thread; fp32 matmul "
             f"{e['matmul_fp32_gflops_before']:.0f} GFLOP/s before, {e['matmul_fp32_gflops_after']:.0f} after. "
             "`multitab_sdpa` is the paper's block with the core's attention forced (the path before the "
             "short-key backend); FLOPs: MultiTab-Net's matmul and attention FLOPs per training step over MMoE's.", "",
             "| width e, tasks, rows, batch | " + " | ".join(variants) + " | FLOPs |",
             "| --- | " + " | ".join("---" for _ in variants) + " | --- |"]
    for r in rows:
        lines.append(f"| {r['d_embed']}, {r['tasks']}, {r.get('n_train', e['settings']['n_train'])}, "
                     f"{r.get('batch_size', e['settings']['batch_size'])} | "
                     + " | ".join(f"{r['loop_ratio_to_mmoe_median'][v]:.2f}x ({r['ratio_to_mmoe_median'][v]:.2f}x)"
                                  for v in variants)
                     + f" | {r['mflop_ratio_to_mmoe']['multitab']:.2f}x |")
    return "\n".join(lines)


def render_demo() -> str:
    d = _load(DEMO)
    rows = [r for p in d["plugins"] for r in p["rows"]]
    models = list(dict.fromkeys(r["model"] for r in rows))
    tasks = list(dict.fromkeys(r["task"] for r in rows))
    value = {(r["model"], r["task"]): r for r in rows}
    load = d.get("machine", {}).get("load_average_at_start")
    lines = [f"`benchmarks/results/{DEMO}` ({rows[0]['dataset']}, seeded 30% held-out split; "
             f"{d['date'][:10]}, {d['machine'].get('torch_threads')} thread"
             + (f", load {load[0]:.1f}" if load else "") + "): AUC (classification) / explained variance "
             "(regression) on the held-out rows; fit + predict seconds, wall (MultiTab-Net and MMoE fit all "
             "tasks at once, the others one model per task).", "",
             "| model | " + " | ".join(f"{t} ({value[(next(m for m in models if (m, t) in value), t)]['metric']})"
                                     for t in tasks) + " | fit + predict s |",
             "| --- | " + " | ".join("---" for _ in tasks) + " | --- |"]
    for m in models:
        secs = sum({round(value[(m, t)]["fit_predict_s"], 6) for t in tasks if (m, t) in value})
        lines.append(f"| {NAMES.get(m, m) if m != 'MultiTab-Net' else '**MultiTab-Net**'} | "
                     + " | ".join(f"{value[(m, t)]['value']:.3f}" if (m, t) in value else "-" for t in tasks)
                     + f" | {secs:.2f} |")
    secs_of = {m: sum({round(value[(m, t)]["fit_predict_s"], 6) for t in tasks if (m, t) in value}) for m in models}
    if secs_of.get("MMoE"):
        lines += ["", f"MultiTab-Net's fit + predict takes {secs_of['MultiTab-Net'] / secs_of['MMoE']:.1f}x MMoE's "
                  "here: its epochs are slower (the epoch-time table above), and each fit runs to its own early stop."]
    return "\n".join(lines)


def render_ablations() -> str:
    """The paper's Table 2 ablations (one shared task token; no task mask) and the single-task twin, with
    the default backbone, against the single-task MLP and against the twin, on the same grid draws."""
    s = _load(ABLATIONS)
    models = [m for m in ("multitab", "mt_single", "mt_nomask", "mt_twin", "mmoe") if m in s["grid"]["stl"]]
    g, tw = s["grid"]["stl"], s["grid"].get("mt_twin", {})
    sizes = s["grid_by_factor"]["stl"]["n_train"]
    levels = sorted(sizes, key=int)
    n_settings = len(s["grid_runs_per_setting"])
    lines = [f"`benchmarks/results/{ABLATIONS}`: the draws that every ablation ran on ({n_settings} settings"
             + ("" if n_settings == len(s["grid_settings"]) else f" of {len(s['grid_settings'])}: "
                + ", ".join(f"{int(n):,}" for n in levels) + " training rows; partial")
             + f", {g[models[0]]['runs']} runs = settings x seeds; the grid's recipe and draws, the two-layer skip "
             "path in every MultiTab-Net). Δm (%) mean ± std over runs; settings > 0 = settings whose mean over "
             "seeds is > 0; the last column is the multitask gain over one MultiTab-Net per task.", "",
             "| model | Δm vs single-task MLP | settings > 0 | " + " | ".join(f"{int(n):,} rows" for n in levels)
             + " | Δm vs single-task MultiTab-Net | settings > 0 |",
             "| --- | --- | --- | " + " | ".join("---" for _ in levels) + " | --- | --- |"]
    for m in models:
        o = g[m]
        vs_twin = f"{_pm(tw[m])} | {tw[m]['settings_positive']} of {tw[m]['settings']}" if m in tw else "- | -"
        lines.append(f"| {NAMES[m]} | {_pm(o)} | {o['settings_positive']} of {o['settings']} | "
                     + " | ".join(_pm(sizes[n][m]) if m in sizes[n] else "-" for n in levels) + f" | {vs_twin} |")
    return "\n".join(lines)


def render_epoch_fast() -> str:
    """Epoch time of the default, of one encoder block (``l1``) and without the skip path, against MMoE's."""
    e = _load(EPOCH_FAST)
    rows = e["rows"]
    variants = [m for m in rows[0]["ratio_to_mmoe_median"] if m != "mmoe"]
    load = e["machine"].get("load_average_at_start")
    lines = [f"`benchmarks/results/{EPOCH_FAST}` ({e['machine'].get('cpu_model')}, load {load[0]:.1f} at the start, "
             f"{e.get('load_average_at_end', ['?'])[0]} at the end): CPU seconds per epoch over MMoE's at the same "
             "token width (8; MLPs 128-64, 3 tasks), median per-epoch time inside the training loop (whole fit ÷ "
             f"epochs in brackets), median of {e['settings']['repeats']} alternated repeats, one thread; `multitab` = "
             "the default then (two encoder blocks), `multitab_l1` = one encoder block, `multitab_noskip` = no skip "
             "path; FLOPs: matmul and attention FLOPs per training step over MMoE's.", "",
             "| rows, batch | " + " | ".join(variants) + " | FLOPs " + " / ".join(variants) + " |",
             "| --- | " + " | ".join("---" for _ in variants) + " | --- |"]
    for r in rows:
        lines.append(f"| {r['n_train']:,}, {r['batch_size']} | "
                     + " | ".join(f"{r['loop_ratio_to_mmoe_median'][v]:.2f}x ({r['ratio_to_mmoe_median'][v]:.2f}x)"
                                  for v in variants)
                     + " | " + " / ".join(f"{r['mflop_ratio_to_mmoe'][v]:.2f}x" for v in variants) + " |")
    return "\n".join(lines)


def render_pertask(name: str = PERTASK, first: tuple[str, ...] = (), default: str = "**MultiTab-Net**, two blocks, joint selection",
                   labels: dict[str, str] | None = None) -> str:
    """Per-task against joint model selection (two blocks, one block, MMoE) on the same grid draws: Δm
    against the single-task MLP, per size, against the single-task MultiTab-Net and against MMoE."""
    s = _load(name)
    g = s["grid"]["stl"]
    models = [m for m in ("multitab", "mt_pertask", "mt_l1", "mt_l1_pertask", "mt_l1_guarded", "mt_lite", "mt_lean", "mt_lean_rh4", "mt_words",
                          "mt_words_skip64",
                          "mmoe",
                          "mmoe_pertask",
                          "mmoe_guarded", "mt_twin", "stl_pertask") if m in g]
    models = [m for m in first if m in models] + [m for m in models if m not in first]  # ``first`` on top
    sizes = s["grid_by_factor"]["stl"]["n_train"]
    levels = sorted(sizes, key=int)
    tw, mm, own = s["grid"].get("mt_twin", {}), s["grid"].get("mmoe", {}), s["grid"].get("stl_pertask")
    n_settings = len(s["grid_runs_per_setting"])
    lines = [f"`benchmarks/results/{name}`: {n_settings} settings"
             + ("" if n_settings == len(s["grid_settings"]) else f" of {len(s['grid_settings'])} ("
                + ", ".join(f"{int(n):,}" for n in levels) + " training rows; partial)")
             + f", {g[models[0]]['runs']} runs = settings x seeds, the grid's recipe and draws. Δm (%) mean ± std over "
             "runs; settings > 0 = settings whose mean over seeds is > 0.", "",
             "| model | Δm vs single-task MLP | settings > 0 | " + " | ".join(f"{int(n):,} rows" for n in levels)
             + (" | vs single-task MultiTab-Net | settings > 0" if tw else "") + " | vs MMoE | settings > 0 |"
             + (" vs MLP, own stop per task | settings > 0 |" if own else ""),
             "| --- | --- | --- | " + " | ".join("---" for _ in levels) + (" | --- | ---" if tw else "")
             + " | --- | --- |" + (" --- | --- |" if own else "")]

    def rel(d: dict[str, Any], m: str) -> str:
        return f"{_pm(d[m])} | {d[m]['settings_positive']} of {d[m]['settings']}" if m in d else "- | -"

    for m in models:
        o = g[m]
        name = default if m == "multitab" else (labels or {}).get(m, NAMES[m])  # rows unlike the ablations block's
        lines.append(f"| {name} | {_pm(o)} | {o['settings_positive']} of {o['settings']} | "
                     + " | ".join(_pm(sizes[n][m]) if m in sizes[n] else "-" for n in levels) + (f" | {rel(tw, m)}" if tw else "") + f" | {rel(mm, m)} |"
                     + (f" {rel(own, m)} |" if own else ""))
    stop = s.get("grid_stopping") or {}
    if stop:
        lines += ["", "Fits stopped early (before the epoch cap), median epochs: " + ", ".join(
            f"{NAMES[m].strip('*')} {stop[m]['stopped_early']} of {stop[m]['fits']} ({stop[m]['median_epochs']:g})"
            for m in models if m in stop and m != "mt_twin") + "."]
    return "\n".join(lines)


def render_real(name: str = REAL_GUARDED_SUMMARY, raw: str = REAL_GUARDED, joined: str = "",
                only: tuple[str, ...] = (), also: tuple[str, ...] = (), labels: dict[str, str] | None = None) -> str:
    """Δm against the single-task MLP per real table (mean ± std over seeds), tables > 0, and how often
    the guard kept a task's own epoch (from the run's ``selection`` record). ``joined``: the committed
    run that ``raw``'s models were joined with (its rows, its reference MLP); ``also``: further joined runs
    whose selection records count too; ``labels``: row labels over the defaults."""
    s, r = _load(name), _load(raw)
    g = s["real"]["stl"]
    models = [m for m in ("mt_words", "mt_words_skip64", "mt_lean", "multitab", "mt_l1_pertask", "mt_l1_guarded", "mmoe", "mmoe_guarded")
              if m in g and (not only or m in only)]
    tables = list(g[models[0]]["per_setting_mean"])
    own: dict[str, list[int]] = {}
    for row in [row for f in (raw, *also) for row in _load(f)["real"]]:
        for m, sel in row.get("selection", {}).items():
            got = own.setdefault(m, [0, 0])
            got[0] += sum(c["weights"] == "own" for c in sel)
            got[1] += len(sel)
    load = r["machine"].get("load_average_at_start")
    how = (f"`{', '.join(r['settings']['models'])}` joined with " + " and ".join(f"`{j}`" for j in (joined, *also))
           + " (the same seeded subsamples and splits)"
           if joined else "every model in one run")
    lines = [f"`benchmarks/results/{name}` (of `{raw}`: {len(tables)} tables x {len(r['settings']['seeds'])} seeds, {how}; "
             f"{r['machine'].get('cpu_model')}, load {load[0]:.1f} at the start): Δm (%) against the "
             "single-task MLP on the test rows, mean ± std over seeds; tables > 0 = tables whose mean is > 0; "
             "own epochs kept = task choices where the guard kept the task's own best epoch.", "",
             "| model | mean Δm | tables > 0 | " + " | ".join(tables) + " | own epochs kept |",
             "| --- | --- | --- | " + " | ".join("---" for _ in tables) + " | --- |"]
    for m in models:
        o = g[m]
        kept = f"{own[m][0]} of {own[m][1]}" if m in own else ("see above" if joined and m == "mt_l1_guarded" else "-")
        label = "MultiTab-Net, two blocks, joint (the old default)" if m == "multitab" else (labels or {}).get(m, DEFAULT_LABELS.get(m, NAMES[m]))
        lines.append(f"| {label} | {_pm(o)} | {o['settings_positive']} of {o['settings']} | "
                     + " | ".join(f"{o['per_setting_mean'][t]:+.2f} ± {o['per_setting_std'][t]:.2f}" for t in tables)
                     + f" | {kept} |")
    return "\n".join(lines)


def _median(v: list[float]) -> float:
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def render_epoch_guarded() -> str:
    """Epoch time with a validation pass each epoch, two side-by-side runs: each model's ratio to MMoE
    (joint) and to MMoE with per-task selection, per run and pooled over both runs' repeats."""
    runs = [(name, _load(name)) for name in EPOCH_GUARDED_RUNS]
    models = ["multitab", "multitab_l1", "multitab_l1_pertask", "multitab_l1_guarded"]
    refs = ["mmoe", "mmoe_pertask"]
    e0 = runs[0][1]
    lines = [f"{' and '.join(f'`benchmarks/results/{n}`' for n, _ in runs)} ({e0['machine'].get('cpu_model')}; "
             + "; ".join(f"run {label}: load "
                         f"{e['machine']['load_average_at_start'][0]:.1f} / {e.get('load_average_at_end', ['?'])[0]} at the start / end, "
                         f"fp32 matmul {e['matmul_fp32_gflops_before']} / {e.get('matmul_fp32_gflops_after', '?')} GFLOP/s, "
                         f"{e['settings']['repeats']} repeats" for label, (_, e) in zip("ab", runs, strict=False))
             + f"): CPU seconds per epoch over MMoE's at the same token width (8; MLPs 128-64), 3,000 training rows, batch "
             f"256, {e0['settings']['n_val']} validation rows scored after every epoch (no early stop), one thread, models "
             "alternated; whole fit ÷ epochs (the validation pass and the per-task snapshots included), the training "
             "steps alone in brackets; median of the per-repeat ratios, per run (a / b) and pooled over both. "
             "`multitab` = two blocks, joint selection (the old default), `multitab_l1` = one block, joint, "
             "`multitab_l1_guarded` = one block, guarded selection (the default since 2026-11-29).", "",
             "| tasks | model | vs MMoE, run a / b | pooled | vs MMoE per-task, run a / b | pooled |",
             "| --- | --- | --- | --- | --- | --- |"]
    for t in sorted({r["tasks"] for _, e in runs for r in e["rows"]}):
        rows = [next(r for r in e["rows"] if r["tasks"] == t) for _, e in runs]
        for m in models:
            cells = []
            for ref in refs:
                whole = [[a / b for a, b in zip(r["cpu_s_per_epoch"][m], r["cpu_s_per_epoch"][ref], strict=True)] for r in rows]
                loop = [[a / b for a, b in zip(r["loop_cpu_s_per_epoch"][m], r["loop_cpu_s_per_epoch"][ref], strict=True)]
                        for r in rows]
                cells.append(" / ".join(f"{_median(w):.2f}x" for w in whole) + " | "
                             + f"**{_median([x for w in whole for x in w]):.2f}x** ({_median([x for w in loop for x in w]):.2f}x)")
            lines.append(f"| {t} | {m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def render_epoch_speedup() -> str:
    """Epoch time of the default before and after the validation-pass and snapshot changes (one run
    each, the same flags): each model's median per-repeat ratio to MMoE, whole fit ÷ epochs and the
    training steps alone."""
    runs = [(name, _load(name)) for name in EPOCH_SPEEDUP_RUNS]
    models = ["multitab_l1", "multitab_l1_pertask", "multitab_l1_guarded"]
    lines = [" and ".join(f"`benchmarks/results/{n}`" for n, _ in runs) + " (the flags of `epoch-guarded-b`, "
             + "; ".join(f"{label}: load {e['machine']['load_average_at_start'][0]:.1f} / "
                         f"{e.get('load_average_at_end', ['?'])[0]} at the start / end, fp32 matmul "
                         f"{e['matmul_fp32_gflops_before']} / {e.get('matmul_fp32_gflops_after', '?')} GFLOP/s"
                         for label, (_, e) in zip(("before", "after"), runs, strict=True))
             + "): CPU seconds per epoch over MMoE's (joint selection), median of the per-repeat ratios of "
             f"{runs[0][1]['settings']['repeats']} alternated repeats; whole fit ÷ epochs (validation pass and "
             "snapshots included), the training steps alone in brackets. `multitab_l1_guarded` is the default.", "",
             "| tasks | model | before | after |", "| --- | --- | --- | --- |"]
    for t in sorted({r["tasks"] for _, e in runs for r in e["rows"]}):
        rows = [next(r for r in e["rows"] if r["tasks"] == t) for _, e in runs]
        for m in models:
            lines.append(f"| {t} | {m} | " + " | ".join(
                f"{r['ratio_to_mmoe_median'][m]:.2f}x ({r['loop_ratio_to_mmoe_median'][m]:.2f}x)" for r in rows) + " |")
    return "\n".join(lines)


def render_step_breakdown() -> str:
    """One training step of the default (3,000 rows, batch 256, width 8) per module, and the step time of
    the variants over MMoE's."""
    s = _load(STEP_BREAKDOWN)
    variants = list(s["variants"])
    lines = [f"`benchmarks/results/{STEP_BREAKDOWN}` ({s['machine'].get('cpu_model')}, load "
             f"{s['machine']['load_average_at_start'][0]:.1f} / {s['load_average_at_end'][0]:.1f} at the start / end; one "
             f"thread, batch {s['settings']['batch_size']}, token width 8, MMoE's MLPs 128-64): matmul and attention MFLOP of "
             "one training forward + backward of the default (one block) per module, and the median thread-CPU time of "
             f"a whole training step over MMoE's ({s['settings']['steps']} steps per variant, variants alternated). "
             "Variants over the default: " + "; ".join(f"`{v}` = " + (", ".join(f"{k}={w}" for k, w in s["variants"][v].items()
                                                                              if k not in ("architecture", "n_layers")) or "-")
                                                     for v in variants if v not in ("mmoe", "default")) + ".", "",
             "| tasks | feature attention | inter-sample block | skip path | heads | all | MMoE | "
             + " | ".join(f"step {v}" for v in variants if v != "mmoe") + " |",
             "| --- | --- | --- | --- | --- | --- | --- | " + " | ".join("---" for v in variants if v != "mmoe") + " |"]
    for r in s["rows"]:
        f = r["mflop_by_module"]
        lines.append(f"| {r['tasks']} | {f['MultiTabNet.blocks.0.feature']:.1f} | {f['MultiTabNet.blocks.0.rows']:.1f} | "
                     f"{f.get('MultiTabNet.skip', 0.0):.1f} | {f['MultiTabNet.heads']:.1f} | {f['Global']:.1f} | {r['mflop']['mmoe']:.1f} | "
                     + " | ".join(f"{r['step_ratio_to_mmoe'][v]:.2f}x" for v in variants if v != "mmoe") + " |")
    return "\n".join(lines)


def render_epoch_lean() -> str:
    """Epoch time of the cheaper-step candidates over MMoE's (joint), per side-by-side run and task count:
    whole fit ÷ epochs (the validation pass and the snapshots included), training steps in brackets."""
    runs = [(name, _load(name)) for name in EPOCH_LEAN_RUNS]
    models = [m for m in ("multitab_l1_guarded", "multitab_l1_guarded_words", "multitab_l1_guarded_words_skip64",
                          "multitab_l1_guarded_words_skip64_rh1", "multitab_l1_guarded_words_skip64_ff1_rh1",
                          "multitab_l1_guarded_words_rh1", "multitab_l1_guarded_words_hidden",
                          "multitab_l1_guarded_words_hidden_rh1", "mmoe_pertask",
                          "mmoe_words")]
    lines = [" and ".join(f"`benchmarks/results/{n}`" for n, _ in runs) + " (" + runs[0][1]["machine"].get("cpu_model", "?")
             + "; runs " + ", ".join(f"{label}: load {e['machine']['load_average_at_start'][0]:.1f} / "
                                     f"{e.get('load_average_at_end', ['?'])[0]} at the start / end, {e['settings']['epochs']} epochs a fit"
                                     for label, (_, e) in zip("abcdef", runs, strict=False))
             + "): CPU seconds per epoch over MMoE's (joint selection) at token width 8 (MLPs 128-64), "
             f"3,000 training rows, batch 256, {runs[0][1]['settings']['n_val']} validation rows scored after every epoch, "
             f"one thread, {runs[0][1]['settings']['repeats']} alternated repeats, median of the per-repeat ratios; whole fit ÷ "
             "epochs, the training steps alone in brackets; - = not in that run. `multitab_l1_guarded` = the default "
             "before this change; `_words` = word dropout masks, `_hidden` = dropout after hidden activations only, "
             "`_skip64` = a 64-wide skip path, `_ff1` = feature feed-forward 1x, `_rh1` = one inter-sample head; "
             "`mmoe_words` = MMoE with the word masks too.", "",
             "| tasks | model | " + " | ".join(f"run {label}" for label, _ in zip("abcdef", runs, strict=False)) + " |",
             "| --- | --- | " + " | ".join("---" for _ in runs) + " |"]
    for t in (3, 5):
        rows = [next(r for r in e["rows"] if r["tasks"] == t and r["d_embed"] == 8) for _, e in runs]
        for m in models:
            if not any(m in r["ratio_to_mmoe_median"] for r in rows):
                continue
            lines.append(f"| {t} | {m} | " + " | ".join(
                f"{r['ratio_to_mmoe_median'][m]:.2f}x ({r['loop_ratio_to_mmoe_median'][m]:.2f}x)"
                if m in r["ratio_to_mmoe_median"] else "-" for r in rows) + " |")
    return "\n".join(lines)


#: the lean blocks name the step before plainly (its rows in the ``guarded`` block carry the default's label)
LEAN_LABELS = DEFAULT_LABELS | {"mt_l1_guarded": "MultiTab-Net, one block, guarded selection, the step before"}


RENDER = {"step-breakdown": render_step_breakdown, "epoch-lean": render_epoch_lean,
          "lite": lambda: render_pertask(LITE, first=("mt_lite", "mt_l1_guarded"), default="MultiTab-Net, two blocks, joint selection",
                                         labels=LEAN_LABELS),
          "lean": lambda: render_pertask(LEAN, first=("mt_lean", "mt_l1_guarded", "mmoe_guarded"),
                                         default="MultiTab-Net, two blocks, joint selection", labels=LEAN_LABELS),
          "lean-rh4": lambda: render_pertask(LEAN_RH4, first=("mt_lean_rh4", "mt_lean", "mt_l1_guarded", "mmoe"),
                                             default="MultiTab-Net, two blocks, joint selection",
                                             labels={"mt_lean": "MultiTab-Net, lean step (one row head)",
                                                     "mt_l1_guarded": "MultiTab-Net, the step before"}),
          "words": lambda: render_pertask(WORDS, first=("mt_words", "mt_l1_guarded", "mt_lean", "mmoe"),
                                          default="MultiTab-Net, two blocks, joint selection",
                                          labels={"mt_lean": "MultiTab-Net, the lean step",
                                                  "mt_l1_guarded": "MultiTab-Net, the step before (nn.Dropout)"}),
          "lean-real": lambda: render_real(LEAN_REAL_SUMMARY, LEAN_REAL, joined=REAL_GUARDED,
                                           only=("mt_lean", "mt_l1_guarded", "mmoe", "mmoe_guarded")),
          "words-skip64": lambda: render_pertask(WORDS_SKIP64, first=("mt_words_skip64", "mt_words", "mt_l1_guarded", "mt_lean",
                                                                      "mmoe", "mmoe_pertask"),
                                                 default="MultiTab-Net, two blocks, joint selection",
                                                 labels={"mt_lean": "MultiTab-Net, the lean step",
                                                         "mt_words": "MultiTab-Net, word masks, skip 128 (the default)",
                                                         "mt_l1_guarded": "MultiTab-Net, the step before (nn.Dropout)"}),
          "words-skip64-real": lambda: render_real(WORDS_SKIP64_REAL_SUMMARY, WORDS_SKIP64_REAL, joined=REAL_GUARDED,
                                                   only=("mt_words_skip64", "mt_lean", "mt_l1_guarded", "mmoe", "mmoe_guarded"),
                                                   also=(LEAN_REAL,),
                                                   labels={"mt_lean": "MultiTab-Net, the lean step",
                                                           "mt_l1_guarded": "MultiTab-Net, the step before (the default until the lean step)"}),
          "words-real": lambda: render_real(WORDS_REAL_SUMMARY, WORDS_REAL, joined=REAL_GUARDED,
                                            only=("mt_words", "mt_lean", "mt_l1_guarded", "mmoe", "mmoe_guarded"),
                                            also=(LEAN_REAL,),
                                            labels={"mt_lean": "MultiTab-Net, the lean step (dropout after hidden activations only, one row head)",
                                                    "mt_l1_guarded": "MultiTab-Net, the step before with nn.Dropout masks"}),
          "epoch-speedup": render_epoch_speedup, "guarded": lambda: render_pertask(GUARDED, first=("mt_l1_guarded", "mmoe_guarded"),
                                            default="MultiTab-Net, two blocks, joint selection (the old default)",
                                            labels=DEFAULT_LABELS), "guarded-real": render_real, "epoch-guarded": render_epoch_guarded,
          "pertask": render_pertask, "pertask-all": lambda: render_pertask(PERTASK_ALL), "ablations": render_ablations, "backbone-c": lambda: render_backbone(BACKBONE_C), "epoch-fast": render_epoch_fast,
          "grid-skip2": lambda: render_grid(SKIP2_SUMMARY), "grid-skip": lambda: render_grid(SKIP_SUMMARY),
          "backbone": render_backbone, "backbone-b": lambda: render_backbone(BACKBONE_B), "grid-sizes": render_grid, "grid-twin": render_twin, "grid-nostop": render_nostop, "grid-big": render_big, "grid-5000": render_5000, "epoch": render_epoch, "demo": render_demo}


def render_block(name: str) -> str:
    """The markdown of block ``name``."""
    return RENDER[name]()


def write(text: str) -> str:
    """``text`` with every block of :data:`BLOCKS` re-rendered."""
    return write_blocks(text, BLOCKS, render_block)


def stale(text: str) -> list[str]:
    """The blocks of :data:`BLOCKS` missing from ``text`` or disagreeing with their result file."""
    return stale_blocks(text, BLOCKS, render_block)


def main(argv: list[str] | None = None) -> int:
    """Print the blocks; ``--write`` rewrites them in the README; ``--check`` exits 1 on a stale one."""
    return block_cli(argv, README, BLOCKS, render_block, __doc__, "benchmarks/multitab_readme.py")


if __name__ == "__main__":
    raise SystemExit(main())
