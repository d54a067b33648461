"""The capability vocabulary: the properties a model can claim, one string each.

A plugin declares the properties its model has, e.g. in its
:class:`~tabzoo.plugins.ArchitectureSpec` and :class:`~tabzoo.testing.ConformanceCase`::

    from tabzoo.testing import capabilities as cap

    capabilities = cap.IN_CONTEXT_DEFAULTS | {cap.LINEAR_IN_ROWS}

Each property string is also the name of the check that verifies it (``check_<name>`` in
:mod:`tabzoo.testing.checks`), so a test id ``"tabflex-query_independence"`` reads as
"case tabflex, property query independence". Markers (:data:`IN_CONTEXT`,
:data:`ROW_ATTENTION`, :data:`RELATIONAL`) describe the kind of model and run no check.

This module imports nothing heavy (no torch), so the pytest plugin can use it at load.
"""

from __future__ import annotations

# -- markers: what kind of model (no check of their own) ----------------------------------
IN_CONTEXT = "in_context"
"""An in-context model: ``model(x [B, N, F], y_context [B, n_context]) -> [B, N - n_context, n_out]``."""
ROW_ATTENTION = "row_attention"
"""A model that attends across all rows (NPT, MultiTab inter-sample attention)."""
RELATIONAL = "relational"
"""A model over a :class:`~tabzoo.table.RelationalDatabase` (Ramba)."""
MULTITASK = "multitask"
"""A model of several tasks at once (MultiTab): ``forward(x [B, N, F], y [B, N, T], query_mask
[B, N, T]) -> [B, N, sum of the task widths]`` (the multitask protocol)."""
INDEPENDENT_TASKS = "independent_tasks"
"""Each task is predicted from its own labels only: claiming it extends ``task_isolation`` to the
CONTEXT labels of the other tasks (without it, only their query labels are held fixed)."""

# -- properties of in-context models -----------------------------------------------------
CONTEXT_ORDER_INVARIANCE = "context_order_invariance"
"""Permuting context rows (with their labels) leaves the query outputs unchanged."""
QUERY_EQUIVARIANCE = "query_equivariance"
"""Permuting query rows permutes the query outputs the same way."""
QUERY_INDEPENDENCE = "query_independence"
"""Changing query row ``j`` leaves the output of every query row ``i != j`` unchanged."""
NO_CONTEXT_QUERY_LEAK = "no_context_query_leak"
"""Context-row representations do not depend on query rows (proven on masks, then numerically)."""
LABEL_LEAK = "label_leak"
"""Free of label leaks: changing query labels or masked target values changes nothing."""

# -- properties of row-attention and relational models -----------------------------------
ROW_EQUIVARIANCE = "row_equivariance"
"""Permuting all rows (with their labels and query flags) permutes the outputs the same way."""
TASK_ISOLATION = "task_isolation"
"""Multitask: changing task B's labels of query rows (and of context rows, when the model claims
:data:`INDEPENDENT_TASKS`) leaves every output of task A unchanged, for every pair A != B."""
TASK_MASK = "task_mask"
"""Multitask: the outputs split into the declared tasks (one block of the declared width each), and
the per-task query mask is obeyed task by task: a label masked for task t is never read, even
when the same row's other tasks are visible (a model that masks another task's column fails)."""
TIME_CAUSALITY = "time_causality"
"""Rows later than the seed time, and labels not yet available at it, change nothing."""
INPUT_ORDER_INVARIANCE = "input_order_invariance"
"""Shuffling the stored row order of any table of a database changes nothing."""

# -- linear scaling, one capability per axis ---------------------------------------------
LINEAR_IN_ROWS = "linear_in_rows"
LINEAR_IN_FEATURES = "linear_in_features"
LINEAR_IN_SEQUENCE = "linear_in_sequence"
SCALING_AXES: dict[str, str] = {
    LINEAR_IN_ROWS: "rows",
    LINEAR_IN_FEATURES: "features",
    LINEAR_IN_SEQUENCE: "sequence",
}
"""Linear-scaling capability -> axis name. FLOPs and peak memory must grow with slope <= 1.15."""

# -- engineering properties --------------------------------------------------------------
KERNEL_EQUIVALENCE = "kernel_equivalence"
"""Every registered backend of the ops the model uses matches the reference (outputs and gradients)."""
DETERMINISM = "determinism"
"""The same seed gives the same output, whatever the global RNG state."""
CHECKPOINT_ROUNDTRIP = "checkpoint_roundtrip"
"""save_checkpoint -> load_model gives a model with identical outputs."""
BAD_INPUT = "bad_input"
"""Every invalid input class raises TabzooInputError with a message naming the fix."""
BATCH_INDEPENDENCE = "batch_independence"
"""Episodes of one batch do not affect each other: changing episode 1 leaves episode 0 unchanged."""
FINITE_OUTPUTS = "finite_outputs"
"""Every output is finite on valid input (a class absent from the context included); declared
probabilities lie in [0, 1] and sum to 1 over the class axis."""
MISSING_VALUES = "missing_values"
"""The forward accepts NaN features (missing values). Claiming it makes the kit put NaN into the
generated features of every row check (context and query rows), so a leak through imputation
over all rows (query rows included) fails query independence / no context<-query leak, and
NaN outputs fail finite_outputs. A marker: it has no check of its own."""
FEATURE_ORDER_INVARIANCE = "feature_order_invariance"
"""Permuting the feature columns (the same permutation for every row) leaves every output unchanged
(the issue's "feature-permutation equivariance": the outputs have no feature axis, so they are
invariant). Only for models that claim it (set-based feature encoders)."""

MARKERS: frozenset[str] = frozenset({IN_CONTEXT, ROW_ATTENTION, RELATIONAL, MULTITASK, INDEPENDENT_TASKS,
                                     MISSING_VALUES})
PROPERTIES: tuple[str, ...] = (
    CONTEXT_ORDER_INVARIANCE,
    QUERY_EQUIVARIANCE,
    QUERY_INDEPENDENCE,
    NO_CONTEXT_QUERY_LEAK,
    LABEL_LEAK,
    ROW_EQUIVARIANCE,
    TASK_ISOLATION,
    TASK_MASK,
    FEATURE_ORDER_INVARIANCE,
    TIME_CAUSALITY,
    INPUT_ORDER_INVARIANCE,
    LINEAR_IN_ROWS,
    LINEAR_IN_FEATURES,
    LINEAR_IN_SEQUENCE,
    KERNEL_EQUIVALENCE,
    DETERMINISM,
    CHECKPOINT_ROUNDTRIP,
    BAD_INPUT,
    BATCH_INDEPENDENCE,
    FINITE_OUTPUTS,
)
"""Every checkable property, in the order the kit runs them."""
ALL: frozenset[str] = MARKERS | frozenset(PROPERTIES)

UNIVERSAL: frozenset[str] = frozenset(
    {DETERMINISM, CHECKPOINT_ROUNDTRIP, BAD_INPUT, LABEL_LEAK, NO_CONTEXT_QUERY_LEAK, BATCH_INDEPENDENCE,
     FINITE_OUTPUTS}
)
"""Properties §4 of the design requires of every model: the kit runs them for every case with a
model, declared or not (the relational protocol has no query rows or episode batches, so there
``label_leak``, ``no_context_query_leak`` and ``batch_independence`` are covered by time
causality). A model that cannot have one lists it in ``expected_failures`` with a reason; a
check that cannot prove the property reports ``skipped``, which counts as NOT proven."""

MINIMUM: dict[str, frozenset[str]] = {
    "in-context": frozenset({CONTEXT_ORDER_INVARIANCE, QUERY_EQUIVARIANCE, QUERY_INDEPENDENCE, NO_CONTEXT_QUERY_LEAK,
                             LABEL_LEAK, DETERMINISM, BAD_INPUT}),
    "rows": frozenset({ROW_EQUIVARIANCE, LABEL_LEAK, DETERMINISM, BAD_INPUT}),
    "multitask": frozenset({ROW_EQUIVARIANCE, LABEL_LEAK, TASK_ISOLATION, TASK_MASK, DETERMINISM, BAD_INPUT}),
    "relational": frozenset({TIME_CAUSALITY, INPUT_ORDER_INVARIANCE, DETERMINISM, BAD_INPUT}),
}
"""The capabilities a case of each protocol must declare (or list as expected failures with a
reason); :class:`~tabzoo.testing.ConformanceCase` refuses a case that declares fewer."""

IN_CONTEXT_DEFAULTS: frozenset[str] = frozenset(
    {IN_CONTEXT, CONTEXT_ORDER_INVARIANCE, QUERY_EQUIVARIANCE, QUERY_INDEPENDENCE} | UNIVERSAL
)
"""What a strict in-context model (TabPFN-style, query rows read only context) claims."""
ROW_ATTENTION_DEFAULTS: frozenset[str] = frozenset({ROW_ATTENTION, ROW_EQUIVARIANCE, QUERY_EQUIVARIANCE} | UNIVERSAL)
MULTITASK_DEFAULTS: frozenset[str] = frozenset(
    {MULTITASK, ROW_EQUIVARIANCE, QUERY_EQUIVARIANCE, TASK_ISOLATION, TASK_MASK} | UNIVERSAL
)
"""What a multitask row-attention model (MultiTab) claims; add :data:`INDEPENDENT_TASKS` when each
task reads only its own labels."""
RELATIONAL_DEFAULTS: frozenset[str] = frozenset(
    {RELATIONAL, TIME_CAUSALITY, INPUT_ORDER_INVARIANCE, DETERMINISM, CHECKPOINT_ROUNDTRIP, BAD_INPUT, FINITE_OUTPUTS}
)


def validate(capabilities: frozenset[str] | set[str] | tuple[str, ...]) -> frozenset[str]:
    """Return ``capabilities`` as a frozenset; raise on a name outside the vocabulary.

    :raises TabzooInputError: naming the unknown entries and the known ones.
    """
    from tabzoo.errors import TabzooInputError

    caps = frozenset(capabilities)
    unknown = sorted(caps - ALL)
    if unknown:
        raise TabzooInputError(
            f"unknown capabilities {unknown}; use names from tabzoo.testing.capabilities: {sorted(ALL)}."
        )
    return caps
