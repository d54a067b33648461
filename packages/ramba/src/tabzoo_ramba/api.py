"""Task-level API: :class:`Ramba` with ``fit`` / ``predict`` / ``evaluate``, and the protocol
forward :func:`predict_seeds` that the conformance kit calls.

Example::

    from tabzoo_ramba import Ramba, load_nycflights13, DELAYED, temporal_split
    db = load_nycflights13("nyc.sqlite")
    split = temporal_split(db, DELAYED, "2013-01-05", "2013-01-06")
    model = Ramba(config={"preset": "tiny"}).fit(db, DELAYED, split, steps=200)
    model.evaluate(db, split["test"])      # {"metric": "roc_auc", "value": ...}
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tabzoo.errors import TabzooInputError
from tabzoo.metrics import r2_score, roc_auc
from tabzoo.table.validation import check_number, check_target_values

from tabzoo_ramba.data import RelationalTask, Seed, Split, to_seconds
from tabzoo_ramba.model import RambaModel
from tabzoo_ramba.sampling import DEFAULT_SAMPLER, SamplerConfig, graph_index, sample_subgraph
from tabzoo_ramba.serialize import ColumnStats, TargetSpec, collate, serialize
from tabzoo_ramba.serialize import Sequence as Seq
from tabzoo_ramba.text import default_encoder
from tabzoo_ramba.train import finetune, linear_recalibration

__all__ = ["ENSEMBLE_SEED_STRIDE", "HOLD_SEED", "Ramba", "carve_hold", "predict_seeds", "sequences_for"]

#: member ``k`` of ``Ramba.fit(ensemble=K)`` uses seed ``seed + ENSEMBLE_SEED_STRIDE * k``
ENSEMBLE_SEED_STRIDE = 1000
#: ``Ramba.fit(hold=...)`` draws its hold-out with ``numpy.random.default_rng([HOLD_SEED, seed])``
HOLD_SEED = 54321


def carve_hold(train: Split, n: int | float, seed: int) -> tuple[Split, Split] | None:
    """``(rest, hold)`` of ``train``: ``hold`` holds ``n`` rows (an int >= 2; a float in (0, 1): that
    fraction, ``round(n * len(train))`` rows) drawn uniformly without replacement by
    ``numpy.random.default_rng([HOLD_SEED, seed])``, ``rest`` the others; both keep the train
    split's order. ``None`` when fewer than ``n`` rows would be left in ``rest`` (or ``n < 2``
    after rounding): too few to carve."""
    if isinstance(n, bool) or not isinstance(n, (int, float, np.integer, np.floating)):
        raise TabzooInputError(f"hold must be a row count (int >= 2) or a fraction in (0, 1), got {n!r}")
    if isinstance(n, (float, np.floating)):
        if not 0.0 < n < 1.0:
            raise TabzooInputError(f"hold as a fraction must lie in (0, 1), got {n!r}; give a row count as an int")
        rows = round(float(n) * len(train))
    else:
        if n < 2:
            raise TabzooInputError(f"hold must be >= 2 rows (it fits a line and picks states), got {n!r}")
        rows = int(n)
    if rows < 2 or len(train) - rows < rows:
        return None
    idx = np.sort(np.random.default_rng([HOLD_SEED, int(seed)]).choice(len(train), rows, replace=False))
    inside = np.zeros(len(train), dtype=bool)
    inside[idx] = True
    y = np.asarray(train.y)
    return (Split([s for s, h in zip(train.seeds, inside, strict=True) if not h], y[~inside]),
            Split([s for s, h in zip(train.seeds, inside, strict=True) if h], y[inside]))


def _check_seeds(db: Any, seeds: Sequence[Seed]) -> None:
    if not isinstance(seeds, (list, tuple)) or not seeds:
        raise TabzooInputError("seeds must be a non-empty list of (table, primary key, timestamp)")
    for s in seeds:
        if not isinstance(s, (list, tuple)) or len(s) != 3:
            raise TabzooInputError(f"seed {s!r} is not (table, primary key, timestamp)")
        if s[0] not in db:
            raise TabzooInputError(f"seed table {s[0]!r} is not in the database {list(db.table_names)}")
        try:
            t = np.datetime64(s[2])
        except (TypeError, ValueError):
            raise TabzooInputError(f"seed timestamp {s[2]!r} is not a datetime; pass numpy.datetime64") from None
        if np.isnat(t):
            raise TabzooInputError(f"seed {s!r} has no timestamp (NaT); give the time to predict at")


def sequences_for(db: Any, seeds: Sequence[Seed], target: TargetSpec, *, lookback_s: float,
                  sampler: SamplerConfig, stats: ColumnStats | None = None) -> list[Seq]:
    """Serialized subgraphs of ``seeds``. ``stats=None``: statistics fitted at each seed's own
    time (strictly causal for any seed); else the given (e.g. train-cutoff) statistics. A
    ``policy="known"`` sampler ranks the target table's rows by when their first outcome column
    (target or hidden) is known."""
    _check_seeds(db, seeds)
    if target.table is not None and target.table not in db:
        raise TabzooInputError(f"target table {target.table!r} is not in the database")
    if target.table is not None and target.column not in db.table(target.table):
        raise TabzooInputError(f"target column {target.column!r} is not in table {target.table!r}")
    idx = graph_index(db)
    cache: dict[int, ColumnStats] = {}
    out = []
    known = None if target.table is None else {target.table: min(target.horizon_of(c) for c in target.label_columns)}
    for table, key, t in seeds:
        sub = sample_subgraph(idx, table, key, t, lookback_s=lookback_s, config=sampler, known_after=known)
        st = stats
        if st is None:
            ts = int(to_seconds(np.datetime64(t)))
            st = cache.get(ts) or cache.setdefault(ts, ColumnStats.fit(db, idx, ts, target))
        out.append(serialize(db, idx, sub, st, target))
    return out


def predict_seeds(model: RambaModel, db: Any, seeds: Sequence[Seed], target: TargetSpec, *,
                  lookback_s: float = 30 * 86400.0, sampler: SamplerConfig = DEFAULT_SAMPLER,
                  stats: ColumnStats | None = None, batch_size: int = 32, encoder: Any = None) -> torch.Tensor:
    """Raw head output at each seed's target cell ``[n_seeds]`` (a logit, or z-units)."""
    encoder = encoder or default_encoder(model.cfg.text_encoder)
    seqs = sequences_for(db, seeds, target, lookback_s=lookback_s, sampler=sampler, stats=stats)
    outs = []
    for i in range(0, len(seqs), batch_size):
        outs.append(model.predict_target(collate(seqs[i:i + batch_size], encoder, max_rel_rows=model.cfg.max_rel_rows)))
    return torch.cat(outs)


class Ramba:
    """A Ramba model bound to one task: fine-tune, predict, evaluate.

    :param model: a (pretrained) :class:`RambaModel`; default a fresh one from ``config``.
    :param sampler: the subgraph budget.

    ``fit(ensemble=K)`` trains K members and predicts their mean (:attr:`members`; member 0 is
    :attr:`model`); ``fit(snapshot_every=E)`` keeps several states of each member and averages
    them; ``fit(hold=N)`` carves its own hold-out from the train split (:func:`carve_hold`).

    Memory: ``fit`` estimates a training step's peak from the longest serialized sequence and
    ``batch_size`` before training, and raises :class:`~tabzoo.errors.MemoryLimitError` with the
    estimate and the fix above the limit (``TABZOO_MEMORY_LIMIT``, default the available memory).
    """

    def __init__(self, model: RambaModel | None = None, *, config: dict[str, Any] | None = None,
                 sampler: SamplerConfig = DEFAULT_SAMPLER, seed: int = 0, progress: bool = True) -> None:
        self._config, self._fresh = config, model is None
        if model is None:
            model = self._init_model(seed)
        self.model = model.eval()
        #: the fitted models whose outputs ``predict`` averages (``[model]`` unless ``fit(ensemble=K)``
        #: or ``fit(snapshot_every=E)``: then every kept state of every member, member by member)
        self.members: list[RambaModel] = [self.model]
        #: the states each member keeps in :attr:`members` (1 unless ``fit(snapshot_every=E)``)
        self.snapshots_per_member = 1
        self.sampler, self.seed, self.progress = sampler, seed, progress
        self.encoder = default_encoder(model.cfg.text_encoder)
        self.task: RelationalTask | None = None
        self.stats: ColumnStats | None = None
        #: ``(slope, intercept)`` applied to regression predictions (set by ``fit(recalibrate=True)``)
        self.calibration: tuple[float, float] | None = None

    def _init_model(self, seed: int) -> RambaModel:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return RambaModel(self._config)

    def _target(self, task: RelationalTask) -> TargetSpec:
        return TargetSpec(task.entity_table, task.target, task.horizon_s, task.hidden, task.column_horizons)

    def bind(self, db: Any, task: RelationalTask, cutoff: Any) -> Ramba:
        """Use ``task`` with normalisation statistics from data before ``cutoff`` (no training:
        the zero-shot path)."""
        task.validate(db)
        self.task, self.calibration = task, None
        self.stats = ColumnStats.fit(db, graph_index(db), int(to_seconds(np.datetime64(cutoff))), self._target(task))
        return self

    def _seqs(self, db: Any, seeds: Sequence[Seed]) -> list[Seq]:
        if self.task is None or self.stats is None:
            from tabzoo.errors import NotFittedError

            raise NotFittedError("the model is not bound to a task: call fit(...) or bind(...) first")
        return sequences_for(db, seeds, self._target(self.task), lookback_s=self.task.lookback_s,
                             sampler=self.sampler, stats=self.stats)

    def _predict_seqs(self, seqs: Sequence[Seq], models: Sequence[RambaModel] | None = None) -> np.ndarray:
        """Predictions ``[n]``: the mean raw output of ``models`` (default :attr:`members`), mapped back."""
        assert self.task is not None and self.stats is not None
        if self.model is not self.members[0]:  # the model was replaced after fit: it alone predicts
            self.members, self.snapshots_per_member = [self.model], 1
        raws = []
        with torch.no_grad():
            for member in models or self.members:
                outs = [member.predict_target(collate(list(seqs[i:i + 32]), self.encoder,
                                                      max_rel_rows=member.cfg.max_rel_rows))
                        for i in range(0, len(seqs), 32)]
                raws.append(torch.cat(outs).double().numpy())
        raw = np.mean(raws, axis=0)
        if self.task.kind == "classification":
            return 1.0 / (1.0 + np.exp(-raw))
        mu, sd = self.stats.get(self.task.entity_table, self.task.target)
        a, b = self.calibration or (1.0, 0.0)
        return a * (raw * sd + mu) + b

    def fit(self, db: Any, task: RelationalTask, split: dict[str, Split], *, steps: int = 200, batch_size: int = 16,
            lr: float = 1e-3, eval_every: int = 50, loss: str = "mse", recalibrate: bool = False,
            weight_decay: float = 0.0, schedule: str = "constant", winsorize: float = 0.0,
            head_init: bool = False, ensemble: int = 1, huber_delta: float = 1.0, select_on: str | None = None,
            recalibrate_on: str | None = None, snapshot_every: int | None = None,
            hold: int | float | None = None) -> Ramba:
        """Fine-tune on ``split["train"]`` (best state on ``split[select_on]`` when present). Statistics
        come from data before the first val seed (or the last train seed).

        :param loss: regression loss on the z-scored target, ``"mse"`` (default: R^2 scores the
            mean) or ``"huber"`` (see :func:`tabzoo_ramba.train.finetune`).
        :param huber_delta: the Huber loss's threshold in z-units (standard deviations of the
            training target; ``loss="huber"`` only).
        :param recalibrate: regression: map predictions by the least-squares line fitted on the
            predictions of ``split[recalibrate_on]`` (:func:`~tabzoo_ramba.train.linear_recalibration`;
            needs that split with >= 2 seeds).
        :param select_on, recalibrate_on: the keys of ``split`` whose seeds pick each member's best
            state and fit the recalibration line (default ``"val"``, or ``"hold"`` with ``hold``). E.g.
            ``"hold"`` for rows of the training period kept out of ``split["train"]``: on
            ``nyc-arr-delay`` a line fitted on such rows carried over to the test period better than
            one fitted on the val period (README, regression notes). A key other than ``"train"`` /
            ``"val"`` must be given (or carved by ``hold``).
        :param hold: carve the ``"hold"`` split from ``split["train"]`` (which must then hold no
            ``"hold"`` key): ``n`` rows (an int >= 2) or that fraction of the train split (a float in
            (0, 1), ``round(fraction * len(train))`` rows), drawn uniformly at random without regard
            to time by :func:`carve_hold` with ``numpy.random.default_rng([HOLD_SEED, seed])`` (so the
            same for every member, and for the same ``seed``); the model trains on the other rows
            and ``select_on`` / ``recalibrate_on`` default to ``"hold"``. When fewer than ``n`` rows
            would remain for training (the train split has < ``2 n`` rows), nothing is carved: a
            ``UserWarning`` says so, the whole train split trains and ``"hold"`` falls back to
            ``"val"``.
        :param snapshot_every: average snapshots instead of picking a best state: each member keeps
            its states at the steps of :func:`~tabzoo_ramba.train.snapshot_steps` ``(steps,
            snapshot_every)`` (the multiples of ``snapshot_every`` in the last half of training, and
            the last step; e.g. 75, 100, 125, 150 for ``steps=150, snapshot_every=25``) and predicts
            the mean raw output of those states (no state is picked: ``select_on`` is unused).
            :attr:`members` holds every kept
            state, member ``k``'s ``S`` states (:attr:`snapshots_per_member`) at ``k S .. k S + S - 1``,
            its last state first (member 0's is :attr:`model`), then the others in step order.
            Costs ``S`` times the prediction; :meth:`save` keeps every state.
        :param weight_decay, schedule, winsorize, head_init: the optional stabilisers of
            :func:`tabzoo_ramba.train.finetune` (off by default; see the README's regression notes
            for what they did on ``nyc-arr-delay``).
        :param ensemble: train this many members and predict the mean of their outputs (z-units or
            logits, before the inverse z-score / sigmoid). Member ``k`` uses seed ``seed + 1000 k`` for
            its batches and dropout and, when this Ramba was built from ``config``, for its
            initialisation (a given model: every member starts from its weights); member 0 is the
            plain ``fit``. Each keeps its own best state on ``split[select_on]``. Costs ``ensemble`` times the training
            and prediction. :meth:`save` keeps every member (a checkpoint of :attr:`model` alone
            holds member 0 only).
        """
        for name, value, kind in (("steps", steps, "positive_int"), ("batch_size", batch_size, "positive_int"),
                                  ("lr", lr, "positive"), ("eval_every", eval_every, "positive_int"),
                                  ("ensemble", ensemble, "positive_int"), ("huber_delta", huber_delta, "positive")):
            check_number(name, value, kind, where="Ramba.fit: ")
        if snapshot_every is not None:
            check_number("snapshot_every", snapshot_every, "positive_int", where="Ramba.fit: ")
        from tabzoo_ramba.train import REGRESSION_LOSSES

        if loss not in REGRESSION_LOSSES:
            raise TabzooInputError(f"Ramba.fit: loss {loss!r}; use one of {REGRESSION_LOSSES}")
        split = dict(split)
        default_key = "val"
        if hold is not None:
            if "hold" in split:
                raise TabzooInputError("Ramba.fit: hold= carves split['hold'] from the train split, but split already "
                                       "has a 'hold' key; pass one or the other")
            if "train" not in split:
                raise TabzooInputError("Ramba.fit: the split has no 'train' key")
            carved = carve_hold(split["train"], hold, self.seed)
            if carved is None:
                warnings.warn(f"Ramba.fit(hold={hold!r}): the train split has {len(split['train'])} rows, too few to "
                              "carve a hold-out and keep as many rows for training; training on all of them and "
                              "selecting / recalibrating on 'val' instead", UserWarning, stacklevel=2)
                select_on = "val" if select_on in (None, "hold") else select_on
                recalibrate_on = "val" if recalibrate_on in (None, "hold") else recalibrate_on
            else:
                split["train"], split["hold"] = carved
                default_key = "hold"
        select_on = default_key if select_on is None else select_on
        recalibrate_on = default_key if recalibrate_on is None else recalibrate_on
        for name, key in (("select_on", select_on), ("recalibrate_on", recalibrate_on)):
            if not isinstance(key, str) or key == "train" or (key != "val" and key not in split):
                raise TabzooInputError(f"Ramba.fit: {name}={key!r} names no held-out split; use 'val' or a key of "
                                       f"split other than 'train' ({sorted(split)})")
        train, val, sel = split["train"], split.get("val"), split.get(select_on)
        classes = (0.0, 1.0) if task.kind == "classification" else None  # the task declares 0/1
        for part in sorted({"train", "val", select_on, recalibrate_on} & set(split)):  # the parts fit reads
            check_target_values(f"split[{part!r}].y", split[part].y, task.kind, len(split[part].seeds), classes)
        if len(train) == 0:
            raise TabzooInputError("the train split is empty; choose a later val_start")
        cal = split.get(recalibrate_on)
        if recalibrate and (cal is None or len(cal) < 2):
            raise TabzooInputError(f"recalibrate=True fits the line on split[{recalibrate_on!r}] (default: the val split): pass it with "
                                   ">= 2 seeds, or recalibrate=False")
        cutoff = val.seeds[0][2] if val is not None and len(val) else train.seeds[-1][2]
        self.bind(db, task, cutoff)
        tr = self._seqs(db, train.seeds)
        va = self._seqs(db, sel.seeds) if sel is not None and len(sel) and snapshot_every is None else None
        self._check_memory(tr, batch_size)
        mu, sd = self.stats.get(task.entity_table, task.target) if self.stats else (0.0, 1.0)
        start = None if self._fresh or ensemble == 1 else copy.deepcopy(self.model.state_dict())
        members: list[RambaModel] = []
        per_member = 1
        for k in range(ensemble):
            seed = self.seed + ENSEMBLE_SEED_STRIDE * k
            if k == 0:
                member = self.model
            elif self._fresh:
                member = self._init_model(seed)
            else:
                assert start is not None
                member = copy.deepcopy(self.model)
                member.load_state_dict(start)
            states: list[dict[str, torch.Tensor]] = []
            finetune(member, tr, train.y, kind=task.kind, mu=mu, sd=sd, val=va, y_val=None if sel is None else sel.y,
                     steps=steps, batch_size=batch_size, lr=lr, eval_every=eval_every, seed=seed,
                     progress=self.progress, encoder=self.encoder, loss=loss, huber_delta=huber_delta,
                     predict=self._member_predictor(member),  # its own val metric picks its best state
                     weight_decay=weight_decay, schedule=schedule, winsorize=winsorize, head_init=head_init,
                     snapshot_every=snapshot_every, snapshots=None if snapshot_every is None else states)
            members.append(member.eval())
            for st in states[:-1]:  # the last state is the member itself
                snap = copy.deepcopy(member)
                snap.load_state_dict(st)
                members.append(snap.eval())
            per_member = max(1, len(states))
        self.members, self.snapshots_per_member = members, per_member
        if recalibrate and task.kind == "regression" and cal is not None:
            self.model.eval()
            ca = va if recalibrate_on == select_on and va is not None else self._seqs(db, cal.seeds)
            self.calibration = linear_recalibration(self._predict_seqs(ca), cal.y)
        return self

    def _member_predictor(self, member: RambaModel) -> Callable[[Sequence[Seq]], np.ndarray]:
        return lambda seqs: self._predict_seqs(seqs, [member])

    def _check_memory(self, seqs: Sequence[Seq], batch_size: int) -> None:
        """Refuse before training when a step's estimated peak (parameters, gradients and Adam
        state, plus ``batch_size`` sequences of the longest length through every block) exceeds
        the memory limit (:mod:`tabzoo.kernels.memory`)."""
        from tabzoo.kernels.memory import check_memory, training_bytes

        c = self.model.cfg
        length = max((len(q.kind) for q in seqs), default=0)
        params = sum(p.numel() for p in self.model.parameters())
        ssm = c.d_model * (8 + 4 * c.expand) + c.expand * c.d_model * c.d_state
        attention = 4 * c.d_model + c.n_heads * c.max_rel_rows  # q, k, v, out and the neighbourhood's scores
        # the gated SSM runs both directions; two attentions (intra-row, relational); the frozen text vectors.
        # Measured peaks: 0.5-0.7x this (benchmarks/results/memory-limits-2026-11-27.json; one direction
        # and no attention had measured 1.25-1.36x the estimate)
        per_token = 2 * ssm + 2 * attention + c.d_ff + c.d_text
        acts = float(c.n_layers) * min(batch_size, len(seqs)) * length * per_token
        check_memory("Ramba.fit", training_bytes(params, acts), "use a smaller batch_size or a smaller "
                     "sampler budget (SamplerConfig(max_rows=...))",
                     device=next(self.model.parameters()).device,
                     detail=f"{params:,} parameters; {min(batch_size, len(seqs))} sequences of {length} tokens")

    def save(self, path: str | Path, *, overwrite: bool = False) -> Path:
        """Save the binding (task, statistics, sampler, calibration) and every member of
        :attr:`members` at stem ``path`` (:func:`tabzoo_ramba.persist.save_ramba`: safetensors +
        JSON pairs, ``path.member{k}.*`` per member); refuses existing files unless ``overwrite``.
        Returns the stem."""
        from tabzoo_ramba.persist import save_ramba

        return save_ramba(self, path, overwrite=overwrite)

    @classmethod
    def load(cls, path: str | Path, *, progress: bool = False) -> Ramba:
        """A Ramba saved by :meth:`save`, every member loaded (same predictions as when saved)."""
        from tabzoo_ramba.persist import load_ramba

        return load_ramba(cls, path, progress=progress)

    def predict(self, db: Any, seeds: Sequence[Seed]) -> np.ndarray:
        """Probabilities (classification) or values (regression) ``[n_seeds]``."""
        return self._predict_seqs(self._seqs(db, seeds))

    def evaluate(self, db: Any, split: Split) -> dict[str, Any]:
        """``{"metric": "roc_auc" | "r2", "value", "n"}`` on ``split``."""
        if self.task is None:
            from tabzoo.errors import NotFittedError

            raise NotFittedError("the model is not bound to a task: call fit(...) or bind(...) before evaluate")
        p = self.predict(db, split.seeds)
        if self.task.kind == "classification":
            return {"metric": "roc_auc", "value": roc_auc(split.y, p), "n": len(split)}
        return {"metric": "r2", "value": r2_score(split.y, p), "n": len(split)}
