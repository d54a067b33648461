"""The machinery of ``tabzoo demo``: finding every installed plugin's demo, and the default demo.

**The demo contract.** A plugin's demo is a function ``run_demo(*, seed=0, quick=True) ->
list[dict]``; each dict has ``dataset``, ``task``, ``model``, ``metric``, ``value`` and
``fit_predict_s``, and may say ``"baseline": True/False``. It runs the plugin's model AND its
baselines (LogisticRegression/Ridge and a gradient-boosting model) on the same splits of bundled
data, with no network.

**Registration**: a plugin registers its demo through the ``tabzoo_register_demos`` hook
(``register(DemoSpec(name, "pkg.demo:run_demo"))``, or ``ModelPlugin(..., demo=...)``). A plugin
that registers none but has an in-context architecture with a classifier estimator gets
:func:`default_demo`: the estimator on scikit-learn's breast_cancer and wine and Palmer penguins
(TabFlex and ORION-MSP use it). Nothing is looked up by module name.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DemoEntry", "discover", "default_demo", "is_baseline", "lower_is_better", "REQUIRED_KEYS", "run_plugin_demo"]

REQUIRED_KEYS = ("dataset", "task", "model", "metric", "value", "fit_predict_s")
_LOWER = re.compile(r"rmse|mse|mae|error|loss|brier|time|seconds", re.IGNORECASE)


@dataclass
class DemoEntry:
    """One plugin's demo: where it comes from and what it is called."""

    plugin: str
    distribution: str
    version: str
    architectures: list[str]
    target: str  # "pkg.module:function", or "default:<architecture>"
    run: Callable[..., list[dict[str, Any]]] = field(repr=False)


def _lazy(spec: Any) -> Callable[..., list[dict[str, Any]]]:
    def run(**kwargs: Any) -> list[dict[str, Any]]:
        return spec.load()(**kwargs)

    return run


def discover(registry: Any = None) -> tuple[list[DemoEntry], dict[str, list[str]]]:
    """Every installed plugin's demo, and ``{plugin: [architecture names]}`` of all loaded plugins.

    Nothing heavy is imported: demos are resolved when they run.
    """
    from tabzoo.plugins import get_registry

    if registry is None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # `tabzoo plugins` reports broken plugins
            registry = get_registry()
    entries: list[DemoEntry] = []
    models: dict[str, list[str]] = {}
    for rec in registry.records:
        if not rec.loaded:
            continue
        archs = [n for n in rec.provides.get("architectures", []) if n in registry.items["architectures"]]
        specs = [registry.items["architectures"][n].obj for n in archs]
        if not specs:
            continue
        models[rec.name] = archs
        demos = [registry.items["demos"][n].obj for n in rec.provides.get("demos", []) if n in registry.items["demos"]]
        for demo in demos:
            entries.append(DemoEntry(rec.name, rec.distribution, rec.version, archs, demo.target, _lazy(demo)))
        if demos:
            continue
        for spec in specs:
            if spec.kind == "in-context" and spec.estimator is not None:
                entries.append(DemoEntry(
                    rec.name, rec.distribution, rec.version, archs, f"default:{spec.name}",
                    lambda spec=spec, **kw: default_demo(spec, **kw),
                ))
    return entries, models


def run_plugin_demo(plugin: str, target: str | None = None, *, seed: int = 0, quick: bool = True) -> list[dict[str, Any]]:
    """Run plugin ``plugin``'s one demo as ``tabzoo demo`` finds it and return its rows, checked
    against the contract (:func:`check_rows`): the smoke test every plugin's tests share.

    :param target: the demo the plugin must register (``"pkg.module:function"`` or
        ``"default:<architecture>"``); ``None`` accepts whichever it has.
    :raises LookupError: the plugin has no demo, several, or another than ``target``.
    """
    found = [e for e in discover()[0] if e.plugin == plugin]
    if len(found) != 1 or (target is not None and found[0].target != target):
        raise LookupError(f"plugin {plugin!r} has the demos {[e.target for e in found]}, expected one"
                          + (f" ({target})" if target else "") + "; register it with tabzoo_register_demos or ModelPlugin(demo=...).")
    return check_rows(found[0].run(seed=seed, quick=quick), found[0].target)


def default_demo(spec: Any, *, seed: int = 0, quick: bool = True) -> list[dict[str, Any]]:
    """The demo of an in-context classifier that ships none: its estimator beside LogisticRegression
    and HistGradientBoosting on the same splits (:func:`tabzoo.estimators.demo.classification_demo`)."""
    from sklearn.base import ClassifierMixin

    from tabzoo.estimators.demo import classification_demo

    cls = spec.estimator_class()
    if not issubclass(cls, ClassifierMixin):
        return []
    params = cls().get_params(deep=False)
    own = {k: v for k, v in {"n_estimators": 2 if quick else 4, "random_state": seed, "device": "cpu"}.items()
           if k in params}
    return classification_demo(spec.name, lambda: cls(**own), seed=seed, quick=quick)


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def is_baseline(row: dict[str, Any], plugin: str, architectures: list[str]) -> bool:
    """A row's ``baseline`` key, else: a model whose name does not start with the plugin's or one
    of its architectures' names (ignoring case and punctuation) is a baseline."""
    if isinstance(row.get("baseline"), bool):
        return bool(row["baseline"])
    model = _norm(str(row.get("model", "")))
    return not any(model.startswith(_norm(n)) for n in [plugin, *architectures] if _norm(n))


def lower_is_better(metric: str) -> bool:
    """RMSE, MAE, errors, losses and times are better low; accuracy, AUC, R², ... high."""
    return bool(_LOWER.search(metric))


def check_rows(rows: Any, target: str) -> list[dict[str, Any]]:
    """Validate a demo's return value against the contract.

    :raises TypeError: naming the demo and what is wrong.
    """
    if not isinstance(rows, list) or not rows:
        raise TypeError(f"{target} returned {type(rows).__name__} {rows!r:.80}; the contract is a non-empty list of dicts.")
    for row in rows:
        lacking = [k for k in REQUIRED_KEYS if not isinstance(row, dict) or k not in row]
        if lacking:
            raise TypeError(f"{target} returned a row without {lacking}: {row!r:.200}")
    return [{**row, "value": None if row["value"] is None else float(row["value"]),
             "fit_predict_s": float(row["fit_predict_s"])} for row in rows]
