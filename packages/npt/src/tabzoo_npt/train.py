"""Training an NPT on one table (appendix C.1, C.4, C.5).

Each step takes a minibatch of rows (the whole table when it fits in ``batch_size``; otherwise
class-stratified batches), draws stochastic feature and target masks (p = 0.15, 10% of the
selected cells randomised), and minimises ``lam * L_features + (1 - lam) * L_targets``, each
term averaged over its own selected cells, with ``lam`` cosine-annealed from 1 to 0. LAMB with
Lookahead, a flat-then-cosine learning rate, gradient clipping at 1. Early stopping on the
target loss of a validation split, predicted with the fixed context of training rows.

Modes: ``"inductive"`` (default) trains on the labeled rows only, and rows whose target is
hidden are isolated as at prediction time; ``"semi_supervised"`` and ``"transductive"`` add
``unlabeled`` rows (features only, targets hidden) that every row may read.
"""

from __future__ import annotations

import copy
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tabzoo.errors import TabzooInputError

from tabzoo_npt.masking import randomise, stochastic_mask
from tabzoo_npt.model import NPT
from tabzoo_npt.optim import Lamb, Lookahead, flat_then_cosine, lambda_schedule
from tabzoo_npt.predict import predict_cells

__all__ = ["TrainConfig", "TrainResult", "cell_losses", "objective", "stratified_batches", "fit_npt", "MODES"]

logger = logging.getLogger("tabzoo_npt")
MODES = ("inductive", "semi_supervised", "transductive")


@dataclass
class TrainConfig:
    """Optimisation settings (NPT-Base defaults; see appendix C.1.1)."""

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
    progress: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise TabzooInputError(f"mode={self.mode!r}; use one of {MODES}.")
        if self.steps < 1 or self.batch_size < 2:
            raise TabzooInputError("steps must be >= 1 and batch_size >= 2.")
        for name in ("p_feature", "p_target", "random_share", "flat_fraction"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise TabzooInputError(f"{name}={getattr(self, name)} must lie in [0, 1].")


@dataclass
class TrainResult:
    steps: int = 0
    best_step: int = 0
    best_val: float = float("inf")
    losses: list[float] = field(default_factory=list)
    val_losses: list[tuple[int, float]] = field(default_factory=list)
    seconds: float = 0.0
    stopped_early: bool = False


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


def _progress(enabled: bool, total: int) -> Any:
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        logger.info("tqdm is not installed; no progress bar (pip install tabzoo-npt[progress]).")
        return None
    return tqdm(total=total, desc="npt fit", unit="step", leave=False)


def fit_npt(
    model: NPT,
    values: np.ndarray,
    targets: tuple[int, ...],
    cfg: TrainConfig,
    *,
    validation: np.ndarray | None = None,
    unlabeled: np.ndarray | None = None,
    strata: np.ndarray | None = None,
) -> TrainResult:
    """Train ``model`` in place on ``values [n, d]`` (NaN = missing) and return the history.

    :param targets: target attribute indices (empty for pure imputation: feature loss only).
    :param validation: ``[n_val, d]`` rows for early stopping (their targets are predicted).
    :param unlabeled: ``[n_u, d]`` rows without targets (semi-supervised / transductive modes).
    :param strata: ``[n]`` ints for class-stratified minibatches (classification targets).
    """
    # Dropout draws from torch's global RNG: train under a fork seeded by cfg.seed, so that a fit is a
    # function of its seed alone (not of whatever ran before it) and the caller's RNG is left untouched.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(cfg.seed))
        return _fit_npt(model, values, targets, cfg, validation=validation, unlabeled=unlabeled, strata=strata)


def _fit_npt(model: NPT, values: np.ndarray, targets: tuple[int, ...], cfg: TrainConfig, *,
             validation: np.ndarray | None, unlabeled: np.ndarray | None,
             strata: np.ndarray | None) -> TrainResult:
    if values.ndim != 2 or values.shape[1] != model.n_attributes:
        raise TabzooInputError(f"values must be [rows, {model.n_attributes}]; got {values.shape}.")
    if unlabeled is not None and cfg.mode == "inductive":
        raise TabzooInputError("unlabeled rows need mode='semi_supervised' or 'transductive'; the default "
                               "inductive mode never reads rows other than the training rows.")
    device = next(model.parameters()).device
    d = model.n_attributes
    is_target = torch.zeros(d, dtype=torch.bool, device=device)
    is_target[list(targets)] = True
    all_rows = values if unlabeled is None else np.concatenate([values, unlabeled])
    n_lab = len(values)
    labeled = np.arange(len(all_rows)) < n_lab
    if strata is not None and unlabeled is not None:
        strata = np.concatenate([strata, np.full(len(unlabeled), -1)])
    data = torch.as_tensor(np.asarray(all_rows, dtype=np.float32), device=device)
    g = torch.Generator().manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    opt = Lookahead(Lamb(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay),
                    k=cfg.lookahead_k, alpha=cfg.lookahead_alpha)
    sched = torch.optim.lr_scheduler.LambdaLR(opt.base, lambda s: flat_then_cosine(s, cfg.steps, cfg.flat_fraction))
    result = TrainResult()
    best_state: dict[str, torch.Tensor] | None = None
    bad_evals = 0
    batches: list[np.ndarray] = []
    bar = _progress(cfg.progress, cfg.steps)
    t0 = time.perf_counter()
    model.train()
    try:
        for step in range(cfg.steps):
            if not batches:
                batches = stratified_batches(len(all_rows), cfg.batch_size, rng, strata)
            idx = torch.as_tensor(batches.pop(), device=device)
            vals = data[idx]
            missing = torch.isnan(vals)
            lab = torch.as_tensor(labeled, device=device)[idx][:, None]
            target_cells = is_target[None, :] & torch.ones_like(missing)
            unlabeled_targets = target_cells & ~lab
            feat = stochastic_mask(~missing & ~target_cells, cfg.p_feature, g, cfg.random_share)
            tgt = stochastic_mask(~missing & target_cells & lab, cfg.p_target, g, cfg.random_share)
            hidden = missing | feat.masked | tgt.masked | unlabeled_targets
            inputs = randomise(torch.nan_to_num(vals), feat.randomised | tgt.randomised, model.cards, g)
            isolated = None
            if cfg.mode == "inductive" and targets:
                isolated = (hidden & target_cells).any(dim=1)[None]
            logits = model(inputs[None], hidden[None], isolated)[0]
            per_cell = cell_losses(logits, vals, model.cards)
            lam = lambda_schedule(step, cfg.steps) if (cfg.anneal_lambda and targets) else (0.0 if targets else 1.0)
            loss = objective(per_cell, feat.selected, tgt.selected, lam)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.clip)
            opt.step()
            sched.step()
            result.losses.append(float(loss.detach()))
            result.steps = step + 1
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{result.losses[-1]:.4f}", lam=f"{lam:.2f}")
            if validation is not None and targets and len(validation) and ((step + 1) % cfg.eval_every == 0
                                                                           or step + 1 == cfg.steps):
                v = validation_loss(model, values, validation, targets, cfg)
                result.val_losses.append((step + 1, v))
                model.train()
                if v < result.best_val - 1e-6:
                    result.best_val, result.best_step, bad_evals = v, step + 1, 0
                    best_state = copy.deepcopy(model.state_dict())
                else:
                    bad_evals += 1
                    if bad_evals >= cfg.patience:
                        result.stopped_early = True
                        break
    finally:
        if bar is not None:
            bar.close()
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    result.seconds = time.perf_counter() - t0
    return result


def validation_loss(model: NPT, context: np.ndarray, validation: np.ndarray, targets: tuple[int, ...],
                    cfg: TrainConfig) -> float:
    """Mean target loss of ``validation`` rows predicted from the fixed training context."""
    hide = np.zeros(validation.shape, dtype=bool)
    hide[:, list(targets)] = True
    logits = predict_cells(model, context, validation, hide, context_size=cfg.context_size, seed=cfg.seed)
    truth = torch.as_tensor(validation, dtype=torch.float32)
    per_cell = cell_losses(logits, truth, model.cards.cpu())
    sel = torch.zeros_like(per_cell, dtype=torch.bool)
    sel[:, list(targets)] = True
    sel &= ~torch.isnan(truth)
    return float((per_cell * sel).sum() / sel.sum().clamp(min=1))
