"""Labels and probabilities from one model pass (issue 29: streamed prediction scores each batch once).

:class:`JointPredictMixin` gives the in-context classifier and regressor ``predict_with_proba``;
:func:`predict_with_proba` serves any scikit-learn estimator (one pass where the estimator has
the method, else ``predict`` and ``predict_proba``, which may run the model twice).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from tabzoo.estimators.sk import check_is_fitted

__all__ = ["JointPredictMixin", "predict_with_proba"]


class JointPredictMixin:
    """``predict_with_proba(X) -> (labels [n], probabilities [n, n_classes] | None)`` in one pass.

    A classifier's labels are ``classes_[argmax(probabilities)]``, exactly what its ``predict``
    returns; a regressor (no ``classes_``) returns its values and ``None``.
    """

    def predict_with_proba(self, X: Any) -> tuple[np.ndarray, np.ndarray | None]:
        """Labels ``[n_samples]`` and probabilities ``[n_samples, n_classes]`` (``None`` for a regressor)."""
        est: Any = self
        if not hasattr(est, "predict_proba"):
            check_is_fitted(est, "y_context_")
            return est.predict(X), None
        check_is_fitted(est, "classes_")
        proba = est.predict_proba(X)
        return est.classes_[np.argmax(proba, axis=1)], proba


def predict_with_proba(est: Any, X: Any) -> tuple[Any, Any]:
    """``(predictions, probabilities or None)`` of any fitted estimator: one model pass where it has
    ``predict_with_proba``, else ``predict`` then ``predict_proba`` (when it has one)."""
    own = getattr(est, "predict_with_proba", None)
    if callable(own):
        return own(X)
    labels = est.predict(X)
    return labels, (est.predict_proba(X) if hasattr(est, "predict_proba") else None)
