"""scikit-learn estimator :class:`OrionMSPClassifier`, built on :mod:`tabzoo.estimators`.

From the core it takes preprocessing (ordinal categoricals, missing values, robust scaling, soft
clipping, all fitted on the training rows), ensembling over feature shuffles and class shifts, query
chunking, device selection and pickle-free save/load. What ORION-MSP adds:

* **weights**: the checkpoint shipped as package data (``orion-msp-small``) loads by default, offline;
  ``checkpoint=`` also takes a path stem of a ``.safetensors`` + ``.json`` pair;
* **temperature**: each member's logits are divided by ``softmax_temperature`` (0.9, appendix B.3.4),
  the members' log-probabilities averaged (the authors average logits), then normalised;
* **many classes**: beyond the head's ``C_max`` the classes are split into balanced contiguous
  groups, recursively, and ``p(c) = p(group) p(c | group)`` (appendix A.6;
  :mod:`tabzoo.estimators.hierarchy`);
* **wide tables**: beyond the model's ``max_features`` (or 30 features, when an inner split of the
  training rows prefers it: ``member_features="auto"``) each member sees a feature subset, three quarters
  of it the most relevant features on the training rows (``feature_selection="scored"``; ``"balanced"``
  uses every feature about equally often); the seeds come from ``random_state``;
* **a linear member** (``linear_blend="auto"``): a logistic regression on the same training rows is
  blended into the log-probabilities with a weight in {0, 0.25, 0.5} chosen on that inner split;
* **member views** (the core's :mod:`tabzoo.estimators.members`): members alternate the
  ``feature_transforms`` (none / Yeo-Johnson power, fitted on the context rows), and members after
  the first permute the category codes of categorical columns (``categorical_features``);
* **empty feature tokens** (``pad_features=True``): every member is run over ``max_features``
  feature tokens, its real features plus empty ones, which is what the checkpoint saw in
  pretraining (the trainer pads episodes to ``max_features`` columns; a batch keeps them up to its
  widest episode). Cutting them changes the row stage's attention, and the predictions drift to
  the majority class: on breast_cancer / wine (one split, one member) ROC-AUC 0.732 / 0.641 without
  them, 0.905 / 0.833 with them;
* **the fast path for wide tables** (``wide_features=N``): members read up to ``N`` features at once
  instead of subsets of ``max_features`` (:meth:`OrionMSP.widen`); above ~312 features a row has
  >= 320 tokens and its attention runs on the block-sparse ``banded`` kernel, linear in the
  features. Its predictions equal those of the dense masked attention (same mask, fp32 rounding);
  speed measured in ``benchmarks/orion_msp_wide.py``. Off by default: the checkpoint was pretrained
  on at most 100 features, and the accuracy of whole wide tables is not yet measured against subsets.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch
from tabzoo.checkpoint import load_shipped_model, shipped_dir
from tabzoo.checkpoint import shipped_checkpoints as _shipped
from tabzoo.errors import TabzooInputError
from tabzoo.estimators import InContextClassifier, class_balance
from tabzoo.estimators.base import _seed_from
from tabzoo.estimators.forward import ConcatForward
from tabzoo.estimators.members import EnsembleMember, check_transforms, feature_scores, make_members
from tabzoo.metrics import roc_auc
from tabzoo.train.finetune import FineTune, FineTuneMixin, resolve_fine_tune

from tabzoo_orion_msp.fine_tune import AUTO, auto_fine_tune, auto_record, check_fine_tune
from tabzoo_orion_msp.model import OrionMSP

logger = logging.getLogger(__name__)

#: ``class_balance``: the most times one context row is repeated (bounds the context's growth)
MAX_REPEAT = 64
#: ``member_features="auto"``: tables with more features than this try members of this many scored features
AUTO_MEMBER_FEATURES = 30
#: ``member_features="auto"``: share of the training rows held out by the inner split, and its most query rows
INNER_HOLDOUT = 0.25
INNER_MAX_QUERY = 1000
#: ``feature_selection``: how members with fewer features than the table choose them
FEATURE_SELECTIONS = ("scored", "balanced")
#: ``linear_blend="auto"``: the weights of the linear model's log-probabilities the inner split chooses from
BLEND_WEIGHTS = (0.0, 0.25, 0.5)
#: ``fine_tune_["inner_split"]`` when fine-tuning ran on the inner split shared with ``linear_blend="auto"``
SHARED_SPLIT = "shared with linear_blend='auto' (inner_split)"


class LinearMember:
    """A multinomial logistic regression on the preprocessed training rows, the linear member of
    ``linear_blend``: numeric columns standardised (NaN -> 0, plus a missing indicator where the training rows
    have NaN), categorical columns one-hot over their levels seen at least :attr:`min_count` times (at most
    :attr:`max_levels` per column; rarer levels are all-zero). Its parameters are plain arrays (saved pickle-free).

    :param C: inverse L2 strength (scikit-learn's ``LogisticRegression(C=1.0)``).
    :param categorical: indices of categorical columns of the rows it is given.
    """

    min_count = 5
    max_levels = 30

    def __init__(self, C: float = 1.0, categorical: tuple[int, ...] | list[int] = ()) -> None:
        self.C = float(C)
        self.categorical = [int(c) for c in categorical]

    def _design(self, x: np.ndarray) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        parts = [
            np.nan_to_num(x[:, self.numeric_]),
            np.isnan(x[:, self.missing_]).astype(np.float64),
        ]
        parts += [
            (x[:, [j]] == lv[None, :]).astype(np.float64)
            for j, lv in zip(self.categorical, self.levels_, strict=True)
        ]
        return np.concatenate(parts, axis=1)

    def fit(self, x: np.ndarray, y: np.ndarray, n_classes: int) -> LinearMember:
        """``x [n, f]`` preprocessed rows, ``y [n]`` labels ``0..k-1``."""
        from sklearn.linear_model import LogisticRegression

        x = np.asarray(x, dtype=np.float64)
        cats = set(self.categorical)
        self.numeric_ = np.array([j for j in range(x.shape[1]) if j not in cats], dtype=np.int64)
        self.missing_ = np.array(
            [j for j in self.numeric_ if np.isnan(x[:, j]).any()], dtype=np.int64
        )
        self.levels_ = []
        for j in self.categorical:
            vals, counts = np.unique(x[:, j][np.isfinite(x[:, j])], return_counts=True)
            keep = np.argsort(-counts, kind="stable")[: self.max_levels]
            keep = keep[counts[keep] >= self.min_count]
            self.levels_.append(np.sort(vals[keep]))
        d = self._design(x)
        self.mean_ = d.mean(axis=0)
        sd = d.std(axis=0)
        self.scale_ = np.where(sd > 1e-9, sd, 1.0)
        z = (d - self.mean_) / self.scale_
        present = np.unique(y)
        self.coef_ = np.zeros((n_classes, d.shape[1]))
        self.intercept_ = np.full(n_classes, -30.0)  # a class absent from the rows: ~0 probability
        if present.size == 1:
            self.intercept_[present] = 0.0
            return self
        lr = LogisticRegression(C=self.C, max_iter=1000).fit(z, y)
        if present.size == 2:  # scikit-learn's binary model: one logit, for the second class
            self.coef_[present[1]] = lr.coef_[0]
            self.intercept_[present[1]] = lr.intercept_[0]
            self.intercept_[present[0]] = 0.0
        else:
            self.coef_[present] = lr.coef_
            self.intercept_[present] = lr.intercept_
        return self

    def log_proba(self, x: np.ndarray) -> np.ndarray:
        """``[n, k]`` log-probabilities of preprocessed rows ``x [n, f]``."""
        z = (self._design(x) - self.mean_) / self.scale_
        logits = z @ self.coef_.T + self.intercept_
        logits -= logits.max(axis=1, keepdims=True)
        return logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))

    def state(self) -> dict[str, Any]:
        """Plain lists (JSON) of the fitted parameters."""
        return {
            "C": self.C,
            "categorical": self.categorical,
            "numeric": self.numeric_.tolist(),
            "missing": self.missing_.tolist(),
            "levels": [lv.tolist() for lv in self.levels_],
            "mean": self.mean_.tolist(),
            "scale": self.scale_.tolist(),
            "coef": self.coef_.tolist(),
            "intercept": self.intercept_.tolist(),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> LinearMember:
        """The member of :meth:`state`."""
        out = cls(float(state["C"]), state["categorical"])
        out.numeric_ = np.asarray(state["numeric"], dtype=np.int64)
        out.missing_ = np.asarray(state["missing"], dtype=np.int64)
        out.levels_ = [np.asarray(lv, dtype=np.float64) for lv in state["levels"]]
        out.mean_, out.scale_ = np.asarray(state["mean"]), np.asarray(state["scale"])
        out.coef_, out.intercept_ = np.asarray(state["coef"]), np.asarray(state["intercept"])
        return out


def blend(proba: np.ndarray, linear_log_proba: np.ndarray, weight: float) -> np.ndarray:
    """``(1 - w) log p_orion + w log p_linear``, normalised: ``[n, k]`` probabilities."""
    if weight <= 0:
        return proba
    logp = (1 - weight) * np.log(np.clip(proba, 1e-300, None)) + weight * linear_log_proba
    logp -= logp.max(axis=1, keepdims=True)
    out = np.exp(logp)
    return out / out.sum(axis=1, keepdims=True)


def _mean_ovr_auc(y: np.ndarray, proba: np.ndarray) -> float:
    """Mean one-vs-rest ROC-AUC (:func:`tabzoo.metrics.roc_auc`, ties half) of ``proba [n, k]`` for labels
    ``y [n]`` over the classes present; NaN when fewer than two are."""
    aucs = [roc_auc(y == c, proba[:, int(c)]) for c in np.unique(y)]
    aucs = [a for a in aucs if not np.isnan(a)]
    return float(np.mean(aucs)) if aucs else float("nan")


def inner_split(
    y: np.ndarray,
    seed: int,
    share: float = INNER_HOLDOUT,
    max_query: int = INNER_MAX_QUERY,
    x: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """A class-stratified split of the training rows ``y [n]`` into (inner context, inner holdout) positions.

    Each class holds out ``round(share * n_c)`` rows (none of a class with one row), at most ``max_query`` in
    all (proportionally fewer per class); deterministic for ``seed``. With the rows ``x [n, f]`` the held-out
    rows of a class are those with the smallest seeded projection of their content (as ``max_context_rows``
    chooses), so the split does not depend on the order of the training rows; without, a seeded permutation.
    Both are sorted.
    """
    y = np.asarray(y, dtype=np.int64)
    rng = np.random.default_rng([int(seed) & 0xFFFFFFFF, 27182])
    if x is not None:
        xf = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0, posinf=0.0, neginf=0.0)
        key = xf @ rng.standard_normal(xf.shape[1])
    else:
        key = rng.permutation(y.size).astype(np.float64)
    scale = min(1.0, max_query / max(1.0, share * y.size))
    hold = []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        m = min(int(round(share * scale * idx.size)), idx.size - 1)
        if m > 0:
            hold.append(idx[np.argsort(key[idx], kind="stable")[:m]])
    held = np.sort(np.concatenate(hold)) if hold else np.zeros(0, dtype=np.int64)
    mask = np.ones(y.size, dtype=bool)
    mask[held] = False
    return np.flatnonzero(mask), held


class RepeatForward(ConcatForward):
    """:class:`~tabzoo.estimators.forward.ConcatForward` that takes the core's ``class_balance`` by
    repeating each context row ``round(w)`` times (at most :data:`MAX_REPEAT`).

    A row repeated ``r`` times weighs ``r`` in every attention sum over context rows (the ICL blocks,
    the Perceiver write, the column summaries), which is what a weight means. The weights come from
    each member's own context labels (:func:`tabzoo.estimators.class_balance` with ``strength``), so
    they also fit members that read a class-stratified subset (``max_context_rows``); the subsets
    share their class counts, so every member's context grows to the same length. Rounding and the
    cap make the balance approximate; the core's prior correction uses the unrounded weights.

    :param strength: the ``class_balance`` strength (the core passes weights only when it is > 0).
    """

    def __init__(self, model: torch.nn.Module, strength: float = 0.0, **kwargs: Any) -> None:
        super().__init__(model, **kwargs)
        self.strength = float(strength)

    def encode_context(
        self, x_context: torch.Tensor, y_context: torch.Tensor, weights: torch.Tensor | None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``x_context [M, n, F]``, ``y_context [M, n]``; ``weights`` (``[1, n]`` or None) switches it on."""
        if weights is None or self.strength <= 0:
            return x_context, y_context
        xs, ys = [], []
        for x, y in zip(x_context, y_context, strict=True):
            labels = y.long().cpu().numpy()
            w, _ = class_balance(labels, int(labels.max()) + 1, self.strength)
            reps = torch.from_numpy(np.clip(np.round(w), 1, MAX_REPEAT).astype(np.int64)).to(
                x.device
            )
            xs.append(x.repeat_interleave(reps, dim=0))
            ys.append(y.repeat_interleave(reps, dim=0))
        if len({t.shape[0] for t in xs}) != 1:
            raise TabzooInputError(
                "class_balance: the ensemble members' contexts have different class counts, so their repeated "
                "rows differ in number; pass class_balance=0 or max_context_rows=None."
            )
        return torch.stack(xs), torch.stack(ys)


__all__ = ["OrionMSPClassifier", "DEFAULT_CHECKPOINT", "load_orion", "shipped_checkpoints"]

DEFAULT_CHECKPOINT = "orion-msp-small"
_PACKAGE = "tabzoo_orion_msp"
#: the folder of the shipped checkpoints
_CKPT_DIR = shipped_dir(_PACKAGE)


def shipped_checkpoints() -> list[str]:
    """Names of the checkpoints shipped as package data."""
    return _shipped(_PACKAGE)


def _build_stored(config: dict[str, Any]) -> OrionMSP:
    """The model of a stored config; checkpoints written before the gated memory read existed were
    trained ungated and uncentred."""
    return OrionMSP({"memory_gate": False, "centre_rows": False} | dict(config))


def load_orion(checkpoint: str = DEFAULT_CHECKPOINT) -> OrionMSP:
    """An :class:`OrionMSP` with the weights of a shipped checkpoint name or a path stem (no network)."""
    model = load_shipped_model(
        checkpoint,
        package=_PACKAGE,
        architecture="orion-msp",
        build=_build_stored,
        model="ORION-MSP",
    )
    assert isinstance(model, OrionMSP)
    return model


class OrionMSPClassifier(FineTuneMixin, InContextClassifier):
    """ORION-MSP in-context classifier (scikit-learn API); loads the shipped checkpoint, no network.

    :param checkpoint: a shipped name (``"orion-msp-small"``) or a path stem of a checkpoint pair.
    :param n_estimators: ensemble members (feature shuffles x class shifts; the authors use 32).
    :param softmax_temperature: logits are divided by it before the softmax (0.9 as the paper).
    :param chunk_size: query rows per forward pass.
    :param device: ``"auto"``, ``"cpu"``, ``"cuda"``...
    :param random_state: seed of the ensemble members (feature shuffles, class shifts, subsets).
    :param verbose: progress bar over query chunks.
    :param feature_transforms: transforms the members cycle through (``"none"``, ``"power"``,
        ``"quantile"``), fitted on the context rows; categorical columns are never transformed.
    :param categorical_features: ``"auto"``, None, indices, names or a bool mask (the core's
        :func:`tabzoo.estimators.options.resolve_categorical_features`).
    :param pad_features: run each member over ``max_features`` feature tokens (its own plus empty
        ones), the layout of pretraining (default True; see the module docstring).
    :param max_context_rows: beyond this many training rows each member reads its own
        class-stratified subset of that many (chosen by row content, so independent of the row
        order); None reads them all. Pretraining contexts reached 1,024 rows, but reading every
        training row is better on the real-data suite: 4 members with up to 3,000 context rows beat
        the earlier cap of 1,024 on 6 of 7 tables (+0.023 mean ROC-AUC, the 7th tied) at ~2x the
        seconds (``benchmarks/results/realdata-2026-11-27-orion-losers.json``); 4,096 bounds the work
        on large tables.
    :param fine_tune: fine-tune a copy of the pretrained weights on the training rows in ``fit``
        (:mod:`tabzoo.train.finetune`): None / False (off), True, an int (steps), a dict of settings or a
        :class:`tabzoo.train.FineTune`, or ``"auto"``: the core's defaults (with a progress bar) on tables of at
        most :data:`~tabzoo_orion_msp.fine_tune.AUTO_FINE_TUNE_ROWS` (400) training rows, off above
        (:mod:`tabzoo_orion_msp.fine_tune` has the rule and its evidence); kept only when better on an inner
        validation split (``fine_tune_``; with ``"auto"`` its ``"auto"`` entry records the decision). With
        ``linear_blend="auto"`` that split is the estimator's one :func:`inner_split` (a quarter of the training
        rows held out, at most 1,000; ``fine_tune_["inner_split"]``): fine-tuning trains on the rest only, and the
        blend weight is chosen on the same holdout rows, predicted with the weights kept, which never trained on them.
        Off by default (``None``): on the real-data suite's 6 tables of at most 400 training rows, splits 0-2
        (18 table-splits, 1 torch thread), the defaults with ``fine_tune="auto"`` reached a mean ROC-AUC 0.9298
        against 0.9282 with ``fine_tune=None`` (better on 7, worse on 3; LogisticRegression 0.9168, XGBoost 0.9248)
        in about 50 s per table instead of 4 (``benchmarks/results/orion-suite-summary-ftblend-small-2026-11-29.json``):
        a gain within the noise (split 0 -0.0011, split 1 +0.0060, split 2 -0.0002) at 14 times the seconds.
    :param wide_features: None (members read feature subsets of the checkpoint's ``max_features``) or
        an int >= 1: members read up to that many features at once, on the block-sparse row path
        above ~312 features (see the module docstring).
    :param class_balance: a strength ``s`` (default 0.5) or 0 (context rows as they are): class ``c``'s
        context rows are repeated ``round((n_largest / n_c) ** s)`` times (at most :data:`MAX_REPEAT`; the
        core's :func:`tabzoo.estimators.class_balance`), so rare classes are read from more than a handful
        of rows, and the class prior this implies is divided out of the output. On the real-data suite
        (split 0, 26 tables, side by side) 0.5 raised the mean ROC-AUC 0.857 -> 0.864, ratdat_genus
        (26 classes, 1,395:1) 0.858 -> 0.966, caravan 0.667 -> 0.728; worse on 5 tables, most on
        fgl_glass 0.927 -> 0.903 (``benchmarks/results/realdata-2026-11-28-orion-cb-s0.json``).
    :param many_class: more classes than the head's 10: ``"hierarchical"`` (appendix A.6: balanced
        class tree, ``p(c) = p(group) p(c | group)``) or ``"ecoc"`` (16 random balanced error-correcting
        codes, :func:`tabzoo.estimators.hierarchy.ecoc_proba`).
    :param feature_selection: when a member reads fewer features than the table has: ``"scored"``
        (default; :func:`tabzoo.estimators.members.scored_subsets`: ``feature_top_share`` of each subset
        is the most relevant features by :func:`~tabzoo.estimators.members.feature_scores` on the training
        rows, the rest drawn weighted by relevance) or ``"balanced"`` (every feature about equally often,
        the behaviour before 2026-11-29).
    :param feature_top_share: share of each scored subset that is the top-scoring features (0.75).
    :param member_features: features per member: None (the model's ``max_features``), an int (at most
        that many) or ``"auto"`` (default): a table with more than :data:`AUTO_MEMBER_FEATURES` features
        is split once more, on its training rows only (:func:`inner_split`), and the members read
        :data:`AUTO_MEMBER_FEATURES` scored features when that scores a higher ROC-AUC on the inner
        holdout than the model's ``max_features``; the choice is ``member_selection_``. With
        ``wide_features`` set, ``"auto"`` means the model's (widened) ``max_features``.
    :param linear_blend: ``"auto"`` (default), a weight in [0, 1) or 0 (ORION-MSP alone): the output is the
        normalised ``(1 - w) log p + w log p_linear`` of a logistic regression fitted on the same training
        rows (:class:`LinearMember`); ``"auto"`` chooses ``w`` from :data:`BLEND_WEIGHTS` by ROC-AUC on the
        inner split of the training rows (:func:`inner_split`). Fitted: ``linear_blend_`` (the weight used).
    :param categorical_encoding: ``"ordinal"`` (default) or ``"onehot"`` (the core's expansion of
        categorical columns with few levels, within the model's ``max_features``).

    Fitted: ``classes_``, ``n_classes_``, ``members_``, ``model_``, ``member_selection_`` (the features per
    member and, with ``member_features="auto"`` on a wide table, the inner split's ROC-AUC of each choice). Any number of classes: beyond
    the head's 10 the hierarchical split of appendix A.6 takes over.
    """

    average = "logits"

    #: wide tables: every feature used about equally often across members
    feature_subsample = "balanced"
    #: members after the first permute category codes
    shuffle_categories = True
    #: the model pads feature tokens itself (``pad_features``)
    pad_to_max_features = False

    def __init__(
        self,
        checkpoint: str = DEFAULT_CHECKPOINT,
        n_estimators: int = 4,
        softmax_temperature: float = 0.9,
        chunk_size: int = 1024,
        device: str = "auto",
        random_state: int | None = 0,
        verbose: bool = False,
        feature_transforms: tuple[str, ...] = ("none", "power"),
        categorical_features: Any = "auto",
        pad_features: bool = True,
        max_context_rows: int | None = 4096,
        fine_tune: Any = None,
        wide_features: int | None = None,
        class_balance: float = 0.5,
        many_class: str = "hierarchical",
        feature_selection: str = "scored",
        feature_top_share: float = 0.75,
        member_features: int | str | None = "auto",
        categorical_encoding: str = "ordinal",
        linear_blend: float | str = "auto",
    ) -> None:
        # no super().__init__: scikit-learn wants __init__ to set exactly the parameters
        self.checkpoint = checkpoint
        self.n_estimators = n_estimators
        self.softmax_temperature = softmax_temperature
        self.chunk_size = chunk_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.feature_transforms = feature_transforms
        self.categorical_features = categorical_features
        self.pad_features = pad_features
        self.max_context_rows = max_context_rows
        self.fine_tune = fine_tune
        self.wide_features = wide_features
        self.class_balance = class_balance
        self.many_class = many_class
        self.feature_selection = feature_selection
        self.feature_top_share = feature_top_share
        self.member_features = member_features
        self.categorical_encoding = categorical_encoding
        self.linear_blend = linear_blend

    def _load_model(self) -> torch.nn.Module:
        model = load_orion(self.checkpoint)
        if self.wide_features is not None:
            model.widen(int(self.wide_features))
        return model

    def _context_forward(self) -> ConcatForward:
        """The core's prediction path runs ``model(cat(context, query), y_context, pad_features=...)``."""
        return RepeatForward(
            self.model_, strength=self._balance_strength(), pad_features=bool(self.pad_features)
        )

    def _check_n_classes(self, n_classes: int) -> None:
        """Any number of classes: beyond the head, the hierarchical split takes over."""

    def fit(self, X: Any, y: Any) -> OrionMSPClassifier:
        """Store the preprocessed training rows and labels as the context (no gradient step)."""
        from tabzoo.estimators.ensemble import MANY_CLASS

        t = self.softmax_temperature
        if isinstance(t, bool) or not isinstance(t, int | float) or not t > 0:
            raise TabzooInputError(f"softmax_temperature must be a number > 0, got {t!r}.")
        if not isinstance(self.pad_features, bool | np.bool_):
            raise TabzooInputError(
                f"pad_features must be True or False, got {self.pad_features!r}."
            )
        cap = self.max_context_rows
        if cap is not None and (
            isinstance(cap, bool) or not isinstance(cap, int | np.integer) or cap < 2
        ):
            raise TabzooInputError(f"max_context_rows must be None or an int >= 2, got {cap!r}.")
        wide = self.wide_features
        if wide is not None and (
            isinstance(wide, bool) or not isinstance(wide, int | np.integer) or wide < 1
        ):
            raise TabzooInputError(f"wide_features must be None or an int >= 1, got {wide!r}.")
        if self.many_class not in MANY_CLASS:
            raise TabzooInputError(
                f"many_class must be one of {MANY_CLASS}, got {self.many_class!r}."
            )
        self._balance_strength()  # refuses a bad class_balance now, with the core's message
        if self.feature_selection not in FEATURE_SELECTIONS:
            raise TabzooInputError(
                f"feature_selection must be one of {FEATURE_SELECTIONS}, got {self.feature_selection!r}."
            )
        share = self.feature_top_share
        if (
            isinstance(share, bool)
            or not isinstance(share, int | float)
            or not 0.0 <= float(share) <= 1.0
        ):
            raise TabzooInputError(f"feature_top_share must be a number in [0, 1], got {share!r}.")
        mf = self.member_features
        if not (
            mf is None
            or mf == "auto"
            or (isinstance(mf, int | np.integer) and not isinstance(mf, bool) and mf >= 1)
        ):
            raise TabzooInputError(
                f"member_features must be None, 'auto' or an int >= 1, got {mf!r}."
            )
        lb = self.linear_blend
        if not (
            lb == "auto"
            or (isinstance(lb, int | float) and not isinstance(lb, bool) and 0.0 <= float(lb) < 1.0)
        ):
            raise TabzooInputError(
                f"linear_blend must be 'auto' or a weight in [0, 1), got {lb!r}."
            )
        check_fine_tune(self.fine_tune)
        self._inner_: dict[str, Any] | None = None
        super().fit(X, y)
        self._fit_linear_blend()
        self._inner_ = None
        return self

    def _after_fit(self) -> None:
        """The core's fine-tuning step; ``fine_tune="auto"``: the size rule decides here, on the training rows.

        With ``linear_blend="auto"`` fine-tuning runs on the estimator's one inner split (:meth:`_inner_split`)."""
        value = self.fine_tune
        auto = isinstance(value, str) and value == AUTO
        n = int(self.X_context_.shape[0])
        if auto:
            # the core's mixin reads the parameter: the decision, for this fit only
            self.fine_tune = auto_fine_tune(n)
        self._shared_split_ = (
            self.linear_blend == "auto" and resolve_fine_tune(self.fine_tune) is not None
        )
        try:
            super()._after_fit()
        finally:
            self.fine_tune = value
            # a flag of this step only, not fitted state
            shared = bool(self.__dict__.pop("_shared_split_", False))
        record: dict[str, Any] | None = getattr(self, "fine_tune_", None)
        if auto:
            record = auto_record(n, record)
        if shared and record is not None and int(record.get("steps", 0)) > 0:
            record = dict(record) | {"inner_split": SHARED_SPLIT}
        self.fine_tune_ = record

    def _inner_split(self, cfg: FineTune) -> tuple[np.ndarray | None, np.ndarray | None]:
        """Fine-tuning's inner ``(training, validation)`` rows. With ``linear_blend="auto"`` they are the estimator's
        :func:`inner_split` (the one ``linear_blend="auto"`` and ``member_features="auto"`` choose on; its share and
        cap replace ``cfg``'s ``validation_fraction`` and ``max_validation_rows``): fine-tuning trains only on the
        inner training rows, and the blend weight is then chosen on holdout rows the tuned weights never trained on.
        Otherwise (``linear_blend`` a number) the core's split."""
        if not getattr(self, "_shared_split_", False):
            return super()._inner_split(cfg)
        train, hold = inner_split(self.y_context_, _seed_from(self.random_state), x=self.X_context_)
        if hold.size == 0 or train.size < 4:
            return None, None
        return train, hold

    # -- the linear member -------------------------------------------------------------------------
    def _fit_linear_blend(self) -> None:
        """``linear_blend``: the weight (chosen on the inner split with ``"auto"``) and the linear member."""
        self.linear_member_: LinearMember | None = None
        self.linear_blend_: float = 0.0
        lb = self.linear_blend
        k = int(self.n_classes_)
        if k < 2 or lb == 0:
            return
        if lb == "auto":
            inner = self._inner_
            if (getattr(self, "fine_tune_", None) or {}).get("kept"):
                inner = None  # probabilities of the pretrained weights: predict the holdout again with the tuned ones
            seed = _seed_from(self.random_state) if inner is None else inner["seed"]
            # the members the inner context would have, their probabilities on the holdout
            if inner is None:
                train, hold = inner_split(self.y_context_, seed, x=self.X_context_)
                if hold.size < 2 or np.unique(self.y_context_[hold]).size < 2:
                    return
                members: list[EnsembleMember] = getattr(self, "members_")  # noqa: B009 (mypy: set by the core's fit)
                cap = max(len(m.features) for m in members)
                proba = self._inner_proba(self.X_context_.shape[1], seed, cap, train, hold)
                self.members_ = members  # back to the fitted members, as fit left them
                self.member_views_ = None
                self.context_cache_: dict[str, Any] | None = {}
                self._views()
                self._fit_local()
                self._warm_cache()
                inner = {"train": train, "hold": hold, "proba": proba}
            train, hold, proba = inner["train"], inner["hold"], inner["proba"]
            member = LinearMember(categorical=self._view_categoricals())
            lin = member.fit(self.X_context_[train], self.y_context_[train], k).log_proba(
                self.X_context_[hold]
            )
            yh = self.y_context_[hold]
            scores = {w: _mean_ovr_auc(yh, blend(proba, lin, w)) for w in BLEND_WEIGHTS}
            best = max(BLEND_WEIGHTS, key=lambda w: (scores[w], -w))
            self.linear_blend_ = float(best)
            self.linear_blend_inner_ = {str(w): round(v, 6) for w, v in scores.items()}
        else:
            self.linear_blend_ = float(lb)
        if self.linear_blend_ > 0:
            self.linear_member_ = LinearMember(categorical=self._view_categoricals()).fit(
                self.X_context_, self.y_context_, k
            )

    def _inner_proba(
        self, n_features: int, seed: int, cap: int, train: np.ndarray, hold: np.ndarray
    ) -> np.ndarray:
        """Probabilities ``[n_hold, k]`` of the holdout rows from the inner context, with members built (scores
        included) from the inner context's rows only. Leaves ``members_`` set to those members."""
        n_classes = int(self.n_classes_)
        self.members_ = self._members_for(
            n_features, n_classes, seed, cap, self.X_context_[train], self.y_context_[train]
        )
        self.member_views_ = None
        self.context_cache_ = {}
        self.local_ = None
        return self._proba(self.y_context_, n_classes, self.X_context_[hold], context_rows=train)

    def _predict_transformed(self, xq: np.ndarray) -> np.ndarray:
        out = super()._predict_transformed(xq)
        member = getattr(self, "linear_member_", None)
        w = float(getattr(self, "linear_blend_", 0.0) or 0.0)
        if member is None or w <= 0 or out.shape[1] < 2:
            return out
        return blend(out, member.log_proba(xq), w)

    # -- members ---------------------------------------------------------------------------------
    def _members_for(
        self, n_features: int, n_classes: int, seed: int, cap: int, x: np.ndarray, y: np.ndarray
    ) -> list[EnsembleMember]:
        """Members reading at most ``cap`` features; scored subsets use the relevance of ``x``, ``y`` (training rows)."""
        transforms = check_transforms(self.feature_transforms)
        scored = self.feature_selection == "scored" and cap < n_features
        scores = feature_scores(x, y, n_classes) if scored else None
        return make_members(
            int(self.n_estimators),
            n_features,
            n_classes,
            seed,
            cap,
            transforms=transforms,
            subsample="scored" if scored else "balanced",
            scores=scores,
            top_share=float(self.feature_top_share),
        )

    def _make_members(self, n_features: int, n_classes: int) -> list[EnsembleMember]:
        seed = _seed_from(self.random_state)
        cap = self._member_feature_cap(n_features, n_classes, seed)
        return self._members_for(n_features, n_classes, seed, cap, self.X_context_, self.y_context_)

    def _member_feature_cap(self, n_features: int, n_classes: int, seed: int) -> int:
        """Features per member (see ``member_features``); records ``member_selection_``."""
        limit = self._model_limit("max_features") or n_features
        limit = min(limit, n_features)
        mf = self.member_features
        if mf is None or (
            mf == "auto"
            and (
                n_features <= AUTO_MEMBER_FEATURES
                or self.feature_selection != "scored"
                or self.wide_features is not None
            )
        ):
            self.member_selection_: dict[str, Any] = {"features": int(limit), "source": "model"}
            return int(limit)
        if mf != "auto":
            self.member_selection_ = {
                "features": int(min(int(mf), limit)),
                "source": "member_features",
            }
            return int(min(int(mf), limit))
        small = min(AUTO_MEMBER_FEATURES, limit)
        train, hold = inner_split(self.y_context_, seed, x=self.X_context_)
        if hold.size < 2 or np.unique(self.y_context_[hold]).size < 2 or small >= limit:
            self.member_selection_ = {"features": int(limit), "source": "model (no inner split)"}
            return int(limit)
        scores: dict[int, float] = {}
        probas: dict[int, np.ndarray] = {}
        for c in (limit, small):
            probas[c] = self._inner_proba(n_features, seed, c, train, hold)
            scores[int(c)] = _mean_ovr_auc(self.y_context_[hold], probas[c])
        self.member_views_ = None
        self.context_cache_ = {}
        best = small if scores[small] > scores[limit] else limit
        self._inner_ = {"seed": seed, "train": train, "hold": hold, "proba": probas[best]}
        self.member_selection_ = {
            "features": int(best),
            "source": "inner split",
            "inner_roc_auc": {str(c): round(v, 6) for c, v in scores.items()},
            "inner_rows": [int(train.size), int(hold.size)],
        }
        return int(best)

    def _extra_state(self) -> dict[str, Any]:
        member = getattr(self, "linear_member_", None)
        return super()._extra_state() | {
            "member_selection": getattr(self, "member_selection_", None),
            "linear_blend": float(getattr(self, "linear_blend_", 0.0) or 0.0),
            "linear_member": None if member is None else member.state(),
        }

    def _set_extra_state(self, state: dict[str, Any]) -> None:
        super()._set_extra_state(state)
        self.member_selection_ = dict(state.get("member_selection") or {})
        self.linear_blend_ = float(state.get("linear_blend") or 0.0)
        lm = state.get("linear_member")
        self.linear_member_ = None if lm is None else LinearMember.from_state(lm)

    # -- inference -------------------------------------------------------------------------------
    def _context_subsets(self, rows: np.ndarray, y: np.ndarray, k: int) -> list[np.ndarray] | None:
        """Per member, the positions into ``rows`` of its context (all of them up to ``max_context_rows``).

        Beyond the cap each member takes a class-stratified subset of exactly ``max_context_rows``
        rows, chosen by a seeded projection of the row's CONTENT and label (not its position), so the
        choice does not depend on the order of the training rows; members draw different subsets.
        """
        n, cap = int(rows.size), self.max_context_rows
        if cap is None or n <= int(cap):
            return [np.arange(n)] * len(self.members_)
        cap = int(cap)
        counts = np.bincount(y, minlength=k)
        exact = counts * cap / n
        quota = np.floor(exact).astype(np.int64)
        quota = np.where(counts > 0, np.maximum(quota, 1), 0)
        order = np.argsort(-(exact - np.floor(exact)), kind="stable")
        i = 0
        while quota.sum() != cap:  # hand out the remainder (or take back the forced minimum ones)
            c = order[i % k]
            step = 1 if quota.sum() < cap else -1
            if 0 < quota[c] + step <= counts[c] and not (step < 0 and quota[c] == 1):
                quota[c] += step
            i += 1
        x = np.nan_to_num(self.X_context_[rows], nan=0.0, posinf=0.0, neginf=0.0).astype(np.float64)
        subsets = []
        for m in self.members_:
            rng = np.random.default_rng([int(m.seed), 104729])
            key = x @ rng.standard_normal(x.shape[1]) + rng.standard_normal(k)[y]
            pick = [
                idx[np.argsort(key[idx], kind="stable")[:q]]
                for c, q in enumerate(quota)
                if q > 0
                for idx in [np.flatnonzero(y == c)]
            ]
            subsets.append(np.sort(np.concatenate(pick)))
        return subsets
