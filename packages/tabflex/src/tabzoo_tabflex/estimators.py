"""scikit-learn estimators: :class:`TabFlexClassifier` and :class:`TabFlexRegressor`.

Built on :mod:`tabzoo.estimators` (preprocessing, feature-shuffle / class-shift ensembling,
pickle-free save/load). What TabFlex adds:

* **weights**: the checkpoint shipped as package data (``tabflex-small``) is loaded by default, offline;
  ``checkpoint=`` takes another shipped name or a path stem ``.../name`` of a ``.safetensors`` + ``.json`` pair.
* **model selection**: the paper's Algorithm 1 plus the class count
  (:func:`tabzoo_tabflex.selection.select_model`) over the available checkpoints; ``selection_``
  records the decision.
* **ensemble members** (:mod:`tabzoo_tabflex.inference`): feature order, class shift, a
  {none, power} (or quantile) feature transform fitted on the context, shuffled category codes,
  and - for tables wider than the model - a different balanced feature subset per member
  (``wide_features="subsample"``) or one seeded Gaussian random projection
  (``wide_features="project"``, :class:`tabzoo_tabflex.projection.RandomProjection`).
* **categorical columns**: ``categorical_features=`` indices, names, a mask or ``"auto"``.
* **fit_mode**: ``"fit_with_cache"`` keeps each member's linear-attention context state from fit.
* **inference_precision**: ``"auto"`` (bf16 on CUDA / CPUs with native bf16), ``"fp32"``, ``"bf16"``, ``"fp16"``.
* **many classes**: beyond the head's limit, the hierarchical class split of
  :mod:`tabzoo.estimators.hierarchy` (no class is merged).
* **scale**: each member's context state is computed once per call (context rows streamed in
  chunks) and query rows stream through in chunks of ``chunk_size``: memory linear in rows.
* **regression**: target binning (paper section 6.4), members shift the bin edges by a fraction
  of a bin; prediction = the members' mean expected value (or the mode on the common grid).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from tabzoo.errors import TabzooInputError
from tabzoo.estimators import InContextClassifier, InContextRegressor
from tabzoo.estimators.sk import check_is_fitted
from tabzoo.train.finetune import FineTuneMixin, resolve_fine_tune

from tabzoo_tabflex.binning import TargetBinner
from tabzoo_tabflex.inference import _CKPT_DIR, DEFAULT_CHECKPOINT, TabFlexMixin, load_tabflex  # noqa: F401 (_CKPT_DIR re-exported)

logger = logging.getLogger(__name__)

#: folds of the regressor's cross-fitted calibration (``calibrate``)
CALIBRATION_FOLDS = 3
#: the regressor's bins for ``n_bins="auto"`` without fine-tuning (30 measured best on diabetes, see the README)
AUTO_BINS = 30

__all__ = ["TabFlexClassifier", "TabFlexRegressor", "DEFAULT_CHECKPOINT", "load_tabflex"]

_PARAMS_DOC = """
    :param feature_transforms: member ``i`` transforms the numeric features with
        ``feature_transforms[i % len]``: ``"none"``, ``"power"`` (Yeo-Johnson) or ``"quantile"``, fitted on
        the context rows only (the authors ensemble {none, power}).
    :param categorical_features: ``"auto"`` (a Table's categorical columns, a DataFrame's category/string
        columns; string values are always categorical), ``None``, column indices, column names or a
        boolean mask. Categorical columns are ordinal-encoded on the context (unseen and missing values
        share a separate code) and each member shuffles the codes.
    :param fit_mode: ``"fit_preprocessors"`` (predict encodes the context each call) or
        ``"fit_with_cache"`` (fit computes each member's context state once; predict only reads it).
    :param inference_precision: ``"auto"`` (bf16 on CUDA and on CPUs with native bf16, else fp32),
        ``"fp32"``, ``"bf16"`` or ``"fp16"``; attention sums stay fp32.
    :param wide_features: more features than the model reads: ``"subsample"`` (each member a different,
        balanced feature subset) or ``"project"`` (one seeded Gaussian random projection).
    :param categorical_encoding: ``"ordinal"`` (default: one code per level, shuffled per member) or ``"onehot"``
        (indicator columns for categorical columns with 3-64 levels, fewest levels first, while the table stays
        within the model's 100 features; see :mod:`tabzoo.estimators.encoding`). Measured on the real-data suite:
        one-hot helps nominal columns whose levels act one by one (hpc_jobs +0.036 ROC-AUC) and hurts where the
        codes carry an order or a column has many levels (diamonds_cut -0.064, mlc_churn -0.060), so it is opt-in.
    :param context_strategy: ``"global"`` (every query reads the whole context), ``"local"`` (the context rows are
        clustered with a seeded, order-free k-means into groups of about ``local_size`` rows; each query row is
        answered from the ``1.5 * local_size`` rows nearest to its cluster's centre), ``"local+global"`` (the
        geometric mean of both), ``"select"`` (chosen per table on fine-tuning's inner split of the training rows:
        a local mix only when it lowers the inner loss by > 1%; :mod:`tabzoo.train.retrieval`) or ``"auto"`` (default: ``"local+global"`` above ``AUTO_LOCAL_ROWS`` = 8,192 context
        rows, the longest prompts the shipped checkpoints were trained on, else ``"global"``). The checkpoints do not
        learn more from a larger global context; local contexts turn more rows into denser neighbourhoods.
        Not used beyond the head's class count (ECOC / class tree run on the global context).
    :param local_size: rows per local cluster (default 2048).
    :param fine_tune: fine-tune a copy of the pretrained weights on the training rows in ``fit``
        (:mod:`tabzoo.train.finetune`): None / False (off), True (100 steps), an int (steps), a dict of
        settings or a :class:`tabzoo.train.FineTune`. An inner validation split of the training rows decides
        early stopping and whether the tuned weights are kept (``fine_tune_`` records it); ``save`` keeps them.
"""


class TabFlexClassifier(FineTuneMixin, TabFlexMixin, InContextClassifier):
    """TabFlex in-context classifier (scikit-learn API); loads the shipped checkpoint, no network.

    :param checkpoint: ``"auto"`` (Algorithm 1 over the shipped checkpoints), a shipped name
        (``"tabflex-small"``) or a path stem of a ``.safetensors`` + ``.json`` checkpoint.
    :param n_estimators: ensemble members (feature permutations x class rotations x transforms).
    :param softmax_temperature: logits are divided by it before the softmax (0.8 as the authors).
    :param chunk_size: rows per streamed chunk (context and query); bounds the memory of a pass.
    :param projection_seed: seed of the random projection (``wide_features="project"``).
    :param device: ``"auto"``, ``"cpu"``, ``"cuda"``...
    :param random_state: seed of the ensemble members (None: fresh; int; RandomState; Generator).
    :param verbose: progress bar over query chunks.
    :param class_balance: ``"auto"`` (default, = 1.0: measured on the suite's dev tables), 0 (context rows as they
        are) or a strength ``s``: class ``c``'s context rows weigh ``(n_largest / n_c) ** s`` in every attention sum
        (exactly as if repeated), and the class prior this implies is divided out of the output, so probabilities
        keep the context's class frequencies while rare classes are read from more than a handful of rows.
    :param many_class: more classes than the head: ``"ecoc"`` (default: 16 random balanced
        error-correcting codes, one member per code, log-probabilities summed; see
        :func:`tabzoo.estimators.hierarchy.ecoc_proba`) or ``"hierarchical"`` (balanced class tree,
        ``p(c) = p(group) p(c | group)``). ECOC measured better on the 26- and 32-species FLAVIA leaves
        (accuracy 0.936 vs 0.932 and 0.891 vs 0.837, log-loss 0.29 vs 0.62 and 0.55 vs 0.92).
    (The further parameters are listed below.)

    Fitted: ``classes_``, ``selection_`` (which model and why), ``projection_`` (or None),
    ``members_``, ``categorical_indices_``, ``inference_dtype_``.
    The members' logits are averaged (``average = "logits"``, as the authors).
    """

    def __init__(self, checkpoint: str = "auto", n_estimators: int = 8, softmax_temperature: float = 0.8,
                 chunk_size: int = 8192, projection_seed: int = 0, device: str = "auto",
                 random_state: Any = 0, verbose: bool = False, *,
                 feature_transforms: tuple[str, ...] = ("none", "power"), categorical_features: Any = "auto",
                 fit_mode: str = "fit_preprocessors", inference_precision: str = "auto",
                 wide_features: str = "subsample", many_class: str = "ecoc",
                 categorical_encoding: str = "ordinal", class_balance: float | str = "auto",
                 context_strategy: str = "auto", local_size: int = 2048, fine_tune: Any = None) -> None:
        # no super().__init__: scikit-learn wants __init__ to set exactly the parameters
        self.checkpoint = checkpoint
        self.n_estimators = n_estimators
        self.softmax_temperature = softmax_temperature
        self.chunk_size = chunk_size
        self.projection_seed = projection_seed
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.feature_transforms = feature_transforms
        self.categorical_features = categorical_features
        self.fit_mode = fit_mode
        self.inference_precision = inference_precision
        self.wide_features = wide_features
        self.many_class = many_class
        self.categorical_encoding = categorical_encoding
        self.context_strategy = context_strategy
        self.local_size = local_size
        self.class_balance = class_balance
        self.fine_tune = fine_tune

    def _check_n_classes(self, n_classes: int) -> None:
        """Any number of classes: beyond the head, the hierarchical split takes over."""

    def _extra_state(self) -> dict[str, Any]:
        return super()._extra_state() | {"tabflex": self._tabflex_state()}

    def _set_extra_state(self, state: dict[str, Any]) -> None:
        super()._set_extra_state(state)
        self._set_tabflex_state(state["tabflex"])


class TabFlexRegressor(FineTuneMixin, TabFlexMixin, InContextRegressor):
    """TabFlex regression by target binning (paper section 6.4), ensembled over bin shifts.

    Standardised targets are cut into ``n_bins`` uniform (or quantile) bins, empty ones dropped;
    TabFlex classifies the bin. With ``bin_shift=True`` member ``i`` of ``m`` moves the inner bin
    edges by ``i / m`` of a bin, so the members' discretisation errors differ. The prediction is
    the members' mean expected bin centre (``point="mean"``), or for ``point="mode"`` the densest
    cell of the members' probabilities re-mapped onto the common grid of all their edges. More
    occupied bins than the head's classes go through the hierarchical class split.

    :param n_bins: bins (the paper uses 10 or 100), or ``"auto"`` (default): ``AUTO_BINS`` = 30 (measured best on
        diabetes, see the README), and with ``fine_tune`` at most the head's classes - 1 (9 for the shipped
        checkpoints' 10-class head; a bin-shifted member has one bin more), so that every member's bins fit the
        head and fine-tuning runs. An explicit count above that skips fine-tuning (``fine_tune_`` says why).
        Fitted: ``n_bins_``.
    :param binning: ``"uniform"`` (paper) or ``"quantile"``.
    :param point: ``"mean"`` or ``"mode"``.
    :param bin_shift: shift the bin edges per member.
    :param calibrate: ``"auto"`` (default: with ``point="mean"``), True or False: a cross-fitted affine map of the
        predictions, fitted on the context rows only (3 folds, each predicted from the other two; slope clipped to
        [1/3, 3]). It undoes the shrinkage of expected bin centres towards the mean; measured on the real-data
        suite's regression tables (split 0): mean R² 0.604 -> 0.630 (deliveries +0.13, ames +0.10).
    :param fine_tune: as :class:`TabFlexClassifier`'s, but on by default (``True``: 100 steps; ``None`` / ``False``
        turn it off): on the suite's 11 regression tables x 3 splits fine-tuning gave a mean R² of 0.6746 against
        0.6410 untuned and Ridge's 0.6533, better than untuned in 29 of 33 cells, 1.5-23 s per table
        (``benchmarks/results/realdata-2026-11-27-regression-ft-s0.json``, ``-s12.json``). Below ``min_rows`` (64)
        training rows it is skipped, and ``n_bins="auto"`` then keeps the untuned 30 bins.

    Other parameters as :class:`TabFlexClassifier`, and:
    """

    def __init__(self, checkpoint: str = "auto", n_bins: int | str = "auto", binning: str = "uniform", point: str = "mean",
                 n_estimators: int = 4, softmax_temperature: float = 0.8, chunk_size: int = 8192,
                 projection_seed: int = 0, device: str = "auto", random_state: Any = 0,
                 verbose: bool = False, *, bin_shift: bool = True,
                 feature_transforms: tuple[str, ...] = ("none", "power"), categorical_features: Any = "auto",
                 fit_mode: str = "fit_preprocessors", inference_precision: str = "auto",
                 wide_features: str = "subsample", categorical_encoding: str = "ordinal",
                 context_strategy: str = "auto", local_size: int = 2048, calibrate: bool | str = "auto",
                 fine_tune: Any = True) -> None:
        self.checkpoint = checkpoint
        self.n_estimators = n_estimators
        self.chunk_size = chunk_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.n_bins = n_bins
        self.binning = binning
        self.point = point
        self.softmax_temperature = softmax_temperature
        self.projection_seed = projection_seed
        self.bin_shift = bin_shift
        self.feature_transforms = feature_transforms
        self.categorical_features = categorical_features
        self.fit_mode = fit_mode
        self.inference_precision = inference_precision
        self.wide_features = wide_features
        self.categorical_encoding = categorical_encoding
        self.context_strategy = context_strategy
        self.local_size = local_size
        self.calibrate = calibrate
        self.fine_tune = fine_tune

    def _shifts(self) -> list[float]:
        m = len(self.members_)
        return [i / m if self.bin_shift else 0.0 for i in range(m)]

    def fit(self, X: Any, y: Any) -> TabFlexRegressor:
        """Store the context with binned, standardised targets (one binning per bin shift)."""
        if self.point not in ("mean", "mode"):
            raise TabzooInputError(f"point must be 'mean' or 'mode', got {self.point!r}.")
        super().fit(X, y)
        return self

    def _after_fit(self) -> None:
        self._fit_binners()  # before the core's warm cache, which predicts
        super()._after_fit()
        self._fit_calibration()

    def _n_classes_for_selection(self, y: Any) -> int:
        """Regression runs as classification over target bins: select for that many classes."""
        if y is None:
            return 1
        try:
            return max(1, min(self._resolve_bins(None), int(np.unique(np.asarray(y, dtype=float)).size)))
        except (TypeError, ValueError):
            return 1

    def _resolve_bins(self, head: int | None) -> int:
        """The bin count of ``n_bins`` for a head of ``head`` classes (None: not known yet)."""
        if isinstance(self.n_bins, str) and self.n_bins == "auto":
            cfg = resolve_fine_tune(self.fine_tune)
            rows = getattr(self, "X_context_", None)
            if head is None or cfg is None or (rows is not None and rows.shape[0] < cfg.min_rows):
                return AUTO_BINS  # fine-tuning does not run: the untuned optimum
            return max(2, min(AUTO_BINS, head - 1))  # a shifted member has one bin more than n_bins
        if isinstance(self.n_bins, bool) or not isinstance(self.n_bins, int | np.integer) or self.n_bins < 2:
            raise TabzooInputError(f"n_bins must be 'auto' or an int >= 2, got {self.n_bins!r}.")
        return int(self.n_bins)

    def _fit_binners(self, n_bins: int | None = None) -> None:
        """One :class:`TargetBinner` per bin shift; ``n_bins``: the fitted count (a load), else resolved now."""
        self.n_bins_ = int(n_bins) if n_bins is not None else self._resolve_bins(self._model_limit("max_classes"))
        cache: dict[float, TargetBinner] = {}
        self.binners_ = []
        for s in self._shifts():
            if s not in cache:
                cache[s] = TargetBinner(self.n_bins_, self.binning, shift=s).fit(self.y_context_)  # type: ignore[arg-type]
            self.binners_.append(cache[s])
        self.binner_ = self.binners_[0]
        self.y_bins_ = self.binner_.transform(self.y_context_)

    def _groups(self) -> list[tuple[TargetBinner, list[int]]]:
        """Members sharing a binning run together (one batched pass)."""
        groups: dict[int, tuple[TargetBinner, list[int]]] = {}
        for i, b in enumerate(self.binners_):
            groups.setdefault(id(b), (b, []))[1].append(i)
        return list(groups.values())

    def _z(self, xq: np.ndarray, context_rows: np.ndarray | None = None) -> np.ndarray:
        """Predictions in standardised target units ``[n_query]``, read from ``context_rows`` (None = all)."""
        parts = []  # (binner, member count, proba)
        for b, ids in self._groups():
            if b.n_classes_ == 1:
                proba = np.ones((xq.shape[0], 1))
            else:
                proba = self._proba(b.transform(self.y_context_), b.n_classes_, xq, member_ids=ids,
                                    context_rows=context_rows)
            parts.append((b, len(ids), proba))
        total = sum(n for _, n, _ in parts)
        if self.point == "mean":
            return sum(n * (p @ b.centers_) for b, n, p in parts) / total
        return _grid_mode(parts, total)

    def _fine_tune_targets(self, member: int) -> tuple[np.ndarray, int]:
        """Fine-tuning: member ``member`` is trained on its own binning's bin indices."""
        b = self.binners_[member]
        return np.asarray(b.transform(self.y_context_), dtype=np.int64), int(b.n_classes_)

    def _fine_tune_loss(self, context: np.ndarray, rows: np.ndarray) -> float:
        """Fine-tuning's validation loss: mean squared error (standardised units) of ``rows`` read from ``context``."""
        z = self._z(self.X_context_[rows], context_rows=context)
        return float(np.mean((z - np.asarray(self.y_context_, dtype=np.float64)[rows]) ** 2))

    def _fit_calibration(self) -> None:
        """``calibrate``: cross-fitted affine map of the predictions, fitted on the context only.

        The context rows are cut into ``CALIBRATION_FOLDS`` folds (by a seeded projection of each row, so the
        folds do not depend on the row order); each fold is predicted from the other folds, and
        ``y ~ a + b * prediction`` is fitted by least squares (``b`` clipped to [1/3, 3]). Expected bin
        centres shrink towards the mean when the model is unsure; this undoes the shrinkage it shows
        on rows it has not seen.
        """
        self.calibration_ = (0.0, 1.0)
        if self.calibrate not in ("auto", True, False):
            raise TabzooInputError(f"calibrate must be 'auto', True or False, got {self.calibrate!r}.")
        n = self.X_context_.shape[0]
        # "auto": the mean prediction only (the mode is a cell of the bin grid, not shrunk towards the mean)
        if self.calibrate is False or (self.calibrate == "auto" and self.point != "mean") or n < 10 * CALIBRATION_FOLDS:
            return
        rng = np.random.default_rng(int(self.members_[0].seed))
        key = self.X_context_.astype(np.float64) @ rng.standard_normal(self.X_context_.shape[1]) \
            + np.asarray(self.y_context_, dtype=np.float64) * np.pi
        fold = np.argsort(np.argsort(key, kind="stable"), kind="stable") % CALIBRATION_FOLDS
        z = np.zeros(n)
        for f in range(CALIBRATION_FOLDS):
            out, keep = np.flatnonzero(fold == f), np.flatnonzero(fold != f)
            z[out] = self._z(self.X_context_[out], context_rows=keep)
        yc = np.asarray(self.y_context_, dtype=np.float64)
        var = float(z.var())
        if not var > 1e-12:
            return
        slope = float(np.clip(np.cov(z, yc, bias=True)[0, 1] / var, 1 / 3, 3.0))
        self.calibration_ = (float(yc.mean() - slope * z.mean()), slope)

    def _predict_transformed(self, xq: np.ndarray) -> np.ndarray:
        a, b = getattr(self, "calibration_", (0.0, 1.0))
        z = a + b * self._z(xq)
        return z * self.y_scale_ + self.y_mean_

    def predict(self, X: Any) -> np.ndarray:
        """Predicted values ``[n_samples]`` (float64)."""
        check_is_fitted(self, "binner_")
        return self._predict_transformed(self._transform_query(X))

    def _extra_state(self) -> dict[str, Any]:
        return super()._extra_state() | {"tabflex": self._tabflex_state(), "calibration": list(self.calibration_),
                                         "n_bins": self.n_bins_}

    def _set_extra_state(self, state: dict[str, Any]) -> None:
        super()._set_extra_state(state)
        self._set_tabflex_state(state["tabflex"])
        # deterministic from the stored standardised targets, the members and the fitted bin count
        self._fit_binners(state.get("n_bins"))
        a, b = state.get("calibration", (0.0, 1.0))
        self.calibration_ = (float(a), float(b))


TabFlexClassifier.__doc__ = (TabFlexClassifier.__doc__ or "") + _PARAMS_DOC
TabFlexRegressor.__doc__ = (TabFlexRegressor.__doc__ or "") + _PARAMS_DOC


def _grid_mode(parts: list[tuple[TargetBinner, int, np.ndarray]], total: int) -> np.ndarray:
    """Mode of the members' bin probabilities re-mapped onto the common grid of all their edges.

    Each member's bin probability is spread uniformly over the grid cells inside the bin; the
    members' cell probabilities are averaged and the centre of the densest cell is returned ``[n]``.
    """
    grid = np.unique(np.concatenate([b.edges_ for b, _, _ in parts]))
    cells = np.diff(grid)
    mids = (grid[:-1] + grid[1:]) / 2
    mass = np.zeros((parts[0][2].shape[0], cells.size))
    for b, n, p in parts:
        raw = np.clip(np.searchsorted(b.edges_[1:-1], mids, side="right"), 0, b.edges_.size - 2)
        width = np.diff(b.edges_)[raw]
        rank = b._rank[raw]  # occupied rank of the bin holding each cell, -1 = empty bin
        share = np.where(rank >= 0, cells / np.where(width > 0, width, 1.0), 0.0)
        mass += n * p[:, np.clip(rank, 0, None)] * share[None, :]
    density = mass / total / np.where(cells > 0, cells, 1.0)[None, :]
    return mids[np.argmax(density, axis=1)]
