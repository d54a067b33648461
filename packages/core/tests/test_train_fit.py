"""tabzoo.train.fit: the per-dataset training loop (steps and epochs, early stopping with best-weight
restore, seeds, lazy batches, checkpoint/resume, progress bar, config errors)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from tabzoo.errors import TabzooInputError
from tabzoo.train.fit import Evaluation, FitConfig, FitState, fit


class LinearTask:
    """``y = x @ w`` on 40 rows, shuffled minibatches of 8 from a seeded generator."""

    def __init__(self, seed: int = 0) -> None:
        g = torch.Generator().manual_seed(123)
        self.x = torch.randn(40, 3, generator=g)
        self.y = self.x @ torch.tensor([1.0, -2.0, 0.5])
        self.g = torch.Generator().manual_seed(seed)
        self.pulled = 0

    def batches(self, epoch: int) -> Iterator[torch.Tensor]:
        perm = torch.randperm(40, generator=self.g)
        for b in range(5):
            self.pulled += 1
            yield perm[b * 8:(b + 1) * 8]

    def loss(self, model: torch.nn.Module, batch: torch.Tensor, step: int) -> torch.Tensor:
        return ((model(self.x[batch])[:, 0] - self.y[batch]) ** 2).mean()

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"g": self.g.get_state()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        self.g.set_state(state["g"])


def _model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(3, 8), torch.nn.Dropout(0.1), torch.nn.Linear(8, 1))


def _weights(model: torch.nn.Module) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def test_fit_learns_is_seeded_and_leaves_the_callers_rng_alone() -> None:
    cfg = FitConfig(max_epochs=30, lr=3e-2, seed=4)
    before = torch.random.get_rng_state()
    m1, m2 = _model(), _model()
    torch.random.set_rng_state(before)
    res = fit(m1, LinearTask(), cfg)
    assert torch.equal(torch.random.get_rng_state(), before)
    assert res.epochs == 30 and res.steps == 150 and len(res.epoch_losses) == 30
    assert res.epoch_losses[-1] < 0.2 * res.epoch_losses[0]
    assert not m1.training and res.best is None
    fit(m2, LinearTask(), cfg)
    assert all(torch.equal(a, b) for a, b in zip(_weights(m1), _weights(m2), strict=True))


def test_max_steps_stops_mid_epoch_without_pulling_more_batches() -> None:
    task = LinearTask()
    res = fit(_model(), task, FitConfig(max_steps=7))
    assert res.steps == 7 and res.epochs == 2 and task.pulled == 7 and len(res.losses) == 7


def test_early_stopping_restores_the_best_weights_and_counts_patience() -> None:
    model, seen = _model(), []
    scores = iter([3.0, 2.0, float("nan"), 2.5, 2.0, 9.0, 1.0])

    def validate(m: torch.nn.Module) -> Evaluation:
        assert not m.training
        seen.append(_weights(m))
        return Evaluation(next(scores), {"val_loss": -1.0, "extra": len(seen)})

    res = fit(model, LinearTask(), FitConfig(max_epochs=50, patience=3, lr=1e-2), validate=validate)
    # epochs 0..4 validated; the best (2.0) is epoch 1; NaN, 2.5 and 2.0 (not below it) exhaust patience 3
    assert res.stopped_early and res.epochs == 5 and res.best_epoch == 1 and res.best_step == 10
    assert all(torch.equal(a, b) for a, b in zip(_weights(model), seen[1], strict=True))
    assert res.history[1] == {"epoch": 1, "train_loss": res.epoch_losses[1], "val_loss": -1.0, "extra": 2}
    assert res.val_losses[0] == (5, 3.0)


def test_a_validator_can_say_itself_whether_it_improved() -> None:
    # e.g. one snapshot per task: the loop keeps the weights of the last evaluation that improved on
    # any of them and counts patience by ``improved``, whatever ``loss`` says
    model, seen = _model(), []
    flags = iter([True, False, True, False, False])

    def validate(m: torch.nn.Module) -> Evaluation:
        seen.append(_weights(m))
        return Evaluation(float(len(seen)), improved=next(flags))  # a rising loss: never better by itself

    res = fit(model, LinearTask(), FitConfig(max_epochs=50, patience=2, lr=1e-2), validate=validate)
    assert res.stopped_early and res.epochs == 5 and res.best_epoch == 2
    assert all(torch.equal(a, b) for a, b in zip(_weights(model), seen[2], strict=True))
    # improved=None compares the loss as before
    plain = fit(_model(), LinearTask(), FitConfig(max_epochs=50, patience=2, lr=1e-2),
                validate=lambda m: Evaluation(1.0, improved=None))
    assert plain.epochs == 3 and plain.best_epoch == 0


def test_min_steps_holds_the_early_stop_but_keeps_the_best_weights() -> None:
    scores = iter([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0])
    cfg = FitConfig(max_steps=40, eval_every=5, patience=2, min_steps=30, lr=1e-2)
    res = fit(_model(), LinearTask(), cfg, validate=lambda m: next(scores))
    # patience 2 is exhausted at step 15, but no stop before step 30; the best stays step 5
    assert res.stopped_early and res.steps == 30 and res.best_step == 5
    held = fit(_model(), LinearTask(), FitConfig(max_steps=40, eval_every=5, patience=2, lr=1e-2),
               validate=lambda m: 1.0 + m[0].weight.abs().sum().item() * 0)
    assert held.stopped_early and held.steps == 15


def test_step_validation_every_k_steps_and_at_the_last_step() -> None:
    res = fit(_model(), LinearTask(), FitConfig(max_steps=12, eval_every=5), validate=lambda m: 1.0)
    assert [s for s, _ in res.val_losses] == [5, 10, 12]


def test_checkpoint_and_resume_continue_exactly() -> None:
    cfg = FitConfig(max_epochs=6, lr=1e-2, seed=2, checkpoint_every=2)
    states: list[FitState] = []
    full = _model()
    res_full = fit(full, LinearTask(seed=1), cfg, validate=lambda m: 0.5, checkpoint=states.append)
    assert [s.epoch for s in states] == [2, 4]
    resumed = _model()
    res = fit(resumed, LinearTask(seed=99), cfg, validate=lambda m: 0.5, resume=states[0])
    assert res.losses == res_full.losses and res.epochs == 6
    assert all(torch.equal(a, b) for a, b in zip(_weights(full), _weights(resumed), strict=True))


def test_a_saved_state_resumes_exactly(tmp_path: Path) -> None:
    from tabzoo.checkpoint import load_state, save_state

    cfg = FitConfig(max_epochs=5, lr=1e-2, seed=4, checkpoint_every=2, optimizer="lamb", lookahead_k=2)
    states: list[FitState] = []
    full = _model()
    res_full = fit(full, LinearTask(seed=1), cfg, validate=lambda m: Evaluation(0.5, {"auc": [0.1]}),
                   checkpoint=states.append)
    save_state(tmp_path / "state", states[0].to_dict())
    back = FitState.from_dict(load_state(tmp_path / "state"))
    assert back.result == states[0].result and back.epoch == 2
    resumed = _model()
    res = fit(resumed, LinearTask(seed=99), cfg, validate=lambda m: Evaluation(0.5, {"auc": [0.1]}), resume=back)
    assert res.losses == res_full.losses and res.best == res_full.best
    assert all(torch.equal(a, b) for a, b in zip(_weights(full), _weights(resumed), strict=True))


def test_lamb_lookahead_flat_cosine_runs_to_lr_zero() -> None:
    model = _model()
    cfg = FitConfig(max_steps=10, optimizer="lamb", lookahead_k=3, schedule="flat_cosine", flat_fraction=0.5)
    res = fit(model, LinearTask(), cfg)
    assert res.steps == 10


def test_cosine_schedule_fits_like_flat_cosine_at_zero() -> None:
    """The ``"cosine"`` name trains exactly as ``"flat_cosine"`` with ``flat_fraction=0``."""
    runs = []
    for kw in ({"schedule": "cosine"}, {"schedule": "flat_cosine", "flat_fraction": 0.0}):
        model = _model()
        res = fit(model, LinearTask(), FitConfig(max_steps=10, optimizer="adamw", **kw))  # type: ignore[arg-type]
        runs.append((res.losses, _weights(model)))
    assert runs[0][0] == runs[1][0]
    assert all(torch.equal(a, b) for a, b in zip(runs[0][1], runs[1][1], strict=True))


def test_progress_bar_is_switchable(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tqdm", reason="the progress bar needs tqdm (tabzoo-core[progress])")
    fit(_model(), LinearTask(), FitConfig(max_steps=3, desc="tiny fit"))
    assert "tiny fit" not in capsys.readouterr().err
    fit(_model(), LinearTask(), FitConfig(max_steps=3, desc="tiny fit", progress=True))
    assert "tiny fit" in capsys.readouterr().err


@pytest.mark.parametrize("kwargs, match", [
    ({}, "max_steps or max_epochs"),
    ({"max_steps": 0}, "max_steps=0"),
    ({"max_epochs": 2, "optimizer": "sgd"}, "optimizer='sgd'"),
    ({"max_epochs": 2, "schedule": "flat_cosine"}, "needs max_steps"),
    ({"max_epochs": 2, "schedule": "cosine"}, "needs max_steps"),
    ({"max_epochs": 2, "schedule": "linear"}, "schedule='linear'"),
    ({"max_epochs": 2, "patience": 0}, "patience=0"),
])
def test_bad_configs_say_what_to_change(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(TabzooInputError, match=match):
        fit(_model(), LinearTask(), FitConfig(**kwargs))  # type: ignore[arg-type]
