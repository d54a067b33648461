"""In-context classifier base and regressor base (see :mod:`tabzoo.estimators.base`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from tabzoo.errors import TabzooInputError
from tabzoo.estimators.base import InContextEstimator
from tabzoo.estimators.joint import JointPredictMixin
from tabzoo.estimators.sk import (
    ClassifierMixin,
    RegressorMixin,
    check_is_fitted,
    classification_labels,
    regression_targets,
)
from tabzoo.kernels.threads import host_threads

__all__ = ["InContextClassifier", "InContextRegressor"]

_AVERAGES = ("probabilities", "logits")


def _tags(tags: Any) -> Any:
    tags.input_tags.allow_nan = True
    tags.non_deterministic = False
    return tags


class InContextClassifier(JointPredictMixin, ClassifierMixin, InContextEstimator):
    """scikit-learn classifier around an in-context model (no gradient training in ``fit``).

    :param n_estimators: ensemble members (feature permutations and class rotations).
    :param average: ``"probabilities"`` averages the members' softmax outputs (default);
        ``"logits"`` averages their log-probabilities, then re-normalises.
    :param chunk_size: query rows per forward pass.
    :param device: ``"auto"`` | ``"cpu"`` | ``"cuda"`` ...
    :param random_state: seed of the ensemble members.
    :param verbose: tqdm progress bar over chunks.

    ``classes_`` holds the sorted distinct labels of any type; the model sees indices
    ``0..n_classes-1``, rotated per member. More classes than ``max_classes`` (of the class or
    of the model) raise :class:`TabzooInputError` unless a subclass overrides
    :meth:`_check_n_classes`.
    """

    def __init__(
        self,
        n_estimators: int = 4,
        average: str = "probabilities",
        chunk_size: int = 1024,
        device: str = "auto",
        random_state: int | None = 0,
        verbose: bool = False,
    ) -> None:
        super().__init__(
            n_estimators=n_estimators, chunk_size=chunk_size, device=device,
            random_state=random_state, verbose=verbose,
        )
        self.average = average

    def __sklearn_tags__(self) -> Any:
        return _tags(super().__sklearn_tags__())

    def _check_n_classes(self, n_classes: int) -> None:
        limit = self._model_limit("max_classes")
        if limit is not None and n_classes > limit:
            raise TabzooInputError(
                f"y has {n_classes} classes but the model's head takes at most {limit}. Merge rare "
                "classes, or wrap the estimator in sklearn.multiclass.OutputCodeClassifier / "
                "OneVsRestClassifier."
            )

    @host_threads
    def fit(self, X: Any, y: Any) -> InContextClassifier:
        """Store the preprocessed training rows and labels as the context.

        :param X: ``[n_samples, n_features]`` array-like or DataFrame (NaN = missing).
        :param y: ``[n_samples]`` labels of any sortable type.
        """
        if self.average not in _AVERAGES:
            raise TabzooInputError(f"average must be one of {_AVERAGES}, got {self.average!r}.")
        Xt = self._fit_context(X, y)
        classes, encoded = classification_labels(y, Xt.shape[0])
        self._check_n_classes(len(classes))
        self.classes_ = classes
        self.n_classes_ = len(classes)
        self.X_context_ = np.ascontiguousarray(Xt, dtype=np.float32)
        self.y_context_ = encoded
        self.members_ = self._make_members(Xt.shape[1], self.n_classes_)
        self._after_fit()
        return self

    def _extra_state(self) -> dict[str, Any]:
        classes = self.classes_
        kind = "str" if classes.dtype.kind in "OUS" else classes.dtype.str
        if kind == "str" and not all(isinstance(c, str) for c in classes.tolist()):
            raise TabzooInputError("only str or numeric class labels can be saved; convert y before fit.")
        return {"classes": classes.tolist(), "classes_dtype": kind, "y_context": self.y_context_}

    def _set_extra_state(self, state: dict[str, Any]) -> None:
        kind = state["classes_dtype"]
        self.classes_ = np.asarray(state["classes"], dtype=object if kind == "str" else np.dtype(kind))
        self.n_classes_ = len(self.classes_)
        self.y_context_ = np.asarray(state["y_context"], dtype=np.int64)

    @host_threads
    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``[n_samples, n_classes]`` in the order of ``classes_``."""
        check_is_fitted(self, "classes_")
        return self._predict_transformed(self._transform_query(X))

    def _predict_transformed(self, xq: np.ndarray) -> np.ndarray:
        """Probabilities ``[n_query, n_classes]`` of preprocessed query rows (the core's ensemble path)."""
        k = self.n_classes_
        if k == 1:
            return np.ones((xq.shape[0], 1))
        out = self._proba(np.asarray(self.y_context_, dtype=np.int64), k, xq)
        return out / out.sum(axis=1, keepdims=True)

    def predict(self, X: Any) -> np.ndarray:
        """The most probable class label of each row, ``[n_samples]``."""
        check_is_fitted(self, "classes_")
        return self.classes_[np.argmax(self.predict_proba(X), axis=1)]


class InContextRegressor(JointPredictMixin, RegressorMixin, InContextEstimator):
    """scikit-learn regressor around an in-context model.

    The targets are standardised with the training mean and standard deviation before they
    become context labels; the model's output is turned into values (in standardised units) by
    :meth:`_regression_output` (default: the first output, ``logits[..., 0]``; a model that
    predicts bins overrides it), averaged over the ensemble members, and de-standardised.
    """

    def __sklearn_tags__(self) -> Any:
        return _tags(super().__sklearn_tags__())

    def _regression_output(self, logits: torch.Tensor) -> torch.Tensor:
        """Values ``[members, chunk]`` from model outputs ``[members, chunk, n_out]``."""
        return logits[..., 0]

    @host_threads
    def fit(self, X: Any, y: Any) -> InContextRegressor:
        """Store the preprocessed training rows and standardised targets as the context."""
        Xt = self._fit_context(X, y)
        y = regression_targets(y, Xt.shape[0])
        # statistics in a pre-scaled space, so targets near the float64 range (1e308) can't overflow:
        # |mean| <= max|y| and std <= half the range <= max|y|, so both stay finite
        top = float(np.max(np.abs(y))) if y.size else 0.0
        top = top if top > 0 else 1.0
        ys = y / top
        mean_s, std_s = float(ys.mean()), float(ys.std())
        self.y_mean_ = mean_s * top
        std = std_s * top
        if std > 1e-12:
            self.y_scale_ = std
            yc = (ys - mean_s) / std_s
        else:
            self.y_scale_ = 1.0
            yc = y - self.y_mean_
        self.X_context_ = np.ascontiguousarray(Xt, dtype=np.float32)
        self.y_context_ = yc.astype(np.float32)
        self.members_ = self._make_members(Xt.shape[1], 1)
        self._after_fit()
        return self

    def _extra_state(self) -> dict[str, Any]:
        return {"y_mean": self.y_mean_, "y_scale": self.y_scale_, "y_context": self.y_context_}

    def _set_extra_state(self, state: dict[str, Any]) -> None:
        self.y_mean_ = float(state["y_mean"])
        self.y_scale_ = float(state["y_scale"])
        self.y_context_ = np.asarray(state["y_context"], dtype=np.float32)

    @host_threads
    def predict(self, X: Any) -> np.ndarray:
        """Predicted values ``[n_samples]`` (float64)."""
        check_is_fitted(self, "y_context_")
        return self._predict_transformed(self._transform_query(X))

    def _predict_transformed(self, xq: np.ndarray) -> np.ndarray:
        """Values ``[n_query]`` of preprocessed query rows: the members' mean output, de-standardised."""
        out = self._member_values(xq, self._regression_output)
        with np.errstate(over="ignore"):
            pred = out * self.y_scale_ + self.y_mean_
        # documented: a prediction beyond the float64 range is clipped to it, never inf
        big = np.finfo(np.float64).max
        return np.clip(pred, -big, big)
