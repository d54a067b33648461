"""``tabzoo estimate --model NAME --rows N --features F [--classes C] [--predict-rows M] [--device D]``.

Prints the peak memory and time expected for ``fit`` on ``N x F`` training rows and ``predict`` of
``M`` rows (default ``N``), before any data exists: :func:`tabzoo.estimators.estimate.estimate_in_context`
(the memory estimate the estimators check before allocating; the model's work counted on the meta
device, divided by a matmul throughput measured now on this machine). ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tabzoo.cli.argtypes import whole


def add_parser(sub: Any) -> None:
    p = sub.add_parser("estimate", help="peak memory and time of fit/predict for a table shape, before any work")
    p.add_argument("--model", required=True, help="registered architecture with an in-context estimator")
    p.add_argument("--rows", type=whole(1), required=True, help="training (context) rows")
    p.add_argument("--features", type=whole(1), required=True, help="feature columns")
    p.add_argument("--classes", type=whole(1), default=2, help="classes of the target (default 2)")
    p.add_argument("--predict-rows", type=whole(1), default=None, help="rows to predict (default --rows)")
    p.add_argument("--n-estimators", type=whole(1), default=None, help="ensemble members (default the estimator's)")
    p.add_argument("--device", default="cpu", help="cpu (default), cuda, ...")
    p.add_argument("--json", action="store_true", help="one JSON object on stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from tabzoo.errors import TabzooInputError
    from tabzoo.estimators.base import InContextEstimator, resolve_device
    from tabzoo.estimators.estimate import estimate_in_context
    from tabzoo.kernels.memory import format_bytes, memory_limit
    from tabzoo.plugins import get_architecture

    est = get_architecture(args.model).estimator_class()()
    if not isinstance(est, InContextEstimator):
        raise TabzooInputError(f"tabzoo estimate covers in-context estimators; {args.model!r} ({type(est).__name__}) "
                               "trains in fit and checks its own memory estimate when fit is called.")
    if args.n_estimators is not None:
        est.set_params(n_estimators=args.n_estimators)
    device = str(resolve_device(args.device))
    result = estimate_in_context(est, args.rows, args.features, predict_rows=args.predict_rows, device=device)
    available = memory_limit(device)
    doc = {"model": args.model, "rows": args.rows, "features": args.features, "classes": args.classes,
           "predict_rows": args.predict_rows or args.rows, "device": device, "memory_limit": available,
           **result.as_dict()}
    if args.json:
        print(json.dumps(doc))
        return 0
    print(f"tabzoo estimate: {args.model}, {args.rows} x {args.features} training rows, {doc['predict_rows']} rows to "
          f"predict on {device} ({result.detail}; matmul {result.throughput / 1e9:.1f} GFLOP/s measured now)")
    print(f"  fit:     peak ~{format_bytes(result.fit_bytes)}, ~{result.fit_seconds:.2f} s")
    print(f"  predict: peak ~{format_bytes(result.predict_bytes)}, ~{result.predict_seconds:.2f} s")
    if available is not None and max(result.fit_bytes, result.predict_bytes) > available:
        print(f"  more than the limit {format_bytes(available)}: fit on fewer rows (or context_strategy='local'), "
              "fewer --n-estimators or a smaller chunk_size.", file=sys.stderr)
        return 1
    return 0
