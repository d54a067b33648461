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
    """CPU, torch and Python versions: where bitwise equality can be expected."""
    import torch

    return f"{platform.machine()} {platform.processor()} torch {torch.__version__} python {sys.version.split()[0]}"


def assert_reproduced(data: Path, name: str, got: np.ndarray, *, atol: float = 1e-7) -> None:
    """``got`` equals the saved ``out/<name>`` (bitwise on the writing machine, rtol 1e-5 elsewhere)."""
    saved = np.load(data)
    assert f"out/{name}" in saved.files, f"no saved output for {name}: regenerate {data.name} (see the docstring)"
    want = saved[f"out/{name}"]
    assert got.shape == want.shape
    if str(saved["fingerprint"]) == fingerprint():
        np.testing.assert_array_equal(got, want, err_msg=f"{name}: predictions changed (bitwise)")
    else:
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol, err_msg=f"{name}: predictions changed")


def assert_all_reproduced(data: Path, got: Mapping[str, np.ndarray], *, atol: float = 1e-7) -> None:
    """Every saved output is in ``got`` and reproduced (:func:`assert_reproduced`), and nothing more."""
    saved = sorted(n.removeprefix("out/") for n in np.load(data).files if n.startswith("out/"))
    assert saved == sorted(got), f"saved outputs {saved} but computed {sorted(got)}: regenerate {data.name}"
    for name, value in got.items():
        assert_reproduced(data, name, np.asarray(value), atol=atol)


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
