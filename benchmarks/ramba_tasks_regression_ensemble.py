"""Averaging Ramba on nyc-arr-delay: seed ensembles, snapshot averages and shrinkage, chosen on val.

    OMP_NUM_THREADS=1 nice -n 10 uv run --group bench python benchmarks/ramba_tasks_regression_ensemble.py \
        [--members 5] [--seeds 0,1,2] [--train 1000 --val 300 --test 1000 --steps 150] \
        [--preds /tmp/preds.npz] [--out results/ramba-tasks-regression-ensemble-<date>.json]

The draws, budget and settings of ``ramba_tasks_model.py`` (draw seed 12345; tiny preset, hashing
encoder, sampler ``--n-child`` / ``--max-rows`` ``"recent"``, statistics at the task's val start,
AdamW ``--lr`` constant, batch ``--batch-size``, squared error on the z-scored target; any
``--fit`` keywords of :func:`tabzoo_ramba.train.finetune` on top). For each seed ``s`` it trains
``--members`` Ramba models, member ``k`` with init and batch seed ``s + 1000 k`` (member 0 is
exactly the run ``ramba_tasks_model.py`` makes for seed ``s``), and records each member's val and
test predictions at every ``--snap-every`` steps and at the last step (validating more often does
not move training: validation runs in eval mode and draws no random numbers).

Then, from these predictions only (every choice on the val draw; test is only scored):

* ``single``: member 0 at its best val R^2 among steps ``eval_every, 2 eval_every, ...`` (the
  default fit, reproduced: its test R^2 equals the committed ``ramba-mse-8x48`` runs);
* ``ens-K``: the mean of the first K members' predictions, each member at its own best val step;
* ``ens-K-last``: the same at the last step (no selection);
* ``snap``: member 0's predictions averaged over the snapshots of the last half of training;
  ``ens-K-snap``: that, averaged over K members;
* ``+shrink``: any of the above shrunk toward the training draw's mean, ``m + c (p - m)``, with
  ``c`` in ``SHRINK_GRID`` chosen on val; its ``val`` is the 5-fold cross-validated R^2 on the val
  draw (``c`` chosen on the other folds), ``val_in_sample`` the R^2 with ``c`` chosen on all of it.

``member-average``: not an estimator but the R^2 of one fit averaged over the members (each at its
best val step): what a single fit scores in expectation over its seed, where ``single`` is the
one fit of seed ``s``. ``chosen``: the estimator with the best mean val R^2 over the seeds.

Every estimator is reported per seed (val and test R^2) with mean +- std over seeds; beside them
the constant (the training draw's mean). ``--preds`` keeps the raw predictions (npz) so that the
summary can be recomputed (``--summarise-only``) without training.
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
from ramba_tasks_model import _draws  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SHRINK_GRID = tuple(np.round(np.arange(0.0, 2.01, 0.1), 2))
MEMBER_STRIDE = 1000
torch.set_num_threads(1)


def r2(y: np.ndarray, p: np.ndarray) -> float:
    from tabzoo.metrics import r2_score

    return float(r2_score(y, p))


def train_member(r: Any, seqs: dict[str, list[Any]], draw: dict[str, Any], mu: float, sd: float, seed: int,
                 args: argparse.Namespace, fit_kw: dict[str, Any]) -> dict[str, Any]:
    """Fine-tune ``r.model`` (init already seeded) with batch seed ``seed``; val and test predictions
    ``[n_snaps, n]`` at every ``args.snap_every`` steps and the last (the steps in ``steps``)."""
    from tabzoo_ramba.train import finetune

    snaps: dict[str, list[np.ndarray]] = {"val": [], "test": []}

    def predict(held_out: Any) -> np.ndarray:
        p_val = r._predict_seqs(held_out)
        snaps["val"].append(p_val)
        snaps["test"].append(r._predict_seqs(seqs["test"]))
        return p_val

    c0 = time.process_time()
    res = finetune(r.model, seqs["train"], draw["train"].y, kind="regression", mu=mu, sd=sd, val=seqs["val"],
                   y_val=draw["val"].y, steps=args.steps, batch_size=args.batch_size, lr=args.lr,
                   eval_every=args.snap_every, seed=seed, progress=False, encoder=r.encoder, predict=predict,
                   **fit_kw)
    steps = [ev.step for ev in res.evaluations]
    if len(steps) != len(snaps["val"]):
        raise RuntimeError(f"{len(steps)} evaluations but {len(snaps['val'])} snapshots")
    return {"steps": np.array(steps), "val": np.stack(snaps["val"]), "test": np.stack(snaps["test"]),
            "losses": np.array(res.losses, dtype=np.float64), "cpu_s": time.process_time() - c0}


def _best(y_val: np.ndarray, val: np.ndarray, steps: np.ndarray, every: int) -> int:
    """Index of the snapshot with the best val R^2 among the steps the default fit validates at
    (multiples of ``every`` and the last); the first such on ties, as the core loop keeps it."""
    last = int(steps.max())
    ok = [i for i, s in enumerate(steps) if s % every == 0 or s == last]
    scores = [r2(y_val, val[i]) for i in ok]
    return ok[int(np.argmax(scores))]


def _shrink(y: np.ndarray, p: np.ndarray, m: float) -> float:
    """The factor ``c`` in ``SHRINK_GRID`` whose ``m + c (p - m)`` has the best R^2 on ``y`` (the first on ties)."""
    return float(SHRINK_GRID[int(np.argmax([r2(y, m + c * (p - m)) for c in SHRINK_GRID]))])


def _cv_shrunk_r2(y: np.ndarray, p: np.ndarray, m: float, folds: int = 5, seed: int = 0) -> float:
    """R^2 on the val draw of the shrunk predictions with ``c`` chosen on the other folds
    (``folds``-fold): the val figure of a ``+shrink`` estimator that does not score ``c`` on the
    rows it was chosen on."""
    fold = np.random.default_rng(seed).permutation(len(y)) % folds
    out = np.empty_like(p)
    for k in range(folds):
        c = _shrink(y[fold != k], p[fold != k], m)
        out[fold == k] = m + c * (p[fold == k] - m)
    return r2(y, out)


def estimators(y: dict[str, np.ndarray], m: float, members: list[dict[str, Any]], every: int,
               ks: list[int]) -> dict[str, dict[str, np.ndarray]]:
    """Every estimator's val and test predictions for one seed (``members`` of that seed, in order)."""
    out: dict[str, dict[str, np.ndarray]] = {}
    best = [_best(y["val"], mb["val"], mb["steps"], every) for mb in members]
    last = [len(mb["steps"]) - 1 for mb in members]
    half = [np.flatnonzero(mb["steps"] >= mb["steps"].max() / 2) for mb in members]

    def avg(idx: list[Any], k: int) -> dict[str, np.ndarray]:
        return {part: np.mean([members[j][part][idx[j]].reshape(-1, len(y[part])).mean(0) for j in range(k)], 0)
                for part in ("val", "test")}

    out["single"] = avg(best, 1)
    out["single-last"] = avg(last, 1)
    out["snap"] = avg(half, 1)
    for k in ks:
        if k <= len(members) and k > 1:
            out[f"ens-{k}"] = avg(best, k)
            out[f"ens-{k}-last"] = avg(last, k)
            out[f"ens-{k}-snap"] = avg(half, k)
    for name in list(out):
        pv, pt = out[name]["val"], out[name]["test"]
        c = _shrink(y["val"], pv, m)
        out[f"{name}+shrink"] = {"val": m + c * (pv - m), "test": m + c * (pt - m), "c": np.array(c),
                                 "val_cv": np.array(_cv_shrunk_r2(y["val"], pv, m))}
    out["constant"] = {"val": np.full(len(y["val"]), m), "test": np.full(len(y["test"]), m)}
    return out


def summarise(y: dict[str, np.ndarray], m: float, by_seed: dict[int, list[dict[str, Any]]], every: int,
              ks: list[int]) -> dict[str, Any]:
    rows: dict[str, list[dict[str, Any]]] = {}
    for s, members in sorted(by_seed.items()):
        for name, pred in estimators(y, m, members, every, ks).items():
            run = {"seed": s, "val": r2(y["val"], pred["val"]), "test": r2(y["test"], pred["test"]),
                   "test_pred_std": float(np.std(pred["test"])), "test_pred_mean": float(np.mean(pred["test"]))}
            if "c" in pred:
                run |= {"shrink": float(pred["c"]), "val_in_sample": run["val"], "val": float(pred["val_cv"])}
            rows.setdefault(name, []).append(run)
        each = [_best(y["val"], mb["val"], mb["steps"], every) for mb in members]
        vals = [r2(y["val"], mb["val"][i]) for mb, i in zip(members, each, strict=True)]
        tests = [r2(y["test"], mb["test"][i]) for mb, i in zip(members, each, strict=True)]
        rows.setdefault("member-average", []).append({"seed": s, "val": float(np.mean(vals)),
                                                      "test": float(np.mean(tests)), "member_val": vals,
                                                      "member_test": tests})
    out: dict[str, Any] = {}
    for name, runs in rows.items():
        v, t = np.array([r["val"] for r in runs]), np.array([r["test"] for r in runs])
        out[name] = {"val_mean": float(v.mean()), "test_mean": float(t.mean()),
                     "test_std": float(t.std(ddof=1)) if len(t) > 1 else 0.0, "runs": runs}
    return out


def _save_preds(path: Path, by_seed: dict[int, list[dict[str, Any]]]) -> None:
    arrays = {f"s{s}_m{k}_{key}": mb[key] for s, members in by_seed.items() for k, mb in enumerate(members)
              for key in ("steps", "val", "test", "losses")}
    np.savez_compressed(path, **arrays)


def _load_preds(path: Path) -> dict[int, list[dict[str, Any]]]:
    z = np.load(path)
    by_seed: dict[int, dict[int, dict[str, Any]]] = {}
    for name in z.files:
        s, k, key = name.split("_", 2)
        by_seed.setdefault(int(s[1:]), {}).setdefault(int(k[1:]), {})[key] = z[name]
    return {s: [ms[k] for k in sorted(ms)] for s, ms in by_seed.items()}


def study_args(p: argparse.ArgumentParser, *, members: int) -> None:
    """The draw and training flags every nyc-arr-delay study script shares (the committed peers'
    draws and budget): task, seeds, members, train / val / test rows, steps, batch size, lr and the
    sampler's n-child / max-rows."""
    p.add_argument("--task", default="nyc-arr-delay")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--members", type=int, default=members)
    p.add_argument("--train", type=int, default=1000)
    p.add_argument("--val", type=int, default=300)
    p.add_argument("--test", type=int, default=1000)
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--n-child", type=int, default=8)
    p.add_argument("--max-rows", type=int, default=48)


def main() -> None:
    from tabzoo_ramba import Ramba, SamplerConfig
    from tabzoo_ramba.tasks import get_task

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    study_args(p, members=5)
    p.add_argument("--eval-every", type=int, default=50, help="the default fit's validation period (for 'single')")
    p.add_argument("--snap-every", type=int, default=25, help="snapshot period (divides --eval-every)")
    p.add_argument("--fit", default="{}", help="JSON of extra finetune keywords (e.g. weight_decay, schedule)")
    p.add_argument("--preds", default=None, help="npz to keep (or, with --summarise-only, read) the predictions")
    p.add_argument("--summarise-only", action="store_true")
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if args.eval_every % args.snap_every:
        raise SystemExit("--snap-every must divide --eval-every")
    seeds = [int(s) for s in args.seeds.split(",")]
    fit_kw = json.loads(args.fit)
    bt = get_task(args.task)
    t0 = time.time()
    load0 = list(os.getloadavg())
    db = bt.load()
    draw = _draws(bt.split(db), args.train, args.val, args.test)
    y = {k: np.asarray(draw[k].y, dtype=np.float64) for k in ("val", "test")}
    m = float(np.mean(draw["train"].y))
    ks = sorted({k for k in (2, 3, 5, 8, 10, args.members) if k <= args.members})
    path = Path(args.out) if args.out else RESULTS / f"ramba-tasks-regression-ensemble-{dt.date.today()}.json"
    preds_path = Path(args.preds) if args.preds else None
    meta: dict[str, Any] = {
        "task": args.task, "n": {k: len(v) for k, v in draw.items()}, "draw_seed": 12345, "seeds": seeds,
        "members": args.members, "member_seed": f"seed + {MEMBER_STRIDE} * k", "steps": args.steps,
        "batch_size": args.batch_size, "lr": args.lr, "eval_every": args.eval_every,
        "snap_every": args.snap_every, "sampler": {"n_child": args.n_child, "max_rows": args.max_rows,
                                                   "policy": "recent"},
        "config": {"preset": "tiny", "text_encoder": "hashing"}, "fit": fit_kw, "loss": "mse",
        "shrink_grid": [float(c) for c in SHRINK_GRID], "train_mean": m,
        "means": {k: float(np.mean(draw[k].y)) for k in draw}, "load_average_at_start": load0}

    def save(by_seed: dict[int, list[dict[str, Any]]]) -> dict[str, Any]:
        est = summarise(y, m, by_seed, args.eval_every, ks)
        out = meta | {"estimators": est, "chosen": max((k for k in est if k not in ("constant", "member-average")),
                                                       key=lambda k: est[k]["val_mean"]),
                      "member_snapshots": {str(s): [{"steps": [int(t) for t in mb["steps"]],
                                                     "val": [r2(y["val"], q) for q in mb["val"]],
                                                     "test": [r2(y["test"], q) for q in mb["test"]]} for mb in ms]
                                           for s, ms in by_seed.items()},
                      **({} if args.summarise_only else {
                          "member_cpu_s": {str(s): [round(float(mb["cpu_s"]), 1) for mb in ms]
                                           for s, ms in by_seed.items()}}),
                      "seeds_done": sorted(by_seed), "load_average_at_end": list(os.getloadavg()),
                      "total_s": round(time.time() - t0, 1), "machine": machine_info()}
        path.write_text(json.dumps(out, indent=1, default=float) + "\n")
        return out

    if args.summarise_only:
        if preds_path is None:
            raise SystemExit("--summarise-only needs --preds")
        meta["summarised_from"] = str(preds_path.name)
        if path.exists():  # the training run's own record (load, time, cost) is kept
            old = json.loads(path.read_text())
            meta["training_run"] = old.get("training_run") or {
                k: old[k] for k in ("load_average_at_start", "load_average_at_end", "total_s", "member_cpu_s",
                                    "serialize_s") if k in old}
        out = save(_load_preds(preds_path))
        print(json.dumps({k: (v["val_mean"], v["test_mean"], v["test_std"]) for k, v in out["estimators"].items()},
                         indent=1))
        return

    sampler = SamplerConfig(n_child=args.n_child, max_expansions=8, max_rows=args.max_rows, policy="recent")
    ts = time.time()
    base = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=sampler,
                 progress=False).bind(db, bt.task, bt.val_start)
    seqs = {k: base._seqs(db, sp.seeds) for k, sp in draw.items()}
    meta["serialize_s"] = round(time.time() - ts, 1)
    mu, sd = base.stats.get(bt.task.entity_table, bt.task.target) if base.stats else (0.0, 1.0)
    by_seed: dict[int, list[dict[str, Any]]] = {}
    for s in seeds:
        for k in range(args.members):
            ms = s + MEMBER_STRIDE * k
            r = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=sampler, seed=ms, progress=False)
            r.task, r.stats = base.task, base.stats
            mb = train_member(r, seqs, draw, mu, sd, ms, args, fit_kw)
            by_seed.setdefault(s, []).append(mb)
            i = _best(y["val"], mb["val"], mb["steps"], args.eval_every)
            print(f"seed {s} member {k}: best step {mb['steps'][i]} val {r2(y['val'], mb['val'][i]):.4f} "
                  f"test {r2(y['test'], mb['test'][i]):.4f} ({mb['cpu_s']:.0f} cpu s)", file=sys.stderr)
            if preds_path is not None:
                _save_preds(preds_path, by_seed)
            out = save(by_seed)
        for name, e in out["estimators"].items():
            print(f"  {name}: val {e['val_mean']:.4f} test {e['test_mean']:.4f} +- {e['test_std']:.4f}",
                  file=sys.stderr)
    print(json.dumps({k: (v["val_mean"], v["test_mean"], v["test_std"]) for k, v in out["estimators"].items()},
                     indent=1))


if __name__ == "__main__":
    main()
