"""The data-corruption test (appendix B.2.1, Algorithm 1): how much does NPT rely on other rows?

For every test row ``k`` the other rows of its input (here: the fixed context of training rows)
are corrupted by permuting each attribute column independently across them, the targets
included. That destroys the information carried by other rows while keeping each column's
marginal distribution (batch statistics), so a loss increase can only come from attention
between datapoints. The test reports the target loss and the metric with and without
corruption; each corrupted copy is one element of the batch dimension, so ``B`` rows are
tested per forward pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from tabzoo.errors import TabzooInputError

from tabzoo_npt.predict import context_indices
from tabzoo_npt.train import cell_losses

__all__ = ["CorruptionReport", "corruption_test"]


@dataclass(frozen=True)
class CorruptionReport:
    """Target loss and metric of clean vs corrupted context rows.

    :ivar metric: ``"accuracy"`` (classification) or ``"rmse"`` (regression, in y units).
    :ivar relative_loss_increase: ``(loss_corrupted - loss_clean) / loss_clean``: how much the
        predictions rely on other rows (about 0 = the model predicts from the row alone).
    """

    n_rows: int
    loss_clean: float
    loss_corrupted: float
    metric: str
    metric_clean: float
    metric_corrupted: float

    @property
    def relative_loss_increase(self) -> float:
        return (self.loss_corrupted - self.loss_clean) / max(self.loss_clean, 1e-12)

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "relative_loss_increase": self.relative_loss_increase}


@torch.no_grad()
def corruption_test(estimator: Any, X: Any, y: Any, *, seed: int = 0, batch: int = 16,
                    max_rows: int | None = 256) -> CorruptionReport:
    """Run Algorithm 1 for a fitted :class:`NPTClassifier` or :class:`NPTRegressor`.

    :param X: ``[n, features]`` test rows; :param y: their true targets ``[n]``.
    :param batch: corrupted copies per forward pass.
    :param max_rows: test at most this many rows (a seeded sample), ``None`` = all.
    """
    from tabzoo.estimators.sk import check_input_array, check_is_fitted

    check_is_fitted(estimator, "model_")
    if len(estimator.targets_) != 1:
        raise TabzooInputError("the corruption test needs a single-target estimator (classifier or 1-d regressor).")
    X = check_input_array(X)
    y = np.asarray(y)
    if len(y) != X.shape[0]:
        raise TabzooInputError(f"X has {X.shape[0]} rows but y has {len(y)}; pass one target per row.")
    classify = hasattr(estimator, "classes_")
    t = estimator.targets_[0]
    rng = np.random.default_rng(seed)
    rows = np.arange(len(y)) if max_rows is None or len(y) <= max_rows else np.sort(rng.choice(len(y), max_rows, replace=False))
    xv = estimator.encoder_.transform(X)[rows]
    if classify:
        lookup = {c: i for i, c in enumerate(estimator.classes_.tolist())}
        try:
            truth = np.asarray([lookup[v] for v in y[rows].tolist()], dtype=np.float32)
        except KeyError as exc:
            raise TabzooInputError(f"label {exc} was not seen in fit; test on known classes only.") from exc
    else:
        truth = ((y[rows].astype(np.float64) - estimator.y_mean_[0]) / estimator.y_std_[0]).astype(np.float32)
    model = estimator.model_
    device = next(model.parameters()).device
    ctx = estimator.context_[context_indices(len(estimator.context_), int(estimator.context_size), int(estimator.random_state or 0))]
    n_c, d = ctx.shape
    queries = np.concatenate([xv[:, :t], np.full((len(rows), 1), np.nan, np.float32), xv[:, t + 1:]], axis=1)
    g = torch.Generator().manual_seed(seed)
    clean_logits, corr_logits = [], []
    for start in range(0, len(rows), batch):
        q = torch.as_tensor(queries[start:start + batch])
        b = len(q)
        c = torch.as_tensor(ctx).expand(b, n_c, d).clone()
        corrupted = c.clone()
        for j in range(d):  # permute each attribute column independently, per copy
            perm = torch.argsort(torch.rand(b, n_c, generator=g), dim=1)
            corrupted[:, :, j] = c[:, :, j].gather(1, perm)
        for context, sink in ((c, clean_logits), (corrupted, corr_logits)):
            values = torch.cat([context, q[:, None]], dim=1)
            mask = torch.isnan(values)
            mask[:, -1, t] = True
            isolated = torch.zeros(b, n_c + 1, dtype=torch.bool)
            isolated[:, -1] = True
            out = model(torch.nan_to_num(values).to(device), mask.to(device), isolated.to(device))
            sink.append(out[:, -1].float().cpu())
    truth_t = torch.as_tensor(truth)
    cards = model.cards.cpu()
    result = []
    for logits in (torch.cat(clean_logits), torch.cat(corr_logits)):
        cells = torch.zeros(len(rows), d)
        cells[:, t] = truth_t
        loss = float(cell_losses(logits, cells, cards)[:, t].mean())
        if classify:
            k = estimator.n_classes_
            metric = float((logits[:, t, :k].argmax(-1) == truth_t.long()).double().mean())
        else:
            metric = float(((logits[:, t, 0] - truth_t) ** 2).double().mean().sqrt() * estimator.y_std_[0])
        result.append((loss, metric))
    return CorruptionReport(n_rows=len(rows), loss_clean=result[0][0], loss_corrupted=result[1][0],
                            metric="accuracy" if classify else "rmse", metric_clean=result[0][1],
                            metric_corrupted=result[1][1])
