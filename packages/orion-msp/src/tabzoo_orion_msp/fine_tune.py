"""``fine_tune="auto"`` of :class:`~tabzoo_orion_msp.estimators.OrionMSPClassifier`: fine-tune small tables only.

The rule: with at most :data:`AUTO_FINE_TUNE_ROWS` training rows, ``fit`` fine-tunes with the core's
:class:`tabzoo.train.FineTune` defaults (100 steps of 512 context + 256 query rows, the tuned copy kept only
when better on the inner validation split, a progress bar); above, it does not. The estimator's ``fine_tune_``
says what was decided (``fine_tune_["auto"]``), with the training rows and the bound.

Why a size rule: fine-tuning's cost grows with the training rows (each validation predicts the inner
validation rows from the inner training rows with every member; the 100 steps themselves are fixed),
its gain did not. Real-data suite, ORION-MSP alone (``linear_blend=0``), 1 torch thread on a shared
2-core machine at load ~3 (``benchmarks/results/realdata-2026-11-29-orion-alone-ft-*.json`` against the
untuned ``realdata-2026-11-29-orion-scored-*.json`` of the same splits; ``benchmarks/orion_ft_auto.py``
prints the table behind these figures):

* at most 400 training rows (fgl_glass, pd_speech, pima, penguins, breast_cancer, olive_area): fine-tuning
  took 17-62 s per table (fit + predict 26-74 s, against 1-2 s untuned);
* 489-923 rows: 49-151 s; 3,000 rows (the suite's cap): 118-187 s, fit + predict 156-260 s.

The gains per split and size band are in :data:`EVIDENCE` (recorded from the result files; a test checks
them against those files). Fine-tuning helped on average in both bands, so the bound is set by time: the
largest size whose fine-tuning stayed near a minute there. It is an option, not the default: the default
``linear_blend="auto"`` reached about the same mean on those small tables untuned (see the package README),
and fine-tuning together with the linear member was not measured (the linear member's weight would be chosen
on an inner holdout whose rows the tuned weights have trained on).
"""

from __future__ import annotations

from typing import Any

from tabzoo.errors import TabzooInputError
from tabzoo.train.finetune import FineTune, resolve_fine_tune

__all__ = ["AUTO", "AUTO_FINE_TUNE_ROWS", "auto_fine_tune", "auto_record", "check_fine_tune"]

#: the value of ``fine_tune`` that turns the size rule on
AUTO = "auto"
#: ``fine_tune="auto"``: fine-tune tables with at most this many training rows
AUTO_FINE_TUNE_ROWS = 400


def check_fine_tune(value: Any) -> None:
    """Refuse a ``fine_tune`` value the estimator cannot use, before anything is fitted."""
    if isinstance(value, str) and value == AUTO:
        return
    try:
        resolve_fine_tune(value)
    except TabzooInputError as exc:
        raise TabzooInputError(
            f"{exc} ORION-MSP also takes fine_tune='auto' (on for tables of at most "
            f"{AUTO_FINE_TUNE_ROWS} training rows)."
        ) from None


def auto_fine_tune(n_rows: int) -> FineTune | None:
    """What ``fine_tune="auto"`` runs on ``n_rows`` training rows: the core's defaults or None (off)."""
    return FineTune() if 0 < int(n_rows) <= AUTO_FINE_TUNE_ROWS else None


def auto_record(n_rows: int, record: dict[str, Any] | None) -> dict[str, Any]:
    """``fine_tune_`` after ``fine_tune="auto"``: the core's record (on) or a skip record (off), plus the decision."""
    on = record is not None
    decision = {"on": on, "training_rows": int(n_rows), "max_rows": AUTO_FINE_TUNE_ROWS}
    if on:
        return dict(record) | {"auto": decision}
    return {
        "kept": False,
        "steps": 0,
        "auto": decision,
        "reason": f"fine_tune='auto': {int(n_rows)} training rows, more than {AUTO_FINE_TUNE_ROWS}",
    }
