"""NPT's semi-synthetic lookup (duplication) task and its variants (NPT appendix B.1.2).

Every episode holds ``n`` original rows, whose targets are masked and must be predicted, and a
duplicate of each of them with its target visible. A model that attends between datapoints can
solve it by finding each original's duplicate. Variants (all applied to standardised data):

* ``"original"``: duplicates are exact copies.
* ``"random_features"``: the last ``n_random`` (3) features of every row, originals and
  duplicates independently, are overwritten with ``N(1, 1)`` noise, so matching must use the
  other features only.
* ``"add_one"``: duplicates' targets are the originals' targets plus 1, so the looked-up value
  must be corrected by -1.
* ``"random_features+add_one"``: both.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from tabzoo.errors import TabzooInputError

from tabzoo_priors._assemble import standardize
from tabzoo_priors._random import generators

__all__ = ["LookupBatch", "LookupPrior", "VARIANTS"]

VARIANTS = ("original", "random_features", "add_one", "random_features+add_one")


@dataclass(frozen=True)
class LookupBatch:
    """A batch of lookup episodes.

    :ivar x: ``[batch, 2n, features]`` float32 (originals and duplicates, shuffled if asked).
    :ivar y: ``[batch, 2n]`` float32 true targets of every row (a duplicate's visible target
        includes the +1 of the add-one variant).
    :ivar target_mask: ``[batch, 2n]`` bool, True where the target is hidden (the originals).
    :ivar partner: ``[batch, 2n]`` long, index of each row's twin (original <-> duplicate).
    :ivar variant: one of :data:`VARIANTS`.
    """

    x: torch.Tensor
    y: torch.Tensor
    target_mask: torch.Tensor
    partner: torch.Tensor
    variant: str

    def visible_targets(self) -> torch.Tensor:
        """``y`` with hidden targets set to 0 (what a model may be given as input)."""
        return self.y.masked_fill(self.target_mask, 0.0)

    def oracle_prediction(self) -> torch.Tensor:
        """The perfect lookup answer for every row ``[batch, 2n]`` (tests use it)."""
        shift = 1.0 if "add_one" in self.variant else 0.0
        looked_up = self.y.gather(1, self.partner)
        return torch.where(self.target_mask, looked_up - shift, self.y)


class LookupPrior:
    """Generator of lookup episodes.

    :param n_rows: originals per episode (the episode holds ``2 * n_rows`` rows).
    :param n_features: features (NPT's Protein data has 9).
    :param variant: one of :data:`VARIANTS`.
    :param n_random: features overwritten by noise in the random-features variants.
    :param shuffle: shuffle the ``2n`` rows per episode (otherwise originals first).
    :param base: optional real data ``(X [rows, features], y [rows])`` to draw rows from, e.g. the
        Protein dataset; by default rows are ``N(0, I)`` features with a random smooth target.

    Example::

        batch = LookupPrior(n_rows=64, variant="add_one").sample(8, seed=0)
        batch.x.shape  # [8, 128, 9]
    """

    kind = "lookup"

    def __init__(
        self, n_rows: int = 256, n_features: int = 9, variant: str = "original", n_random: int = 3,
        shuffle: bool = True, base: tuple[torch.Tensor, torch.Tensor] | None = None,
    ) -> None:
        if variant not in VARIANTS:
            raise TabzooInputError(f"variant={variant!r} is unknown; use one of {VARIANTS}.")
        if base is not None:
            bx, by = (torch.as_tensor(t, dtype=torch.float32) for t in base)
            if bx.dim() != 2 or by.shape != (bx.shape[0],) or not torch.isfinite(bx).all() or not torch.isfinite(by).all():
                raise TabzooInputError("base must be finite (X [rows, features], y [rows]) tensors.")
            n_features = bx.shape[1]
            base = (standardize(bx, dim=0), standardize(by.unsqueeze(1), dim=0).squeeze(1))
        if "random_features" in variant and not 0 < n_random < n_features:
            raise TabzooInputError(f"n_random={n_random} must lie in [1, n_features - 1={n_features - 1}].")
        if n_rows < 1:
            raise TabzooInputError(f"n_rows={n_rows} must be >= 1.")
        self.n_rows, self.n_features, self.variant = int(n_rows), int(n_features), variant
        self.n_random, self.shuffle, self.base = int(n_random), shuffle, base

    def _rows(self, b: int, g: torch.Generator, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        n, d = self.n_rows, self.n_features
        if self.base is not None:
            bx, by = (t.to(device) for t in self.base)
            idx = torch.randint(0, bx.shape[0], (b, n), generator=g, device=device)
            return bx[idx], by[idx]
        x = torch.randn(b, n, d, generator=g, device=device)
        w1 = torch.randn(b, d, 16, generator=g, device=device) / d**0.5
        w2 = torch.randn(b, 16, generator=g, device=device) / 4.0
        y = (torch.tanh(x @ w1) * w2.unsqueeze(1)).sum(-1)
        return x, standardize(y, dim=1)

    def sample(self, batch_size: int, *, seed: int, device: str | torch.device = "cpu") -> LookupBatch:
        """Generate ``batch_size`` lookup episodes (see :class:`LookupBatch` for shapes)."""
        device = torch.device(device)
        _, g = generators(seed, device)
        b, n = batch_size, self.n_rows
        x, y = self._rows(b, g, device)
        x_dup, y_dup = x.clone(), y.clone()
        if "random_features" in self.variant:
            k = self.n_random
            x = x.clone()
            x[..., -k:] = 1.0 + torch.randn(b, n, k, generator=g, device=device)
            x_dup[..., -k:] = 1.0 + torch.randn(b, n, k, generator=g, device=device)
        if "add_one" in self.variant:
            y_dup = y_dup + 1.0
        xs = torch.cat([x, x_dup], dim=1)
        ys = torch.cat([y, y_dup], dim=1)
        ar = torch.arange(n, device=device)
        hidden = torch.cat([torch.ones(n, dtype=torch.bool, device=device),
                            torch.zeros(n, dtype=torch.bool, device=device)]).expand(b, 2 * n)
        partner = torch.cat([ar + n, ar]).expand(b, 2 * n)
        if self.shuffle:
            perm = torch.argsort(torch.rand(b, 2 * n, generator=g, device=device), dim=1)
            inv = torch.argsort(perm, dim=1)
            xs = xs.gather(1, perm.unsqueeze(-1).expand_as(xs))
            ys, hidden = ys.gather(1, perm), hidden.gather(1, perm)
            partner = inv.gather(1, partner.gather(1, perm))
        return LookupBatch(x=xs.contiguous(), y=ys.contiguous(), target_mask=hidden.contiguous(),
                           partner=partner.contiguous(), variant=self.variant)
