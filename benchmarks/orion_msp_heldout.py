"""Held-out check of an ORION-MSP checkpoint: the real-data suite's classification tables, split 0, orion-msp only.

    uv run --group bench python benchmarks/orion_msp_heldout.py CHECKPOINT OUT.json [N_ESTIMATORS]

``CHECKPOINT`` is a shipped name or a path stem (``.safetensors`` + ``.json``). It runs
``benchmarks/realdata.py``'s own protocol (split, caps, metrics) with OrionMSPClassifier's defaults
and ``N_ESTIMATORS`` members (1, as in the suite), and writes the mean metrics and every table's
ROC-AUC. Used to decide whether a continued pretraining run ships (it must beat the shipped weights).
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import realdata  # noqa: E402


def main(argv: list[str]) -> dict:
    ck, out = argv[0], Path(argv[1])
    if out.exists():
        raise SystemExit(f"{out} exists; results are never overwritten")
    ne = int(argv[2]) if len(argv) > 2 else 1
    realdata.TABZOO_SETTINGS["orion-msp"] = {"n_estimators": ne, "chunk_size": 2048, "checkpoint": ck}
    realdata.FIT_TIMEOUT_S["orion-msp"] = 300.0
    with contextlib.redirect_stdout(io.StringIO()):
        res = realdata.main(["--models", "orion-msp", "--splits", "1", "--no-curves", "--no-plots",
                             "--budget", "orion-msp=3000"])
    per = {r["table"]: r.get("metrics", {}).get("roc_auc") for r in res["records"] if r["model"] == "orion-msp"}
    result = {"checkpoint": ck, "n_estimators": ne, "extra": {},
              "summary": res["summary"]["classification"]["per_model"]["orion-msp"], "per_table_auc": per,
              "errors": res["errors"], "wall_s": res["wall_s"]}
    out.write_text(json.dumps(result, indent=1), encoding="utf-8")
    print(ck, result["summary"]["mean_roc_auc"], result["summary"]["mean_accuracy"], res["wall_s"])
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
