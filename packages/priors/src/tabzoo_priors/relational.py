"""Synthetic relational databases (pretraining data for relational models such as Ramba).

A random schema is a DAG of tables: table 0 is a root, every later table has one or two foreign
keys to earlier tables. Every row carries a latent vector; a child's latent is a noisy mix of its
parents' latents, and its typed cells (numeric, categorical, boolean, datetime, text) are noisy
functions of its latent, so cells carry signal across foreign keys. Root rows get timestamps in
a time window; a child row is created strictly after all the rows it references. Every table is
sorted by its timestamp, and its primary key follows that order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from tabzoo.errors import TabzooInputError

from tabzoo_priors._random import derive_seed

__all__ = ["RelationalConfig", "RelationalPrior", "generate_schema_data"]

_TABLE_NAMES = ("users", "items", "orders", "events", "reviews", "sessions", "payments", "stores",
                "visits", "tags", "shipments", "tickets")
_ADJ = ("red", "quick", "quiet", "bright", "old", "new", "small", "large", "fresh", "rare")
_NOUN = ("box", "lamp", "river", "stone", "cloud", "book", "chair", "field", "train", "song")
_TYPES = ("numeric", "categorical", "boolean", "datetime", "text")
_LATENT = 4
_T0 = np.datetime64("2020-01-01T00:00:00", "s")


@dataclass(frozen=True)
class RelationalConfig:
    """Knobs of :class:`RelationalPrior`.

    :param n_tables: ``(min, max)`` tables per database.
    :param root_rows: ``(min, max)`` rows of a root table (log-uniform).
    :param fanout: ``(min, max)`` mean children per parent row (uniform).
    :param n_columns: ``(min, max)`` typed value columns per table (besides keys and time).
    :param missing_share: share of missing cells in numeric, categorical and text columns.
    :param span_days: root timestamps are uniform over this many days from 2020-01-01.
    :param mean_delay_days: mean delay (exponential) between a parent row and its child.
    """

    n_tables: tuple[int, int] = (2, 5)
    root_rows: tuple[int, int] = (20, 200)
    fanout: tuple[float, float] = (1.0, 4.0)
    n_columns: tuple[int, int] = (2, 6)
    missing_share: float = 0.05
    span_days: float = 365.0
    mean_delay_days: float = 7.0

    def __post_init__(self) -> None:
        if not 1 <= self.n_tables[0] <= self.n_tables[1] <= len(_TABLE_NAMES):
            raise TabzooInputError(f"n_tables={self.n_tables} must satisfy 1 <= min <= max <= {len(_TABLE_NAMES)}.")
        if not 1 <= self.root_rows[0] <= self.root_rows[1]:
            raise TabzooInputError(f"root_rows={self.root_rows} must satisfy 1 <= min <= max.")
        if not 0 < self.fanout[0] <= self.fanout[1]:
            raise TabzooInputError(f"fanout={self.fanout} must satisfy 0 < min <= max.")
        if not 0 <= self.n_columns[0] <= self.n_columns[1]:
            raise TabzooInputError(f"n_columns={self.n_columns} must satisfy 0 <= min <= max.")
        if not 0 <= self.missing_share < 1:
            raise TabzooInputError(f"missing_share={self.missing_share} must lie in [0, 1).")
        if self.span_days <= 0 or self.mean_delay_days <= 0:
            raise TabzooInputError("span_days and mean_delay_days must be positive.")


def _value_column(kind: str, z: np.ndarray, times: np.ndarray, rng: np.random.Generator,
                  missing_share: float) -> np.ndarray:
    """One typed column ``[rows]`` derived from latents ``z [rows, L]``."""
    n = z.shape[0]
    s = z @ rng.normal(size=_LATENT) / np.sqrt(_LATENT) + 0.3 * rng.normal(size=n)
    miss = rng.random(n) < missing_share
    if kind == "numeric":
        out = (s * rng.lognormal(0, 1) + rng.normal(0, 3)).astype(np.float64)
        out[miss] = np.nan
        return out
    if kind == "boolean":
        return s > rng.normal(0, 0.5)
    if kind == "datetime":  # e.g. a due date: after the row's own time, by a latent-driven delay
        hours = np.exp(np.clip(1.5 * s + 3.0, -5, 8)).astype(np.int64) + 1
        return times + hours.astype("timedelta64[h]").astype("timedelta64[s]")
    k = int(rng.integers(2, 10))
    cuts = np.quantile(s, np.sort(rng.random(k - 1)))
    bucket = np.searchsorted(cuts, s)
    out = np.empty(n, dtype=object)
    if kind == "categorical":
        labels = np.array([f"c{j}" for j in rng.permutation(k)], dtype=object)
        out[:] = labels[bucket]
    else:  # text: a short phrase whose words depend on the latent
        b2 = np.searchsorted(np.quantile(s, [0.25, 0.5, 0.75]), z[:, 0])
        out[:] = [f"{_ADJ[(bi * 3 + 1) % 10]} {_NOUN[(bi * 7 + c) % 10]} no {c}"
                  for bi, c in zip(bucket, b2, strict=True)]
    out[miss] = None
    return out


def generate_schema_data(cfg: RelationalConfig, seed: int) -> dict[str, Any]:
    """Generate one database as plain numpy data (no core types).

    :return: ``{"tables": {name: {col: array [rows]}}, "types": {name: {col: type}},
        "primary_keys": {name: "id"}, "foreign_keys": [(table, col, ref_table)],
        "time_columns": {name: "created_at"}}``.
    """
    rng = np.random.default_rng(derive_seed(int(seed), 20))
    n_tables = int(rng.integers(cfg.n_tables[0], cfg.n_tables[1] + 1))
    names = [str(n) for n in rng.permutation(np.array(_TABLE_NAMES))[:n_tables]]
    tables: dict[str, dict[str, Any]] = {}
    types: dict[str, dict[str, str]] = {}
    fks: list[tuple[str, str, str]] = []
    latent: dict[str, np.ndarray] = {}
    times: dict[str, np.ndarray] = {}
    span_s = cfg.span_days * 86400.0
    for i, name in enumerate(names):
        cols: dict[str, Any] = {}
        ctypes: dict[str, str] = {"id": "numeric", "created_at": "datetime"}
        if i == 0:
            lo, hi = np.log(cfg.root_rows[0]), np.log(cfg.root_rows[1] + 1)
            n = int(np.exp(rng.uniform(lo, hi)))
            z = rng.normal(size=(n, _LATENT))
            t = rng.uniform(0, span_s, size=n)
        else:
            parents = [names[j] for j in rng.choice(i, size=min(i, int(rng.integers(1, 3))), replace=False)]
            n = max(1, int(len(times[parents[0]]) * rng.uniform(*cfg.fanout)))
            z = 0.3 * rng.normal(size=(n, _LATENT))
            t = np.zeros(n)
            for p in parents:
                pop = rng.zipf(1.5, size=len(times[p])).astype(float)  # skewed popularity
                ref = rng.choice(len(times[p]), size=n, p=pop / pop.sum())
                cols[f"{p}_id"] = ref
                ctypes[f"{p}_id"] = "numeric"
                fks.append((name, f"{p}_id", p))
                z = z + latent[p][ref] / np.sqrt(len(parents))
                t = np.maximum(t, times[p][ref])
            t = t + 1.0 + rng.exponential(cfg.mean_delay_days * 86400.0, size=n)
        order = np.argsort(t, kind="stable")
        inv = np.empty(n, dtype=np.int64)
        inv[order] = np.arange(n)
        z, t = z[order], np.floor(t[order])
        for c in [c for c in cols if c.endswith("_id")]:
            cols[c] = cols[c][order]
        cols["id"] = np.arange(n, dtype=np.int64)
        created = _T0 + t.astype(np.int64).astype("timedelta64[s]")
        cols["created_at"] = created
        for k in range(int(rng.integers(cfg.n_columns[0], cfg.n_columns[1] + 1))):
            kind = _TYPES[int(rng.integers(0, len(_TYPES)))]
            cname = f"{kind[:3]}_{k}"
            cols[cname] = _value_column(kind, z, created, rng, cfg.missing_share)
            ctypes[cname] = kind
        tables[name] = {"id": cols.pop("id"), **cols}
        types[name] = ctypes
        latent[name], times[name] = z, t
    return {"tables": tables, "types": types, "primary_keys": dict.fromkeys(names, "id"),
            "foreign_keys": fks, "time_columns": dict.fromkeys(names, "created_at")}


class RelationalPrior:
    """Random relational databases, returned as :class:`tabzoo.table.RelationalDatabase`.

    Example::

        db = RelationalPrior(n_tables=(3, 4)).sample_database(seed=0)
        db.tables.keys(), db.foreign_keys
    """

    kind = "relational"

    def __init__(self, config: RelationalConfig | None = None, **overrides: Any) -> None:
        base = dict(config.__dict__) if config is not None else {}
        base.update({k: tuple(v) if isinstance(v, list) else v for k, v in overrides.items()})
        try:
            self.config = RelationalConfig(**base)
        except TypeError as exc:
            raise TabzooInputError(f"bad RelationalPrior option: {exc}") from exc

    def sample_database(self, *, seed: int):  # -> tabzoo.table.RelationalDatabase
        """One random database, a pure function of ``(config, seed)``."""
        from tabzoo.table import ForeignKey, RelationalDatabase, Table

        raw = generate_schema_data(self.config, seed)
        tables = {n: Table.from_dict(cols, types=raw["types"][n]) for n, cols in raw["tables"].items()}
        return RelationalDatabase(
            tables=tables, primary_keys=raw["primary_keys"],
            foreign_keys=[ForeignKey(t, c, r) for t, c, r in raw["foreign_keys"]],
            time_columns=raw["time_columns"],
        )

    def sample(self, batch_size: int = 1, *, seed: int, device: str = "cpu") -> list:
        """``batch_size`` databases (``device`` is accepted for API symmetry; data is numpy)."""
        return [self.sample_database(seed=derive_seed(int(seed), i)) for i in range(batch_size)]
