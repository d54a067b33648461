"""Ramba on nyc-arr-delay: a robust (Huber) loss, and a larger selection set than the 300-row val draw.

    OMP_NUM_THREADS=1 nice -n 10 uv run --group bench python benchmarks/ramba_tasks_regression_select.py \
        [--losses mse,huber:0.5,huber:1,huber:2] [--members 1] [--seeds 0,1,2] [--hold 1000] \
        [--preds /tmp/sel.npz] [--out results/ramba-tasks-regression-select-<date>.json]

The draws, budget and settings of ``ramba_tasks_regression_ensemble.py`` (draw seed 12345: 1,000
train / 300 val / 1,000 test seeds; tiny preset, hashing encoder, sampler 8 / 48 ``"recent"``,
statistics at the task's val start, AdamW lr 2e-3 constant, batch 16, 150 steps; member ``k`` of
seed ``s`` with init and batch seed ``s + 1000 k``), for each loss of ``--losses`` (``mse``, or
``huber:DELTA``: :func:`tabzoo_ramba.train.finetune`'s Huber loss on the z-scored target with
``huber_delta`` DELTA z-units). Each member's predictions are recorded every ``--snap-every``
steps on three sets:

* ``val``: the committed 300-row val draw (2013-02-01..15);
* ``hold``: ``--hold`` rows of the *train* split (before 2013-02-01) that are not in the train
  draw (drawn with seed 54321 from the rest of the train split): held out from training, inside
  the training period; their labels are known before the val start, as the statistics' are;
* ``test``: the committed 1,000-row test draw (2013-02-15..03-01), only scored.

Selectors (every choice below is made on one of them, never on test): ``val`` (the committed
protocol), ``hold``, and ``pool`` (val and hold together, 1,300 rows). For each loss and selector:
``single`` (member 0 at its best selector R^2 among steps 50, 100, 150), ``ens-K`` (the first K
members, each at its best step), ``snap`` / ``ens-K-snap`` (snapshots of the last half averaged),
each ``+stretch`` (``m + c (p - m)``, ``m`` the train draw's mean, ``c`` in 0, 0.1, ..., 2 picked
on the selector; its selector figure 5-fold cross-validated) and ``+recal`` (the least-squares line
of :func:`tabzoo_ramba.train.linear_recalibration` fitted on the selector; 5-fold cross-validated
selector figure). The loss is then chosen per selector on the mean selector R^2 over seeds.

Beside them, on the same draws: LightGBM on the flattened rows (the committed tuned configuration)
trained on the train draw, early stopped on each selector set (the committed peers early-stop on
the val draw), 3 seeds, raw and mapped by the line fitted on the selector (``test_recal``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402
from ramba_tasks_model import _draws, _tuned_params  # noqa: E402
from ramba_tasks_regression_ensemble import _shrink, r2, study_args  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
MEMBER_STRIDE = 1000
PARTS = ("val", "hold", "test")
SELECTORS = {"val": ("val",), "hold": ("hold",), "pool": ("val", "hold")}
torch.set_num_threads(1)


def parse_loss(spec: str) -> dict[str, Any]:
    """``mse`` or ``huber:DELTA`` -> finetune keywords."""
    if spec == "mse":
        return {"loss": "mse"}
    name, _, delta = spec.partition(":")
    if name != "huber" or not delta:
        raise SystemExit(f"loss {spec!r}: use mse or huber:DELTA")
    return {"loss": "huber", "huber_delta": float(delta)}


def hold_draw(full_train: Any, draw_train: Any, n: int, seed: int = 54321) -> Any:
    """``n`` rows of the train split that are not in the train draw (sorted by time)."""
    from tabzoo_ramba.data import Split

    used = {(s[0], s[1], str(s[2])) for s in draw_train.seeds}
    rest = [i for i, s in enumerate(full_train.seeds) if (s[0], s[1], str(s[2])) not in used]
    idx = np.sort(np.random.default_rng(seed).choice(rest, min(n, len(rest)), replace=False))
    return Split([full_train.seeds[i] for i in idx], full_train.y[idx])


def train_member(r: Any, seqs: dict[str, list[Any]], y_train: np.ndarray, y_val: np.ndarray, mu: float, sd: float,
                 seed: int, args: argparse.Namespace, fit_kw: dict[str, Any]) -> dict[str, Any]:
    """Fine-tune ``r.model`` with batch seed ``seed``; predictions ``[n_snaps, n]`` per part at every
    ``args.snap_every`` steps and the last (the core loop keeps the best state on the val draw, as
    the default fit does; snapshots are read before that, so they are the states at each step)."""
    from tabzoo_ramba.train import finetune

    snaps: dict[str, list[np.ndarray]] = {p: [] for p in PARTS}

    def predict(held_out: Any) -> np.ndarray:
        for part in PARTS:
            snaps[part].append(r._predict_seqs(seqs[part]))
        return snaps["val"][-1]

    c0 = time.process_time()
    res = finetune(r.model, seqs["train"], y_train, kind="regression", mu=mu, sd=sd, val=seqs["val"], y_val=y_val,
                   steps=args.steps, batch_size=args.batch_size, lr=args.lr, eval_every=args.snap_every, seed=seed,
                   progress=False, encoder=r.encoder, predict=predict, **fit_kw)
    steps = [ev.step for ev in res.evaluations]
    if len(steps) != len(snaps["val"]):
        raise RuntimeError(f"{len(steps)} evaluations but {len(snaps['val'])} snapshots")
    return {"steps": np.array(steps)} | {p: np.stack(snaps[p]) for p in PARTS} | {
        "losses": np.array(res.losses, dtype=np.float64), "cpu_s": time.process_time() - c0}


def _sel(y: dict[str, np.ndarray], pred: dict[str, np.ndarray], sel: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    return np.concatenate([y[p] for p in sel]), np.concatenate([pred[p] for p in sel])


def _best(y: dict[str, np.ndarray], mb: dict[str, Any], sel: tuple[str, ...], every: int) -> int:
    """Index of the snapshot with the best selector R^2 among steps ``every, 2 every, ...`` and the last."""
    last = int(mb["steps"].max())
    ok = [i for i, s in enumerate(mb["steps"]) if s % every == 0 or s == last]
    ys = np.concatenate([y[p] for p in sel])
    return ok[int(np.argmax([r2(ys, np.concatenate([mb[p][i] for p in sel])) for i in ok]))]


def _cv(y: np.ndarray, p: np.ndarray, fit_map: Any, folds: int = 5, seed: int = 0) -> float:
    """5-fold R^2 of a map fitted on the other folds (``fit_map(y, p) -> callable``)."""
    fold = np.random.default_rng(seed).permutation(len(y)) % folds
    out = np.empty_like(p)
    for k in range(folds):
        out[fold == k] = fit_map(y[fold != k], p[fold != k])(p[fold == k])
    return r2(y, out)


def estimators(y: dict[str, np.ndarray], m: float, members: list[dict[str, Any]], sel: tuple[str, ...],
               every: int, ks: list[int]) -> dict[str, dict[str, Any]]:
    """Each estimator's predictions per part for one seed, every choice on the selector ``sel``."""
    from tabzoo_ramba.train import linear_recalibration

    best = [_best(y, mb, sel, every) for mb in members]
    half = [np.flatnonzero(mb["steps"] >= mb["steps"].max() / 2) for mb in members]

    def avg(idx: list[Any], k: int) -> dict[str, Any]:
        return {p: np.mean([members[j][p][idx[j]].reshape(-1, len(y[p])).mean(0) for j in range(k)], 0)
                for p in PARTS}

    out: dict[str, dict[str, Any]] = {"single": avg(best, 1) | {"step": int(members[0]["steps"][best[0]])},
                                      "snap": avg(half, 1)}
    for k in ks:
        if 1 < k <= len(members):
            out[f"ens-{k}"], out[f"ens-{k}-snap"] = avg(best, k), avg(half, k)

    def stretch_map(ys: np.ndarray, ps: np.ndarray) -> Any:
        c = _shrink(ys, ps, m)  # the stretch factor about the training mean
        return lambda q: m + c * (q - m)

    def recal_map(ys: np.ndarray, ps: np.ndarray) -> Any:
        a, b = linear_recalibration(ps, ys)
        return lambda q: a * q + b

    for name in list(out):
        ys, ps = _sel(y, out[name], sel)
        for tag, fit_map in (("stretch", stretch_map), ("recal", recal_map)):
            f = fit_map(ys, ps)
            out[f"{name}+{tag}"] = {p: f(out[name][p]) for p in PARTS} | {"sel_cv": _cv(ys, ps, fit_map)}
    return out


def summarise(y: dict[str, np.ndarray], m: float, by_loss: dict[str, dict[int, list[dict[str, Any]]]],
              every: int, ks: list[int]) -> dict[str, Any]:
    """Per selector, loss and estimator: selector R^2 (5-fold for mapped ones), val / hold / test R^2
    per seed, means and the test std; the chosen (loss, estimator) per selector."""
    out: dict[str, Any] = {}
    for sname, sel in SELECTORS.items():
        table: dict[str, Any] = {}
        for loss, by_seed in by_loss.items():
            rows: dict[str, list[dict[str, Any]]] = {}
            for s, members in sorted(by_seed.items()):
                for name, pred in estimators(y, m, members, sel, every, ks).items():
                    ys, ps = _sel(y, pred, sel)
                    run = {"seed": s, "sel": pred.get("sel_cv", r2(ys, ps))} | {p: r2(y[p], pred[p]) for p in PARTS}
                    run |= {k: pred[k] for k in ("step",) if k in pred}
                    rows.setdefault(name, []).append(run)
            for name, runs in rows.items():
                t = np.array([r["test"] for r in runs])
                table[f"{loss}/{name}"] = {
                    "sel_mean": float(np.mean([r["sel"] for r in runs])), "test_mean": float(t.mean()),
                    "test_std": float(t.std(ddof=1)) if len(t) > 1 else 0.0, "n_seeds": len(runs),
                    **{f"{p}_mean": float(np.mean([r[p] for r in runs])) for p in ("val", "hold")}, "runs": runs}
        full = max(v["n_seeds"] for v in table.values())
        chosen = max((k for k in table if table[k]["n_seeds"] == full), key=lambda k: table[k]["sel_mean"])
        out[sname] = {"rows": sorted(sel), "estimators": table, "chosen": chosen,
                      "chosen_test": [table[chosen]["test_mean"], table[chosen]["test_std"]]}
    return out


def gbdt_flat(bt: Any, db: Any, draw: dict[str, Any], hold: Any, seeds: list[int],
              features: str = "flat") -> dict[str, Any]:
    """LightGBM on the flattened rows (the committed tuned configuration), trained on the train draw
    and early-stopped on each selector set; test R^2 per seed. ``features="relational"``: the same on
    the hand-made causal aggregates (``relational_features``, its committed tuned configuration); the
    keys stay ``lightgbm-flat-es-*``."""
    import lightgbm as lgb
    from tabzoo_ramba.task_features import flat_features, relational_features
    from tabzoo_ramba.train import linear_recalibration

    fn = {"flat": flat_features, "relational": relational_features}[features]

    def feats(seeds_: list[Any]) -> np.ndarray:
        f = fn(db, bt.task, seeds_)
        return np.column_stack([f[k] for k in sorted(f)])

    x = {"train": feats(draw["train"].seeds), "val": feats(draw["val"].seeds), "hold": feats(hold.seeds),
         "test": feats(draw["test"].seeds)}
    yy = {"train": draw["train"].y, "val": draw["val"].y, "hold": hold.y, "test": draw["test"].y}
    params = _tuned_params(bt.name, features)
    out: dict[str, Any] = {}
    for sname, sel in SELECTORS.items():
        xs, ys = np.concatenate([x[p] for p in sel]), np.concatenate([yy[p] for p in sel])
        runs = []
        for s in seeds:
            mdl = lgb.LGBMRegressor(n_estimators=1000, subsample=0.8, subsample_freq=1, colsample_bytree=0.8,
                                    random_state=s, n_jobs=1, verbose=-1, **params)
            mdl.fit(x["train"], yy["train"], eval_X=(xs,), eval_y=(ys,), callbacks=[lgb.early_stopping(50, verbose=False)])
            p_sel, p_test = np.asarray(mdl.predict(xs)), np.asarray(mdl.predict(x["test"]))
            a, b = linear_recalibration(p_sel, ys)
            runs.append({"seed": s, "test": r2(yy["test"], p_test), "test_recal": r2(yy["test"], a * p_test + b),
                         "recal": [a, b], "sel": r2(ys, p_sel), "n_trees": int(mdl.best_iteration_ or 0)})
        out[f"lightgbm-flat-es-{sname}"] = {"params": params, "runs": runs}
        for key in ("test", "test_recal"):
            t = np.array([r[key] for r in runs])
            out[f"lightgbm-flat-es-{sname}"] |= {f"{key}_mean": float(t.mean()), f"{key}_std": float(t.std(ddof=1))}
    return out


def _save_preds(path: Path, by_loss: dict[str, dict[int, list[dict[str, Any]]]]) -> None:
    np.savez_compressed(path, **{f"{loss}|s{s}|m{k}|{key}": mb[key] for loss, by_seed in by_loss.items()
                                 for s, ms in by_seed.items() for k, mb in enumerate(ms)
                                 for key in ("steps", *PARTS, "losses")})


def _load_preds(path: Path) -> dict[str, dict[int, list[dict[str, Any]]]]:
    z = np.load(path)
    acc: dict[str, dict[int, dict[int, dict[str, Any]]]] = {}
    for name in z.files:
        loss, s, k, key = name.split("|")
        acc.setdefault(loss, {}).setdefault(int(s[1:]), {}).setdefault(int(k[1:]), {})[key] = z[name]
    return {loss: {s: [ms[k] for k in sorted(ms)] for s, ms in bs.items()} for loss, bs in acc.items()}


def main() -> None:
    from tabzoo_ramba import Ramba, SamplerConfig
    from tabzoo_ramba.tasks import get_task

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    study_args(p, members=1)
    p.add_argument("--losses", default="mse,huber:0.5,huber:1,huber:2")
    p.add_argument("--member-start", type=int, default=0,
                   help="train members member-start .. members-1 only (the others from an earlier run's --preds)")
    p.add_argument("--hold", type=int, default=1000)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--snap-every", type=int, default=25)
    p.add_argument("--preds", default=None, help="npz to keep (or, with --summarise-only, read; several "
                   "comma-separated, merged per loss and seed in order) the predictions")
    p.add_argument("--summarise-only", action="store_true")
    p.add_argument("--run-records", default="", help="with --summarise-only: JSONs of further training runs whose "
                   "load, time and cost records are kept")
    p.add_argument("--out", default=None)
    p.add_argument("--note", default="", help="a remark kept in the JSON (e.g. what was stopped early)")
    args = p.parse_args()
    seeds = [int(x) for x in args.seeds.split(",")]
    losses = args.losses.split(",")
    bt = get_task(args.task)
    t0, load0 = time.time(), list(os.getloadavg())
    db = bt.load()
    full = bt.split(db)
    draw = _draws(full, args.train, args.val, args.test)
    hold = hold_draw(full["train"], draw["train"], args.hold)
    y = {"val": np.asarray(draw["val"].y, float), "hold": np.asarray(hold.y, float),
         "test": np.asarray(draw["test"].y, float)}
    m = float(np.mean(draw["train"].y))
    ks = [2, 3, 4, 5]  # ensembles of the first k members, where a seed has that many
    path = Path(args.out) if args.out else RESULTS / f"ramba-tasks-regression-select-{dt.date.today()}.json"
    preds_path = Path(args.preds) if args.preds and not args.summarise_only else None
    meta: dict[str, Any] = {
        "task": args.task, "n": {"train": len(draw["train"]), "val": len(draw["val"]), "hold": len(hold),
                                 "test": len(draw["test"])},
        "draw_seed": 12345, "hold_seed": 54321, "seeds": seeds, "members": args.members,
        "member_seed": f"seed + {MEMBER_STRIDE} * k", "losses": losses, "steps": args.steps,
        "batch_size": args.batch_size, "lr": args.lr, "eval_every": args.eval_every, "snap_every": args.snap_every,
        "sampler": {"n_child": args.n_child, "max_rows": args.max_rows, "policy": "recent"},
        "config": {"preset": "tiny", "text_encoder": "hashing"}, "train_mean": m,
        "means": {k: float(np.mean(v)) for k, v in y.items()} | {"train": m},
        "selector_rows": {"val": "the 300-row val draw (2013-02-01..15)",
                          "hold": f"{len(hold)} train-split rows (before 2013-02-01) outside the train draw",
                          "pool": "val and hold together"},
        "load_average_at_start": load0} | ({"note": args.note} if args.note else {})
    gb = gbdt_flat(bt, db, draw, hold, seeds)
    for name, v in gb.items():
        print(f"  {name}: {v['test_mean']:.4f} +- {v['test_std']:.4f} (recal {v['test_recal_mean']:.4f})", file=sys.stderr)

    def save(by_loss: dict[str, dict[int, list[dict[str, Any]]]]) -> dict[str, Any]:
        out = meta | {"selectors": summarise(y, m, by_loss, args.eval_every, ks), "peers": gb,
                      "done": {loss: sorted(bs) for loss, bs in by_loss.items()},
                      "load_average_at_end": list(os.getloadavg()), "total_s": round(time.time() - t0, 1),
                      "machine": machine_info()}
        if not args.summarise_only:
            out["member_cpu_s"] = {loss: {str(s): [round(float(mb["cpu_s"]), 1) for mb in ms] for s, ms in bs.items()}
                                   for loss, bs in by_loss.items()}
        path.write_text(json.dumps(out, indent=1, default=float) + "\n")
        return out

    if args.summarise_only:
        if not args.preds:
            raise SystemExit("--summarise-only needs --preds")
        paths = [Path(x) for x in args.preds.split(",")]
        meta["summarised_from"] = [q.name for q in paths]
        records = [path] if path.exists() else []  # the training runs' own records (load, time, cost) are kept
        records += [Path(x) for x in filter(None, args.run_records.split(","))]
        meta["training_runs"] = []
        for rec in records:
            old = json.loads(rec.read_text())
            meta["training_runs"] += old.get("training_runs") or [
                {k: old[k] for k in ("load_average_at_start", "load_average_at_end", "total_s", "member_cpu_s",
                                     "serialize_s", "losses", "members") if k in old}]
        merged: dict[str, dict[int, list[dict[str, Any]]]] = {}
        for q in paths:
            for loss, bs in _load_preds(q).items():
                if loss not in losses:  # --losses picks what is summarised
                    continue
                for s_, ms in bs.items():
                    merged.setdefault(loss, {}).setdefault(s_, []).extend(ms)
        meta["members"] = min(len(ms) for bs in merged.values() for ms in bs.values())
        out = save(merged)
        print(json.dumps({s: v["chosen"] for s, v in out["selectors"].items()}, indent=1))
        return
    sampler = SamplerConfig(n_child=args.n_child, max_expansions=8, max_rows=args.max_rows, policy="recent")
    ts = time.time()
    base = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=sampler,
                 progress=False).bind(db, bt.task, bt.val_start)
    seqs = {k: base._seqs(db, sp.seeds) for k, sp in (*draw.items(), ("hold", hold))}
    meta["serialize_s"] = round(time.time() - ts, 1)
    mu, sd = base.stats.get(bt.task.entity_table, bt.task.target) if base.stats else (0.0, 1.0)
    by_loss: dict[str, dict[int, list[dict[str, Any]]]] = {}
    for loss in losses:
        fit_kw = parse_loss(loss)
        for k in range(args.member_start, args.members):  # member-major: a run cut short has every seed's first ones
            for s in seeds:
                member_seed = s + MEMBER_STRIDE * k
                r = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=sampler, seed=member_seed,
                          progress=False)
                r.task, r.stats = base.task, base.stats
                mb = train_member(r, seqs, draw["train"].y, draw["val"].y, mu, sd, member_seed, args, fit_kw)
                by_loss.setdefault(loss, {}).setdefault(s, []).append(mb)
                i = _best(y, mb, ("val",), args.eval_every)
                print(f"{loss} seed {s} member {k}: step {mb['steps'][i]} val {r2(y['val'], mb['val'][i]):.4f} "
                      f"hold {r2(y['hold'], mb['hold'][i]):.4f} test {r2(y['test'], mb['test'][i]):.4f} "
                      f"({mb['cpu_s']:.0f} cpu s)", file=sys.stderr, flush=True)
                if preds_path is not None:
                    _save_preds(preds_path, by_loss)
                out = save(by_loss)
    for sname, v in out["selectors"].items():
        print(f"{sname}: chosen {v['chosen']} test {v['chosen_test']}", file=sys.stderr)


if __name__ == "__main__":
    main()
