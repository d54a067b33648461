"""Broken models that the first kit passed and kit v2 catches (issue 9), one per class of weakness.

Each is a small variation of :class:`~kit_models.broken.TinyICL` (or a plain object), as a
third-party author might write it by mistake. The meta-tests in ``tests/test_conformance_v2.py``
run them; ``benchmarks``-free, seconds each.
"""

from __future__ import annotations

from typing import Any

import torch
from tabzoo.errors import TabzooInputError
from torch import nn

from kit_models.broken import MAX_CLASSES, TinyICL


# -- 1. evidence the plugin supplies about itself ------------------------------------------
def lying_masks(nc: int, n: int) -> list[Any]:
    """Claims query rows read only the context rows next to them (a window), which the model
    (it reads the whole context) does not obey; no leak is claimed or present."""
    from tabzoo.masks import context_query, window

    return [context_query(nc) & window(1)]


def lying_context_repr(model: Any, x: torch.Tensor, y: torch.Tensor, nc: int) -> torch.Tensor:
    """Returns the context rows' embeddings BEFORE the layer that mixes rows: never depends on
    query rows, whatever the model does."""
    h = model.embed(nn.functional.pad(x, (0, model.max_features - x.shape[2])))
    return h[:, :nc]


class NormalisesOverAllRows(TinyICL):
    """Standardises features with statistics over ALL rows, query rows included: context-row
    representations (and through them every prediction) depend on the query set."""

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            x = (x - x.mean(dim=1, keepdim=True)) / (x.std(dim=1, keepdim=True) + 1e-6)
        return super().encode(x, y_context)


class PairwiseDistance(TinyICL):
    """Adds a soft nearest-neighbour vote over ``torch.cdist`` of query rows to context rows, 8
    query rows at a time (so no ``[Nq, Nc]`` matrix is ever alive): quadratic work that neither a
    matmul FLOP count nor peak memory sees."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        out = super().forward(x, y_context)
        nc = y_context.shape[1]
        onehot = nn.functional.one_hot(y_context.long().clamp(0, MAX_CLASSES - 1), MAX_CLASSES).to(x.dtype)
        votes = []
        for start in range(nc, x.shape[1], 8):
            w = torch.softmax(-torch.cdist(x[:, start:start + 8], x[:, :nc]), dim=-1)  # [B, <=8, Nc]
            votes.append((w[..., None] * onehot[:, None]).sum(2))
        return out + 1e-3 * torch.cat(votes, dim=1)


class ChunkedQuadratic(TinyICL):
    """Compares query rows with all context rows by elementwise ops, 8 query rows at a time:
    memory stays linear, the total work is quadratic."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        out = super().forward(x, y_context)
        nc = y_context.shape[1]
        extra = []
        for start in range(nc, x.shape[1], 8):
            q = x[:, start:start + 8, None, :]
            extra.append(-((q - x[:, None, :nc, :]) ** 2).sum(-1).amax(-1, keepdim=True))  # [B, chunk, 1]
        return out + 1e-3 * torch.cat(extra, dim=1)


class NumpyPairwise(TinyICL):
    """Computes each query row's distance to its nearest context row in numpy, 256 query rows at
    a time: quadratic work that no torch op count sees (memory stays linear)."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        import numpy as np

        out = super().forward(x, y_context)
        nc = y_context.shape[1]
        xs = x.detach().cpu().numpy().astype(np.float64)
        near = np.concatenate([((xs[:, s:s + 256, None, :] - xs[:, None, :nc, :]) ** 2).sum(-1).min(-1)
                               for s in range(nc, xs.shape[1], 256)], axis=1)  # [B, Nq]
        return out + 1e-3 * torch.as_tensor(near, dtype=out.dtype)[..., None]


class NumpyAnchors(TinyICL):
    """Correct control of :class:`NumpyPairwise`: each query row's distance to its nearest of the
    FIRST 1,024 context rows, in numpy: linear work outside torch ops, heavy enough (about 0.5 s of
    CPU at 32k rows) that the kit asserts its CPU-time slope (the under-load script's false-failure
    probe)."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        import numpy as np

        out = super().forward(x, y_context)
        nc = y_context.shape[1]
        xs = x.detach().cpu().numpy().astype(np.float64)
        anchors = xs[:, None, :min(nc, 1024), :]
        near = np.concatenate([((xs[:, s:s + 256, None, :] - anchors) ** 2).sum(-1).min(-1)
                               for s in range(nc, xs.shape[1], 256)], axis=1)  # [B, Nq]
        return out + 1e-3 * torch.as_tensor(near, dtype=out.dtype)[..., None]


class QuadraticAbove(TinyICL):
    """Dense softmax attention over all rows, but only above 1024 rows (say, "when it pays"):
    linear at the sizes a plugin picks for its own scaling axis."""

    def mix(self, h: torch.Tensor, nc: int) -> torch.Tensor:
        out = super().mix(h, nc)
        if h.shape[1] > 1024:
            out = out + 1e-3 * torch.softmax(h @ h.transpose(1, 2), dim=-1) @ h
        return out


class OwnChecksOnly(TinyICL):
    """Validates only shapes (its own ``bad_inputs`` test nothing else): a single class, inf
    features, an empty context and mixed label types pass silently or crash."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed, validate=False)

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        if x.dim() != 3:
            raise TabzooInputError(f"x must be [batch, rows, features]; got shape {tuple(x.shape)}.")
        return super().encode(x, y_context)


def own_bad_inputs(model: Any) -> list[tuple[str, Any]]:
    return [("x is 2-D", lambda: model(torch.zeros(3, 2), torch.zeros(1, 2)))]


class SlightlyPositional(TinyICL):
    """A context-row index embedding of size 1e-2: caught at float32 tolerance, hidden by a huge
    ``tol_scale``."""

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        nc = y_context.shape[1]
        x = x.clone()
        x[:, :nc, 0] += 1e-2 * torch.arange(nc, dtype=x.dtype, device=x.device) / nc
        return super().encode(x, y_context)


# -- 2. inputs that are too small and too tame ---------------------------------------------
class TruncatesContext(TinyICL):
    """Keeps only the first 256 context rows (a memory cap): order-dependent on large contexts."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        nc = y_context.shape[1]
        if nc > 256:
            x = torch.cat([x[:, :256], x[:, nc:]], dim=1)
            y_context = y_context[:, :256]
        return super().forward(x, y_context)


class NearestNeighbourFirstIndex(TinyICL):
    """Adds the label of the nearest context row; ties go to the FIRST such row (``argmin``), so
    duplicated context rows with different labels make the output order-dependent."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        out = super().forward(x, y_context)
        nc = y_context.shape[1]
        d = ((x[:, nc:, None, :] - x[:, None, :nc, :]) ** 2).sum(-1)
        nearest = d.argmin(-1)  # first index among ties
        label = torch.gather(y_context, 1, nearest).long().clamp(0, MAX_CLASSES - 1)
        return out + nn.functional.one_hot(label, MAX_CLASSES).to(out.dtype)


class WarmsUp(TinyICL):
    """Calibrates itself after its second call (a "warm-up" counter): calls 1 and 2 agree, call
    3 does not."""

    calls: torch.Tensor
    after = 2

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self.register_buffer("calls", torch.zeros(()), persistent=False)

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        out = super().forward(x, y_context)
        return out * 1.01 if int(self.calls) > self.after else out


class ShapeCache(TinyICL):
    """Caches its output keyed on the input shapes: new data of the same shapes gets a stale answer."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self._cache: dict[Any, torch.Tensor] = {}

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), tuple(y_context.shape))
        if key not in self._cache:
            self._cache[key] = super().forward(x, y_context)
        return self._cache[key]


class FeatureCache(TinyICL):
    """Caches the encoded episode keyed on the feature values only: a new context (new labels
    for the same rows) after a call is ignored."""

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        self._cache: dict[Any, torch.Tensor] = {}

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), float(x.double().sum()))
        if key not in self._cache:
            self._cache[key] = super().encode(x, y_context)
        return self._cache[key]


class BatchStandardised(TinyICL):
    """Standardises features with statistics over the WHOLE batch: episodes leak into each other."""

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            x = (x - x.mean(dim=(0, 1), keepdim=True)) / (x.std(dim=(0, 1), keepdim=True) + 1e-6)
        return super().encode(x, y_context)


class FirstEpisodeStatistics(TinyICL):
    """Standardises every episode with the FIRST episode's context statistics: episode 0 leaks
    into the others (changing episode 1 leaves episode 0 alone, so that alone finds nothing)."""

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        if x.dim() == 3:
            ref = x[:1, : y_context.shape[1]]
            x = (x - ref.mean(dim=1, keepdim=True)) / (ref.std(dim=1, keepdim=True) + 1e-6)
        return super().encode(x, y_context)


class ScalesByQueryCount(TinyICL):
    """Divides the logits by the number of query rows (a "mean over the batch" slip): changing
    another query row's values changes nothing, removing it does."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        out = super().forward(x, y_context)
        return out / out.shape[1]


# -- 3. a claim is not optional --------------------------------------------------------------
class PlainKNN:
    """A model that is not an ``nn.Module`` and has no state_dict protocol; its projection is
    drawn from the seed and lives in a plain attribute."""

    max_features, max_classes = 6, MAX_CLASSES

    def __init__(self, seed: int = 0, with_state: bool = False) -> None:
        self.proj = torch.randn(6, 4, generator=torch.Generator().manual_seed(seed))
        self.with_state = with_state
        self.inner = TinyICL(0)

    def __call__(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        out = self.inner(x, y_context)
        z = nn.functional.pad(x, (0, 6 - x.shape[2])) @ self.proj
        return out + z[:, y_context.shape[1]:].sum(-1, keepdim=True)


class PlainKNNWithState(PlainKNN):
    """The same, with a correct ``state_dict`` / ``load_state_dict`` pair."""

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"proj": self.proj.clone()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.proj = state["proj"].clone()


class NoisyLabelLeakFree(TinyICL):
    """Draws noise from the global RNG (non-deterministic) but has no label leak: a label-leak
    check must report the non-determinism, not a leak."""

    def forward(self, x: torch.Tensor, y: torch.Tensor, nc: int = 0) -> torch.Tensor:  # type: ignore[override]
        out = super().forward(x, y[:, :nc])
        return out + 1e-2 * torch.randn(out.shape)
