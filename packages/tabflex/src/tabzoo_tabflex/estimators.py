"""scikit-learn estimators: :class:`TabFlexClassifier` and :class:`TabFlexRegressor`.

Built on :mod:`tabzoo.estimators` (preprocessing, feature-shuffle / class-shift ensembling,
pickle-free save/load). What TabFlex adds:

* **weights**: the checkpoint shipped as package data (``tabflex-small``) is loaded by default, offline;
  ``checkpoint=`` takes another shipped name or a path stem ``.../name`` of a ``.safetensors`` + ``.json`` pair.
* **model selection**: the paper's Algorithm 1 plus the class count
  (:func:`tabzoo_tabflex.selection.select_model`) over the available checkpoints; ``selection_``
  records the decision.
* **wide inputs**: more features than the model reads go through a seeded Gaussian random
  projection (:class:`tabzoo_tabflex.projection.RandomProjection`), never a column subset.
* **many classes**: beyond the head's limit, the hierarchical class split of
  :mod:`tabzoo.estimators.hierarchy` (no class is merged).
* **scale**: each member's context state is computed once per call (context rows streamed in
  chunks) and query rows stream through in chunks of ``chunk_size``: memory linear in rows.
* **regression**: target binning (paper section 6.4), prediction = expected bin centre.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tabzoo.errors import CheckpointError, TabzooInputError
from tabzoo.estimators import InContextClassifier, InContextRegressor
from tabzoo.estimators.hierarchy import hierarchical_proba
from tabzoo.estimators.sk import check_is_fitted

from tabzoo_tabflex.binning import TargetBinner
from tabzoo_tabflex.config import TabFlexConfig, get_config
from tabzoo_tabflex.model import TabFlex
from tabzoo_tabflex.projection import RandomProjection
from tabzoo_tabflex.selection import Selection, select_model

logger = logging.getLogger(__name__)

__all__ = ["TabFlexClassifier", "TabFlexRegressor", "DEFAULT_CHECKPOINT", "load_tabflex"]

DEFAULT_CHECKPOINT = "tabflex-small"
_CKPT_DIR = Path(__file__).parent / "checkpoints"


def _stem(checkpoint: str) -> Path:
    if (_CKPT_DIR / f"{checkpoint}.json").exists():
        return _CKPT_DIR / checkpoint
    p = Path(checkpoint)
    p = p.with_suffix("") if p.suffix in (".json", ".safetensors") else p
    if p.with_suffix(".json").exists() or Path(str(p) + ".json").exists():
        return p
    shipped = sorted(q.stem for q in _CKPT_DIR.glob("*.json"))
    raise CheckpointError(
        f"TabFlex checkpoint {checkpoint!r} not found: it is neither a shipped checkpoint {shipped} nor a "
        "path stem of a .safetensors + .json pair. Pass one of those names or the stem of a file written "
        "by `tabzoo pretrain --model tabflex`."
    )


@lru_cache(maxsize=8)
def _read(stem: str, mtime: float) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    from tabzoo.checkpoint import load_checkpoint

    ckpt = load_checkpoint(stem)
    return dict(ckpt.tensors), dict(ckpt.config)


def load_tabflex(checkpoint: str = DEFAULT_CHECKPOINT) -> TabFlex:
    """A :class:`TabFlex` with the weights of a shipped checkpoint name or a path stem (no network)."""
    stem = _stem(checkpoint)
    js = Path(str(stem) + ".json")
    tensors, config = _read(str(stem), js.stat().st_mtime)
    model = TabFlex({k: v for k, v in config.items() if k != "preset"} | {"preset": config.get("preset", "small")})
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    if missing or unexpected:
        raise CheckpointError(
            f"TabFlex checkpoint {stem} does not fit its stored config: missing {list(missing)[:5]}, "
            f"unexpected {list(unexpected)[:5]}. Re-export it with tabzoo.checkpoint.save_checkpoint."
        )
    return model.eval()


def _checkpoint_config(checkpoint: str) -> TabFlexConfig:
    stem = _stem(checkpoint)
    _, config = _read(str(stem), Path(str(stem) + ".json").stat().st_mtime)
    return get_config(config)


def _shape(X: Any) -> tuple[int, int]:
    """``(rows, columns)`` of an array-like / DataFrame without converting a DataFrame."""
    shape = getattr(X, "shape", None)
    if shape is None or len(shape) != 2:
        shape = np.shape(np.asarray(X, dtype=object))
    rows = int(shape[0]) if len(shape) >= 1 else 1
    cols = int(shape[1]) if len(shape) == 2 else 1
    return max(rows, 1), max(cols, 1)


class _TabFlexMixin:
    """Loading, selection, projection and streamed ensemble inference shared by both estimators."""

    checkpoint: str
    projection_seed: int
    softmax_temperature: float
    n_estimators: int

    # -- model -------------------------------------------------------------------------------
    def _select(self, X: Any, n_classes: int) -> Selection:
        n_rows, n_cols = _shape(X)
        if self.checkpoint == "auto":
            names = sorted(q.stem for q in _CKPT_DIR.glob("*.json"))
            if not names:
                raise CheckpointError("no TabFlex checkpoint is shipped with this install; pass checkpoint=<stem>.")
        else:
            names = [self.checkpoint]
        available = {n: _checkpoint_config(n) for n in names}
        sel = select_model(n_rows, n_cols, n_classes, available)
        logger.info("TabFlex model selection: %s", sel.reason)
        return sel

    def _load_model(self) -> torch.nn.Module:
        name = getattr(self, "selection_", None)
        return load_tabflex(name.name if name is not None else
                            (DEFAULT_CHECKPOINT if self.checkpoint == "auto" else self.checkpoint))

    def _fit_context(self, X: Any, y: Any) -> np.ndarray:  # type: ignore[override]
        n_classes = 1
        if y is not None and isinstance(self, InContextClassifier):
            try:
                n_classes = int(np.unique(np.asarray(y, dtype=object).astype(str)).size)
            except (TypeError, ValueError):
                n_classes = 1
        elif y is not None and isinstance(self, InContextRegressor):
            # regression runs as classification over target bins: select for that many classes
            try:
                n_classes = max(1, min(int(self.n_bins), int(np.unique(np.asarray(y, dtype=float)).size)))  # type: ignore[attr-defined]
            except (TypeError, ValueError):
                n_classes = 1
        if X is not None and y is not None:
            self.selection_ = self._select(X, n_classes)
        Xt = super()._fit_context(X, y)  # type: ignore[misc]
        limit = int(self.model_.max_features)
        self.projection_ = None
        if Xt.shape[1] > limit:
            self.projection_ = RandomProjection(limit, seed=int(self.projection_seed)).fit(Xt.shape[1])
            Xt = self.projection_.transform(Xt)
        # z-score on the context, as every pretraining episode is (the model was trained on that scale)
        self.z_mean_ = Xt.mean(axis=0).astype(np.float32)
        self.z_scale_ = np.where(Xt.std(axis=0) > 1e-6, Xt.std(axis=0), 1.0).astype(np.float32)
        return np.ascontiguousarray((Xt - self.z_mean_) / self.z_scale_, dtype=np.float32)

    def _transform_query(self, X: Any) -> np.ndarray:
        xq = super()._transform_query(X)  # type: ignore[misc]
        if getattr(self, "projection_", None) is not None:
            xq = self.projection_.transform(xq)
        return np.ascontiguousarray((xq - self.z_mean_) / self.z_scale_, dtype=np.float32)

    # -- streamed ensemble inference ---------------------------------------------------------
    def _stream(self, x_context: np.ndarray, y_members: list[np.ndarray],
                x_query: np.ndarray) -> Iterator[tuple[slice, torch.Tensor]]:
        """Per chunk of query rows: ``[members, chunk, max_classes]`` logits / temperature.

        The context state of each member is computed once (members one at a time, so peak memory
        is one member's context tokens), then all members read each query chunk in one batch.
        """
        model: TabFlex = self.model_  # type: ignore[attr-defined]
        dev = torch.device(self.device_)  # type: ignore[attr-defined]
        chunk = int(self.chunk_size)  # type: ignore[attr-defined]
        feats = [torch.tensor(m.features, dtype=torch.long) for m in self.members_]  # type: ignore[attr-defined]
        ctx = torch.from_numpy(np.ascontiguousarray(x_context, dtype=np.float32))
        kv, ks = [], []
        with torch.inference_mode():
            for f, ym in zip(feats, y_members, strict=True):
                xc = ctx[:, f].unsqueeze(0).to(dev)
                yc = torch.from_numpy(np.asarray(ym, dtype=np.float32)).unsqueeze(0).to(dev)
                st = model.encode_context(xc, yc, chunk_size=chunk)
                kv.append(st.kv)
                ks.append(st.k_sum)
            from tabzoo_tabflex.model import ContextState

            state = ContextState([torch.cat(t, 0) for t in zip(*kv, strict=True)],
                                 [torch.cat(t, 0) for t in zip(*ks, strict=True)], ctx.shape[0])
            xq = torch.from_numpy(np.ascontiguousarray(x_query, dtype=np.float32))
            temp = float(self.softmax_temperature)
            for sl in self._chunks(xq.shape[0]):  # type: ignore[attr-defined]
                q = torch.stack([xq[sl][:, f] for f in feats]).to(dev)
                logits = model.predict_query(q, state, chunk_size=chunk)
                yield sl, (logits.float() / temp).cpu()

    def _forward(self, x_query: np.ndarray, y_context: list[np.ndarray]) -> Iterator[tuple[slice, torch.Tensor]]:
        return self._stream(self.X_context_, y_context, x_query)  # type: ignore[attr-defined]

    def _member_proba(self, x_context: np.ndarray, y: np.ndarray, k: int, x_query: np.ndarray) -> np.ndarray:
        """Ensemble probabilities ``[n_query, k]`` for ``k <= max_classes`` classes ``y in 0..k-1``."""
        shifts = np.array([m.class_shift % k for m in self.members_])  # type: ignore[attr-defined]
        y_members = [(y + s) % k for s in shifts]
        gather = torch.from_numpy((np.arange(k)[None, :] + shifts[:, None]) % k)
        out = np.zeros((x_query.shape[0], k))
        for sl, logits in self._stream(x_context, y_members, x_query):
            logp = torch.log_softmax(logits[..., :k].double(), dim=-1)
            logp = torch.gather(logp, 2, gather[:, None, :].expand(-1, logp.shape[1], -1))
            out[sl] = torch.softmax(logp.mean(0), dim=-1).numpy()  # logits averaged (as the authors)
        return out

    def _proba(self, y: np.ndarray, k: int, x_query: np.ndarray) -> np.ndarray:
        limit = int(self.model_.max_classes)  # type: ignore[attr-defined]
        xc = self.X_context_  # type: ignore[attr-defined]
        if k <= limit:
            return self._member_proba(xc, y, k, x_query)

        def predict(rows: np.ndarray, labels: np.ndarray, kk: int) -> np.ndarray:
            return self._member_proba(xc[rows], labels, kk, x_query)

        return hierarchical_proba(predict, y, k, limit, x_query.shape[0])

    # -- saved state ---------------------------------------------------------------------------
    def _tabflex_state(self) -> dict[str, Any]:
        proj = self.projection_
        return {
            "selection": self.selection_.name,
            "projection": [] if proj is None else [proj.n_features_in_, proj.n_components, proj.seed],
            "z_mean": self.z_mean_, "z_scale": self.z_scale_,
        }

    def _set_tabflex_state(self, state: dict[str, Any]) -> None:
        self.selection_ = Selection(str(state["selection"]), "", None, False, "restored by load()")
        p = list(state.get("projection") or [])
        self.projection_ = RandomProjection(int(p[1]), seed=int(p[2])).fit(int(p[0])) if p else None
        self.z_mean_ = np.asarray(state["z_mean"], dtype=np.float32)
        self.z_scale_ = np.asarray(state["z_scale"], dtype=np.float32)


class TabFlexClassifier(_TabFlexMixin, InContextClassifier):
    """TabFlex in-context classifier (scikit-learn API); loads the shipped checkpoint, no network.

    :param checkpoint: ``"auto"`` (Algorithm 1 over the shipped checkpoints), a shipped name
        (``"tabflex-small"``) or a path stem of a ``.safetensors`` + ``.json`` checkpoint.
    :param n_estimators: ensemble members (feature permutations x class rotations).
    :param softmax_temperature: logits are divided by it before the softmax (0.8 as the authors).
    :param chunk_size: rows per streamed chunk (context and query); bounds the memory of a pass.
    :param projection_seed: seed of the random projection used when there are too many features.
    :param device: ``"auto"``, ``"cpu"``, ``"cuda"``...
    :param random_state: seed of the ensemble members.
    :param verbose: progress bar over query chunks.

    Fitted: ``classes_``, ``selection_`` (which model and why), ``projection_`` (or None).
    The members' logits are averaged (``average = "logits"``, as the authors).
    """

    average = "logits"

    def __init__(self, checkpoint: str = "auto", n_estimators: int = 4, softmax_temperature: float = 0.8,
                 chunk_size: int = 8192, projection_seed: int = 0, device: str = "auto",
                 random_state: int | None = 0, verbose: bool = False) -> None:
        # no super().__init__: scikit-learn wants __init__ to set exactly the parameters
        self.checkpoint = checkpoint
        self.n_estimators = n_estimators
        self.softmax_temperature = softmax_temperature
        self.chunk_size = chunk_size
        self.projection_seed = projection_seed
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    def _check_n_classes(self, n_classes: int) -> None:
        """Any number of classes: beyond the head, the hierarchical split takes over."""

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class probabilities ``[n_samples, n_classes]`` in the order of ``classes_``."""
        check_is_fitted(self, "classes_")
        xq = self._transform_query(X)
        k = self.n_classes_
        if k == 1:
            return np.ones((xq.shape[0], 1))
        out = self._proba(np.asarray(self.y_context_, dtype=np.int64), k, xq)
        return out / out.sum(axis=1, keepdims=True)

    def _extra_state(self) -> dict[str, Any]:
        return super()._extra_state() | {"tabflex": self._tabflex_state()}

    def _set_extra_state(self, state: dict[str, Any]) -> None:
        super()._set_extra_state(state)
        self._set_tabflex_state(state["tabflex"])


class TabFlexRegressor(_TabFlexMixin, InContextRegressor):
    """TabFlex regression by target binning (paper section 6.4).

    Standardised targets are cut into ``n_bins`` uniform bins (empty ones dropped); TabFlex
    classifies the bin and the prediction is the expected bin centre (``"mean"``) or the centre of
    the most probable bin (``"mode"``). More occupied bins than the head's classes go through the
    hierarchical class split.

    :param n_bins: bins (the paper uses 10 or 100).
    :param binning: ``"uniform"`` (paper) or ``"quantile"``.
    :param point: ``"mean"`` or ``"mode"``.

    Other parameters as :class:`TabFlexClassifier`.
    """

    def __init__(self, checkpoint: str = "auto", n_bins: int = 10, binning: str = "uniform", point: str = "mean",
                 n_estimators: int = 4, softmax_temperature: float = 0.8, chunk_size: int = 8192,
                 projection_seed: int = 0, device: str = "auto", random_state: int | None = 0,
                 verbose: bool = False) -> None:
        self.checkpoint = checkpoint
        self.n_estimators = n_estimators
        self.chunk_size = chunk_size
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.n_bins = n_bins
        self.binning = binning
        self.point = point
        self.softmax_temperature = softmax_temperature
        self.projection_seed = projection_seed

    def fit(self, X: Any, y: Any) -> TabFlexRegressor:
        """Store the context with binned, standardised targets."""
        if self.point not in ("mean", "mode"):
            raise TabzooInputError(f"point must be 'mean' or 'mode', got {self.point!r}.")
        super().fit(X, y)
        self.binner_ = TargetBinner(int(self.n_bins), self.binning).fit(self.y_context_)  # type: ignore[arg-type]
        self.y_bins_ = self.binner_.transform(self.y_context_)
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted values ``[n_samples]`` (float64)."""
        check_is_fitted(self, "binner_")
        xq = self._transform_query(X)
        k = self.binner_.n_classes_
        if k == 1:
            z = np.full(xq.shape[0], self.binner_.centers_[0])
        else:
            proba = self._proba(self.y_bins_, k, xq)
            z = self.binner_.expected_value(proba) if self.point == "mean" else \
                self.binner_.inverse_transform(proba.argmax(axis=1))
        return z * self.y_scale_ + self.y_mean_

    def _extra_state(self) -> dict[str, Any]:
        b = self.binner_
        return super()._extra_state() | {"tabflex": self._tabflex_state(), "binner": {
            "edges": b.edges_, "occupied": b.occupied_, "centers": b.centers_}}

    def _set_extra_state(self, state: dict[str, Any]) -> None:
        super()._set_extra_state(state)
        self._set_tabflex_state(state["tabflex"])
        b = TargetBinner(int(self.n_bins), self.binning)
        b.edges_ = np.asarray(state["binner"]["edges"], dtype=np.float64)
        b.occupied_ = np.asarray(state["binner"]["occupied"], dtype=np.int64)
        b.centers_ = np.asarray(state["binner"]["centers"], dtype=np.float64)
        b.n_classes_ = int(b.occupied_.size)
        b._rank = np.full(b.edges_.size - 1, -1, dtype=np.int64)
        b._rank[b.occupied_] = np.arange(b.occupied_.size)
        self.binner_ = b
        self.y_bins_ = b.transform(self.y_context_)
