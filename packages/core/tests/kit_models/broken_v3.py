"""Kit v3's gallery (issue 23): one broken model per class of blindness, each a small variation of
:class:`kit_models.broken.TinyICL` (or of the correct models defined here), and the property that
must catch it. Correct controls: :class:`FeatureSetICL` (claims feature-order invariance).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from tabzoo.testing import capabilities as cap
from torch import nn

from kit_models.broken import MAX_CLASSES, MAX_FEATURES, TinyICL, icl_case, path_of, resolve
from kit_models.broken_v2 import WarmsUp


# -- finite outputs -------------------------------------------------------------------------
class PrototypeNaN(TinyICL):
    """Scores query rows against per-class prototypes (the mean of the context rows of each class):
    a class absent from the context divides 0 by 0, and its logit is NaN."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        h = self.encode(x, y_context)
        nc = y_context.shape[1]
        k = int(y_context.max()) + 1  # classes 0..max label, as many models infer them
        onehot = nn.functional.one_hot(y_context.long(), k).to(h)  # [B, nc, C]
        proto = onehot.transpose(1, 2) @ h[:, :nc] / onehot.sum(1).unsqueeze(-1)  # [B, C, D]: 0/0 if absent
        return -torch.cdist(h[:, nc:], proto)  # [B, n_query, C]


class AlwaysNaN(TinyICL):
    """Returns NaN everywhere: two identical calls give NaN == NaN, which kits before v3 counted as
    agreement (determinism passed)."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        return super().forward(x, y_context) * float("nan")


class SigmoidProbabilities(TinyICL):
    """Declares probabilities, returns one sigmoid per class: in [0, 1] but not summing to 1."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(super().forward(x, y_context))


class SoftmaxProbabilities(TinyICL):
    """Correct control: declares probabilities and returns a softmax."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        return torch.softmax(super().forward(x, y_context), dim=-1)


# -- determinism that a cache or a global cannot fake ------------------------------------------
class DriftsAfter16(WarmsUp):
    """Recalibrates after its 16th call (a warm-up counter): kits before v3 compared calls 1, 3
    and 10 only."""

    after = 16


class HashSeeded(TinyICL):
    """Adds noise seeded by Python's ``hash()`` of a string: the same in one process, different in
    a process with another ``PYTHONHASHSEED``."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        out = super().forward(x, y_context)
        g = torch.Generator().manual_seed(hash("tabzoo-noise") % 2**31)
        return out + 1e-3 * torch.randn(out.shape, generator=g).to(out)


class AddressCache(TinyICL):
    """Caches its output keyed on the input's memory address: a new input written into the same
    memory gets the stale answer."""

    def __init__(self, seed: int = 0, validate: bool = True) -> None:
        super().__init__(seed, validate)
        self._cache: dict[Any, torch.Tensor] = {}

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        key = (x.data_ptr(), y_context.data_ptr(), tuple(x.shape))
        if key not in self._cache:
            self._cache[key] = super().forward(x, y_context)
        return self._cache[key]


# -- NaN features (missing values) -------------------------------------------------------------
class ImputesFromContext(TinyICL):
    """Correct control: claims missing values and imputes each NaN feature with the mean of that
    column over the CONTEXT rows of its episode."""

    def impute_from(self, x: torch.Tensor, nc: int) -> torch.Tensor:
        """The rows whose column means fill the NaNs ``[B, rows, F]``."""
        return x[:, :nc]

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        fill = torch.nan_to_num(self.impute_from(x, y_context.shape[1]).nanmean(1, keepdim=True))  # [B, 1, F]
        return super().encode(torch.where(torch.isnan(x), fill, x), y_context)


class ImputesOverAllRows(ImputesFromContext):
    """Imputes NaN features with the column mean over ALL rows, query rows included: every
    query row's output then depends on the other query rows (and the context on the query)."""

    def impute_from(self, x: torch.Tensor, nc: int) -> torch.Tensor:
        return x


def missing_case(name: str = "imputes_context", model_cls: type[TinyICL] | str = ImputesFromContext) -> Any:
    """An in-context case that claims NaN features (missing values)."""
    model_cls = resolve(model_cls)
    caps = cap.IN_CONTEXT_DEFAULTS | {cap.NO_CONTEXT_QUERY_LEAK, cap.MISSING_VALUES}
    return replace(icl_case(name, model_cls, capabilities=caps), factory="kit_models.broken_v3:missing_case",
                   factory_args={"name": name, "model_cls": path_of(model_cls)})


# -- size search --------------------------------------------------------------------------------
class FusedAbove1024(TinyICL):
    """Switches to a "fused" path above 1,024 rows in which query rows also read the mean of the
    query rows: only a search that reaches real sizes (the thorough profile) sees it."""

    def mix(self, h: torch.Tensor, nc: int) -> torch.Tensor:
        out = super().mix(h, nc)
        if h.shape[1] <= 1024:
            return out
        return torch.cat([out[:, :nc], out[:, nc:] + h[:, nc:].mean(1, keepdim=True)], dim=1)


# -- feature-order invariance ---------------------------------------------------------------
class FeatureSetICL(TinyICL):
    """Correct control: features are a set (``h = mean_f phi(x_f)``), so permuting the feature
    columns changes nothing."""

    def __init__(self, seed: int = 0, validate: bool = True) -> None:
        super().__init__(seed, validate)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 1)
            self.phi = nn.Sequential(nn.Linear(1, self.embed.out_features), nn.Tanh())

    def feature_weights(self, f: int, like: torch.Tensor) -> torch.Tensor:
        return torch.ones(f, dtype=like.dtype, device=like.device)

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        from kit_models.broken import validate_icl

        if self.validate:
            validate_icl(x, y_context, self.max_features, self.max_classes)
        nc = y_context.shape[1]
        w = self.feature_weights(x.shape[2], x)
        h = (self.phi(x.unsqueeze(-1)) * w[:, None]).mean(2)  # [B, N, D]
        h = torch.cat([h[:, :nc] + self.labels(y_context.long().clamp(0, MAX_CLASSES - 1)), h[:, nc:]], dim=1)
        return h + self.mix(h, nc)


class FeaturePositional(FeatureSetICL):
    """Weights feature j by ``1 + j/10``: a positional encoding of the columns."""

    def feature_weights(self, f: int, like: torch.Tensor) -> torch.Tensor:
        return 1 + torch.arange(f, dtype=like.dtype, device=like.device) / 10


def feature_case(name: str = "feature_set", model_cls: type[TinyICL] | str = FeatureSetICL) -> Any:
    """An in-context case that also claims feature-order invariance."""
    caps = cap.IN_CONTEXT_DEFAULTS | {cap.FEATURE_ORDER_INVARIANCE}
    model_cls = resolve(model_cls)
    return replace(icl_case(name, model_cls, capabilities=caps, n_features=min(MAX_FEATURES, 5)),
                   factory="kit_models.broken_v3:feature_case",
                   factory_args={"name": name, "model_cls": path_of(model_cls)})


BROKEN_V3: dict[str, list[tuple[str, Any]]] = {
    cap.FINITE_OUTPUTS: [
        ("NaN logits for a class absent from the context", lambda: icl_case("proto_nan", PrototypeNaN)),
        ("NaN outputs everywhere", lambda: icl_case("all_nan", AlwaysNaN)),
        ("probabilities that do not sum to 1", lambda: icl_case("sigmoid", SigmoidProbabilities,
                                                                 outputs="probabilities")),
    ],
    cap.DETERMINISM: [
        ("NaN outputs everywhere (NaN == NaN is not agreement)", lambda: icl_case("all_nan_det", AlwaysNaN)),
        ("drifts after its 16th call", lambda: icl_case("drift16", DriftsAfter16)),
        ("noise seeded by hash() of a string (PYTHONHASHSEED)", lambda: icl_case("hash_seeded", HashSeeded)),
        ("a cache keyed on the input's memory address", lambda: icl_case("address_cache", AddressCache)),
    ],
    cap.QUERY_INDEPENDENCE: [
        ("imputes NaN features over all rows, query rows included",
         lambda: missing_case("imputes_all", ImputesOverAllRows)),
    ],
    cap.NO_CONTEXT_QUERY_LEAK: [
        ("imputes NaN features over all rows: the context reads the query",
         lambda: missing_case("imputes_all_ctx", ImputesOverAllRows)),
    ],
    cap.FEATURE_ORDER_INVARIANCE: [
        ("a positional weight per feature column", lambda: feature_case("feature_pos", FeaturePositional)),
    ],
}
"""property -> [(what is broken, case factory)]: each case must FAIL that property."""

CONTROLS_V3: list[tuple[str, Any]] = [
    ("softmax probabilities", lambda: icl_case("softmax", SoftmaxProbabilities, outputs="probabilities")),
    ("feature-set encoder", lambda: feature_case()),
    ("the tiny in-context model", lambda: icl_case("tiny_icl")),
    ("imputes NaN features from the context rows only", lambda: missing_case()),
]
"""Correct models that must pass the new properties."""
