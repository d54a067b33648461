"""``tabzoo predict --model NAME --train F --test F --target COL [--out F] [--checkpoint PATH]``.

Fits the architecture's registered scikit-learn estimator (``ArchitectureSpec.estimator``) on
the training file and predicts the test rows. Files are CSV or Parquet (by suffix); ``--test`` may
also be a folder of them. The test rows are streamed ``--batch-rows`` at a time through
:func:`tabzoo.batch.predict_dataset` (memory bounded by the batch, one model pass per batch for
labels and probabilities) and written incrementally, renamed into ``--out`` at the end. The output
has a ``prediction`` column and, for classifiers, one ``proba_<class>`` column per class; it is
written as CSV or Parquet by the suffix of ``--out``, or as CSV to stdout without ``--out``.

``--checkpoint PATH`` uses your own weights: the ``--out`` folder of ``tabzoo pretrain`` (its
``model.safetensors`` + ``model.json``) or any checkpoint stem; ``--model`` then defaults to the
architecture the checkpoint's JSON names. ``--fine-tune [STEPS]`` fine-tunes a copy of the weights on the
training file first (:mod:`tabzoo.train.finetune`; off by default) and ``--context-strategy select`` chooses
local (retrieval) or global contexts on an inner split of it (:mod:`tabzoo.train.retrieval`). Needs pandas and pyarrow (``tabzoo-core[pandas,arrow]``),
checked before anything is read. When done it prints
one line on stderr: how many rows, where they went, how long it took.
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import Any

from tabzoo.cli.argtypes import device, readable_file, whole

READERS = {".csv": "read_csv", ".parquet": "read_parquet", ".pq": "read_parquet"}
#: ``--fine-tune`` without a number: the steps of :class:`tabzoo.train.FineTune` (kept in step by a test)
FINE_TUNE_STEPS = 100
#: ``--context-strategy``: :data:`tabzoo.estimators.ensemble.CONTEXT_STRATEGIES` (kept in step by a test; the CLI
#: imports no torch before it runs)
CONTEXT_STRATEGIES = ("auto", "global", "local", "local+global", "select")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("predict", help="fit an in-context estimator on a file and predict another")
    p.add_argument("--model", default=None,
                   help="registered architecture name with an estimator (default with --checkpoint: its architecture)")
    p.add_argument("--train", required=True, type=readable_file, help="training rows, .csv or .parquet")
    p.add_argument("--test", required=True, help="rows to predict: .csv or .parquet, or a folder of them (streamed)")
    p.add_argument("--target", required=True, help="name of the target column in --train")
    p.add_argument("--out", default=None, help="output .csv or .parquet (default: CSV on stdout)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --out file (never an input)")
    p.add_argument("--estimator", default=None, help="override the estimator, 'pkg.module:Class'")
    p.add_argument("--n-estimators", type=whole(1), default=None, help="ensemble members")
    p.add_argument("--device", default=None, type=device, help="auto (default), cpu, cuda, ...")
    p.add_argument("--seed", type=whole(0), default=None, help="random_state of the estimator")
    p.add_argument("--checkpoint", default=None, metavar="PATH",
                   help="your own weights: a `tabzoo pretrain --out` folder or a checkpoint stem")
    p.add_argument("--batch-rows", type=whole(1), default=None, metavar="N",
                   help="test rows read and scored at a time (default 65536); memory grows with it")
    p.add_argument("--keep", action="append", default=[], metavar="COL",
                   help="copy this column of --test into the output, before 'prediction' (repeatable)")
    p.add_argument("--progress", action="store_true", help="progress bar with rows/s and ETA (needs tqdm)")
    p.add_argument("--fine-tune", nargs="?", const=FINE_TUNE_STEPS, default=None, type=whole(1), metavar="STEPS",
                   help="fine-tune a copy of the pretrained weights on --train first (default off; without STEPS "
                        f"{FINE_TUNE_STEPS} steps of tabzoo.train.FineTune's defaults: Adam lr 1e-3, 512 context + 256 "
                        "query rows per episode; kept only if better on an inner validation split of --train)")
    p.add_argument("--context-strategy", default=None, choices=CONTEXT_STRATEGIES,
                   help="global context, local (retrieval) contexts, or 'select': chosen on an inner validation "
                        "split of --train (default: the estimator's, 'auto')")
    p.set_defaults(func=run)


def _read(path: str) -> Any:
    """Read a CSV or Parquet file into a DataFrame, refusing what pandas would silently repair.

    CSV: UTF-8 (a byte-order mark is stripped); every line must have as many fields as the
    header (pandas would pad a short row with NaN); header names must be unique (pandas would
    rename ``a, a`` to ``a, a.1``). Parquet: flat columns only (no list, struct or map types).

    :raises TabzooInputError: naming the file, the line or column, and the fix.
    """
    import pandas as pd  # checked by _check_extras before any work

    from tabzoo.errors import TabzooInputError

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

    try:  # the --train check used os.access, which can say yes to a read the OS then refuses
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise TabzooInputError(f"{path} cannot be read ({exc.strerror or exc}); make it readable or copy "
                               "it.") from exc
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
    import pyarrow as pa  # checked by _check_extras before any work
    import pyarrow.parquet as pq

    from tabzoo.errors import TabzooInputError
    from tabzoo.table.errors import DTypeError, DuplicateColumnError

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


def _check_out(args: argparse.Namespace) -> None:
    """Refuse a bad ``--out`` before any work: unknown type, an input, or (without --overwrite) a file."""
    from tabzoo.errors import TabzooInputError
    from tabzoo.files import check_output

    if args.out is None:
        return
    suffix = Path(args.out).suffix.lower()
    if suffix not in READERS:
        raise TabzooInputError(f"--out {args.out}: unknown file type {suffix!r}; use .csv or .parquet.")
    check_output(args.out, inputs=(args.train, args.test, args.checkpoint), overwrite=args.overwrite)


def _check_extras(args: argparse.Namespace) -> None:
    """Every optional module this run needs, checked before any file is read."""
    from tabzoo.cli._extras import require

    needs = {"pandas": "to read and write tables", "pyarrow": "to stream the --test rows in batches"}
    require("predict", needs)


def _checkpoint(path: str, model: str | None) -> tuple[Path, str]:
    """``(stem, architecture)`` of ``--checkpoint``; a folder means its ``model`` checkpoint."""
    from tabzoo.checkpoint.io import read_json
    from tabzoo.errors import TabzooInputError

    p = Path(path)
    if p.is_dir():
        p = p / "model"  # what `tabzoo pretrain --out DIR` writes
    stem = p.with_suffix("") if p.suffix in (".json", ".safetensors") else p
    meta_path = stem.with_name(stem.name + ".json")
    if not meta_path.is_file():
        raise TabzooInputError(
            f"--checkpoint {path}: {meta_path} does not exist; pass the --out folder of `tabzoo pretrain` "
            "or the stem of a .safetensors + .json checkpoint pair."
        )
    arch = str(read_json(meta_path).get("architecture", ""))
    if model is not None and arch != model:
        raise TabzooInputError(
            f"--checkpoint {path} holds architecture {arch!r}, not --model {model!r}; drop --model or pick "
            f"a checkpoint of {model!r}."
        )
    return stem, arch


def _with_checkpoint(cls: Any, est: Any, stem: Path, arch: str) -> Any:
    """The estimator, loading its model from ``stem`` instead of its shipped weights."""
    from tabzoo.errors import TabzooInputError
    from tabzoo.estimators.base import InContextEstimator

    if not isinstance(est, InContextEstimator):
        raise TabzooInputError(
            f"--checkpoint: the estimator of {arch!r} ({cls.__name__}) trains in fit and takes no "
            "pretrained weights; drop --checkpoint."
        )
    return est.use_checkpoint(stem, architecture=arch)


def run(args: argparse.Namespace) -> int:
    import time

    from tabzoo.batch import DEFAULT_BATCH_ROWS, predict_dataset
    from tabzoo.batch.source import open_source
    from tabzoo.cli._extras import is_missing, note_once
    from tabzoo.errors import TabzooInputError
    from tabzoo.plugins import get_architecture, resolve_object

    _check_extras(args)
    _check_out(args)
    t0 = time.perf_counter()
    stem = None
    if args.checkpoint is not None:
        stem, args.model = _checkpoint(args.checkpoint, args.model)
    if args.model is None and args.estimator is None:
        raise TabzooInputError("tabzoo predict needs --model NAME (see `tabzoo plugins`) or --checkpoint PATH.")
    progress = args.progress
    if progress and is_missing("tqdm"):
        note_once("--progress needs tqdm, which is not installed (pip install 'tabzoo-core[progress]'); "
                  "predicting without a progress bar.")
        progress = False
    train = _read(args.train)
    if args.target not in train.columns:
        raise TabzooInputError(
            f"--target {args.target!r} is not a column of {args.train}; its columns are {list(train.columns)}."
        )
    y = train[args.target].to_numpy()
    X = train.drop(columns=[args.target])
    test = open_source(args.test)  # checks the file(s) and columns; reads no rows
    missing = [c for c in [*X.columns, *args.keep] if c not in test.columns]
    if missing:
        raise TabzooInputError(f"{args.test} lacks the feature columns {missing} of {args.train}; add them.")

    cls = resolve_object(args.estimator) if args.estimator else get_architecture(args.model).estimator_class()
    est = cls()
    params = est.get_params(deep=False)
    wanted = {"n_estimators": args.n_estimators, "device": args.device, "random_state": args.seed}
    est.set_params(**{k: v for k, v in wanted.items() if v is not None and k in params})
    for flag, name, value in (("--fine-tune", "fine_tune", args.fine_tune),
                              ("--context-strategy", "context_strategy", args.context_strategy)):
        if value is None:
            continue
        if name not in params:
            raise TabzooInputError(f"{flag}: {cls.__name__} has no {name} parameter; drop {flag} for this model.")
        est.set_params(**{name: {"steps": value, "progress": progress} if name == "fine_tune" else value})
    if stem is not None:
        est = _with_checkpoint(cls, est, stem, args.model)
    est.fit(X, y)
    features = [str(c) for c in X.columns]
    del train, X, y, test  # only the fitted context stays in memory
    report = predict_dataset(est, args.test, args.out, columns=features, keep=args.keep, overwrite=args.overwrite,
                             batch_rows=args.batch_rows or DEFAULT_BATCH_ROWS, progress=progress,
                             inputs=(args.train, args.checkpoint))
    weights = f"checkpoint {stem}" if stem is not None else "its shipped weights"
    print(f"tabzoo predict: {report.rows} predictions ({len(report.columns)} columns) of {args.model or cls.__name__} "
          f"with {weights} written to {args.out or 'stdout'} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    print(f"tabzoo predict: streamed in {report.batches} batch(es) of at most {report.max_batch_rows} rows, "
          f"{report.rows_per_second:,.0f} rows/s", file=sys.stderr)
    return 0
