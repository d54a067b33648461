"""Issue 24 item 7: the peak-memory check every estimator calls before it allocates."""

from __future__ import annotations

import pytest
import torch
from tabzoo.errors import MemoryLimitError, TabzooInputError

pytest.importorskip("sklearn", reason="tabzoo.estimators needs the sklearn extra")
from tabzoo.kernels.memory import (  # noqa: E402
    ENV,
    available_memory,
    check_memory,
    format_bytes,
    memory_limit,
    parameter_count,
)


def test_the_limit_defaults_to_the_available_memory(monkeypatch) -> None:
    monkeypatch.delenv(ENV, raising=False)
    avail = available_memory("cpu")
    assert avail is not None and avail > 0
    assert abs((memory_limit("cpu") or 0) - avail) < 2**30  # the same reading, give or take a moment
    check_memory("X.fit", 1024, "use less")
    with pytest.raises(MemoryLimitError, match=r"X.fit would need about .*\(the memory available now\)\. Use less"):
        check_memory("X.fit", 10 * avail, "use less")


@pytest.mark.parametrize(("text", "limit"), [("8GB", 8 * 10**9), ("512MiB", 512 * 2**20), ("1000", 1000),
                                             ("1.5k", 1500), ("off", None)])
def test_the_environment_sets_the_limit(monkeypatch, text: str, limit: int | None) -> None:
    monkeypatch.setenv(ENV, text)
    assert memory_limit() == limit


def test_over_the_limit_is_refused_with_estimate_limit_and_fix(monkeypatch) -> None:
    monkeypatch.setenv(ENV, "1MiB")
    with pytest.raises(MemoryLimitError) as info:
        check_memory("Est.fit", 3 * 2**30, "use fewer rows", detail="10 parameters")
    msg = str(info.value)
    for part in ("Est.fit would need about 3.0 GiB on cpu (10 parameters)", "limit of 1.0 MiB (TABZOO_MEMORY_LIMIT)",
                 "Use fewer rows", "TABZOO_MEMORY_LIMIT=<size>"):
        assert part in msg, msg
    assert isinstance(info.value, TabzooInputError) and isinstance(info.value, MemoryError)
    check_memory("Est.fit", 2**20, "use fewer rows")  # at the limit: fine
    monkeypatch.setenv(ENV, "off")
    check_memory("Est.fit", 2.0**60, "use fewer rows")
    with pytest.raises(MemoryLimitError):  # an overflowing estimate is refused even without a limit
        check_memory("Est.fit", float("inf"), "use fewer rows")


def test_a_bad_limit_says_how_to_write_one(monkeypatch) -> None:
    monkeypatch.setenv(ENV, "lots")
    with pytest.raises(TabzooInputError, match="TABZOO_MEMORY_LIMIT=8GB"):
        check_memory("Est.fit", 1, "x")


def test_parameters_are_counted_without_allocating() -> None:
    assert parameter_count(lambda: torch.nn.Linear(100_000, 100_000)) == 100_000 * 100_000 + 100_000  # 40 GB
    assert format_bytes(1536) == "1.5 KiB" and format_bytes(12) == "12 B" and format_bytes(3 * 2**40) == "3.0 TiB"


def test_in_context_predict_checks_its_peak_before_allocating(monkeypatch) -> None:
    import numpy as np
    from _icl_testmodel import ICLTestClassifier, ICLTestRegressor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    for est, y in ((ICLTestClassifier(device="cpu", n_estimators=2), (X[:, 0] > 0).astype(int)),
                   (ICLTestRegressor(device="cpu", n_estimators=2), X[:, 0])):
        est.fit(X, y)
        before = est.predict(X[:5])
        monkeypatch.setenv(ENV, "1KB")
        with pytest.raises(MemoryLimitError, match=r"\.predict would need about .*2 members x [0-9]+ rows.*"
                                                   r"Use fewer context rows"):
            est.predict(X[:5])
        monkeypatch.delenv(ENV)
        np.testing.assert_array_equal(est.predict(X[:5]), before)
