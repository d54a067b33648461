"""Per-member views of the context for ensembles of in-context models (any plugin can use them).

An in-context ensemble shows the model the same table several times, each time a little
differently, and averages the outputs. :func:`tabzoo.estimators.make_members` decides *what* each
member sees (feature order or subset, class shift, feature transform, a seed: an
:class:`EnsembleMember`); its :class:`MemberTransform` (``MemberView`` before issue 31) is that decision
fitted on the context rows and applied to any rows, giving the member's *view* of them:

1. **feature transform** (:class:`FeatureTransform`), fitted on the context rows only:
   ``"none"``, ``"power"`` (Yeo-Johnson, lambda per column by maximum likelihood over a grid, then
   standardised) or ``"quantile"`` (empirical CDF of the context, mapped to normal scores).
   Categorical columns are never transformed (their codes are labels, not magnitudes).
2. **category shuffle**: each categorical column's codes are permuted per member (the missing /
   unseen level stays put), so no member's output hinges on an arbitrary ordinal order (as the
   TabPFN and TabICL ensembles do).
3. **feature selection**: the member's feature indices (a permutation, or a subset for wide tables).
4. optional **standardisation** with the context mean and standard deviation of the member's view.

Everything is fitted from ``(member, context)`` deterministically, so a saved estimator rebuilds the
same views at load. Input and output are ``float32 [rows, features]`` as produced by
:class:`tabzoo.estimators.TabularPreprocessor`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tabzoo.deprecation import renamed
from tabzoo.errors import TabzooInputError
from tabzoo.estimators.preprocessing import soft_clip

__all__ = [
    "TRANSFORMS",
    "FeatureTransform",
    "MemberTransform",
    "balanced_subsets",
    "category_tables",
    "check_transforms",
    "fit_member_transforms",
    "EnsembleMember",
    "make_members",
    "member_seed",
    "feature_scores",
    "scored_subsets",
]
# issue 31: one member, two names read as two things; the fitted per-member transform is a MemberTransform
__getattr__ = renamed(__name__, {"MemberView": "MemberTransform", "fit_member_views": "fit_member_transforms"})

TRANSFORMS = ("none", "power", "quantile")
_LAMBDAS = np.linspace(-2.0, 3.0, 51)


def check_transforms(transforms: Any) -> tuple[str, ...]:
    """Validate a ``feature_transforms`` parameter: a non-empty sequence of :data:`TRANSFORMS` names."""
    if isinstance(transforms, str):
        transforms = (transforms,)
    try:
        out = tuple(str(t) for t in transforms)
    except TypeError:
        out = ()
    bad = [t for t in out if t not in TRANSFORMS]
    if not out or bad:
        raise TabzooInputError(
            f"feature_transforms={transforms!r} is not valid; pass a non-empty tuple of {TRANSFORMS}, "
            "e.g. ('none', 'power') to alternate the members between raw and power-transformed features."
        )
    return out


def _yeo_johnson(x: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """Yeo-Johnson transform of ``x [n, f]`` with one lambda per column ``lam [f]`` (float64).

    Each branch is evaluated on its own entries only (x >= 0, else the rest, NaN included): the same
    element-wise operations as evaluating both everywhere and selecting, at half the ``power`` calls.
    """
    out = np.empty_like(x)
    pos = x >= 0
    neg = ~pos
    lam_b = np.broadcast_to(lam, x.shape)
    xp, lp = x[pos], lam_b[pos]
    xn, l2 = x[neg], 2 - lam_b[neg]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out[pos] = np.where(np.abs(lp) < 1e-6, np.log1p(np.maximum(xp, 0)),
                            (np.power(np.maximum(xp, 0) + 1, lp) - 1) / np.where(np.abs(lp) < 1e-6, 1, lp))
        out[neg] = np.where(np.abs(l2) < 1e-6, -np.log1p(np.maximum(-xn, 0)),
                            -(np.power(np.maximum(-xn, 0) + 1, l2) - 1) / np.where(np.abs(l2) < 1e-6, 1, l2))
    return out


def _yeo_johnson_lambda(col: np.ndarray) -> float:
    """Maximum-likelihood lambda of one column over a grid of 51 values in [-2, 3]."""
    n = col.size
    if n < 3 or np.ptp(col) <= 0:
        return 1.0
    grid = _LAMBDAS[None, :]
    t = _yeo_johnson(np.repeat(col[:, None], grid.shape[1], axis=1), np.broadcast_to(grid, (n, grid.shape[1])))
    var = t.var(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        ll = -0.5 * n * np.log(var) + (_LAMBDAS - 1) * np.sum(np.sign(col) * np.log1p(np.abs(col)))
    ll = np.where(np.isfinite(ll) & (var > 1e-12), ll, -np.inf)
    return float(_LAMBDAS[int(np.argmax(ll))]) if np.isfinite(ll).any() else 1.0


def _normal_ppf(p: np.ndarray) -> np.ndarray:
    import torch

    return torch.special.ndtri(torch.from_numpy(np.asarray(p, dtype=np.float64))).numpy()


class FeatureTransform:
    """A per-column transform fitted on context rows.

    :param kind: ``"none"``, ``"power"`` or ``"quantile"``.
    :param skip: column indices left untouched (categorical codes).
    :param n_quantiles: most quantiles kept per column by ``"quantile"``.
    """

    def __init__(self, kind: str = "none", skip: Sequence[int] = (), n_quantiles: int = 1000) -> None:
        if kind not in TRANSFORMS:
            raise TabzooInputError(f"unknown feature transform {kind!r}; use one of {TRANSFORMS}.")
        self.kind = kind
        self.skip = tuple(int(i) for i in skip)
        self.n_quantiles = int(n_quantiles)

    def fit(self, x: np.ndarray) -> FeatureTransform:
        """Fit on context rows ``x [n, f]``."""
        x = np.asarray(x, dtype=np.float64)
        f = x.shape[1]
        self.columns_ = np.array([j for j in range(f) if j not in set(self.skip)], dtype=np.int64)
        xs = x[:, self.columns_]
        if self.kind == "power":
            self.lambdas_ = np.array([_yeo_johnson_lambda(xs[:, j]) for j in range(xs.shape[1])])
            t = _yeo_johnson(xs, self.lambdas_[None, :])
            self.mean_ = t.mean(axis=0) if t.size else np.zeros(0)
            sd = t.std(axis=0) if t.size else np.zeros(0)
            self.std_ = np.where(sd > 1e-12, sd, 1.0)
        elif self.kind == "quantile":
            m = max(2, min(self.n_quantiles, x.shape[0]))
            levels = np.linspace(0.0, 1.0, m)
            self.quantiles_ = np.quantile(xs, levels, axis=0) if xs.size else np.zeros((m, 0))
            self.levels_ = levels
        return self

    def transform(self, x: np.ndarray) -> np.ndarray:
        """Rows ``x [n, f]`` -> transformed ``float32 [n, f]`` (finite)."""
        out = np.array(x, dtype=np.float64, copy=True)
        if self.kind == "none" or self.columns_.size == 0:
            return out.astype(np.float32)
        xs = out[:, self.columns_]
        if self.kind == "power":
            t = (_yeo_johnson(xs, self.lambdas_[None, :]) - self.mean_) / self.std_
        else:
            n = max(2, self.levels_.size)
            lo, hi = 0.5 / n, 1 - 0.5 / n
            t = np.empty_like(xs)
            for j in range(xs.shape[1]):
                q = self.quantiles_[:, j]
                # ties: average the CDF over the tied run (interp from both sides)
                p = 0.5 * (np.interp(xs[:, j], q, self.levels_) + -np.interp(-xs[:, j], -q[::-1], -self.levels_[::-1]))
                t[:, j] = _normal_ppf(np.clip(p, lo, hi))
        out[:, self.columns_] = np.nan_to_num(np.clip(t, -1e6, 1e6))
        return out.astype(np.float32)


def category_tables(preprocessor: Any, columns: Sequence[int]) -> dict[int, np.ndarray]:
    """Per categorical column, the float32 values its codes ``-1, 0, .., m-1`` take after preprocessing."""
    tables: dict[int, np.ndarray] = {}
    for j in columns:
        m = len(preprocessor.columns[j].categories)
        codes = np.arange(-1, m, dtype=np.float64) / preprocessor.prescale[j]
        z = (codes - preprocessor.center[j]) / preprocessor.scale[j]
        tables[j] = soft_clip(z, preprocessor.clip).astype(np.float32)
    return tables


class MemberTransform:
    """One member's view of the rows: transform, category shuffle, feature selection, standardise.

    :param features: feature indices of the member (order matters).
    :param transform: a :data:`TRANSFORMS` name.
    :param seed: seed of the category shuffle.
    :param categorical: indices of categorical columns (never transformed; shuffled).
    :param category_tables: from the preprocessor: per categorical column, its code values.
    :param shuffle_categories: permute the category codes of this member.
    :param standardize: z-score the view with the context mean / standard deviation.
    """

    def __init__(self, features: Sequence[int], transform: str = "none", seed: int = 0,
                 categorical: Sequence[int] = (), category_tables: dict[int, np.ndarray] | None = None,
                 shuffle_categories: bool = True, standardize: bool = False) -> None:
        self.features = np.asarray(features, dtype=np.int64)
        self.transform_kind = transform
        self.seed = int(seed)
        self.categorical = tuple(int(c) for c in categorical)
        self.tables = dict(category_tables or {})
        self.shuffle_categories = bool(shuffle_categories)
        self.standardize = bool(standardize)

    def fit(self, x_context: np.ndarray) -> MemberTransform:
        """Fit the transform (and standardisation) on the context rows ``[n, f]``."""
        rng = np.random.default_rng(self.seed)
        self.perms_: dict[int, np.ndarray] = {}
        if self.shuffle_categories:
            for j in self.categorical:
                vals = self.tables.get(j)
                if vals is None or vals.size < 3:  # fewer than two real categories: nothing to shuffle
                    continue
                perm = np.concatenate([[0], 1 + rng.permutation(vals.size - 1)])  # keep the missing level
                self.perms_[j] = vals[perm]
        self.transformer_ = FeatureTransform(self.transform_kind, skip=self.categorical).fit(x_context)
        self.mean_ = self.std_ = None
        if self.standardize:
            v = self._view(x_context)
            self.mean_ = v.mean(axis=0).astype(np.float32)
            sd = v.std(axis=0)
            self.std_ = np.where(sd > 1e-6, sd, 1.0).astype(np.float32)
        return self

    def _view(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float32)
        if self.perms_:
            x = x.copy()
            for j, new in self.perms_.items():
                vals = self.tables[j]
                idx = np.clip(np.searchsorted(vals, x[:, j]), 0, vals.size - 1)
                lower = np.clip(idx - 1, 0, vals.size - 1)
                idx = np.where(np.abs(vals[lower] - x[:, j]) < np.abs(vals[idx] - x[:, j]), lower, idx)
                x[:, j] = new[idx]
        x = self.transformer_.transform(x)
        return x[:, self.features]

    def apply(self, x: np.ndarray) -> np.ndarray:
        """Rows ``[n, f]`` (preprocessed) -> the member's ``float32 [n, len(features)]``."""
        v = self._view(x)
        if self.mean_ is not None:
            v = (v - self.mean_) / self.std_
        return np.ascontiguousarray(v, dtype=np.float32)


def fit_member_transforms(members: Sequence[Any], x_context: np.ndarray, *, categorical: Sequence[int] = (),
                     preprocessor: Any = None, shuffle_categories: bool = True,
                     standardize: bool = False, sources: Sequence[int] | None = None) -> list[MemberTransform]:
    """A fitted :class:`MemberTransform` per :class:`~tabzoo.estimators.EnsembleMember`.

    :param members: the ensemble members (``features``, ``transform``, ``seed``).
    :param x_context: ``[n_context, f]`` preprocessed context rows.
    :param categorical: categorical column indices of ``x_context``.
    :param preprocessor: the fitted :class:`~tabzoo.estimators.TabularPreprocessor` (for the category
        code values); without it, categories are not shuffled.
    :param sources: the preprocessor column of each entry of ``categorical`` when ``x_context`` is not the
        preprocessor's output column for column (e.g. after a one-hot expansion); default: the same indices.
    """
    cats = [int(c) for c in categorical]
    src = cats if sources is None else [int(c) for c in sources]
    if len(src) != len(cats):
        raise TabzooInputError(f"fit_member_transforms: {len(src)} sources for {len(cats)} categorical columns.")
    by_source = category_tables(preprocessor, sorted(set(src))) if (preprocessor is not None and cats) else {}
    tables = {c: by_source[s] for c, s in zip(cats, src, strict=True)} if by_source else {}
    return [
        MemberTransform(m.features, getattr(m, "transform", "none"), getattr(m, "seed", i), cats, tables,
                   shuffle_categories and bool(tables) and i > 0, standardize).fit(x_context)
        for i, m in enumerate(members)
    ]


def balanced_subsets(n_members: int, n_features: int, size: int, seed: int) -> list[np.ndarray]:
    """Feature subsets for wide tables: ``n_members`` subsets of ``size`` features each, cut from a
    stream of random permutations, so every feature is used about ``n_members * size / n_features``
    times (no feature is left out while another is used twice, when ``n_members * size >= n_features``).
    Each subset is sorted (the model sees the columns in their original order).
    """
    if size < 1 or n_features < size:
        raise TabzooInputError(f"balanced_subsets needs 1 <= size <= n_features, got size={size}, n_features={n_features}.")
    rng = np.random.default_rng(seed)
    stream: list[int] = []
    out = []
    for _ in range(n_members):
        chosen: list[int] = []
        while len(chosen) < size:
            if not stream:
                stream = rng.permutation(n_features).tolist()
            f = stream.pop()
            if f not in chosen:
                chosen.append(f)
        out.append(np.sort(np.asarray(chosen, dtype=np.int64)))
    return out


def feature_scores(x: np.ndarray, y: np.ndarray, n_classes: int | None = None, *, bins: int = 16) -> np.ndarray:
    """Cheap univariate relevance of each feature to the labels, from the training rows only.

    Each column is cut into up to ``bins`` equal-frequency bins (ranks; missing values get a bin of their
    own) and scored by the mutual information between its bin and the label, in nats, minus the
    Miller-Madow bias ``(bins_used - 1)(k - 1) / (2 n)`` so a column with many levels is not favoured
    for its levels alone; clipped at 0. Deterministic (no random draw).

    :param x: ``[n, f]`` training rows (preprocessed; NaN allowed).
    :param y: ``[n]`` integer labels ``0..k-1``.
    :param n_classes: ``k`` (default ``max(y) + 1``).
    :return: ``float64 [f]`` scores >= 0.
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.int64).ravel()
    if x.ndim != 2 or x.shape[0] != y.size:
        raise TabzooInputError(f"feature_scores needs x [n, f] and y [n], got {x.shape} and {y.shape}.")
    n, f = x.shape
    k = int(n_classes) if n_classes is not None else (int(y.max()) + 1 if y.size else 1)
    out = np.zeros(f)
    if n < 2 or k < 2:
        return out
    py = np.bincount(y, minlength=k) / n
    for j in range(f):
        col = x[:, j]
        nan = ~np.isfinite(col)
        codes = np.full(n, bins, dtype=np.int64)
        ok = ~nan
        if ok.any():
            vals = col[ok]
            uniq = np.unique(vals)
            if uniq.size <= bins:
                codes[ok] = np.searchsorted(uniq, vals)
            else:
                edges = np.unique(np.quantile(vals, np.linspace(0, 1, bins + 1)[1:-1]))
                codes[ok] = np.searchsorted(edges, vals, side="right")
        joint = np.zeros((bins + 1, k))
        np.add.at(joint, (codes, y), 1.0)
        joint /= n
        px = joint.sum(axis=1)
        used = px > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = joint * np.log(joint / (px[:, None] * py[None, :]))
        mi = float(np.nansum(terms))
        out[j] = max(0.0, mi - (int(used.sum()) - 1) * (int((py > 0).sum()) - 1) / (2.0 * n))
    return out


def scored_subsets(n_members: int, scores: np.ndarray, size: int, seed: int, top_share: float = 0.75) -> list[np.ndarray]:
    """Feature subsets weighted towards relevant features (:func:`feature_scores`).

    Each of the ``n_members`` subsets keeps the ``round(top_share * size)`` highest-scoring features (ties:
    lower index first) and draws the rest without replacement from the other features with probability
    proportional to ``score + eps`` (``eps`` a small share of the mean score, so an uninformative feature
    can still be drawn). Each subset is sorted; deterministic for ``seed``.

    :param scores: ``[n_features]`` non-negative relevance.
    :param size: features per subset (``1 <= size <= n_features``).
    """
    scores = np.asarray(scores, dtype=np.float64).ravel()
    n_features = scores.size
    if size < 1 or n_features < size:
        raise TabzooInputError(f"scored_subsets needs 1 <= size <= n_features, got size={size}, n_features={n_features}.")
    if not 0.0 <= float(top_share) <= 1.0:
        raise TabzooInputError(f"top_share must be in [0, 1], got {top_share!r}.")
    scores = np.where(np.isfinite(scores) & (scores > 0), scores, 0.0)
    order = np.lexsort((np.arange(n_features), -scores))
    n_top = min(size, int(round(float(top_share) * size)))
    top = order[:n_top]
    rest = order[n_top:]
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_members):
        extra = np.zeros(0, dtype=np.int64)
        if size > n_top:
            w = scores[rest] + 0.05 * (float(scores.mean()) + 1e-12)
            extra = rng.choice(rest, size=size - n_top, replace=False, p=w / w.sum())
        out.append(np.sort(np.concatenate([top, extra]).astype(np.int64)))
    return out


def members_needed(n_features: int, size: int) -> int:
    """Members needed so that :func:`balanced_subsets` covers every feature at least once."""
    return max(1, math.ceil(n_features / max(1, size)))


# -- ensembling members ---------------------------------------------------------------------------
@dataclass(frozen=True)
class EnsembleMember:
    """One ensemble member: which features in which order, the class rotation, its transform.

    :ivar features: indices into the preprocessed features, ``[n_used]`` (a permutation, or a
        subset when the model takes fewer features than the data has).
    :ivar class_shift: class ``c`` is shown to the model as ``(c + class_shift) % n_classes``.
    :ivar transform: feature transform of the member (:data:`TRANSFORMS`).
    :ivar seed: the member's own seed (category shuffles, bin shifts, ...).
    """

    features: tuple[int, ...]
    class_shift: int = 0
    transform: str = "none"
    seed: int = 0


def member_seed(seed: int, i: int) -> int:
    """Seed of member ``i`` of an ensemble seeded ``seed`` (independent of the other draws)."""
    return int(np.random.SeedSequence([int(seed) & 0xFFFFFFFF, 7919, int(i)]).generate_state(1)[0])


def make_members(
    n_estimators: int, n_features: int, n_classes: int, seed: int, max_features: int | None = None,
    *, transforms: Sequence[str] = ("none",), subsample: str = "random",
    scores: np.ndarray | None = None, top_share: float = 0.75,
) -> list[EnsembleMember]:
    """Deterministic members for ``seed``: member 0 keeps the original order and no shift (when
    all features fit); the others use random feature permutations and rotate the classes by
    ``i % n_classes`` so every class takes every position of the head across members.

    :param transforms: member ``i`` gets ``transforms[i % len(transforms)]``.
    :param subsample: when there are more features than ``max_features``: ``"random"`` (each member
        an independent random subset) or ``"balanced"``
        (:func:`balanced_subsets`: every feature used about equally often
        across members; each subset in a random order except member 0's) or ``"scored"``
        (:func:`scored_subsets` of the feature relevance ``scores``, ``top_share`` of each subset the top
        features; in a random order except member 0's).
    :param scores: ``[n_features]`` relevance for ``subsample="scored"`` (:func:`feature_scores`).
    """
    if n_estimators < 1:
        raise TabzooInputError(f"n_estimators must be >= 1, got {n_estimators}.")
    if subsample not in ("random", "balanced", "scored"):
        raise TabzooInputError(f"subsample must be 'random', 'balanced' or 'scored', got {subsample!r}.")
    if subsample == "scored" and (scores is None or np.asarray(scores).size != n_features):
        raise TabzooInputError(f"subsample='scored' needs scores for each of the {n_features} features.")
    transforms = tuple(transforms) or ("none",)
    rng = np.random.default_rng(seed)
    used = n_features if max_features is None else min(n_features, int(max_features))
    subsets = None
    if used < n_features and subsample == "balanced":
        subsets = balanced_subsets(n_estimators, n_features, used, member_seed(seed, 2**31 - 1))
    elif used < n_features and subsample == "scored":
        assert scores is not None
        subsets = scored_subsets(n_estimators, scores, used, member_seed(seed, 2**31 - 1), top_share)
    members = []
    for i in range(n_estimators):
        if i == 0 and used == n_features:
            feats = np.arange(n_features)
        elif subsets is not None:
            feats = subsets[i] if i == 0 else rng.permutation(subsets[i])
        else:
            feats = rng.permutation(n_features)[:used]
            if used < n_features and i == 0:
                feats = np.sort(feats)
        shift = i % n_classes if n_classes > 1 else 0
        members.append(EnsembleMember(tuple(int(f) for f in feats), int(shift), str(transforms[i % len(transforms)]),
                                      member_seed(seed, i)))
    return members
