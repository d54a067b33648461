"""Time-causal subgraph sampling: width-limited BFS with foreign-key priority (paper Algorithm 1).

From a seed row ``r*`` at time ``t*``:

* foreign-key parents are always included (their expansion has priority over children's), unless
  they are timed and later than ``t*``;
* children of an expanded row are first FILTERED by time, ``t* - lookback <= t <= t*`` (rows of
  untimed tables pass), and only then subsampled to ``n_child``, so a burst of future rows can
  never crowd out, or stand in for, past ones;
* nothing later than ``t*`` enters; ``max_expansions`` bounds the expanded rows (the paper's K)
  and ``max_rows`` the rows in the subgraph.

Subsampling is deterministic and independent of the stored row order: children are ranked by a
canonical key (time, then primary key, or the row's content for tables without one) and the
most recent ``n_child`` are kept (``policy="recent"``), or the first ``n_child`` by a seeded hash
of that key (``policy="hash"``, for training-time variety).

``policy="known"`` keeps the children whose OUTCOME is known at ``t*`` first: for a table named
in ``known_after`` (``{table: seconds}``, e.g. the task's entity table and the earliest horizon
of its label columns), a child at time ``t`` is known when ``t + seconds <= t*``; the most
recent known children come first and the most recent not-yet-known ones fill what is left of
``n_child``. With ``"recent"`` the ``n_child`` most recent children of a busy parent are often
all inside the horizon, so their labels are masked and the context holds few outcomes. The
choice reads only times, never a label value, so it stays time-causal (a row later than
``t*`` is filtered out before, and a label's value cannot move which rows are picked).
"""

from __future__ import annotations

import hashlib
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from tabzoo.errors import TabzooInputError

from tabzoo_ramba.data import to_seconds

__all__ = ["DEFAULT_SAMPLER", "GraphIndex", "Subgraph", "SamplerConfig", "sample_subgraph", "graph_index"]


@dataclass(frozen=True)
class SamplerConfig:
    """Sampling budget: ``n_child`` children per expanded row, ``max_expansions`` expanded rows,
    ``max_rows`` rows in all, ``policy`` of the child subsample (``"recent"``, ``"hash"`` or
    ``"known"``: see the module doc)."""

    n_child: int = 16
    max_expansions: int = 8
    max_rows: int = 96
    policy: Literal["recent", "hash", "known"] = "recent"
    sample_seed: int = 0

    def __post_init__(self) -> None:
        if self.n_child < 0 or self.max_expansions < 1 or self.max_rows < 1:
            raise TabzooInputError(f"sampler budget {self}: need n_child >= 0, max_expansions >= 1, max_rows >= 1")
        if self.policy not in ("recent", "hash", "known"):
            raise TabzooInputError(f"sampler policy {self.policy!r}; use 'recent', 'hash' or 'known'")


DEFAULT_SAMPLER = SamplerConfig()


def _canonical_keys(table: Any, pk: str | None) -> list[str]:
    if pk is not None:
        col = table.column(pk)
        return [repr(v.item() if hasattr(v, "item") else v) for v in col]
    data = table.to_dict()
    names = sorted(data)
    return ["|".join(repr(data[c][i]) for c in names) for i in range(table.n_rows)]


class GraphIndex:
    """Row-level index of a database: key lookups, parent pointers, time-sorted child lists and a
    canonical rank per row (``rank[table][row]``: order by (time, key), stored-order free)."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.tables = list(db.table_names)
        self.times: dict[str, np.ndarray | None] = {}
        self.rank: dict[str, np.ndarray] = {}
        self.key_of_row: dict[str, list[str]] = {}
        self.row_of_key: dict[str, dict[Any, int]] = {}
        for name in self.tables:
            t = db.table(name)
            ts = db.timestamps(name)
            self.times[name] = None if ts is None else to_seconds(ts)
            keys = _canonical_keys(t, db.primary_key(name))
            self.key_of_row[name] = keys
            tkey = self.times[name] if self.times[name] is not None else np.zeros(t.n_rows, dtype=np.int64)
            order = sorted(range(t.n_rows), key=lambda i, tk=tkey, k=keys: (int(tk[i]), k[i]))
            rank = np.empty(t.n_rows, dtype=np.int64)
            rank[np.asarray(order, dtype=np.int64)] = np.arange(t.n_rows)
            self.rank[name] = rank
            pk = db.primary_key(name)
            if pk is not None:
                self.row_of_key[name] = {(v.item() if hasattr(v, "item") else v): i for i, v in enumerate(t.column(pk))}
        # parents: fk -> parent row per child row (-1 = none); children: fk -> rows sorted canonically
        # canonical order, so a database read back from SQLite (which lists keys in another order) samples alike
        self.fks = sorted(db.foreign_keys, key=lambda f: (f.table, f.column, f.ref_table, f.ref_column or ""))
        self.parent_rows: list[np.ndarray] = []
        self.child_lists: list[dict[int, np.ndarray]] = []
        for fk in self.fks:
            child, parent = db.table(fk.table), db.table(fk.ref_table)
            ref = parent.column(fk.ref_column)
            lookup = {(v.item() if hasattr(v, "item") else v): i for i, v in enumerate(ref)}
            vals = child.column(fk.column)
            miss = child.missing[:, child.names.index(fk.column)]
            prow = np.full(child.n_rows, -1, dtype=np.int64)
            for i, v in enumerate(vals):
                if not miss[i]:
                    prow[i] = lookup.get(v.item() if hasattr(v, "item") else v, -1)
            self.parent_rows.append(prow)
            lists: dict[int, list[int]] = {}
            for i in np.argsort(self.rank[fk.table], kind="stable"):
                if prow[i] >= 0:
                    lists.setdefault(int(prow[i]), []).append(int(i))
            self.child_lists.append({p: np.asarray(v, dtype=np.int64) for p, v in lists.items()})

    def row(self, table: str, key: Any) -> int:
        """Row index of primary key ``key`` in ``table``."""
        try:
            return self.row_of_key[table][key.item() if hasattr(key, "item") else key]
        except KeyError:
            raise TabzooInputError(
                f"seed ({table!r}, {key!r}): no such primary key in {table!r}; seeds name existing rows") from None

    def time(self, table: str, row: int) -> int | None:
        ts = self.times[table]
        return None if ts is None else int(ts[row])


_INDEX: weakref.WeakKeyDictionary[Any, GraphIndex] = weakref.WeakKeyDictionary()


def graph_index(db: Any) -> GraphIndex:
    """The (cached) :class:`GraphIndex` of ``db``."""
    idx = _INDEX.get(db)
    if idx is None:
        idx = GraphIndex(db)
        _INDEX[db] = idx
    return idx


@dataclass
class Subgraph:
    """Sampled rows ``nodes[i] = (table, row)`` (``nodes[0]`` is the seed) and FK edges
    ``(child node, parent node)``; ``seed_time`` in epoch seconds."""

    nodes: list[tuple[str, int]]
    edges: list[tuple[int, int]]
    seed_time: int


def _hash_rank(seed: int, table: str, keys: list[str], rows: np.ndarray) -> np.ndarray:
    h = [int.from_bytes(hashlib.blake2b(f"{seed}|{table}|{keys[r]}".encode(), digest_size=8).digest(), "little")
         for r in rows.tolist()]
    return np.argsort(np.asarray(h, dtype=np.uint64), kind="stable")


def _known_first(cands: np.ndarray, times: np.ndarray, known_by: int, n: int) -> np.ndarray:
    """The children to add under ``policy="known"``, in the order they are added: of ``cands``
    (canonical order, the most recent last) those with ``times <= known_by``, most recent first,
    then the others, most recent first; ``n`` in all."""
    known = times[cands] <= known_by
    first = cands[known][::-1][:n]
    return np.concatenate([first, cands[~known][::-1][:n - len(first)]])


def sample_subgraph(index: GraphIndex, table: str, key: Any, seed_time: Any, *, lookback_s: float,
                    config: SamplerConfig = DEFAULT_SAMPLER, known_after: dict[str, float] | None = None) -> Subgraph:
    """Algorithm 1 for the seed row ``(table, key)`` at ``seed_time`` (datetime64).

    :param known_after: ``{table: seconds}``: when a row's outcome is known (``t + seconds``),
        read by ``policy="known"`` only (tables not named: every row counts as known)."""
    r0 = index.row(table, key)
    t_star = int(to_seconds(np.datetime64(seed_time)))
    t_min = t_star - int(lookback_s)
    own = index.time(table, r0)
    if own is not None and own > t_star:
        raise TabzooInputError(
            f"seed ({table!r}, {key!r}) has time {np.datetime64(own, 's')} after the seed time "
            f"{np.datetime64(t_star, 's')}; a row can only be predicted at or after its own time")
    node_of: dict[tuple[str, int], int] = {(table, r0): 0}
    nodes: list[tuple[str, int]] = [(table, r0)]
    edges: set[tuple[int, int]] = set()
    fk_front: deque[int] = deque([0])
    child_front: deque[int] = deque()
    expansions = 0

    def visible(tab: str, row: int) -> bool:
        t = index.time(tab, row)
        return t is None or t <= t_star

    def add(tab: str, row: int) -> tuple[int, bool]:
        got = node_of.get((tab, row))
        if got is not None:
            return got, False
        if len(nodes) >= config.max_rows:
            return -1, False
        node_of[(tab, row)] = len(nodes)
        nodes.append((tab, row))
        return len(nodes) - 1, True

    while (fk_front or child_front) and expansions < config.max_expansions:
        n = fk_front.popleft() if fk_front else child_front.popleft()
        tab, row = nodes[n]
        for j, fk in enumerate(index.fks):
            if fk.table != tab:
                continue
            p = int(index.parent_rows[j][row])
            if p < 0 or not visible(fk.ref_table, p):
                continue
            m, new = add(fk.ref_table, p)
            if m >= 0:
                edges.add((n, m))
                if new:
                    fk_front.append(m)
        for j, fk in enumerate(index.fks):
            if fk.ref_table != tab or config.n_child == 0:
                continue
            cands = index.child_lists[j].get(row)
            if cands is None or len(cands) == 0:
                continue
            ts = index.times[fk.table]
            if ts is not None:  # filter by time FIRST: inside [t* - lookback, t*]
                ct = ts[cands]
                cands = cands[(ct <= t_star) & (ct >= t_min)]
            if config.policy == "known" and ts is not None and known_after and fk.table in known_after:
                order = _known_first(cands, ts, t_star - int(np.ceil(known_after[fk.table])), config.n_child)
            else:
                if len(cands) > config.n_child:
                    if config.policy == "hash":
                        cands = np.sort(cands[_hash_rank(config.sample_seed, fk.table, index.key_of_row[fk.table],
                                                         cands)[:config.n_child]])
                        cands = cands[np.argsort(index.rank[fk.table][cands], kind="stable")]
                    else:  # "recent" (and "known" for a table without an outcome horizon)
                        cands = cands[-config.n_child:]  # canonical order: the most recent last
                order = cands[::-1]  # most recent first
            for c in order.tolist():
                m, new = add(fk.table, int(c))
                if m >= 0:
                    edges.add((m, n))
                    if new:
                        child_front.append(m)
        expansions += 1
    return Subgraph(nodes, sorted(edges), t_star)
