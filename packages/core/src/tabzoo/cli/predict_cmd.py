"""``tabzoo predict --model NAME --train F --test F --target COL [--out F]``.

Fits the architecture's registered scikit-learn estimator (``ArchitectureSpec.estimator``) on
the training file and predicts the test file. Files are CSV or Parquet (by suffix). The output
has a ``prediction`` column and, for classifiers, one ``proba_<class>`` column per class; it is
written as CSV or Parquet by the suffix of ``--out``, or as CSV to stdout without ``--out``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

READERS = {".csv": "read_csv", ".parquet": "read_parquet", ".pq": "read_parquet"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("predict", help="fit an in-context estimator on a file and predict another")
    p.add_argument("--model", required=True, help="registered architecture name with an estimator")
    p.add_argument("--train", required=True, help="training rows, .csv or .parquet")
    p.add_argument("--test", required=True, help="rows to predict, .csv or .parquet")
    p.add_argument("--target", required=True, help="name of the target column in --train")
    p.add_argument("--out", default=None, help="output .csv or .parquet (default: CSV on stdout)")
    p.add_argument("--estimator", default=None, help="override the estimator, 'pkg.module:Class'")
    p.add_argument("--n-estimators", type=int, default=None, help="ensemble members")
    p.add_argument("--device", default=None, help="auto (default), cpu, cuda, ...")
    p.add_argument("--seed", type=int, default=None, help="random_state of the estimator")
    p.add_argument("--progress", action="store_true", help="progress bar over query chunks")
    p.set_defaults(func=run)


def _read(path: str) -> Any:
    from tabzoo.errors import TabzooInputError

    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas is an optional extra
        raise ImportError("tabzoo predict reads files with pandas: pip install 'tabzoo-core[pandas,arrow]'.") from exc
    suffix = Path(path).suffix.lower()
    if suffix not in READERS:
        raise TabzooInputError(f"{path}: unknown file type {suffix!r}; use .csv or .parquet.")
    if not Path(path).exists():
        raise TabzooInputError(f"{path} does not exist; check the path.")
    return getattr(pd, READERS[suffix])(path)


def _write(frame: Any, path: str | None) -> None:
    from tabzoo.errors import TabzooInputError

    if path is None:
        frame.to_csv(sys.stdout, index=False)
        return
    suffix = Path(path).suffix.lower()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".csv":
        frame.to_csv(path, index=False)
    elif suffix in (".parquet", ".pq"):
        frame.to_parquet(path, index=False)
    else:
        raise TabzooInputError(f"--out {path}: unknown file type {suffix!r}; use .csv or .parquet.")


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from tabzoo.errors import TabzooInputError
    from tabzoo.plugins import get_architecture, resolve_object

    train, test = _read(args.train), _read(args.test)
    if args.target not in train.columns:
        raise TabzooInputError(
            f"--target {args.target!r} is not a column of {args.train}; its columns are {list(train.columns)}."
        )
    y = train[args.target].to_numpy()
    X = train.drop(columns=[args.target])
    X_test = test.drop(columns=[args.target]) if args.target in test.columns else test
    missing = [c for c in X.columns if c not in X_test.columns]
    if missing:
        raise TabzooInputError(f"{args.test} lacks the feature columns {missing} of {args.train}; add them.")
    X_test = X_test[list(X.columns)]

    cls = resolve_object(args.estimator) if args.estimator else get_architecture(args.model).estimator_class()
    est = cls()
    params = est.get_params(deep=False)
    wanted = {"n_estimators": args.n_estimators, "device": args.device, "random_state": args.seed,
              "verbose": True if args.progress else None}
    est.set_params(**{k: v for k, v in wanted.items() if v is not None and k in params})
    est.fit(X, y)
    pd = sys.modules["pandas"]
    out = pd.DataFrame({"prediction": est.predict(X_test)})
    if hasattr(est, "predict_proba"):
        proba = np.asarray(est.predict_proba(X_test))
        for j, c in enumerate(est.classes_):
            out[f"proba_{c}"] = proba[:, j]
    _write(out, args.out)
    return 0
