"""Model runners of ``benchmarks/realdata.py``: the tabzoo estimators (found through the plugin
registry) and the peers, each behind one call ``fit_predict(X_train, y_train, X_test)``.

Every runner returns, for classification, probabilities ``[n_test, len(labels)]`` aligned to the
table's full label list (a class absent from the training rows gets probability 0), and for
regression the predictions ``[n_test]``. Each family gets the preprocessing it expects:

* tabzoo estimators: the DataFrame as is (their own preprocessing handles categories and NaN);
* LogisticRegression / RidgeCV: median imputation with missing indicators and standard scaling
  of numbers, one-hot encoding of categories (missing = its own level, rare levels pooled);
* RandomForest, HistGradientBoosting: ordinal codes (NaN kept as missing);
* XGBoost and LightGBM: pandas ``category`` columns (native categorical splits);
* CatBoost: string categories as ``cat_features``.

All peers run single-threaded (``n_jobs=1`` / ``thread_count=1``).
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["Runner", "discover_tabzoo", "peer_runners", "PEER_SETTINGS", "TABFLEX_VARIANTS", "NPT_SETTINGS",
           "NPT_TRAIN_CAP", "NPT_FIT_TIMEOUT_S", "NPT_BUDGET_S"]

#: the settings of every peer, reported in the JSON (library defaults unless named here)
PEER_SETTINGS: dict[str, dict[str, Any]] = {
    "linear": {"classification": "LogisticRegression(C=1.0, max_iter=1000)",
               "regression": "RidgeCV(alphas=logspace(-3, 3, 13))",
               "preprocessing": "median impute + missing indicators + StandardScaler; OneHotEncoder(min_frequency=5, "
                                "max_categories=30, handle_unknown='infrequent_if_exist')"},
    "random_forest": {"n_estimators": 100, "n_jobs": 1, "preprocessing": "ordinal codes, NaN kept"},
    "hist_gbdt": {"defaults": True, "categorical_features": "native for <= 255 levels, else ordinal codes"},
    "xgboost": {"defaults": True, "tree_method": "hist", "enable_categorical": True, "n_jobs": 1},
    "lightgbm": {"defaults": True, "n_jobs": 1, "verbose": -1, "categorical": "pandas category columns"},
    "catboost": {"iterations": 250, "thread_count": 1, "cat_features": "string columns",
                 "note": "iterations lowered from the default 1000 for the 45-minute CPU budget"},
}


@dataclass
class Runner:
    """One model of the suite.

    :param name: name in the JSON (``"tabflex"``, ``"xgboost"``...).
    :param family: ``"tabzoo"`` or ``"peer"``.
    :param fit_predict: ``(X_train, y_train, X_test, labels, seed) -> proba | predictions``.
    :param settings: what the JSON records about how it was run.
    :param first_split_only: the model runs on split 0 only (a stated time cap).
    :param fitted: filled by ``fit_predict`` of a tabzoo runner with the estimator's :data:`FITTED_REPORT`
        attributes after each fit (the record's ``"fitted"``); empty for the peers.
    """

    name: str
    family: str
    task: str
    fit_predict: Callable[..., np.ndarray] = field(repr=False)
    settings: dict[str, Any] = field(default_factory=dict)
    first_split_only: bool = False
    fitted: dict[str, Any] = field(default_factory=dict, repr=False)


def _align(proba: np.ndarray, classes: Any, labels: list[str]) -> np.ndarray:
    """Columns of ``proba`` (in ``classes`` order) placed in the order of ``labels``."""
    out = np.zeros((proba.shape[0], len(labels)), dtype=np.float64)
    index = {lab: i for i, lab in enumerate(labels)}
    for j, c in enumerate(list(classes)):
        out[:, index[str(c)]] = proba[:, j]
    s = out.sum(axis=1, keepdims=True)
    return np.where(s > 0, out / np.where(s > 0, s, 1.0), 1.0 / len(labels))


def _cat_cols(X: pd.DataFrame) -> list[str]:
    return [c for c in X.columns if isinstance(X[c].dtype, pd.CategoricalDtype)]


# -- tabzoo ----------------------------------------------------------------------------------------
def _kind_of(cls: type) -> set[str]:
    from sklearn.base import ClassifierMixin, RegressorMixin

    kinds = set()
    if issubclass(cls, ClassifierMixin):
        kinds.add("classification")
    if issubclass(cls, RegressorMixin):
        kinds.add("regression")
    return kinds or {"classification", "regression"}  # a multi-task estimator takes both


#: fitted attributes a suite record keeps (``"fitted"``, without the trailing underscore) where the estimator has
#: them: the choices it made on its own training rows (issue 28: ORION-MSP's linear member weight and its inner
#: scores, fine-tuning's outcome, the features per member)
FITTED_REPORT = ("linear_blend_", "linear_blend_inner_", "fine_tune_", "member_selection_")


def _plain(value: Any) -> Any:
    """``value`` as JSON types (numpy scalars and arrays to Python numbers and lists)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [_plain(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value if value is None or isinstance(value, bool | int | float | str) else repr(value)


def fitted_report(est: Any) -> dict[str, Any]:
    """The :data:`FITTED_REPORT` attributes ``est`` has (not None), as JSON types."""
    return {name.rstrip("_"): _plain(v) for name in FITTED_REPORT if (v := getattr(est, name, None)) is not None}


def _tabzoo_runner(name: str, cls: type, task: str, kwargs: dict[str, Any],
                   first_split_only: bool) -> Runner:
    accepts_seed = "random_state" in inspect.signature(cls.__init__).parameters
    fitted: dict[str, Any] = {}

    def fit_predict(X_train: pd.DataFrame, y_train: pd.Series, X_test: pd.DataFrame, labels: list[str] | None,
                    seed: int) -> np.ndarray:
        est = cls(**kwargs, **({"random_state": seed} if accepts_seed else {}))
        fitted.clear()
        if task == "classification":
            est.fit(X_train, y_train.to_numpy())
            fitted.update(fitted_report(est))
            proba, classes = est.predict_proba(X_test), est.classes_
            if isinstance(classes, list) and classes and isinstance(classes[0], np.ndarray):
                classes = classes[0]  # a multi-task estimator fitted on one target: its only task
                proba = proba[0] if isinstance(proba, list) else proba
            return _align(np.asarray(proba, dtype=np.float64), classes, labels or [])
        est.fit(X_train, y_train.to_numpy(dtype=np.float64))
        fitted.update(fitted_report(est))
        return np.asarray(est.predict(X_test), dtype=np.float64).reshape(-1)

    settings = {"class": f"{cls.__module__}:{cls.__name__}", "kwargs": dict(kwargs),
                "first_split_only": first_split_only}
    return Runner(name, "tabzoo", task, fit_predict, settings, first_split_only, fitted)


def discover_tabzoo(task: str, overrides: dict[str, dict[str, Any]],
                    first_split_only: set[str]) -> tuple[list[Runner], list[dict[str, str]]]:
    """Every installed tabzoo estimator for ``task``, through the plugin registry.

    ``ArchitectureSpec.estimator`` names the classifier (or a multi-task estimator, used for both
    tasks), ``ArchitectureSpec.regressor`` the regressor. Architectures without an estimator for
    ``task`` are returned in the second list with the reason.
    """
    from tabzoo.plugins import get_architecture, list_architectures

    runners, absent = [], []
    for arch in list_architectures():
        spec = get_architecture(arch)
        path = None
        if task == "regression" and getattr(spec, "regressor", None):
            path = spec.regressor
        elif spec.estimator:
            cls = spec.estimator_class()
            if task in _kind_of(cls):
                path = spec.estimator
        if path is None:
            why = (f"registers no estimator (kind {spec.kind!r})" if not spec.estimator
                   else f"registers no {task} estimator")
            absent.append({"model": arch, "task": task, "reason": why})
            continue
        mod, _, attr = path.partition(":")
        cls = getattr(importlib.import_module(mod), attr)
        runners.append(_tabzoo_runner(arch, cls, task, overrides.get(arch, {}), arch in first_split_only))
    return runners, absent


def variant_runners(zoo: list[Runner], variants: dict[str, tuple[str, dict[str, Any]]],
                    settings: dict[str, dict[str, Any]]) -> list[Runner]:
    """One more runner per ``--variant NAME=ARCH:JSON``: the estimator of ``ARCH`` (as discovered in
    ``zoo`` for this task) with ``settings[ARCH]`` updated by the variant's kwargs."""
    out = []
    for name, (arch, kwargs) in variants.items():
        method, _, plain = arch.rpartition("+")  # "stack+tabflex": the estimator stacked on gradient boosting
        base = next((r for r in zoo if r.name == plain), None)
        if base is None or (method and base.task != "classification"):
            continue  # this architecture has no estimator for this task
        mod, _, attr = base.settings["class"].partition(":")
        cls = getattr(importlib.import_module(mod), attr)
        if method:
            cls = _stacked(cls, STACK_METHODS[method])
        merged = {**settings.get(plain, {}), **kwargs}
        out.append(_tabzoo_runner(name, cls, base.task, merged, base.first_split_only))
    return out


#: ``--variant NAME=METHOD+ARCH:JSON``: the estimator of ``ARCH`` inside :class:`tabzoo.estimators.stacking.StackingClassifier`
#: (method, booster: None = the default HistGradientBoosting, "catboost" = the suite's CatBoost peer's settings,
#: "auto" = the estimator's ``booster="auto"``, the better of the two out of fold). The out-of-fold guard is the
#: estimator's default (``guard=True``) since 2026-11-28; ``stack-noguard`` is the unguarded stack of earlier runs.
STACK_METHODS: dict[str, tuple[str, str | None, bool]] = {
    "stack": ("features", None, True), "stack-avg": ("average", None, True), "stack-cb": ("features", "catboost", True),
    "stack-auto": ("features", "auto", True), "stack-noguard": ("features", None, False)}


def _booster(name: str | None, seed: int) -> Any:
    if name is None or name == "auto":
        return name
    import catboost as cb  # the catboost peer's settings, on the stacking's ordinal codes

    return cb.CatBoostClassifier(iterations=250, thread_count=1, verbose=False, random_seed=seed,
                                 allow_writing_files=False)


def _stacked(cls: type, spec: tuple[str, str | None, bool]) -> type:
    """A class whose instances are ``StackingClassifier(cls(**kwargs), booster, method=method, guard=guard)`` (seeded alike)."""
    from tabzoo.estimators.stacking import StackingClassifier

    method, booster, guard = spec

    class Stacked(StackingClassifier):
        def __init__(self, random_state: int = 0, **kwargs: Any) -> None:
            super().__init__(cls(random_state=random_state, **kwargs), booster=_booster(booster, random_state),
                             method=method, random_state=random_state, guard=guard)

    Stacked.__name__ = Stacked.__qualname__ = f"Stacked{cls.__name__}"
    return Stacked


# -- issue 28: TabFlex checkpoints and fine-tuning (runners named in --models, or run by default) ------
#: fine-tuning as measured: the core's FineTune defaults (Adam lr 1e-3, clip 1, 512 context + 256 query rows per
#: episode, 100 steps, inner validation split of 20% deciding early stopping and whether the tuned weights are kept)
TABFLEX_FINE_TUNE: dict[str, Any] = {"steps": 100, "lr": 1e-3, "progress": False}
#: name -> (architecture, estimator kwargs); compared with the plain ``tabflex`` runner (its defaults)
TABFLEX_VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "tabflex-small": ("tabflex", {"checkpoint": "tabflex-small"}),
    "tabflex-icl": ("tabflex", {"checkpoint": "tabflex-icl"}),
    "tabflex-long": ("tabflex", {"checkpoint": "tabflex-long"}),  # issue 30: GPU-pretrained on long contexts
    "tabflex-ft": ("tabflex", {"checkpoint": "tabflex-small", "fine_tune": TABFLEX_FINE_TUNE}),
    "tabflex-icl-ft": ("tabflex", {"checkpoint": "tabflex-icl", "fine_tune": TABFLEX_FINE_TUNE}),
}
TABFLEX_VARIANTS |= {
    # issue 28 item 7: TabFlex (tabflex-icl) with HistGradientBoosting's out-of-fold log-probabilities as extra
    # columns, and the 50/50 average of the two (tabzoo.estimators.stacking)
    "stack-tabflex": ("stack+tabflex", {"checkpoint": "tabflex-icl"}),
    "stack-avg-tabflex": ("stack-avg+tabflex", {"checkpoint": "tabflex-icl"}),
    # issue 28 item 2: local/global retrieval contexts chosen per table on an inner split (tabzoo.train.retrieval)
    "tabflex-icl-sel": ("tabflex", {"checkpoint": "tabflex-icl", "context_strategy": "select"}),
    "tabflex-icl-ft-sel": ("tabflex", {"checkpoint": "tabflex-icl", "context_strategy": "select",
                                       "fine_tune": TABFLEX_FINE_TUNE}),
}
#: main-table seconds per fine-tuned runner (checked before each fit; a stated cap)
TABFLEX_VARIANT_BUDGETS_S = {"tabflex-ft": 900.0, "tabflex-icl-ft": 900.0, "tabflex-icl-ft-sel": 1500.0}


# -- NPT (issue 25) -------------------------------------------------------------------------------
#: NPT is trained per table (the other tabzoo models are pretrained), on the suite's shared CPU,
#: with the estimators' defaults (issue 25, Deliver 6: the `small` preset, the default step budget
#: with early stopping on a 10% validation split, lr 1e-2, p_target 0.5, LAMB + Lookahead,
#: flat-then-cosine, the annealed feature/target trade-off; see ``_NPTBase``). Until 2026-11-27 the
#: suite ran a cut budget instead, ``{"preset": "tiny", "dropout": 0.1, "steps": 150, "lr": 1e-2,
#: "batch_size": 512, "p_target": 0.5, "validation_fraction": 0.1, "eval_every": 15, "patience": 4}``
#: (the result files of those runs record it under ``models``).
NPT_SETTINGS: dict[str, Any] = {}
#: training rows NPT reads per table (pass ``--train-cap`` of the same value to give the peers the same rows)
NPT_TRAIN_CAP = 500
#: hard cap of one NPT fit+predict and its total budget on the main table (seconds, loaded machine)
NPT_FIT_TIMEOUT_S = 1800.0
NPT_BUDGET_S = 5400.0


# -- peers ---------------------------------------------------------------------------------------
def _linear(task: str) -> Callable[..., np.ndarray]:
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import LogisticRegression, RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    def fit_predict(X_train, y_train, X_test, labels, seed):  # noqa: ANN001, ANN202
        cats = _cat_cols(X_train)
        nums = [c for c in X_train.columns if c not in cats]

        def prep(X: pd.DataFrame) -> pd.DataFrame:
            X = X.copy()
            for c in cats:
                X[c] = X[c].astype(object).where(X[c].notna(), "__missing__")
            return X

        parts = []
        if nums:
            parts.append(("num", make_pipeline(SimpleImputer(strategy="median", add_indicator=True,
                                                             keep_empty_features=True), StandardScaler()), nums))
        if cats:
            parts.append(("cat", OneHotEncoder(handle_unknown="infrequent_if_exist", min_frequency=5,
                                               max_categories=30, sparse_output=False), cats))
        ct = ColumnTransformer(parts)
        if task == "classification":
            model = make_pipeline(ct, LogisticRegression(C=1.0, max_iter=1000))
            model.fit(prep(X_train), y_train.to_numpy())
            return _align(model.predict_proba(prep(X_test)), model.classes_, labels)
        model = make_pipeline(ct, RidgeCV(alphas=np.logspace(-3, 3, 13)))
        model.fit(prep(X_train), y_train.to_numpy(dtype=float))
        return model.predict(prep(X_test))

    return fit_predict


def _ordinal(X_train: pd.DataFrame, X_test: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, list[int], list[int]]:
    """Ordinal codes by the training categories (unknown and missing -> NaN); cat column indices
    with <= 255 levels (native in HistGradientBoosting) and all cat indices."""
    cats = set(_cat_cols(X_train))
    tr, te, small, allcat = [], [], [], []
    for j, c in enumerate(X_train.columns):
        if c in cats:
            levels = pd.Index(X_train[c].dropna().unique())
            to_code = {v: float(i) for i, v in enumerate(levels)}
            tr.append(X_train[c].astype(object).map(to_code).astype(float).to_numpy())
            te.append(X_test[c].astype(object).map(to_code).astype(float).to_numpy())
            allcat.append(j)
            if len(levels) <= 255:
                small.append(j)
        else:
            tr.append(X_train[c].to_numpy(dtype=float))
            te.append(X_test[c].to_numpy(dtype=float))
    return np.column_stack(tr), np.column_stack(te), small, allcat


def _random_forest(task: str) -> Callable[..., np.ndarray]:
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    def fit_predict(X_train, y_train, X_test, labels, seed):  # noqa: ANN001, ANN202
        a, b, _, _ = _ordinal(X_train, X_test)
        if task == "classification":
            m = RandomForestClassifier(n_estimators=100, n_jobs=1, random_state=seed).fit(a, y_train.to_numpy())
            return _align(m.predict_proba(b), m.classes_, labels)
        return RandomForestRegressor(n_estimators=100, n_jobs=1, random_state=seed).fit(
            a, y_train.to_numpy(dtype=float)).predict(b)

    return fit_predict


def _hist_gbdt(task: str) -> Callable[..., np.ndarray]:
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    def fit_predict(X_train, y_train, X_test, labels, seed):  # noqa: ANN001, ANN202
        a, b, small, _ = _ordinal(X_train, X_test)
        mask = np.zeros(a.shape[1], dtype=bool)
        mask[small] = True
        cf = mask if mask.any() else None
        if task == "classification":
            m = HistGradientBoostingClassifier(categorical_features=cf, random_state=seed).fit(a, y_train.to_numpy())
            return _align(m.predict_proba(b), m.classes_, labels)
        return HistGradientBoostingRegressor(categorical_features=cf, random_state=seed).fit(
            a, y_train.to_numpy(dtype=float)).predict(b)

    return fit_predict


def _encode_labels(y_train: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    classes, codes = np.unique(y_train.to_numpy().astype(str), return_inverse=True)
    return classes, codes


def _xgboost(task: str) -> Callable[..., np.ndarray]:
    import xgboost as xgb

    def fit_predict(X_train, y_train, X_test, labels, seed):  # noqa: ANN001, ANN202
        kw = dict(tree_method="hist", enable_categorical=True, n_jobs=1, random_state=seed)
        if task == "classification":
            classes, codes = _encode_labels(y_train)
            m = xgb.XGBClassifier(**kw).fit(X_train, codes)
            return _align(m.predict_proba(X_test), classes, labels)
        return xgb.XGBRegressor(**kw).fit(X_train, y_train.to_numpy(dtype=float)).predict(X_test)

    return fit_predict


def _lightgbm(task: str) -> Callable[..., np.ndarray]:
    import lightgbm as lgb

    def fit_predict(X_train, y_train, X_test, labels, seed):  # noqa: ANN001, ANN202
        kw = dict(n_jobs=1, verbose=-1, random_state=seed)
        if task == "classification":
            classes, codes = _encode_labels(y_train)
            m = lgb.LGBMClassifier(**kw).fit(X_train, codes)
            return _align(m.predict_proba(X_test), classes, labels)
        return lgb.LGBMRegressor(**kw).fit(X_train, y_train.to_numpy(dtype=float)).predict(X_test)

    return fit_predict


def _catboost(task: str) -> Callable[..., np.ndarray]:
    import catboost as cb

    def fit_predict(X_train, y_train, X_test, labels, seed):  # noqa: ANN001, ANN202
        cats = _cat_cols(X_train)

        def prep(X: pd.DataFrame) -> pd.DataFrame:
            X = X.copy()
            for c in cats:
                X[c] = X[c].astype(object).where(X[c].notna(), "__missing__").astype(str)
            return X

        kw = dict(iterations=250, thread_count=1, verbose=False, random_seed=seed, cat_features=cats,
                  allow_writing_files=False)
        if task == "classification":
            classes, codes = _encode_labels(y_train)
            m = cb.CatBoostClassifier(**kw).fit(prep(X_train), codes)
            return _align(m.predict_proba(prep(X_test)), classes, labels)
        return cb.CatBoostRegressor(**kw).fit(prep(X_train), y_train.to_numpy(dtype=float)).predict(prep(X_test))

    return fit_predict


_PEERS = {"linear": _linear, "random_forest": _random_forest, "hist_gbdt": _hist_gbdt, "xgboost": _xgboost,
          "lightgbm": _lightgbm, "catboost": _catboost}
_PEER_MODULES = {"xgboost": "xgboost", "lightgbm": "lightgbm", "catboost": "catboost"}


def peer_runners(task: str, only: set[str] | None = None) -> tuple[list[Runner], list[dict[str, str]]]:
    """The peers for ``task``; a peer whose package does not import is returned with the reason."""
    runners, absent = [], []
    for name, make in _PEERS.items():
        if only is not None and name not in only:
            continue
        mod = _PEER_MODULES.get(name)
        if mod is not None:
            try:
                importlib.import_module(mod)
            except ImportError as exc:
                absent.append({"model": name, "task": task, "reason": f"{mod} does not import: {exc}"})
                continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runners.append(Runner(name, "peer", task, make(task), dict(PEER_SETTINGS[name])))
    return runners, absent
