"""Issue 24 item 5: every public method of every shipped estimator, called before ``fit``, raises
one error that is both a ``TabzooInputError`` and scikit-learn's ``NotFittedError`` (it raised a
bare ``NotFittedError`` in all seven before), with the fix in its message."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sklearn", reason="the estimators need the sklearn extra")
from sklearn.exceptions import NotFittedError  # noqa: E402
from tabzoo.errors import TabzooInputError  # noqa: E402

ESTIMATORS = [
    ("tabzoo_tabflex", "TabFlexClassifier"), ("tabzoo_tabflex", "TabFlexRegressor"),
    ("tabzoo_orion_msp", "OrionMSPClassifier"), ("tabzoo_npt", "NPTClassifier"), ("tabzoo_npt", "NPTRegressor"),
    ("tabzoo_npt", "NPTImputer"), ("tabzoo_multitab", "MultiTabEstimator"),
]
_NOT_METHODS = {"fit", "fit_predict", "fit_transform", "get_params", "set_params", "load", "get_metadata_routing",
                "set_output", "use_checkpoint", "memory_estimate"}
# use_checkpoint configures the estimator before fit; NPT's memory_estimate works from shapes before fit


def _methods(cls: type) -> list[str]:
    return sorted(n for n, _ in inspect.getmembers(cls, callable)
                  if not n.startswith("_") and n not in _NOT_METHODS and not n.startswith("set_")
                  and not isinstance(inspect.getattr_static(cls, n), classmethod | staticmethod))


@pytest.mark.parametrize(("module", "name"), ESTIMATORS, ids=[n for _, n in ESTIMATORS])
def test_every_method_of_an_unfitted_estimator_raises_not_fitted(module: str, name: str, tmp_path: Path) -> None:
    cls = getattr(pytest.importorskip(module, reason=f"{module} is not installed"), name)
    est = cls()
    values = {"X": np.zeros((3, 2)), "y": np.array([0, 1, 0]), "path": tmp_path / "model"}
    methods = _methods(cls)
    assert {"predict", "transform"} & set(methods), methods
    for method in methods:
        f = getattr(est, method)
        args = [values.get(p.name, tmp_path / "x") for p in inspect.signature(f).parameters.values()
                if p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
        with pytest.raises(NotFittedError, match=r"not fitted yet\. Call fit") as info:
            f(*args)
        assert isinstance(info.value, TabzooInputError), (method, type(info.value).__mro__)
    assert not any(tmp_path.iterdir()), "an unfitted estimator wrote a file"
