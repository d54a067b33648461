"""``tabzoo predict --model NAME --train F --test F --target COL [--out F]``.

Fits the architecture's registered scikit-learn estimator (``ArchitectureSpec.estimator``) on
the training file and predicts the test file. Files are CSV or Parquet (by suffix). The output
has a ``prediction`` column and, for classifiers, one ``proba_<class>`` column per class; it is
written as CSV or Parquet by the suffix of ``--out``, or as CSV to stdout without ``--out``.
"""

from __future__ import annotations

import argparse
import io
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
    """Read a CSV or Parquet file into a DataFrame, refusing what pandas would silently repair.

    CSV: UTF-8 (a byte-order mark is stripped); every line must have as many fields as the
    header (pandas would pad a short row with NaN); header names must be unique (pandas would
    rename ``a, a`` to ``a, a.1``). Parquet: flat columns only (no list, struct or map types).

    :raises TabzooInputError: naming the file, the line or column, and the fix.
    """
    from tabzoo.errors import TabzooInputError

    try:
        import pandas as pd
    except ImportError as exc:  # pragma: no cover - pandas is an optional extra
        raise ImportError("tabzoo predict reads files with pandas: pip install 'tabzoo-core[pandas,arrow]'.") from exc
    suffix = Path(path).suffix.lower()
    if suffix not in READERS:
        raise TabzooInputError(f"{path}: unknown file type {suffix!r}; use .csv or .parquet.")
    if not Path(path).is_file():
        raise TabzooInputError(f"{path} does not exist; check the path.")
    if suffix == ".csv":
        text = _check_csv(path)
        try:
            return pd.read_csv(io.StringIO(text))
        except (pd.errors.ParserError, pd.errors.EmptyDataError, ValueError) as exc:
            raise TabzooInputError(f"{path} is not a readable CSV file ({exc}); fix the file.") from exc
    return _read_parquet(path)


def _check_csv(path: str) -> str:
    """The text of a CSV file, after checking its encoding, header and row lengths."""
    import csv

    from tabzoo.errors import TabzooInputError
    from tabzoo.table.errors import DuplicateColumnError, RaggedRowsError

    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TabzooInputError(
            f"{path} is not UTF-8: byte {raw[exc.start]:#04x} on line {line} can't be decoded. Re-save the "
            "file as UTF-8 (e.g. iconv -f latin1 -t utf-8)."
        ) from exc
    if not text.strip():
        raise TabzooInputError(f"{path} is empty; it needs a header line and at least one row.")
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header: list[str] | None = None
        for fields in reader:
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue  # a blank line: pandas skips it too
            if header is None:
                header = fields
                seen: dict[str, int] = {}
                for j, name in enumerate(header):
                    if name in seen:
                        raise DuplicateColumnError(
                            f"{path}: the header names column {name!r} twice (columns {seen[name] + 1} "
                            f"and {j + 1}); rename one so every column name is unique."
                        )
                    seen[name] = j
                continue
            if len(fields) != len(header):
                raise RaggedRowsError(
                    f"{path} line {reader.line_num} has {len(fields)} fields but the header has "
                    f"{len(header)}; fix that line (quote values that contain commas, use an empty "
                    "field for a missing value)."
                )
    except csv.Error as exc:
        raise TabzooInputError(f"{path} line {reader.line_num} is not valid CSV ({exc}); fix that line.") from exc
    return text


def _read_parquet(path: str) -> Any:
    from tabzoo.errors import TabzooInputError
    from tabzoo.table.errors import DTypeError, DuplicateColumnError

    try:
        import pyarrow.parquet as pq
    except ImportError as exc:  # pragma: no cover - pyarrow is an optional extra
        raise ImportError("tabzoo predict reads Parquet with pyarrow: pip install 'tabzoo-core[arrow]'.") from exc
    import pyarrow as pa

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        raise TabzooInputError(f"{path} is not a readable Parquet file ({exc}); check the file.") from exc
    names = table.column_names
    dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if dup is not None:
        raise DuplicateColumnError(f"{path} has two columns named {dup!r}; rename one.")
    for field in table.schema:
        t = field.type
        if pa.types.is_nested(t):
            raise DTypeError(
                f"{path}: column {field.name!r} has the nested type {t}, which no table column holds; "
                "flatten it into scalar columns (e.g. pyarrow.compute.struct_field / list_flatten) first."
            )
    return table.to_pandas()


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
