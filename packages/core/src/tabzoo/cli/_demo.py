"""The machinery of ``tabzoo demo``: finding every installed plugin's demo, and the default demo.

**The demo contract.** A plugin's demo is a function ``run_demo(*, seed=0, quick=True) ->
list[dict]``; each dict has ``dataset``, ``task``, ``model``, ``metric``, ``value`` and
``fit_predict_s``, and may say ``"baseline": True/False``. It runs the plugin's model AND its
baselines (LogisticRegression/Ridge and a gradient-boosting model) on the same splits of bundled
data, with no network.

**Discovery**, per loaded plugin (entry point of the ``tabzoo`` group), first match wins:

1. ``ArchitectureSpec.demo = "pkg.module:function"`` of an architecture the plugin registers;
2. by convention, ``<package of the plugin module>.demo:run_demo`` when that module exists
   (``tabzoo_tabflex.plugin`` -> ``tabzoo_tabflex.demo``);
3. for an in-context architecture with a classifier estimator and no demo, :func:`default_demo`
   runs the estimator on scikit-learn's breast_cancer and wine and Palmer penguins.
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DemoEntry", "discover", "default_demo", "is_baseline", "lower_is_better", "REQUIRED_KEYS"]

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


def _convention(module: str) -> str | None:
    pkg = module.split(":")[0]
    pkg = pkg.rpartition(".")[0] or pkg
    name = f"{pkg}.demo"
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    return f"{name}:run_demo" if found else None


def _lazy(target: str) -> Callable[..., list[dict[str, Any]]]:
    def run(**kwargs: Any) -> list[dict[str, Any]]:
        from tabzoo.plugins import resolve_object

        return resolve_object(target)(**kwargs)

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
        explicit = next((s.demo for s in specs if s.demo), None)
        target = explicit or _convention(rec.module)
        if target is not None:
            entries.append(DemoEntry(rec.name, rec.distribution, rec.version, archs, target, _lazy(target)))
            continue
        for spec in specs:
            if spec.kind == "in-context" and spec.estimator is not None:
                entries.append(DemoEntry(
                    rec.name, rec.distribution, rec.version, archs, f"default:{spec.name}",
                    lambda spec=spec, **kw: default_demo(spec, **kw),
                ))
    return entries, models


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
