"""Ramba's config and presets: plain data, importable without torch (the plugin reads it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from tabzoo.errors import TabzooInputError
from tabzoo.params import check_params

__all__ = ["RambaConfig", "PRESETS", "TEXT_DIM", "make_config"]

#: width of the frozen sentence encoder's vectors (all-MiniLM-L6-v2)
TEXT_DIM = 384


@dataclass(frozen=True)
class RambaConfig:
    """Model size. ``paper`` is Table 20 (12 blocks, D=256, 8 heads, state 64, conv 4, expand 2,
    text dim 384); ``small`` and ``tiny`` are for this CPU.

    :param d_model: token width ``D``.
    :param n_layers: Ramba blocks (gated bidirectional SSM + structural attention each).
    :param n_heads: heads of the structural attention (must divide ``d_model``).
    :param d_state: SSM state size.
    :param d_conv: width of the SSM's causal convolution.
    :param expand: SSM inner width as a multiple of ``d_model``.
    :param d_text: width of the frozen text encoder's vectors (384 for all-MiniLM-L6-v2).
    :param d_gate: hidden width of the schema gate.
    :param d_ff: feed-forward hidden width.
    :param max_rel_rows: related rows each row attends to at most.
    :param attention: ``"gather"`` (gathers the related rows) or ``"masked"`` (dense with a mask).
    :param gating: whether the schema gate modulates the SSM.
    :param mixer: the sequence mixer of each block: ``"ssm"`` (Ramba's schema-gated bidirectional
        SSM) or ``"dense"`` (full softmax attention over every token: the Relational-Transformer
        style baseline, quadratic in L, no schema gate; the structural attentions stay).
    :param text_encoder: ``"auto"`` (the semantic encoder when installed, else hashing) or an encoder name.
    """

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    d_state: int = 16
    d_conv: int = 4
    expand: int = 2
    d_text: int = TEXT_DIM
    d_gate: int = 64
    d_ff: int = 128
    max_rel_rows: int = 32
    attention: str = "gather"
    gating: bool = True
    mixer: str = "ssm"
    text_encoder: str = "auto"

    def __post_init__(self) -> None:
        check_params(self, positive_int=("d_model", "n_layers", "n_heads", "d_state", "d_conv", "expand", "d_text",
                                         "d_gate", "d_ff", "max_rel_rows"))
        if self.d_model % self.n_heads:
            raise TabzooInputError(f"d_model={self.d_model} must be divisible by n_heads={self.n_heads}")
        if self.attention not in ("gather", "masked"):
            raise TabzooInputError(f"attention={self.attention!r}; use 'gather' or 'masked'")
        if self.mixer not in ("ssm", "dense"):
            raise TabzooInputError(f"mixer={self.mixer!r}; use 'ssm' (Ramba) or 'dense' (full attention baseline)")


PRESETS: dict[str, RambaConfig] = {
    "tiny": RambaConfig(d_model=32, n_layers=1, n_heads=2, d_state=8, d_gate=32, d_ff=64, max_rel_rows=16),
    "small": RambaConfig(),
    "paper": RambaConfig(d_model=256, n_layers=12, n_heads=8, d_state=64, d_gate=256, d_ff=1024, max_rel_rows=256),
}


def make_config(config: dict[str, Any] | RambaConfig | None) -> RambaConfig:
    """A preset name under ``"preset"`` plus per-field overrides (None = the preset's value)."""
    if isinstance(config, RambaConfig):
        return config
    cfg = dict(config or {})
    preset = cfg.pop("preset", "small") or "small"
    if preset not in PRESETS:
        raise TabzooInputError(f"unknown Ramba preset {preset!r}; use one of {sorted(PRESETS)}")
    known = {f.name for f in fields(RambaConfig)}
    unknown = sorted(set(cfg) - known)
    if unknown:
        raise TabzooInputError(f"unknown Ramba config keys {unknown}; known keys: {sorted(known | {'preset'})}")
    base = asdict(PRESETS[preset])
    base.update({k: v for k, v in cfg.items() if v is not None})
    return RambaConfig(**base)
