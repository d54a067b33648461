"""What the kit checks (:class:`ConformanceCase`) and what it reports (:class:`CheckResult`).

A case bundles a small config, the callables under test and the capabilities claimed. Three
*protocols* cover the architectures of tabzoo; the kit generates inputs for them itself:

``"in-context"`` (TabFlex, ORION-MSP, the example plugin)
    ``forward(model, x, y, n_context) -> [B, N - n_context, ...]`` with ``x [B, N, F]`` float32
    (context rows first), ``y [B, N]`` the labels of ALL rows (query labels included, so a
    label leak can be detected) and ``n_context`` an int. The default forward is the in-context
    protocol ``model(x, y[:, :n_context])``.
``"rows"`` (NPT, MultiTab inter-sample attention)
    ``forward(model, x, y, query_mask) -> [B, N, ...]`` with ``query_mask [B, N]`` bool
    (``True`` = this row's target is masked and must not be read). Default:
    ``model(x, y, query_mask)``.
``"multitask"`` (MultiTab, any model of several tasks)
    ``forward(model, x, y, query_mask) -> [B, N, sum of task widths]`` with ``y [B, N, T]`` (one
    label column per declared task, :attr:`ConformanceCase.tasks`) and ``query_mask [B, N, T]``
    bool (``True`` = this row's label of this task is masked and must not be read). Task ``t``'s
    outputs are the next :func:`task_width` columns. Every rows check runs on it (per task), plus
    ``task_isolation`` and ``task_mask``. Default: ``model(x, y, query_mask)``.
``"relational"`` (Ramba)
    ``forward(model, db, seeds) -> [n_seeds, ...]`` with ``db`` a
    :class:`~tabzoo.table.RelationalDatabase` and ``seeds`` a list of
    ``(table, primary_key, timestamp)``: predict the ``target`` column of these rows at these
    times. ``make_database(seed) -> (db, seeds)`` may replace the kit's generated database.

Everything else is optional and only sharpens the checks; e.g. ``masks`` lets the kit prove
leak-freeness statically with :func:`tabzoo.masks.leaks` before it checks numerically.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tabzoo.errors import TabzooInputError
from tabzoo.testing import capabilities as cap

PROTOCOLS = ("in-context", "rows", "multitask", "relational")
ROW_PROTOCOLS = ("in-context", "rows", "multitask")
"""Protocols over a batch of row sets (generated ``x [B, N, F]``)."""
MASKED_PROTOCOLS = ("rows", "multitask")
"""Protocols whose forward takes a query mask (every row's output is returned)."""
OUTPUTS = ("auto", "logits", "probabilities", "values")
"""What a forward returns along its last axis (``finite_outputs`` checks probabilities further)."""
STATUSES = ("passed", "failed", "xfail", "skipped", "error")
MAX_TOL_SCALE = 100.0
"""Upper limit of ``ConformanceCase.tol_scale``: a wider tolerance proves nothing at float32."""
MIN_REASON_CHARS, MIN_REASON_WORDS = 20, 4
TEST_LINK = re.compile(r"[\w./-]+\.py::[\w.\[\]-]+")
"""How an expected failure's reason names the test that shows the failure: ``path/test_x.py::test_y``."""
"""An expected failure's reason must be at least a sentence."""

# (atol, rtol) per dtype name; the kit multiplies both by ``ConformanceCase.tol_scale``.
TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-10, 1e-10),
    "float32": (1e-5, 1e-5),
    "float16": (2e-3, 2e-3),
    "bfloat16": (1e-2, 1e-2),
}


@dataclass(frozen=True)
class ScalingAxis:
    """How to grow one input axis for a linear-scaling check.

    :param make_inputs: ``make_inputs(n, seed) -> tuple``: the positional arguments after
        ``model`` of the case's forward, with the axis at size ``n``.
    :param base_n: smallest size; the check runs ``n, 2n, 4n, 8n``.
    :param make_model: ``make_model(n, seed) -> model`` when the model's shape depends on ``n``
        (e.g. ``max_features``); by default ``case.make_model(seed)``.
    :param cost: ``cost(n) -> float | Cost``, analytic FLOPs of one forward at size ``n``
        (typically a sum of ``Backend.cost(inputs).flops`` of the ops called). By default the
        FLOPs are counted with :class:`torch.utils.flop_counter.FlopCounterMode`.
    """

    make_inputs: Callable[[int, int], tuple[Any, ...]]
    base_n: int = 64
    make_model: Callable[[int, int], Any] | None = None
    cost: Callable[[int], Any] | None = None


@dataclass(frozen=True)
class ConformanceCase:
    """One model configuration held to the properties it claims.

    :param name: case name, used in test ids ``"<name>-<check>"`` and by ``--tabzoo-conformance``.
    :param make_model: ``make_model(seed) -> model``: build a SMALL model (any callable; an
        ``nn.Module`` is put in eval mode). ``None`` for cases that only test kernels.
    :param capabilities: names from :mod:`tabzoo.testing.capabilities`.
    :param config: the small config ``make_model`` uses; stored in checkpoints (JSON-able).
    :param protocol: ``"in-context"``, ``"rows"`` or ``"relational"`` (see the module doc).
    :param forward: the call under test; ``None`` = the protocol's default.
    :param context_repr: ``context_repr(model, x, y, n_context) -> [B, n_context, ...]``, the
        representations of context rows, for the numeric no-context<-query-leak check.
    :param masks: ``masks(n_context, n_rows) -> list[Mask]``, the attention masks of the stack
        (first layer first) over row positions, for the static leak proofs.
    :param n_features: feature count of generated inputs (keep within the model's maximum).
    :param n_classes: classes of generated labels (``0`` = regression, values ~ N(0, 1)).
    :param max_rows: the largest row count of the small search phase (the large phase and
        ``--thorough`` go further, see :mod:`tabzoo.testing.checks._common`).
    :param max_features: the largest feature count the model accepts; the size search draws
        feature counts from ``n_features`` up to it (``None``: ``n_features`` only, a fixed width).
    :param max_classes: the largest class count the model accepts; the size search draws class
        counts up to it (``None``: ``n_classes`` only).
    :param tasks: multitask protocol: the classes of each task (``0`` = regression), e.g.
        ``(2, 3, 0)``; task ``t``'s output block has :func:`task_width` ``(tasks[t])`` columns.
    :param max_tasks: multitask: the largest task count the size search draws (needs
        ``make_sized``; ``None``: the declared tasks only).
    :param make_sized: ``make_sized(seed, sizes) -> model`` for models whose shape follows the
        input sizes (``sizes["n_features"]``, ``sizes["n_classes"]``, ``sizes["tasks"]``): the
        size search builds the model this way whenever an example leaves the declared sizes.
    :param scaling_axes: capability (e.g. ``LINEAR_IN_ROWS``) -> :class:`ScalingAxis` or
        ``(make_inputs, base_n)``. In-context cases get a default rows axis.
    :param bad_inputs: ``bad_inputs(model) -> iterable of (description, thunk)``; each thunk
        must raise :class:`~tabzoo.errors.TabzooInputError`. ADDED to the protocol's defaults
        (:func:`tabzoo.testing.checks.misc.default_bad_inputs`), never in their place.
    :param kernel_ops: ops whose backends the kernel-equivalence check compares (``None`` = all).
    :param kernel_inputs: extra input generators ``op -> fn(seed, dtype, device) -> dict``.
    :param make_database: relational only: ``make_database(seed) -> (db, seeds)``; with a
        ``scale`` keyword (``make_database(seed, scale=k)``: every table ``k`` times its rows) the
        kit also searches database sizes (issue 23 item 2), else it checks this size only.
    :param target: relational only: ``(table, column)`` the model predicts.
    :param horizon: relational only: a label at time ``t`` is available from ``t + horizon``.
    :param column_horizons: relational only: ``{column of the target's table: seconds}``, the
        other outcome columns of that table (e.g. derived from the target: a ``delayed`` flag next
        to ``dep_delay``) and when each becomes available after its row's time. The time-causality
        check perturbs each within its own horizon (like the target) and places boundary rows one
        second inside it. Without ``make_database`` the kit's toy database declares its derived
        ``delayed`` column at ``horizon`` unless given here.
    :param dtype: ``"float32"`` (default), ``"bfloat16"``, ...: the dtype of generated inputs.
    :param tol_scale: multiplies the dtype tolerances of :data:`TOLERANCES`; at most
        :data:`MAX_TOL_SCALE`. Results report the effective tolerance.
    :param device: where the model and inputs live.
    :param expected_failures: ``{check: reason}``: checks known to fail, each with its reason
        of at least one sentence that names the test showing the failure (``... shown by
        tests/test_x.py::test_y``; reported as ``xfail`` and listed in every summary). A minimum
        capability of the protocol (:data:`~tabzoo.testing.capabilities.MINIMUM`) that the model
        lacks must be listed here.
    :param waivers: ``{check: reason}``: checks that may end ``skipped`` (NOT proven) here, each
        with its reason of at least one sentence, e.g. a kernel check whose only other backends
        need a GPU. :class:`~tabzoo.testing.runner.ConformanceCheck` turns any other skip into a
        failure; a waived skip stays a skip whose message starts with ``waived:`` and the reason.
    :param outputs: what the forward returns: ``"logits"``, ``"probabilities"`` (the kit checks
        they lie in [0, 1] and sum to 1 over the last axis), ``"values"`` (regression), or
        ``"auto"`` (logits when ``n_classes`` > 0, else values). Always checked to be finite.
    :param factory: ``"module:function"``: how a FRESH process rebuilds this case (the
        determinism check runs the case again in a child process): ``function(**factory_args)``
        returns the case or a list of cases (the one of this name is used). Not needed for a case
        registered through the ``tabzoo_conformance_cases`` hook.
    :param factory_args: JSON-able keyword arguments of ``factory``.
    :param description: one line for reports.
    :param architecture: the registered :class:`~tabzoo.plugins.ArchitectureSpec` this case
        tests (default: the one named like the case, if any); its capabilities must equal the
        case's.

    Construction raises :class:`~tabzoo.errors.TabzooInputError` when a case with a model
    declares fewer than its protocol's minimum capabilities.
    """

    name: str
    make_model: Callable[[int], Any] | None = None
    capabilities: frozenset[str] = frozenset()
    config: Mapping[str, Any] = field(default_factory=dict)
    protocol: str = "in-context"
    forward: Callable[..., Any] | None = None
    context_repr: Callable[..., Any] | None = None
    masks: Callable[[int, int], list[Any]] | None = None
    n_features: int = 4
    n_classes: int = 3
    max_rows: int = 24
    max_features: int | None = None
    max_classes: int | None = None
    tasks: tuple[int, ...] = ()
    max_tasks: int | None = None
    make_sized: Callable[[int, Mapping[str, Any]], Any] | None = None
    scaling_axes: Mapping[str, Any] = field(default_factory=dict)
    bad_inputs: Callable[[Any], Iterable[tuple[str, Callable[[], Any]]]] | None = None
    kernel_ops: tuple[str, ...] | None = None
    kernel_inputs: Mapping[str, Callable[..., dict[str, Any]]] = field(default_factory=dict)
    make_database: Callable[[int], tuple[Any, list[tuple[str, Any, Any]]]] | None = None
    target: tuple[str, str] | None = None
    horizon: float = 0.0
    column_horizons: Mapping[str, float] = field(default_factory=dict)
    dtype: str = "float32"
    tol_scale: float = 1.0
    device: str = "cpu"
    expected_failures: Mapping[str, str] = field(default_factory=dict)
    waivers: Mapping[str, str] = field(default_factory=dict)
    outputs: str = "auto"
    factory: str | None = None
    factory_args: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    architecture: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name or any(c.isspace() for c in self.name):
            raise TabzooInputError(
                f"conformance case name {self.name!r} is invalid: use a short name without spaces, e.g. 'my_model'."
            )
        if self.protocol not in PROTOCOLS:
            raise TabzooInputError(f"case {self.name!r}: protocol {self.protocol!r} is not one of {PROTOCOLS}.")
        if self.outputs not in OUTPUTS:
            raise TabzooInputError(f"case {self.name!r}: outputs {self.outputs!r} is not one of {OUTPUTS}.")
        if self.dtype not in TOLERANCES:
            raise TabzooInputError(f"case {self.name!r}: dtype {self.dtype!r}; use one of {sorted(TOLERANCES)}.")
        object.__setattr__(self, "capabilities", cap.validate(self.capabilities))
        axes = {}
        for key, value in dict(self.scaling_axes).items():
            if key not in cap.SCALING_AXES:
                raise TabzooInputError(
                    f"case {self.name!r}: scaling axis {key!r} unknown; use one of {sorted(cap.SCALING_AXES)}."
                )
            axes[key] = value if isinstance(value, ScalingAxis) else ScalingAxis(*value)
        object.__setattr__(self, "scaling_axes", axes)
        self._check_reasons("waivers", "why it cannot be proven here, e.g. 'the fused backends need a CUDA GPU'")
        self._check_reasons("expected_failures", "why, and naming the test that shows the failure "
                            "('... shown by tests/test_x.py::test_y')")
        if not (isinstance(self.tol_scale, (int, float)) and 0 < self.tol_scale <= MAX_TOL_SCALE):
            raise TabzooInputError(
                f"case {self.name!r}: tol_scale={self.tol_scale!r} must be in (0, {MAX_TOL_SCALE:g}]; a looser "
                "tolerance proves nothing. Fix the numerics, or list the check in expected_failures with a reason."
            )
        if self.make_model is not None:
            missing = sorted(cap.MINIMUM[self.protocol] - self.capabilities - set(self.expected_failures))
            if missing:
                raise TabzooInputError(
                    f"case {self.name!r} ({self.protocol!r} protocol) does not declare the minimum capabilities "
                    f"{missing}; declare them (capabilities=...), or list each in expected_failures with the "
                    "reason your model cannot have it."
                )
        self._check_sizes()
        self._check_horizons()

    def _check_horizons(self) -> None:
        """``column_horizons``: relational only, finite seconds >= 0, never the target column."""
        horizons = dict(self.column_horizons)
        target_column = self.target[1] if self.target else None
        for column, h in horizons.items():
            ok = isinstance(h, (int, float)) and not isinstance(h, bool) and math.isfinite(h) and h >= 0
            if self.protocol != "relational" or not isinstance(column, str) or column == target_column or not ok:
                raise TabzooInputError(
                    f"case {self.name!r}: column_horizons needs the relational protocol and {{column: seconds >= 0}} "
                    f"for columns other than the target {target_column!r} (its horizon is `horizon`); got "
                    f"{column!r}: {h!r} on the {self.protocol!r} protocol.")
        object.__setattr__(self, "column_horizons", {c: float(h) for c, h in sorted(horizons.items())})

    def _check_reasons(self, what: str, why: str) -> None:
        """Every entry of ``self.<what>`` is ``{known check: a reason of at least one sentence}``."""
        for check, reason in dict(getattr(self, what)).items():
            linked = what != "expected_failures" or links_test(reason)
            if check not in cap.PROPERTIES or not is_reason(reason) or not linked:
                raise TabzooInputError(
                    f"case {self.name!r}: {what} needs {{check: reason}} with a check from {list(cap.PROPERTIES)} "
                    f"and a reason of at least one sentence ({MIN_REASON_WORDS}+ words, {MIN_REASON_CHARS}+ "
                    f"characters) saying {why}; got {check!r}: {reason!r}."
                )

    def _check_sizes(self) -> None:
        """Refuse size bounds below the declared sizes and task lists the protocol cannot take."""
        object.__setattr__(self, "tasks", tuple(int(k) for k in self.tasks))
        if (self.protocol == "multitask") != bool(self.tasks) or (self.tasks and len(self.tasks) < 2):
            raise TabzooInputError(
                f"case {self.name!r}: the multitask protocol needs tasks=(classes of each task, 0 = regression) with "
                f"at least two tasks, and only it takes tasks; got protocol {self.protocol!r}, tasks {self.tasks!r}.")
        if any(k < 0 or k == 1 for k in self.tasks):
            raise TabzooInputError(f"case {self.name!r}: tasks {self.tasks!r}: a task has 0 (regression) or 2+ classes.")
        for bound, at, what in ((self.max_features, self.n_features, "max_features"),
                                (self.max_classes, self.n_classes, "max_classes"),
                                (self.max_tasks, len(self.tasks), "max_tasks")):
            if bound is not None and bound < at:
                raise TabzooInputError(f"case {self.name!r}: {what}={bound} is below the declared size {at}; "
                                       f"raise it or leave it None.")
        if self.max_tasks is not None and self.max_tasks > len(self.tasks) and self.make_sized is None:
            raise TabzooInputError(f"case {self.name!r}: max_tasks={self.max_tasks} needs make_sized(seed, sizes) "
                                   "to build a model for another task list.")

    @property
    def task_widths(self) -> tuple[int, ...]:
        """Output columns of each task (multitask protocol); ``()`` otherwise."""
        return tuple(task_width(k) for k in self.tasks)

    # -- helpers the checks use --------------------------------------------------------------
    def effective_tolerance(self) -> dict[str, float]:
        """``{"atol", "rtol", "tol_scale"}`` actually used for elementwise comparisons."""
        atol, rtol = self.tolerance()
        return {"atol": atol, "rtol": rtol, "tol_scale": float(self.tol_scale)}

    def tolerance(self, scale: float = 1.0) -> tuple[float, float]:
        """``(atol, rtol)`` for this case's dtype, scaled by ``tol_scale * scale``."""
        atol, rtol = TOLERANCES[self.dtype]
        s = self.tol_scale * scale
        return atol * s, rtol * s

    def build(self, seed: int) -> Any:
        """``make_model(seed)`` on ``device``, in eval mode when it is an ``nn.Module``."""
        if self.make_model is None:
            raise TabzooInputError(f"case {self.name!r} has no make_model; this check needs a model.")
        model = self.make_model(seed)
        if hasattr(model, "eval") and hasattr(model, "to"):
            model = model.to(self.device).eval()
        return model

    def call(self, model: Any, *args: Any) -> Any:
        """Run the case's forward (or the protocol's default) on ``args``."""
        if self.forward is not None:
            return self.forward(model, *args)
        if self.protocol == "in-context":
            x, y, n_context = args
            return model(x, y[:, :n_context])
        return model(*args)


def task_width(n_classes: int) -> int:
    """Output columns of one task: ``n_classes`` logits for 3+ classes, one logit for a binary
    task, one value for regression (``n_classes == 0``)."""
    return n_classes if n_classes >= 3 else 1


def task_name(index: int, n_classes: int) -> str:
    """How failure messages name task ``index`` of the multitask protocol, e.g. ``task 1 (3 classes)``."""
    kind = "regression" if not n_classes else "binary" if n_classes == 2 else f"{n_classes} classes"
    return f"task {index} ({kind})"


def links_test(reason: object) -> bool:
    """True when ``reason`` names a test (``path/test_x.py::test_y``) that shows the failure: an
    expected failure must link one (issue 23 item 7), so that the waiver can be checked."""
    return isinstance(reason, str) and TEST_LINK.search(reason) is not None


def is_reason(reason: object) -> bool:
    """True for a reason of at least one sentence (enough characters and words)."""
    return (isinstance(reason, str) and len(reason.strip()) >= MIN_REASON_CHARS
            and len(reason.split()) >= MIN_REASON_WORDS)


@dataclass
class CheckResult:
    """The outcome of one check on one case.

    :param check: the property checked (a capability name).
    :param case: the case name.
    :param status: ``"passed"``, ``"failed"``, ``"xfail"``, ``"skipped"`` or ``"error"``.
    :param discrepancy: how far the property was from holding (max abs difference, slope, ...).
    :param tolerance: what ``discrepancy`` had to stay within (``None`` when not numeric).
    :param reproducer: minimal failing example: ``seed``, ``sizes``, ``permutation``, ...
    :param message: one readable sentence naming the property and by how much it failed.
    :param details: extra measurements (e.g. the wall-time slope of the scaling check).
    """

    check: str
    case: str
    status: str
    discrepancy: float | None = None
    tolerance: float | None = None
    reproducer: dict[str, Any] = field(default_factory=dict)
    message: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True unless the check failed or errored without being expected to."""
        return self.status in ("passed", "xfail", "skipped")

    @property
    def proven(self) -> bool:
        """True when the property is established: passed (or a declared expected failure).
        A ``skipped`` check is not proven."""
        return self.status in ("passed", "xfail")

    @property
    def replay(self) -> str | None:
        """The one-line replay command of a failure, or ``None``."""
        spec = self.reproducer.get("replay")
        if not spec:
            return None
        return f"tabzoo conformance {self.case} --replay '{spec}'"

    @property
    def rerun(self) -> str:
        """The command that reruns this whole check with the reproducer's seed."""
        seed = self.reproducer.get("seed", self.reproducer.get("model_seed", 0))
        return f"tabzoo conformance {self.case} --check {self.check} --seed {seed}"

    def as_dict(self) -> dict[str, Any]:
        """A JSON-able dict with stable keys (non-finite numbers become strings)."""

        def clean(v: Any) -> Any:
            if isinstance(v, float) and not math.isfinite(v):
                return str(v)
            if isinstance(v, dict):
                return {str(k): clean(x) for k, x in v.items()}
            if isinstance(v, (list, tuple)):
                return [clean(x) for x in v]
            if isinstance(v, (str, int, float, bool)) or v is None:
                return v
            return repr(v)

        return clean(
            {
                "case": self.case,
                "check": self.check,
                "status": self.status,
                "discrepancy": self.discrepancy,
                "tolerance": self.tolerance,
                "reproducer": self.reproducer,
                "message": self.message,
                "details": self.details,
            }
        )

    def __str__(self) -> str:
        """One line; a failure or error ends with how to reproduce it (the example's replay
        command, else the check's rerun command with its seed)."""
        text = f"{self.case}-{self.check}: {self.status.upper()} {self.message}".rstrip()
        if self.status in ("failed", "error") and self.check in cap.PROPERTIES:
            text += f" [reproduce: {self.replay or self.rerun}]"
        return text


class ConformanceError(AssertionError):
    """Raised by ``check_conformance(on_fail="raise")``; ``.results`` holds every result."""

    def __init__(self, message: str, results: list[CheckResult]) -> None:
        super().__init__(message)
        self.results = results
