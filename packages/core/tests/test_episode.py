"""Episode / EpisodeBatch: every bad-input class, collate/episodes round trip, padding."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from tabzoo.errors import TabzooInputError
from tabzoo.table import (
    DTypeError,
    EmptyContextError,
    Episode,
    EpisodeBatch,
    InvalidLabelError,
    InvalidTaskError,
    InvalidValueError,
    SchemaMismatchError,
    ShapeError,
    SingleClassError,
    UnseenLabelError,
)


def make(
    n_ctx: int = 6,
    n_q: int = 3,
    f: int = 4,
    task: str = "classification",
    k: int = 3,
    seed: int = 0,
    query_labels: bool = True,
) -> Episode:
    g = torch.Generator().manual_seed(seed)
    xc, xq = torch.randn(n_ctx, f, generator=g), torch.randn(n_q, f, generator=g)
    if task == "classification":
        yc = torch.arange(n_ctx, dtype=torch.float32) % k
        yq = torch.arange(n_q, dtype=torch.float32) % min(k, n_ctx)
    else:
        yc, yq = torch.randn(n_ctx, generator=g), torch.randn(n_q, generator=g)
        k = 0
    return Episode(xc, yc, xq, yq if query_labels else None, task, k)


def test_valid_episode_properties() -> None:
    e = make()
    assert (e.n_context, e.n_query, e.n_features) == (6, 3, 4)
    r = make(task="regression")
    assert r.n_classes == 0
    e.x_context[0, 0] = float("nan")  # NaN features are missing values, allowed
    Episode(e.x_context, e.y_context, e.x_query, e.y_query, e.task, e.n_classes)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("where", ["y_context", "y_query"])
def test_nan_or_inf_labels(bad: float, where: str) -> None:
    for task in ("classification", "regression"):
        e = make(task=task)
        y = getattr(e, where).clone()
        y[1] = bad
        with pytest.raises(InvalidLabelError, match=rf"{where} row 1 is .*labels must be finite"):
            dataclasses.replace(e, **{where: y})


def test_empty_context() -> None:
    e = make()
    with pytest.raises(EmptyContextError, match="no context rows"):
        dataclasses.replace(e, x_context=e.x_context[:0], y_context=e.y_context[:0])


def test_query_with_other_columns_than_context() -> None:
    e = make()
    with pytest.raises(SchemaMismatchError, match="x_query has 5 features but x_context has 4"):
        dataclasses.replace(e, x_query=torch.zeros(3, 5))


def test_single_class() -> None:
    e = make()
    with pytest.raises(SingleClassError, match="only class 1"):
        dataclasses.replace(e, y_context=torch.ones(6), y_query=torch.ones(3))


def test_label_seen_only_in_query() -> None:
    e = make()
    with pytest.raises(
        UnseenLabelError, match="y_query row 2 has class 2, which no context row has"
    ):
        dataclasses.replace(
            e, y_context=torch.tensor([0.0, 1, 0, 1, 0, 1]), y_query=torch.tensor([0.0, 1, 2])
        )


@pytest.mark.parametrize(("label", "msg"), [(0.5, "0.5"), (-1.0, "-1.0"), (3.0, "3.0")])
def test_labels_not_class_indices(label: float, msg: str) -> None:
    e = make()
    y = e.y_context.clone()
    y[2] = label
    with pytest.raises(InvalidLabelError, match=rf"y_context row 2 is {msg}.*0\.\.2"):
        dataclasses.replace(e, y_context=y)


@pytest.mark.parametrize(
    ("task", "k"), [("clf", 2), ("regression", 3), ("classification", 1), ("classification", True)]
)
def test_bad_task(task: str, k: int) -> None:
    e = make()
    with pytest.raises(InvalidTaskError):
        dataclasses.replace(e, task=task, n_classes=k)


def test_wrong_dtypes_shapes_and_inf_features() -> None:
    e = make()
    with pytest.raises(DTypeError, match="must be a torch.Tensor"):
        dataclasses.replace(e, x_context=e.x_context.numpy())
    with pytest.raises(DTypeError, match="floating point"):
        dataclasses.replace(e, x_query=e.x_query.long())
    with pytest.raises(ShapeError, match="2 dimensions"):
        dataclasses.replace(e, x_query=e.x_query[0])
    with pytest.raises(ShapeError, match="y_context has 5 rows"):
        dataclasses.replace(e, y_context=e.y_context[:5])
    with pytest.raises(ShapeError, match="y_query has 2 rows"):
        dataclasses.replace(e, y_query=e.y_query[:2])
    x = e.x_query.clone()
    x[1, 2] = float("inf")
    with pytest.raises(InvalidValueError, match="x_query row 1, feature 2 is inf"):
        dataclasses.replace(e, x_query=x)


def test_categorical_indices_and_codes() -> None:
    e = make()
    xc = e.x_context.clone()
    xc[:, 1] = torch.tensor([0.0, 1, 2, float("nan"), 1, 0])
    xq = e.x_query.clone()
    xq[:, 1] = torch.tensor([0.0, 1, 2])
    ok = dataclasses.replace(e, x_context=xc, x_query=xq, categorical=(1,))
    assert ok.categorical == (1,)
    with pytest.raises(InvalidValueError, match="not a feature index"):
        dataclasses.replace(ok, categorical=(7,))
    with pytest.raises(InvalidValueError, match="repeats"):
        dataclasses.replace(ok, categorical=(1, 1))
    with pytest.raises(InvalidValueError, match="integer codes"):
        dataclasses.replace(ok, categorical=(0,))  # column 0 holds random floats


def test_from_arrays_infers_n_classes() -> None:
    e = Episode.from_arrays([[1.0], [2.0], [3.0]], [0, 2, 1], [[4.0]], [2], task="classification")
    assert e.n_classes == 3 and e.x_context.dtype == torch.float32
    with pytest.raises(TabzooInputError):
        Episode.from_arrays([[1.0]], [0], [[1.0]], task="classification")  # single class


def test_collate_rejects_mixed_batches() -> None:
    with pytest.raises(SchemaMismatchError, match="episode 1 has 5 context rows"):
        EpisodeBatch.collate([make(), make(n_ctx=5)])
    with pytest.raises(SchemaMismatchError, match="batch one task at a time"):
        EpisodeBatch.collate([make(), make(task="regression")])
    with pytest.raises(SchemaMismatchError, match="query labels"):
        EpisodeBatch.collate([make(), make(query_labels=False)])
    with pytest.raises(ShapeError, match="no episodes"):
        EpisodeBatch.collate([])


def test_batch_validation() -> None:
    b = EpisodeBatch.collate([make(n_q=2), make(n_q=4, f=2)])
    with pytest.raises(ShapeError, match="padding entries"):
        x = b.x.clone()
        x[0, -1, 0] = 1.0
        dataclasses.replace(b, x=x)
    with pytest.raises(InvalidLabelError, match=r"episode 1: y row 0 \(context\) is nan"):
        y = b.y.clone()
        y[1, 0] = float("nan")
        dataclasses.replace(b, y=y)
    with pytest.raises(InvalidLabelError, match=r"episode 0: y row 7 \(query\) is 5.0"):
        y = b.y.clone()
        y[0, 7] = 5.0
        dataclasses.replace(b, y=y)
    with pytest.raises(EmptyContextError):
        dataclasses.replace(b, n_context=0)
    with pytest.raises(DTypeError, match="torch.bool"):
        dataclasses.replace(b, row_mask=b.row_mask.float())
    with pytest.raises(ShapeError, match="real entries first"):
        fm = b.feature_mask.clone()
        fm[1] = torch.tensor([False, True, False, False])
        x = b.x.clone()
        x[1, :, 0] = 0
        x[1, :, 1] = 0
        dataclasses.replace(b, feature_mask=fm, x=x)
    with pytest.raises(InvalidTaskError):
        dataclasses.replace(b, n_classes=torch.tensor([1, 3]))


episode_shapes = st.tuples(st.integers(1, 4), st.integers(1, 5), st.booleans())


@settings(max_examples=20, deadline=None)
@given(
    st.integers(2, 6),
    st.lists(episode_shapes, min_size=1, max_size=4),
    st.sampled_from(["classification", "regression"]),
    st.booleans(),
    st.integers(0, 99),
)
def test_collate_episodes_round_trip_and_padding(
    n_ctx: int, shapes: list[tuple[int, int, bool]], task: str, labels: bool, seed: int
) -> None:
    eps = []
    for i, (n_q, f, nan) in enumerate(shapes):
        e = make(n_ctx=n_ctx, n_q=n_q, f=f, task=task, k=2, seed=seed + i, query_labels=labels)
        if nan:
            e.x_query[0, 0] = float("nan")
        eps.append(e)
    b = EpisodeBatch.collate(eps)
    n_rows = n_ctx + max(s[0] for s in shapes)
    n_feat = max(s[1] for s in shapes)
    assert b.x.shape == (len(eps), n_rows, n_feat) and b.x.dtype == torch.float32
    assert b.y.shape == (len(eps), n_rows) and b.n_classes.dtype == torch.long
    for i, e in enumerate(eps):
        real_rows = n_ctx + e.n_query
        assert b.row_mask[i].tolist() == [r < real_rows for r in range(n_rows)]
        assert b.feature_mask[i].tolist() == [c < e.n_features for c in range(n_feat)]
        assert bool((b.x[i, real_rows:] == 0).all()) and bool(
            (b.x[i, :, e.n_features :] == 0).all()
        )
        assert bool((b.y[i, real_rows:] == 0).all())
    assert b.x_context.shape == (len(eps), n_ctx, n_feat)
    assert (b.y_query is None) == (not labels)
    assert b.n_query.tolist() == [s[0] for s in shapes]
    back = b.episodes()
    assert len(back) == len(eps)
    for e, r in zip(eps, back, strict=True):
        assert torch.equal(e.x_context, r.x_context)
        assert torch.allclose(e.x_query, r.x_query, equal_nan=True)
        assert torch.equal(e.y_context, r.y_context)
        assert (r.y_query is None) if not labels else torch.equal(e.y_query, r.y_query)
        assert (r.task, r.n_classes, r.categorical) == (e.task, e.n_classes, e.categorical)


def test_to_device_and_categorical_round_trip() -> None:
    e = make()
    xc, xq = e.x_context.clone(), e.x_query.clone()
    xc[:, 0] = torch.arange(6.0) % 2
    xq[:, 0] = 1.0
    e = dataclasses.replace(e, x_context=xc, x_query=xq, categorical=(0,))
    b = EpisodeBatch.collate([e, make(seed=1)])
    assert b.categorical == ((0,), ())
    moved = b.to("cpu")
    assert moved.device == torch.device("cpu") and torch.equal(moved.x, b.x)
    assert moved.episodes()[0].categorical == (0,)
    assert e.to("cpu").n_context == 6
