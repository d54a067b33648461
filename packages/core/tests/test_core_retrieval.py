"""Retrieval context chosen per table on the training rows (:mod:`tabzoo.train.retrieval`, issue 28 item 2).

The estimator is the core's test classifier around ``KernelICL`` with ``context_strategy="select"``, so every
property is checked on the core's one path, not on a plugin's model.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _icl_testmodel import ICLTestClassifier
from tabzoo.estimators.ensemble import EnsemblePath
from tabzoo.train import retrieval
from tabzoo.train.finetune import FineTuneMixin

FAST = {"steps": 6, "eval_every": 3, "context_size": 64, "query_size": 32, "progress": False, "min_rows": 16}


class SelectClassifier(FineTuneMixin, ICLTestClassifier):
    """The core's test classifier with ``context_strategy`` and ``fine_tune``."""

    def __init__(self, n_estimators: int = 2, random_state: int | None = 0, context_strategy: str = "select",
                 local_size: int = 2048, fine_tune: Any = None) -> None:
        super().__init__(n_estimators=n_estimators, random_state=random_state, device="cpu")
        self.context_strategy = context_strategy
        self.local_size = local_size
        self.fine_tune = fine_tune


def _blobs(n: int = 480, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Four far-apart blobs whose label flips inside each blob at its own threshold: local contexts help."""
    rng = np.random.default_rng(seed)
    c = rng.integers(0, 4, n)
    centre = np.array([[0, 0], [8, 0], [0, 8], [8, 8]], dtype=np.float64)[c]
    x = rng.standard_normal((n, 2)) + centre
    y = ((x[:, 0] - centre[:, 0]) > np.array([0.0, 0.5, -0.5, 0.2])[c]) ^ (c % 2 == 1)
    return x.astype(np.float32), y.astype(np.int64)


def _linear(n: int = 480, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    return x, (x[:, 0] - x[:, 1] > 0).astype(np.int64)


def test_chooses_local_contexts_where_they_help_and_keeps_the_global_one_otherwise() -> None:
    x, y = _blobs()
    est = SelectClassifier().fit(x[:360], y[:360])
    rec = est.retrieval_
    assert rec["strategy"] in ("local", "local+global") and est.local_ is not None
    assert rec["local_size"] == 360 // rec["divisor"]
    best = min(c["loss"] for c in rec["candidates"])
    assert best < rec["global_loss"] * (1 - retrieval.MIN_GAIN)
    glob = SelectClassifier(context_strategy="global").fit(x[:360], y[:360])
    acc = (est.predict(x[360:]) == y[360:]).mean()
    assert acc > (glob.predict(x[360:]) == y[360:]).mean()


@pytest.mark.parametrize("table", [_blobs, _linear])
def test_never_worse_than_the_global_context_on_the_inner_split(table) -> None:
    x, y = table()
    rec = SelectClassifier().fit(x, y).retrieval_
    losses = [c["loss"] for c in rec["candidates"]]
    if rec["strategy"] == "global":
        assert rec["local_weight"] == 0.0
        assert all(v >= rec["global_loss"] * (1 - retrieval.MIN_GAIN) for v in losses)
    else:
        chosen = [c["loss"] for c in rec["candidates"]
                  if c["divisor"] == rec["divisor"] and c["local_weight"] == rec["local_weight"]]
        assert chosen == [min(losses)] and chosen[0] < rec["global_loss"]


def test_small_tables_keep_the_global_context_with_a_reason() -> None:
    x, y = _blobs(n=200)
    est = SelectClassifier().fit(x, y)
    assert est.retrieval_["strategy"] == "global" and "too few" in est.retrieval_["reason"] and est.local_ is None


def test_deterministic_row_order_free_and_query_independent() -> None:
    x, y = _blobs()
    a = SelectClassifier().fit(x[:360], y[:360])
    b = SelectClassifier().fit(x[:360], y[:360])
    assert a.retrieval_ == b.retrieval_
    q = x[360:]
    p = a.predict_proba(q)
    np.testing.assert_array_equal(b.predict_proba(q), p)
    perm = np.random.default_rng(3).permutation(360)
    c = SelectClassifier().fit(x[:360][perm], y[:360][perm])
    assert c.retrieval_["divisor"] == a.retrieval_["divisor"]
    assert c.retrieval_["local_weight"] == a.retrieval_["local_weight"]
    np.testing.assert_allclose(c.predict_proba(q), p, rtol=1e-5, atol=1e-7)
    alone = np.concatenate([a.predict_proba(q[i:i + 1]) for i in range(0, 40)])
    np.testing.assert_allclose(alone, p[:40], rtol=1e-5, atol=1e-7)


def test_choosing_reads_only_inner_training_rows_as_context(monkeypatch) -> None:
    x, y = _blobs()
    seen: list[np.ndarray | None] = []
    real = EnsemblePath._member_proba

    def spy(self, member_ids, rows, *a: Any, **kw: Any) -> np.ndarray:
        seen.append(None if rows is None else np.asarray(rows).copy())
        return real(self, member_ids, rows, *a, **kw)

    monkeypatch.setattr(EnsemblePath, "_member_proba", spy)
    est = SelectClassifier().fit(x[:360], y[:360])
    train, val = est._inner_split(__import__("tabzoo.train.finetune", fromlist=["FineTune"]).FineTune())
    assert seen and all(r is not None for r in seen)  # every choosing pass read a subset of the rows
    for rows in seen:
        assert np.isin(rows, train).all() and not np.isin(rows, val).any()
    seen.clear()
    est.predict_proba(x[360:])
    assert all(r is None or (r.min() >= 0 and r.max() < 360) for r in seen)


def test_after_fine_tuning_and_through_save_and_load(tmp_path) -> None:
    x, y = _blobs()
    est = SelectClassifier(fine_tune=FAST).fit(x[:360], y[:360])
    assert est.fine_tune_ is not None and est.retrieval_ is not None
    back = SelectClassifier.load(est.save(tmp_path / "sel"))
    assert back.retrieval_ == est.retrieval_
    assert (back.local_ is None) == (est.local_ is None)
    np.testing.assert_array_equal(back.predict_proba(x[360:]), est.predict_proba(x[360:]))


def test_other_strategies_do_not_choose() -> None:
    x, y = _blobs()
    est = SelectClassifier(context_strategy="global").fit(x, y)
    assert est.retrieval_ is None and est.local_ is None


def test_predict_cli_passes_fine_tune_and_context_strategy(tmp_path, monkeypatch, capsys) -> None:
    import pandas as pd
    from tabzoo.cli import main, predict_cmd
    from tabzoo.estimators.ensemble import CONTEXT_STRATEGIES
    from tabzoo.train.finetune import FineTune

    assert predict_cmd.CONTEXT_STRATEGIES == CONTEXT_STRATEGIES and predict_cmd.FINE_TUNE_STEPS == FineTune().steps
    x, y = _blobs(n=300)
    frame = pd.DataFrame(x, columns=["a", "b"]).assign(target=y)
    frame.iloc[:260].to_csv(tmp_path / "train.csv", index=False)
    frame.iloc[260:].drop(columns=["target"]).to_csv(tmp_path / "test.csv", index=False)
    fitted: list[dict[str, Any]] = []
    real = SelectClassifier.fit

    def spy(self, X, y):  # noqa: ANN001, ANN202
        fitted.append(self.get_params())
        return real(self, X, y)

    monkeypatch.setattr(SelectClassifier, "fit", spy)
    base = ["predict", "--train", str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv"), "--target",
            "target", "--out", str(tmp_path / "p.csv")]
    code = main([*base, "--estimator", f"{__name__}:SelectClassifier", "--fine-tune", "3", "--context-strategy",
                 "global"])
    assert code == 0, capsys.readouterr().err
    assert fitted[-1]["fine_tune"] == {"steps": 3, "progress": False} and fitted[-1]["context_strategy"] == "global"
    assert len(pd.read_csv(tmp_path / "p.csv")) == 40
    code = main([*base[:-1], str(tmp_path / "q.csv"), "--estimator", f"{__name__}:SelectClassifier", "--fine-tune"])
    assert code == 0 and fitted[-1]["fine_tune"]["steps"] == FineTune().steps
    code = main([*base[:-1], str(tmp_path / "r.csv"), "--estimator", "_icl_testmodel:ICLTestClassifier",
                 "--fine-tune"])
    assert code == 2 and "has no fine_tune parameter" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([*base, "--estimator", f"{__name__}:SelectClassifier", "--fine-tune", "0"])
    assert "--fine-tune: expected a whole number >= 1" in capsys.readouterr().err
