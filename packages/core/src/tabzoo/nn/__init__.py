"""tabzoo.nn: shared building blocks for tabular in-context models.

Attention dispatches through :mod:`tabzoo.kernels` and takes :class:`tabzoo.masks.Mask` objects.
"""

from tabzoo.nn.attention import AttentionKind, MaskLike, MultiHeadAttention, resolve_mask
from tabzoo.nn.encodings import LinearEncoding, PiecewiseLinearEncoding
from tabzoo.nn.heads import ClassificationHead, MLPHead
from tabzoo.nn.labels import LabelEmbedding, add_label_embedding
from tabzoo.nn.rope import RotaryEmbedding, apply_rope, rope_inv_freq
from tabzoo.nn.set_blocks import ISAB, MAB, PMA
from tabzoo.nn.transformer import (
    CrossAttentionBlock,
    FeedForward,
    TransformerBlock,
    make_activation,
)

__all__ = [
    "AttentionKind",
    "ClassificationHead",
    "CrossAttentionBlock",
    "FeedForward",
    "ISAB",
    "LabelEmbedding",
    "LinearEncoding",
    "MAB",
    "MLPHead",
    "MaskLike",
    "MultiHeadAttention",
    "PMA",
    "PiecewiseLinearEncoding",
    "RotaryEmbedding",
    "TransformerBlock",
    "add_label_embedding",
    "apply_rope",
    "make_activation",
    "resolve_mask",
    "rope_inv_freq",
]
