"""Training an NPT on one table (appendix C.1, C.4, C.5).

Each step takes a minibatch of rows (the whole table when it fits in ``batch_size``; otherwise
class-stratified batches), draws stochastic feature and target masks (p = 0.15, 10% of the
selected cells randomised), and minimises ``lam * L_features + (1 - lam) * L_targets``, each
term averaged over its own selected cells, with ``lam`` cosine-annealed from 1 to 0. LAMB with
Lookahead, a flat-then-cosine learning rate, gradient clipping at 1. Early stopping on the
target loss of a validation split, predicted with the fixed context of training rows.
The loop itself (optimiser, schedule, clipping, early stopping, progress, seeds) is the core's
:func:`tabzoo.train.fit.fit`; this module supplies NPT's batches and objective (:class:`NPTTask`).

Modes: ``"inductive"`` (default) trains on the labeled rows only, and rows whose target is
hidden are isolated as at prediction time; ``"semi_supervised"`` and ``"transductive"`` add
``unlabeled`` rows (features only, targets hidden) that every row may read.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tabzoo.deprecation import renamed
from tabzoo.errors import TabzooInputError
from tabzoo.params import check_params
from tabzoo.train.fit import FitConfig, FitResult, fit
from tabzoo.train.optim import flat_then_cosine

from tabzoo_npt.masking import randomise, stochastic_mask
from tabzoo_npt.model import NPT
from tabzoo_npt.predict import predict_cells

__all__ = ["NPTFitConfig", "NPTTask", "cell_losses", "objective", "stratified_batches", "fit_npt", "lambda_schedule",
           "MODES", "MIN_VALIDATION_ROWS", "holdout_rows", "FULL_BATCH_ROWS", "LARGE_TABLE_BATCH", "auto_batch_rows"]

# issue 31: "TrainConfig" also named the core's pretraining config; NPT's is the settings of one fit
__getattr__ = renamed(__name__, {"TrainConfig": "NPTFitConfig"})
logger = logging.getLogger("tabzoo_npt")
MODES = ("inductive", "semi_supervised", "transductive")
#: the fewest rows early stopping reads (ours: on ~200-row tables a 10% split of ~20 rows picked
#: checkpoints by noise, its loss jumping 0.25 -> 0.53 between checks; packages/npt/README.md)
MIN_VALIDATION_ROWS = 50
#: ``batch_size=None`` (the estimators' default): tables of up to this many rows train full-batch,
#: as the paper on its small data (C.1.2); the old fixed default, so their fits are unchanged
FULL_BATCH_ROWS = 1024
#: ... and larger tables in class-stratified minibatches of this many rows (ours: a step of 1,024
#: rows cost ~3 s CPU on a 20-column table with the ``small`` preset, so 300 steps were ~15 min on
#: one core; 256-row steps cost ~4x less; learning curves in benchmarks/npt_converge.py)
LARGE_TABLE_BATCH = 256


def auto_batch_rows(n_rows: int) -> int:
    """Rows per minibatch of ``batch_size=None``: :data:`FULL_BATCH_ROWS` (one batch, the whole
    table) up to that many rows, :data:`LARGE_TABLE_BATCH` above."""
    return FULL_BATCH_ROWS if n_rows <= FULL_BATCH_ROWS else LARGE_TABLE_BATCH


def holdout_rows(n: int, fraction: float, strata: np.ndarray | None, seed: int,
                 min_rows: int = MIN_VALIDATION_ROWS) -> np.ndarray:
    """Indices of the rows held out for early stopping (empty: none).

    ``round(fraction * n)`` rows, but at least ``min_rows``; class-stratified when ``strata [n]``
    is given (a seeded permutation sorted by class, read at ``n_val`` evenly spread positions, so a
    class of at least ``n / n_val`` rows is always represented; the old ``[::n // n_val][:n_val]``
    could drop the last class). When that many rows would
    be more than a quarter of the table (``n < 4 * min_rows``), or ``fraction`` is 0, or ``n < 20``,
    nothing is held out: the fit then runs its fixed step budget and keeps the final weights.
    """
    if not fraction or n < 20:
        return np.zeros(0, dtype=np.int64)
    n_val = max(1, int(round(fraction * n)), int(min_rows))
    if n_val > n // 4:
        return np.zeros(0, dtype=np.int64)
    order = np.random.default_rng(seed).permutation(n)
    if strata is not None:  # stratified: rows sorted by class, picked at evenly spread positions
        order = order[np.argsort(strata[order], kind="stable")]
        return order[(np.arange(n_val) * n) // n_val]
    return order[:n_val]


@dataclass
class NPTFitConfig:
    """NPT's training settings (NPT-Base defaults; see appendix C.1.1); :meth:`fit_config` gives
    the core loop's part of them."""

    steps: int = 1000
    lr: float = 1e-3
    flat_fraction: float = 0.7
    batch_size: int = 1024
    p_feature: float = 0.15
    p_target: float = 0.15
    random_share: float = 0.1
    clip: float = 1.0
    lookahead_k: int = 6
    lookahead_alpha: float = 0.5
    weight_decay: float = 0.0
    eval_every: int = 25
    patience: int = 8
    context_size: int = 1024
    mode: str = "inductive"
    anneal_lambda: bool = True
    anneal_fraction: float = 1.0
    progress: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise TabzooInputError(f"mode={self.mode!r}; use one of {MODES}.")
        check_params(self, positive_int=("steps", "batch_size", "eval_every", "patience", "context_size"),
                     nonnegative_int=("lookahead_k",), positive=("lr",), nonnegative=("clip", "weight_decay"),
                     unit=("p_feature", "p_target", "random_share", "flat_fraction", "lookahead_alpha"))
        if not 0.0 < self.anneal_fraction <= 1.0:
            raise TabzooInputError(f"NPTFitConfig: anneal_fraction={self.anneal_fraction} must be in (0, 1]; "
                                   "1 anneals the trade-off over every step.")
        if self.batch_size < 2:
            raise TabzooInputError(f"NPTFitConfig: batch_size={self.batch_size} must be >= 2; pass a larger one.")

    @property
    def anneal_steps(self) -> int:
        """The step at which the annealed trade-off ``lam`` reaches 0 (all target loss) and stays."""
        return max(1, int(round(self.steps * self.anneal_fraction)))

    @property
    def min_steps(self) -> int:
        """No early stop before the learning rate starts its cosine and, with the annealed
        trade-off, before ``lam`` has fallen to 1/2 (the target loss only dominates from then on);
        the best validation weights are kept throughout. With ``anneal_fraction < 1`` the fit may
        stop as soon as ``lam`` has reached 0 (at :attr:`anneal_steps`), whatever the learning rate."""
        if self.anneal_lambda and self.anneal_fraction < 1.0:
            return self.anneal_steps
        return int(self.steps * max(self.flat_fraction, 0.5 if self.anneal_lambda else 0.0))

    def fit_config(self) -> FitConfig:
        """LAMB + Lookahead, flat-then-cosine over ``steps``, clipping, validation every ``eval_every`` steps."""
        return FitConfig(max_steps=self.steps, optimizer="lamb", lr=self.lr, weight_decay=self.weight_decay,
                         lookahead_k=self.lookahead_k, lookahead_alpha=self.lookahead_alpha, schedule="flat_cosine",
                         flat_fraction=self.flat_fraction, clip_norm=self.clip, eval_every=self.eval_every,
                         patience=self.patience, min_delta=1e-6, min_steps=self.min_steps, seed=self.seed, progress=self.progress,
                         desc="npt fit")


def lambda_schedule(step: int, total: int) -> float:
    """Loss trade-off: cosine from 1 (all feature loss) at step 0 to 0 (all target loss) at
    ``total``, and 0 after it."""
    return flat_then_cosine(step, total, 0.0) if total > 0 else 0.0


def cell_losses(logits: torch.Tensor, values: torch.Tensor, cards: torch.Tensor) -> torch.Tensor:
    """Per-cell loss ``[..., d]``: squared error (numeric) or cross-entropy (categorical).

    :param logits: ``[..., d, out_width]``; :param values: ``[..., d]`` true values (finite where used).
    """
    v = torch.nan_to_num(values)
    mse = (logits[..., 0] - v) ** 2
    width = logits.shape[-1]
    slot = torch.arange(width, device=logits.device)
    invalid = slot >= cards.clamp(min=1)[:, None]  # [d, width]
    masked_logits = logits.masked_fill(invalid, float("-inf"))
    codes = v.long().clamp(min=0, max=width - 1)
    ce = -torch.log_softmax(masked_logits, dim=-1).gather(-1, codes[..., None])[..., 0]
    ce = torch.nan_to_num(ce, posinf=0.0)
    return torch.where(cards > 0, ce, mse)


def objective(per_cell: torch.Tensor, feature_cells: torch.Tensor, target_cells: torch.Tensor,
              lam: float) -> torch.Tensor:
    """``lam * L_features + (1 - lam) * L_targets``, each the mean over its own selected cells
    (a term with no selected cell is 0).

    :param per_cell: ``[..., d]`` losses; :param feature_cells, target_cells: ``[..., d]`` bool.
    """
    lf = (per_cell * feature_cells).sum() / feature_cells.sum().clamp(min=1)
    lt = (per_cell * target_cells).sum() / target_cells.sum().clamp(min=1)
    return lam * lf + (1.0 - lam) * lt


def stratified_batches(n_rows: int, batch_size: int, rng: np.random.Generator,
                       strata: np.ndarray | None = None) -> list[np.ndarray]:
    """Split ``range(n_rows)`` into ``ceil(n / batch_size)`` batches.

    With ``strata`` (e.g. class labels) every batch holds each stratum in proportion (within one
    row): rows are shuffled within their stratum, laid out stratum by stratum, and dealt out
    round-robin.
    """
    n_batches = max(1, -(-n_rows // batch_size))
    perm = rng.permutation(n_rows)
    if strata is not None:
        order = np.argsort(strata[perm], kind="stable")
        perm = perm[order]
    return [perm[b::n_batches] for b in range(n_batches)]


class NPTTask:
    """NPT's side of the core loop: stratified minibatches of rows, stochastic masking and the
    annealed feature/target objective.

    :param data: ``[n, d]`` all rows (labeled first, then unlabeled), NaN = missing.
    :param labeled: ``[n]`` bool, rows whose targets may be read and predicted.
    """

    def __init__(self, model: NPT, data: torch.Tensor, labeled: np.ndarray, targets: tuple[int, ...],
                 cfg: NPTFitConfig, strata: np.ndarray | None) -> None:
        device = data.device
        self.data, self.targets, self.cfg, self.strata = data, targets, cfg, strata
        self.labeled = torch.as_tensor(labeled, device=device)
        self.is_target = torch.zeros(model.n_attributes, dtype=torch.bool, device=device)
        self.is_target[list(targets)] = True
        self.cards: torch.Tensor = model.cards  # type: ignore[assignment]
        self.rng = np.random.default_rng(cfg.seed)  # batches
        self.g = torch.Generator().manual_seed(cfg.seed)  # masks

    def batches(self, epoch: int) -> Iterator[torch.Tensor]:
        """One pass: ``ceil(n / batch_size)`` class-stratified batches of row indices ``[b]``."""
        batches = stratified_batches(len(self.data), self.cfg.batch_size, self.rng, self.strata)
        while batches:
            yield torch.as_tensor(batches.pop(), device=self.data.device)

    def loss(self, model: torch.nn.Module, batch: torch.Tensor, step: int) -> torch.Tensor:
        cfg, targets = self.cfg, self.targets
        vals = self.data[batch]
        missing = torch.isnan(vals)
        lab = self.labeled[batch][:, None]
        target_cells = self.is_target[None, :] & torch.ones_like(missing)
        unlabeled_targets = target_cells & ~lab
        feat = stochastic_mask(~missing & ~target_cells, cfg.p_feature, self.g, cfg.random_share)
        tgt = stochastic_mask(~missing & target_cells & lab, cfg.p_target, self.g, cfg.random_share)
        hidden = missing | feat.masked | tgt.masked | unlabeled_targets
        inputs = randomise(torch.nan_to_num(vals), feat.randomised | tgt.randomised, self.cards, self.g)
        isolated = None
        if cfg.mode == "inductive" and targets:
            isolated = (hidden & target_cells).any(dim=1)[None]
        logits = model(inputs[None], hidden[None], isolated)[0]
        per_cell = cell_losses(logits, vals, self.cards)
        lam = lambda_schedule(step, cfg.anneal_steps) if (cfg.anneal_lambda and targets) else (0.0 if targets else 1.0)
        return objective(per_cell, feat.selected, tgt.selected, lam)

    def state_dict(self) -> dict[str, Any]:
        return {"rng": self.rng.bit_generator.state, "g": self.g.get_state()}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.g.set_state(state["g"])


def fit_npt(
    model: NPT,
    values: np.ndarray,
    targets: tuple[int, ...],
    cfg: NPTFitConfig,
    *,
    validation: np.ndarray | None = None,
    unlabeled: np.ndarray | None = None,
    strata: np.ndarray | None = None,
) -> FitResult:
    """Train ``model`` in place on ``values [n, d]`` (NaN = missing) and return the history.

    :param targets: target attribute indices (empty for pure imputation: feature loss only).
    :param validation: ``[n_val, d]`` rows for early stopping (their targets are predicted).
    :param unlabeled: ``[n_u, d]`` rows without targets (semi-supervised / transductive modes).
    :param strata: ``[n]`` ints for class-stratified minibatches (classification targets).
    """
    if values.ndim != 2 or values.shape[1] != model.n_attributes:
        raise TabzooInputError(f"values must be [rows, {model.n_attributes}]; got {values.shape}.")
    if unlabeled is not None and cfg.mode == "inductive":
        raise TabzooInputError("unlabeled rows need mode='semi_supervised' or 'transductive'; the default "
                               "inductive mode never reads rows other than the training rows.")
    device = next(model.parameters()).device
    all_rows = values if unlabeled is None else np.concatenate([values, unlabeled])
    labeled = np.arange(len(all_rows)) < len(values)
    if strata is not None and unlabeled is not None:
        strata = np.concatenate([strata, np.full(len(unlabeled), -1)])
    data = torch.as_tensor(np.asarray(all_rows, dtype=np.float32), device=device)
    task = NPTTask(model, data, labeled, targets, cfg, strata)
    val = validation if validation is not None and targets and len(validation) else None
    validate = None if val is None else (lambda _m: validation_loss(model, values, val, targets, cfg))
    return fit(model, task, cfg.fit_config(), validate=validate)


def validation_loss(model: NPT, context: np.ndarray, validation: np.ndarray, targets: tuple[int, ...],
                    cfg: NPTFitConfig) -> float:
    """Mean target loss of ``validation`` rows predicted from the fixed training context."""
    hide = np.zeros(validation.shape, dtype=bool)
    hide[:, list(targets)] = True
    logits = predict_cells(model, context, validation, hide, context_size=cfg.context_size, seed=cfg.seed)
    truth = torch.as_tensor(validation, dtype=torch.float32)
    cards: torch.Tensor = model.cards  # type: ignore[assignment]
    per_cell = cell_losses(logits, truth, cards.cpu())
    sel = torch.zeros_like(per_cell, dtype=torch.bool)
    sel[:, list(targets)] = True
    sel &= ~torch.isnan(truth)
    return float((per_cell * sel).sum() / sel.sum().clamp(min=1))
