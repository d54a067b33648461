"""Column-wise serialization of a sampled subgraph, and the batch the model reads.

Sequence layout (paper eq. 4): ``[SEP_1, C_1, SEP_2, C_2, ..., SEP_K, C_K]``. Columns are ordered
by (seed table first, then table name) and then by their order in the table; key columns
(primary and foreign keys) are structure, not cells, and are left out. Inside a column the seed
row comes first and the other rows follow their canonical rank (time, then key), never their
stored order, so shuffling the rows of any input table changes nothing.

Cell states: observed, missing (a learned per-type null vector) or masked (a learned per-type
mask vector, the value is never read). Masked are: the seed's target and hidden outcome cells,
the label and hidden cells of every row whose label is not yet available (``t + horizon >
seed time``), and, in pretraining, 15% of the other cells.

Normalisation (:class:`ColumnStats`) uses only rows at or before a cutoff time, and for label
columns only rows whose label is available by then.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from tabzoo.table import ColumnType

from tabzoo_ramba.sampling import GraphIndex, Subgraph
from tabzoo_ramba.structure import gate_index, host_structure, to_device

__all__ = ["SEP", "NUM", "TEXT", "BOOL", "TIME", "OBSERVED", "MISSING", "MASKED", "ColumnStats",
           "Sequence", "serialize", "collate", "TargetSpec"]

SEP, NUM, TEXT, BOOL, TIME = 0, 1, 2, 3, 4
OBSERVED, MISSING, MASKED = 0, 1, 2
_KIND = {ColumnType.NUMERIC: NUM, ColumnType.CATEGORICAL: TEXT, ColumnType.TEXT: TEXT,
         ColumnType.BOOLEAN: BOOL, ColumnType.DATETIME: TIME}
_CLIP = 10.0


@dataclass(frozen=True)
class TargetSpec:
    """What is predicted and when labels become available: ``(table, column)``, the horizon in
    seconds and the hidden outcome columns of that table (``None`` table = pretraining)."""

    table: str | None = None
    column: str | None = None
    horizon_s: float = 0.0
    hidden: tuple[str, ...] = ()
    column_horizons: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        from tabzoo_ramba.data import normalise_horizons

        object.__setattr__(self, "column_horizons", normalise_horizons(self.column_horizons, self.column, self.hidden))

    def horizon_of(self, column: str) -> float:
        """Seconds after a row's time at which ``column`` becomes available (a hidden column may
        have its own, ``column_horizons``)."""
        return dict(self.column_horizons).get(column, float(self.horizon_s))

    @property
    def label_columns(self) -> tuple[str, ...]:
        if self.column is None:
            return ()
        return (self.column, *[c for c in self.hidden if c != self.column])


def feature_columns(db: Any, table: str) -> list[str]:
    """The cell columns of ``table``: everything but its primary and foreign keys."""
    keys = {db.primary_key(table)} | {fk.column for fk in db.parents(table)}
    return [c for c in db.table(table).names if c not in keys]


@dataclass
class ColumnStats:
    """``(mean, std)`` per ``(table, column)`` of numeric, boolean and datetime columns (datetime
    in epoch seconds), from rows at or before ``cutoff`` (label columns: ``t + horizon <= cutoff``)."""

    stats: dict[tuple[str, str], tuple[float, float]]
    cutoff: int

    @classmethod
    def fit(cls, db: Any, index: GraphIndex, cutoff: int, target: TargetSpec = TargetSpec()) -> ColumnStats:
        out: dict[tuple[str, str], tuple[float, float]] = {}
        for name in db.table_names:
            t = db.table(name)
            ts = index.times[name]
            rows = np.ones(t.n_rows, dtype=bool) if ts is None else ts <= cutoff
            for c in feature_columns(db, name):
                kind = _KIND[t.column_type(c)]
                if kind == TEXT:
                    continue
                use = rows
                if name == target.table and c in target.label_columns and ts is not None:
                    use = ts + target.horizon_of(c) <= cutoff
                use = use & ~_missing(t, c)
                v = _numeric(t, c)[use]
                v = v[np.isfinite(v)]
                mu = float(v.mean()) if len(v) else 0.0
                sd = float(v.std()) if len(v) > 1 else 1.0
                out[(name, c)] = (mu, sd if sd > 1e-8 else 1.0)
        return cls(out, int(cutoff))

    def get(self, table: str, column: str) -> tuple[float, float]:
        return self.stats.get((table, column), (0.0, 1.0))


def _numeric(t: Any, c: str) -> np.ndarray:
    """Column ``c`` of ``t`` as float64 ``[rows]`` (datetime: epoch seconds), cached per table."""
    cache = _table_cache(t)["numeric"]
    if c not in cache:
        v = t.column(c)
        if t.column_type(c) is ColumnType.DATETIME:
            cache[c] = v.astype("datetime64[s]").astype(np.int64).astype(np.float64)
        else:
            cache[c] = v.astype(np.float64)
    return cache[c]


_TABLES: OrderedDict[int, tuple[Any, dict[str, Any]]] = OrderedDict()
_MAX_TABLES = 64


def _table_cache(t: Any) -> dict[str, Any]:
    """Per-table arrays that serialization reads for every seed, built once (a Table is immutable;
    it is held here, so its ``id`` is not reused while cached): ``missing [rows, columns]``, the
    raw columns and their float64 forms. The ``_MAX_TABLES`` most recently used tables are kept
    (pretraining streams many databases)."""
    hit = _TABLES.get(id(t))
    if hit is not None and hit[0] is t:
        _TABLES.move_to_end(id(t))
        return hit[1]
    entry: dict[str, Any] = {"missing": t.missing, "column": {}, "numeric": {}, "names": list(t.names)}
    _TABLES[id(t)] = (t, entry)
    while len(_TABLES) > _MAX_TABLES:
        _TABLES.popitem(last=False)
    return entry


def _missing(t: Any, c: str) -> np.ndarray:
    """The missing mask of column ``c`` ``[rows]`` (cached)."""
    e = _table_cache(t)
    return e["missing"][:, e["names"].index(c)]


def _column(t: Any, c: str) -> np.ndarray:
    """Column ``c`` of ``t`` as stored ``[rows]`` (cached)."""
    cache = _table_cache(t)["column"]
    if c not in cache:
        cache[c] = t.column(c)
    return cache[c]


@dataclass
class Sequence:
    """One serialized subgraph (numpy, all ``[L]`` unless noted).

    ``kind``: SEP/NUM/TEXT/BOOL/TIME; ``col``: index into ``schema``; ``val [L, 2]``: the
    normalised value (TIME: z-score and signed log-age relative to the seed); ``scale``: the paper's
    scale feature; ``text``: index into ``strings`` (-1 = none); ``state``: observed/missing/masked;
    ``row``: subgraph node (-1 for SEP); ``edges``: ``(child node, parent node)``.
    ``target_pos``: position of the seed's target cell (-1 in pretraining); ``mlm``: positions
    masked for pretraining.
    """

    kind: np.ndarray
    col: np.ndarray
    val: np.ndarray
    scale: np.ndarray
    text: np.ndarray
    state: np.ndarray
    row: np.ndarray
    edges: list[tuple[int, int]]
    schema: list[str]
    strings: list[str]
    target_pos: int = -1
    target_col: int = -1
    mlm: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    n_rows: int = 0

    def __len__(self) -> int:
        return len(self.kind)


def _scale(raw: np.ndarray, mu: float) -> np.ndarray:
    return np.tanh(np.log10((np.abs(raw - mu) + 1e-8) / 9.0))


def serialize(db: Any, index: GraphIndex, sub: Subgraph, stats: ColumnStats, target: TargetSpec = TargetSpec(),
              *, mask_rate: float = 0.0, rng: np.random.Generator | None = None) -> Sequence:
    """Serialize ``sub`` column by column (see the module doc)."""
    by_table: dict[str, list[int]] = {}
    for n, (tab, _row) in enumerate(sub.nodes):
        by_table.setdefault(tab, []).append(n)
    seed_table = sub.nodes[0][0]
    tables = sorted(by_table, key=lambda t: (t != seed_table, t))
    for tab in tables:  # canonical in-column order: seed first, then by rank
        rank = index.rank[tab]
        by_table[tab].sort(key=lambda n: (n != 0, int(rank[sub.nodes[n][1]])))
    kinds, cols, vals, scales, texts, states, rows = [], [], [], [], [], [], []
    schema: list[str] = []
    strings: dict[str, int] = {}
    target_pos, target_col = -1, -1
    t_star = sub.seed_time
    for tab in tables:
        t = db.table(tab)
        nodes = by_table[tab]
        r = np.asarray([sub.nodes[n][1] for n in nodes], dtype=np.int64)
        ts = index.times[tab]
        for c in feature_columns(db, tab):
            kind = _KIND[t.column_type(c)]
            k = len(schema)
            schema.append(f"{tab} : {c}")
            m = len(r)
            kinds.append(np.array([SEP] + [kind] * m, dtype=np.int64))
            cols.append(np.full(m + 1, k, dtype=np.int64))
            rows.append(np.asarray([-1] + nodes, dtype=np.int64))
            miss = _missing(t, c)[r]
            state = np.where(miss, MISSING, OBSERVED).astype(np.int64)
            if tab == target.table and c in target.label_columns:
                hidden = np.zeros(m, dtype=bool) if ts is None else ts[r] + target.horizon_of(c) > t_star
                hidden |= np.asarray(nodes) == 0
                state[hidden] = MASKED
                if c == target.column:
                    target_col = k
                    if nodes[0] == 0:
                        target_pos = sum(len(x) for x in kinds) - m
            val = np.zeros((m, 2), dtype=np.float32)
            sc = np.zeros(m, dtype=np.float32)
            tx = np.full(m, -1, dtype=np.int64)
            ok = state == OBSERVED
            if kind == TEXT:
                raw = _column(t, c)[r]
                for i in np.flatnonzero(ok):
                    s = str(raw[i])
                    tx[i] = strings.setdefault(s, len(strings))
            else:
                raw = _numeric(t, c)[r]
                raw = np.where(ok, raw, 0.0)
                mu, sd = stats.get(tab, c)
                val[:, 0] = np.clip((raw - mu) / sd, -_CLIP, _CLIP)
                if kind == BOOL:
                    val[:, 0] = raw
                if kind in (NUM, TIME):
                    sc = _scale(raw, mu).astype(np.float32)
                if kind == TIME:
                    age = (t_star - raw) / 3600.0
                    val[:, 1] = np.sign(age) * np.log1p(np.abs(age)) / 5.0
                val[~ok] = 0.0
                sc[~ok] = 0.0
            vals.append(np.concatenate([np.zeros((1, 2), np.float32), val]))
            scales.append(np.concatenate([[0.0], sc]).astype(np.float32))
            texts.append(np.concatenate([[-1], tx]))
            states.append(np.concatenate([[OBSERVED], state]))
    seq = Sequence(
        kind=np.concatenate(kinds), col=np.concatenate(cols), val=np.concatenate(vals),
        scale=np.concatenate(scales), text=np.concatenate(texts), state=np.concatenate(states),
        row=np.concatenate(rows), edges=list(sub.edges), schema=schema, strings=list(strings),
        target_pos=target_pos, target_col=target_col, n_rows=len(sub.nodes))
    if mask_rate > 0:
        rng = rng or np.random.default_rng(0)
        cand = np.flatnonzero((seq.kind != SEP) & (seq.state == OBSERVED))
        pick = cand[rng.random(len(cand)) < mask_rate]
        if len(pick) == 0 and len(cand):
            pick = cand[rng.integers(0, len(cand), 1)]
        seq.mlm = np.sort(pick)
    return seq


def collate(seqs: list[Sequence], encoder: Any, device: str | torch.device = "cpu",
            max_rel_rows: int | None = 32) -> dict[str, Any]:
    """Pad sequences into a batch ``[B, L]`` and embed their strings (once per distinct string).

    The model's index structure is built here, on the host (in the data loader), not in the
    forward: ``struct`` (:func:`~tabzoo_ramba.structure.host_structure` for ``max_rel_rows``, the
    model's ``cfg.max_rel_rows``; ``None`` = leave it to the forward) and ``gate_index`` (the
    schema gate's column pairs), each moved to ``device`` in one transfer per dtype.

    Returns tensors ``kind, col, val [B, L, 2], scale, text, state, row, pad`` (``pad`` True on
    padding), ``schema_emb [n_schema, d_text]`` (``col`` is re-indexed into it), ``text_emb
    [n_strings, d_text]``, ``target_col [B]`` (schema index of the target column, -1 = none),
    ``target_pos [B]``, the MLM positions and targets, and the structure: ``row`` holds batch-
    global row ids (``-1`` = SEP/pad) and ``edges [E, 2]`` links those global ids.
    """
    b, length = len(seqs), max(len(s) for s in seqs)
    schema_ids: dict[str, int] = {}
    string_ids: dict[str, int] = {}
    out = {k: torch.zeros(b, length, dtype=torch.long) for k in ("kind", "col", "text", "state", "row")}
    out["val"] = torch.zeros(b, length, 2)
    out["scale"] = torch.zeros(b, length)
    pad = torch.ones(b, length, dtype=torch.bool)
    out["row"].fill_(-1)
    out["text"].fill_(-1)
    target_col = torch.full((b,), -1, dtype=torch.long)
    target_pos = torch.full((b,), -1, dtype=torch.long)
    edges, mlm_b, mlm_p = [], [], []
    row_offset = 0
    for i, s in enumerate(seqs):
        n = len(s)
        smap = np.asarray([schema_ids.setdefault(x, len(schema_ids)) for x in s.schema], dtype=np.int64)
        tmap = np.asarray([string_ids.setdefault(x, len(string_ids)) for x in s.strings] + [-1], dtype=np.int64)
        out["kind"][i, :n] = torch.from_numpy(s.kind)
        out["col"][i, :n] = torch.from_numpy(smap[s.col])
        out["text"][i, :n] = torch.from_numpy(tmap[s.text])  # -1 indexes the appended -1
        out["state"][i, :n] = torch.from_numpy(s.state)
        out["row"][i, :n] = torch.from_numpy(np.where(s.row >= 0, s.row + row_offset, -1))
        out["val"][i, :n] = torch.from_numpy(s.val)
        out["scale"][i, :n] = torch.from_numpy(s.scale)
        pad[i, :n] = False
        if s.target_col >= 0:
            target_col[i] = int(smap[s.target_col])
        target_pos[i] = s.target_pos
        edges += [(c + row_offset, p + row_offset) for c, p in s.edges]
        mlm_b += [i] * len(s.mlm)
        mlm_p += s.mlm.tolist()
        row_offset += s.n_rows
    out["pad"] = pad
    schema = sorted(schema_ids, key=schema_ids.__getitem__)
    strings = sorted(string_ids, key=string_ids.__getitem__)
    out["schema_emb"] = torch.from_numpy(encoder.encode(schema))
    out["text_emb"] = torch.from_numpy(encoder.encode(strings)) if strings else torch.zeros(0, encoder.dim)
    out["target_col"], out["target_pos"] = target_col, target_pos
    out["edges"] = torch.tensor(edges, dtype=torch.long).reshape(-1, 2)
    out["n_rows"] = row_offset
    out["mlm"] = (torch.tensor(mlm_b, dtype=torch.long), torch.tensor(mlm_p, dtype=torch.long))
    dev = torch.device(device)
    host: dict[str, Any] = {"gate_index": gate_index(out["col"].numpy(), target_col.numpy(), len(schema))}
    if max_rel_rows is not None:
        host["struct"] = host_structure(out["row"].numpy(), out["edges"].numpy(), row_offset, max_rel_rows)
    out = {k: (v.to(dev) if isinstance(v, torch.Tensor) else v) for k, v in out.items()}
    out.update(to_device(host, dev))
    if "struct" in out:
        out["struct"]["row"] = out["row"]
    return out
