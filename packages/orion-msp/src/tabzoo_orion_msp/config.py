"""ORION-MSP model configurations.

``paper`` carries every hyperparameter of appendix B.3 (the authors' README, constructor and
training scripts disagree with each other; the appendix is what we follow):

=====================  =============================================================
column embedding       d=128, k=128 inducing points, 4 heads, 3 ISAB blocks, d_ff 256
row interaction        d=128, scales {1, 4, 16}, 8 heads, window 8, 4 CLS + 4 GLOBAL,
                       2 random links, RoPE base 100000, one encoder per scale
Perceiver memory       P=32 slots, 4 heads, d_ff = 2 d_R
ICL transformer        12 pre-norm blocks, d_R = 4 * 128 = 512, d_ff 1024, C_max 10, tau 0.9
=====================  =============================================================

``small`` is that shape scaled down so that a 2-core CPU can pretrain it (the shipped
checkpoint); ``tiny`` is for tests and the conformance kit.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from tabzoo.errors import TabzooInputError

__all__ = ["OrionConfig", "CONFIGS", "get_config"]


@dataclass(frozen=True)
class OrionConfig:
    """Shape of one ORION-MSP model.

    :param name: preset name.
    :param max_features: the widest table the model was trained on (every input slot up to it is
        trained: RoPE positions and group slots). Wider tables still run (nothing in the network
        has a fixed feature width) but are out of the training range.
    :param max_classes: ``C_max``, logits of the decoder; more classes go hierarchical (A.6).
    :param d: column / row token width.
    :param col_inducing: ISAB inducing points ``k``.
    :param col_heads: ISAB heads.
    :param col_blocks: ISAB blocks.
    :param col_ff: ISAB feed-forward width and weight/bias generator hidden width.
    :param scales: PMA grouping scales ``S``.
    :param n_cls: CLS tokens per row (the row embedding is ``n_cls * d`` wide).
    :param n_global: GLOBAL tokens per row.
    :param row_heads: heads of the row encoders.
    :param row_blocks: transformer blocks per scale encoder (``N_blocks_row / |S|``).
    :param row_ff: feed-forward width of the row encoders.
    :param window: sliding-window radius ``w``.
    :param random_links: random keys per token ``r``.
    :param link_seed: seed of the random links (fixed: the links never change at inference).
    :param rope_base: RoPE wavelength base.
    :param pma_scope: ``"block"`` (default: group ``g`` pools features ``[g*s, (g+1)*s)``, linear in
        features) or ``"global"`` (the paper's A.4.2 formula: every group query reads all ``m``
        features, ``O(m^2 / s)``).
    :param memory_slots: Perceiver latents ``P`` (0 disables the memory, the paper's ablation).
    :param memory_heads: memory cross-attention heads.
    :param memory_write: write blocks (latents read context rows).
    :param memory_read: read blocks (rows read the latents).
    :param memory_gate: scale each memory read block's update by a learned scalar initialised at 0,
        so the memory starts as the identity (see :mod:`tabzoo_orion_msp.memory`; ``False`` is the
        ungated form, with which the small model did not learn).
    :param centre_rows: centre the row embeddings on their context mean and rescale them by
        their context rms before the memory (:meth:`tabzoo_orion_msp.model.OrionMSP.centre_rows`;
        not in the paper: without it the rows collapsed to one representation in training).
    :param icl_blocks: ``N_icl``.
    :param icl_heads: ICL heads.
    :param icl_ff: ICL feed-forward width.
    :param query_sees_query: ``False`` (default): query rows read context rows and themselves, as
        the paper's own eq. 29 demands. ``True``: the paper's eq. 50 mask, where query rows also
        read each other; it breaks query independence (the conformance kit reports it).
    :param temperature: softmax temperature at inference (0.9).
    """

    name: str = "small"
    max_features: int = 100
    max_classes: int = 10
    d: int = 32
    col_inducing: int = 16
    col_heads: int = 4
    col_blocks: int = 1
    col_ff: int = 64
    scales: tuple[int, ...] = (1, 4, 16)
    n_cls: int = 4
    n_global: int = 4
    row_heads: int = 4
    row_blocks: int = 1
    row_ff: int = 64
    window: int = 8
    random_links: int = 2
    link_seed: int = 0
    rope_base: float = 100000.0
    pma_scope: str = "block"
    memory_slots: int = 32
    memory_heads: int = 4
    memory_write: int = 1
    memory_read: int = 1
    memory_gate: bool = True
    centre_rows: bool = True
    icl_blocks: int = 3
    icl_heads: int = 4
    icl_ff: int = 256
    query_sees_query: bool = False
    temperature: float = 0.9

    def __post_init__(self) -> None:
        object.__setattr__(self, "scales", tuple(int(s) for s in self.scales))
        bad = []
        for name in ("max_features", "d", "col_inducing", "col_heads", "col_blocks", "col_ff", "n_cls",
                     "row_heads", "row_blocks", "row_ff", "icl_blocks", "icl_heads", "icl_ff"):
            if int(getattr(self, name)) < 1:
                bad.append(name)
        for name in ("n_global", "window", "random_links", "memory_slots", "memory_write", "memory_read"):
            if int(getattr(self, name)) < 0:
                bad.append(name)
        if bad:
            raise TabzooInputError(f"ORION-MSP config {self.name!r}: {bad} must be positive integers.")
        if self.max_classes < 2:
            raise TabzooInputError(f"max_classes must be >= 2, got {self.max_classes}.")
        if not self.scales or any(s < 1 for s in self.scales) or len(set(self.scales)) != len(self.scales):
            raise TabzooInputError(f"scales must be distinct positive ints, e.g. (1, 4, 16); got {self.scales}.")
        for width, heads, what in ((self.d, self.col_heads, "col_heads"), (self.d, self.row_heads, "row_heads"),
                                   (self.d_row, self.icl_heads, "icl_heads"),
                                   (self.d_row, max(self.memory_heads, 1), "memory_heads")):
            if width % heads:
                raise TabzooInputError(f"{what}={heads} does not divide the width {width}; pick a divisor.")
        if (self.d // self.row_heads) % 2:
            raise TabzooInputError("RoPE needs an even head width d / row_heads; change d or row_heads.")
        if self.pma_scope not in ("block", "global"):
            raise TabzooInputError(f"pma_scope must be 'block' or 'global', got {self.pma_scope!r}.")
        if self.temperature <= 0:
            raise TabzooInputError(f"temperature must be > 0, got {self.temperature}.")
        if self.memory_slots > 0 and self.memory_heads < 1:
            raise TabzooInputError("memory_heads must be >= 1 when memory_slots > 0.")

    @property
    def n_special(self) -> int:
        """CLS + GLOBAL tokens at the start of every row sequence."""
        return self.n_cls + self.n_global

    @property
    def d_row(self) -> int:
        """``d_R = n_cls * d``: the row embedding width of the memory and ICL stages."""
        return self.n_cls * self.d

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (what checkpoints store)."""
        d = asdict(self)
        d["scales"] = list(self.scales)
        return d

    def with_(self, **changes: Any) -> OrionConfig:
        """A copy with some fields changed."""
        return replace(self, **changes)


CONFIGS: dict[str, OrionConfig] = {
    "paper": OrionConfig(
        name="paper", d=128, col_inducing=128, col_heads=4, col_blocks=3, col_ff=256, row_heads=8,
        row_blocks=1, row_ff=256, memory_slots=32, memory_heads=4, icl_blocks=12, icl_heads=4, icl_ff=1024,
    ),
    # CPU-sized: every component of the paper, narrower and shallower (the shipped checkpoint)
    "small": OrionConfig(name="small"),
    # toy size for tests and the conformance kit
    "tiny": OrionConfig(
        name="tiny", max_features=32, d=8, col_inducing=4, col_heads=2, col_blocks=1, col_ff=16, row_heads=2,
        row_ff=16, window=2, memory_slots=4, memory_heads=2, icl_blocks=2, icl_heads=2, icl_ff=32,
    ),
}


def get_config(name_or_config: str | OrionConfig | dict[str, Any] | None = None, **overrides: Any) -> OrionConfig:
    """Resolve a config from a preset name, an :class:`OrionConfig` or a dict.

    A dict may name a ``"preset"`` (default ``"small"``) and override any field; ``None`` values
    mean "keep the preset's value" (the plugin's ``default_config`` form).
    """
    if name_or_config is None:
        name_or_config = "small"
    if isinstance(name_or_config, OrionConfig):
        cfg = name_or_config
    elif isinstance(name_or_config, str):
        if name_or_config not in CONFIGS:
            raise TabzooInputError(
                f"unknown ORION-MSP preset {name_or_config!r}; choose one of {sorted(CONFIGS)} or pass a dict."
            )
        cfg = CONFIGS[name_or_config]
    elif isinstance(name_or_config, dict):
        d = {k: v for k, v in name_or_config.items() if v is not None}
        cfg = get_config(d.pop("preset", "small"))
        known = {f.name for f in fields(OrionConfig)}
        unknown = set(d) - known
        if unknown:
            raise TabzooInputError(
                f"unknown ORION-MSP config keys {sorted(unknown)}; known keys are {sorted(known | {'preset'})}."
            )
        if d:
            cfg = cfg.with_(**d)
    else:
        raise TabzooInputError(
            f"ORION-MSP config must be a preset name, dict or OrionConfig, got {type(name_or_config).__name__}."
        )
    return cfg.with_(**overrides) if overrides else cfg
