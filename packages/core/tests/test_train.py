"""Pretraining loop: schedule, loss masking, checkpoints, in-process resume, errors."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
from _icl_testmodel import BlobsPrior, KernelICL, build
from tabzoo.checkpoint import load_checkpoint, load_model
from tabzoo.errors import TabzooInputError
from tabzoo.plugins import ArchitectureSpec, PluginRecord, PluginRegistry, PriorSpec
from tabzoo.train import (
    PretrainConfig,
    WarmupCosine,
    batch_seed,
    episode_loss,
    load_history,
    load_latest,
    model_inputs,
    pretrain,
)

FAST = {"progress": False, "plot": False, "lr": 0.05, "batch_size": 4}


def test_warmup_cosine_shape() -> None:
    f = WarmupCosine(total_steps=100, warmup_steps=10, min_ratio=0.1)
    warm = [f(s) for s in range(10)]
    assert all(a < b for a, b in zip(warm, warm[1:], strict=False)) and warm[0] > 0
    assert f(10) == pytest.approx(1.0)
    assert f(99) == pytest.approx(0.1)
    decay = [f(s) for s in range(10, 100)]
    assert all(a >= b for a, b in zip(decay, decay[1:], strict=False))


def test_batch_seed_is_pure_and_distinct() -> None:
    assert batch_seed(0, 5, 1) == batch_seed(0, 5, 1)
    seeds = {batch_seed(s, t, u) for s in range(3) for t in range(20) for u in range(4)}
    assert len(seeds) == 3 * 20 * 4


def test_classification_loss_masks_padding_rows_and_absent_classes() -> None:
    batch = BlobsPrior(n_context=6, n_query=4, max_classes=2).sample(2, seed=1)
    model = build({"max_classes": 5})
    logits = torch.randn(2, 4, 5)
    base = episode_loss(model, logits, batch)
    # logits of classes >= n_classes (2 here) must not matter
    changed = logits.clone()
    changed[..., 2:] += 100.0
    assert torch.allclose(episode_loss(model, changed, batch), base)
    # a padding row (row_mask False) must not matter
    object.__setattr__(batch, "row_mask", batch.row_mask.clone())
    batch.row_mask[0, -1] = False
    masked = episode_loss(model, logits, batch)
    changed = logits.clone()
    changed[0, -1] = torch.tensor([50.0, -50.0, 0, 0, 0])
    assert torch.allclose(episode_loss(model, changed, batch), masked)
    assert not torch.allclose(masked, base)


def test_model_inputs_pad_to_max_features_and_impute_nan() -> None:
    batch = BlobsPrior(max_features=3).sample(2, seed=0)
    batch.x[0, 0, 0] = float("nan")
    x, y_ctx = model_inputs(build({"max_features": 7}), batch)
    assert x.shape[-1] == 7 and torch.isfinite(x).all() and y_ctx.shape == (2, batch.n_context)
    with pytest.raises(TabzooInputError, match="at most 2"):
        model_inputs(build({"max_features": 2}), batch)


def test_training_reduces_loss_and_writes_checkpoints(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = build({"temperature": 3.0})  # a poor start: training must sharpen it
    res = pretrain(model, BlobsPrior(), out=tmp_path, steps=24, checkpoint_every=8, seed=1,
                   **{**FAST, "plot": True, "lr": 0.1})
    assert res.steps == 24 and len(res.losses) == 24 and res.episodes_seen == 24 * 4
    assert np.mean(res.losses[-6:]) < np.mean(res.losses[:6])
    ckpt = load_checkpoint(tmp_path / "model")
    meta = ckpt.meta
    assert meta["architecture"] == "icl_test" and meta["steps"] == 24
    assert meta["prior"] == "BlobsPrior"
    extra = meta["extra"]
    assert extra["episodes_seen"] == 96 and extra["wall_time_s"] > 0
    assert extra["machine"]["world_size"] == 1 and extra["machine"]["hostname"]
    assert (tmp_path / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pointer = json.loads((tmp_path / "latest.json").read_text())
    assert pointer["step"] == 24
    assert len(list(tmp_path.glob("state-*.json"))) == 1  # older states removed
    reloaded = load_model(tmp_path / "model", build=build)
    assert torch.equal(reloaded.log_temp, res.model.log_temp)
    assert load_history(tmp_path) == pytest.approx(res.losses)


def test_in_process_resume_continues_exactly(tmp_path: Path) -> None:
    cfg = PretrainConfig(steps=10, checkpoint_every=4, seed=3, **FAST)
    full = pretrain(build({}), BlobsPrior(), out=tmp_path / "full", config=cfg)
    out = tmp_path / "cut"
    _run_until(out, cfg, 4)  # dies right after the step-4 checkpoint
    assert load_latest(out)["step"] == 4
    resumed = pretrain(build({}), BlobsPrior(), out=out, config=cfg, resume=True)
    assert resumed.resumed_from == 4 and len(resumed.losses) == 10
    np.testing.assert_allclose(resumed.losses, full.losses, rtol=1e-6, atol=1e-7)
    for (n, a), b in zip(resumed.model.state_dict().items(), full.model.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, msg=n)
    # resuming a finished run does nothing more
    done = pretrain(build({}), BlobsPrior(), out=out, config=cfg, resume=True)
    assert done.resumed_from == 10 and done.losses == resumed.losses


def test_resume_without_checkpoint_starts_at_zero(tmp_path: Path) -> None:
    res = pretrain(build({}), BlobsPrior(), out=tmp_path, steps=2, resume=True, **FAST)
    assert res.resumed_from == 0 and len(res.losses) == 2
    with pytest.raises(TabzooInputError, match="output folder"):
        pretrain(build({}), BlobsPrior(), steps=2, resume=True, **FAST)


def _run_until(out: Path, cfg: PretrainConfig, stop: int) -> None:
    """Run ``cfg`` but raise right after the checkpoint of step ``stop`` (an in-process 'kill')."""

    class Stop(Exception):
        pass

    class StoppingPrior(BlobsPrior):
        name = "BlobsPrior"  # the same prior, only stopped: a resume with BlobsPrior must accept it

        def sample(self, batch_size, *, seed, device="cpu"):
            if (out / "latest.json").exists() and json.loads((out / "latest.json").read_text())["step"] >= stop:
                raise Stop
            return super().sample(batch_size, seed=seed, device=device)

    with pytest.raises(Stop):
        pretrain(build({}), StoppingPrior(), out=out, config=cfg)


def test_regression_uses_the_model_loss(tmp_path: Path) -> None:
    calls = []

    class Spy(KernelICL):
        def loss(self, logits, y_query, batch):
            calls.append(tuple(logits.shape))
            return super().loss(logits, y_query, batch)

    model = Spy(task="regression")
    res = pretrain(model, BlobsPrior(task="regression"), steps=3, seed=0, **FAST)
    assert calls == [(4, 24, 1)] * 3 and all(math.isfinite(v) for v in res.losses)


def test_names_resolve_through_a_registry() -> None:
    reg = PluginRegistry()
    rec = PluginRecord("t", "tz-test", "1", "t")
    reg.add("architectures", ArchitectureSpec(name="icl_test", build=build, default_config={"temperature": 0.5}), rec)
    reg.add("priors", PriorSpec(name="blobs", factory=BlobsPrior), rec)
    res = pretrain("icl_test", "blobs", registry=reg, steps=2, prior_config={"max_features": 3}, **FAST)
    assert isinstance(res.model, KernelICL) and len(res.losses) == 2
    assert res.model.config["temperature"] == 0.5


def test_the_latest_state_exports_the_run_s_model(tmp_path: Path) -> None:
    """Issue 31 item 6: a run folder need not keep its model export; the state holds the same model."""
    from tabzoo.checkpoint import load_checkpoint
    from tabzoo.errors import CheckpointError
    from tabzoo.train.state import export_latest

    reg = PluginRegistry()
    rec = PluginRecord("t", "tz-test", "1", "t")
    reg.add("architectures", ArchitectureSpec(name="icl_test", build=build, default_config={"temperature": 0.5}), rec)
    reg.add("priors", PriorSpec(name="blobs", factory=BlobsPrior), rec)
    out = tmp_path / "run"
    pretrain("icl_test", "blobs", registry=reg, out=out, steps=3, prior_config={"max_features": 3},
             model_config={"temperature": 0.7}, **FAST)
    export_latest(out, tmp_path / "exported", registry=reg, extra={"note": "x"})
    ours, run = load_checkpoint(tmp_path / "exported"), load_checkpoint(out / "model")
    for key in ("architecture", "config", "prior", "steps"):
        assert ours.meta[key] == run.meta[key], key
    assert ours.meta["extra"]["note"] == "x" and ours.meta["extra"]["train_config"] == run.meta["extra"]["train_config"]
    assert all(torch.equal(ours.tensors[k], run.tensors[k]) for k in run.tensors) and set(ours.tensors) == set(run.tensors)
    with pytest.raises(CheckpointError, match="overwrite"):
        export_latest(out, tmp_path / "exported", registry=reg)
    with pytest.raises(CheckpointError, match="no training state"):
        export_latest(tmp_path, tmp_path / "other", registry=reg)


def test_bad_configurations_raise_with_the_fix() -> None:
    with pytest.raises(TabzooInputError, match="multiple of 3"):
        pretrain(build({}), BlobsPrior(), steps=1, batch_size=4, micro_batches=3, progress=False)
    with pytest.raises(TabzooInputError, match="needs a GPU"):
        pretrain(build({}), BlobsPrior(), steps=1, amp="fp16", device="cpu", progress=False)
    with pytest.raises(TabzooInputError, match="known options"):
        PretrainConfig.from_dict({"stepz": 3})
    with pytest.raises(TabzooInputError, match="head has 2"):
        pretrain(build({"max_classes": 2}), BlobsPrior(max_classes=3), steps=2, batch_size=8, progress=False)
    with pytest.raises(TabzooInputError, match="sample"):
        pretrain(build({}), object(), steps=1, progress=False)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_trains_on_the_real_scm_prior(task: str, tmp_path: Path) -> None:
    pytest.importorskip("tabzoo_priors", reason="the real priors live in tabzoo-priors, not installed here")
    from tabzoo.plugins import list_priors

    if "scm" not in list_priors():
        pytest.skip("tabzoo-priors is installed but registers no 'scm' prior")
    model = build({"task": task})
    prior_config = {"n_rows": (48, 64), "n_features": (2, 6), "n_classes": (2, 4), "task": task}
    res = pretrain(model, "scm", out=tmp_path, steps=3, prior_config=prior_config, **FAST)
    assert len(res.losses) == 3 and all(math.isfinite(v) for v in res.losses)
    assert load_checkpoint(tmp_path / "model").meta["prior"] == "scm"


class _StepAwareBlobs(BlobsPrior):
    """Records the ``step=`` the loop passes (priors with a row curriculum need it)."""

    step_aware = True

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[int] = []

    def sample(self, batch_size: int, *, seed: int, device: str = "cpu", step: int | None = None):  # type: ignore[override]
        assert step is not None
        self.steps.append(step)
        return super().sample(batch_size, seed=seed, device=device)


def test_step_aware_prior_gets_the_step_and_resume_continues_it(tmp_path: Path) -> None:
    prior = _StepAwareBlobs()
    pretrain(build({}), prior, out=tmp_path, steps=3, checkpoint_every=1, **FAST)
    assert prior.steps == [0, 1, 2]
    again = _StepAwareBlobs()
    pretrain(build({}), again, out=tmp_path, steps=5, resume=True, checkpoint_every=1, **FAST)
    assert again.steps == [3, 4]
    plain = BlobsPrior()  # a prior without step_aware is called without step= (it would fail otherwise)
    pretrain(build({}), plain, steps=1, **FAST)


def test_init_from_starts_from_a_checkpoint(tmp_path: Path) -> None:
    from tabzoo.checkpoint import save_checkpoint

    src = build({"temperature": 0.37})
    save_checkpoint(tmp_path / "init", src, architecture="icl_test", config={})
    res = pretrain(build({}), BlobsPrior(), steps=1, lr=1e-9, init_from=str(tmp_path / "init"),
                   **{k: v for k, v in FAST.items() if k != "lr"})
    assert torch.allclose(res.model.log_temp, src.log_temp, atol=1e-6)
    with pytest.raises(TabzooInputError, match="does not fit"):
        pretrain(torch.nn.Linear(2, 2), BlobsPrior(), steps=1, init_from=str(tmp_path / "init"), **FAST)


def test_amp_auto_on_cpu_uses_bf16_only_with_native_support(monkeypatch: pytest.MonkeyPatch) -> None:
    from tabzoo.train import loop

    monkeypatch.setattr(loop, "cpu_has_fast_bf16", lambda: False)
    assert loop._amp("auto", torch.device("cpu")) == (None, False)
    assert loop._amp("bf16", torch.device("cpu")) == (torch.bfloat16, False)  # asked for explicitly
    monkeypatch.setattr(loop, "cpu_has_fast_bf16", lambda: True)
    assert loop._amp("auto", torch.device("cpu")) == (torch.bfloat16, False)


def test_pretrain_refuses_to_overwrite_a_run(tmp_path):
    out = tmp_path / "run"
    first = pretrain(build({}), BlobsPrior(), out=out, steps=3, checkpoint_every=3, **FAST)
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    with pytest.raises(TabzooInputError, match="--resume.*--overwrite"):
        pretrain(build({}), BlobsPrior(), out=out, steps=1, **FAST)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before  # nothing touched
    with pytest.raises(TabzooInputError, match="contradict"):
        pretrain(build({}), BlobsPrior(), out=out, steps=1, resume=True, overwrite=True, **FAST)
    again = pretrain(build({}), BlobsPrior(), out=out, steps=1, overwrite=True, **FAST)
    assert first.steps == 3 and again.steps == 1


def test_cli_pretrain_refuses_to_overwrite_a_run(tmp_path, capsys):
    from tabzoo.cli import main

    out = tmp_path / "run"
    out.mkdir()
    (out / "latest.json").write_text("{}")
    code = main(["pretrain", "--model", "nope", "--prior", "nope", "--steps", "1", "--out", str(out)])
    assert code != 0
    assert "--overwrite" in capsys.readouterr().err
    assert (out / "latest.json").read_text() == "{}"


def test_freeze_keeps_parameters_fixed_and_survives_resume(tmp_path: Path) -> None:
    torch.manual_seed(0)
    start = build({"temperature": 3.0})
    before = {k: v.clone() for k, v in start.state_dict().items()}
    res = pretrain(start, BlobsPrior(), out=tmp_path, steps=4, checkpoint_every=2, freeze=["feature_weight"],
                   **{**FAST, "lr": 0.1, "weight_decay": 0.5})
    assert torch.equal(res.model.feature_weight, before["feature_weight"])  # no step, no weight decay
    assert not torch.equal(res.model.log_temp, before["log_temp"])  # the rest trains
    # resume the same run with another freeze list: the optimizer state still loads
    again = pretrain(build({"temperature": 3.0}), BlobsPrior(), out=tmp_path, steps=6, resume=True,
                     freeze=["log_temp"], **{**FAST, "lr": 0.1})
    assert again.steps == 6 and torch.equal(again.model.log_temp, res.model.log_temp)
    assert not torch.equal(again.model.feature_weight, before["feature_weight"])
    with pytest.raises(TabzooInputError, match="match no parameter"):
        pretrain(build({}), BlobsPrior(), steps=1, freeze=["nope"], **FAST)
    with pytest.raises(TabzooInputError, match="every parameter"):
        pretrain(build({}), BlobsPrior(), steps=1, freeze=["log_temp", "feature_weight"], **FAST)
    with pytest.raises(TabzooInputError, match="prefixes"):
        PretrainConfig(freeze="rows")  # type: ignore[arg-type]


def test_resume_with_more_steps_follows_the_longer_cosine(tmp_path: Path) -> None:
    """A resumed run's schedule is defined by the new --steps, not frozen at the old run's end."""
    short = PretrainConfig(steps=6, checkpoint_every=6, seed=3, warmup_steps=1, **FAST)
    pretrain(build({}), BlobsPrior(), out=tmp_path, config=short)
    longer = PretrainConfig(steps=20, checkpoint_every=10, seed=3, warmup_steps=1, **FAST)
    res = pretrain(build({}), BlobsPrior(), out=tmp_path, config=longer, resume=True)
    assert res.resumed_from == 6 and res.steps == 20
    state = load_latest(tmp_path)
    sched = state["scheduler"]
    assert sched["lr_lambdas"][0]["total_steps"] == 20
    want = WarmupCosine(20, 1, longer.min_lr_ratio)
    assert sched["_last_lr"][0] == pytest.approx(longer.lr * want(20))
    # between the two ends the lr was above the old run's floor
    assert want(6) > want(20) and want(6) > short.min_lr_ratio


class _OwnLoss(torch.nn.Module):
    """A model with its own objective (``pretrain_loss``) on batches that are not episodes."""

    def __init__(self) -> None:
        super().__init__()
        self.lin, self.drop = torch.nn.Linear(3, 1), torch.nn.Dropout(0.2)

    def pretrain_loss(self, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        x, y = batch
        return ((self.lin(self.drop(x))[:, 0] - y) ** 2).mean()


class _PairsPrior:
    def sample(self, batch_size: int, *, seed: int, device: str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.as_tensor(np.random.default_rng(seed).normal(size=(batch_size, 3)), dtype=torch.float32)
        return x.to(device), (x @ torch.tensor([1.0, -2.0, 0.5])).to(device)


def _own_loss_model() -> _OwnLoss:
    torch.manual_seed(0)
    return _OwnLoss()


def test_own_loss_models_train_and_stop_after_resumes_exactly(tmp_path: Path) -> None:
    cfg = PretrainConfig(steps=8, checkpoint_every=3, seed=1, workers=0, **FAST)
    straight = pretrain(_own_loss_model(), _PairsPrior(), config=cfg)
    assert len(straight.losses) == 8 and straight.losses[-1] < straight.losses[0]
    part = pretrain(_own_loss_model(), _PairsPrior(), out=tmp_path, config=cfg, stop_after=5)
    assert part.steps == 5 and load_latest(tmp_path)["step"] == 5  # the stop is checkpointed
    resumed = pretrain(_own_loss_model(), _PairsPrior(), out=tmp_path, config=cfg, resume=True)
    assert resumed.resumed_from == 5
    np.testing.assert_allclose(resumed.losses, straight.losses, rtol=1e-6, atol=1e-7)
    for a, b in zip(resumed.model.state_dict().values(), straight.model.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b)
    with pytest.raises(TabzooInputError, match="stop_after"):
        PretrainConfig(stop_after=0)


def test_renamed_pretraining_names_stay_importable_with_a_warning() -> None:
    """``TrainConfig``/``TrainResult`` were renamed ``PretrainConfig``/``PretrainResult`` (issue 31)."""
    import tabzoo.train as train
    from tabzoo.train import config, loop

    for module, old, new in ((train, "TrainConfig", "PretrainConfig"), (train, "TrainResult", "PretrainResult"),
                             (config, "TrainConfig", "PretrainConfig"), (loop, "TrainResult", "PretrainResult")):
        with pytest.warns(DeprecationWarning, match=new):
            assert getattr(module, old) is getattr(module, new)
    with pytest.raises(AttributeError):
        train.TrainConfigs  # noqa: B018
