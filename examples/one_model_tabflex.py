"""The example `nox -s one_model` runs in a venv holding only the tabzoo-core and tabzoo-tabflex wheels:
TabFlex fits and scores, tabzoo sees exactly one plugin, and no other plugin is importable."""

from __future__ import annotations

import importlib.util

from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split
from tabzoo.plugins import list_architectures
from tabzoo_tabflex import TabFlexClassifier

X, y = load_breast_cancer(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, y, random_state=0)
accuracy = TabFlexClassifier(n_estimators=2, device="cpu").fit(X_train, y_train).score(X_test, y_test)
others = [m for m in ("tabzoo_npt", "tabzoo_multitab", "tabzoo_ramba", "tabzoo_orion_msp", "tabzoo_priors")
          if importlib.util.find_spec(m) is not None]
assert not others, f"other plugins are installed: {others}"
assert accuracy > 0.9, accuracy
print(f"tabflex alone: accuracy {accuracy:.3f}; architectures {sorted(list_architectures())}")
