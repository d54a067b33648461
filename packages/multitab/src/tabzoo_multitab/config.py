"""Task specifications and the MultiTab-Net configuration (JSON-able, stored in checkpoints)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from tabzoo.errors import TabzooInputError

__all__ = ["TASK_KINDS", "MASK_MODES", "TOKEN_MODES", "ROW_SCOPES", "NUM_EMBEDDINGS", "DROPOUT_MASKS", "DROPOUT_SITES", "TaskSpec",
           "MultiTabConfig", "parse_tasks"]

TASK_KINDS = ("binary", "multiclass", "regression")
#: inter-feature mask modes: the paper's T↛T (default), F↛T, both, and no mask
MASK_MODES = ("T-/->T", "F-/->T", "both", "none")
#: one task token per task (the paper's design) or one shared token
TOKEN_MODES = ("multi", "single")
#: what inter-sample attention reads: the other rows (the paper), or each row only itself
ROW_SCOPES = ("rows", "self")
#: numeric embeddings (:class:`tabzoo_multitab.embedding.FeatureEmbedding`): the paper's linear one, or PLR
NUM_EMBEDDINGS = ("linear", "plr")
#: keys added after checkpoints were first written, with the value that reproduces those checkpoints
_LEGACY_DEFAULTS = {"num_embedding": "linear", "skip_hidden": 0, "skip_layers": 1, "dropout_masks": "bernoulli",
                    "dropout_sites": "all"}
#: dropout mask draws (:mod:`tabzoo_multitab.dropout`): torch's per-element Bernoulli, or 16-bit random words
DROPOUT_MASKS = ("bernoulli", "words")
#: where dropout acts: every site, or only after hidden activations (none on the residual branches)
DROPOUT_SITES = ("all", "hidden")
_MASK_ALIASES = {"T-/->T": "T-/->T", "T↛T": "T-/->T", "F-/->T": "F-/->T", "F↛T": "F-/->T",
                 "both": "both", "F↛T&T↛T": "both", "none": "none", "full": "none"}


@dataclass(frozen=True)
class TaskSpec:
    """One task: ``kind`` in :data:`TASK_KINDS`; ``n_classes`` for multiclass (2 for binary, 0 for regression).

    :param name: the task's name (a target column).
    """

    name: str
    kind: str
    n_classes: int = 0

    def __post_init__(self) -> None:
        if self.kind not in TASK_KINDS:
            raise TabzooInputError(f"task {self.name!r}: kind {self.kind!r} is not one of {TASK_KINDS}.")
        n = {"binary": 2, "regression": 0}.get(self.kind, self.n_classes)
        if self.kind == "multiclass" and n < 2:
            raise TabzooInputError(f"task {self.name!r}: multiclass needs n_classes >= 2, got {n}.")
        object.__setattr__(self, "n_classes", int(n))

    @property
    def n_out(self) -> int:
        """Outputs of this task's head: 1 logit (binary), ``n_classes`` logits, or 1 value."""
        return self.n_classes if self.kind == "multiclass" else 1


def parse_tasks(tasks: Sequence[TaskSpec | Mapping[str, Any] | Sequence[Any]]) -> tuple[TaskSpec, ...]:
    """Tasks from specs, dicts ``{"name", "kind", "n_classes"}`` or ``(name, kind, n_classes)`` lists."""
    out = []
    for t in tasks:
        if isinstance(t, TaskSpec):
            out.append(t)
        elif isinstance(t, Mapping):
            out.append(TaskSpec(str(t["name"]), str(t["kind"]), int(t.get("n_classes", 0))))
        else:
            out.append(TaskSpec(str(t[0]), str(t[1]), int(t[2]) if len(t) > 2 else 0))
    if not out:
        raise TabzooInputError("a multitask model needs at least one task; pass tasks=[...].")
    names = [t.name for t in out]
    if len(set(names)) != len(names):
        raise TabzooInputError(f"task names must be unique, got {names}; rename the duplicates.")
    return tuple(out)


@dataclass(frozen=True)
class MultiTabConfig:
    """MultiTab-Net hyperparameters (paper appendix: embedding 16, 4 heads; here smaller defaults).

    :param n_num: numeric feature columns.
    :param cat_cardinalities: categories seen in training, per categorical column (index 0 of
        each column's table is reserved for unseen or missing categories).
    :param tasks: the tasks, in output order.
    :param d_embed: token width ``e``.
    :param n_layers: encoder blocks ``N``. ``1`` is the speed setting: an epoch within 1.5x MMoE's
        (1.35x at 300 rows / batch 32, 1.47x at 3,000 / 256, against 2.09x / 2.60x with 2:
        ``benchmarks/results/multitab-epoch-fast-2026-11-29.json``) at a mean validation EV 0.0005
        below 2 on 12 grid draws (``multitab-backbone-c-2026-11-29.json``). This dataclass's default
        stays 2 (checkpoints store the value; the conformance kit pins 2); the estimator's default is
        1 since 2026-11-29, with guarded selection (:class:`~tabzoo_multitab.estimator.MultiTabEstimator`).
        Counting the validation pass, one block is 1.58x / 1.49x MMoE's epoch at 3,000 rows with 3 / 5
        tasks (``multitab-epoch-guarded{,-b}-2026-11-29.json``).
    :param n_heads: inter-feature attention heads (must divide ``d_embed``).
    :param row_heads: inter-sample attention heads (must divide the inter-sample width: ``(d + t) * e``,
        or ``row_dim``).
    :param ff_mult: feed-forward width as a multiple of the token width (inter-feature).
    :param row_ff_mult: feed-forward width as a multiple of ``(d + t) * e`` (inter-sample).
    :param mask: inter-feature multitask mask: ``"T-/->T"`` (default), ``"F-/->T"``, ``"both"``, ``"none"``.
    :param inter_sample: whether blocks hold inter-sample attention.
    :param row_dim: width of the inter-sample block. ``0`` (default, the paper's design) = the whole
        flattened row, ``(d + t) * e``; ``r > 0`` = a narrower block: the normalised row is
        projected down to ``r``, attended across rows and fed forward at width ``r``, and projected
        back up onto the row as a residual update (``6 ((d + t) e)^2`` multiply-adds per row and
        layer become ``2 (d + t) e r + 6 r^2``; a departure from the paper, for speed).
    :param row_scope: what the inter-sample attention reads: ``"rows"`` (default, the paper) = the
        other rows of the set; ``"self"`` = each row only itself, so the block is a per-row
        transformer layer over the flattened row (what the authors' rotary variant computed: it
        attended over a sequence of length 1).
    :param head_hidden: hidden width of each task head's MLP.
    :param dropout: dropout of the attention and feed-forward outputs.
    :param task_tokens: ``"multi"`` = one token per task (the paper's design), ``"single"`` = one
        shared token that every task head reads (the paper's Table 2 ablation; only ``"F-/->T"``
        or ``"none"`` masks apply to it).
    :param num_embedding: numeric feature tokens: ``"linear"`` (the paper: ``v * W_j + b_j``) or
        ``"plr"`` (periodic-linear-ReLU, Gorishniy et al. 2022; see
        :class:`~tabzoo_multitab.embedding.FeatureEmbedding`).
    :param plr_frequencies: frequencies per numeric column (PLR).
    :param plr_sigma: standard deviation of the initial PLR frequencies (inputs are z-scores).
    :param skip_hidden: ``h > 0`` adds a skip path (a departure from the paper; an MLP branch beside
        the feature attention, as in AutoInt+, Song et al. 2019): the
        flattened feature tokens ``[d * e]`` of a row through ``skip_layers`` x ``(Linear(., h) -> GELU -> dropout)`` then ``Linear(h,
        t e)``, added to the task tokens after the encoder's last LayerNorm, before the heads; a
        per-row path (rows still meet only in the inter-sample attention). ``0`` = none (the paper);
        default 128 (issue 26: ``benchmarks/results/multitab-backbone-2026-11-29.json``).
    :param skip_layers: hidden layers of the skip path (each ``skip_hidden`` wide, GELU, dropout);
        default 2, chosen on validation over 1 in a second round
        (``benchmarks/results/multitab-backbone-b-2026-11-29.json``).
    :param dropout_masks: how dropout masks are drawn in training: ``"bernoulli"`` (torch's
        ``nn.Dropout``, one Bernoulli sample per element; the default, and every checkpoint before
        the option) or ``"words"`` (:class:`~tabzoo_multitab.dropout.WordDropout`: one 32-bit random
        word per two elements, the same probability to ``2**-16``; a different random stream, so
        trained numbers differ). Prediction is the same either way (dropout is off in eval mode).
        This dataclass keeps ``"bernoulli"``; the estimator's default is ``"words"`` since
        2026-11-29 (issue 26's epoch time: :class:`~tabzoo_multitab.estimator.MultiTabEstimator`).
    :param dropout_sites: ``"all"`` (default, every checkpoint before the option): dropout on the
        attention outputs, the feed-forward hidden layers and outputs of both attention blocks, and
        the skip path's hidden layers; ``"hidden"``: only after hidden activations (the feed-forward
        hidden layers and the skip path), none on the attention and feed-forward outputs added to
        the residual stream (FT-Transformer's default, ``residual_dropout=0``: Gorishniy et al.
        2021); 4 of the 8 sites of a one-block model and ~40% of its dropped values fewer.
    """

    n_num: int
    cat_cardinalities: tuple[int, ...] = ()
    tasks: tuple[TaskSpec, ...] = field(default_factory=tuple)
    d_embed: int = 16
    n_layers: int = 2
    n_heads: int = 4
    row_heads: int = 4
    ff_mult: int = 2
    row_ff_mult: int = 1
    mask: str = "T-/->T"
    inter_sample: bool = True
    head_hidden: int = 32
    dropout: float = 0.1
    task_tokens: str = "multi"
    row_dim: int = 0
    row_scope: str = "rows"
    num_embedding: str = "linear"
    plr_frequencies: int = 16
    plr_sigma: float = 0.1
    skip_hidden: int = 128
    skip_layers: int = 2
    dropout_masks: str = "bernoulli"
    dropout_sites: str = "all"

    def __post_init__(self) -> None:
        object.__setattr__(self, "tasks", parse_tasks(self.tasks))
        object.__setattr__(self, "cat_cardinalities", tuple(int(c) for c in self.cat_cardinalities))
        mode = _MASK_ALIASES.get(self.mask) if isinstance(self.mask, str) else None
        if mode is None:
            raise TabzooInputError(f"mask {self.mask!r} is unknown; use one of {MASK_MODES}.")
        object.__setattr__(self, "mask", mode)
        if self.task_tokens not in TOKEN_MODES:
            raise TabzooInputError(f"task_tokens={self.task_tokens!r}: use one of {TOKEN_MODES}.")
        if self.task_tokens == "single" and mode in ("T-/->T", "both"):
            raise TabzooInputError(f"mask {mode!r} masks task tokens from each other, which a single shared task "
                                   "token does not have; use mask='F-/->T' or 'none' with task_tokens='single'.")
        if self.n_num < 0 or any(c < 1 for c in self.cat_cardinalities) or self.n_features < 1:
            raise TabzooInputError(
                f"need >= 1 feature column and cardinalities >= 1, got n_num={self.n_num}, "
                f"cat_cardinalities={self.cat_cardinalities}."
            )
        if self.d_embed % self.n_heads:
            raise TabzooInputError(f"n_heads={self.n_heads} must divide d_embed={self.d_embed}.")
        if self.row_scope not in ROW_SCOPES:
            raise TabzooInputError(f"row_scope={self.row_scope!r}: use one of {ROW_SCOPES}.")
        if self.num_embedding not in NUM_EMBEDDINGS:
            raise TabzooInputError(f"num_embedding={self.num_embedding!r}: use one of {NUM_EMBEDDINGS}.")
        if self.plr_frequencies < 1 or not self.plr_sigma > 0:
            raise TabzooInputError(f"plr_frequencies={self.plr_frequencies} must be >= 1 and plr_sigma={self.plr_sigma} > 0.")
        if self.dropout_masks not in DROPOUT_MASKS:
            raise TabzooInputError(f"dropout_masks={self.dropout_masks!r}: use one of {DROPOUT_MASKS}.")
        if self.dropout_sites not in DROPOUT_SITES:
            raise TabzooInputError(f"dropout_sites={self.dropout_sites!r}: use one of {DROPOUT_SITES}.")
        if self.skip_layers < 1:
            raise TabzooInputError(f"skip_layers={self.skip_layers}: the skip path needs >= 1 hidden layer.")
        if self.skip_hidden < 0:
            raise TabzooInputError(f"skip_hidden={self.skip_hidden}: use 0 (no skip path) or a width >= 1.")
        if self.row_dim < 0:
            raise TabzooInputError(f"row_dim={self.row_dim}: use 0 (the whole flattened row) or a width >= 1.")
        if self.inter_sample and self.row_inner % self.row_heads:
            what = "row_dim" if self.row_dim else "(features + tasks) * d_embed"
            raise TabzooInputError(
                f"row_heads={self.row_heads} must divide {what} = {self.row_inner}; "
                "pick row_heads dividing it (1 always works)."
            )

    @property
    def n_features(self) -> int:
        return self.n_num + len(self.cat_cardinalities)

    @property
    def n_tasks(self) -> int:
        return len(self.tasks)

    @property
    def n_task_tokens(self) -> int:
        """Task tokens in the sequence: one per task, or one shared."""
        return 1 if self.task_tokens == "single" else self.n_tasks

    @property
    def n_tokens(self) -> int:
        return self.n_features + self.n_task_tokens

    @property
    def row_width(self) -> int:
        """Width of a flattened row for inter-sample attention: ``(d + task tokens) * e``."""
        return self.n_tokens * self.d_embed

    @property
    def row_inner(self) -> int:
        """Width at which inter-sample attention and its feed-forward run: ``row_dim`` or ``row_width``."""
        return self.row_dim or self.row_width

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (for checkpoints); :meth:`from_dict` inverts it."""
        d = asdict(self)
        d["cat_cardinalities"] = list(self.cat_cardinalities)
        d["tasks"] = [[t.name, t.kind, t.n_classes] for t in self.tasks]
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> MultiTabConfig:
        known = set(cls.__dataclass_fields__)
        unknown = set(d) - known
        if unknown:
            raise TabzooInputError(f"MultiTab config has no keys {sorted(unknown)}; known keys are {sorted(known)}.")
        # a checkpoint written before an option existed was trained without it
        d = {**_LEGACY_DEFAULTS, **d}
        d["tasks"] = parse_tasks(d.get("tasks", ()))
        d["cat_cardinalities"] = tuple(d.get("cat_cardinalities", ()))
        return cls(**d)
