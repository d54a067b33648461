"""Saved reference outputs for a plugin's "predictions unchanged" tests (one helper, every plugin).

A plugin keeps ``tests/data/<file>.npz`` with its fixed inputs (``in/<key>``), the outputs of each
named case (``out/<name>``) and the machine's :func:`fingerprint`. On the machine that wrote them
outputs must be reproduced bit for bit; elsewhere within float-rounding tolerance.
"""

from __future__ import annotations

import platform
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np


def fingerprint() -> str:
    """CPU model and SIMD level, torch, NumPy and Python versions: where bitwise equality can be expected.

    ``platform.processor()`` is empty on Linux, so the CPU model is read from ``/proc/cpuinfo``; the
    SIMD level is torch's kernel dispatch (``AVX2``, ``AVX512``, ...). Two x86_64 machines with the
    same torch once had the same fingerprint and the AVX512 one failed the bitwise comparison by
    float rounding (4e-7 relative; bitwise again with the AVX2 paths of ATen, MKL and oneDNN forced).
    The last word says whether the compiled CPU kernels of :mod:`tabzoo.kernels.scan_cpu` run
    (``kernels compiled``) or their references do (``kernels reference``): the same machine gives other
    bits with and without them, and CI does not build them.
    """
    import torch

    from tabzoo.kernels import scan_cpu

    cpu = getattr(torch.backends, "cpu", None)
    simd = cpu.get_cpu_capability() if cpu is not None and hasattr(cpu, "get_cpu_capability") else "?"
    kernels = "compiled" if scan_cpu.available() else "reference"
    return (f"{platform.machine()} {_cpu_model() or platform.processor()} {simd} torch {torch.__version__} "
            f"numpy {np.__version__} python {sys.version.split()[0]} kernels {kernels}")


def _cpu_model() -> str:
    """The first ``model name`` of ``/proc/cpuinfo`` (empty where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def estimator_inputs(seed: int = 20261127) -> dict[str, np.ndarray]:
    """The small fixed table of the in-context plugins' saved-output tests (48 rows; fit on the
    first 36, predict the last 12).

    :return: ``x`` float32 ``[48, 6]`` (column 5 categorical codes 0-3; a missing value in a
        context row and in a query row), ``y3`` int64 ``[48]`` (3 classes), ``y12`` ``[48]`` (12
        classes) and ``yr`` float64 ``[48]`` (a regression target).
    """
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((48, 6)).astype(np.float32)
    x[:, 5] = rng.integers(0, 4, 48)  # a categorical column (codes)
    x[3, 1] = np.nan
    x[40, 2] = np.nan  # a missing value in a query row
    y3 = (x[:, 0] + x[:, 3] > 0).astype(np.int64) + (x[:, 4] > 0.8)
    y12 = np.argsort(np.argsort(x[:, 0] + 0.2 * x[:, 4])) % 12
    yr = (x[:, 0] * 2.0 - x[:, 3] + 0.1 * rng.standard_normal(48)).astype(np.float64)
    return {"x": x, "y3": y3, "y12": y12, "yr": yr}


def fit_predict(estimator: Any, target: str, method: str, inputs: Mapping[str, np.ndarray] | None = None,
                n_fit: int = 36) -> np.ndarray:
    """Fit ``estimator`` on the first ``n_fit`` rows of ``inputs`` (default :func:`estimator_inputs`)
    with the labels ``inputs[target]``; return ``method`` (e.g. ``"predict_proba"``) on the other
    rows as float64 (``[n_query, n_classes]`` or ``[n_query]``)."""
    d = estimator_inputs() if inputs is None else inputs
    estimator.fit(d["x"][:n_fit], d[target][:n_fit])
    return np.asarray(getattr(estimator, method)(d["x"][n_fit:]), dtype=np.float64)


def assert_reproduced(data: Path, name: str, got: np.ndarray, *, atol: float = 1e-7, rtol: float = 1e-5) -> None:
    """``got`` equals the saved ``out/<name>``: bitwise on the writing machine, within ``rtol`` and
    ``atol`` elsewhere (a plugin whose outputs round more across SIMD levels states its bound)."""
    saved = np.load(data)
    assert f"out/{name}" in saved.files, f"no saved output for {name}: regenerate {data.name} (see the docstring)"
    want = saved[f"out/{name}"]
    assert got.shape == want.shape
    if str(saved["fingerprint"]) == fingerprint():
        np.testing.assert_array_equal(got, want, err_msg=f"{name}: predictions changed (bitwise)")
    else:
        np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, err_msg=f"{name}: predictions changed")


def assert_all_reproduced(data: Path, got: Mapping[str, np.ndarray], *, atol: float = 1e-7,
                          rtol: float = 1e-5) -> None:
    """Every saved output is in ``got`` and reproduced (:func:`assert_reproduced`), and nothing more."""
    saved = sorted(n.removeprefix("out/") for n in np.load(data).files if n.startswith("out/"))
    assert saved == sorted(got), f"saved outputs {saved} but computed {sorted(got)}: regenerate {data.name}"
    for name, value in got.items():
        assert_reproduced(data, name, np.asarray(value), atol=atol, rtol=rtol)


def assert_inputs_unchanged(data: Path, inputs: Mapping[str, np.ndarray]) -> None:
    """Today's fixed inputs are the saved ones."""
    saved = np.load(data)
    for k, v in inputs.items():
        np.testing.assert_array_equal(saved[f"in/{k}"], v)


def write(data: Path, inputs: Mapping[str, np.ndarray], cases: list[str], predict: Callable[[str], np.ndarray]) -> None:
    """Regenerate ``data`` from today's code (run by the test module's ``__main__``); ``predict(name)``
    gives the output of case ``name`` (a dict's ``__getitem__`` when they are all computed at once)."""
    import torch

    torch.set_num_threads(1)
    arrays: dict[str, Any] = {f"in/{k}": v for k, v in inputs.items()}
    for name in cases:
        arrays[f"out/{name}"] = predict(name)
        print(name, arrays[f"out/{name}"].shape)
    arrays["fingerprint"] = np.array(fingerprint())
    data.parent.mkdir(exist_ok=True)
    np.savez_compressed(data, **arrays)


def regenerate(data: Path, outputs: Callable[[], Mapping[str, np.ndarray]]) -> None:
    """Rewrite ``data`` from ``outputs()`` computed all at once, with deterministic torch algorithms
    (a reference test module's ``__main__``)."""
    import torch

    torch.use_deterministic_algorithms(True)
    computed = outputs()
    write(data, {}, sorted(computed), lambda name: np.asarray(computed[name]))
    print(f"wrote {data}")
