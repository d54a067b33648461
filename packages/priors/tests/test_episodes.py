"""EpisodeBatch wrapping, the mixture prior, curriculum and DataLoader streaming."""

import pytest
import torch
from tabzoo.errors import TabzooInputError
from tabzoo_priors import (
    Curriculum,
    EpisodeStream,
    MixturePrior,
    SCMPrior,
    TreeSCMPrior,
    make_dataloader,
)

pytest.importorskip("tabzoo.table", reason="needs the core's tabzoo.table")


@pytest.mark.parametrize("cls", [SCMPrior, TreeSCMPrior])
def test_sample_returns_valid_episode_batch(cls):
    from tabzoo.table import EpisodeBatch

    p = cls(n_rows=(64, 96), n_features=(2, 6), categorical_share=(0.3, 0.5))
    batch = p.sample(4, seed=11)
    assert isinstance(batch, EpisodeBatch)
    assert batch.x.dtype == torch.float32 and batch.row_mask.all()
    eps = batch.episodes()  # validates every episode (classes in context, labels in range ...)
    assert len(eps) == 4
    raw = p.sample_raw(4, seed=11)
    for i, ep in enumerate(eps):
        assert ep.categorical == raw.categorical_indices(i)
        assert ep.x_context.shape[0] == batch.n_context


def test_regression_batch_wraps():
    batch = SCMPrior(task="regression", n_rows=(50, 50)).sample(3, seed=0)
    assert batch.task == "regression" and (batch.n_classes == 0).all()
    assert all(ep.task == "regression" for ep in batch.episodes())


def test_mixture_uses_both_components_deterministically():
    m = MixturePrior(n_rows=(40, 40), n_features=(3, 5))
    chosen = [m.choose(s) for s in range(40)]
    assert set(chosen) == {"scm", "tree_scm"}
    assert 0.45 < chosen.count("scm") / 40 < 0.95
    a, b = m.sample_raw(2, seed=9), m.sample_raw(2, seed=9)
    assert torch.equal(a.x.nan_to_num(-9), b.x.nan_to_num(-9))


def test_mixture_rejects_bad_weights():
    with pytest.raises(TabzooInputError):
        MixturePrior(weights=(1.0,))


def test_orion_curriculum_numbers():
    c = Curriculum.orion_msp()
    s1, s2, s3 = c.stages
    assert (s1.steps, s1.datasets_per_step, s1.micro_batches, s1.rows) == (25_000, 2048, 8, (1024, 1024))
    assert (s2.steps, s2.datasets_per_step, s2.micro_batches, s2.rows) == (2000, 512, 1, (1024, 40_000))
    assert s2.rows_distribution == "log_uniform"
    assert (s3.steps, s3.rows, s3.rows_distribution, s3.trainable) == (50, (40_000, 60_000), "uniform", "icl_only")
    assert s1.micro_batch_size == 256
    assert c.total_steps == 27_050
    stage, step = c.locate(25_000 * 8)
    assert stage.name == "stage2" and step == 25_000


def test_log_uniform_rows_cover_decades():
    stage = Curriculum.orion_msp().stages[1]
    g = torch.Generator().manual_seed(0)
    rows = torch.tensor([stage.sample_rows(g) for _ in range(4000)]).float()
    assert rows.min() >= 1024 and rows.max() <= 40_000
    logs = torch.log(rows)
    # log-uniform: the median sits at the geometric mean, not the arithmetic one
    assert abs(float(logs.median()) - (torch.log(torch.tensor(1024.0 * 40_000)) / 2).item()) < 0.15


def test_stream_follows_scaled_curriculum():
    cur = Curriculum.orion_msp().scaled(steps=0.0004, datasets=1 / 256, rows=1 / 64)
    stream = EpisodeStream(SCMPrior(n_rows=(16, 1000)), seed=0, curriculum=cur, raw=True)
    items = list(stream)
    assert len(items) == cur.total_micro_batches
    first = cur.stages[0]
    assert all(it.x.shape[:2] == (first.micro_batch_size, 16) for it in items[: first.steps * first.micro_batches])
    later = {it.x.shape[1] for it in items[first.steps * first.micro_batches:]}
    assert min(later) >= 16 and max(later) <= 60_000 // 64


def test_dataloader_with_workers_matches_single_process():
    p = SCMPrior(n_rows=(32, 64), n_features=(2, 5))
    single = list(make_dataloader(p, seed=3, batch_size=2, n_batches=6, raw=True))
    multi = list(make_dataloader(p, seed=3, batch_size=2, n_batches=6, num_workers=2, raw=True))
    assert len(single) == len(multi) == 6
    for a, b in zip(single, multi, strict=True):
        assert torch.equal(a.x.nan_to_num(-5), b.x.nan_to_num(-5)) and torch.equal(a.y, b.y)
    assert not torch.equal(single[0].y[:, :4], single[1].y[:, :4]) or single[0].x.shape != single[1].x.shape


def test_stream_resume_is_exact():
    p = SCMPrior(n_rows=(32, 32))
    full = list(EpisodeStream(p, seed=1, batch_size=2, n_batches=5, raw=True))
    resumed = list(EpisodeStream(p, seed=1, batch_size=2, n_batches=2, start=3, raw=True))
    assert torch.equal(full[3].y, resumed[0].y) and torch.equal(full[4].y, resumed[1].y)


def test_dataloader_yields_episode_batches():
    from tabzoo.table import EpisodeBatch

    items = list(make_dataloader(TreeSCMPrior(n_rows=(32, 32)), seed=0, batch_size=2, n_batches=2))
    assert all(isinstance(b, EpisodeBatch) for b in items)
