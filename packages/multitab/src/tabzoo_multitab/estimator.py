"""``MultiTabEstimator``: a scikit-learn estimator for multi-output ``y`` mixing binary,
multiclass and regression targets (needs the ``sklearn`` extra).

Example::

    from tabzoo_multitab import MultiTabEstimator
    est = MultiTabEstimator(max_epochs=50).fit(X_train, Y_train)   # Y [n, t]
    Y_hat = est.predict(X_test)                                      # [n, t], original labels
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from sklearn.utils.metaestimators import available_if
from tabzoo.errors import TabzooInputError
from tabzoo.estimators import resolve_device
from tabzoo.estimators.scaling import unstandardize
from tabzoo.estimators.sk import (
    BaseEstimator,
    check_input_array,
    check_is_fitted,
    check_label_types,
    check_n_features_and_names,
    check_params,
)
from tabzoo.kernels.memory import check_memory, inference_bytes, parameter_count, training_bytes

from tabzoo_multitab.baselines import BASELINES
from tabzoo_multitab.config import MultiTabConfig
from tabzoo_multitab.metrics import task_metric
from tabzoo_multitab.model import PREDICT_CHUNK, MultiTabNet
from tabzoo_multitab.preprocess import FeatureEncoder, TargetEncoder
from tabzoo_multitab.selection import SELECTIONS, PerTaskSelector
from tabzoo_multitab.training import MONITORS, TaskData, fit_model, fit_temperatures, select_context

__all__ = ["MultiTabEstimator", "ARCHITECTURES"]

ARCHITECTURES = ("multitab", "mmoe", "ple", "shared_bottom", "stl")
CALIBRATIONS = ("temperature", None)


def _has_classification(est: Any) -> bool:
    """``predict_proba`` exists unless the fitted targets are all regression."""
    return not hasattr(est, "tasks_") or any(t.kind != "regression" for t in est.tasks_)


class MultiTabEstimator(BaseEstimator):
    """Multitask tabular estimator: MultiTab-Net, or one of the MLP baselines.

    :param architecture: ``"multitab"`` (MultiTab-Net), ``"mmoe"``, ``"ple"``, ``"shared_bottom"`` or ``"stl"``.
    :param task_types: per target ``"auto"``, ``"binary"``, ``"multiclass"``, ``"classification"``
        or ``"regression"``; ``None`` = auto, the core's rule (:mod:`tabzoo.table.task_types`): non-numbers
        are classification, non-whole numbers regression, whole numbers classification up to 10 distinct
        values and regression above, with a ``TaskTypeWarning`` where the column's dtype disagrees.
        The types used are in ``tasks_``.
    :param task_weights: loss weight per task (``None`` = all 1).
    :param d_embed, n_layers, n_heads, row_heads, mask, inter_sample, dropout, ff_mult, head_hidden: MultiTab-Net
        settings (see :class:`~tabzoo_multitab.config.MultiTabConfig`); ``d_embed``/``dropout``
        also apply to the baselines.
        ``n_layers`` (encoder blocks) defaults to 1 since 2026-11-29 (issue 26; 2 before, still
        available): with ``select="guarded"`` it has the best grid Δm of the models run (see
        ``select``), and its epoch is ~1.7x faster than two blocks'. The issue's epoch time within
        1.5x MMoE's is narrowly missed at 3 tasks: at 3,000 rows / batch 256, the validation pass
        included, the default (one block, guarded, word dropout masks) takes 1.53x / 1.46x / 1.53x /
        1.57x (3 tasks) and 1.35x / 1.41x / 1.47x / 1.43x (5 tasks) MMoE's epoch in four side-by-side
        runs (``benchmarks/results/multitab-epoch-words{,-b,-c,-d}-2026-11-29.json``; with
        ``nn.Dropout`` masks 1.49-1.69x / 1.50-1.53x; two blocks 2.6-2.9x); per training step it
        does 2.4x / 2.7x MMoE's matmul and attention FLOPs. The "lean step" (``row_heads=1``,
        ``dropout_sites="hidden"``) meets it (1.38-1.44x / 1.24-1.34x in runs c-f) at a cost in
        quality (see ``dropout_sites``). ``row_heads``: inter-sample attention heads (default 4; 1
        attends the flattened row as one head: fewer, larger matmuls).
    :param hidden: hidden widths of the baselines' MLPs.
    :param n_context: rows of the fixed, seeded prediction context (MultiTab-Net).
    :param max_epochs, batch_size, lr, weight_decay, patience: training, with early stopping.
        ``batch_size="auto"`` (default) = the power of two nearest below ``n_train / 8``, within
        [32, 256]: at least ~8 optimizer steps per epoch, so that a small table is not left
        under-trained (and its probabilities far too soft) by an epoch budget; a number fixes it.
    :param early_stopping: what picks the epoch whose weights are kept: ``"loss"`` (default) = the
        validation loss (log-loss / cross-entropy for classification, MSE for regression), which
        keeps the probabilities calibrated; ``"metric"`` = the mean per-task validation metric (AUC
        for classification, explained variance for regression), blind to calibration: it keeps the
        first epoch that ranks well, often with far too soft probabilities.
    :param select: how the kept weights are chosen (:mod:`tabzoo_multitab.selection`), for every
        architecture: ``"guarded"`` (default since 2026-11-29, issue 26) = per-task selection with a
        guard against a noisy small validation split (:func:`~tabzoo_multitab.selection.guard`):
        training runs as under ``"per_task"``, then task ``t`` keeps its own best epoch only if its
        per-row validation losses there beat those of the joint-best epoch by more than 2 standard
        errors of the paired difference (one-sided, fixed a priori), else it takes the joint-best
        weights. ``selection_`` records per task the weights used (``"own"`` / ``"joint"``), the
        epochs, the statistic and why. ``"joint"`` (the default before) = one set of weights, the
        best epoch of the criterion over all tasks. ``"per_task"`` = each task keeps the weights of
        its own best epoch by its own validation score (the ``early_stopping`` criterion of that
        task alone). Under ``"per_task"`` and ``"guarded"`` training stops when no task has improved
        for ``patience`` epochs, and task ``t`` is predicted with its weights (``task_model_``: one
        forward pass and one copy of the weights per distinct epoch used; ``task_epochs_`` holds the
        epochs). With one task, or without validation rows, all three are joint selection.
        Why guarded, with ``n_layers=1`` (the default pair; MultiTab-Bench grid, 18 settings x 3
        seeds, the grid's recipe): Δm against the single-task MLP +0.71 %, positive in 15 of 18
        settings, the best mean of the models run on all 18 (MMoE +0.45 %, MMoE per-task +0.58 %;
        MMoE guarded, run on 12 settings only, +0.84 % there;
        ``benchmarks/results/multitab-grid-sizes-guarded-all-summary-2026-11-29.json``); on the four
        real tables 3 of 4 above the MLP, mean -0.16 %
        (``multitab-real-guarded-summary-2026-11-29.json``; MMoE guarded 1 of 4, -0.61 %). The old default (two blocks, joint):
        11 of 18 settings positive and below MMoE on the grid; 2 of 4 real tables, mean +0.27 %
        (higher: the guarded pair loses 3.15 % on AER CPS1985). Unguarded ``"per_task"`` lifted the
        grid (+0.59 to +0.86 % on the 300- and 1,000-row settings) but lowered the real tables
        (+0.27 to -1.05 %; CPS1985's log wage, 107 validation rows, took epoch 3 in two of three
        seeds; ``multitab-real-pertask-summary-2026-11-29.json``): on a small validation split one
        task's best epoch is mostly noise, which the guard asks evidence against. Cost: longer fits
        (a task that still improves keeps the run going), a copy of the weights per improving
        epoch, and up to ``t`` forward passes at prediction.
    :param calibration: ``"temperature"`` (default) = after training, one temperature per
        classification task, fitted on the held-out rows (the validation slice or ``eval_set``) to
        minimise their log-loss, divides the logits in :meth:`predict_proba` (``temperatures_``);
        predictions (argmax / sign) never change. ``None`` = raw logits. Without held-out rows
        (fewer than 10 training rows) the temperature stays 1.
    :param schedule: learning rate over training: ``"constant"`` or ``"cosine"`` (from ``lr`` to 0
        over the ``max_epochs`` budget).
    :param task_tokens: ``"multi"`` (one token per task, the paper's design) or ``"single"`` (one
        shared task token read by every task head; the paper's Table 2 ablation).
    :param row_dim: width of the inter-sample block (MultiTab-Net): ``0`` = the whole flattened row
        (the paper), ``r > 0`` = projected down to ``r`` and back (see
        :class:`~tabzoo_multitab.config.MultiTabConfig`).
    :param row_scope: ``"rows"`` (the paper: inter-sample attention reads the other rows) or
        ``"self"`` (each row reads only itself: a per-row layer over the flattened row).
    :param row_ff_mult: the inter-sample feed-forward's width as a multiple of its input width.
        Default 1 (the paper's square block). ``3`` converges in fewer epochs: at a 40-epoch budget
        it raised Δm against the single-task MLP in 12 of 12 paired MultiTab-Bench runs at token
        width 8 (-6.3 vs -8.3 %) and 5 of 6 at width 16, but trained to convergence (150 epochs,
        patience 15) the two were even (-5.7 vs -5.6 %, 3 of 6), and on 4 real tables too (issue 26;
        ``benchmarks/results/multitab-options-{b,e16,long}-2026-11-27.json``), while each epoch
        costs 7-19% more; so it is an option for a small epoch budget, not the default.
    :param skip_hidden: width of the wide-and-deep skip path (MultiTab-Net; a departure from the
        paper): the flattened feature tokens of a row through ``skip_layers`` x ``(Linear -> GELU ->
        dropout)`` then a ``Linear``, added to the task tokens before the heads. Default 128: on
        MultiTab-Bench the paper's backbone alone fits the degree-3 tasks worse than an MLP (issue 26); chosen on validation EV in
        ``benchmarks/results/multitab-backbone-2026-11-29.json``, then run on the whole grid
        (``multitab-grid-sizes-skip{,2}-summary-2026-11-29.json``). ``0`` = the paper's backbone.
    :param skip_layers: hidden layers of the skip path (default 2: better than 1 on validation EV
        in ``benchmarks/results/multitab-backbone-b-2026-11-29.json``).
    :param dropout_masks: MultiTab-Net's dropout mask draws: ``"words"`` (default since 2026-11-29,
        late: 16-bit random words, :class:`~tabzoo_multitab.dropout.WordDropout`; cheaper, the same
        probability, other random numbers) or ``"bernoulli"`` (torch's ``nn.Dropout``, before); see
        :class:`~tabzoo_multitab.config.MultiTabConfig`. The baselines keep ``nn.Dropout``. The word
        masks keep the quality of the step before: MultiTab-Bench grid (18 settings x 3 seeds, the
        grid's recipe) Δm against the single-task MLP +0.74 %, positive in 15 of 18 settings (MMoE
        +0.45 %, MMoE with per-task selection +0.58 %); real tables 2 of 4 above the MLP, mean +0.06 %
        (``benchmarks/results/multitab-grid-sizes-words-summary-2026-11-29.json``,
        ``multitab-real-words-summary-2026-11-29.json``); with ``nn.Dropout`` +0.71 %, 15 of 18; 3 of
        4 tables, -0.16 %.
    :param dropout_sites: MultiTab-Net: ``"all"`` (default) or ``"hidden"`` (dropout only after
        hidden activations, none on the residual branches); see
        :class:`~tabzoo_multitab.config.MultiTabConfig`. With ``row_heads=1`` and the word masks,
        ``"hidden"`` is the "lean step" (the estimator's default for a few hours on 2026-11-29): it
        meets issue 26's epoch-time target (see ``n_layers``) but loses quality: grid +0.47 %, 12 of
        18 settings; real tables 2 of 4, mean -0.72 %
        (``multitab-grid-sizes-lean-all-summary-2026-11-29.json``,
        ``multitab-real-lean-summary-2026-11-29.json``). The loss goes with this option: the lean
        step with four row heads scored +0.44 %, 12 of 18
        (``multitab-grid-sizes-lean-rh4-summary-2026-11-29.json``). Cheaper steps that keep every
        dropout site lost more: a 64-wide skip path with the word masks +0.18 %, 10 of 18
        (``multitab-grid-sizes-words-skip64-summary-2026-11-29.json``), and the "lite" step (also
        ``ff_mult=1`` and one row head) was stopped after 14 draws
        (``multitab-grid-sizes-lite-summary-2026-11-29.json``).
    :param num_embedding, plr_frequencies, plr_sigma: numeric embeddings: ``"linear"`` (default, the
        paper) or ``"plr"`` (Gorishniy et al. 2022; bounded, so it extrapolates polynomial tails
        badly: worse than linear on validation in the same diagnosis).
    :param val_fraction: share of the training rows held out for early stopping and calibration
        (none below 10 rows).
    :param random_state: seed of the split, the initialisation, the shuffling and the context.
    :param device: ``"cpu"``, ``"cuda"`` or ``"auto"``.
    :param progress: show a tqdm bar over epochs.

    Memory: ``fit`` estimates its peak (parameters counted without allocating, gradients and Adam
    state, token and attention activations of a batch and of a prediction chunk) before it builds
    the model, and raises :class:`~tabzoo.errors.MemoryLimitError` with the estimate and the fix
    above the limit (``TABZOO_MEMORY_LIMIT``, default the available memory). The parameters grow
    with the square of the column count: that check is MultiTab-Net's width limit.
    """

    def __init__(self, architecture: str = "multitab", task_types: Sequence[str] | None = None,
                 task_weights: Sequence[float] | None = None, d_embed: int = 16, n_layers: int = 1,
                 n_heads: int = 4, row_heads: int = 4, mask: str = "T-/->T", inter_sample: bool = True,
                 dropout: float = 0.1, ff_mult: int = 2, head_hidden: int = 32,
                 hidden: Sequence[int] = (256, 128), n_context: int = 256,
                 max_epochs: int = 100, batch_size: int | str = "auto", lr: float = 1e-3, weight_decay: float = 1e-5,
                 patience: int = 10, val_fraction: float = 0.15, random_state: int = 0, device: str = "cpu",
                 progress: bool = False, early_stopping: str = "loss", calibration: str | None = "temperature",
                 schedule: str = "constant", task_tokens: str = "multi", row_dim: int = 0,
                 row_scope: str = "rows", row_ff_mult: int = 1, num_embedding: str = "linear",
                 plr_frequencies: int = 16, plr_sigma: float = 0.1, skip_hidden: int = 128,
                 skip_layers: int = 2, select: str = "guarded", dropout_masks: str = "words",
                 dropout_sites: str = "all") -> None:
        self.architecture = architecture
        self.task_types = task_types
        self.task_weights = task_weights
        self.d_embed = d_embed
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.row_heads = row_heads
        self.mask = mask
        self.inter_sample = inter_sample
        self.dropout = dropout
        self.ff_mult = ff_mult
        self.head_hidden = head_hidden
        self.hidden = hidden
        self.n_context = n_context
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.patience = patience
        self.val_fraction = val_fraction
        self.random_state = random_state
        self.device = device
        self.progress = progress
        self.early_stopping = early_stopping
        self.calibration = calibration
        self.schedule = schedule
        self.task_tokens = task_tokens
        self.row_dim = row_dim
        self.row_scope = row_scope
        self.row_ff_mult = row_ff_mult
        self.num_embedding = num_embedding
        self.plr_frequencies = plr_frequencies
        self.plr_sigma = plr_sigma
        self.skip_hidden = skip_hidden
        self.skip_layers = skip_layers
        self.select = select
        self.dropout_masks = dropout_masks
        self.dropout_sites = dropout_sites

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True  # object columns of strings are categorical features
        tags.input_tags.categorical = True
        tags.non_deterministic = False
        return tags

    # -- fit --------------------------------------------------------------------------------
    def _targets(self, y: Any, n_rows: int) -> tuple[np.ndarray, list[str], bool]:
        if y is None:
            raise TabzooInputError(f"{type(self).__name__} requires y to be passed, but the target y is None; call fit(X, y).")
        names = [str(c) for c in y.columns] if hasattr(y, "columns") else None
        if hasattr(y, "to_numpy"):
            y = y.to_numpy()
        if not isinstance(y, np.ndarray):  # a list: numpy would turn ["a", 1] into strings
            raw = np.asarray(y, dtype=object)
            for col in (raw.T if raw.ndim == 2 else [raw]):
                check_label_types(col)
        Y = np.asarray(y)
        if Y.dtype.kind == "O":
            for col in (Y.T if Y.ndim == 2 else [Y]):
                check_label_types(col)
        single = Y.ndim == 1
        if single:
            Y = Y[:, None]
        if Y.ndim != 2 or Y.shape[1] < 1:
            raise TabzooInputError(f"y must be 1-d or 2-d [rows, targets], got shape {Y.shape}.")
        if Y.shape[0] != n_rows:
            raise TabzooInputError(f"X has {n_rows} rows but y has {Y.shape[0]}; pass one target row per X row.")
        return Y, names or [f"target{j}" for j in range(Y.shape[1])], single

    def _build(self) -> torch.nn.Module:
        enc, tasks = self.encoder_, self.target_encoder_.tasks
        if self.architecture == "multitab":
            width = (enc.n_num + len(enc.cardinalities) + (1 if self.task_tokens == "single" else len(tasks))) * self.d_embed
            row_heads = self.row_heads if (int(self.row_dim) or width) % self.row_heads == 0 else 1
            cfg = MultiTabConfig(n_num=enc.n_num, cat_cardinalities=enc.cardinalities, tasks=tuple(tasks),
                                 d_embed=self.d_embed, n_layers=self.n_layers, n_heads=self.n_heads,
                                 row_heads=row_heads, mask=self.mask, inter_sample=self.inter_sample,
                                 dropout=self.dropout, ff_mult=self.ff_mult, head_hidden=self.head_hidden,
                                 task_tokens=self.task_tokens, row_dim=int(self.row_dim),
                                 row_scope=self.row_scope, row_ff_mult=int(self.row_ff_mult),
                                 num_embedding=self.num_embedding, plr_frequencies=int(self.plr_frequencies),
                                 plr_sigma=float(self.plr_sigma), skip_hidden=int(self.skip_hidden),
                                 skip_layers=int(self.skip_layers), dropout_masks=self.dropout_masks,
                                 dropout_sites=self.dropout_sites)
            return MultiTabNet(cfg)
        if self.architecture not in BASELINES:
            raise TabzooInputError(f"architecture {self.architecture!r} is unknown; use one of {ARCHITECTURES}.")
        return BASELINES[self.architecture](enc.n_num, enc.cardinalities, tasks, d_embed=self.d_embed,
                                            hidden=tuple(self.hidden), dropout=self.dropout)

    def _check_memory(self, n_train: int, n_rows: int) -> None:
        """Refuse before building when the estimated peak of fit or predict exceeds the limit
        (:mod:`tabzoo.kernels.memory`). MultiTab-Net's row attention and heads see all
        ``tokens * d_embed`` values of a row, so its parameters grow with the square of the column
        count: this check is its width limit."""
        params = parameter_count(self._build)
        tokens = self.encoder_.n_num + len(self.encoder_.cardinalities) + len(self.tasks_)
        d, layers = int(self.d_embed), int(self.n_layers)
        ctx = int(self.n_context) if self.architecture == "multitab" else 0
        row_heads = int(self.row_heads) if self.inter_sample else 0

        def acts(rows: int) -> float:  # per layer: token states and both feed-forwards, then the attention
            # maps: within each row (n_heads x tokens^2 per row) and across rows (row_heads x rows^2; a row is
            # one (tokens * d_embed)-wide vector there). Measured peaks: 0.45-0.8x this
            # (benchmarks/results/memory-limits-2026-11-27.json).
            return layers * (rows * tokens * d * (int(self.ff_mult) + 7) + int(self.n_heads) * rows * tokens * tokens
                             + row_heads * rows * rows)

        batch = self._batch_size(n_train) + ctx
        peak = max(training_bytes(params, acts(batch)), inference_bytes(params, acts(min(n_rows, PREDICT_CHUNK) + ctx)))
        check_memory(f"{type(self).__name__}.fit", peak, "use fewer features (the parameters grow with the "
                     "square of the column count), a smaller d_embed, n_layers, batch_size or n_context",
                     device=self.device_, detail=f"{params:,} parameters for {tokens} tokens x d_embed {d}")

    def _batch_size(self, n_train: int) -> int:
        """The minibatch size for ``n_train`` training rows (``batch_size="auto"``: see the class doc)."""
        if self.batch_size == "auto":
            return int(min(256, max(32, 2 ** math.floor(math.log2(max(1.0, n_train / 8))))))
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, (int, np.integer)) or self.batch_size < 1:
            raise TabzooInputError(f"batch_size={self.batch_size!r}: use 'auto' or an integer >= 1.")
        return int(self.batch_size)

    def _data(self, X: Any, Yenc: np.ndarray | None = None) -> TaskData:
        x_num, x_cat = self.encoder_.transform(X)
        return TaskData(torch.from_numpy(x_num), torch.from_numpy(x_cat) if x_cat is not None else None,
                        torch.from_numpy(Yenc) if Yenc is not None else None).to(self.device_)

    def fit(self, X: Any, y: Any, eval_set: tuple[Any, Any] | None = None) -> MultiTabEstimator:
        """Fit on ``X [n, d]`` and ``y [n]`` or ``[n, t]``; returns ``self``.

        :param eval_set: ``(X_val, y_val)`` for early stopping instead of holding out
            ``val_fraction`` of the training rows.
        """
        check_params(self, positive_int=("d_embed", "n_layers", "n_heads", "row_heads", "ff_mult", "row_ff_mult", "head_hidden",
                                         "n_context", "max_epochs", "patience", "plr_frequencies", "skip_layers"),
                     nonnegative_int=("row_dim", "skip_hidden"), positive=("lr", "plr_sigma"), nonnegative=("weight_decay",),
                     fraction=("dropout", "val_fraction"))
        self._batch_size(2)  # refuses a bad batch_size now, not after the preprocessing
        resolve_device(self.device)
        X = check_input_array(X)
        if X.shape[0] < 2:
            raise TabzooInputError(
                f"n_samples={X.shape[0]}: got 1 sample, need at least 2 training rows; pass more rows."
            )
        check_n_features_and_names(self, X, reset=True)
        Y, names, single = self._targets(y, X.shape[0])
        if self.architecture not in ARCHITECTURES:
            raise TabzooInputError(f"architecture {self.architecture!r} is unknown; use one of {ARCHITECTURES}.")
        if self.early_stopping not in MONITORS:
            raise TabzooInputError(f"early_stopping={self.early_stopping!r}: use one of {MONITORS}.")
        if self.calibration not in CALIBRATIONS:
            raise TabzooInputError(f"calibration={self.calibration!r}: use one of {CALIBRATIONS}.")
        if self.select not in SELECTIONS:
            raise TabzooInputError(f"select={self.select!r}: use one of {SELECTIONS}.")
        self.device_ = resolve_device(self.device)
        self.encoder_ = FeatureEncoder().fit(X)
        self.target_encoder_ = TargetEncoder().fit(Y, names, self.task_types)
        self.tasks_ = tuple(self.target_encoder_.tasks)
        self.single_output_ = single
        self.classes_ = [c for c in self.target_encoder_.classes]
        Yenc = self.target_encoder_.transform(Y)
        data = self._data(X, Yenc)
        n = len(data)
        rng = np.random.default_rng(self.random_state)
        n_val = int(round(self.val_fraction * n)) if n >= 10 and eval_set is None else 0
        perm = torch.from_numpy(rng.permutation(n)).to(self.device_)
        train, val = data.rows(perm[n_val:]), (data.rows(perm[:n_val]) if n_val else None)
        if eval_set is not None:
            Xv = check_input_array(eval_set[0])
            Yv, _, _ = self._targets(eval_set[1], Xv.shape[0])
            if Yv.shape[1] != Y.shape[1]:
                raise TabzooInputError(f"eval_set has {Yv.shape[1]} targets, y has {Y.shape[1]}; pass the same targets.")
            val = self._data(Xv, self.target_encoder_.transform(Yv))
        self._check_memory(len(train), n)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(self.random_state)
            self.model_ = self._build().to(self.device_)
        self.context_ = select_context(train, self.n_context, self.random_state) if self.architecture == "multitab" else None
        selector = (PerTaskSelector(len(self.tasks_)) if self.select in ("per_task", "guarded") and val is not None and len(val)
                    else None)
        self.fit_result_ = fit_model(
            self.model_, self.tasks_, train, val, task_weights=self.task_weights, max_epochs=self.max_epochs,
            batch_size=self._batch_size(len(train)), lr=self.lr, weight_decay=self.weight_decay, patience=self.patience,
            seed=self.random_state, context=self.context_, progress=self.progress, monitor=self.early_stopping,
            schedule=self.schedule, selector=selector,
        )
        self.n_epochs_ = self.fit_result_.epochs
        # per-task selection: task t predicts with the weights of its own best epoch (guarded: only
        # where the validation rows give evidence for it, else with the joint-best weights)
        if selector is None:
            best = self.fit_result_.best_epoch
            self.selection_ = [{"weights": "joint", "epoch": best, "own_epoch": None, "joint_epoch": best, "z": None,
                                "reason": "joint selection" if self.select == "joint" else "no validation rows"}
                               for _ in self.tasks_]
            self.task_model_ = None
        else:
            self.selection_ = (selector.guarded() if self.select == "guarded" else
                               [{"weights": "own", "epoch": e, "own_epoch": e, "joint_epoch": selector.joint_epoch,
                                 "z": None, "reason": "per-task selection"} for e in selector.epochs])
            self.task_model_ = selector.model(self.model_, self.tasks_, self.selection_ if self.select == "guarded" else None)
        self.task_epochs_ = [int(c["epoch"]) for c in self.selection_]
        held_out = val if val is not None and len(val) else None
        self.temperatures_ = (fit_temperatures(self._predictor(), held_out, self.tasks_, self.context_)
                              if self.calibration == "temperature" and held_out is not None
                              else [1.0] * len(self.tasks_))
        return self

    # -- predict ----------------------------------------------------------------------------
    def _predictor(self) -> Any:
        """The network that predicts: ``task_model_`` under per-task selection, else ``model_``."""
        task_model = getattr(self, "task_model_", None)
        return task_model if task_model is not None else self.model_

    def _outputs(self, X: Any) -> list[np.ndarray]:
        check_is_fitted(self, "model_")
        X = check_input_array(X)
        check_n_features_and_names(self, X, reset=False)
        data = self._data(X)
        out = self._predictor().predict(data.x_num, data.x_cat, self.context_)
        return [p.float().cpu().numpy() for p in torch.split(out, [t.n_out for t in self.tasks_], dim=-1)]

    def predict_outputs(self, X: Any) -> list[np.ndarray]:
        """Raw per-task outputs: logits ``[n, 1]`` (binary), ``[n, C]`` (multiclass), de-standardised value ``[n, 1]``."""
        check_is_fitted(self, "model_")
        outs = self._outputs(X)
        for j, (t, (mu, sd)) in enumerate(zip(self.tasks_, self.target_encoder_.stats, strict=True)):
            if t.kind == "regression":
                outs[j] = unstandardize(outs[j], mu, sd)
        return outs

    @available_if(_has_classification)
    def predict_proba(self, X: Any) -> list[np.ndarray] | np.ndarray:
        """Class probabilities, as scikit-learn's multi-output classifiers give them: a list with
        one ``[n, n_classes]`` array per *classification* task, in task order (regression tasks have
        none; :attr:`proba_tasks_` names the task of each array, and ``classes_[i]`` of task ``i`` its
        columns);
        the array itself when fitted on a 1-d ``y``. Logits are divided by ``temperatures_``."""
        probs: list[np.ndarray] = []
        outs = self._outputs(X)
        temps = getattr(self, "temperatures_", [1.0] * len(self.tasks_))
        for t, o, temp in zip(self.tasks_, outs, temps, strict=True):
            o = o.astype(np.float64) / float(temp)
            if t.kind == "binary":
                p1 = 1.0 / (1.0 + np.exp(-o[:, 0]))
                probs.append(np.stack([1 - p1, p1], 1))
            elif t.kind == "multiclass":
                e = np.exp(o - o.max(1, keepdims=True))
                probs.append(e / e.sum(1, keepdims=True))
        return probs[0] if self.single_output_ else probs

    @property
    def proba_tasks_(self) -> list[str]:
        """Names of the classification tasks, in the order of :meth:`predict_proba`'s arrays."""
        check_is_fitted(self, "model_")
        return [t.name for t in self.tasks_ if t.kind != "regression"]

    def predict(self, X: Any) -> np.ndarray:
        """Predictions, one column per task: ``[n, t]`` (``[n]`` when fitted on a 1-d ``y``); class
        labels for classification tasks, values for regression tasks. Columns of one dtype when
        every task's labels share it (e.g. all float), else an object array."""
        check_is_fitted(self, "model_")
        cols = []
        for t, o, cls in zip(self.tasks_, self.predict_outputs(X), self.classes_, strict=True):
            if t.kind == "regression":
                cols.append(o[:, 0].astype(np.float64))
            elif t.kind == "binary":
                assert cls is not None
                cols.append(cls[(o[:, 0] > 0).astype(np.int64)])
            else:
                assert cls is not None
                cols.append(cls[o.argmax(1)])
        kinds = {c.dtype.kind for c in cols}
        if len(cols) == 1:
            Y = cols[0][:, None]
        elif len(kinds) == 1 and len({c.dtype for c in cols}) == 1:
            Y = np.stack(cols, 1)
        else:
            Y = np.empty((len(cols[0]), len(cols)), dtype=object)
            for j, c in enumerate(cols):
                Y[:, j] = c
        return Y[:, 0] if self.single_output_ else Y

    def task_scores(self, X: Any, y: Any) -> list[float]:
        """Per-task metrics: ROC AUC (classification), explained variance (regression)."""
        check_is_fitted(self, "model_")
        Y, _, _ = self._targets(y, np.asarray(X).shape[0] if not hasattr(X, "shape") else X.shape[0])
        Yenc = self.target_encoder_.transform(Y)
        outs = self._outputs(X)
        return [task_metric(t.kind, Yenc[:, j], o) for j, (t, o) in enumerate(zip(self.tasks_, outs, strict=True))]

    # -- pickle-free save / load (tabzoo_multitab.persist) ------------------------------------
    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Save the fitted estimator as two safetensors + JSON pairs at stem ``path`` (the state, and
        the weights with every per-task snapshot; :mod:`tabzoo_multitab.persist`); returns the stem.
        An existing file is refused unless ``overwrite=True``."""
        from tabzoo_multitab.persist import save_estimator

        return save_estimator(self, path, overwrite=overwrite)

    @classmethod
    def load(cls, path: str | Path, device: str | None = None) -> MultiTabEstimator:
        """The estimator saved at stem ``path`` by :meth:`save` (``device`` overrides the saved one);
        its predictions are bit-identical to the saved estimator's. Raises
        :class:`~tabzoo.errors.CheckpointError` naming a missing file, or for a pair saved by another
        class or model, or whose weights do not fit."""
        from tabzoo_multitab.persist import load_estimator

        return load_estimator(cls, path, device)  # type: ignore[no-any-return]

    def score(self, X: Any, y: Any) -> float:
        """Mean of :meth:`task_scores` (the early-stopping criterion)."""
        s = [v for v in self.task_scores(X, y) if v == v]
        return float(np.mean(s)) if s else float("nan")
