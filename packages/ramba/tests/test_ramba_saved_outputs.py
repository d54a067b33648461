"""Saved outputs: Ramba's predictions on a small generated shop database must stay what they were
when this file was written (``tests/data/ramba_reference.npz``), so that a change of the core's
training loop, scan kernels or checkpoint path cannot change them unnoticed:

* ``shipped_zero_shot``: the shipped ``ramba-tiny-synth`` checkpoint bound to the task, no training;
* ``fine_tuned`` (+ its training losses): a seeded tiny model fine-tuned for a few steps.

Regenerate (only after a deliberate change of the numbers, and say so in the commit):
``OMP_NUM_THREADS=1 uv run python packages/ramba/tests/test_ramba_saved_outputs.py``.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from tabzoo.testing import saved
from tabzoo_ramba import Ramba, RelationalTask, SamplerConfig, temporal_split
from tabzoo_ramba.conformance import shop_database
from tabzoo_ramba.data import to_seconds
from tabzoo_ramba.pretraining import load_pretrained_model

REFERENCE = Path(__file__).parent / "data" / "ramba_reference.npz"
TASK = RelationalTask("orders", "label", "regression", horizon_s=86400.0, lookback_s=60 * 86400.0)
SMALL = SamplerConfig(n_child=5, max_rows=30)


def reference_outputs() -> dict[str, np.ndarray]:
    """Predictions on the test seeds of one temporal split (fp64 ``[n_test]``) and training losses."""
    torch.set_num_threads(1)
    db, _ = shop_database(0, n_orders=60)
    times = to_seconds(db.table("orders").column("time"))
    val_start, test_start = (np.datetime64(int(np.quantile(times, p)), "s") for p in (0.6, 0.75))
    split = temporal_split(db, TASK, val_start, test_start)
    shipped = Ramba(load_pretrained_model(), sampler=SMALL, progress=False).bind(db, TASK, val_start)
    tuned = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SMALL, seed=2, progress=False)
    tuned.fit(db, TASK, split, steps=6, batch_size=8, eval_every=3)
    return {
        "shipped_zero_shot": shipped.predict(db, split["test"].seeds),
        "fine_tuned": tuned.predict(db, split["test"].seeds),
    }


def test_predictions_reproduce_the_saved_outputs() -> None:  # bitwise where written, else rtol 1e-5
    saved.assert_all_reproduced(REFERENCE, reference_outputs(), atol=1e-6)


if __name__ == "__main__":
    saved.regenerate(REFERENCE, reference_outputs)
