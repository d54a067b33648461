"""The size-search gallery (issue 23, item 2): models that are correct at the sizes kits used to
try (4 features, 3 classes) and break above them. :class:`WideICL` is :class:`~kit_models.broken.
TinyICL` widened to 64 features and 16 classes; its cases declare ``max_features`` and
``max_classes``, so the kit searches those axes and shrinks a failure to the smallest failing size.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import ConformanceCase

from kit_models.broken import TinyICL, icl_case, path_of, resolve

WIDE_FEATURES, WIDE_CLASSES = 64, 16


class WideICL(TinyICL):
    """Correct control: :class:`TinyICL` with up to 64 features and 16 classes."""

    max_features, max_classes = WIDE_FEATURES, WIDE_CLASSES


class QueryMixAbove4Features(WideICL):
    """Above 4 features switches to a "wide" path in which query rows also read the mean of the
    query rows (query independence breaks from 5 features on)."""

    def mix(self, h: torch.Tensor, nc: int) -> torch.Tensor:
        out = super().mix(h, nc)
        if self._features <= 4:
            return out
        return torch.cat([out[:, :nc], out[:, nc:] + h[:, nc:].mean(1, keepdim=True)], dim=1)

    def encode(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        self._features = x.shape[2]
        return super().encode(x, y_context)


class FirstRowAbove10Classes(WideICL):
    """Above 10 classes in the context it "samples" a class prototype from the FIRST context row:
    the outputs depend on the context order (context-order invariance breaks from 11 classes)."""

    def forward(self, x: torch.Tensor, y_context: torch.Tensor) -> torch.Tensor:
        out = super().forward(x, y_context)
        if int(y_context.max()) + 1 <= 10:
            return out
        first = self.labels(y_context[:, :1].long().clamp(0, WIDE_CLASSES - 1))  # [B, 1, D]
        return out + self.head(first)


def wide_case(name: str = "wide_icl", model_cls: type[TinyICL] | str = WideICL) -> ConformanceCase:
    """An in-context case of ``model_cls`` that declares 64 features and 16 classes."""
    cls = resolve(model_cls)
    case = icl_case(name, cls, masks=None)
    return replace(case, max_features=WIDE_FEATURES, max_classes=WIDE_CLASSES, capabilities=case.capabilities -
                   {cap.LINEAR_IN_ROWS, cap.KERNEL_EQUIVALENCE}, factory="kit_models.broken_sizes:wide_case",
                   factory_args={"name": name, "model_cls": path_of(cls)})


BROKEN_SIZES: dict[str, list[tuple[str, Any, dict[str, int]]]] = {
    cap.QUERY_INDEPENDENCE: [
        ("query rows read each other above 4 features", lambda: wide_case("wide_features", QueryMixAbove4Features),
         {"n_features": 5}),
    ],
    cap.CONTEXT_ORDER_INVARIANCE: [
        ("order-dependent class sampling above 10 classes",
         lambda: wide_case("wide_classes", FirstRowAbove10Classes), {"n_classes": 11}),
    ],
}
"""property -> [(what is broken, case factory, the smallest failing sizes the kit must report)]."""
