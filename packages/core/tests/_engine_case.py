"""The case the Dask and Ray tests share: a fitted, saved test classifier and its rows as a Parquet folder.

Workers of both engines import the test estimator's module, so the fixture puts this folder on
``PYTHONPATH`` (inherited by worker processes) for the test's duration.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _icl_testmodel import ICLTestClassifier

FEATURES = ["a", "b", "c"]


@dataclass
class EngineCase:
    """``stem``: the saved checkpoint pair; ``folder``: ``parts`` Parquet files of ``frame`` (features + ``id``)."""

    clf: ICLTestClassifier
    stem: Path
    folder: Path
    frame: pd.DataFrame

    @property
    def x(self) -> pd.DataFrame:
        """The feature columns of every row ``[n, 3]``."""
        return self.frame[FEATURES]


def make_engine_case(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, seed: int, n: int,
                     parts: int) -> EngineCase:
    """Fit on the first 150 of ``n`` rows (label: ``a - c > 0``), save, and write ``parts`` Parquet files."""
    here = str(Path(__file__).resolve().parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([here, os.environ.get("PYTHONPATH", "")]))
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(n, len(FEATURES))), columns=FEATURES)
    frame["id"] = np.arange(n)
    y = np.where(frame.a - frame.c > 0, "up", "down")
    clf = ICLTestClassifier(n_estimators=2, device="cpu").fit(frame[FEATURES][:150], y[:150])
    stem = clf.save(tmp_path / "fitted" / "clf")
    folder = tmp_path / "rows"
    folder.mkdir()
    for i, part in enumerate(np.array_split(np.arange(n), parts)):
        frame.iloc[part].to_parquet(folder / f"part-{i}.parquet")
    return EngineCase(clf, Path(stem), folder, frame)


def check_scores(case: EngineCase, got: pd.DataFrame) -> None:
    """``got`` (any row order) holds every ``id`` once, the in-memory labels and bit-identical probabilities."""
    got = got.sort_values("id")
    assert got["id"].tolist() == list(range(len(case.frame)))
    assert got["prediction"].astype(str).tolist() == case.clf.predict(case.x).tolist()
    np.testing.assert_array_equal(got[["proba_down", "proba_up"]].to_numpy(), case.clf.predict_proba(case.x))
