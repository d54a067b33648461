"""TabFlex model configurations.

The three paper models (TabFlex paper, section 5 and appendix C.2) share one architecture: width 512,
4 heads of 128, 12 post-norm layers, a ReLU feed-forward of 1024 and a GELU decoder 512 -> 1024 ->
classes. They differ in what they were trained on, which is also what conditional model selection
(:mod:`tabzoo_tabflex.selection`) keys on:

========  ============  =====================  ===========  ==========================
name      max features  training prompt rows   max classes  used for (Algorithm 1)
========  ============  =====================  ===========  ==========================
S100      100           1152 (as TabPFN)       10           small data, n < 3000, d <= 100
L100      100           50,000                 10           n >= 3000 and d <= 100
H1K       1000          50,000                 10           d > 100 (projected when d > 1000)
========  ============  =====================  ===========  ==========================

The paper trains them with learning rate 3e-5 on one A100 (S100: batch 1210, 8 epochs of 8192 steps;
L100: batch 110, 4 x 8192; H1K: batch 1410, 4 x 1024) - weeks of GPU time. ``small`` is the S100
shape scaled down (width 128, 4 layers) so that a 2-core CPU can pretrain it on hundreds of
thousands of episodes; it is the checkpoint this package ships.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

from tabzoo.errors import TabzooInputError

__all__ = ["TabFlexConfig", "CONFIGS", "get_config", "TrainingRecipe"]


@dataclass(frozen=True)
class TrainingRecipe:
    """What the paper trained a config on (appendix C.2, Table 6); informational for GPU runs.

    :param rows: prompt length (context + query rows) of a training episode.
    :param batch_size: episodes per step.
    :param lr: learning rate.
    :param epochs: epochs.
    :param steps_per_epoch: steps per epoch.
    """

    rows: int
    batch_size: int
    lr: float
    epochs: int
    steps_per_epoch: int


@dataclass(frozen=True)
class TabFlexConfig:
    """Shape of one TabFlex model.

    :param name: config name (``"S100"``, ``"L100"``, ``"H1K"``, ``"small"`` or a custom one).
    :param max_features: width of the x encoder; inputs are zero-padded up to it.
    :param max_classes: logits of the decoder (the head's class limit).
    :param d_model: token width.
    :param n_heads: attention heads (must divide ``d_model``).
    :param n_layers: post-norm linear-attention layers.
    :param d_ff: feed-forward hidden width (ReLU).
    :param d_decoder: decoder hidden width (GELU).
    :param dropout: dropout in the layers (0 in the paper's inference).
    :param attention: ``"linear"`` (TabFlex) or ``"softmax"`` (the dense quadratic baseline, same weights shape).
    :param train_rows: prompt length of its training episodes; conditional selection treats datasets
        larger than ``3000`` rows as out of range for models trained on short prompts.
    :param recipe: the paper's training recipe, if any.
    """

    name: str = "small"
    max_features: int = 100
    max_classes: int = 10
    d_model: int = 128
    n_heads: int = 4
    n_layers: int = 4
    d_ff: int = 256
    d_decoder: int = 256
    dropout: float = 0.0
    attention: Literal["linear", "softmax"] = "linear"
    train_rows: int = 1152
    recipe: TrainingRecipe | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.max_features < 1 or self.max_classes < 2:
            raise TabzooInputError(
                f"TabFlex config {self.name!r}: max_features must be >= 1 and max_classes >= 2, "
                f"got {self.max_features} and {self.max_classes}."
            )
        if self.d_model % self.n_heads:
            raise TabzooInputError(
                f"TabFlex config {self.name!r}: d_model={self.d_model} is not divisible by n_heads={self.n_heads}; "
                "choose n_heads dividing d_model."
            )
        if self.attention not in ("linear", "softmax"):
            raise TabzooInputError(f"TabFlex attention must be 'linear' or 'softmax', got {self.attention!r}.")
        if self.n_layers < 1 or self.d_ff < 1 or self.d_decoder < 1:
            raise TabzooInputError(f"TabFlex config {self.name!r}: n_layers, d_ff and d_decoder must be >= 1.")

    def to_dict(self) -> dict[str, Any]:
        """JSON-able dict (what checkpoints store); ``recipe`` is dropped."""
        d = asdict(self)
        d.pop("recipe", None)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TabFlexConfig:
        """Build from :meth:`to_dict` output (unknown keys are an error naming the known ones)."""
        known = {f.name for f in fields(cls)} - {"recipe"}
        unknown = set(d) - known
        if unknown:
            raise TabzooInputError(
                f"unknown TabFlex config keys {sorted(unknown)}; known keys are {sorted(known)}."
            )
        return cls(**d)

    def with_(self, **changes: Any) -> TabFlexConfig:
        """A copy with some fields changed."""
        return replace(self, **changes)


_PAPER = dict(d_model=512, n_heads=4, n_layers=12, d_ff=1024, d_decoder=1024, max_classes=10)

CONFIGS: dict[str, TabFlexConfig] = {
    "S100": TabFlexConfig(
        name="S100", max_features=100, train_rows=1152, recipe=TrainingRecipe(1152, 1210, 3e-5, 8, 8192), **_PAPER
    ),
    "L100": TabFlexConfig(
        name="L100", max_features=100, train_rows=50_000, recipe=TrainingRecipe(50_000, 110, 3e-5, 4, 8192), **_PAPER
    ),
    "H1K": TabFlexConfig(
        name="H1K", max_features=1000, train_rows=50_000, recipe=TrainingRecipe(50_000, 1410, 3e-5, 4, 1024), **_PAPER
    ),
    # CPU-sized S100: same inputs/outputs (100 features, 10 classes), 0.55M parameters.
    "small": TabFlexConfig(name="small", max_features=100, train_rows=512),
    # a toy size for tests and the conformance kit
    "tiny": TabFlexConfig(name="tiny", max_features=16, max_classes=10, d_model=32, n_heads=2, n_layers=2,
                          d_ff=64, d_decoder=64, train_rows=128),
}


def get_config(name_or_config: str | TabFlexConfig | dict[str, Any], **overrides: Any) -> TabFlexConfig:
    """Resolve a config by name (``"S100"``, ``"L100"``, ``"H1K"``, ``"small"``, ``"tiny"``), dict or object.

    A dict may name a ``"preset"`` (default ``"small"``) and override any field; ``None`` values mean
    "keep the preset's value" (this is the plugin's ``default_config`` form).

    :param overrides: fields to change, e.g. ``attention="softmax"``.
    """
    if isinstance(name_or_config, TabFlexConfig):
        cfg = name_or_config
    elif isinstance(name_or_config, dict):
        d = {k: v for k, v in name_or_config.items() if v is not None}
        cfg = get_config(d.pop("preset", "small"))
        if d:
            known = {f.name for f in fields(TabFlexConfig)} - {"recipe"}
            unknown = set(d) - known
            if unknown:
                raise TabzooInputError(
                    f"unknown TabFlex config keys {sorted(unknown)}; known keys are {sorted(known | {'preset'})}."
                )
            cfg = cfg.with_(**d)
    elif isinstance(name_or_config, str):
        if name_or_config not in CONFIGS:
            raise TabzooInputError(
                f"unknown TabFlex config {name_or_config!r}; choose one of {sorted(CONFIGS)} "
                "or pass a TabFlexConfig."
            )
        cfg = CONFIGS[name_or_config]
    else:
        raise TabzooInputError(f"TabFlex config must be a name, dict or TabFlexConfig, got {type(name_or_config).__name__}.")
    return cfg.with_(**overrides) if overrides else cfg
