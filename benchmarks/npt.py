"""NPT benchmark: lookup task vs k-NN, real data vs LR/Ridge, RandomForest, XGBoost, scaling.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/npt.py > benchmarks/results/npt-<date>.json

Prints one JSON object (machine, torch version, threads; fp32 matmul peak at start and end):

* ``lookup``: NPT appendix B.1.2. NPT is trained on fresh lookup episodes of the priors'
  ``npt_lookup`` task (originals' targets hidden, duplicates' visible) and tested on new episodes;
  1-NN and the best k-NN (k in 1..10, brute force, chosen on the test episodes as in the paper)
  fit each test episode's duplicates and predict its originals. Test RMSE in target std units.
* ``real_data``: breast_cancer, wine, palmerpenguins (accuracy) and diabetes (RMSE), mean over
  repeated stratified 70/30 splits, each model on the same splits; ratio to the best baseline.
* ``corruption``: appendix B.2.1 on one breast_cancer split.
* ``scaling``: training rows/s and peak tensor memory (live storage bytes, tracked per op) against
  rows per batch, with fitted log-log slopes.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from typing import Any

import numpy as np
import torch

torch.set_num_threads(int(os.environ.get("NPT_BENCH_THREADS", "1")))

from tabzoo.train.optim import Lamb, Lookahead, flat_then_cosine  # noqa: E402
from tabzoo_npt.masking import randomise, stochastic_mask  # noqa: E402
from tabzoo_npt.model import NPT, NPTConfig  # noqa: E402
from tabzoo_npt.train import cell_losses, objective  # noqa: E402

T0 = time.perf_counter()


def matmul_gflops(n: int = 512, seconds: float = 1.0) -> float:
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    reps, t = 0, time.perf_counter()
    while time.perf_counter() - t < seconds:
        a @ b
        reps += 1
    return 2 * n**3 * reps / (time.perf_counter() - t) / 1e9


def slope(xs: list[float], ys: list[float]) -> float:
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


# -- lookup --------------------------------------------------------------------------------
def lookup_episode(prior: Any, b: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, Any]:
    lb = prior.sample(b, seed=seed)
    values = torch.cat([lb.x, lb.visible_targets()[..., None]], dim=-1)
    mask = torch.zeros(values.shape, dtype=torch.bool)
    mask[..., -1] = lb.target_mask
    truth = torch.cat([lb.x, lb.y[..., None]], dim=-1)
    return values, mask, truth, lb


def run_lookup(variant: str, budget_s: float, max_steps: int, n_rows: int = 32, batch: int = 4) -> dict[str, Any]:
    from sklearn.neighbors import KNeighborsRegressor
    from tabzoo_priors.lookup import LookupPrior

    prior = LookupPrior(n_rows=n_rows, n_features=9, variant=variant)
    torch.manual_seed(0)
    model = NPT(NPTConfig(cardinalities=(0,) * 10, dim=16, n_layers=4, n_heads=4, ff_mult=2, dropout=0.0))
    opt = Lookahead(Lamb(model.parameters(), lr=1e-2), k=6, alpha=0.5)
    g = torch.Generator().manual_seed(0)
    t, step, losses = time.perf_counter(), 0, []
    feat_cols = torch.arange(10) < 9
    while step < max_steps and time.perf_counter() - t < budget_s:
        # flat then cosine over the run, whichever of the step and the time budget ends it first
        progress = max(step / max_steps, (time.perf_counter() - t) / budget_s)
        for group in opt.param_groups:
            group["lr"] = 1e-2 * flat_then_cosine(int(1000 * progress), 1000, 0.5)
        values, mask, truth, _ = lookup_episode(prior, batch, seed=step)
        feat = stochastic_mask(~mask & feat_cols, 0.15, g)
        hidden = mask | feat.masked
        inputs = randomise(values, feat.randomised, model.cards, g)
        out = model(inputs, hidden, mask[..., -1])
        per_cell = cell_losses(out, truth, model.cards)
        loss = objective(per_cell, feat.selected, mask & ~feat_cols, 0.1)  # mostly target loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        step += 1
    train_s = time.perf_counter() - t
    model.eval()
    sq_npt, sq_1nn, sq_knn = [], [], {k: [] for k in range(1, 11)}
    with torch.no_grad():
        for e in range(4):
            values, mask, truth, lb = lookup_episode(prior, 4, seed=10**6 + e)
            pred = model(values, mask, mask[..., -1])[..., -1, 0]
            hid = lb.target_mask
            sq_npt.append(((pred - lb.y) ** 2)[hid].numpy())
            for i in range(values.shape[0]):
                h = hid[i].numpy()
                x, y = lb.x[i].numpy(), lb.y[i].numpy()
                for k in sq_knn:
                    knn = KNeighborsRegressor(n_neighbors=k, algorithm="brute").fit(x[~h], y[~h])
                    sq_knn[k].append((knn.predict(x[h]) - y[h]) ** 2)
            sq_1nn = sq_knn[1]
    rmse_knn = {k: float(np.sqrt(np.concatenate(v).mean())) for k, v in sq_knn.items()}
    best_k = min(rmse_knn, key=rmse_knn.get)
    rmse_npt = float(np.sqrt(np.concatenate(sq_npt).mean()))
    return {"variant": variant, "npt_rmse": rmse_npt, "1nn_rmse": float(np.sqrt(np.concatenate(sq_1nn).mean())),
            "knn_rmse": rmse_knn[best_k], "knn_best_k": best_k, "npt_over_knn": rmse_npt / rmse_knn[best_k] if rmse_knn[best_k] > 0 else None,
            "train_steps": step, "train_seconds": round(train_s, 1), "final_train_loss": float(np.mean(losses[-20:])),
            "rows_per_episode": 2 * n_rows, "episodes_per_step": batch}


# -- real data -----------------------------------------------------------------------------
def datasets() -> dict[str, tuple[np.ndarray, np.ndarray, str]]:
    from sklearn.datasets import load_breast_cancer, load_diabetes, load_wine

    out = {}
    for name, loader, task in (("breast_cancer", load_breast_cancer, "cls"), ("wine", load_wine, "cls"),
                               ("diabetes", load_diabetes, "reg")):
        X, y = loader(return_X_y=True)
        out[name] = (X, y, task)
    try:
        from palmerpenguins import load_penguins

        df = load_penguins().dropna(subset=["species"])
        X = df[["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]].to_numpy(dtype=float)
        out["palmerpenguins"] = (X, df["species"].to_numpy(), "cls")
    except ImportError:
        pass
    return out


def baselines(task: str, seed: int) -> dict[str, Any]:
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression, Ridge
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    models: dict[str, Any] = {}
    if task == "cls":
        models["logistic_regression"] = make_pipeline(SimpleImputer(), StandardScaler(), LogisticRegression(max_iter=2000))
        models["random_forest"] = RandomForestClassifier(n_estimators=300, random_state=seed, n_jobs=1)
    else:
        models["ridge"] = make_pipeline(SimpleImputer(), StandardScaler(), Ridge(alpha=1.0))
        models["random_forest"] = RandomForestRegressor(n_estimators=300, random_state=seed, n_jobs=1)
    try:
        import xgboost

        cls = xgboost.XGBClassifier if task == "cls" else xgboost.XGBRegressor
        models["xgboost"] = cls(n_estimators=300, max_depth=4, learning_rate=0.05, n_jobs=1, random_state=seed)
    except ImportError:
        pass
    return models


def npt_estimator(task: str, n_features: int, seed: int) -> Any:
    from tabzoo_npt import NPTClassifier, NPTRegressor

    dim = 8 if n_features > 16 else 16
    cls = NPTClassifier if task == "cls" else NPTRegressor
    return cls(preset="small", dim=dim, n_layers=4, n_heads=4, steps=200, lr=5e-3, flat_fraction=0.5,
               eval_every=20, patience=4, random_state=seed)


def run_real(n_splits: int) -> tuple[dict[str, Any], Any]:
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import LabelEncoder

    results: dict[str, Any] = {}
    corruption_input = None
    for name, (X, y, task) in datasets().items():
        scores: dict[str, list[float]] = {}
        times: dict[str, list[float]] = {}
        if task == "cls":
            y = LabelEncoder().fit_transform(y)
        for s in range(n_splits):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=s,
                                                  stratify=y if task == "cls" else None)
            models = {"npt": npt_estimator(task, X.shape[1], s), **baselines(task, s)}
            for mname, model in models.items():
                t = time.perf_counter()
                model.fit(Xtr, ytr)
                pred = model.predict(Xte)
                times.setdefault(mname, []).append(time.perf_counter() - t)
                score = float((pred == yte).mean()) if task == "cls" else float(np.sqrt(np.mean((pred - yte) ** 2)))
                scores.setdefault(mname, []).append(score)
                if name == "breast_cancer" and s == 0 and mname == "npt":
                    corruption_input = (model, Xte, yte)
        mean = {m: float(np.mean(v)) for m, v in scores.items()}
        base = {m: v for m, v in mean.items() if m != "npt"}
        best = max(base, key=base.get) if task == "cls" else min(base, key=base.get)
        ratio = mean["npt"] / base[best] if task == "cls" else base[best] / mean["npt"]
        results[name] = {"task": task, "metric": "accuracy" if task == "cls" else "rmse", "mean": mean,
                         "per_split": scores, "fit_predict_s": {m: float(np.mean(v)) for m, v in times.items()},
                         "best_baseline": best, "npt_relative_to_best": ratio, "splits": n_splits,
                         "n_rows": int(len(y)), "n_features": int(X.shape[1])}
    return results, corruption_input


# -- scaling -------------------------------------------------------------------------------
def run_scaling(sizes: tuple[int, ...] = (64, 128, 256, 512, 1024), steps: int = 3) -> dict[str, Any]:
    from tabzoo.testing.checks.scaling import LiveBytes

    d = 9
    torch.manual_seed(0)
    model = NPT(NPTConfig(cardinalities=(0,) * d, dim=16, n_layers=4, n_heads=4, ff_mult=2, dropout=0.0))
    opt = Lookahead(Lamb(model.parameters(), lr=1e-3))
    rows_s, peaks = [], []
    for n in sizes:
        values = torch.randn(1, n, d)
        mask = torch.rand(1, n, d) < 0.15

        def step(values: torch.Tensor = values, mask: torch.Tensor = mask) -> None:
            out = model(values, mask)
            loss = objective(cell_losses(out, values, model.cards), mask, mask, 0.5)
            opt.zero_grad()
            loss.backward()
            opt.step()

        step()  # warm-up
        with LiveBytes() as tracker:
            step()
        t = time.perf_counter()
        for _ in range(steps):
            step()
        dt = (time.perf_counter() - t) / steps
        rows_s.append(n / dt)
        peaks.append(float(tracker.peak))
    return {"rows_per_batch": list(sizes), "train_rows_per_s": rows_s, "peak_tensor_bytes": peaks,
            "seconds_per_step": [n / r for n, r in zip(sizes, rows_s, strict=True)],
            "time_slope_vs_rows": slope(list(sizes), [n / r for n, r in zip(sizes, rows_s, strict=True)]),
            "memory_slope_vs_rows": slope(list(sizes), peaks), "attributes": d, "dim": 16, "n_layers": 4,
            "note": "dense softmax ABD: time and memory grow between linearly and quadratically in rows per batch"}


def main() -> None:
    quick = "--quick" in sys.argv
    out: dict[str, Any] = {
        "benchmark": "npt", "date": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
        "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                    "cpus": os.cpu_count(), "load_avg_start": os.getloadavg()},
        "torch": torch.__version__, "threads": torch.get_num_threads(),
        "matmul_fp32_gflops_start": matmul_gflops(),
    }
    budget = 20 if quick else 300  # a safety cap: the schedule is planned over max_steps
    out["lookup"] = [run_lookup(v, budget, 20 if quick else 350) for v in ("original", "random_features", "add_one")]
    print(json.dumps({"progress": "lookup done", "elapsed_s": time.perf_counter() - T0}), file=sys.stderr)
    real, corr = run_real(1 if quick else 2)
    out["real_data"] = real
    ratios = [r["npt_relative_to_best"] for r in real.values()]
    out["real_data_mean_relative_to_best"] = float(np.mean(ratios))
    out["real_data_target_met"] = bool(np.mean(ratios) >= 0.98)
    if corr is not None:
        from tabzoo_npt.diagnostics import corruption_test

        model, Xte, yte = corr
        out["corruption_breast_cancer"] = corruption_test(model, Xte, yte, max_rows=64).as_dict()
    print(json.dumps({"progress": "real data done", "elapsed_s": time.perf_counter() - T0}), file=sys.stderr)
    out["scaling"] = run_scaling((64, 128, 256) if quick else (64, 128, 256, 512, 1024))
    out["matmul_fp32_gflops_end"] = matmul_gflops()
    out["lookup_target_met"] = bool(all(r["npt_rmse"] < 0.5 * r["knn_rmse"] for r in out["lookup"]
                                        if r["variant"] != "original"))
    out["machine"]["load_avg_end"] = os.getloadavg()
    out["wall_s"] = time.perf_counter() - T0
    print(json.dumps(out, indent=1, default=lambda o: float(o) if isinstance(o, np.floating) else str(o)))


if __name__ == "__main__":
    main()
