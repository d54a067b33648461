"""NPT lookup task and synthetic relational databases."""

import numpy as np
import pytest
import torch
from tabzoo.errors import TabzooInputError
from tabzoo_priors import LookupPrior, RelationalPrior
from tabzoo_priors.lookup import VARIANTS
from tabzoo_priors.relational import RelationalConfig, generate_schema_data


@pytest.mark.parametrize("variant", VARIANTS)
def test_lookup_variants(variant):
    b = LookupPrior(n_rows=50, variant=variant).sample(3, seed=0)
    assert b.x.shape == (3, 100, 9) and b.target_mask.sum(1).tolist() == [50, 50, 50]
    twin = b.x.gather(1, b.partner.unsqueeze(-1).expand_as(b.x))
    same = (twin - b.x).abs()
    if "random_features" in variant:
        assert same[..., :6].max() == 0  # matching is possible on the first 6 features only
        assert same[..., 6:].min(dim=1).values.min() > 0  # noise drawn independently
        assert abs(float(b.x[..., 6:].mean()) - 1.0) < 0.2  # N(1, 1)
    else:
        assert same.max() == 0
    twin_y = b.y.gather(1, b.partner)
    diff = (twin_y - b.y)[b.target_mask]
    expected = 1.0 if "add_one" in variant else 0.0
    assert torch.allclose(diff, torch.full_like(diff, expected))
    assert torch.allclose(b.oracle_prediction(), torch.where(b.target_mask, b.y, b.y))
    assert (b.visible_targets()[b.target_mask] == 0).all()
    assert torch.equal(b.partner.gather(1, b.partner), torch.arange(100).expand(3, 100))


def test_lookup_base_data_and_errors():
    X, y = np.random.default_rng(0).normal(size=(300, 5)), np.arange(300.0)
    b = LookupPrior(n_rows=20, base=(X, y), variant="add_one").sample(2, seed=1)
    assert b.x.shape == (2, 40, 5)
    with pytest.raises(TabzooInputError):
        LookupPrior(variant="swap")
    with pytest.raises(TabzooInputError):
        LookupPrior(n_features=3, n_random=3, variant="random_features")


def test_relational_raw_schema_properties():
    cfg = RelationalConfig(n_tables=(4, 5))
    for seed in range(5):
        raw = generate_schema_data(cfg, seed)
        names = list(raw["tables"])
        assert 4 <= len(names) <= 5
        for t, col, ref in raw["foreign_keys"]:
            assert names.index(ref) < names.index(t)  # a DAG in table order
            child, parent = raw["tables"][t], raw["tables"][ref]
            refs = child[col]
            assert refs.min() >= 0 and refs.max() < len(parent["id"])
            assert (child["created_at"] > parent["created_at"][refs]).all()  # children after parents
        for cols in raw["tables"].values():
            assert len(np.unique(cols["id"])) == len(cols["id"])
            assert (np.diff(cols["created_at"].astype(np.int64)) >= 0).all()
    kinds = {k for s in range(10) for ty in generate_schema_data(cfg, s)["types"].values() for k in ty.values()}
    assert kinds == {"numeric", "categorical", "boolean", "datetime", "text"}


def test_relational_database_wrapper():
    pytest.importorskip("tabzoo.table", reason="needs the core's tabzoo.table")
    from tabzoo.table import ColumnType, RelationalDatabase

    db = RelationalPrior(n_tables=(3, 3), root_rows=(10, 30)).sample_database(seed=4)
    assert isinstance(db, RelationalDatabase)
    assert len(db.tables) == 3 and len(db.foreign_keys) >= 2
    assert set(db.time_columns) == set(db.tables)
    types = {t for tbl in db.tables.values() for t in tbl.types.values()}
    assert ColumnType.DATETIME in types and ColumnType.NUMERIC in types
    again = RelationalPrior(n_tables=(3, 3), root_rows=(10, 30)).sample_database(seed=4)
    assert all(db.tables[n].equals(again.tables[n]) for n in db.tables)
