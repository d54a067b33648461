"""Time-causal sampling and serialization: planted future rows and early labels change nothing,
and the same changes made visible (positive controls) do change the output."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.table import RelationalDatabase, Table
from tabzoo_ramba.conformance import SAMPLER, SHOP_TARGET, forward, make_model, shop_database
from tabzoo_ramba.data import to_seconds
from tabzoo_ramba.sampling import SamplerConfig, graph_index, sample_subgraph
from tabzoo_ramba.serialize import MASKED, ColumnStats, serialize


def _with(db, table, column, rows, values):
    data = db.table(table).to_dict()
    types = {k: v.value for k, v in db.table(table).types.items()}
    col = data[column].astype(np.float64)
    col[rows] = values
    data[column] = col
    tables = dict(db.tables)
    tables[table] = Table.from_dict(data, types=types)
    return RelationalDatabase(tables, db.primary_keys, db.foreign_keys, db.time_columns)


def _orders_of_same_customer(db, seed):
    orders = db.table("orders")
    ids, cust = orders.column("order_id"), orders.column("customer_id")
    times = to_seconds(orders.column("time"))
    i = int(np.flatnonzero(ids == seed[1])[0])
    same = np.flatnonzero(cust == cust[i])
    return i, same, times


def _seed_with_history(min_before: int = 2):
    for s in range(40):
        db, seeds = shop_database(s)
        for seed in seeds:
            i, same, times = _orders_of_same_customer(db, seed)
            if (times[same] < times[i] - 2 * 86400).sum() >= min_before:
                return db, seed, i, same, times
    raise AssertionError("no seed with history")


def test_planted_early_label_is_invisible_until_available() -> None:
    """The Relational Transformer issue #13 leak: a label of an EARLIER row whose availability
    time t + horizon is after the seed time must not be read; once available it must be."""
    db, seed, i, same, times = _seed_with_history()
    model = make_model(0)
    t_seed = times[i]
    base = forward(model, db, [seed])
    # an earlier order of the same customer, 1 hour before the seed: label not yet available
    early = int(same[np.argmax(times[same] < t_seed)])
    tab = db.table("orders").to_dict()
    tab["time"] = tab["time"].copy()
    tab["time"][early] = np.datetime64(int(t_seed) - 3600, "s")
    types = {k: v.value for k, v in db.table("orders").types.items()}
    tables = dict(db.tables)
    tables["orders"] = Table.from_dict(tab, types=types)
    db_recent = RelationalDatabase(tables, db.primary_keys, db.foreign_keys, db.time_columns)
    ref = forward(model, db_recent, [seed])
    planted = forward(model, _with(db_recent, "orders", "label", [early], [1e3]), [seed])
    torch.testing.assert_close(planted, ref, rtol=0, atol=0)
    # positive control: an order 2+ days old has its label available, and changing it matters
    old = int(same[np.argmax(times[same] < t_seed - 2 * 86400)])
    changed = forward(model, _with(db, "orders", "label", [old], [1e3]), [seed])
    assert not torch.allclose(changed, base)


def test_planted_future_row_changes_nothing_but_a_past_one_does() -> None:
    db, seed, i, same, times = _seed_with_history()
    model = make_model(1)
    base = forward(model, db, [seed])
    other = int(same[same != i][0])
    data = db.table("orders").to_dict()
    types = {k: v.value for k, v in db.table("orders").types.items()}

    def plant(offset_s: int):
        d = {k: np.concatenate([v, v[[other]]]) for k, v in data.items()}
        d["order_id"][-1] = 999_999
        d["time"][-1] = np.datetime64(int(times[i]) + offset_s, "s")
        d["amount"][-1] = 1e4
        tables = dict(db.tables)
        tables["orders"] = Table.from_dict(d, types=types)
        return RelationalDatabase(tables, db.primary_keys, db.foreign_keys, db.time_columns)

    torch.testing.assert_close(forward(model, plant(60), [seed]), base, rtol=0, atol=0)
    assert not torch.allclose(forward(model, plant(-60), [seed]), base)


def test_filter_by_time_before_subsampling_children() -> None:
    """A burst of children later than the seed must not displace the past ones under the budget."""
    db, seed, i, same, times = _seed_with_history()
    idx = graph_index(db)
    cfg = SamplerConfig(n_child=2, max_expansions=4, max_rows=30)
    cust = db.table("orders").column("customer_id")[i]
    sub = sample_subgraph(idx, "customers", int(cust), seed[2], lookback_s=1e9, config=cfg)
    kids = [r for t, r in sub.nodes if t == "orders"]
    assert kids and all(times[r] <= times[i] for r in kids)
    data = db.table("orders").to_dict()
    n_extra = 10
    d = {k: np.concatenate([v, np.repeat(v[[i]], n_extra)]) for k, v in data.items()}
    d["order_id"][-n_extra:] = 10**6 + np.arange(n_extra)
    d["time"][-n_extra:] = np.datetime64(int(times[i]) + 3600, "s")
    tables = dict(db.tables)
    tables["orders"] = Table.from_dict(d, types={k: v.value for k, v in db.table("orders").types.items()})
    db2 = RelationalDatabase(tables, db.primary_keys, db.foreign_keys, db.time_columns)
    sub2 = sample_subgraph(graph_index(db2), "customers", int(cust), seed[2], lookback_s=1e9, config=cfg)
    kids2 = [(t, r) for t, r in sub2.nodes if t == "orders"]
    assert [r for _, r in kids2] == kids


def test_lookback_window_and_budget() -> None:
    db, seed, i, same, times = _seed_with_history()
    idx = graph_index(db)
    cust = int(db.table("orders").column("customer_id")[i])
    sub = sample_subgraph(idx, "customers", cust, seed[2], lookback_s=86400.0,
                          config=SamplerConfig(n_child=50, max_rows=100))
    for t, r in sub.nodes:
        if t == "orders":
            assert times[i] - 86400 <= times[r] <= times[i]
    sub = sample_subgraph(idx, "orders", seed[1], seed[2], lookback_s=1e9, config=SamplerConfig(max_rows=3))
    assert len(sub.nodes) <= 3 and sub.nodes[0] == ("orders", i)


@given(seed=st.integers(0, 10_000), perm_seed=st.integers(0, 10_000))
def test_serialization_ignores_stored_row_order(seed: int, perm_seed: int) -> None:
    db, seeds = shop_database(seed)
    rng = np.random.default_rng(perm_seed)
    shuffled = RelationalDatabase({n: t.take(rng.permutation(t.n_rows)) for n, t in db.tables.items()},
                                  db.primary_keys, db.foreign_keys, db.time_columns)
    for d in (db, shuffled):
        idx = graph_index(d)
        t = int(to_seconds(seeds[0][2]))
        sub = sample_subgraph(idx, *seeds[0], lookback_s=1e7, config=SAMPLER)
        seq = serialize(d, idx, sub, ColumnStats.fit(d, idx, t, SHOP_TARGET), SHOP_TARGET)
        keyed = [(seq.schema[c], k, round(float(v), 5), s) for c, k, v, s in
                 zip(seq.col, seq.kind, seq.val[:, 0], seq.state, strict=True)]
        if d is db:
            first = (keyed, seq.edges, [seq.strings[x] if x >= 0 else None for x in seq.text])
        else:
            assert (keyed, seq.edges, [seq.strings[x] if x >= 0 else None for x in seq.text]) == first


def test_seed_target_and_unavailable_labels_are_masked() -> None:
    db, seeds = shop_database(3)
    idx = graph_index(db)
    t = int(to_seconds(seeds[-1][2]))
    sub = sample_subgraph(idx, *seeds[-1], lookback_s=1e9, config=SamplerConfig(n_child=50, max_rows=200))
    seq = serialize(db, idx, sub, ColumnStats.fit(db, idx, t, SHOP_TARGET), SHOP_TARGET)
    col = seq.schema.index("orders : label")
    otimes = to_seconds(db.table("orders").column("time"))
    for pos in np.flatnonzero((seq.col == col) & (seq.row >= 0)):
        tab, r = sub.nodes[seq.row[pos]]
        hidden = seq.row[pos] == 0 or otimes[r] + 86400 > t
        assert (seq.state[pos] == MASKED) == hidden
    assert seq.state[seq.target_pos] == MASKED and seq.row[seq.target_pos] == 0


def test_hidden_columns_follow_their_own_later_horizon() -> None:
    """A target known after 1 day with an outcome column known after 5: between the two, the
    label of an earlier row is read and its outcome column is still masked."""
    from tabzoo_ramba.serialize import OBSERVED, TargetSpec

    target = TargetSpec("orders", "label", 86400.0, ("amount",), {"amount": 5 * 86400.0})
    db, seeds = shop_database(3)
    idx = graph_index(db)
    t = int(to_seconds(seeds[-1][2]))
    sub = sample_subgraph(idx, *seeds[-1], lookback_s=1e9, config=SamplerConfig(n_child=50, max_rows=200))
    seq = serialize(db, idx, sub, ColumnStats.fit(db, idx, t, target), target)
    otimes = to_seconds(db.table("orders").column("time"))
    seen = set()
    for name, horizon in (("orders : label", 86400), ("orders : amount", 5 * 86400)):
        col = seq.schema.index(name)
        for pos in np.flatnonzero((seq.col == col) & (seq.row >= 0)):
            r = sub.nodes[seq.row[pos]][1]
            hidden = seq.row[pos] == 0 or otimes[r] + horizon > t
            assert (seq.state[pos] == MASKED) == hidden
            seen.add((name, bool(seq.state[pos] == OBSERVED)))
    assert ("orders : amount", True) in seen and ("orders : label", True) in seen


def test_stats_use_only_data_before_cutoff() -> None:
    db, seeds = shop_database(5)
    idx = graph_index(db)
    cut = int(to_seconds(seeds[0][2]))
    before = ColumnStats.fit(db, idx, cut, SHOP_TARGET)
    late = np.flatnonzero(to_seconds(db.table("orders").column("time")) > cut)
    db2 = _with(db, "orders", "amount", late, 1e6)
    db2 = _with(db2, "orders", "label", late, 1e6)
    after = ColumnStats.fit(db2, graph_index(db2), cut, SHOP_TARGET)
    assert before.stats == after.stats


def test_bad_seeds() -> None:
    db, seeds = shop_database(0)
    idx = graph_index(db)
    with pytest.raises(TabzooInputError, match="no such primary key"):
        sample_subgraph(idx, "orders", -5, seeds[0][2], lookback_s=10.0)
    with pytest.raises(TabzooInputError, match="after the seed time"):
        sample_subgraph(idx, "orders", seeds[0][1], seeds[0][2] - np.timedelta64(9, "D"), lookback_s=10.0)
    with pytest.raises(TabzooInputError):
        SamplerConfig(n_child=-1)
