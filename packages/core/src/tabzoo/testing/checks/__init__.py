"""One check per property: ``check_<property>(case, *, seed=0, max_examples=10) -> CheckResult``.

:data:`CHECKS` maps each property name of :mod:`tabzoo.testing.capabilities` to its check, in
the order the runner uses. A check never raises for a violated property: it returns a
``"failed"`` result with the discrepancy, the tolerance and a reproducer whose ``replay``
(JSON) the check accepts back as ``replay=`` to run exactly the failing example again.
"""

from __future__ import annotations

from collections.abc import Callable

from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import CheckResult
from tabzoo.testing.checks.determinism import check_determinism
from tabzoo.testing.checks.kernels import INPUT_GENERATORS, check_kernel_equivalence
from tabzoo.testing.checks.misc import check_bad_input, check_checkpoint_roundtrip
from tabzoo.testing.checks.multitask import check_task_isolation, check_task_mask
from tabzoo.testing.checks.relational import (
    check_input_order_invariance,
    check_time_causality,
    toy_database,
)
from tabzoo.testing.checks.rows import (
    check_batch_independence,
    check_context_order_invariance,
    check_label_leak,
    check_no_context_query_leak,
    check_query_equivariance,
    check_query_independence,
    check_row_equivariance,
)
from tabzoo.testing.checks.sanity import check_feature_order_invariance, check_finite_outputs
from tabzoo.testing.checks.scaling import (
    MAX_SLOPE,
    LiveBytes,
    check_linear_in_features,
    check_linear_in_rows,
    check_linear_in_sequence,
    check_linear_scaling,
    fitted_slope,
)

Check = Callable[..., CheckResult]

CHECKS: dict[str, Check] = {
    cap.CONTEXT_ORDER_INVARIANCE: check_context_order_invariance,
    cap.QUERY_EQUIVARIANCE: check_query_equivariance,
    cap.QUERY_INDEPENDENCE: check_query_independence,
    cap.NO_CONTEXT_QUERY_LEAK: check_no_context_query_leak,
    cap.LABEL_LEAK: check_label_leak,
    cap.ROW_EQUIVARIANCE: check_row_equivariance,
    cap.TASK_ISOLATION: check_task_isolation,
    cap.TASK_MASK: check_task_mask,
    cap.FEATURE_ORDER_INVARIANCE: check_feature_order_invariance,
    cap.TIME_CAUSALITY: check_time_causality,
    cap.INPUT_ORDER_INVARIANCE: check_input_order_invariance,
    cap.LINEAR_IN_ROWS: check_linear_in_rows,
    cap.LINEAR_IN_FEATURES: check_linear_in_features,
    cap.LINEAR_IN_SEQUENCE: check_linear_in_sequence,
    cap.KERNEL_EQUIVALENCE: check_kernel_equivalence,
    cap.DETERMINISM: check_determinism,
    cap.CHECKPOINT_ROUNDTRIP: check_checkpoint_roundtrip,
    cap.BAD_INPUT: check_bad_input,
    cap.BATCH_INDEPENDENCE: check_batch_independence,
    cap.FINITE_OUTPUTS: check_finite_outputs,
}
assert tuple(CHECKS) == cap.PROPERTIES

__all__ = [
    "CHECKS",
    "INPUT_GENERATORS",
    "MAX_SLOPE",
    "LiveBytes",
    "check_bad_input",
    "check_batch_independence",
    "check_checkpoint_roundtrip",
    "check_context_order_invariance",
    "check_determinism",
    "check_feature_order_invariance",
    "check_finite_outputs",
    "check_input_order_invariance",
    "check_kernel_equivalence",
    "check_label_leak",
    "check_linear_in_features",
    "check_linear_in_rows",
    "check_linear_in_sequence",
    "check_linear_scaling",
    "check_no_context_query_leak",
    "check_query_equivariance",
    "check_query_independence",
    "check_row_equivariance",
    "check_task_isolation",
    "check_task_mask",
    "check_time_causality",
    "fitted_slope",
    "toy_database",
]
