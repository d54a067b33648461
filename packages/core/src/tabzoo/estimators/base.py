"""scikit-learn estimators for in-context models: fit stores the context, predict runs the model.

A plugin subclasses :class:`InContextClassifier` or :class:`InContextRegressor` and provides
``_load_model(self) -> nn.Module`` (e.g. from a checkpoint shipped as package data), and
optionally the class attributes ``max_features`` / ``max_classes`` (otherwise the model's own
attributes of those names are used)::

    class MyClassifier(InContextClassifier):
        def _load_model(self):
            return load_model(pretrained_path("my_pkg", "default"))

There is no gradient training in ``fit``: the preprocessed training rows become the context of
every prediction. Query rows are processed ``chunk_size`` at a time, all ensemble members of a
chunk in one forward pass ``[n_estimators, n_context + chunk, features]``, so memory is bounded
by ``chunk_size`` whatever the size of the test set.

Ensembling: member 0 sees the features in their original order; the others see random feature
permutations (seeded by ``random_state``) and, for classifiers, rotated class indices. The
classifier averages the members' probabilities (``average="probabilities"``, default) or their
logits (``average="logits"``, a geometric mean, then re-normalised); the regressor averages the
members' predicted values.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tabzoo.errors import TabzooInputError
from tabzoo.estimators.encoding import OneHotExpander, check_encoding, plan_onehot
from tabzoo.estimators.ensemble import EnsemblePath, NonFiniteOutputError
from tabzoo.estimators.members import (
    EnsembleMember,
    MemberTransform,
    category_tables,
    check_transforms,
    fit_member_transforms,
    make_members,
)
from tabzoo.estimators.options import (
    as_table_input,
    resolve_categorical_features,
    resolve_inference_dtype,
)
from tabzoo.estimators.preprocessing import CATEGORICAL, TabularPreprocessor
from tabzoo.estimators.sk import (
    BaseEstimator,
    check_input_array,
    check_is_fitted,
    check_n_features_and_names,
    require_y,
)

logger = logging.getLogger(__name__)

__all__ = ["InContextEstimator", "NonFiniteOutputError", "resolve_device"]


def resolve_device(device: str | torch.device) -> torch.device:
    """``"auto"`` is ``cuda`` when a GPU is available, else ``cpu``; anything else is passed on."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise TabzooInputError(f"device {device!r} is not a torch device; use 'auto', 'cpu' or 'cuda'.") from exc
    if dev.type == "cuda" and (not torch.cuda.is_available() or (dev.index or 0) >= torch.cuda.device_count()):
        have = torch.cuda.device_count() if torch.cuda.is_available() else 0
        raise TabzooInputError(
            f"device {device!r} was asked for but this machine has {have} CUDA device(s); use "
            "device='cpu', or 'auto' (cuda when available, else cpu)."
        )
    if dev.type == "mps" and not torch.backends.mps.is_available():
        raise TabzooInputError(f"device {device!r} is not available here; use device='cpu' or 'auto'.")
    return dev


class InContextEstimator(EnsemblePath, BaseEstimator):
    """Shared machinery of :class:`InContextClassifier` and :class:`InContextRegressor`.

    :param n_estimators: ensemble members (feature shuffles, and class shifts for classifiers).
    :param chunk_size: query rows per forward pass; bounds the memory of ``predict``.
    :param device: ``"auto"`` (cuda if available, else cpu), ``"cpu"``, ``"cuda:0"``, ...
    :param random_state: seed of the ensemble members.
    :param verbose: show a tqdm progress bar over chunks (needs ``tqdm``).

    Memory: before a context is encoded, the peak of one pass (members x context rows plus a query
    chunk x features through the model) is estimated, and above the limit (``TABZOO_MEMORY_LIMIT``,
    default the available memory) :class:`~tabzoo.errors.MemoryLimitError` says so with the fix.
    """

    #: the most features / classes the model takes; ``None`` asks the model's attributes.
    max_features: int | None = None
    max_classes: int | None = None

    def __init__(
        self,
        n_estimators: int = 4,
        chunk_size: int = 1024,
        device: str = "auto",
        random_state: int | None = 0,
        verbose: bool = False,
    ) -> None:
        self.n_estimators = n_estimators
        self.chunk_size = chunk_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # -- hooks for subclasses ----------------------------------------------------------------
    def _load_model(self) -> torch.nn.Module:
        """Return the in-context model (``model(x, y_context) -> logits``); subclasses override."""
        raise NotImplementedError(
            f"{type(self).__name__} must implement _load_model(self) -> nn.Module, e.g. "
            "return tabzoo.checkpoint.load_model(pretrained_path('my_pkg', 'default'))."
        )

    def use_checkpoint(self, path: str | Path, *, architecture: str | None = None) -> InContextEstimator:
        """Fit with the model of the checkpoint at stem ``path`` (e.g. ``tabzoo pretrain``'s output) instead
        of the plugin's own weights; ``tabzoo predict --checkpoint`` calls it.

        An estimator with a ``checkpoint`` parameter (TabFlex, ORION-MSP) gets it set; any other loads the
        pair with :func:`tabzoo.checkpoint.load_model` at ``fit``. That choice is not a constructor
        parameter: ``sklearn.base.clone`` returns to the plugin's weights.

        :param architecture: the architecture the checkpoint must hold (refused at ``fit`` otherwise).
        """
        if "checkpoint" in self.get_params(deep=False):
            return self.set_params(checkpoint=str(path))
        self._checkpoint_path = (Path(path), architecture)
        return self

    def _fit_model(self) -> torch.nn.Module:
        """The model ``fit`` uses: the plugin's (:meth:`_load_model`) or :meth:`use_checkpoint`'s."""
        given: tuple[Path, str | None] | None = getattr(self, "_checkpoint_path", None)
        if given is None:
            return self._load_model()
        from tabzoo.checkpoint import load_model

        return load_model(given[0], architecture=given[1])

    def _model_limit(self, name: str) -> int | None:
        own = getattr(type(self), name, None)
        if own is not None:
            return int(own)
        value = getattr(self.model_, name, None)
        return int(value) if isinstance(value, int | np.integer) else None

    # -- shared fit / predict steps ----------------------------------------------------------
    def _fit_context(self, X: Any, y: Any) -> np.ndarray:
        """Validate ``X``, fit the preprocessing and load the model. Returns the encoded X."""
        require_y(self, y)
        if isinstance(self.n_estimators, bool) or not isinstance(self.n_estimators, int | np.integer) or self.n_estimators < 1:
            raise TabzooInputError(f"n_estimators must be a positive int, got {self.n_estimators!r}.")
        if not isinstance(self.chunk_size, int | np.integer) or self.chunk_size < 1:
            raise TabzooInputError(f"chunk_size must be a positive int, got {self.chunk_size!r}.")
        X, table_cats = as_table_input(X)
        X = check_input_array(X)
        check_n_features_and_names(self, X, reset=True)
        cats = resolve_categorical_features(getattr(self, "categorical_features", "auto"), X,
                                            int(self.n_features_in_), table_cats)
        encoding = check_encoding(getattr(self, "categorical_encoding", "ordinal"))
        self.preprocessor_ = TabularPreprocessor().fit(X, categorical=cats)
        self.member_views_: list[MemberTransform] | None = None
        self.device_ = str(resolve_device(self.device))
        self.model_ = self._fit_model().to(self.device_).eval()
        self.inference_dtype_: torch.dtype | None = resolve_inference_dtype(
            getattr(self, "inference_precision", "fp32"), self.device_)
        self.context_cache_: dict[str, Any] = {}
        self.encoder_ = self._fit_encoder(encoding)
        return self._encode_rows(self.preprocessor_.transform(X))

    def _fit_encoder(self, encoding: str) -> OneHotExpander | None:
        """The one-hot expansion of categorical columns (``categorical_encoding="onehot"``), or None.

        See :mod:`tabzoo.estimators.encoding`: columns with 3..``onehot_max_levels`` levels are expanded,
        fewest levels first, while the width stays within the model's ``max_features``.
        """
        if encoding == "ordinal":
            return None
        pre = self.preprocessor_
        cats = self.categorical_indices_
        levels = {j: len(pre.columns[j].categories) for j in cats}
        chosen = plan_onehot(levels, len(pre.columns), self._model_limit("max_features"),
                             int(getattr(self, "onehot_max_levels", 64)))
        if not chosen:
            return None
        return OneHotExpander(chosen, category_tables(pre, chosen), len(pre.columns))

    def _encode_rows(self, x: np.ndarray) -> np.ndarray:
        enc = getattr(self, "encoder_", None)
        return x if enc is None else enc.transform(x)

    def _transform_query(self, X: Any) -> np.ndarray:
        check_is_fitted(self, "preprocessor_")
        X, _ = as_table_input(X)
        X = check_input_array(X, fitting=False)
        check_n_features_and_names(self, X, reset=False)
        return self._encode_rows(self.preprocessor_.transform(X))

    def _make_members(self, n_features: int, n_classes: int) -> list[EnsembleMember]:
        max_features = self._model_limit("max_features")
        if max_features is not None and n_features > max_features:
            logger.info(
                "%s: %d features but the model takes %d; each ensemble member uses a random subset.",
                type(self).__name__, n_features, max_features,
            )
        seed = _seed_from(self.random_state)
        transforms = check_transforms(getattr(self, "feature_transforms", ("none",)))
        return make_members(int(self.n_estimators), n_features, n_classes, seed, max_features,
                            transforms=transforms, subsample=str(getattr(self, "feature_subsample", "random")))

    @property
    def categorical_indices_(self) -> tuple[int, ...]:
        """Indices of the columns encoded as categories (after fit)."""
        check_is_fitted(self, "preprocessor_")
        return tuple(j for j, k in enumerate(self.preprocessor_.kinds) if k == CATEGORICAL)

    def _views(self) -> list[MemberTransform]:
        """Each member's fitted view of the rows (built once from the context, then reused).

        Subclasses opt in with the attributes ``shuffle_categories`` (permute category codes per
        member) and ``standardize_members`` (z-score each member's view on the context).
        """
        views = getattr(self, "member_views_", None)
        if views is None:
            cats = self._view_categoricals()
            views = fit_member_transforms(
                self.members_, self.X_context_, categorical=cats, sources=self._category_sources(cats),
                preprocessor=self.preprocessor_, shuffle_categories=bool(getattr(self, "shuffle_categories", False)),
                standardize=bool(getattr(self, "standardize_members", False)),
            )
            self.member_views_ = views
        return views

    def _view_categoricals(self) -> tuple[int, ...]:
        """Categorical (ordinal-coded) columns of ``X_context_`` (a subclass that mixes columns returns ``()``)."""
        enc = getattr(self, "encoder_", None)
        if enc is None:
            return self.categorical_indices_
        cats = set(self.categorical_indices_)
        return tuple(i for i, (j, ind) in enumerate(zip(enc.source_, enc.indicator_, strict=True))
                     if int(j) in cats and not ind)

    def _category_sources(self, columns: tuple[int, ...]) -> tuple[int, ...]:
        """The preprocessor column of each ``X_context_`` column in ``columns``."""
        enc = getattr(self, "encoder_", None)
        return tuple(columns) if enc is None else tuple(int(enc.source_[i]) for i in columns)

    def _chunks(self, n_query: int) -> Iterator[slice]:
        size = int(self.chunk_size)
        starts = range(0, n_query, size)
        if self.verbose:
            try:
                from tqdm.auto import tqdm
            except ImportError:  # pragma: no cover - tqdm is an optional extra
                logger.warning("verbose=True needs tqdm (pip install 'tabzoo-core[progress]').")
            else:
                starts = tqdm(starts, desc=f"{type(self).__name__}.predict", unit="chunk")
        for start in starts:
            yield slice(start, min(start + size, n_query))

    def _after_fit(self) -> None:
        """Last step of ``fit``: views fitted (so predict leaves ``__dict__`` unchanged), local contexts
        clustered, and with ``fit_mode="fit_with_cache"`` every context state computed."""
        self._views()
        self._fit_local()
        self._warm_cache()

    def _warm_cache(self) -> None:
        """``fit_mode="fit_with_cache"``: compute every context state now (one throwaway query row)."""
        if getattr(self, "fit_mode", "fit_preprocessors") == "fit_with_cache":
            self._predict_transformed(self.X_context_[:1])

    def _predict_transformed(self, xq: np.ndarray) -> np.ndarray:
        """Predictions of preprocessed query rows ``xq [n_query, F]`` (the classifier and regressor define it)."""
        raise NotImplementedError

    # -- pickle-free save / load -------------------------------------------------------------
    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _set_extra_state(self, state: dict[str, Any]) -> None:
        pass

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Save the fitted estimator (params, preprocessing, context, model weights) pickle-free.

        Writes ``<path>.safetensors`` + ``<path>.json`` (fitted state, via
        :func:`tabzoo.checkpoint.save_state`) and ``<path>.model.safetensors`` + ``.json`` (the
        model, via :func:`tabzoo.checkpoint.save_checkpoint`). Returns the stem.

        :param overwrite: replace an earlier save at ``path``. By default any existing file of the
            four is refused (:func:`tabzoo.checkpoint.refuse_existing`), so a saved model is never
            replaced silently.
        :raises TabzooInputError: a file of the save exists and ``overwrite`` is false.
        """
        from tabzoo.checkpoint import write_estimator

        check_is_fitted(self, "preprocessor_")
        # a dataclass parameter (e.g. fine_tune=FineTune(...)) is stored as its dict, which the class accepts back
        params = {k: dataclasses.asdict(v) if dataclasses.is_dataclass(v) and not isinstance(v, type) else v
                  for k, v in self.get_params(deep=False).items()}
        encoder: OneHotExpander | None = getattr(self, "encoder_", None)
        state = {
            "params": params,
            "preprocessor": self.preprocessor_.state_dict(),
            "encoder": None if encoder is None else encoder.state_dict(),
            "X_context": self.X_context_,
            "members": [{"features": list(m.features), "class_shift": m.class_shift, "transform": m.transform,
                         "seed": int(m.seed)} for m in self.members_],
            "n_features_in": int(self.n_features_in_),
            "feature_names_in": [str(n) for n in getattr(self, "feature_names_in_", [])] or None,
            "extra": self._extra_state(),
        }
        return write_estimator(path, self, state, self.model_,
                               architecture=str(getattr(self.model_, "architecture", type(self.model_).__name__)),
                               config=dict(getattr(self.model_, "config", {}) or {}), overwrite=overwrite)

    @classmethod
    def load(cls, path: str | Path, device: str | None = None) -> InContextEstimator:
        """Load an estimator saved with :meth:`save` (``device`` overrides the saved one)."""
        from tabzoo.checkpoint import load_checkpoint, load_weights, model_stem, saved_estimator

        stem, state, est = saved_estimator(cls, path, device)
        est.preprocessor_ = TabularPreprocessor.from_state_dict(state["preprocessor"])
        enc = state.get("encoder")
        est.encoder_ = OneHotExpander.from_state_dict(enc) if enc else None
        est.X_context_ = np.ascontiguousarray(state["X_context"], dtype=np.float32)
        est.members_ = [EnsembleMember(tuple(m["features"]), int(m["class_shift"]), str(m.get("transform", "none")),
                                       int(m.get("seed", 0))) for m in state["members"]]
        est.member_views_ = None
        est.n_features_in_ = int(state["n_features_in"])
        if state.get("feature_names_in"):
            est.feature_names_in_ = np.asarray(state["feature_names_in"], dtype=object)
        est._set_extra_state(state["extra"])
        est.device_ = str(resolve_device(est.device))
        est.inference_dtype_ = None  # resolved on the device it is loaded to
        est.context_cache_ = {}
        est._fit_local()  # deterministic from the stored context and members
        model = est._load_model()
        own = str(getattr(model, "architecture", type(model).__name__))
        ckpt = load_checkpoint(model_stem(stem), architecture=own)
        load_weights(model, ckpt.tensors, what=f"{stem}.model", target=f"the model of {cls.__name__}",
                     fix="Load it with the class that saved it.")
        est.model_ = model.to(est.device_).eval()
        return est


def _seed_from(random_state: Any) -> int:
    """The ensemble seed, drawn once at fit (scikit-learn's convention).

    ``None``: fresh randomness from numpy's global RNG; an int: that seed; a
    ``np.random.RandomState`` or ``np.random.Generator``: one draw from it.
    """
    if random_state is None:
        return int(np.random.randint(2**31 - 1))
    if isinstance(random_state, (int, np.integer)) and not isinstance(random_state, bool):
        return int(random_state)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31 - 1))
    raise TabzooInputError(
        f"random_state={random_state!r} is not supported; pass None, an int, a numpy RandomState or a Generator."
    )
