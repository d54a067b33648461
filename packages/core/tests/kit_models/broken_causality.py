"""The time-causality gallery (issue 23, item 6): :class:`~kit_models.broken_rows.TinyRelational`
extended with a feature of the derived ``delayed`` column (``label > 0.5``), a declared horizon of
one day, and one broken variant per way of seeing the future that the first kits missed."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tabzoo.testing import capabilities as cap
from tabzoo.testing.case import ConformanceCase
from torch import nn

from kit_models.broken import gallery_case
from kit_models.broken_rows import TinyRelational, _relational_bad_inputs

DAY = 86400


class DerivedRelational(TinyRelational):
    """Correct: also averages the derived ``delayed`` flag of the user's events whose label is
    available (it is derived from the label, so it is known only as late as the label)."""

    horizon_s = DAY

    def __init__(self, seed: int = 0) -> None:
        super().__init__(seed)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed + 1)
            self.flag = nn.Linear(1, 3)

    def flag_rows(self, times: np.ndarray, t: Any, is_seed: np.ndarray) -> np.ndarray:
        return self.available(times, t, is_seed)

    def at(self, seeds: list[tuple[str, Any, Any]]) -> list[Any]:
        """The time each seed is predicted at."""
        return [t for _, _, t in seeds]

    def forward(self, db: Any, seeds: list[tuple[str, Any, Any]]) -> torch.Tensor:
        times_at = self.at(seeds)
        out = super().forward(db, [(tb, pk, t) for (tb, pk, _), t in zip(seeds, times_at, strict=True)])
        events = db.table("events")
        ids, users, times = events.column("event_id"), events.column("user_id"), events.column("time")
        delayed = np.array([bool(v) if v is not None else False for v in events.column("delayed")], dtype=np.float64)
        rates = []
        for (_, pk, _), t in zip(seeds, times_at, strict=True):
            mine = users == users[np.flatnonzero(ids == pk)[0]]
            rows = mine & self.flag_rows(times, t, ids == pk)
            rates.append([float(delayed[rows].mean()) if rows.any() else 0.0])
        return out + self.flag(torch.tensor(rates, dtype=torch.float32))


class ReadsDerivedAfterCutoff(DerivedRelational):
    """Reads ``delayed`` of every event of the user, later ones included: only the target column
    and numbers were perturbed after the cutoff before, so the derived flag leaked unseen."""

    def flag_rows(self, times: np.ndarray, t: Any, is_seed: np.ndarray) -> np.ndarray:
        return np.ones_like(times, dtype=bool)


class SnapshotAtLatestSeed(DerivedRelational):
    """Predicts every seed of a call as of the LATEST seed time of the call (one snapshot per
    batch): right for a single seed, a leak for the earlier seeds of a batch."""

    def at(self, seeds: list[tuple[str, Any, Any]]) -> list[Any]:
        latest = max(np.datetime64(t, "s") for _, _, t in seeds)
        return [latest] * len(seeds)


class HalfHorizon(DerivedRelational):
    """Uses labels after half of the declared one-day horizon."""

    horizon_s = DAY // 2


class DerivedAsSoonAsPast(DerivedRelational):
    """Reads ``delayed`` of every earlier event (its row time has passed) while it still hides the
    label: the derived flag leaks the label inside the horizon. Only the target column was hidden
    within the horizon before ``column_horizons``."""

    def flag_rows(self, times: np.ndarray, t: Any, is_seed: np.ndarray) -> np.ndarray:
        return (times <= t) & ~is_seed


class FlagAfterTwoDays(DerivedRelational):
    """Correct for a case declaring ``delayed`` available two days after its row (Ramba's
    nycflights horizons: the arrival outcome is known later than ``dep_delay``)."""

    def flag_rows(self, times: np.ndarray, t: Any, is_seed: np.ndarray) -> np.ndarray:
        return (times + np.timedelta64(2 * DAY, "s") <= t) & ~is_seed


class _Extra(DerivedRelational):
    """:class:`DerivedRelational` plus ``0.1 * extra(db, t)`` per seed (the planted defect)."""

    def extra(self, events: Any, pk: Any, t: Any) -> float:
        raise NotImplementedError

    def forward(self, db: Any, seeds: list[tuple[str, Any, Any]]) -> torch.Tensor:
        out = super().forward(db, seeds)
        events = db.table("events")
        add = [self.extra(events, pk, np.datetime64(t, "s")) for _, pk, t in seeds]
        return out + 0.1 * torch.tensor(add, dtype=torch.float32)[:, None]


class ReadsLaterTimestamps(_Extra):
    """Reads only the TIMES of events after the cutoff (how far ahead they lie, in days), never
    their values: kits that perturbed values but never moved timestamps across the cutoff saw
    nothing."""

    def extra(self, events: Any, pk: Any, t: Any) -> float:
        times = events.column("time").astype("datetime64[s]")
        later = times[times > t]
        return float(((later - t) / np.timedelta64(DAY, "s")).mean()) if later.size else 0.0


class ReadsTiedLabels(_Extra):
    """Reads the labels of the other events at exactly the seed time (a tie at the cutoff) as if
    they were known: only ties at the cutoff, which earlier kits never created, show it."""

    def extra(self, events: Any, pk: Any, t: Any) -> float:
        times = events.column("time").astype("datetime64[s]")
        label = events.column("label").astype(np.float64)
        return float(label[(times == t) & (events.column("event_id") != pk)].sum())


class ReadsFutureInBuckets(_Extra):
    """Reads the amounts of events after the cutoff only through 20-unit buckets (a histogram
    feature): a small fixed perturbation almost never moves a bucket, the column's own spread does."""

    def extra(self, events: Any, pk: Any, t: Any) -> float:
        times = events.column("time").astype("datetime64[s]")
        amount = events.column("amount").astype(np.float64)
        return float(np.floor(amount[times > t] / 20.0).sum())


class ReadsFutureChannels(_Extra):
    """Reads a CATEGORICAL column of the events after the cutoff (how many of them came through the
    shop): kits that perturbed only the target and numbers after the cutoff never swapped a category."""

    def extra(self, events: Any, pk: Any, t: Any) -> float:
        times = events.column("time").astype("datetime64[s]")
        return float(sum(str(c) == "shop" for c in events.column("channel")[times > t]))


class ReadsFutureNotes(_Extra):
    """Reads a TEXT column of the events after the cutoff (the words of their notes): only a kit that
    changes strings after the cutoff sees it."""

    def extra(self, events: Any, pk: Any, t: Any) -> float:
        times = events.column("time").astype("datetime64[s]")
        return float(sum(len(str(n).split()) for n in events.column("note")[times > t] if n is not None))


class FutureAbove20Users(DerivedRelational):
    """Correct on small databases; above 20 users (another code path, say a vectorised whole-table
    aggregate) it averages every event of the user, later ones included. Only the database-size
    search reaches it (the toy database has 5 users; 25 at scale 5)."""

    def forward(self, db: Any, seeds: list[tuple[str, Any, Any]]) -> torch.Tensor:
        self.big = db.table("users").n_rows > 20
        return super().forward(db, seeds)

    def history(self, times: np.ndarray, t: Any, order: np.ndarray) -> np.ndarray:
        return np.ones_like(times, dtype=bool) if getattr(self, "big", False) else super().history(times, t, order)


def causal_case(name: str = "derived_relational", model_cls: type[TinyRelational] | str = DerivedRelational,
                **kw: Any) -> ConformanceCase:
    """A relational case on the toy database with a declared horizon of one day."""
    options: dict[str, Any] = dict(capabilities=cap.RELATIONAL_DEFAULTS, protocol="relational",
                                   target=("events", "label"), horizon=float(DAY), bad_inputs=_relational_bad_inputs)
    return gallery_case("kit_models.broken_causality:causal_case", name, model_cls, options, kw)


BROKEN_CAUSALITY: list[tuple[str, Any]] = [
    ("reads a derived column (delayed) after the cutoff", lambda: causal_case("derived_future", ReadsDerivedAfterCutoff)),
    ("snapshots the database at the latest seed of a batch", lambda: causal_case("batch_snapshot", SnapshotAtLatestSeed)),
    ("uses labels inside the declared horizon", lambda: causal_case("half_horizon", HalfHorizon)),
    ("reads a derived column inside the horizon", lambda: causal_case("derived_inside", DerivedAsSoonAsPast)),
    ("reads a derived column before its own (longer) horizon", lambda: causal_case(
        "derived_own_horizon", DerivedRelational, column_horizons={"delayed": float(2 * DAY)})),
    ("reads only the timestamps of rows after the cutoff", lambda: causal_case("later_times", ReadsLaterTimestamps)),
    ("reads the labels of rows tied with the seed time", lambda: causal_case("tied_labels", ReadsTiedLabels)),
    ("reads future amounts through coarse buckets (needs scale-aware magnitudes)",
     lambda: causal_case("future_buckets", ReadsFutureInBuckets)),
    ("reads a categorical column after the cutoff (needs categories swapped)",
     lambda: causal_case("future_channels", ReadsFutureChannels)),
    ("reads a text column after the cutoff (needs strings changed)", lambda: causal_case("future_notes", ReadsFutureNotes)),
    ("reads later events only above 20 users (needs the database-size search)",
     lambda: causal_case("future_above_20_users", FutureAbove20Users)),
]
"""Each must fail time_causality; :func:`causal_case` itself (the correct model) passes."""
