"""scikit-learn estimators: :class:`NPTClassifier`, :class:`NPTRegressor`, :class:`NPTImputer`.

``fit`` trains an NPT on the table (features and targets are attributes; missing values are
masked cells), ``predict`` predicts each row from all training rows, encoded once, with query rows
in chunks that never read one another (:mod:`tabzoo_npt.predict`). ``mode="semi_supervised"`` or ``"transductive"`` lets ``fit`` take
``X_unlabeled`` rows; in the transductive mode ``predict`` also lets test rows attend to each
other. The regressor accepts ``y [n, n_targets]`` (multi-target prediction).
"""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tabzoo.errors import TabzooInputError
from tabzoo.estimators.base import resolve_device
from tabzoo.estimators.scaling import standardize_targets, unstandardize
from tabzoo.estimators.sk import (
    BaseEstimator,
    ClassifierMixin,
    RegressorMixin,
    check_input_array,
    check_is_fitted,
    check_n_features_and_names,
    check_params,
    classification_labels,
    require_y,
)
from tabzoo.kernels.memory import check_memory, parameter_count
from tabzoo.train.fit import FitResult

from tabzoo_npt.encoding import TableEncoder
from tabzoo_npt.memory import check_shape, fit_bytes, predict_bytes
from tabzoo_npt.model import MAX_ROW_WIDTH, NPT, PRESETS, NPTConfig, row_dim
from tabzoo_npt.predict import DENSE_CONTEXT, context_partitions, predict_cells
from tabzoo_npt.train import (
    MIN_VALIDATION_ROWS,
    NPTFitConfig,
    auto_batch_rows,
    fit_npt,
    holdout_rows,
)

__all__ = ["NPTClassifier", "NPTRegressor", "NPTImputer"]
logger = logging.getLogger("tabzoo_npt")

try:  # TransformerMixin lives next to the other mixins; import here to keep sk.py untouched
    from sklearn.base import TransformerMixin
except ImportError as exc:  # pragma: no cover
    raise ImportError("tabzoo_npt.estimators needs scikit-learn: pip install 'tabzoo-npt[sklearn]'.") from exc


class _NPTBase(BaseEstimator):
    """Shared parameters and machinery (see the module docstring).

    Every default and its source (Kossen et al. 2021, appendix C; "ours" = chosen for CPU budgets,
    measured in packages/npt/README.md):

    :param preset: architecture preset (``"tiny"``, ``"small"``, ``"base"``); the next four
        override it. Default ``"small"`` (e = 32, 4 layers, 4 heads, 2x feed-forward, dropout 0.1;
        ours: NPT-Base, C.1.1, is e = 64, 8 layers, 8 heads, 4x, too slow on 2 cores).
    :param steps: optimisation steps; ``None`` (default): 300 for :class:`NPTClassifier`, 1,200
        for :class:`NPTRegressor` (ours: the paper trains 2,000-10,000 full-batch epochs on its
        small tables, C.1.2; with early stopping, which never stops before half the budget, as the
        learning rate anneals from then on). With the annealed trade-off fewer than ~150 steps
        leave the target loss barely trained: the README's old 40-step example predicted the mean.
        Measured with ``small`` on 3,500-7,000 training rows (``benchmarks/npt_converge.py``,
        ``benchmarks/results/npt-converge-2026-11-28.json``; README "Tables of 5,000-10,000
        rows"): classification converged within 300 steps (best validation at steps 150-300 on
        mlc_churn, wa_churn, default; 78-84 CPU s), and a 600-step budget did not help it (ROC-AUC
        -0.012, +0.003, +0.003); regression on computers_price kept improving up to ~1,100 steps
        (R² 0.864 at 300, 0.875 at 600, 0.882 at 1,200 against tuned LightGBM's 0.883; 133 CPU s).
        Kept on small regression tables too: on split 0 of the suite's six regression tables (212-500
        training rows; ``benchmarks/results/npt-small-rules-2026-11-28.jsonl``) three shorter rules
        (the old cut budget ``tiny`` + dropout 0.1 / 150 steps / checks every 15, patience 4; and
        ``anneal_fraction`` 0.25 or, with ``tiny``, 0.125, letting early stopping act from step
        300 / 150) did not beat it on validation: mean validation loss of the kept weights
        0.256 / 0.240 / 0.254 against 0.235, R² on the unread training-pool rows of three tables
        0.745 / 0.736 / 0.740 against 0.741; over ``random_state`` 0-2 the cut budget's mean
        validation loss is 0.238 against the default's 0.220, unread-rows R² 0.742 both
        (README "Small regression tables").
    :param lr: base learning rate of LAMB (betas 0.9/0.999, eps 1e-6, Lookahead k = 6, alpha =
        0.5), flat for ``flat_fraction`` of the steps, then cosine to 0 (C.1.1). 1e-2 (ours: ten
        times the paper's 1e-3, for ten times fewer steps). LAMB moves every weight tensor by
        ``lr * ||w||`` per step whatever its gradient's scale, so ``lr * steps`` bounds how far
        training can take the weights: the paper's 1e-3 x 2,000-10,000 epochs (doubled with
        target masking, C.1.2) is 2-20; 1e-3 x 300 steps is 0.3, and NPT stayed near its
        initialisation (measured on the suite's tables, 150 steps: islr_credit R² 0.73 -> 0.97,
        fgl_glass ROC-AUC 0.65 -> 0.91, star98 R² 0.53 -> 0.72 with 1e-2; packages/npt/README.md).
        With many more steps, lower it in proportion (the paper's 1e-3 from ~2,000 steps).
    :param flat_fraction: 0.5, NPT-Small's flat share on small data (C.1.2; NPT-Base: 0.7).
    :param batch_size: rows per minibatch; class-stratified minibatches when the table is larger
        (C.1.1, C.1.3). Default ``None``: the whole table up to 1,024 rows (as the paper on small
        data, C.1.2), 256-row minibatches above (ours: 1,024-row steps made the step budget cost
        ~15 CPU-minutes on a 20-column table; :func:`tabzoo_npt.train.auto_batch_rows`).
    :param p_feature: stochastic feature masking probability, 0.15 (C.1.1); 10% of the selected
        cells are randomised instead of masked (C.4.3).
    :param p_target: stochastic target masking probability, 0.5: the paper uses target masking
        wherever it can (C.1.3; 0.5 on Kick, Poker Hand and Forest Cover; the 0.1/0.5 variants top
        its small-data sweep, Table 13). The trade-off ``lam`` between feature and target loss is
        cosine-annealed from 1 to 0 over ``steps`` (C.1.1).
    :param anneal_fraction: share of ``steps`` over which ``lam`` anneals to 0 (all target loss
        from then on), 1.0 (the paper's: over the whole run, C.1.1). Below 1, early stopping may
        act as soon as ``lam`` is 0, before the learning rate anneals (ours).
    :param validation_fraction: share of training rows held out for early stopping on the target
        loss (0 = none), 0.1 (ours; the paper stops early on the validation target loss, E.2.1). It is
        checked every ``eval_every`` = 25 steps; after ``patience`` = 6 checks without improvement
        the fit stops, never before the learning rate anneals and ``lam`` <= 1/2, and the best
        weights are kept. Held-out rows stay context at prediction.
    :param min_validation_rows: the fewest validation rows, 50 (ours: splits of ~20 rows picked
        checkpoints by noise on ~200-row tables). A table with fewer than ``4 * min_validation_rows``
        rows (200) holds none out: it trains the fixed ``steps`` budget and keeps the final weights
        (``validation_rows_`` says how many were held out; :func:`tabzoo_npt.train.holdout_rows`).
    :param context_size: the most training rows one dense attention encodes at prediction
        (4,096). Every training row is context; a larger table is split into
        ``ceil(n / context_size)`` disjoint seeded partitions whose logits are averaged, with a
        warning (:mod:`tabzoo_npt.predict`). Nothing is sampled.
    :param mode: ``"inductive"`` (default), ``"semi_supervised"`` or ``"transductive"``.
    :param max_row_width: cap on the ABD row width ``columns * dim`` (1,024; ``None`` = no cap):
        on wider tables ``dim`` is lowered to ``max_row_width // columns`` (at least 4), so the
        parameter count grows linearly with the column count; above ``max_row_width // 4``
        columns (256) ``fit`` refuses with the fix (:func:`tabzoo_npt.model.row_dim`).
    :param progress: tqdm progress bar during fit.

    Memory: ``fit`` estimates its peak (parameters, gradients, LAMB's moments, Lookahead's slow
    weights, the attention and feed-forward activations of a training batch and of a prediction
    chunk) from the table's shape before it builds anything, and raises :class:`~tabzoo.errors.MemoryLimitError` with the estimate
    and the fix above the limit (``TABZOO_MEMORY_LIMIT``, default the available memory). ABD
    attention mixes whole rows of ``columns * dim`` values, so without ``max_row_width`` the
    parameters grow with the square of the column count.
    """

    _n_targets = 1
    #: the step budget of ``steps=None`` (NPTRegressor: 1,200; see the ``steps`` parameter)
    _default_steps = 300

    def __init__(self, *, preset: str = "small", dim: int | None = None, n_layers: int | None = None,
                 n_heads: int | None = None, dropout: float | None = None, steps: int | None = None,
                 lr: float = 1e-2, flat_fraction: float = 0.5, batch_size: int | None = None, p_feature: float = 0.15,
                 p_target: float = 0.5, anneal_fraction: float = 1.0, validation_fraction: float = 0.1,
                 min_validation_rows: int = MIN_VALIDATION_ROWS, eval_every: int = 25, patience: int = 6,
                 context_size: int = DENSE_CONTEXT, chunk_size: int = 256, mode: str = "inductive",
                 max_row_width: int | None = MAX_ROW_WIDTH, progress: bool = False, random_state: int = 0,
                 device: str = "cpu") -> None:
        self.preset, self.dim, self.n_layers, self.n_heads, self.dropout = preset, dim, n_layers, n_heads, dropout
        self.max_row_width = max_row_width
        self.steps, self.lr, self.flat_fraction, self.batch_size = steps, lr, flat_fraction, batch_size
        self.p_feature, self.p_target, self.validation_fraction = p_feature, p_target, validation_fraction
        self.anneal_fraction = anneal_fraction
        self.min_validation_rows = min_validation_rows
        self.eval_every, self.patience, self.context_size, self.chunk_size = eval_every, patience, context_size, chunk_size
        self.mode, self.progress, self.random_state, self.device = mode, progress, random_state, device

    # -- helpers --------------------------------------------------------------------------------
    def _steps(self) -> int:
        """The step budget: ``steps``, or this estimator's measured default when it is ``None``."""
        return int(self._default_steps if self.steps is None else self.steps)

    def _batch_rows(self, n_rows: int) -> int:
        """Rows per training batch on a table of ``n_rows`` rows (``batch_size``, or the rule of ``None``)."""
        return auto_batch_rows(n_rows) if self.batch_size is None else int(self.batch_size)

    def _train_config(self, n_rows: int) -> NPTFitConfig:
        return NPTFitConfig(steps=self._steps(), lr=float(self.lr), flat_fraction=float(self.flat_fraction),
                           batch_size=self._batch_rows(n_rows), p_feature=float(self.p_feature),
                           p_target=float(self.p_target), anneal_fraction=float(self.anneal_fraction),
                           eval_every=int(self.eval_every),
                           patience=int(self.patience), context_size=int(self.context_size), mode=self.mode,
                           progress=bool(self.progress), seed=int(self.random_state or 0))

    def _config(self, cardinalities: tuple[int, ...]) -> NPTConfig:
        if self.preset not in PRESETS:
            raise TabzooInputError(f"preset={self.preset!r} is unknown; use one of {sorted(PRESETS)}.")
        cfg = dict(PRESETS[self.preset])
        cfg.update({k: v for k, v in (("dim", self.dim), ("n_layers", self.n_layers), ("n_heads", self.n_heads),
                                      ("dropout", self.dropout)) if v is not None})
        cfg["dim"] = row_dim(len(cardinalities), int(cfg["dim"]), self.max_row_width)
        heads = int(cfg["n_heads"])
        while (len(cardinalities) * int(cfg["dim"])) % heads:
            heads -= 1
        cfg["n_heads"] = heads
        return NPTConfig(cardinalities=cardinalities, **cfg)

    def memory_estimate(self, cardinalities: tuple[int, ...], n_rows: int) -> dict[str, Any]:
        """The estimated peak bytes of ``fit`` (one training step) and ``predict`` (one context
        partition plus one query chunk) on ``n_rows`` rows of these attributes (``0`` = numeric,
        ``K`` = classes; the targets included), from the shape alone, nothing allocated
        (:mod:`tabzoo_npt.memory`). Anything but integers is refused with a ``TabzooInputError``.

        :return: ``{"fit_bytes", "predict_bytes", "peak_bytes", "parameters", "dim", "batch_rows"}``.
        """
        cardinalities, n_rows = check_shape(cardinalities, n_rows)
        cfg = self._config(cardinalities)
        params = parameter_count(lambda: NPT(cfg))
        batch = min(self._batch_rows(n_rows), n_rows)
        fit_b = fit_bytes(cfg, params, batch)
        predict_b = predict_bytes(cfg, params, n_rows, int(self.context_size), int(self.chunk_size))
        return {"fit_bytes": fit_b, "predict_bytes": predict_b, "peak_bytes": max(fit_b, predict_b),
                "parameters": params, "dim": cfg.dim, "batch_rows": batch}

    def _check_memory(self, cardinalities: tuple[int, ...], n_rows: int) -> None:
        """Refuse before building when the estimated peak of fit or predict exceeds the limit
        (:mod:`tabzoo.kernels.memory`). The row-width cap bounds the parameters; the
        activations grow with rows x columns x dim and the attention maps with rows squared."""
        est = self.memory_estimate(cardinalities, n_rows)
        check_memory(f"{type(self).__name__}.fit", est["peak_bytes"], "use fewer features, a smaller dim or "
                     "max_row_width (NPT's parameters grow with the square of the row width), batch_size, "
                     "context_size or chunk_size", device=resolve_device(self.device),
                     detail=f"{est['parameters']:,} parameters for {len(cardinalities)} columns x dim {est['dim']}; "
                            f"batch {est['batch_rows']} rows")

    def _build_model(self, cardinalities: tuple[int, ...]) -> NPT:
        cfg = self._config(cardinalities)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(self.random_state or 0))
            model = NPT(cfg)
        return model.to(resolve_device(self.device))

    def _fit_table(self, X: Any, target_cells: np.ndarray, target_cards: tuple[int, ...],
                   X_unlabeled: Any, strata: np.ndarray | None) -> FitResult:
        """Encode ``X``, append ``target_cells [n, t]``, split validation rows, train."""
        self.encoder_ = TableEncoder().fit(X)
        xv = self.encoder_.transform(X)
        values = np.concatenate([xv, target_cells.astype(np.float32)], axis=1)
        d_x = xv.shape[1]
        self.targets_ = tuple(range(d_x, d_x + target_cells.shape[1]))
        self._check_memory(self.encoder_.cardinalities + target_cards, len(values))
        self.model_ = self._build_model(self.encoder_.cardinalities + target_cards)
        unlabeled = None
        if X_unlabeled is not None:
            if self.mode == "inductive":
                raise TabzooInputError("X_unlabeled needs mode='semi_supervised' or 'transductive'; the default "
                                       "inductive mode trains on the labeled rows only.")
            xu = check_input_array(X_unlabeled)
            check_n_features_and_names(self, xu, reset=False)
            uv = self.encoder_.transform(xu)
            unlabeled = np.concatenate([uv, np.full((len(uv), target_cells.shape[1]), np.nan, np.float32)], axis=1)
        pick = holdout_rows(len(values), float(self.validation_fraction), strata, int(self.random_state or 0),
                            int(self.min_validation_rows))
        self.validation_rows_ = len(pick)
        train_idx, val = np.setdiff1d(np.arange(len(values)), pick), (values[pick] if len(pick) else None)
        if self.validation_fraction and not len(pick):
            logger.info("%s: %d rows are too few for a validation split of >= %d rows (a quarter at most); "
                        "training the fixed budget of %d steps without early stopping.", type(self).__name__,
                        len(values), self.min_validation_rows, self._steps())
        cfg = self._train_config(len(train_idx) + (0 if unlabeled is None else len(unlabeled)))
        result = fit_npt(self.model_, values[train_idx], self.targets_, cfg, validation=val, unlabeled=unlabeled,
                         strata=None if strata is None else strata[train_idx])
        self.context_ = values  # every labeled row is context at prediction time
        self.unlabeled_ = unlabeled
        self.history_ = result
        return result

    def _warn_partitions(self, n_context: int) -> None:
        """Say when the context is too large for one dense attention and is partitioned."""
        k = len(context_partitions(n_context, int(self.context_size), 0))
        if k > 1:
            warnings.warn(f"{type(self).__name__}: {n_context} context rows exceed context_size={self.context_size} "
                          f"for dense attention; predicting from {k} disjoint partitions of ~{-(-n_context // k)} "
                          "rows each and averaging their logits (every row is read). Raise context_size to "
                          "attend densely, memory permitting.", UserWarning, stacklevel=3)

    def _predict_logits(self, X: Any) -> torch.Tensor:
        check_is_fitted(self, "model_")
        X = check_input_array(X)
        check_n_features_and_names(self, X, reset=False)
        xv = self.encoder_.transform(X)
        t = len(self.targets_)
        queries = np.concatenate([xv, np.full((len(xv), t), np.nan, np.float32)], axis=1)
        hide = np.zeros(queries.shape, dtype=bool)
        hide[:, list(self.targets_)] = True
        context, context_hide = self.context_, None
        if self.mode == "transductive" and self.unlabeled_ is not None:
            context = np.concatenate([self.context_, self.unlabeled_])
        attention = "full" if self.mode == "transductive" else "isolated"
        self._warn_partitions(len(context))
        return predict_cells(self.model_, context, queries, hide, context_size=int(self.context_size),
                             seed=int(self.random_state or 0), chunk_size=int(self.chunk_size),
                             attention=attention, context_hide=context_hide)

    def _check_params(self) -> None:
        """Every numeric argument and the device, before anything is built."""
        check_params(self, positive_int=("dim", "n_layers", "n_heads", "steps", "batch_size", "eval_every", "max_row_width",
                                         "patience", "min_validation_rows", "context_size", "chunk_size"),
                     positive=("lr",), fraction=("dropout", "validation_fraction"),
                     unit=("flat_fraction", "p_feature", "p_target", "anneal_fraction"))
        resolve_device(self.device)

    def _validate_fit_input(self, X: Any, y: Any) -> Any:
        self._check_params()
        require_y(self, y)
        X = check_input_array(X)
        check_n_features_and_names(self, X, reset=True)
        return X


    # -- pickle-free save / load (tabzoo_npt.persist) -------------------------------------------
    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Save the fitted estimator (params, preprocessing, labels, context, weights) pickle-free.

        Writes ``<path>.safetensors`` + ``.json`` (fitted state) and ``<path>.model.safetensors`` +
        ``.json`` (the NPT); refuses existing files unless ``overwrite=True``. Returns the stem.
        """
        from tabzoo_npt.persist import save_estimator

        return save_estimator(self, path, overwrite=overwrite)

    @classmethod
    def load(cls, path: str | Path, device: str | None = None) -> Any:
        """Load an estimator saved with :meth:`save` (``device`` overrides the saved one)."""
        from tabzoo_npt.persist import load_estimator

        return load_estimator(cls, path, device=device)


class NPTClassifier(ClassifierMixin, _NPTBase):
    """NPT for classification: the label is a categorical target attribute."""

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # missing values are masked cells (appendix C.4.1)
        return tags

    def fit(self, X: Any, y: Any, X_unlabeled: Any = None) -> NPTClassifier:
        X = self._validate_fit_input(X, y)
        classes, encoded = classification_labels(y, X.shape[0])
        self.classes_, self.n_classes_ = classes, len(classes)
        card = max(2, len(classes))
        self._fit_table(X, encoded[:, None].astype(np.float32), (card,), X_unlabeled, encoded)
        return self

    def predict_proba(self, X: Any) -> np.ndarray:
        logits = self._predict_logits(X)[:, self.targets_[0], : self.n_classes_]
        return torch.softmax(logits.double(), dim=-1).numpy()

    def predict(self, X: Any) -> np.ndarray:
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]


class NPTRegressor(RegressorMixin, _NPTBase):
    """NPT for regression; ``y [n]`` or ``[n, n_targets]`` (multi-target). ``steps=None`` trains
    1,200 steps (see ``steps`` in :class:`_NPTBase`)."""

    _default_steps = 1200

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True  # missing values are masked cells (appendix C.4.1)
        tags.target_tags.multi_output = True
        tags.target_tags.single_output = True
        return tags

    def fit(self, X: Any, y: Any, X_unlabeled: Any = None) -> NPTRegressor:
        X = self._validate_fit_input(X, y)
        y_arr = np.asarray(y)
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            from sklearn.exceptions import DataConversionWarning

            warnings.warn("A column-vector y was passed when a 1d array was expected; ravel it.",
                          DataConversionWarning, stacklevel=2)
        try:
            y_arr = np.asarray(y_arr, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise TabzooInputError(f"regression targets must be numbers ({exc}); encode y as floats.") from exc
        self._multi = y_arr.ndim == 2 and y_arr.shape[1] > 1
        y2 = y_arr.reshape(len(y_arr), -1)
        if len(y2) != X.shape[0]:
            raise TabzooInputError(f"X has {X.shape[0]} rows but y has {len(y2)}; pass one target row per row.")
        if not np.isfinite(y2).all():
            raise TabzooInputError("y contains NaN or inf; drop those rows or impute the target before fit.")
        self.y_mean_, self.y_std_, z = standardize_targets(y2)  # finite for targets of any scale
        self._fit_table(X, z, (0,) * y2.shape[1], X_unlabeled, None)
        return self

    def predict(self, X: Any) -> np.ndarray:
        logits = self._predict_logits(X)[:, list(self.targets_), 0].double().numpy()
        pred = unstandardize(logits, self.y_mean_, self.y_std_)
        return pred if self._multi else pred[:, 0]


class NPTImputer(TransformerMixin, _NPTBase):
    """Imputation of arbitrary cells: every column is an attribute, NaN cells are predicted.

    ``fit(X)`` trains with stochastic feature masking only (there is no target); ``transform(X)``
    returns ``X`` with every missing cell replaced by the model's prediction from the cell's row
    and the fixed context of training rows. Numeric tables give a float array; tables with
    categorical columns give an object array holding the predicted categories.
    """

    def __init__(self, *, preset: str = "small", dim: int | None = None, n_layers: int | None = None,
                 n_heads: int | None = None, dropout: float | None = None, steps: int = 300, lr: float = 1e-2,
                 flat_fraction: float = 0.5, batch_size: int | None = None, p_feature: float = 0.15,
                 context_size: int = DENSE_CONTEXT, chunk_size: int = 256,
                 max_row_width: int | None = MAX_ROW_WIDTH, progress: bool = False,
                 random_state: int = 0, device: str = "cpu") -> None:
        super().__init__(preset=preset, dim=dim, n_layers=n_layers, n_heads=n_heads, dropout=dropout, steps=steps,
                         lr=lr, flat_fraction=flat_fraction, batch_size=batch_size, p_feature=p_feature,
                         validation_fraction=0.0, context_size=context_size, chunk_size=chunk_size,
                         max_row_width=max_row_width, progress=progress, random_state=random_state, device=device)

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        return tags

    def fit(self, X: Any, y: Any = None) -> NPTImputer:
        self._check_params()
        X = check_input_array(X)
        check_n_features_and_names(self, X, reset=True)
        self.encoder_ = TableEncoder().fit(X)
        values = self.encoder_.transform(X)
        self.targets_ = ()
        self._check_memory(self.encoder_.cardinalities, len(values))
        self.model_ = self._build_model(self.encoder_.cardinalities)
        self.history_ = fit_npt(self.model_, values, (), self._train_config(len(values)))
        self.context_ = values
        return self

    def transform(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "model_")
        X = check_input_array(X)
        check_n_features_and_names(self, X, reset=False)
        values = self.encoder_.transform(X)
        hide = np.isnan(values)
        raw = np.asarray(X, dtype=object) if not self.encoder_.numeric_only else np.asarray(X, dtype=np.float64)
        out = raw.copy()
        rows = np.flatnonzero(hide.any(axis=1))
        if rows.size == 0:
            return out
        self._warn_partitions(len(self.context_))
        logits = predict_cells(self.model_, self.context_, values[rows], np.zeros((len(rows), values.shape[1]), bool),
                               context_size=int(self.context_size), seed=int(self.random_state or 0),
                               chunk_size=int(self.chunk_size))
        for j, card in enumerate(self.encoder_.cardinalities):
            r = rows[hide[rows, j]]
            if r.size == 0:
                continue
            sub = logits[np.searchsorted(rows, r), j]
            if card:
                out[r, j] = self.encoder_.category(j, sub[:, :card].argmax(dim=-1).numpy())
            else:
                out[r, j] = self.encoder_.inverse_numeric(j, sub[:, 0].numpy())
        return out
