"""TabFlex context strategies (global / local / local+global) on a learning-curve table of the real-data suite.

Same fixed 2,000-row test set and nested training order (seed 7) as ``benchmarks/realdata.py``'s curves.
Used to choose ``context_strategy="auto"``::

    uv run --group bench python benchmarks/tabflex_local_strategies.py diamonds_cut --sizes 1000,10000,50000

Prints one line per training size: ``strategy:accuracy/ROC-AUC/seconds`` (1 torch thread).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))


def main(argv: list[str] | None = None) -> None:
    import torch
    from _realdata_models import _align
    from _realdata_tables import get_table, load_table
    from realdata import _stratified_take
    from sklearn.metrics import accuracy_score, roc_auc_score
    from tabzoo_tabflex import TabFlexClassifier

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("table")
    p.add_argument("--sizes", default="1000,10000,50000")
    p.add_argument("--strategies", default="global,local,local+global")
    p.add_argument("--kw", default="{}", help="further TabFlexClassifier parameters as JSON")
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    kw = json.loads(a.kw)
    X, y = load_table(get_table(a.table))
    yy = y.to_numpy()
    labels = sorted(y.unique().tolist())
    rng = np.random.default_rng(7)
    te = _stratified_take(yy, np.arange(len(yy)), 2000, rng)
    order = rng.permutation(np.setdiff1d(np.arange(len(yy)), te))
    for n in (int(s) for s in a.sizes.split(",")):
        tr = np.sort(order[:n])
        line = [a.table, str(n)]
        for strategy in a.strategies.split(","):
            t0 = time.perf_counter()
            est = TabFlexClassifier(context_strategy=strategy, **kw).fit(X.iloc[tr], yy[tr])
            proba = _align(est.predict_proba(X.iloc[te]), est.classes_, labels)
            yt = yy[te]
            acc = accuracy_score(yt, np.array(labels)[proba.argmax(1)])
            auc = (roc_auc_score(yt == labels[1], proba[:, 1]) if len(labels) == 2
                   else roc_auc_score(yt, proba, multi_class="ovr", labels=labels))
            line.append(f"{strategy}:{acc:.4f}/{auc:.4f}/{time.perf_counter() - t0:.0f}s")
        print(" ".join(line), flush=True)


if __name__ == "__main__":
    main()
