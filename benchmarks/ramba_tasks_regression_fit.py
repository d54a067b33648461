"""Ramba.fit's own hold-out and snapshot averaging on nyc-arr-delay (and nyc-dep-delayed), against flat LightGBM on the same rows.

    OMP_NUM_THREADS=1 nice -n 10 uv run --group bench python benchmarks/ramba_tasks_regression_fit.py \
        [--seeds 0,1,2] [--members 5] [--hold 1000] [--snapshot-every 25] [--train 1000 --steps 150] \
        [--budget small|large] [--weight-average] \
        [--out results/ramba-tasks-regression-fit-<date>.json] [--preds results/...npz] [--summarise-only]

The draws of ``ramba_tasks_regression_select.py`` (draw seed 12345: ``--train`` train / 300 val /
1,000 test seeds, and its ``hold_draw``: ``--hold`` further rows of the train split, seed 54321).
The caller's train split is the train draw and those rows together (2 x 1,000 at the defaults,
in time order), as a user would pass the rows of the training period; ``Ramba.fit`` does the rest:

    Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=8 / 48 "recent", seed=s).fit(
        db, task, {"train": train_and_hold, "val": val, "test": test}, steps=150, batch_size=16, lr=2e-3,
        ensemble=5, snapshot_every=25, hold=1000, recalibrate=True)

so it carves its own hold-out of 1,000 rows (``carve_hold``, seed ``[54321, s]``), trains 5
members on the other 1,000 (member ``k``: seed ``s + 1000 k``), each predicting the mean of its
states at steps 75, 100, 125, 150, and maps the mean by the line fitted on the hold-out. Test R^2
of ``fit``'s predictions per seed, and, recomputed from the kept per-member predictions
(``--preds``), the first ``K`` members with and without the line (``ens-K`` / ``ens-K+recal``).

Beside it, per seed, flat LightGBM (the committed tuned configuration, ``gbdt_flat`` of the select
study): trained on fit's 1,000 training rows and early-stopped on its hold-out (raw and with the
hold-out's line, the same rows and line as Ramba), and trained on all 2,000 rows early-stopped on
the val draw (what a user would run on the whole train split). ``--relational-peers``: the same
two on the hand-made causal aggregates (``lightgbm-relational-*``, their committed tuned
configuration).

``--budget large``: the 5,000-seed budget of ``ramba-tasks-model-regression-stab-large-`` (the
5,000-seed train draw plus 1,000 ``hold_draw`` rows as one 6,000-row train split, sampler 24 / 96,
600 steps, batch 16, ``snapshot_every=50``: states at steps 300, 350, ..., 600); the explicit flags
still override it. The members' predictions are recorded as each member finishes (``Ramba.fit``'s
``finetune`` wrapped, nothing else changed), and the JSON and ``--preds`` are written then, so a
run cut short keeps its finished members. ``--weight-average``: each member's kept states are also
averaged in weight space (one model, one forward per row instead of one per state), scored the
same way (``ens-K-wavg``), from the same states: nothing is refitted.

``--task nyc-dep-delayed`` (classification): the same, without the line (``recalibrate`` is
regression's), scored by ROC-AUC; no peers are run (the committed ones of ``ramba-tasks-model-``
use these draws).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine_info  # noqa: E402
from ramba_tasks_model import _draws, _metric  # noqa: E402
from ramba_tasks_regression_ensemble import r2, study_args  # noqa: E402
from ramba_tasks_regression_select import gbdt_flat, hold_draw  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
PARTS = ("hold", "test")  # the parts whose per-member predictions are kept (classification: test only)
BUDGETS: dict[str, dict[str, Any]] = {
    "small": {},  # study_args' defaults and --snapshot-every 25
    "large": {"train": 5000, "steps": 600, "n_child": 24, "max_rows": 96, "snapshot_every": 50},
}
torch.set_num_threads(1)


def merged_train(a: Any, b: Any) -> Any:
    """The rows of splits ``a`` and ``b`` together, in time order (stable)."""
    from tabzoo_ramba.data import Split

    seeds, y = list(a.seeds) + list(b.seeds), np.concatenate([a.y, b.y])
    order = sorted(range(len(seeds)), key=lambda i: np.datetime64(seeds[i][2]))
    return Split([seeds[i] for i in order], y[order])


def weight_average(member: Any, states: list[dict[str, torch.Tensor]]) -> Any:
    """A copy of ``member`` whose floating-point parameters and buffers are the mean of ``states``
    (the member's kept snapshot states; other entries from the last state), in eval mode."""
    import copy

    avg = {k: (torch.stack([st[k].double() for st in states]).mean(0).to(v.dtype) if v.is_floating_point() else v)
           for k, v in states[-1].items()}
    m = copy.deepcopy(member)
    m.load_state_dict(avg)
    return m.eval()


class LiveMembers:
    """Wraps ``tabzoo_ramba.api.finetune`` while ``Ramba.fit`` runs: after each member's training,
    its predictions on ``seqs`` (the mean raw output of its kept states, as ``Ramba.predict`` forms
    it, calibration not applied) are appended to ``preds[part]`` and ``on_member()`` is called, so a
    run cut short keeps its finished members. With ``wavg``, also the prediction of the weight
    average of its states (``preds[part + "-wavg"]``). Prediction runs in eval mode without
    gradients and draws no random numbers, so the next member trains as without the wrapper."""

    def __init__(self, r: Any, seqs: dict[str, list[Any]], wavg: bool, on_member: Any) -> None:
        self.r, self.seqs, self.wavg, self.on_member = r, seqs, wavg, on_member
        self.preds: dict[str, list[np.ndarray]] = {}
        self.times: list[dict[str, float]] = []

    def __enter__(self) -> LiveMembers:
        import tabzoo_ramba.api as api

        self._orig = api.finetune

        def wrapped(member: Any, *a: Any, **kw: Any) -> Any:
            c0 = time.process_time()
            res = self._orig(member, *a, **kw)
            c1 = time.process_time()
            self.record(member, kw.get("snapshots") or [member.state_dict()], c1 - c0)
            return res

        api.finetune = wrapped
        return self

    def __exit__(self, *exc: Any) -> None:
        import tabzoo_ramba.api as api

        api.finetune = self._orig

    def record(self, member: Any, states: list[dict[str, torch.Tensor]], train_cpu: float) -> None:
        import copy

        was = member.training
        member.eval()
        snaps = [member]
        for st in states[:-1]:  # as Ramba.fit keeps them: the last state is the member itself
            m = copy.deepcopy(member)
            m.load_state_dict(st)
            snaps.append(m.eval())
        t: dict[str, float] = {"train_cpu_s": round(train_cpu, 1), "states": len(snaps)}
        c0 = time.process_time()
        for part, q in self.seqs.items():
            self.preds.setdefault(part, []).append(self.r._predict_seqs(q, snaps))
        t["predict_cpu_s"] = round(time.process_time() - c0, 1)
        if self.wavg:
            c0 = time.process_time()
            w = weight_average(member, states)
            for part, q in self.seqs.items():
                self.preds.setdefault(f"{part}-wavg", []).append(self.r._predict_seqs(q, [w]))
            t["predict_wavg_cpu_s"] = round(time.process_time() - c0, 1)
        t["rows_predicted"] = sum(len(q) for q in self.seqs.values())
        self.times.append(t)
        member.train(was)
        print(f"  member {len(self.times) - 1}: {t}", file=sys.stderr, flush=True)
        self.on_member({k: np.stack(v) for k, v in self.preds.items()})


def combine(p: np.ndarray, kind: str) -> np.ndarray:
    """The mean of member predictions ``[K, n]`` as ``Ramba.predict`` forms it (before the
    regression line): the mean value, or the sigmoid of the mean logit."""
    if kind == "regression":
        return p.mean(0)
    q = np.clip(p, 1e-15, 1 - 1e-15)
    return 1.0 / (1.0 + np.exp(-np.log(q / (1 - q)).mean(0)))


def summarise(y: dict[int, dict[str, np.ndarray]], preds: dict[int, dict[str, np.ndarray]],
              kind: str = "regression") -> dict[str, Any]:
    """Test metric (R^2 / ROC-AUC; mean, std over seeds, per seed) of ``ens-K`` (the first K
    members' mean) and, for regression, ``ens-K+recal`` (mapped by the line fitted on the hold-out);
    ``ens-K-wavg`` likewise from the weight-averaged members where recorded. A seed cut short
    counts for the K its finished members reach. Regression rows also give the hold-out's own
    R^2 (``hold``: raw; ``+recal`` rows: 5-fold cross-validated, the line fitted on the other
    folds), which a user could choose between the two by without the test split."""
    from tabzoo_ramba.train import cv_recalibrated_r2, linear_recalibration

    rows: dict[str, list[float]] = {}
    row_seeds: dict[str, list[int]] = {}
    on_hold: dict[str, list[float]] = {}
    for s in sorted(preds):
        for k in range(1, preds[s]["test"].shape[0] + 1):
            p = {part: combine(v[:k], kind) for part, v in preds[s].items()}
            for tag in ("", "-wavg") if "test-wavg" in p else ("",):
                for name in (f"ens-{k}{tag}", f"ens-{k}{tag}+recal") if kind == "regression" else (f"ens-{k}{tag}",):
                    row_seeds.setdefault(name, []).append(s)
                rows.setdefault(f"ens-{k}{tag}", []).append(_metric(kind, y[s]["test"], p[f"test{tag}"]))
                if kind == "regression":
                    a, b = linear_recalibration(p[f"hold{tag}"], y[s]["hold"])
                    rows.setdefault(f"ens-{k}{tag}+recal", []).append(r2(y[s]["test"], a * p[f"test{tag}"] + b))
                    on_hold.setdefault(f"ens-{k}{tag}", []).append(r2(y[s]["hold"], p[f"hold{tag}"]))
                    on_hold.setdefault(f"ens-{k}{tag}+recal", []).append(cv_recalibrated_r2(p[f"hold{tag}"], y[s]["hold"]))
    return {name: {"test_mean": float(np.mean(v)), "test_std": float(np.std(v, ddof=1)) if len(v) > 1 else 0.0,
                   "test": v, "seeds": row_seeds[name]} | ({"hold": on_hold[name]} if name in on_hold else {})
            for name, v in rows.items()}


def main() -> None:
    from tabzoo_ramba import Ramba, SamplerConfig
    from tabzoo_ramba.api import carve_hold
    from tabzoo_ramba.tasks import get_task

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    study_args(p, members=5)
    p.add_argument("--budget", choices=sorted(BUDGETS), default="small",
                   help="large: --train 5000 --steps 600 --n-child 24 --max-rows 96 --snapshot-every 50")
    p.add_argument("--hold", type=int, default=1000)
    p.add_argument("--snapshot-every", type=int, default=25)
    p.add_argument("--weight-average", action="store_true",
                   help="also score each member's states averaged in weight space (ens-K-wavg)")
    p.add_argument("--preds", default=None, help="npz of the per-member predictions (written; read with --summarise-only)")
    p.add_argument("--summarise-only", action="store_true")
    p.add_argument("--relational-peers", action="store_true",
                   help="also LightGBM on the hand-made causal aggregates (relational_features), the same rows")
    p.add_argument("--run-records", default="", help="with --summarise-only: the training runs' JSONs (comma-"
                   "separated), whose fit runs, load and time records are kept")
    p.add_argument("--out", default=None)
    p.add_argument("--note", default="")
    known, _ = p.parse_known_args()
    p.set_defaults(**BUDGETS[known.budget])
    args = p.parse_args()
    seeds = [int(x) for x in args.seeds.split(",")]
    bt = get_task(args.task)
    t0, load0 = time.time(), list(os.getloadavg())
    db = bt.load()
    full = bt.split(db)
    draw = _draws(full, args.train, args.val, args.test)
    given = merged_train(draw["train"], hold_draw(full["train"], draw["train"], args.hold))
    path = Path(args.out) if args.out else RESULTS / f"ramba-tasks-regression-fit-{dt.date.today()}.json"
    preds_path = Path(args.preds) if args.preds and not args.summarise_only else None
    carved = {s: carve_hold(given, args.hold, s) for s in seeds}
    y = {s: {"val": draw["val"].y, "hold": c[1].y, "test": draw["test"].y} for s, c in carved.items() if c}
    meta: dict[str, Any] = {
        "task": args.task, "budget": args.budget, "draw_seed": 12345, "given_train": len(given), "hold": args.hold, "hold_seed": "[54321, s]",
        "n": {"fit_train": len(given) - args.hold, "hold": args.hold, "val": len(draw["val"]), "test": len(draw["test"])},
        "seeds": seeds, "fit": {"steps": args.steps, "batch_size": args.batch_size, "lr": args.lr,
                                "ensemble": args.members, "snapshot_every": args.snapshot_every,
                                "hold": args.hold, "recalibrate": bt.task.kind == "regression"},
        "metric": "r2" if bt.task.kind == "regression" else "roc_auc",
        "sampler": {"n_child": args.n_child, "max_rows": args.max_rows, "policy": "recent"},
        "config": {"preset": "tiny", "text_encoder": "hashing"}, "load_average_at_start": load0,
        **({"note": args.note} if args.note else {})}
    peers: dict[str, Any] = {}
    for fs in ("flat", "relational") if args.relational_peers else ("flat",):
        for s in seeds if bt.task.kind == "regression" else ():  # (classification: the committed peers)
            rest, hold = carved[s]  # type: ignore[misc]  # LightGBM on fit's own rows, early-stopped on its hold-out
            with warnings.catch_warnings():  # gbdt_flat's spread over one seed is NaN
                warnings.simplefilter("ignore", RuntimeWarning)
                g = gbdt_flat(bt, db, {"train": rest, "val": draw["val"], "test": draw["test"]}, hold, [s], fs)
            peers.setdefault(f"lightgbm-{fs}-fit-rows-es-hold", []).append(g["lightgbm-flat-es-hold"]["runs"][0])
        if bt.task.kind == "regression":
            g = gbdt_flat(bt, db, {"train": given, "val": draw["val"], "test": draw["test"]}, carved[seeds[0]][1],  # type: ignore[index]
                          seeds, fs)
            peers[f"lightgbm-{fs}-all-rows-es-val"] = g["lightgbm-flat-es-val"]["runs"]
    peer_summary = {name: {key: [float(np.mean([r[key] for r in runs])), float(np.std([r[key] for r in runs], ddof=1))]
                           for key in ("test", "test_recal")} | {"runs": runs} for name, runs in peers.items()}
    for name, v in peer_summary.items():
        print(f"  {name}: {v['test']} recal {v['test_recal']}", file=sys.stderr, flush=True)

    fitted: dict[int, dict[str, Any]] = {}
    preds: dict[int, dict[str, np.ndarray]] = {}
    times: dict[int, list[dict[str, float]]] = {}
    if args.summarise_only:
        if not args.preds:
            raise SystemExit("--summarise-only needs --preds")
        for q in args.preds.split(","):
            z = np.load(q)
            for name in z.files:
                s_, part = name.split("|")
                if part.removesuffix("-wavg") in PARTS:
                    preds.setdefault(int(s_[1:]), {})[part] = z[name].astype(np.float64)
        meta["summarised_from"] = [Path(q).name for q in args.preds.split(",")]
        meta["training_runs"] = []
        for rec in filter(None, args.run_records.split(",")):
            old = json.loads(Path(rec).read_text())
            fitted |= {int(k): {"test": v.pop("test_r2", None)} | v for k, v in old.get("fit_runs", {}).items()}
            times |= {int(k): v for k, v in old.get("member_times", {}).items()}
            meta["training_runs"].append({"file": Path(rec).name} | {
                k: old[k] for k in ("load_average_at_start", "load_average_at_end", "total_s", "seeds_done") if k in old})

    def save() -> dict[str, Any]:
        out = meta | {"fit_runs": {str(s): v for s, v in sorted(fitted.items())},
                      "fit_test": [float(np.mean([v["test"] for v in fitted.values()])),
                                   float(np.std([v["test"] for v in fitted.values()], ddof=1))
                                   if len(fitted) > 1 else 0.0] if fitted else None,
                      "estimators": summarise(y, preds, bt.task.kind) if preds else {}, "peers": peer_summary,
                      "seeds_done": sorted(s for s in preds if s in fitted or (args.summarise_only and not fitted)),
                      "members_done": {str(s): int(v["test"].shape[0]) for s, v in sorted(preds.items())},
                      "member_times": {str(s): v for s, v in sorted(times.items())}, "load_average_at_end": list(os.getloadavg()),
                      "total_s": round(time.time() - t0, 1), "machine": machine_info()}
        path.write_text(json.dumps(out, indent=1, default=float) + "\n")
        return out

    if args.summarise_only:
        save()
        return
    sampler = SamplerConfig(n_child=args.n_child, max_expansions=8, max_rows=args.max_rows, policy="recent")
    out: dict[str, Any] = {}

    def write_preds() -> None:
        if preds_path is not None:
            np.savez_compressed(preds_path, **{f"s{k}|{part}": q.astype(np.float32)
                                               for k, v in preds.items() for part, q in v.items()})

    for s in seeds:
        r = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=sampler, seed=s, progress=False)
        r.bind(db, bt.task, draw["val"].seeds[0][2])  # as fit binds it (statistics at the first val seed)
        seqs = {"test": r._seqs(db, draw["test"].seeds)}
        if bt.task.kind == "regression":
            seqs["hold"] = r._seqs(db, carved[s][1].seeds)  # type: ignore[index]

        def on_member(each: dict[str, np.ndarray], s: int = s) -> None:
            preds[s] = {k: v.astype(np.float32).astype(np.float64) for k, v in each.items()}  # as kept
            times[s] = live.times
            write_preds()
            save()

        c0, w0 = time.process_time(), time.time()
        with LiveMembers(r, seqs, args.weight_average, on_member) as live:
            r.fit(db, bt.task, {"train": given, "val": draw["val"], "test": draw["test"]}, steps=args.steps,
                  batch_size=args.batch_size, lr=args.lr, ensemble=args.members, snapshot_every=args.snapshot_every,
                  hold=args.hold, recalibrate=bt.task.kind == "regression")
        fit_cpu, fit_wall = time.process_time() - c0, time.time() - w0
        each = preds[s]
        a, b = r.calibration or (1.0, 0.0)
        test_pred = combine(each["test"], bt.task.kind)  # Ramba.predict's, from the members' (up to rounding)
        test_pred = a * test_pred + b if bt.task.kind == "regression" else test_pred
        member_cpu = sum(t["predict_cpu_s"] + t.get("predict_wavg_cpu_s", 0.0) for t in live.times)
        fitted[s] = {"test": _metric(bt.task.kind, draw["test"].y, test_pred), "calibration": list(r.calibration or ()),
                     "states": len(r.members), "snapshots_per_member": r.snapshots_per_member,
                     "fit_cpu_s": round(fit_cpu - member_cpu, 1), "fit_wall_s": round(fit_wall, 1),
                     "train_cpu_s": round(sum(t["train_cpu_s"] for t in live.times), 1),
                     "note": "fit_cpu_s: Ramba.fit's CPU time less the members' recorded predictions (member_times)"}
        print(f"seed {s}: fit test {fitted[s]['test']:.4f} ({fitted[s]['fit_cpu_s']:.0f} cpu s)", file=sys.stderr,
              flush=True)
        out = save()
    print(json.dumps({"fit_test": out["fit_test"], **{k: [v["test_mean"], v["test_std"]]
                                                      for k, v in out["estimators"].items()}}, indent=1))


if __name__ == "__main__":
    main()
