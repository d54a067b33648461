"""Issue 27: the quality figures that ``packages/ramba/README.md`` quotes are read from their
committed result files here; a README figure that its JSON does not give fails."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "packages" / "ramba" / "README.md"
_TASKS = "ramba-tasks-model-{}.json"


def _models(name: str, task: str = "nyc-dep-delayed") -> dict:
    return json.loads((RESULTS / _TASKS.format(name)).read_text())["tasks"][task]["models"]


def _runs(entry: dict) -> list[float]:
    return [r["test"] for r in entry["runs"]]


def _figures() -> list[tuple[str, str]]:
    """(what, the text the README must hold) for each quoted figure."""
    known = _runs(_models("known-2026-11-28")["ramba-known-24x96"])
    recent = _runs(_models("context-2026-11-27")["ramba-context-24x96"])
    kn, rc = _models("known-2026-11-28")["ramba-known-24x96"], _models("context-2026-11-27")["ramba-context-24x96"]
    gap = json.loads((RESULTS / "ramba-tasks-gap-known-2026-11-28.json").read_text())["context_mean_counts"]
    count = {k.split("max_rows=")[1].split(",")[0] + k.split("policy=")[1].split(",")[0]: v["origin_3h_context"]
             for k, v in gap.items() if k != "n_seeds"}
    reg = _models("regression-2026-11-28", "nyc-arr-delay")
    ramba_r2 = reg["ramba-recent-24x96"]
    tr = _models("transfer-2026-11-28")
    small = _models("regression-small-2026-11-28", "nyc-arr-delay")
    mse, huber = small["ramba-mse-8x48"], small["ramba-huber-8x48"]
    big = _models("regression-loss-2026-11-28", "nyc-arr-delay")["ramba-mse-24x96"]

    def val(entry: dict, key: str = "val") -> str:
        return f"{sum(r[key] for r in entry['runs']) / len(entry['runs']):.3f}"

    def ms(key: str) -> str:
        return f"{tr[key]['test_mean']:.3f} +- {tr[key]['test_std']:.3f}"

    return [
        ("transfer zero-shot", f"scores {ms('ramba-transfer-zeroshot')} there zero-shot"),
        ("transfer fine-tuned", f"and {ms('ramba-transfer-ft50')} after 50 steps"),
        ("scratch", f"against {ms('ramba-scratch50')} from scratch"),
        ("scratch at 150 steps equals 50", "at 50 and at 150 steps" if ms("ramba-scratch50") == ms("ramba-scratch150")
         else "scratch at 150 steps differs from 50"),
        ("regression R2 mean +- std", f"R^2 is {ramba_r2['test_mean']:.3f} +- {ramba_r2['test_std']:.3f}"),
        ("regression R2 per seed", " / ".join(f"{x:.3f}" for x in _runs(ramba_r2)) + " at seeds 0 / 1 / 2"),
        ("flat LightGBM R2", f"same draws {reg['lightgbm-flat-train-draw']['test_mean']:.3f} +- "
                             f"{reg['lightgbm-flat-train-draw']['test_std']:.3f} (whole train split "
                             f"{reg['lightgbm-flat-train-all']['test_mean']:.3f})"),
        ("LightGBM with aggregates R2", f"{reg['lightgbm-relational-train-draw']['test_mean']:.3f} +- "
                                        f"{reg['lightgbm-relational-train-draw']['test_std']:.3f} (whole split "
                                        f"{reg['lightgbm-relational-train-all']['test_mean']:.3f})"),
        ("ridge R2", f"ridge {reg['ridge-flat-train-draw']['test_mean']:.3f}, a constant "
                     f"{reg['constant-train-draw']['test_mean']:.3f}"),
        ("mse R2", f"R^2 {mse['test_mean']:.3f} +- {mse['test_std']:.3f} ("
                   + " / ".join(f"{x:.3f}" for x in _runs(mse)) + f"; val {val(mse)})"),
        ("huber R2", f"against Huber {huber['test_mean']:.3f} +- {huber['test_std']:.3f} (val {val(huber)})"),
        ("recalibrated R2", f"R^2 {mse['test_recal_mean']:.3f} +- {mse['test_recal_std']:.3f} (Huber "
                            f"{huber['test_recal_mean']:.3f})"),
        ("recalibration slopes", f"slopes ({min(r['recal'][0] for r in mse['runs']):.1f} to "
                                 f"{max(r['recal'][0] for r in mse['runs']):.1f})"),
        ("recalibration val CV", f"5-fold R^2 on the val draw ({val(mse, 'val_recal_cv')})"),
        ("small-budget baselines", f"flattened rows scores {small['lightgbm-flat-train-draw']['test_mean']:.3f} +- "
                                   f"{small['lightgbm-flat-train-draw']['test_std']:.3f} (whole train split "
                                   f"{small['lightgbm-flat-train-all']['test_mean']:.3f}), ridge "
                                   f"{small['ridge-flat-train-draw']['test_mean']:.3f}, LightGBM with the aggregates "
                                   f"{small['lightgbm-relational-train-draw']['test_mean']:.3f} +- "
                                   f"{small['lightgbm-relational-train-draw']['test_std']:.3f}, a constant "
                                   f"{small['constant-train-draw']['test_mean']:.3f}"),
        ("mse R2 at 5,000 seeds", f"squared error R^2 {big['test_mean']:.3f} +- {big['test_std']:.3f} ("
                                  + " / ".join(f"{x:.3f}" for x in _runs(big)) + "; val "
                                  + " / ".join(f"{r['val']:.3f}" for r in big["runs"]) + ")"),
        ("huber at 5,000 seeds", f"against Huber's {ramba_r2['test_mean']:.3f} +- {ramba_r2['test_std']:.3f} (val "
                                 + " / ".join(f"{r['val']:.3f}" for r in ramba_r2["runs"]) + ")"),
        ("recalibrated at 5,000 seeds", f"recalibrated {big['test_recal_mean']:.3f} +- {big['test_recal_std']:.3f}"),
        ("R2 > 0 on every seed", "R^2 > 0 met (every seed)" if min(_runs(mse)) > 0 else "some seed has R^2 <= 0"),
        ("known-first AUC, seeds 0 / 1", f"{known[0]:.3f} / {known[1]:.3f} at seeds 0 / 1"),
        ("recent AUC on the same seeds", f"against {recent[0]:.3f} / {recent[1]:.3f}"),
        ("known-first third seed", f"and {known[2]:.3f} against {recent[2]:.3f} at seed 2"),
        ("known-first vs recent over 3 seeds", f"{kn['test_mean']:.3f} +- {kn['test_std']:.3f} against "
                                               f"{rc['test_mean']:.3f} +- {rc['test_std']:.3f} over the 3 seeds"),
        ("known origin outcomes in the context", f"raises the origin's {count['96' + repr('recent')]:.1f} to "
                                                 f"{count['96' + repr('known')]:.1f}"),
        ("the same with 128 rows", f"{count['128' + repr('known')]:.1f} with 128 rows"),
    ]


def _stabiliser_figures() -> list[tuple[str, str]]:
    """The 2026-11-29 regression rows (small budget), the batch replay and the FLOP counts."""
    stab = _models("regression-stab-2026-11-29", "nyc-arr-delay")
    base = _models("regression-small-2026-11-28", "nyc-arr-delay")["ramba-mse-8x48"]

    def row(name: str, entry: dict) -> str:
        val = sum(r["val"] for r in entry["runs"]) / len(entry["runs"])
        return f"| `{name}` | {val:.3f} | {entry['test_mean']:.3f} +- {entry['test_std']:.3f} |"

    out = [("default regression row", row("mse-8x48", base))]
    out += [(f"stabiliser row {k}", row(k.removeprefix("ramba-"), v)) for k, v in stab.items()]
    chosen = max(stab, key=lambda k: sum(r["val"] for r in stab[k]["runs"]))
    out.append(("chosen on val", f"Chosen on val, transfer with winsorizing (`{chosen.removeprefix('ramba-')}`) scores "
                                 f"{stab[chosen]['test_mean']:.3f} +- {stab[chosen]['test_std']:.3f} on test"))
    large = _models("regression-stab-large-2026-11-29", "nyc-arr-delay")["ramba-tr-w01-24x96"]
    out.append(("chosen recipe at 5,000 seeds", f"scores {large['test_mean']:.3f} +- {large['test_std']:.3f} ("
                + " / ".join(f"{r['test']:.3f}" for r in large["runs"]) + "; val "
                + " / ".join(f"{r['val']:.3f}" for r in large["runs"]) + ")"))
    b = json.loads((RESULTS / "ramba-tasks-regression-batches-2026-11-29.json").read_text())
    c = b["constant_loss_first_last_20"]

    def arrow(key: str) -> str:
        return f"{c[key][0]:.2f} -> {c[key][1]:.2f}"

    out += [("constant on the batches", f"goes {arrow('raw_seed_1')} and {arrow('raw_seed_2')} at seeds 1 / 2 ("
                                        f"{arrow('winsorized_seed_1')} and {arrow('winsorized_seed_2')} winsorized"),
            ("top 1 % share", f"hold {b['top1pct_share_of_sum_of_squares']['train']:.0%} of its sum of squares (val "
                              f"{b['top1pct_share_of_sum_of_squares']['val']:.0%}, test "
                              f"{b['top1pct_share_of_sum_of_squares']['test']:.0%})".replace("%", " %")),
            ("draw means", f"mean is {b['mean']['val']:.1f} minutes against {b['mean']['train']:.1f} in train and "
                           f"{b['mean']['test']:.1f} in test")]
    fl = json.loads((RESULTS / "ramba-flops-2026-11-29.json").read_text())
    r0 = fl["rows"][0]
    k16 = json.loads((RESULTS / "ramba-flops-16k-2026-11-29.json").read_text())["rows"][-1]
    out += [("FLOPs at 512", f"Ramba's forward is {r0['ramba_fwd_total'] / 1e6:.0f} MFLOP against the dense transformer's "
                             f"{r0['dense_fwd'] / 1e6:.0f} (the plugin's dense variant {r0['dense_mixer_fwd'] / 1e6:.0f}), "
                             f"forward + backward {r0['ramba_fwdbwd_total'] / 1e6:.0f} against "
                             f"{r0['dense_fwdbwd'] / 1e6:.0f}"),
            ("dense/Ramba FLOPs", " / ".join(f"{r['dense_over_ramba_fwd']:.2f}" for r in fl["rows"]) + " forward and "
             + " / ".join(f"{r['dense_over_ramba_fwdbwd']:.2f}" for r in fl["rows"]) + " forward + backward"),
            ("16k counted", f"**{k16['dense_over_ramba_fwd']:.2f} / {k16['dense_over_ramba_fwdbwd']:.2f}** at 16,384"),
            ("16k FLOPs", f"Ramba {k16['ramba_fwd_total'] / 1e9:.2f} GFLOP forward and {k16['ramba_fwdbwd_total'] / 1e9:.2f} "
                          f"forward + backward against {k16['dense_fwd'] / 1e9:.1f} and {k16['dense_fwdbwd'] / 1e9:.1f}"),
            ("scan share", f"with {r0['ramba_scan_elementwise_fwd'] / r0['ramba_fwd_total']:.0%} ".replace("%", " %")
             + "of Ramba's FLOPs in the scan's")]
    ab = json.loads((RESULTS / "ramba-fused-ab-2026-11-29.json").read_text())["rows"][0]
    fwd = ab["dense_forward_cpu_ms"] / ab["ramba_after_forward_cpu_ms"] / r0["dense_over_ramba_fwd"]
    fb = ab["dense_fwdbwd_cpu_ms"] / ab["ramba_after_fwdbwd_cpu_ms"] / r0["dense_over_ramba_fwdbwd"]
    out.append(("share of dense's FLOP rate", f"at {fwd:.0%} (forward) and {fb:.0%} (forward + backward) of dense's "
                "FLOP rate".replace("%", " %")))
    return out


@pytest.mark.parametrize(("what", "text"), _stabiliser_figures())
def test_readme_stabiliser_figure_matches_its_result_file(what: str, text: str) -> None:
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert text in readme, f"{what}: the README should say {text!r} (from benchmarks/results)"


@pytest.mark.parametrize(("what", "text"), _figures())
def test_readme_figure_matches_its_result_file(what: str, text: str) -> None:
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert text in readme, f"{what}: the README should say {text!r} (from benchmarks/results)"


def _averaging_figures() -> list[tuple[str, str]]:
    """The averaging rows (``ramba_tasks_regression_ensemble.py``): seed ensembles, snapshots and
    scaling on the small-budget draws of ``nyc-arr-delay``, and one fit of 5x the steps."""
    ens = json.loads((RESULTS / "ramba-tasks-regression-ensemble-2026-11-29.json").read_text())
    e = ens["estimators"]
    small = _models("regression-small-2026-11-28", "nyc-arr-delay")
    flat = small["lightgbm-flat-train-draw"]

    def row(label: str, entry: dict) -> str:
        return f"| {label} | {entry['val_mean']:.3f} | {entry['test_mean']:.3f} +- {entry['test_std']:.3f} |"

    members = e["member-average"]["runs"]
    mt = [x for r in members for x in r["member_test"]]
    mv = [x for r in members for x in r["member_val"]]
    shrink = [r["shrink"] for r in e["ens-5+shrink"]["runs"]]
    chosen = e[ens["chosen"]]
    out = [
        ("member 0 is the default fit", "reproduces the `mse-8x48` row (val and test R^2 to 1e-6)"
         if all(abs(a["test"] - b["test"]) < 1e-6 and abs(a["val"] - b["val"]) < 1e-6 for a, b in
                zip(e["single"]["runs"], small["ramba-mse-8x48"]["runs"], strict=True)) else "member 0 differs"),
        ("spread over fits", f"test R^2 runs from {min(mt):.3f} to {max(mt):.3f} (val {min(mv):.3f} to {max(mv):.3f})"),
        ("row one fit", row("one fit (the default)", e["single"])),
        ("row member average", row("one fit, averaged over the 5 fits of each seed", e["member-average"])),
        ("row snapshots", row("one fit, its snapshots of steps 75-150 averaged", e["snap"])),
        ("row ensemble", row("mean of 5 fits, each at its best val step (`Ramba.fit(ensemble=5)`)", e["ens-5"])),
        ("row ensemble last", row("mean of 5 fits at the last step", e["ens-5-last"])),
        ("row ensemble snapshots", row("mean of 5 fits' snapshots", e["ens-5-snap"])),
        ("row ensemble scaled", row("mean of 5 fits, scaled about the train mean (c on val)", e["ens-5+shrink"])),
        ("row ensemble snapshots scaled", row("mean of 5 fits' snapshots, scaled", e["ens-5-snap+shrink"])),
        ("scale factors", f"chosen {min(shrink):.1f} to {max(shrink):.1f}"),
        ("chosen on val", f"Chosen on val (`{ens['chosen']}`), {chosen['test_mean']:.3f} +- {chosen['test_std']:.3f} "
                          f"on test, against the flat LightGBM's {flat['test_mean']:.3f} +- {flat['test_std']:.3f}"),
        ("chosen positive on every seed", "R^2 > 0 holds on every seed" if min(r["test"] for r in chosen["runs"]) > 0
         else "some seed <= 0"),
        ("load", f"load {min(ens['training_run']['load_average_at_start'][0], ens['training_run']['load_average_at_end'][0]):.1f}"
                 f"-{max(ens['training_run']['load_average_at_start'][0], ens['training_run']['load_average_at_end'][0]):.1f}"),
    ]
    long = json.loads((RESULTS / "ramba-tasks-regression-long-2026-11-29.json").read_text())
    el = long["estimators"]
    best = [s for r, m in zip(el["single"]["runs"], long["member_snapshots"].values(), strict=True)
            for s, v in zip(m[0]["steps"], m[0]["val"], strict=True) if v == r["val"]]
    loads = long["training_run"]["load_average_at_start"][:1] + long["training_run"]["load_average_at_end"][:1]
    out += [
        ("row 750 steps", row("one fit of 750 steps (the 5 fits' compute), best of its val steps 50, 100, ..., 750",
                              el["single"])),
        ("row 750 last", row("the same at step 750", el["single-last"])),
        ("row 750 snapshots", row("the same, its snapshots of steps 400-750 averaged", el["snap"])),
        ("750 best steps", "steps " + " / ".join(str(s) for s in best) + f") score {el['single']['test_mean']:.3f} on test"),
        ("750 budget", f"one fit of {long['steps']} steps" if long["steps"] == 5 * ens["steps"] else "budget differs"),
        ("750 load", f"load {min(loads):.1f}-{max(loads):.1f}"),
        ("750 last below constant", "the last state is below the constant"
         if el["single-last"]["test_mean"] < el["constant"]["test_mean"] else "last state above the constant"),
    ]
    return out


@pytest.mark.parametrize(("what", "text"), _averaging_figures())
def test_readme_averaging_figure_matches_its_result_file(what: str, text: str) -> None:
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert text in readme, f"{what}: the README should say {text!r} (from benchmarks/results)"


SELECT_ROWS = [(loss, est) for loss in ("mse", "huber:1", "huber:2")
               for est in ("single", "single+recal", "snap+stretch", "snap+recal")]


def _select_figures() -> list[tuple[str, str]]:
    """The robust-loss and selection-set rows (``ramba_tasks_regression_select.py``) on the
    small-budget draws of ``nyc-arr-delay``: each estimator chosen on the val draw and on the
    train-period hold-out, and the flat LightGBM peers early-stopped on each."""
    d = json.loads((RESULTS / "ramba-tasks-regression-select-2026-11-29.json").read_text())
    sv, sh = d["selectors"]["val"]["estimators"], d["selectors"]["hold"]["estimators"]

    def pm(e: dict) -> str:
        return f"{e['test_mean']:.3f} +- {e['test_std']:.3f}"

    out = [(f"select row {loss}/{est}", f"| {loss} | {est} | {sv[f'{loss}/{est}']['sel_mean']:.3f} | "
            f"{pm(sv[f'{loss}/{est}'])} | {sh[f'{loss}/{est}']['sel_mean']:.3f} | {pm(sh[f'{loss}/{est}'])} |")
           for loss, est in SELECT_ROWS]
    h05 = d["selectors"]["val"]["estimators"]["huber:0.5/single"]["runs"][0]
    out.append(("huber 0.5 seed 0", f"d = 0.5 on seed 0 only: val {h05['val']:.3f}, test {h05['test']:.3f}"))
    out.append(("means", f"mean delay {d['means']['hold']:.1f} minutes, against {d['means']['val']:.1f} in the val "
                         f"draw, {d['means']['train']:.1f} in train and {d['means']['test']:.1f} in test"))
    for s in ("val", "hold", "pool"):
        c = d["selectors"][s]
        out.append((f"chosen on {s}", f"on {s}: `{c['chosen']}`, test {c['chosen_test'][0]:.3f} +- "
                                      f"{c['chosen_test'][1]:.3f}"))
    p = d["peers"]
    out.append(("lightgbm peers", "LightGBM on the flattened rows early-stopped on val / hold / both: "
                + " / ".join(f"{p[f'lightgbm-flat-es-{s}']['test_mean']:.3f}" for s in ("val", "hold", "pool"))
                + ", mapped by the line fitted on the same rows "
                + " / ".join(f"{p[f'lightgbm-flat-es-{s}']['test_recal_mean']:.3f}" for s in ("val", "hold", "pool"))))
    loads = [x for r in d["training_runs"] for x in (r["load_average_at_start"][0], r["load_average_at_end"][0])]
    out.append(("load", f"load {min(loads):.1f}-{max(loads):.1f}"))
    return out


@pytest.mark.parametrize(("what", "text"), _select_figures())
def test_readme_select_figure_matches_its_result_file(what: str, text: str) -> None:
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert text in readme, f"{what}: the README should say {text!r} (from benchmarks/results)"


def _select_ens_figures() -> list[tuple[str, str]]:
    """The ensemble rows of the selection study (``ramba-tasks-regression-select-ens-2026-11-29.json``):
    squared error, K members per seed, chosen on the val draw or the train-period hold-out."""
    d = json.loads((RESULTS / "ramba-tasks-regression-select-ens-2026-11-29.json").read_text())
    k = d["members"]
    sv, sh = d["selectors"]["val"]["estimators"], d["selectors"]["hold"]["estimators"]

    def pm(e: dict) -> str:
        return f"{e['test_mean']:.3f} +- {e['test_std']:.3f}"

    out = [(f"ens row {est}", f"| {est} | {sv[f'mse/{est}']['sel_mean']:.3f} | {pm(sv[f'mse/{est}'])} | "
            f"{sh[f'mse/{est}']['sel_mean']:.3f} | {pm(sh[f'mse/{est}'])} |") for est in _ens_rows(k)]
    for s in ("val", "hold", "pool"):
        c = d["selectors"][s]
        out.append((f"ens chosen on {s}", f"on {s}: `{c['chosen']}`, test {c['chosen_test'][0]:.3f} +- "
                                          f"{c['chosen_test'][1]:.3f}"))
    hold = d["selectors"]["hold"]
    runs = hold["estimators"][hold["chosen"]]["runs"]
    out.append(("ens chosen on hold per seed", "per seed " + " / ".join(f"{r['test']:.3f}" for r in runs)))
    loads = [x for r in d["training_runs"] for x in (r["load_average_at_start"][0], r["load_average_at_end"][0])]
    out.append(("ens load", f"load {min(loads):.1f}-{max(loads):.1f}"))
    return out


def _ens_rows(k: int) -> list[str]:
    return ["single+recal", f"ens-{k}", f"ens-{k}+stretch", f"ens-{k}+recal", f"ens-{k}-snap",
            f"ens-{k}-snap+stretch", f"ens-{k}-snap+recal"]


@pytest.mark.parametrize(("what", "text"), _select_ens_figures())
def test_readme_select_ensemble_figure_matches_its_result_file(what: str, text: str) -> None:
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert text in readme, f"{what}: the README should say {text!r} (from benchmarks/results)"


def _fit_option_figures() -> list[tuple[str, str]]:
    """``Ramba.fit(ensemble=5, snapshot_every=25, hold=1000, recalibrate=True)`` on the select
    study's rows (``ramba_tasks_regression_fit.py``, merged runs), and flat LightGBM on the same rows."""
    d = json.loads((RESULTS / "ramba-tasks-regression-fit-2026-11-29.json").read_text())
    e, p = d["estimators"], d["peers"]

    def pm(v: list[float]) -> str:
        return f"{v[0]:.3f} +- {v[1]:.3f}"

    runs = [d["fit_runs"][str(s)] for s in d["seeds"]]
    out = [("fit option test", f"test R^2 {pm(d['fit_test'])} (" + " / ".join(f"{r['test']:.3f}" for r in runs)
            + " at seeds 0 / 1 / 2)")]
    out += [(f"fit row ens-{k}", f"| {k} | {pm([e[f'ens-{k}']['test_mean'], e[f'ens-{k}']['test_std']])} | "
             f"{pm([e[f'ens-{k}+recal']['test_mean'], e[f'ens-{k}+recal']['test_std']])} |") for k in range(1, 6)]
    out.append(("fit peers", f"LightGBM trained on the same 1,000 rows and early-stopped on the same hold-out: "
                f"{pm(p['lightgbm-flat-fit-rows-es-hold']['test'])}, with the hold-out's line "
                f"{pm(p['lightgbm-flat-fit-rows-es-hold']['test_recal'])}; on all 2,000 rows early-stopped on "
                f"val: {pm(p['lightgbm-flat-all-rows-es-val']['test'])}"))
    for name, lead in (("lightgbm-flat-all-rows-es-val", f"{pm(p['lightgbm-flat-all-rows-es-val']['test'])} (per seed "),
                       ("lightgbm-flat-fit-rows-es-hold", "on the same rows (per seed ")):
        out.append((f"{name} per seed", lead + " / ".join(f"{r['test']:.3f}" for r in p[name]["runs"])))
    out.append(("fit cost", "training " + " / ".join(f"{r['fit_cpu_s']:.0f}" for r in runs) + " CPU s"))
    loads = [x for r in d["training_runs"] for x in (r["load_average_at_start"][0], r["load_average_at_end"][0])]
    out.append(("fit load", f"load {min(loads):.1f}-{max(loads):.1f}"))
    return out


@pytest.mark.parametrize(("what", "text"), _fit_option_figures())
def test_readme_fit_option_figure_matches_its_result_file(what: str, text: str) -> None:
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert text in readme, f"{what}: the README should say {text!r} (from benchmarks/results)"


def _delay_fit_figures() -> list[tuple[str, str]]:
    """The same fit options on ``nyc-dep-delayed`` (``ramba-tasks-delay-fit-2026-11-29.json``), against
    the committed small-budget default and flat LightGBM on those draws."""
    d = json.loads((RESULTS / "ramba-tasks-delay-fit-2026-11-29.json").read_text())
    e, committed, rerun = d["estimators"], _models("2026-11-27"), _models("delay-default-2026-11-29")["ramba"]
    runs = [d["fit_runs"][str(s)] for s in d["seeds_done"]]

    def pm(m: float, s: float) -> str:
        return f"{m:.3f} +- {s:.3f}"

    return [("delay fit", f"ROC-AUC {pm(*d['fit_test'])} (" + " / ".join(f"{r['test']:.3f}" for r in runs) + ")"),
            ("delay one member", f"one member's snapshot average {pm(e['ens-1']['test_mean'], e['ens-1']['test_std'])}"),
            ("delay committed", f"the committed default fit {pm(committed['ramba']['test_mean'], committed['ramba']['test_std'])}"
             f" and flat LightGBM on the 1,000-row train draw {pm(committed['lightgbm-flat-train-draw']['test_mean'], committed['lightgbm-flat-train-draw']['test_std'])}"),
            ("delay cost", "training " + " / ".join(f"{r['fit_cpu_s']:.0f}" for r in runs) + " CPU s"),
            ("delay default rerun", "gives the same " + " / ".join(f"{r['test']:.3f}" for r in rerun["runs"]) + " in "
             + " / ".join(f"{r['cpu_s']:.0f}" for r in rerun["runs"]) + " CPU s")]


@pytest.mark.parametrize(("what", "text"), _delay_fit_figures())
def test_readme_delay_fit_option_figure_matches_its_result_file(what: str, text: str) -> None:
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert text in readme, f"{what}: the README should say {text!r} (from benchmarks/results)"


def _large_fit_figures() -> list[tuple[str, str]]:
    """``Ramba.fit(ensemble=5, snapshot_every=50, hold=1000, recalibrate=True)`` at the 5,000-seed
    budget (``ramba_tasks_regression_fit.py --budget large``; three runs, one per seed, summarised
    with the flat and aggregate LightGBM peers on the same rows), and its members' weight averages."""
    d = json.loads((RESULTS / "ramba-tasks-regression-fit-large-3seeds-summary-2026-11-29.json").read_text())
    e, p, done = d["estimators"], d["peers"], d["seeds_done"]
    runs = [d["fit_runs"][str(s)] for s in done]

    def per_seed(name: str) -> str:
        return " / ".join(f"{r['test']:.3f}" for r in p[name]["runs"])

    def row(k: int) -> str:
        return "| " + " | ".join([str(k)] + [f"{e[f'ens-{k}{t}']['test_mean']:.3f}"
                                               for t in ("", "+recal", "-wavg", "-wavg+recal")]) + " |"

    def joined(values: list[float], fmt: str = ".3f") -> str:
        return " / ".join(f"{v:{fmt}}" for v in values)

    def times(seed: int, key: str) -> str:
        return joined([t[key] for t in d["member_times"][str(seed)]], ".0f")

    fit = d["fit_test"]
    out = [("large fit test", f"test R^2 {joined([r['test'] for r in runs])} at seeds "
            + " / ".join(str(s) for s in done) + f" ({fit[0]:.3f} +- {fit[1]:.3f})"),
           ("large seeds", f"Seeds done: {len(done)} of 3"),
           ("large no line", f"scores {joined(e['ens-5']['test'])} ({e['ens-5']['test_mean']:.3f} +- "
            f"{e['ens-5']['test_std']:.3f}; weight average {e['ens-5-wavg']['test_mean']:.3f} +- "
            f"{e['ens-5-wavg']['test_std']:.3f})"),
           ("large hold choice", f"its own R^2 {joined(e['ens-5']['hold'])} raw against "
            f"{joined(e['ens-5+recal']['hold'])} with the line")]
    out += [(f"large row ens-{k}", row(k)) for k in range(1, 6)]
    for name, what in (("lightgbm-flat-fit-rows-es-hold", "flat, 5,000 rows, early-stopped on the hold-out"),
                       ("lightgbm-flat-all-rows-es-val", "flat, all 6,000 rows, early-stopped on val"),
                       ("lightgbm-relational-fit-rows-es-hold", "aggregates, 5,000 rows, early-stopped on the hold-out"),
                       ("lightgbm-relational-all-rows-es-val", "aggregates, all 6,000 rows, early-stopped on val")):
        out.append((name, f"| {what} | {per_seed(name)} | {p[name]['test'][0]:.3f} +- {p[name]['test'][1]:.3f} |"))
    out.append(("large training cost", f"training {times(0, 'train_cpu_s')} CPU s per member at seed 0"))
    out.append(("large training cost 1-2", f"{times(1, 'train_cpu_s')} and {times(2, 'train_cpu_s')} at seeds 1 / 2"))
    out.append(("large fit cost", f"`Ramba.fit` {joined([r['fit_cpu_s'] for r in runs], ',.0f')} CPU s"))
    out.append(("large predict cost", f"its 7 states predict 2,000 rows in {times(1, 'predict_cpu_s')} CPU s, "
                f"the weight average in {times(1, 'predict_wavg_cpu_s')} CPU s"))
    loads = [x for r in d["training_runs"] for x in (r["load_average_at_start"][0], r["load_average_at_end"][0])]
    out.append(("large load", f"load {min(loads):.1f}-{max(loads):.1f} over the three runs"))
    return out


@pytest.mark.parametrize(("what", "text"), _large_fit_figures())
def test_readme_large_fit_option_figure_matches_its_result_file(what: str, text: str) -> None:
    readme = " ".join(README.read_text(encoding="utf-8").split())
    assert text in readme, f"{what}: the README should say {text!r} (from benchmarks/results)"
