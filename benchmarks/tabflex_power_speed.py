"""Issue 28 (speed): the one-branch Yeo-Johnson of ``tabzoo.estimators.members`` against the two-branch form
it replaced, side by side in one process.

    OMP_NUM_THREADS=1 uv run --group bench python benchmarks/tabflex_power_speed.py OUT.json

Measures (1) the 51-lambda search of one 3,000-row column, and (2) the default ``TabFlexClassifier`` fit +
predict_proba on suite tables of 3,000 training rows (``caravan``: 85 features; ``hpc_jobs``), with the
module's ``_yeo_johnson`` swapped for the old form in alternate repeats. Outputs are compared bitwise.
Writes the JSON incrementally (a cut run keeps its results) and prints it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _reference() -> Any:
    """The transform before the change (both branches on every entry, then selected): the
    reference that ``packages/core/tests/test_members.py`` keeps, loaded from there (one copy)."""
    import importlib.util

    path = Path(__file__).resolve().parents[1] / "packages/core/tests/test_members.py"
    spec = importlib.util.spec_from_file_location("_test_members_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module._yeo_johnson_both_branches


def main(out: str) -> dict[str, Any]:
    two_branch = _reference()
    import torch
    from _machine import machine_info
    from _realdata_tables import get_table, load_table
    from tabzoo.estimators import members
    from tabzoo_tabflex import TabFlexClassifier

    torch.set_num_threads(1)
    new = members._yeo_johnson
    res: dict[str, Any] = {"benchmark": "tabflex_power_speed", "issue": "28 (speed)", "machine": machine_info(),
                           "torch_threads": 1, "what": "seconds, best of the repeats; old = two-branch Yeo-Johnson",
                           "lambda_search": {}, "fit_predict": {}}
    if Path(out).exists():
        raise SystemExit(f"{out} exists; pass a new path")

    def save() -> None:
        Path(out).write_text(json.dumps(res, indent=1), encoding="utf-8")

    col = np.random.default_rng(0).standard_normal(3000) * 3 + 1
    times: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(5):
        for name, fn in (("old", two_branch), ("new", new)):
            members._yeo_johnson = fn
            t = time.perf_counter()
            for _ in range(20):
                members._yeo_johnson_lambda(col)
            times[name].append((time.perf_counter() - t) / 20)
    members._yeo_johnson = new
    res["lambda_search"] = {"rows": 3000, "grid": 51, "old_s": min(times["old"]), "new_s": min(times["new"]),
                            "speedup": min(times["old"]) / min(times["new"])}
    save()
    for table in ("caravan", "hpc_jobs"):
        X, y = load_table(get_table(table))
        X, y = X.iloc[:4300], y.iloc[:4300]
        per: dict[str, list[float]] = {"old": [], "new": []}
        preds: dict[str, np.ndarray] = {}
        for _rep in range(3):
            for name, fn in (("old", two_branch), ("new", new)):
                members._yeo_johnson = fn
                t = time.perf_counter()
                preds[name] = TabFlexClassifier(random_state=0).fit(X.iloc[:3000], y.iloc[:3000]).predict_proba(
                    X.iloc[3000:])
                per[name].append(time.perf_counter() - t)
        members._yeo_johnson = new
        res["fit_predict"][table] = {"features": int(X.shape[1]), "old_s": min(per["old"]), "new_s": min(per["new"]),
                                     "speedup": min(per["old"]) / min(per["new"]),
                                     "identical": bool(preds["old"].tobytes() == preds["new"].tobytes()),
                                     "load": os.getloadavg()[0]}
        save()
    print(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main(sys.argv[1])
