"""``run_demo``: TabFlex next to its baselines on real bundled data (the ``tabzoo demo`` contract).

The shared in-context classification demo of the core (:mod:`tabzoo.estimators.demo`): scikit-learn's
breast_cancer and wine and Palmer penguins' species (``quick=False`` adds iris and digits), each split
once, stratified and seeded; TabFlex (the shipped checkpoint, no network, no training),
LogisticRegression and HistGradientBoosting fitted and scored on the SAME split. Needs scikit-learn
(``pip install 'tabzoo-tabflex[sklearn]'``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["run_demo"]


def run_demo(*, seed: int = 0, quick: bool = True) -> list[dict[str, Any]]:
    """Accuracy of TabFlex, LogisticRegression and HistGradientBoosting on the same splits.

    :param seed: split and model seed.
    :param quick: three data sets and a 2-member ensemble (under a minute on 2 cores); else five
        data sets and 4 members.
    :return: one dict per (dataset, model): ``dataset``, ``task``, ``model``, ``metric``, ``value``,
        ``fit_predict_s``, ``baseline``.
    """
    from tabzoo.estimators.demo import classification_demo

    from tabzoo_tabflex.estimators import TabFlexClassifier

    return classification_demo(
        "tabflex", lambda: TabFlexClassifier(n_estimators=2 if quick else 4, device="cpu", random_state=seed),
        seed=seed, quick=quick)
