"""A rollout plan: per class, is speculation worth turning on, and in which order?

For each class (a value of the label an operator gives traffic, ``model_name`` by default), from what its
replicas measured over a window:

- the acceptance: p with its interval, and the per-position profile where the engine counts one;
- the batch sizes the class ran: the running-requests gauge of each replica, sampled over the window (a
  histogram, and its quantiles);
- the schedule decided once for that acceptance on the user's setup (the plan's, with its config), and the
  expected gain weighted over those batches: at the measured acceptance, at the ends of its interval, and
  widened by the cost model's stated error on held-out published points;
- a verdict: *turn on* (with the config) where even the low end gains, *leave off* where even the high end
  does not, *measure first* where too few drafts were counted or the range holds 1.

Classes come in rollout order: the surest gains first (turn on, by the low end of the gain), then measure
first, then leave off.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from app.model.arithmetic.acceptance import Acceptance
from app.model.cost.regimes import RooflineSetup, roofline_speedup

TURN_ON, LEAVE_OFF, MEASURE_FIRST = "turn on", "leave off", "measure first"
ORDER = {TURN_ON: 0, MEASURE_FIRST: 1, LEAVE_OFF: 2}
MIN_DRAFTS = 200  # verifications counted in the window before a class is judged
QUANTILES = (0.5, 0.9, 0.99)


@dataclass(frozen=True)
class Batches:
    """The batch sizes a class ran: how often each was seen (idle samples, batch 0, left out)."""

    counts: Mapping[int, int]

    @classmethod
    def of(cls, samples: Sequence[float]) -> Batches:
        counts: dict[int, int] = {}
        for value in samples:
            if value is None or not math.isfinite(value):
                continue
            batch = round(value)
            if batch >= 1:
                counts[batch] = counts.get(batch, 0) + 1
        return cls(dict(sorted(counts.items())))

    @property
    def samples(self) -> int:
        return sum(self.counts.values())

    def quantiles(self) -> dict[str, int]:
        if not self.counts:
            return {}
        values = np.repeat(np.array(list(self.counts), dtype=float), list(self.counts.values()))
        return {f"p{round(q * 100)}": int(np.quantile(values, q, method="inverted_cdf")) for q in QUANTILES}

    def weights(self, limit: int) -> list[tuple[int, float]]:
        """(batch, share of samples), batches above ``limit`` (what fits) counted at it."""
        total = self.samples
        found: dict[int, float] = {}
        for batch, count in self.counts.items():
            at = min(batch, max(limit, 1))
            found[at] = found.get(at, 0.0) + count / total
        return sorted(found.items())


@dataclass(frozen=True)
class Gain:
    """The speedup weighted over the class's batches: at the measured acceptance, at its interval's ends, and
    that range widened by the cost model's stated error."""

    point: float
    at_low: float
    at_high: float
    low: float
    high: float
    model_error: float


def weighted_gain(
    best_k: Sequence[int],
    best_speedup: Sequence[float],
    setup: RooflineSetup,
    batches: Batches,
    p_low: Acceptance,
    p_high: Acceptance,
    model_error: float,
) -> Gain | None:
    """The schedule's speedup (k = 0: 1) weighted over the batches, where any were seen and any batch fits."""
    if not batches.counts or not best_k:
        return None
    weights = batches.weights(len(best_k))
    point = sum(share * (best_speedup[b - 1] if best_k[b - 1] else 1.0) for b, share in weights)

    def at(p: Acceptance, scale: float) -> float:
        """Batches where the schedule is off run plain decoding: exactly 1, with no model error."""
        return sum(
            share * (float(roofline_speedup(p, best_k[b - 1], setup, b)) * scale if best_k[b - 1] else 1.0)
            for b, share in weights
        )

    def scaled(scale: float) -> float:
        return sum(share * (best_speedup[b - 1] * scale if best_k[b - 1] else 1.0) for b, share in weights)

    at_low, at_high = at(p_low, 1.0), at(p_high, 1.0)
    low = min(at(p_low, 1.0 - model_error), scaled(1.0 - model_error))
    high = max(at(p_high, 1.0 + model_error), scaled(1.0 + model_error))
    return Gain(point, at_low, at_high, low, high, model_error)


@dataclass(frozen=True)
class ClassVerdict:
    verdict: str
    reason: str


def judge(gain: Gain | None, drafts: float, speculating: bool) -> ClassVerdict:
    """Turn on, leave off or measure first."""
    if not speculating:
        return ClassVerdict(
            MEASURE_FIRST, "no spec-decode counters for this class: run speculation on a canary to measure it"
        )
    if drafts < MIN_DRAFTS:
        return ClassVerdict(
            MEASURE_FIRST, f"{drafts:,.0f} drafts counted in the window: at least {MIN_DRAFTS} before judging"
        )
    if gain is None:
        return ClassVerdict(MEASURE_FIRST, "no batch was seen running (the running-requests gauge is idle)")
    shown = f"gain {gain.point:.2f}x, [{gain.low:.2f}, {gain.high:.2f}] with the cost model's ±{gain.model_error:.0%}"
    if gain.high <= 1.0 and gain.low >= 1.0:
        return ClassVerdict(LEAVE_OFF, "the schedule runs no speculation at the batches it ran: nothing to gain")
    if gain.low > 1.0:
        return ClassVerdict(TURN_ON, f"{shown}: pays over the batches it ran")
    if gain.high <= 1.0:
        return ClassVerdict(LEAVE_OFF, f"{shown}: does not pay over the batches it ran")
    return ClassVerdict(MEASURE_FIRST, f"{shown}: the range holds 1, too wide to decide")


def order_key(verdict: str, gain: Gain | None) -> tuple[int, float]:
    """Rollout order: the surest gains first."""
    return ORDER[verdict], -(gain.low if gain is not None else 0.0)
