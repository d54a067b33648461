"""Hypothesis strategies for tabzoo data: typed tables with missing values, episodes, episode
batches, multi-target tables and relational databases with timestamps.

hypothesis is imported when a strategy is built, not when this module is imported, so the kit
runs without it. Sizes are small by default so property tests stay fast::

    from hypothesis import given
    from tabzoo.testing import strategies as tzst

    @given(tzst.episodes(task="classification"))
    def test_my_model_accepts_any_episode(ep): ...
"""

from __future__ import annotations

from typing import Any

COLUMN_TYPES = ("numeric", "categorical", "boolean", "datetime", "text")
_EPOCH_2024 = 1_704_067_200  # 2024-01-01T00:00:00Z in seconds


def _st() -> Any:
    import hypothesis.strategies as st

    return st


def column_values(ctype: str, n_rows: int, missing: bool = True) -> Any:
    """A strategy for one column ``[n_rows]`` of type ``ctype`` as a numpy array (missing:
    NaN for numeric, NaT for datetime, None otherwise)."""
    import numpy as np

    st = _st()
    element = {
        "numeric": st.floats(-1e6, 1e6, allow_nan=False, width=32),
        "categorical": st.sampled_from(["a", "b", "c", "d"]),
        "boolean": st.booleans(),
        "datetime": st.integers(_EPOCH_2024 - 10**8, _EPOCH_2024 + 10**8),
        "text": st.text(alphabet="abcdefgh ", min_size=1, max_size=12),
    }[ctype]
    cell = st.one_of(st.none(), element) if missing else element

    def build(values: list[Any]) -> Any:
        if ctype == "numeric":
            return np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        if ctype == "datetime":
            return np.array(["NaT" if v is None else np.datetime64(v, "s") for v in values], dtype="datetime64[s]")
        return np.array(values, dtype=object)

    return st.lists(cell, min_size=n_rows, max_size=n_rows).map(build)


def tables(
    *,
    min_rows: int = 1,
    max_rows: int = 12,
    min_columns: int = 1,
    max_columns: int = 6,
    types: tuple[str, ...] = COLUMN_TYPES,
    missing: bool = True,
) -> Any:
    """A strategy for :class:`~tabzoo.table.Table` with columns of ``types`` and missing values."""
    st = _st()

    @st.composite
    def build(draw: Any) -> Any:
        from tabzoo.table import Table

        n_rows = draw(st.integers(min_rows, max_rows))
        kinds = draw(st.lists(st.sampled_from(types), min_size=min_columns, max_size=max_columns))
        data = {f"c{i}_{k}": draw(column_values(k, n_rows, missing)) for i, k in enumerate(kinds)}
        return Table.from_dict(data, types={name: name.split("_", 1)[1] for name in data})

    return build()


def episodes(
    *,
    task: str | None = None,
    max_context: int = 16,
    max_query: int = 6,
    max_features: int = 5,
    max_classes: int = 4,
    missing: bool = True,
) -> Any:
    """A strategy for valid :class:`~tabzoo.table.Episode` objects (classification: every class
    occurs in the context and query labels are seen in it; features may be NaN)."""
    st = _st()

    @st.composite
    def build(draw: Any) -> Any:
        import torch

        from tabzoo.table import Episode

        kind = task or draw(st.sampled_from(["classification", "regression"]))
        n_classes = draw(st.integers(2, max_classes)) if kind == "classification" else 0
        n_context = draw(st.integers(max(2, n_classes), max(max_context, n_classes)))
        n_query = draw(st.integers(1, max_query))
        n_features = draw(st.integers(1, max_features))
        seed = draw(st.integers(0, 2**31 - 1))
        g = torch.Generator().manual_seed(seed)
        x = torch.randn(n_context + n_query, n_features, generator=g)
        if missing and draw(st.booleans()):
            x[torch.rand(x.shape, generator=g) < 0.1] = float("nan")
        if n_classes:
            y = torch.randint(0, n_classes, (n_context + n_query,), generator=g).float()
            y[:n_classes] = torch.arange(n_classes, dtype=torch.float32)
        else:
            y = torch.randn(n_context + n_query, generator=g)
        return Episode(x[:n_context], y[:n_context], x[n_context:], y[n_context:], kind, n_classes)

    return build()


def episode_batches(*, max_batch: int = 3, **episode_kw: Any) -> Any:
    """A strategy for :class:`~tabzoo.table.EpisodeBatch` (episodes share ``n_context`` and task)."""
    st = _st()

    @st.composite
    def build(draw: Any) -> Any:
        from tabzoo.table import EpisodeBatch

        first = draw(episodes(**episode_kw))
        n_context = first.x_context.shape[0]
        rest = draw(st.lists(
            episodes(**{**episode_kw, "task": first.task}).filter(lambda e: e.x_context.shape[0] == n_context),
            max_size=max_batch - 1,
        ))
        return EpisodeBatch.collate([first, *rest])

    return build()


def multi_target_tables(*, max_rows: int = 12, max_features: int = 4, max_targets: int = 3) -> Any:
    """A strategy for :class:`~tabzoo.table.MultiTargetTable`: mixed-type features, 1..max_targets
    numeric, categorical or boolean targets (with missing values)."""
    st = _st()

    @st.composite
    def build(draw: Any) -> Any:
        from tabzoo.table import MultiTargetTable, Table

        n_rows = draw(st.integers(1, max_rows))
        features = draw(tables(min_rows=n_rows, max_rows=n_rows, max_columns=max_features))
        kinds = draw(st.lists(st.sampled_from(["numeric", "categorical", "boolean"]), min_size=1, max_size=max_targets))
        data = {f"t{i}_{k}": draw(column_values(k, n_rows)) for i, k in enumerate(kinds)}
        targets = Table.from_dict(data, types={name: name.split("_", 1)[1] for name in data})
        return MultiTargetTable(features, targets)

    return build()


def relational_databases(*, max_tables: int = 3, max_rows: int = 10) -> Any:
    """A strategy for :class:`~tabzoo.table.RelationalDatabase`: a random tree of tables, each
    child with a foreign key to an earlier table, a datetime time column and typed cells."""
    st = _st()

    @st.composite
    def build(draw: Any) -> Any:
        import numpy as np

        from tabzoo.table import ForeignKey, RelationalDatabase, Table

        n_tables = draw(st.integers(1, max_tables))
        tables_, pks, fks, times = {}, {}, [], {}
        sizes: list[int] = []
        for i in range(n_tables):
            n = draw(st.integers(1, max_rows))
            name = f"t{i}"
            data: dict[str, Any] = {"id": np.arange(n), "time": np.sort(draw(column_values("datetime", n, False)))}
            types = {"time": "datetime"}
            if i:
                parent = draw(st.integers(0, i - 1))
                data["parent_id"] = np.array(draw(st.lists(st.integers(0, sizes[parent] - 1), min_size=n, max_size=n)))
                fks.append(ForeignKey(name, "parent_id", f"t{parent}"))
            for j, kind in enumerate(draw(st.lists(st.sampled_from(["numeric", "categorical", "boolean"]), max_size=3))):
                data[f"v{j}"] = draw(column_values(kind, n))
                types[f"v{j}"] = kind
            tables_[name], pks[name], times[name] = Table.from_dict(data, types=types), "id", "time"
            sizes.append(n)
        return RelationalDatabase(tables_, primary_keys=pks, foreign_keys=fks, time_columns=times)

    return build()
