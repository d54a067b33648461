"""Ramba itself on a benchmark task (tabzoo_ramba.tasks), next to GBDTs scored on the same seeds.

    OMP_NUM_THREADS=1 nice -n 10 uv run --group bench python benchmarks/ramba_tasks_model.py \
        [--task nyc-dep-delayed] [--seeds 0,1,2] [--train 1500 --val 400 --test 1500] [--steps 150]

A CPU budget, stated in the JSON: ``--train`` seeds drawn at random from the task's train split
(``--val`` / ``--test`` likewise from val / test, one fixed draw for every model), serialized
once with the statistics at ``val_start`` and the sampler ``--n-child`` / ``--max-rows``; per
seed a fresh ``--preset`` Ramba (init seeded) is fine-tuned for ``--steps`` steps of
``--batch-size`` (AdamW ``--lr``, best state on the val draw every ``--eval-every`` steps,
:func:`tabzoo_ramba.train.finetune`), and scored on the test draw. Beside it, on the same test
draw: LightGBM on the flattened row and with the causal aggregates, once trained on the same
``--train`` seeds (per seed) and once on the whole train split (the first seed only; the configuration the tuned baseline chose
in ``ramba-tasks-*.json``, else num_leaves 15; early stopping on the val draw), per seed; and
logistic / ridge regression on both feature sets (C searched on the val draw; deterministic, one run).
Writes results/ramba-tasks-model-<date>.json (merged per task; a rerun replaces its task, said
on stderr).
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
from ramba_tasks import LINEAR_GRID, _linear, _tuned  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
torch.set_num_threads(1)


def _draw(split: Any, n: int, rng: np.random.Generator) -> Any:
    from tabzoo_ramba.data import Split

    if n <= 0 or len(split) <= n:
        return split
    idx = np.sort(rng.choice(len(split), n, replace=False))
    return Split([split.seeds[i] for i in idx], split.y[idx])


def _draws(full: dict[str, Any], n_train: int, n_val: int, n_test: int, seed: int = 12345) -> dict[str, Any]:
    """The train/val/test draws of a task's time split (:func:`_draw` each, one generator in that
    order), as every Ramba task benchmark takes them."""
    rng = np.random.default_rng(seed)
    return {"train": _draw(full["train"], n_train, rng), "val": _draw(full["val"], n_val, rng),
            "test": _draw(full["test"], n_test, rng)}


def _metric(kind: str, y: np.ndarray, p: np.ndarray) -> float:
    from tabzoo.metrics import r2_score, roc_auc

    return float(roc_auc(y, p) if kind == "classification" else r2_score(y, p))


def _summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("test", "test_recal"):
        if all(key in r for r in runs):
            x = np.array([r[key] for r in runs])
            out |= {f"{key}_mean": float(x.mean()), f"{key}_std": float(x.std(ddof=1)) if len(x) > 1 else 0.0}
    return out | {"runs": runs}


def _recalibrated(y_val: np.ndarray, p_val: np.ndarray, y_test: np.ndarray, p_test: np.ndarray) -> dict[str, Any]:
    """The regression output mapped by the line fitted on the val draw
    (:func:`tabzoo_ramba.train.linear_recalibration`), scored on the test draw, with its 5-fold
    cross-validated R^2 on the val draw (the honest val figure to pick by)."""
    from tabzoo_ramba.train import cv_recalibrated_r2, linear_recalibration

    a, b = linear_recalibration(p_val, y_val)
    return {"test_recal": _metric("regression", y_test, a * p_test + b),
            "val_recal_cv": cv_recalibrated_r2(p_val, y_val), "recal": [a, b]}


def _tuned_params(task: str, fs: str) -> dict[str, Any]:
    for path in sorted(RESULTS.glob("ramba-tasks-2*.json"), reverse=True):
        runs = json.loads(path.read_text()).get("tasks", {}).get(task, {}).get("models", {}).get(f"lightgbm-{fs}")
        if runs:
            return dict(runs["runs"][0]["params"])
    return {"num_leaves": 15, "learning_rate": 0.05, "min_child_samples": 20}


def gbdts(name: str, bt: Any, db: Any, full: dict[str, Any], draw: dict[str, Any], seeds: list[int]) -> dict[str, Any]:
    """LightGBM (flat / relational features) trained on the draw and on the whole train split,
    early-stopped on the val draw, scored on the test draw."""
    import lightgbm as lgb
    from tabzoo_ramba.task_features import flat_features, relational_features

    kind = bt.task.kind
    cls = lgb.LGBMClassifier if kind == "classification" else lgb.LGBMRegressor
    out: dict[str, Any] = {}
    for fs, fn in (("flat", flat_features), ("relational", relational_features)):
        def feats(seeds_: list[Any], fn: Any = fn) -> np.ndarray:
            f = fn(db, bt.task, seeds_)
            return np.column_stack([f[k] for k in sorted(f)])

        xv, xt = feats(draw["val"].seeds), feats(draw["test"].seeds)
        params = _tuned_params(name, fs)
        for part, sp in (("draw", draw["train"]), ("all", full["train"])):
            xtr = feats(sp.seeds)
            runs = []
            for s in (seeds if part == "draw" else seeds[:1]):  # the whole split: one seed (CPU budget)
                m = cls(n_estimators=1000, subsample=0.8, subsample_freq=1, colsample_bytree=0.8, random_state=s,
                        n_jobs=1, verbose=-1, **params)
                m.fit(xtr, sp.y, eval_X=(xv,), eval_y=(draw["val"].y,),
                      callbacks=[lgb.early_stopping(50, verbose=False)])
                p = m.predict_proba(xt)[:, 1] if kind == "classification" else m.predict(xt)
                runs.append({"seed": s, "test": _metric(kind, draw["test"].y, p)})
            key = f"lightgbm-{fs}-train-{part}"
            out[key] = _summary(runs) | {"params": params, "n_train": len(sp)}
            print(f"  {key}: {out[key]['test_mean']:.4f} +- {out[key]['test_std']:.4f}", file=sys.stderr)
            # logistic / ridge regression (median imputation, standardisation), C / alpha searched on the val draw
            lin = _tuned(_linear, LINEAR_GRID, kind, 0, {"train": xtr, "val": xv, "test": xt},
                         {"train": sp.y, "val": draw["val"].y, "test": draw["test"].y})
            key = f"{'logistic' if kind == 'classification' else 'ridge'}-{fs}-train-{part}"
            out[key] = _summary([{"seed": None, "test": lin["test"], "val": lin["val"]}]) | {
                "params": {"C": lin["params"]}, "n_train": len(sp), "note": "deterministic: one run stands for every seed"}
            print(f"  {key}: {out[key]['test_mean']:.4f}", file=sys.stderr)
    if kind == "regression":
        mu = float(draw["train"].y.mean())
        out["constant-train-draw"] = _summary([{"seed": None, "test": _metric(kind, draw["test"].y,
                                                                              np.full(len(draw["test"]), mu))}])
    return out


_VARIANT_KEYS = {"preset": str, "mixer": str, "text_encoder": str, "d_model": int, "n_layers": int, "lr": float,
                 "steps": int, "batch_size": int, "n_child": int, "max_rows": int, "policy": str, "init": str,
                 "source": str, "source_steps": int, "loss": str, "huber_delta": float, "wd": float, "schedule": str,
                 "winsorize": float, "head_init": int, "eval_every": int, "patience": int}


def parse_variant(spec: str, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """``NAME:key=val,key=val`` -> (NAME, settings): the command-line defaults with the given keys
    replaced (keys: see ``_VARIANT_KEYS``; ``init`` a shipped checkpoint to start from,
    ``source`` a task to fine-tune on first (``source_steps`` steps, its own draw of the same
    sizes), ``steps=0`` = zero-shot)."""
    name, _, rest = spec.partition(":")
    v: dict[str, Any] = {"preset": args.preset, "mixer": "ssm", "text_encoder": args.text_encoder, "lr": args.lr,
                         "steps": args.steps, "batch_size": args.batch_size, "n_child": args.n_child,
                         "max_rows": args.max_rows, "policy": "recent", "init": "", "source": "",
                         "source_steps": args.steps, "loss": "mse", "huber_delta": 1.0, "wd": 0.0, "schedule": "constant",
                         "winsorize": 0.0, "head_init": 0, "eval_every": args.eval_every, "patience": 0}
    for item in filter(None, rest.split(",")):
        key, _, val = item.partition("=")
        if key not in _VARIANT_KEYS:
            raise SystemExit(f"unknown variant key {key!r} in {spec!r}; use {sorted(_VARIANT_KEYS)}")
        v[key] = _VARIANT_KEYS[key](val)
    return name, v


def _fit_kwargs(v: dict[str, Any], kind: str) -> dict[str, Any]:
    """The variant's stabilisers as :func:`tabzoo_ramba.train.finetune` keywords (weight decay and
    schedule for every task; winsorizing and the head's init only for regression)."""
    out = {"weight_decay": v["wd"], "schedule": v["schedule"]}
    if kind == "regression":
        out |= {"winsorize": v["winsorize"], "head_init": bool(v["head_init"])}
    return out


def source_state(name: str, steps: int, seed: int, sampler: Any, r: Any, db: Any, draw: dict[str, Any],
                 v: dict[str, Any], args: argparse.Namespace, cache: dict[str, Any]) -> dict[str, Any]:
    """The weights of ``r.model`` (a fresh init of ``seed``) fine-tuned on the source task ``name``
    for ``steps`` steps (its own train / val split, draws of the target draw's sizes, draw seed
    12345, statistics at its ``val_start``; best state on its val draw), kept in ``cache`` so
    that the zero-shot and fine-tuned variants of one seed start from the same weights."""
    import copy

    from tabzoo_ramba import Ramba
    from tabzoo_ramba.tasks import get_task
    from tabzoo_ramba.train import finetune

    key = str(("source", name, steps, seed, sampler, v["lr"], v["batch_size"]))
    if key not in cache:
        sbt = get_task(name)
        if sbt.database != get_task(args.task).database:
            raise SystemExit(f"source task {name} runs on {sbt.database}, not on the target's database")
        sdraw = _draws(sbt.split(db), *(len(draw[k]) for k in ("train", "val", "test")))
        c1 = time.process_time()
        sr = Ramba(r.model, sampler=sampler, seed=seed, progress=False).bind(db, sbt.task, sbt.val_start)
        seqs = {k: sr._seqs(db, sdraw[k].seeds) for k in ("train", "val")}
        mu, sd = sr.stats.get(sbt.task.entity_table, sbt.task.target) if sr.stats else (0.0, 1.0)
        finetune(sr.model, seqs["train"], sdraw["train"].y, kind=sbt.task.kind, mu=mu, sd=sd, val=seqs["val"],
                 y_val=sdraw["val"].y, steps=steps, batch_size=v["batch_size"], lr=v["lr"],
                 eval_every=args.eval_every, seed=seed, progress=False, encoder=sr.encoder, predict=sr._predict_seqs,
                 loss=v["loss"], huber_delta=v["huber_delta"])
        sr.model.eval()
        val = _metric(sbt.task.kind, sdraw["val"].y, sr._predict_seqs(seqs["val"]))
        cache[key] = {"state": copy.deepcopy(sr.model.state_dict()), "val": val,
                      "cpu_s": round(time.process_time() - c1, 1)}
        print(f"  source {name} seed {seed}: val {val:.4f} ({cache[key]['cpu_s']} cpu s)", file=sys.stderr)
    return cache[key]


def ramba(bt: Any, db: Any, draw: dict[str, Any], seeds: list[int], args: argparse.Namespace,
          variants: list[tuple[str, dict[str, Any]]], cache: dict[str, Any],
          on_seed: Any = None) -> dict[str, Any]:
    """Each variant per seed on the serialized draw (serialized once per sampler setting, kept in
    ``cache``): a fresh init (seeded), or the ``init`` checkpoint, fine-tuned for ``steps`` (0 =
    zero-shot). ``on_seed(partial)`` is called after every seed with the results so far (the
    finished seeds of the current variant), so a run cut short keeps them."""
    from tabzoo_ramba import Ramba, SamplerConfig
    from tabzoo_ramba.pretraining import load_pretrained_model
    from tabzoo_ramba.train import finetune

    out: dict[str, Any] = {}
    for vname, v in variants:
        sampler = SamplerConfig(n_child=v["n_child"], max_expansions=8, max_rows=v["max_rows"], policy=v["policy"])
        cfg = {k: v[k] for k in ("preset", "text_encoder", "mixer", "d_model", "n_layers") if k in v}
        if str(sampler) not in cache:
            t0 = time.time()
            base = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=sampler,
                         progress=False).bind(db, bt.task, bt.val_start)
            seqs = {k: base._seqs(db, sp.seeds) for k, sp in draw.items()}
            cache[str(sampler)] = (base, seqs, time.time() - t0)
            print(f"  serialized {sum(len(x) for x in seqs.values())} seeds ({sampler}) in {time.time() - t0:.0f} s",
                  file=sys.stderr)
        base, seqs, ser_s = cache[str(sampler)]
        lens = [len(q.kind) for x in seqs.values() for q in x]
        mu, sd = base.stats.get(bt.task.entity_table, bt.task.target) if base.stats else (0.0, 1.0)
        runs = []
        key = "ramba" if vname == "ramba" else f"ramba-{vname}"

        meta: dict[str, Any] = {
            "config": dict(cfg), "sampler": str(sampler),
            "budget": {k: v[k] for k in ("steps", "batch_size", "lr", "eval_every", "patience")} | {
                                                                          "pretrained": v["init"] or None},
            "tokens_mean": float(np.mean(lens)), "tokens_max": int(max(lens)), "serialize_s": round(ser_s, 1)}

        if v["source"]:
            meta["source"] = {"task": v["source"], "steps": v["source_steps"]}
        if bt.task.kind == "regression":
            meta["loss"] = {"loss": v["loss"], "huber_delta": v["huber_delta"] if v["loss"] == "huber" else None}
            meta["fit"] = _fit_kwargs(v, "regression")
        for s in seeds:
            t1, c1 = time.time(), time.process_time()
            model = load_pretrained_model(v["init"]) if v["init"] else None
            r = Ramba(model, config=None if model else cfg, sampler=sampler, seed=s, progress=False)
            r.task, r.stats = base.task, base.stats
            if v["source"]:
                src = source_state(v["source"], v["source_steps"], s, sampler, r, db, draw, v, args, cache)
                r.model.load_state_dict(src["state"])
                meta["source"][f"seed_{s}"] = {k: src[k] for k in ("val", "cpu_s")}
            losses: list[float] = []
            best_step = 0
            if v["steps"] > 0:
                res = finetune(r.model, seqs["train"], draw["train"].y, kind=bt.task.kind, mu=mu, sd=sd,
                               val=seqs["val"], y_val=draw["val"].y, steps=v["steps"], batch_size=v["batch_size"],
                               lr=v["lr"], eval_every=v["eval_every"], seed=s, progress=False, encoder=r.encoder,
                               predict=r._predict_seqs, loss=v["loss"], huber_delta=v["huber_delta"],
                               patience=v["patience"] or None, **_fit_kwargs(v, bt.task.kind))
                best_step = res.best_step
                losses = [float(x) for x in res.losses]
            r.model.eval()
            p_test, p_val = r._predict_seqs(seqs["test"]), r._predict_seqs(seqs["val"])
            test = _metric(bt.task.kind, draw["test"].y, p_test)
            val = _metric(bt.task.kind, draw["val"].y, p_val)
            runs.append({"seed": s, "test": test, "val": val, "wall_s": round(time.time() - t1, 1),
                         "cpu_s": round(time.process_time() - c1, 1),
                         "loss_first_last_20": [float(np.mean(losses[:20])), float(np.mean(losses[-20:]))]
                         if losses else None, "steps_run": len(losses), "best_step": best_step if losses else None})
            if bt.task.kind == "regression":
                runs[-1] |= _recalibrated(draw["val"].y, p_val, draw["test"].y, p_test)
            print(f"  {vname} seed {s}: test {test:.4f} val {val:.4f} {runs[-1].get('test_recal', '')} "
                  f"({runs[-1]['cpu_s']} cpu s)", file=sys.stderr)
            meta["config"]["resolved_text_encoder"] = r.model.cfg.text_encoder
            if on_seed is not None:
                on_seed({**out, key: _summary(runs) | meta})
            if v["init"] and v["steps"] == 0:
                break  # a shipped checkpoint with no fine-tuning is one model, whatever the seed
        out[key] = _summary(runs) | meta
    return out


def main() -> None:
    from tabzoo_ramba.tasks import TASKS, get_task

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", default="nyc-dep-delayed", help=f"one of {sorted(TASKS)}")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--train", type=int, default=1500)
    p.add_argument("--val", type=int, default=400)
    p.add_argument("--test", type=int, default=1500)
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--eval-every", type=int, default=50)
    p.add_argument("--preset", default="small")
    p.add_argument("--text-encoder", default="auto")
    p.add_argument("--n-child", type=int, default=8)
    p.add_argument("--max-rows", type=int, default=48)
    p.add_argument("--variant", action="append", default=[],
                   help="NAME:key=val,... a Ramba variant (repeatable; keys preset, mixer, text_encoder, d_model, "
                        "n_layers, lr, steps, batch_size, n_child, max_rows, policy, init, source, source_steps, "
                        "loss (regression: mse, the default, or huber), huber_delta); "
                        "default one 'ramba' with the options above")
    p.add_argument("--skip-gbdt", action="store_true")
    p.add_argument("--gbdt-first", action="store_true", help="score the baselines before Ramba (a cut run keeps them)")
    p.add_argument("--skip-ramba", action="store_true",
                   help="keep the Ramba entries this task already has in --out (same draw sizes) and add the GBDTs")
    p.add_argument("--merge", action="store_true",
                   help="keep this task's entries in --out (same draw sizes): a Ramba variant run here on other "
                        "seeds adds its runs to the earlier ones (a seed run again replaces its run)")
    p.add_argument("--out", default=None, help="JSON file to merge into (default results/ramba-tasks-model-<date>.json)")
    args = p.parse_args()
    seeds = [int(s) for s in args.seeds.split(",")]
    bt = get_task(args.task)
    t0 = time.time()
    db = bt.load()
    full = bt.split(db)
    draw = _draws(full, args.train, args.val, args.test)
    out: dict[str, Any] = {"task": args.task, "metric": bt.metric, "kind": bt.task.kind,
                           "n": {k: len(v) for k, v in draw.items()}, "n_full": {k: len(v) for k, v in full.items()},
                           "draw_seed": 12345, "load_average_at_start": list(os.getloadavg()), "models": {}}
    print(f"{args.task}: {out['n']} of {out['n_full']}", file=sys.stderr)
    path = Path(args.out) if args.out else RESULTS / f"ramba-tasks-model-{dt.date.today().isoformat()}.json"

    def save() -> None:  # after every model, so a run cut short keeps what it measured
        out["load_average_at_end"] = list(os.getloadavg())
        out["total_s"] = round(time.time() - t0, 1)
        res: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {"tasks": {}}
        res["machine"] = machine_info()
        res["tasks"][args.task] = out
        path.write_text(json.dumps(res, indent=1, default=float) + "\n")

    if path.exists() and args.task in json.loads(path.read_text())["tasks"]:
        print(f"replacing the earlier entry of {args.task} in {path}", file=sys.stderr)
    variants = [parse_variant(v, args) for v in args.variant] or [parse_variant("ramba", args)]
    cache: dict[str, Any] = {}
    if args.skip_ramba:
        old = json.loads(path.read_text())["tasks"].get(args.task, {}) if path.exists() else {}
        if old.get("n") != out["n"]:
            raise SystemExit(f"--skip-ramba: {path} has no {args.task} entry with the draw sizes {out['n']}")
        out["models"].update({k: v for k, v in old["models"].items() if k.startswith("ramba")})
        out["ramba_run"] = {k: old[k] for k in ("load_average_at_start", "load_average_at_end", "total_s") if k in old}
        variants = []
    earlier: dict[str, Any] = {}
    if args.merge:
        old = json.loads(path.read_text())["tasks"].get(args.task, {}) if path.exists() else {}
        if old and old.get("n") != out["n"]:
            raise SystemExit(f"--merge: {path} holds {args.task} with the draw sizes {old.get('n')}, not {out['n']}")
        earlier = old.get("models", {})
        out["models"].update(earlier)
        out["earlier_runs"] = old.get("earlier_runs", []) + [
            {k: old[k] for k in ("load_average_at_start", "load_average_at_end", "total_s") if k in old}] if old else []

    def partial(models: dict[str, Any]) -> None:
        for key, entry in models.items():  # with --merge, a variant's runs of other seeds are kept
            done = {r["seed"] for r in entry["runs"]}
            kept = [r for r in earlier.get(key, {}).get("runs", []) if r["seed"] not in done]
            out["models"][key] = entry | _summary(sorted(kept + entry["runs"], key=lambda r: r["seed"])) \
                if kept else entry
        save()

    if args.gbdt_first and not args.skip_gbdt:
        out["models"].update(gbdts(args.task, bt, db, full, draw, seeds))
        save()
    for variant in variants:
        partial(ramba(bt, db, draw, seeds, args, [variant], cache, on_seed=partial))
    if not args.skip_gbdt and not args.gbdt_first:
        out["models"].update(gbdts(args.task, bt, db, full, draw, seeds))
        save()
    print(json.dumps(out, indent=1, default=float))


if __name__ == "__main__":
    main()
