"""Out-of-fold stacking of an in-context classifier with gradient boosting (issue 28 item 7).

AutoGluon wins tabular benchmarks by stacking: a model's out-of-fold predictions become inputs of the
next. :class:`StackingClassifier` does this once for every in-context estimator of tabzoo:

* ``method="features"`` (default): a gradient-boosting model (``booster``, default scikit-learn's
  ``HistGradientBoostingClassifier``) is fitted ``cv`` times, each time on all training rows but one
  fold, and predicts that fold; its out-of-fold log-probabilities become extra feature columns of the
  in-context estimator's training rows. At prediction the booster refitted on all training rows gives
  the query rows' columns. The in-context model so reads, per row, what the trees make of it
  (issue 28's prototype: TabFlex with these columns reached a mean ROC-AUC about 0.012 above XGBoost's).
* ``method="average"``: the mean of the two models' probabilities (the prototype's close second).

At prediction the booster is the bag of its ``cv`` fold models (the mean of their probabilities; AutoGluon's
bagging), not a refit on all rows: the query rows' columns then come from the very models that made the
training rows' columns and the guard's evidence, so both have the same distribution. A refit can differ
from its fold models: on ratdat_genus (26 classes, 3,000 rows) HistGradientBoosting's fold models reach
one-vs-rest AUCs of 0.97-0.99 on their held-out folds while the refit on all rows scores about 0.5 on the
test rows, and the refit's columns took the stack from 0.97 to 0.68 ROC-AUC.

**The guard** (``guard=True``, default). A stack can be far worse than one of its members: where the
booster is poor (26 classes, a few hundred rows each) its columns mislead the in-context model. So the
fit scores, on the same ``cv`` folds of the training rows and nothing else, four candidates: the
requested stack, the other combination (the 50/50 average, or the features stack), the in-context
estimator alone and the booster alone. Each candidate's out-of-fold probabilities are pooled over the
folds and scored (``scoring``: ROC-AUC, multiclass macro one-vs-rest; or log-loss). The stack is kept
unless another candidate scores strictly higher; then the best one is refitted on all rows and predicts,
and a :class:`StackingChoiceWarning` says so. ``chosen_`` names the candidate, ``oof_scores_`` holds
every score and ``choice_`` says why in words. By construction the chosen candidate's out-of-fold score
is at least every member's. The features stack's out-of-fold score reads the booster's out-of-fold
columns (the level-two scheme AutoGluon uses): the scored fold's own columns never saw its labels.
The guard costs ``2 * cv`` more fits of the in-context estimator (predicting every training row twice).

**``booster="auto"``** (or a list of classifiers): each booster candidate is scored alone on the same
folds (``scoring``), and the best one (ties: the earlier) is used. ``"auto"`` tries scikit-learn's
``HistGradientBoostingClassifier`` and then, where ``catboost`` is installed, ``CatBoostClassifier(
iterations=250, thread_count=1)`` (the real-data suite's CatBoost settings). ``booster_budget_s`` bounds
the time of that choice: the first candidate always runs; a later one is skipped when the time spent so
far plus its first fold's time times the folds still to go would pass the budget (``boosters_skipped_``
records it). Only that skip depends on the machine's speed; with a budget that is not reached, the
choice, like everything else here, is deterministic for a ``random_state``.

Everything uses only the training rows; the folds are stratified and seeded (``random_state``). It is
its own estimator: it counts for no target of the models it combines.
"""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from tabzoo.errors import TabzooInputError
from tabzoo.estimators.sk import BaseEstimator, ClassifierMixin, check_is_fitted

__all__ = ["CANDIDATES", "METHODS", "SCORINGS", "StackingChoiceWarning", "StackingClassifier"]

#: how the two models are combined
METHODS = ("features", "average")


def _frame(X: Any) -> Any:
    """``X`` as a DataFrame with string column names (a copy; rows kept in order)."""
    import pandas as pd

    frame = X.copy() if isinstance(X, pd.DataFrame) else pd.DataFrame(np.asarray(X))
    frame.columns = [str(c) for c in frame.columns]
    return frame.reset_index(drop=True)


class _Codes:
    """Numeric input of the booster: non-numeric columns as category codes of the training rows (unseen: NaN)."""

    def fit(self, frame: Any) -> _Codes:
        import pandas as pd

        self.levels_ = {c: pd.Index(pd.unique(frame[c].dropna())) for c in frame.columns
                        if not pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])}
        return self

    def transform(self, frame: Any) -> np.ndarray:
        out = np.empty(frame.shape, dtype=np.float64)
        for j, c in enumerate(frame.columns):
            if c in self.levels_:
                codes = self.levels_[c].get_indexer(frame[c]).astype(np.float64)
                out[:, j] = np.where(codes < 0, np.nan, codes)
            else:
                out[:, j] = frame[c].to_numpy(dtype=np.float64, na_value=np.nan)
        return out


class StackingChoiceWarning(UserWarning):
    """The out-of-fold guard predicts with something other than the requested stack (see ``chosen_``)."""


#: the candidates the guard compares, in the order that breaks ties (the requested stack comes first)
CANDIDATES = ("features", "average", "estimator", "booster")
#: ``scoring`` values: higher is better (log-loss is negated)
SCORINGS = ("roc_auc", "log_loss")


def _score(y: np.ndarray, proba: np.ndarray, classes: np.ndarray, scoring: str) -> float:
    """Out-of-fold score, higher is better: ROC-AUC or minus log-loss.

    ROC-AUC: binary; multiclass the macro mean of one-vs-rest AUCs over the classes with at least 2 rows (a class
    with one row is never in its own fold's training rows, so every candidate scores it alike, by ties)."""
    from sklearn.metrics import log_loss, roc_auc_score

    if scoring == "log_loss":
        p = np.clip(proba, 1e-15, 1.0)
        return -float(log_loss(y, p / p.sum(1, keepdims=True), labels=classes))
    if classes.size == 2:
        return float(roc_auc_score(y == classes[1], proba[:, 1]))
    counts = np.array([(y == c).sum() for c in classes])
    keep = [j for j in range(classes.size) if 2 <= counts[j] < y.shape[0]] or \
        [j for j in range(classes.size) if 1 <= counts[j] < y.shape[0]]
    return float(np.mean([roc_auc_score(y == classes[j], proba[:, j]) for j in keep]))


def _auto_boosters(random_state: int) -> list[tuple[str, Any]]:
    """``booster="auto"``'s candidates: HistGradientBoosting, then CatBoost where it is installed."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    out: list[tuple[str, Any]] = [("hist_gbdt", HistGradientBoostingClassifier(random_state=random_state))]
    try:
        import catboost
    except ImportError:
        return out
    out.append(("catboost", catboost.CatBoostClassifier(iterations=250, thread_count=1, verbose=False,
                                                        random_seed=random_state, allow_writing_files=False)))
    return out


class StackingClassifier(ClassifierMixin, BaseEstimator):
    """An in-context classifier stacked on a gradient-boosting model, with an out-of-fold guard (module doc).

    :param estimator: the in-context classifier (unfitted; cloned). None: the registered ``tabflex``
        architecture's estimator.
    :param booster: a scikit-learn classifier with ``predict_proba`` (cloned); None: ``HistGradientBoostingClassifier``;
        ``"auto"`` or a list of classifiers: the best of them out of fold (module doc).
    :param method: ``"features"`` (out-of-fold log-probabilities as extra columns) or ``"average"``.
    :param cv: folds of the out-of-fold predictions (and of the guard).
    :param random_state: seed of the folds and of the default boosters.
    :param guard: score the stack against its members (and the other combination) out of fold and predict
        with the best (module doc). False: always the requested stack, without the guard's extra fits.
    :param scoring: the guard's and ``booster="auto"``'s out-of-fold score, ``"roc_auc"`` or ``"log_loss"``.
    :param booster_budget_s: seconds the choice among several boosters may take (module doc).

    Fitted: ``classes_``; ``estimator_`` (None when the booster alone is chosen); ``boosters_`` (the booster's
    fitted fold models, whose mean predicts; empty when the in-context estimator alone is chosen); ``chosen_``
    (one of :data:`CANDIDATES`); ``oof_scores_`` (candidate -> out-of-fold score; empty without the guard or with
    one class); ``choice_`` (why, in words); ``booster_name_``; ``booster_scores_`` (booster candidate ->
    out-of-fold score); ``boosters_skipped_`` (candidates cut by ``booster_budget_s``).
    """

    def __init__(self, estimator: Any = None, booster: Any = None, method: str = "features", cv: int = 5,
                 random_state: int = 0, guard: bool = True, scoring: str = "roc_auc",
                 booster_budget_s: float = 120.0) -> None:
        self.estimator = estimator
        self.booster = booster
        self.method = method
        self.cv = cv
        self.random_state = random_state
        self.guard = guard
        self.scoring = scoring
        self.booster_budget_s = booster_budget_s

    def _make_estimator(self) -> Any:
        from sklearn.base import clone

        if self.estimator is None:
            from tabzoo.plugins import get_architecture

            return get_architecture("tabflex").estimator_class()()
        return clone(self.estimator)

    def _boosters(self) -> list[tuple[str, Any]]:
        """The booster candidates as ``(name, unfitted classifier)``; one unless ``booster`` asks for a choice."""
        from sklearn.base import clone
        from sklearn.ensemble import HistGradientBoostingClassifier

        if self.booster is None:
            return [("hist_gbdt", HistGradientBoostingClassifier(random_state=self.random_state))]
        if isinstance(self.booster, str):
            if self.booster != "auto":
                raise TabzooInputError(f"booster must be a classifier, a list of them, None or 'auto', "
                                       f"got {self.booster!r}.")
            return _auto_boosters(self.random_state)
        if isinstance(self.booster, list | tuple):
            if not self.booster:
                raise TabzooInputError("booster is an empty list; pass at least one classifier, None or 'auto'.")
            return [(f"{i}:{type(b).__name__}", clone(b)) for i, b in enumerate(self.booster)]
        return [(type(self.booster).__name__, clone(self.booster))]

    def _extra(self, proba: np.ndarray) -> Any:
        """Columns ``[n, k]`` (binary: ``[n, 1]``) of the booster's log-probabilities, log-odds for two classes."""
        import pandas as pd

        logp = np.log(np.clip(proba, 1e-6, 1.0))
        cols = logp[:, 1:] - logp[:, :1] if logp.shape[1] == 2 else logp
        return pd.DataFrame(cols, columns=[f"__stack_{j}" for j in range(cols.shape[1])])

    def _check(self) -> None:
        if self.method not in METHODS:
            raise TabzooInputError(f"method must be one of {METHODS}, got {self.method!r}.")
        if isinstance(self.cv, bool) or not isinstance(self.cv, int) or self.cv < 2:
            raise TabzooInputError(f"cv must be an int >= 2 (folds of the out-of-fold predictions), got {self.cv!r}.")
        if self.scoring not in SCORINGS:
            raise TabzooInputError(f"scoring must be one of {SCORINGS}, got {self.scoring!r}.")

    def _oof(self, model: Any, X: Any, y: np.ndarray, folds: list[tuple[np.ndarray, np.ndarray]],
             budget_end: float | None = None, keep: list[Any] | None = None) -> np.ndarray | None:
        """Out-of-fold probabilities ``[n, k]`` of ``model`` (cloned per fold; the fitted fold models appended to
        ``keep``); None when ``budget_end`` would pass."""
        from sklearn.base import clone

        oof = np.zeros((y.shape[0], self.classes_.size))
        for i, (tr, te) in enumerate(folds):
            t0 = time.perf_counter()
            xtr = X.iloc[tr] if hasattr(X, "iloc") else X[tr]
            xte = X.iloc[te] if hasattr(X, "iloc") else X[te]
            fold = clone(model).fit(xtr, y[tr])
            oof[np.ix_(te, np.searchsorted(self.classes_, fold.classes_))] = fold.predict_proba(xte)
            if keep is not None:
                keep.append(fold)
            spent = time.perf_counter() - t0
            if budget_end is not None and i + 1 < len(folds) and \
                    time.perf_counter() + spent * (len(folds) - i - 1) > budget_end:
                return None
        return oof

    def fit(self, X: Any, y: Any) -> StackingClassifier:
        """Score the candidates out of fold (``guard``); keep the chosen one (the in-context estimator refitted on
        all rows, the booster as the bag of its fold models).

        :param X: ``[n_samples, n_features]`` array-like or DataFrame.
        :param y: ``[n_samples]`` labels.
        """
        import pandas as pd
        from sklearn.model_selection import StratifiedKFold

        self._check()
        frame = _frame(X)
        y = np.asarray(y)
        if y.shape[0] != frame.shape[0]:
            raise TabzooInputError(f"X has {frame.shape[0]} rows but y has {y.shape[0]}; pass one label per row.")
        self.classes_ = np.unique(y)
        self.codes_ = _Codes().fit(frame)
        xb = self.codes_.transform(frame)
        boosters = self._boosters()
        self.booster_scores_: dict[str, float] = {}
        self.boosters_skipped_: list[str] = []
        self.oof_scores_: dict[str, float] = {}
        self.chosen_ = self.method
        if self.classes_.size < 2:  # nothing to score: the requested stack, as before
            name, booster = boosters[0]
            self.booster_name_ = name
            self.boosters_ = [booster.fit(xb, y)]
            self.estimator_ = self._make_estimator().fit(frame, y)
            self.choice_ = "one class: no out-of-fold evidence; the requested stack"
            self.n_features_in_ = int(frame.shape[1])
            return self
        counts = np.unique(y, return_counts=True)[1]
        splitter = StratifiedKFold(n_splits=int(min(self.cv, max(2, counts.max()))), shuffle=True,
                                   random_state=self.random_state)
        with warnings.catch_warnings():  # classes with fewer rows than folds: handled (absent from some folds)
            warnings.filterwarnings("ignore", message="The least populated class", category=UserWarning)
            folds = list(splitter.split(xb, y))
        # the booster(s): out-of-fold probabilities, and the choice among several
        budget_end = time.perf_counter() + float(self.booster_budget_s)
        best: tuple[str, list[Any], np.ndarray] | None = None
        for i, (name, booster) in enumerate(boosters):
            if i and time.perf_counter() > budget_end:
                self.boosters_skipped_.append(name)
                continue
            fitted: list[Any] = []
            oof = self._oof(booster, xb, y, folds, budget_end if i else None, keep=fitted)
            if oof is None:
                self.boosters_skipped_.append(name)
                continue
            self.booster_scores_[name] = _score(y, oof, self.classes_, self.scoring)
            if best is None or self.booster_scores_[name] > self.booster_scores_[best[0]]:
                best = (name, fitted, oof)
        assert best is not None  # the first candidate always runs
        self.booster_name_, fold_models, boost_oof = best
        if self.boosters_skipped_:
            warnings.warn(f"StackingClassifier: booster candidate(s) {self.boosters_skipped_} skipped for the "
                          f"{self.booster_budget_s:g} s budget (booster_budget_s).", StackingChoiceWarning,
                          stacklevel=2)
        stacked = pd.concat([frame, self._extra(boost_oof)], axis=1)
        est = self._make_estimator()
        if self.guard:
            icl_oof = self._oof(est, frame, y, folds)
            feat_oof = self._oof(est, stacked, y, folds)
            assert icl_oof is not None and feat_oof is not None
            probs = {"features": feat_oof, "average": 0.5 * (icl_oof + boost_oof), "estimator": icl_oof,
                     "booster": boost_oof}
            order = (self.method,) + tuple(c for c in CANDIDATES if c != self.method)
            self.oof_scores_ = {c: _score(y, probs[c], self.classes_, self.scoring) for c in order}
            self.chosen_ = max(order, key=lambda c: (self.oof_scores_[c], -order.index(c)))
            if self.chosen_ == self.method:
                self.choice_ = (f"the {self.method} stack: out-of-fold {self.scoring} "
                                f"{self.oof_scores_[self.method]:.4f}, no candidate higher")
            else:
                self.choice_ = (f"{self.chosen_}: out-of-fold {self.scoring} {self.oof_scores_[self.chosen_]:.4f} "
                                f"above the {self.method} stack's {self.oof_scores_[self.method]:.4f}")
                warnings.warn(f"StackingClassifier predicts with {self.choice_} ({self.booster_name_} booster).",
                              StackingChoiceWarning, stacklevel=2)
        else:
            self.choice_ = f"the {self.method} stack (guard=False)"
        # the chosen candidate: the in-context estimator on all rows, the booster as the bag of its fold models
        self.boosters_ = [] if self.chosen_ == "estimator" else fold_models
        if self.chosen_ == "features":
            self.estimator_ = est.fit(stacked, y)
        else:
            self.estimator_ = None if self.chosen_ == "booster" else est.fit(frame, y)
        self.n_features_in_ = int(frame.shape[1])
        return self

    def _booster_proba(self, frame: Any) -> np.ndarray:
        """The mean of the fold models' probabilities ``[n, k]`` (a class a fold model never saw: 0 there)."""
        xb = self.codes_.transform(frame)
        out = np.zeros((frame.shape[0], self.classes_.size))
        for model in self.boosters_:
            out[:, np.searchsorted(self.classes_, model.classes_)] += np.asarray(model.predict_proba(xb))
        return out / len(self.boosters_)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``[n_samples, n_classes]`` in the order of ``classes_``, from ``chosen_``."""
        import pandas as pd

        check_is_fitted(self, "chosen_")
        frame = _frame(X)
        if self.chosen_ == "estimator" or self.classes_.size < 2 and self.method == "features":
            return np.asarray(self.estimator_.predict_proba(frame))
        boost = self._booster_proba(frame)
        if self.chosen_ == "booster":
            return boost
        if self.chosen_ == "features":
            return np.asarray(self.estimator_.predict_proba(pd.concat([frame, self._extra(boost)], axis=1)))
        icl = np.asarray(self.estimator_.predict_proba(frame))
        return 0.5 * (icl + boost)

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class of each row ``[n_samples]``."""
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]
