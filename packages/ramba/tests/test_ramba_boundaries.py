"""Issue 24: Ramba's fit refuses bad labels and arguments before training; unfitted use is a
``NotFittedError`` that is also a ``TabzooInputError``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tabzoo.errors import TabzooInputError
from tabzoo_ramba import Ramba, RelationalTask, SamplerConfig, temporal_split
from tabzoo_ramba.conformance import shop_database
from tabzoo_ramba.data import Split, to_seconds

REG = RelationalTask("orders", "label", "regression", horizon_s=86400.0, lookback_s=60 * 86400.0)
CLS = RelationalTask("orders", "label", "classification", horizon_s=86400.0, lookback_s=60 * 86400.0)
SMALL = SamplerConfig(n_child=5, max_rows=30)


def _model() -> Ramba:
    return Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SMALL, progress=False)


@pytest.fixture(scope="module")
def shop():
    db, _ = shop_database(0, n_orders=60)
    times = to_seconds(db.table("orders").column("time"))
    q = [np.datetime64(int(np.quantile(times, p)), "s") for p in (0.6, 0.75)]
    return db, temporal_split(db, REG, q[0], q[1])


def _with_y(split: dict[str, Split], y: np.ndarray) -> dict[str, Split]:
    return {"train": Split(split["train"].seeds, y)}


def test_all_nan_labels_are_refused(shop) -> None:
    db, split = shop
    y = np.full(len(split["train"]), np.nan)
    with pytest.raises(TabzooInputError, match="every label is missing"):
        _model().fit(db, REG, _with_y(split, y), steps=2)


def test_a_label_outside_the_binary_classes_is_refused(shop) -> None:
    db, split = shop
    y = (np.arange(len(split["train"])) % 2).astype(float)
    y[3] = 7.0
    with pytest.raises(TabzooInputError, match=r"row 3 is 7.0.*classes \[0.0, 1.0\]"):
        _model().fit(db, CLS, _with_y(split, y), steps=2)


def test_labels_must_match_the_seeds(shop) -> None:
    db, split = shop
    with pytest.raises(TabzooInputError, match="one label per row"):
        _model().fit(db, REG, _with_y(split, split["train"].y[:-1]), steps=2)


@pytest.mark.parametrize(("arg", "value"), [("steps", 0), ("steps", -5), ("batch_size", 0), ("lr", -1e-3),
                                            ("lr", float("nan")), ("eval_every", 0), ("steps", 2.5)])
def test_bad_fit_arguments_are_refused(shop, arg: str, value: object) -> None:
    db, split = shop
    with pytest.raises(TabzooInputError, match=f"{arg}={value!r}: {arg} must be"):
        _model().fit(db, REG, split, **{arg: value})  # type: ignore[arg-type]


def test_unfitted_use_is_a_not_fitted_error(shop) -> None:
    from sklearn.exceptions import NotFittedError

    db, split = shop
    model = _model()
    for call in (lambda: model.predict(db, split["test"].seeds), lambda: model.evaluate(db, split["test"])):
        with pytest.raises(NotFittedError, match="fit") as info:
            call()
        assert isinstance(info.value, TabzooInputError)


def test_fit_checks_its_peak_memory_before_training(shop, monkeypatch) -> None:
    from tabzoo.errors import MemoryLimitError

    db, split = shop
    monkeypatch.setenv("TABZOO_MEMORY_LIMIT", "100KB")
    with pytest.raises(MemoryLimitError, match=r"Ramba.fit would need about .*sequences of \d+ tokens.*"
                                               r"Use a smaller batch_size"):
        _model().fit(db, REG, split, steps=2)


@pytest.mark.parametrize(("flag", "value"), [("--steps", "-5"), ("--max-train", "0"), ("--lookback-days", "0"),
                                              ("--horizon-hours", "nan"), ("--seed", "-1")])
def test_cli_refuses_bad_numbers_before_any_work(flag: str, value: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from tabzoo.cli import main

    missing = tmp_path / "absent.sqlite"  # never opened: the argument is refused first
    with pytest.raises(SystemExit) as exit_info:
        main(["ramba", str(missing), "--val-start", "2013-01-01", "--test-start", "2013-02-01", flag, value])
    assert exit_info.value.code == 2
    assert f"argument {flag}" in capsys.readouterr().err
    assert not missing.exists()
