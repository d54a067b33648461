"""The NPT's config and presets: plain data, importable without torch (the plugin reads it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from tabzoo.errors import TabzooInputError
from tabzoo.params import check_params

__all__ = ["NPTConfig", "PRESETS"]


@dataclass(frozen=True)
class NPTConfig:
    """Architecture of one NPT.

    :param cardinalities: per attribute, ``0`` for numeric or the class count ``K >= 2`` of a
        categorical attribute (targets included; their position is the caller's choice).
    :param dim: per-attribute hidden size ``e`` (NPT-Base: 64; NPT-Small: 128, 32 on wide data).
    :param n_layers: total layers, alternating ABD and ABA, ABD first (NPT-Base: 8).
    :param n_heads: heads of the ABD attention (NPT-Base: 8).
    :param n_heads_aba: heads of the ABA attention (default ``n_heads``, reduced to divide ``dim``).
    :param ff_mult: feed-forward expansion (4 in the paper).
    :param dropout: hidden dropout (0.1 in the paper).
    :param extra: free-form notes kept with the config (not used by the network).
    """

    cardinalities: tuple[int, ...]
    dim: int = 64
    n_layers: int = 8
    n_heads: int = 8
    n_heads_aba: int | None = None
    ff_mult: int = 4
    dropout: float = 0.1
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cards = tuple(int(c) for c in self.cardinalities)
        object.__setattr__(self, "cardinalities", cards)
        if not cards:
            raise TabzooInputError("NPTConfig needs at least one attribute; pass cardinalities=(0, ...).")
        if any(c < 0 or c == 1 for c in cards):
            raise TabzooInputError(f"cardinalities {cards}: use 0 for numeric and K >= 2 for categorical attributes.")
        check_params(self, positive_int=("dim", "n_layers", "n_heads", "n_heads_aba", "ff_mult"), fraction=("dropout",))
        if (len(cards) * self.dim) % self.n_heads:
            raise TabzooInputError(
                f"n_heads={self.n_heads} must divide d*e={len(cards)}*{self.dim}; choose another n_heads or dim."
            )

    @property
    def heads_aba(self) -> int:
        h = self.n_heads_aba or self.n_heads
        while self.dim % h:
            h -= 1
        return h

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["cardinalities"] = list(self.cardinalities)
        return d


PRESETS: dict[str, dict[str, Any]] = {
    "base": {"dim": 64, "n_layers": 8, "n_heads": 8, "ff_mult": 4, "dropout": 0.1},
    "small": {"dim": 32, "n_layers": 4, "n_heads": 4, "ff_mult": 2, "dropout": 0.1},
    "tiny": {"dim": 8, "n_layers": 4, "n_heads": 2, "ff_mult": 2, "dropout": 0.0},
}
