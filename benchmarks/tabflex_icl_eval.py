"""tabflex-icl vs tabflex-small on bundled scikit-learn tables, and accuracy against context rows.

Prints JSON (machine, torch, threads). Same stratified splits for both checkpoints.
"""

from __future__ import annotations

import json
import platform
import sys
import time

import numpy as np
import torch
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.metrics import accuracy_score, roc_auc_score
from sklearn.model_selection import train_test_split
from tabzoo_tabflex.estimators import TabFlexClassifier

torch.set_num_threads(1)
CKPTS = ("tabflex-small", "tabflex-icl")
SETS = {"breast_cancer": load_breast_cancer, "wine": load_wine, "digits": load_digits}


def score(ckpt, xtr, ytr, xte, yte):
    t = time.perf_counter()
    clf = TabFlexClassifier(checkpoint=ckpt, n_estimators=4, random_state=0).fit(xtr, ytr)
    p = clf.predict_proba(xte)
    dt = time.perf_counter() - t
    auc = roc_auc_score(yte, p[:, 1]) if p.shape[1] == 2 else roc_auc_score(yte, p, multi_class="ovr")
    return {"accuracy": float(accuracy_score(yte, clf.classes_[p.argmax(1)])), "roc_auc": float(auc), "s": dt}


def main() -> None:
    out = {"machine": platform.processor() or platform.machine(), "torch": torch.__version__, "threads": 1,
           "python": sys.version.split()[0], "splits": 3, "tables": {}, "context_curve": {}}
    for name, load in SETS.items():
        x, y = load(return_X_y=True)
        res = {c: [] for c in CKPTS}
        for seed in range(3):
            xtr, xte, ytr, yte = train_test_split(x, y, test_size=0.3, stratify=y, random_state=seed)
            for c in CKPTS:
                res[c].append(score(c, xtr, ytr, xte, yte))
        out["tables"][name] = {c: {k: float(np.mean([r[k] for r in v])) for k in ("accuracy", "roc_auc", "s")}
                               for c, v in res.items()}
    # accuracy against context rows on the largest bundled table (digits, 1,797 rows)
    x, y = load_digits(return_X_y=True)
    xtr, xte, ytr, yte = train_test_split(x, y, test_size=400, stratify=y, random_state=0)
    for c in CKPTS:
        curve = {}
        for n in (100, 300, 700, 1397):
            idx = np.random.default_rng(0).permutation(len(xtr))[:n]
            curve[n] = score(c, xtr[idx], ytr[idx], xte, yte)["accuracy"]
        out["context_curve"][c] = curve
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
