"""``fine_tune="auto"`` of :class:`~tabzoo_orion_msp.estimators.OrionMSPClassifier`: fine-tune small tables only.

The rule: with at most :data:`AUTO_FINE_TUNE_ROWS` training rows, ``fit`` fine-tunes with the core's
:class:`tabzoo.train.FineTune` defaults (100 steps of 512 context + 256 query rows, the tuned copy kept only
when better on the inner validation split, a progress bar); above, it does not. The estimator's ``fine_tune_``
says what was decided (``fine_tune_["auto"]``), with the training rows and the bound.

Why a size rule: fine-tuning's cost grows with the training rows (each validation, every 25 steps, predicts the
inner validation rows from the inner training rows with every member; the 100 steps themselves are fixed), its
gain did not shrink. On the real-data suite (ORION-MSP alone, ``linear_blend=0``, splits 0 and 1, 1 torch thread on
a shared 2-core machine) fine-tuning raised the mean ROC-AUC in every size band, and took about a minute or less
per table up to 400 training rows, minutes above: ``benchmarks/orion_ft_auto.py`` joins the fine-tuned and untuned
records per band into ``benchmarks/results/orion-ft-auto-2026-11-29.json``, which the package README quotes (a test
checks the quote and that :data:`AUTO_FINE_TUNE_ROWS` is that file's first band).

It is an option, not the default. With the default ``linear_blend="auto"`` the two share one inner split of the
training rows (the estimator's ``inner_split``), so fine-tuning trains on the inner training rows only and the blend
weight is chosen on holdout rows the tuned weights never trained on. On the suite's tables of at most 400 training
rows, splits 0-2 (18 table-splits), the defaults with ``"auto"`` reached a mean ROC-AUC 0.9298 against 0.9282 untuned
(better on 7, worse on 3; split 0 and split 2 slightly lower) at about 50 s per table instead of 4:
``benchmarks/orion_suite_summary.py --vs orion-blend`` -> ``benchmarks/results/orion-suite-summary-ftblend-small-2026-11-29.json``
(the package README quotes it and a test checks the quote). A gain that small and uneven does not pay for 14 times
the seconds on every small table a user fits, so the default stays ``None``.
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
    decision = {
        "on": record is not None,
        "training_rows": int(n_rows),
        "max_rows": AUTO_FINE_TUNE_ROWS,
    }
    if record is not None:
        return dict(record) | {"auto": decision}
    return {
        "kept": False,
        "steps": 0,
        "auto": decision,
        "reason": f"fine_tune='auto': {int(n_rows)} training rows, more than {AUTO_FINE_TUNE_ROWS}",
    }
