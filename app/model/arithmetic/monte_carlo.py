"""Seeded Monte Carlo of speculative decoding under i.i.d. acceptance.

Two views: a token-by-token trace of one run (what the page animates) and a
vectorised aggregate over many cycles whose mean and histogram are held
against the closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.model.arithmetic import bursty
from app.model.arithmetic.closed_form import (
    acceptance_from_mean_length,
    accepted_distribution,
    accepted_variance,
    cost_per_cycle,
    expected_tokens,
)

Z_95 = bursty.Z_95
INTERVAL_STEPS = 200


def score_interval(mean_tokens: float, k: int, cycles: int, z: float = Z_95) -> tuple[float, float]:
    """95% score (Wilson-type) interval of E[T] from the mean of ``cycles`` i.i.d. cycles.

    The interval is every E[T](q, k), q in [0, 1], at which the observed mean lies within z standard
    errors, the standard error taken at q itself (sqrt(Var[T](q, k) / cycles)), not at the sample.  At
    k = 1 (tokens are 1 plus a Bernoulli) this is exactly Wilson's interval; like it, it keeps its level
    for a handful of cycles, never degenerates when all cycles agree, and lies inside [1, k + 1] because
    q does.  For many cycles it tends to the normal interval mean +/- z s / sqrt(n).
    """
    if k == 0:
        return 1.0, 1.0
    observed = min(max(mean_tokens, 1.0), k + 1.0)
    centre = acceptance_from_mean_length(observed, k)

    def outside(q: float) -> bool:
        return cycles * (observed - expected_tokens(q, k)) ** 2 > z * z * accepted_variance(q, k)

    def edge(inside: float, beyond: float) -> float:
        if not outside(beyond):
            return beyond
        for _ in range(INTERVAL_STEPS):
            middle = 0.5 * (inside + beyond)
            if middle in (inside, beyond):
                break
            if outside(middle):
                beyond = middle
            else:
                inside = middle
        return inside

    return expected_tokens(edge(centre, 0.0), k), expected_tokens(edge(centre, 1.0), k)


def bounded_normal_interval(mean: float, standard_error: float, k: int, z: float = Z_95) -> tuple[float, float]:
    """mean +/- z standard errors, cut to the values tokens per cycle can take, [1, k + 1]."""
    return max(mean - z * standard_error, 1.0), min(mean + z * standard_error, k + 1.0)


@dataclass(frozen=True)
class Cycle:
    """One draft-and-verify cycle of a run."""

    drafted: int
    accepted: int
    rejected_at: int | None  # draft position (0-based) of the first rejection, if any
    target_token: str  # "correction", "bonus" after k acceptances, "plain" at k = 0
    tokens: int  # accepted + 1
    total_tokens: int
    total_passes: float


@dataclass(frozen=True)
class Trace:
    cycles: list[Cycle]
    tokens: int
    passes: float
    speedup: float


@dataclass(frozen=True)
class Aggregate:
    cycles: int
    mean_tokens_per_cycle: float
    interval_low: float
    interval_high: float
    standard_error: float
    expected_tokens: float
    histogram: list[int]  # cycles with j accepted drafts, j = 0..k
    histogram_expected: list[float]  # closed-form counts for the same number of cycles
    empirical_speedup: float
    closed_form_speedup: float
    rho: float = 0.0  # lag-1 correlation of acceptances (app.bursty); 0 is i.i.d.
    markov_expected_tokens: float | None = None  # exact E[T] under that correlation; set when rho != 0


def draw_accepted(rng: np.random.Generator, p: float, k: int, cycles: int) -> np.ndarray:
    """Accepted drafts per cycle: min(first rejection index, k), drawn for many cycles at once."""
    if k == 0 or p == 0.0:
        return np.zeros(cycles, dtype=np.int64)
    if p == 1.0:
        return np.full(cycles, k, dtype=np.int64)
    # geometric(1 - p) counts trials up to and including the first rejection.
    accepted = rng.geometric(1.0 - p, size=cycles)
    accepted -= 1
    np.minimum(accepted, k, out=accepted)
    return accepted


def simulate(p: float, k: int, c: float, cycles: int, seed: int, rho: float = 0.0) -> Aggregate:
    """Aggregate of many cycles: mean tokens with a 95% interval, histogram, empirical speedup.

    With rho != 0 acceptance is bursty (app.bursty): cycles are correlated, so the
    interval uses batch means; expected_tokens and histogram_expected stay the
    i.i.d. closed form the simulation is held against.
    """
    rng = np.random.default_rng(seed)
    if rho != 0.0:
        return _simulate_bursty(p, k, c, cycles, rng, rho)
    accepted = draw_accepted(rng, p, k, cycles)
    histogram = np.bincount(accepted, minlength=k + 1)
    values = np.arange(k + 1, dtype=np.float64)
    mean_accepted = float(histogram @ values) / cycles
    second_moment = float(histogram @ (values * values)) / cycles
    variance = max(second_moment - mean_accepted**2, 0.0) * cycles / max(cycles - 1, 1)
    standard_error = math.sqrt(variance / cycles)
    mean_tokens = mean_accepted + 1.0
    cost = cost_per_cycle(k, c)
    low, high = score_interval(mean_tokens, k, cycles)
    return _aggregate(p, k, cost, cycles, mean_tokens, (low, high), standard_error, histogram.tolist())


def _aggregate(
    p: float,
    k: int,
    cost: float,
    cycles: int,
    mean_tokens: float,
    interval: tuple[float, float],
    standard_error: float,
    histogram: list[int],
    rho: float = 0.0,
    markov_expected_tokens: float | None = None,
) -> Aggregate:
    """The aggregate of a simulation beside the closed form at (p, k) and the cost per cycle."""
    return Aggregate(
        cycles=cycles,
        mean_tokens_per_cycle=mean_tokens,
        interval_low=interval[0],
        interval_high=interval[1],
        standard_error=standard_error,
        expected_tokens=expected_tokens(p, k),
        histogram=histogram,
        histogram_expected=[cycles * q for q in accepted_distribution(p, k)],
        empirical_speedup=mean_tokens / cost,
        closed_form_speedup=expected_tokens(p, k) / cost,
        rho=rho,
        markov_expected_tokens=markov_expected_tokens,
    )


def _simulate_bursty(p: float, k: int, c: float, cycles: int, rng: np.random.Generator, rho: float) -> Aggregate:
    accepted = bursty.sample_accepted(p, k, cycles, rng, rho)
    tokens = accepted + 1.0
    mean_tokens = float(tokens.mean())
    standard_error = bursty.batch_means_standard_error(tokens)
    cost = cost_per_cycle(k, c)
    # Correlated cycles: batch means (normal), cut to [1, k + 1]; too few cycles for batches give [1, k + 1].
    if standard_error == 0.0 and cycles < 4:
        low, high = 1.0, k + 1.0
    else:
        low, high = bounded_normal_interval(mean_tokens, standard_error, k)
    return _aggregate(
        p,
        k,
        cost,
        cycles,
        mean_tokens,
        (low, high),
        standard_error,
        np.bincount(accepted, minlength=k + 1).tolist(),
        rho=rho,
        markov_expected_tokens=bursty.expected_tokens(p, k, rho),
    )


def _target_token(k: int, rejected_at: int | None) -> str:
    if k == 0:
        return "plain"
    return "correction" if rejected_at is not None else "bonus"


def run_trace(p: float, k: int, c: float, tokens: int, seed: int, rho: float = 0.0) -> Trace:
    """Cycle-by-cycle run until at least ``tokens`` tokens are produced; rho != 0 makes acceptance bursty."""
    rng = np.random.default_rng(seed)
    cycles: list[Cycle] = []
    total_tokens = 0
    total_passes = 0.0
    cost = cost_per_cycle(k, c)
    while total_tokens < tokens:
        if rho == 0.0:
            batch = draw_accepted(rng, p, k, max(1, tokens - total_tokens))
        else:  # one chain for the whole run: ``tokens`` cycles always suffice
            batch = bursty.sample_accepted(p, k, tokens, rng, rho)
        for accepted in batch.tolist():
            rejected_at = accepted if accepted < k else None
            total_tokens += accepted + 1
            total_passes += cost
            cycles.append(
                Cycle(
                    drafted=k,
                    accepted=accepted,
                    rejected_at=rejected_at,
                    target_token=_target_token(k, rejected_at),
                    tokens=accepted + 1,
                    total_tokens=total_tokens,
                    total_passes=total_passes,
                )
            )
            if total_tokens >= tokens:
                break
    return Trace(
        cycles=cycles,
        tokens=total_tokens,
        passes=total_passes,
        speedup=total_tokens / total_passes,
    )
