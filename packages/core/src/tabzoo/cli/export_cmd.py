"""``tabzoo export --format onnx --model STEM --out FILE [--overwrite] [--atol A]``.

Writes a fitted in-context classifier saved with ``est.save(STEM)`` as one ONNX graph that maps raw
numeric rows ``x [rows, features]`` (float32, NaN = missing) to ``probabilities [rows, classes]``, the
encoded context baked in (:func:`tabzoo.batch.onnx.export_onnx`). With onnxruntime installed, probe rows are
scored by both and the file is written only when they agree within ``--atol`` (default 1e-4).
"""

from __future__ import annotations

import argparse
from typing import Any

from tabzoo.cli.argtypes import device, finite, readable_file


def add_parser(sub: Any) -> None:
    p = sub.add_parser("export", help="write a fitted in-context classifier as an ONNX graph (context baked in)")
    p.add_argument("--format", choices=["onnx"], default="onnx", help="onnx (the only format so far)")
    p.add_argument("--model", required=True, type=readable_file,
                   help="the .json of a fitted estimator saved with est.save(stem) (or the stem's .safetensors)")
    p.add_argument("--out", required=True, help="the .onnx file to write (never overwritten without --overwrite)")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    p.add_argument("--atol", type=finite(0.0, strict=True), default=None,
                   help="largest difference to predict_proba allowed on the probe rows (default 1e-4)")
    p.add_argument("--device", default="cpu", type=device, help="device the model is loaded on to trace it (default cpu)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tabzoo.batch.load import load_estimator
    from tabzoo.batch.onnx import DEFAULT_ATOL, export_onnx

    est = load_estimator(args.model, device=args.device)
    report = export_onnx(est, args.out, overwrite=args.overwrite, flag="--out",
                         atol=DEFAULT_ATOL if args.atol is None else float(args.atol))
    check = ("not checked (pip install 'tabzoo-core[onnx]' for onnxruntime, to compare with PyTorch)" if report.max_abs_diff is None else
             f"onnxruntime vs PyTorch on {report.checked_rows} probe rows: max |diff| {report.max_abs_diff:.2e}")
    print(f"wrote {report.path} ({report.bytes / 1e6:.1f} MB): x float32 [rows, {report.n_features}] -> "
          f"probabilities [rows, {len(report.classes)}] for classes {report.classes}; {check}")
    return 0
