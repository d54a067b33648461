"""A PNG grid of sampled datasets for a quick visual check (matplotlib is an optional extra)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import torch
from tabzoo.errors import TabzooInputError

__all__ = ["plot_datasets", "pca_2d"]


def pca_2d(x: torch.Tensor) -> torch.Tensor:
    """Project ``x [rows, features]`` onto its first two principal components -> ``[rows, 2]``.

    Missing cells (NaN) are imputed with the column mean; columns are standardised first.
    """
    x = x.double()
    col_mean = torch.nanmean(x, dim=0)
    x = torch.where(torch.isnan(x), col_mean.nan_to_num(0.0).expand_as(x), x)
    x = (x - x.mean(0)) / (x.std(0, unbiased=False) + 1e-9)
    if x.shape[1] == 1:
        return torch.cat([x, torch.zeros_like(x)], dim=1).float()
    _, _, vh = torch.linalg.svd(x, full_matrices=False)
    return (x @ vh[:2].T).float()


def plot_datasets(batch: Any, path: str | Path, *, max_datasets: int = 16, max_points: int = 1024,
                  title: str | None = None) -> Path:
    """Render the first datasets of ``batch`` as a grid of 2-D PCA scatter plots.

    Points are coloured by class (classification) or by target value (regression); context
    rows are dots, query rows crosses.

    :param batch: an ``EpisodeBatch`` or :class:`tabzoo_priors.RawBatch`
        (``x [batch, rows, features]``, ``y [batch, rows]``).
    :param path: output PNG path.
    :return: the path written.
    :raises TabzooInputError: when matplotlib is missing (install ``tabzoo-priors[plot]``).
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise TabzooInputError(
            "plot_datasets needs matplotlib; install the extra: pip install 'tabzoo-priors[plot]'"
        ) from exc
    x, y = batch.x.detach().cpu(), batch.y.detach().cpu()
    fmask = batch.feature_mask.detach().cpu()
    n_classes = batch.n_classes.detach().cpu()
    n_ctx = int(batch.n_context)
    k = min(max_datasets, x.shape[0])
    cols = math.ceil(math.sqrt(k))
    rows = math.ceil(k / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3 * cols, 3 * rows), squeeze=False)
    for i, ax in enumerate(axes.flat):
        ax.set_xticks([])
        ax.set_yticks([])
        if i >= k:
            ax.axis("off")
            continue
        xi = x[i][:, fmask[i]]
        n = min(max_points, xi.shape[0])
        z = pca_2d(xi)[:n]
        yi = y[i][:n]
        is_cls = int(n_classes[i]) > 0
        cmap = "tab10" if is_cls else "viridis"
        ctx = torch.arange(n) < n_ctx
        kw = {"c": None, "cmap": cmap, "s": 6}
        if is_cls:
            kw.update(vmin=0, vmax=9)
        ax.scatter(z[ctx, 0], z[ctx, 1], **{**kw, "c": yi[ctx]}, marker="o", alpha=0.6)
        ax.scatter(z[~ctx, 0], z[~ctx, 1], **{**kw, "c": yi[~ctx]}, marker="x", alpha=0.6)
        label = f"{int(n_classes[i])} classes" if is_cls else "regression"
        ax.set_title(f"#{i}: {int(fmask[i].sum())} feat, {label}", fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out
