"""ONNX export of a fitted in-context classifier with its encoded context baked in (issue 29 item 4).

:class:`QueryGraph` is a ``torch.nn.Module`` that maps raw numeric query rows to the estimator's
probabilities, every fitted piece held as a constant:

1. the preprocessor's statistics (``NaN -> fill``, ``(x / prescale - center) / scale``, soft clip);
2. each ensemble member's view (Yeo-Johnson power transform with its fitted lambdas, the member's
   feature order or subset, its z-score on the context), zero-padded to the model's width;
3. the context state of the plugin's :class:`~tabzoo.estimators.forward.InContextForward` (for
   TabFlex the per-layer linear-attention sums: a few KB; query rows only read them);
4. temperature, class shifts, the members' average, the class-balance prior, the final normalisation.

:func:`export_onnx` traces it (the registry's ``reference`` kernels, fp32 model, float64 steps
where the torch path uses float64) with a dynamic row count and checks the file with
``onnxruntime`` against :meth:`predict_proba` on probe rows when onnxruntime is installed.

Inputs: ``x`` float32 ``[n, n_features_in_]`` in the columns of ``fit`` (NaN = missing); output
``probabilities`` float64 ``[n, n_classes]`` in the order of ``classes_`` (kept in the ONNX file's
metadata). What the graph cannot hold is refused with the fix: categorical or one-hot-encoded columns,
``"quantile"`` member transforms, local contexts, more classes than the model's head, regression.

Needs ``onnx`` (``pip install 'tabzoo-core[onnx]'``); ``onnxruntime`` for the check.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from tabzoo.errors import TabzooInputError

__all__ = ["DEFAULT_ATOL", "ExportReport", "QueryGraph", "check_exportable", "export_onnx", "run_onnx"]

#: largest absolute difference allowed between onnxruntime's and PyTorch's probabilities (the issue's target)
DEFAULT_ATOL = 1e-4
_HUGE_CHUNK = 2**31 - 1  # one chunk: the traced graph must not bake a chunk loop into its row axis


def check_exportable(est: Any) -> None:
    """Refuse, with the fix, a fitted estimator whose prediction the graph cannot hold.

    :raises TabzooInputError: naming what to change before fit.
    """
    from tabzoo.estimators.base import InContextEstimator
    from tabzoo.estimators.preprocessing import NUMERIC

    if not isinstance(est, InContextEstimator) or not hasattr(est, "classes_"):
        raise TabzooInputError(
            f"ONNX export covers fitted in-context classifiers; got {type(est).__name__}. Fit a classifier "
            "(e.g. TabFlexClassifier) first; regressors are not exported yet."
        )
    if any(k != NUMERIC for k in est.preprocessor_.kinds) or getattr(est, "encoder_", None) is not None:
        raise TabzooInputError(
            "ONNX export needs numeric columns: this estimator encodes categorical or boolean columns, which the "
            "graph cannot read. Encode them as numbers (booleans as 0/1) before fit and pass "
            "categorical_features=None."
        )
    if getattr(est, "projection_", None) is not None:
        raise TabzooInputError("ONNX export does not hold a random projection yet; use wide_features='subsample'.")
    if any(getattr(m, "transform", "none") == "quantile" for m in est.members_):
        raise TabzooInputError(
            "ONNX export holds the 'none' and 'power' member transforms, not 'quantile'; fit with "
            "feature_transforms=('none', 'power')."
        )
    if getattr(est, "local_", None) is not None:
        raise TabzooInputError("ONNX export holds one global context; fit with context_strategy='global'.")
    limit = est._model_limit("max_classes")
    if limit is not None and est.n_classes_ > limit:
        raise TabzooInputError(
            f"ONNX export holds at most the model's {limit} classes (the class tree / codes beyond it are not "
            f"in the graph); this estimator has {est.n_classes_}."
        )
    if est.n_classes_ < 2:
        raise TabzooInputError("ONNX export needs at least two classes; one class always has probability 1.")


def _yeo_johnson(x: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """Yeo-Johnson of ``x [n, f]`` (float64) with one lambda per column ``lam [f]``, as
    :func:`tabzoo.estimators.members._yeo_johnson` (lambdas come from a grid: never exactly 0 or 2 unless chosen)."""
    pos = torch.clamp(x, min=0.0)
    neg = torch.clamp(-x, min=0.0)
    lam_zero, l2_zero = lam.abs() < 1e-6, (2.0 - lam).abs() < 1e-6
    safe_lam = torch.where(lam_zero, torch.ones_like(lam), lam)
    safe_l2 = torch.where(l2_zero, torch.ones_like(lam), 2.0 - lam)
    a = torch.where(lam_zero, torch.log(pos + 1.0), (torch.pow(pos + 1.0, lam) - 1.0) / safe_lam)
    b = torch.where(l2_zero, -torch.log(neg + 1.0), -(torch.pow(neg + 1.0, 2.0 - lam) - 1.0) / safe_l2)
    return torch.where(x >= 0, a, b)


class _MemberGraph(nn.Module):
    """One member's fitted view (see :class:`tabzoo.estimators.members.MemberTransform`) as tensor constants."""

    columns: torch.Tensor
    lambdas: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor
    features: torch.Tensor
    z_mean: torch.Tensor
    z_std: torch.Tensor

    def __init__(self, view: Any, width: int | None) -> None:
        super().__init__()
        t = view.transformer_
        self.power = t.kind == "power" and t.columns_.size > 0
        self.register_buffer("columns", torch.from_numpy(np.asarray(t.columns_, dtype=np.int64)))
        for name in ("lambdas_", "mean_", "std_"):
            value = getattr(t, name, None) if self.power else None
            self.register_buffer(name.rstrip("_"), torch.from_numpy(np.asarray(value if value is not None else [],
                                                                               dtype=np.float64)))
        self.register_buffer("features", torch.from_numpy(np.asarray(view.features, dtype=np.int64)))
        self.standardize = view.mean_ is not None
        self.register_buffer("z_mean", torch.from_numpy(np.asarray(view.mean_ if self.standardize else [], np.float32)))
        self.register_buffer("z_std", torch.from_numpy(np.asarray(view.std_ if self.standardize else [], np.float32)))
        self.pad = 0 if width is None else width - int(view.features.size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [n, f]`` float32 preprocessed rows -> the member's ``[n, width]`` float32."""
        if self.power:
            xs = x.double().index_select(1, self.columns)
            t = (_yeo_johnson(xs, self.lambdas) - self.mean) / self.std
            t = torch.nan_to_num(torch.clamp(t, -1e6, 1e6)).float()
            x = x.index_copy(1, self.columns, t)
        v = x.index_select(1, self.features)
        if self.standardize:
            v = (v - self.z_mean) / self.z_std
        if self.pad > 0:
            v = torch.nn.functional.pad(v, (0, self.pad))
        return v


class QueryGraph(nn.Module):
    """Raw numeric rows ``x [n, n_features_in_]`` float32 -> probabilities ``[n, n_classes]`` float64 of a
    fitted in-context classifier (the module doc lists its steps); the context is encoded once, here.

    :param est: a fitted classifier that :func:`check_exportable` accepts.
    """

    prescale: torch.Tensor
    fill: torch.Tensor
    center: torch.Tensor
    scale: torch.Tensor
    gather: torch.Tensor
    prior: torch.Tensor

    def __init__(self, est: Any) -> None:
        super().__init__()
        check_exportable(est)
        pre = est.preprocessor_
        for name in ("prescale", "fill", "center", "scale"):
            self.register_buffer(name, torch.from_numpy(np.asarray(getattr(pre, name), dtype=np.float64)))
        self.clip = float(pre.clip)
        ids = list(range(len(est.members_)))
        width = est._width(ids)
        self.members = nn.ModuleList(_MemberGraph(est._views()[i], width) for i in ids)
        k = int(est.n_classes_)
        y = np.asarray(est.y_context_, dtype=np.int64)
        shifts = np.array([est.members_[i].class_shift % k for i in ids])
        contexts, y_members = est._member_inputs(ids, None, y, shifts, k)
        weights, prior = est._class_weights(y, k)
        self.state = est._state(ids, None, y, k, contexts, y_members, weights)
        saved_chunk = est.chunk_size
        try:
            est.chunk_size = _HUGE_CHUNK
            self.hook = est._context_forward()
        finally:
            est.chunk_size = saved_chunk
        self.model = est.model_  # registered: its weights become the graph's initialisers
        self.k = k
        self.temperature = float(getattr(est, "softmax_temperature", 1.0))
        self.average = str(est.average)
        self.register_buffer("gather", torch.from_numpy((np.arange(k)[None, :] + shifts[:, None]) % k))
        self.has_prior = prior is not None
        self.register_buffer("prior", prior.double() if prior is not None else torch.zeros(0, dtype=torch.float64))

    def preprocess(self, x: torch.Tensor) -> torch.Tensor:
        """``[n, f]`` raw rows -> ``[n, f]`` float32, as :meth:`TabularPreprocessor.transform`."""
        enc = x.double() / self.prescale
        enc = torch.where(torch.isnan(enc), self.fill.expand_as(enc), enc)
        z = torch.clamp((enc - self.center) / self.scale, -1e300, 1e300)
        a = z.abs()
        clipped = torch.sign(z) * (self.clip + torch.log(torch.clamp(a - self.clip, min=0.0) + 1.0))
        return torch.where(a <= self.clip, z, clipped).float()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``x [n, f]`` float32 -> probabilities ``[n, k]`` float64 (rows sum to 1)."""
        z = self.preprocess(x)
        q = torch.stack([m(z) for m in self.members])  # [M, n, W]
        logits = self.hook.predict_query(self.state, q).float() / self.temperature  # [M, n, n_out]
        logp = torch.log_softmax(logits[..., : self.k].double(), dim=-1)
        logp = torch.stack([logp[i].index_select(-1, self.gather[i]) for i in range(len(self.members))])
        if self.average == "logits":
            mean = logp.mean(0)
            out = torch.softmax(mean + self.prior if self.has_prior else mean, dim=-1)
        else:
            out = logp.exp().mean(0)
        return out / out.sum(dim=1, keepdim=True)


@dataclass
class ExportReport:
    """What :func:`export_onnx` wrote and how it checked it.

    :ivar max_abs_diff: largest ``|onnxruntime - predict_proba|`` on the probe rows (None: not checked).
    :ivar checked_rows: probe rows compared (0: onnxruntime absent).
    """

    path: Path
    n_features: int
    classes: list[Any]
    max_abs_diff: float | None
    checked_rows: int
    bytes: int


def run_onnx(model: str | os.PathLike[str] | bytes, x: np.ndarray) -> np.ndarray:
    """Probabilities ``[n, n_classes]`` of rows ``x [n, f]`` from an exported file (or its bytes), with
    onnxruntime on CPU."""
    import onnxruntime as ort

    source = model if isinstance(model, bytes) else str(model)
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    (out,) = session.run(["probabilities"], {"x": np.ascontiguousarray(x, dtype=np.float32)})
    return np.asarray(out)


def _probe_rows(est: Any, n: int, seed: int = 0) -> np.ndarray:
    """``[n, f]`` raw rows around the training rows' scale, a few NaN (missing) among them."""
    pre = est.preprocessor_
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, pre.center.size)) * 1.5
    x = (z * pre.scale + pre.center) * pre.prescale
    x[rng.random(x.shape) < 0.05] = np.nan
    return x.astype(np.float32)


def export_onnx(est: Any, path: str | os.PathLike[str], *, overwrite: bool = False, check_rows: int = 256,
                atol: float = DEFAULT_ATOL, opset: int = 17, flag: str = "path") -> ExportReport:
    """Write a fitted in-context classifier as one ONNX graph ``x [n, f] -> probabilities [n, k]``.

    The file is written atomically (never onto an existing file without ``overwrite``). With
    onnxruntime installed, ``check_rows`` probe rows are scored by both and compared.

    :param flag: how messages name ``path`` (the CLI passes ``"--out"``).

    :raises TabzooInputError: what the graph cannot hold (see :func:`check_exportable`), an existing file,
        or onnxruntime's probabilities further than ``atol`` from :meth:`predict_proba` (file not written).
    """
    from tabzoo.files import check_output, write_via

    try:
        import onnx  # noqa: F401
    except ImportError as e:
        raise TabzooInputError("ONNX export needs onnx: pip install 'tabzoo-core[onnx]'.") from e
    out = check_output(path, overwrite=overwrite, flag=flag)
    with _fp32(est):
        data, diff, checked = _export_checked(est, check_rows, atol, opset)
    write_via(out, lambda tmp: tmp.write_bytes(data))
    return ExportReport(out, int(est.preprocessor_.center.size),
                        [c.item() if hasattr(c, "item") else c for c in est.classes_], diff, checked, len(data))


@contextlib.contextmanager
def _fp32(est: Any) -> Iterator[None]:
    """The estimator at fp32 (the graph's precision) with a private context cache, restored after."""
    saved = {name: getattr(est, name, None) for name in ("inference_dtype_", "context_cache_")}
    est.inference_dtype_ = torch.float32
    est.context_cache_ = {}
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(est, name, value)


def _export_checked(est: Any, check_rows: int, atol: float, opset: int) -> tuple[bytes, float | None, int]:
    """The ONNX bytes, the largest difference to ``predict_proba`` on the probe rows and their count."""
    import io
    import warnings

    import onnx

    from tabzoo import kernels

    graph = QueryGraph(est).eval()
    buf = io.BytesIO()
    with torch.no_grad(), kernels.use("reference"), warnings.catch_warnings():
        # shape checks in the model become constants: the row axis stays dynamic (tested on other row counts)
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", message="Constant folding")  # torch's note on a non-unit-step Slice
        try:
            torch.onnx.export(graph, (torch.from_numpy(_probe_rows(est, 7, seed=1)),), buf,  # type: ignore[arg-type]
                              dynamo=False,
                              input_names=["x"], output_names=["probabilities"],
                              dynamic_axes={"x": {0: "rows"}, "probabilities": {0: "rows"}}, opset_version=opset)
        except Exception as e:  # noqa: BLE001 - any failure to trace: the model's pass, not the user's input
            raise TabzooInputError(
                f"{type(est).__name__}'s forward pass cannot be traced to ONNX ({type(e).__name__}: {e}); nothing "
                "was written. Export holds models whose pass traces with the row count as a dynamic axis "
                "(TabFlex); score this one with tabzoo.batch.predict_dataset or `tabzoo predict` instead."
            ) from e
    model = onnx.load_from_string(buf.getvalue())
    _metadata(model, est)
    data: bytes = model.SerializeToString()
    diff, checked = None, 0
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        check_rows = 0
    if check_rows > 0:
        probe = _probe_rows(est, check_rows)
        diff = float(np.max(np.abs(run_onnx(data, probe) - est.predict_proba(probe))))
        checked = check_rows
        if not diff <= atol:
            raise TabzooInputError(
                f"the ONNX graph's probabilities differ from predict_proba by {diff:.3g} (> atol {atol:g}) on "
                f"{check_rows} probe rows; nothing was written. Pass a larger atol if that is close enough, "
                "or report it with the estimator's parameters."
            )
    return data, diff, checked


def _metadata(model: Any, est: Any) -> None:
    from tabzoo.checkpoint import estimator_id

    entries = {"tabzoo.estimator": estimator_id(type(est)),
               "tabzoo.classes": json.dumps([c.item() if hasattr(c, "item") else c for c in est.classes_]),
               "tabzoo.inputs": "x: float32 [rows, features] in fit's column order, NaN = missing"}
    for key, value in entries.items():
        prop = model.metadata_props.add()
        prop.key, prop.value = key, value
