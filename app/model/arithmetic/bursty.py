"""Bursty acceptance: a two-state Markov chain instead of i.i.d. coin flips.

Model.  The chain runs over the stream of *verified* drafted positions, in
order, and carries across cycles: the outcome of the last draft the target
judged in one cycle (a rejection, or the k-th acceptance) is the state the
next cycle's first draft is drawn from.  Drafts after the first rejection are
never judged, so they are not in the stream.  This is the stream a real
draft/target pair produces (see ``app.ngram``), and the one whose lag-1
autocorrelation is measured there.

    P(accept | previous accepted) = a = p + rho (1 - p)
    P(accept | previous rejected) = b = p (1 - rho)

The stationary acceptance is b / (1 - a + b) = p and the lag-1
autocorrelation of the stream is a - b = rho.  Both probabilities lie in
[0, 1] exactly when

    -min(p, 1 - p) / max(p, 1 - p) <= rho <= 1

(``rho_bounds``).  rho = 0 is i.i.d. acceptance; negative rho alternates;
rho = 1 freezes the chain in its first state, which is then drawn so that the
result is the limit rho -> 1 (every cycle accepts all k drafts or none, in
proportion p / k : 1 - p).

Sampling is O(N) numpy on run lengths: runs of acceptances are geometric
with continuation probability a, runs of rejections geometric with
continuation 1 - b.  A run of L acceptances followed by m rejections yields
floor(L / k) cycles with k accepted drafts, one cycle with L mod k accepted
(closed by the first rejection) and m - 1 cycles with none.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from app.model.arithmetic.closed_form import expected_tokens as iid_expected_tokens


def rho_bounds(p: float) -> tuple[float, float]:
    """The range of rho for which both transition probabilities lie in [0, 1]."""
    if not 0.0 <= p <= 1.0:
        raise ValueError("p must lie in [0, 1]")
    if p in (0.0, 1.0):
        return 0.0, 1.0
    return -min(p, 1.0 - p) / max(p, 1.0 - p), 1.0


def check_rho(p: float, rho: float) -> None:
    low, high = rho_bounds(p)
    # A little slack for bounds computed in floating point on the caller's side.
    if not low - 1e-12 <= rho <= high:
        raise ValueError(f"rho must lie in [{low:.6g}, {high:g}] at p = {p:g}; got {rho:g}")


@dataclass(frozen=True)
class Transitions:
    after_accept: float  # a
    after_reject: float  # b


def transitions(p: float, rho: float) -> Transitions:
    check_rho(p, rho)
    after_accept = min(max(p + rho * (1.0 - p), 0.0), 1.0)
    after_reject = min(max(p * (1.0 - rho), 0.0), 1.0)
    return Transitions(after_accept, after_reject)


def _power_deficit_over(one_minus_a: float, k: int, scale: float) -> float:
    """(1 - a^k) / scale with a = 1 - one_minus_a, without cancellation when a is near 1."""
    if one_minus_a >= 0.5:
        return (1.0 - max(1.0 - one_minus_a, 0.0) ** k) / scale
    return -math.expm1(k * math.log1p(-one_minus_a)) / scale


def _cycle_entry_accept_probability(p: float, rho: float, k: int) -> float:
    """Stationary probability that a cycle starts right after an acceptance (the previous cycle's k-th).

    The state entering a cycle is itself a two-state chain: the next cycle
    starts after an acceptance exactly when all k drafts of this one are
    accepted, with probability a^k from that state and b a^(k-1) from the
    other.  So pi = b a^(k-1) / (1 - a^k + b a^(k-1)); dividing through by
    1 - rho keeps it accurate near rho = 1, and at rho = 1 (a frozen chain)
    the limit p / (p + k (1 - p)) is used: cycles weighted by the positions
    they use, k per accepting cycle and one per rejecting cycle.
    """
    check_rho(p, rho)
    if p in (0.0, 1.0):
        return p
    tail = transitions(p, rho).after_accept ** (k - 1)
    one_minus_rho = 1.0 - rho
    if one_minus_rho == 0.0:
        deficit = k * (1.0 - p)
    else:
        deficit = _power_deficit_over(one_minus_rho * (1.0 - p), k, one_minus_rho)
    return p * tail / (deficit + p * tail)


def expected_tokens(p: float, k: int, rho: float = 0.0) -> float:
    """Long-run tokens per cycle under Markov acceptance; the i.i.d. closed form at rho = 0.

    E[T] = 1 + G (pi a + (1 - pi) b) with G = 1 + a + ... + a^(k-1) and pi
    the stationary probability that a cycle starts after an acceptance.  It
    is continuous in rho up to rho = 1, where it is 1 + k p / (p + k (1 - p)).
    """
    check_rho(p, rho)
    if k == 0:
        return 1.0
    if rho == 0.0:
        return iid_expected_tokens(p, k)
    chain = transitions(p, rho)
    one_minus_a = (1.0 - rho) * (1.0 - p)
    geometric_sum = float(k) if one_minus_a == 0.0 else _power_deficit_over(one_minus_a, k, one_minus_a)
    entry_accept = _cycle_entry_accept_probability(p, rho, k)
    first_accept = entry_accept * chain.after_accept + (1.0 - entry_accept) * chain.after_reject
    return 1.0 + first_accept * geometric_sum


def _runs_at_least_one(rng: np.random.Generator, continuation: float, size: int, cap: int) -> np.ndarray:
    """Run lengths >= 1 that go on with probability ``continuation``; ``cap`` stands for an endless run."""
    if continuation >= 1.0:
        return np.full(size, cap, dtype=np.int64)
    if continuation <= 0.0:
        return np.ones(size, dtype=np.int64)
    lengths = rng.geometric(1.0 - continuation, size=size).astype(np.int64)
    np.minimum(lengths, cap, out=lengths)
    return lengths


def _run_remainder(rng: np.random.Generator, continuation: float, cap: int) -> int:
    """What is left of a run already under way: length >= 0."""
    if continuation >= 1.0:
        return cap
    if continuation <= 0.0:
        return 0
    return min(int(rng.geometric(1.0 - continuation)) - 1, cap)


def sample_accepted(p: float, k: int, cycles: int, seed: int | np.random.Generator, rho: float = 0.0) -> np.ndarray:
    """Accepted drafts per cycle for ``cycles`` consecutive cycles, the chain carrying across them.

    The first cycle starts from the stationary state for cycles, so every
    cycle has the same distribution and the sample mean is unbiased for
    ``expected_tokens(p, k, rho) - 1``.
    """
    check_rho(p, rho)
    if k < 0 or cycles < 0:
        raise ValueError("k and cycles must be non-negative")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    if k == 0 or cycles == 0:
        return np.zeros(cycles, dtype=np.int64)
    chain = transitions(p, rho)
    a, b = chain.after_accept, chain.after_reject
    ones_cap = cycles * k  # an acceptance run this long fills every cycle
    zeros_cap = cycles  # each rejection closes a cycle

    pieces: list[np.ndarray] = []
    produced = 0
    first_ones: int | None = None
    if rng.random() < _cycle_entry_accept_probability(p, rho, k):
        first_ones = _run_remainder(rng, a, ones_cap)
    else:
        leading = min(_run_remainder(rng, 1.0 - b, zeros_cap), cycles)
        pieces.append(np.zeros(leading, dtype=np.int64))
        produced = leading
    while produced < cycles:
        remaining = cycles - produced
        pairs = int(remaining / _mean_cycles_per_pair(a, b, k) * 1.1) + 16
        ones = _runs_at_least_one(rng, a, pairs, ones_cap)
        if first_ones is not None:
            ones[0] = first_ones
            first_ones = None
        zeros = _runs_at_least_one(rng, 1.0 - b, pairs, zeros_cap)
        block = _cycles_from_runs(ones, zeros, k, remaining)
        pieces.append(block)
        produced += block.size
    return np.concatenate(pieces)


def _mean_cycles_per_pair(a: float, b: float, k: int) -> float:
    """Expected cycles from one acceptance run and the rejection run after it (at least 1)."""
    if a >= 1.0 or b <= 0.0:
        return 1e12  # an endless run: one pair is enough
    return max(1.0, (1.0 / (1.0 - a)) / k + 1.0 / b)


def _cycles_from_runs(ones: np.ndarray, zeros: np.ndarray, k: int, limit: int) -> np.ndarray:
    """Accepted drafts per cycle for alternating runs (ones[i] acceptances, then zeros[i] >= 1 rejections).

    Stops at ``limit`` cycles.
    """
    full = ones // k
    remainder = ones - full * k
    per_pair = full + zeros
    ends = np.cumsum(per_pair)
    used = int(np.searchsorted(ends, limit, side="left")) + 1  # pairs needed to reach limit
    full, remainder, per_pair = full[:used], remainder[:used], per_pair[:used]
    total = int(per_pair.sum())
    result = np.zeros(total, dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(per_pair)[:-1]))
    full_total = int(full.sum())
    if full_total:
        full_offsets = np.concatenate(([0], np.cumsum(full)[:-1]))
        within = np.arange(full_total) - np.repeat(full_offsets, full)
        result[np.repeat(offsets, full) + within] = k
    result[offsets + full] = remainder
    return result[:limit]


def acceptance_stream(accepted: np.ndarray, k: int) -> np.ndarray:
    """The verified-draft outcomes behind accepted-per-cycle counts: A ones, then a zero when A < k."""
    accepted = np.asarray(accepted, dtype=np.int64)
    lengths = accepted + (accepted < k)
    stream = np.ones(int(lengths.sum()), dtype=np.int8)
    ends = np.cumsum(lengths) - 1
    stream[ends[accepted < k]] = 0
    return stream


@dataclass(frozen=True)
class StreamSummary:
    verified: int  # drafts the target judged
    accepted: int
    acceptance: float | None  # accepted / verified
    autocorrelation: float | None  # lag-1, as lag1_autocorrelation(acceptance_stream(...))


def summarise_stream(accepted: np.ndarray, k: int) -> StreamSummary:
    """Mean and lag-1 autocorrelation of the verified-draft stream in O(cycles), without building it.

    Adjacent accepted pairs: A - 1 inside a cycle with A >= 1 acceptances, plus
    one across a boundary when a cycle ends on its k-th acceptance and the next
    cycle's first draft is accepted.
    """
    accepted = np.asarray(accepted, dtype=np.int64)
    if k == 0 or accepted.size == 0:
        return StreamSummary(0, 0, None, None)
    rejected = accepted < k
    n = int(accepted.sum() + np.count_nonzero(rejected))
    ones = int(accepted.sum())
    mean = ones / n if n else None
    if n < 3 or ones in (0, n):
        return StreamSummary(n, ones, mean, None)
    assert mean is not None
    pairs = int(np.maximum(accepted - 1, 0).sum()) + int(np.count_nonzero(~rejected[:-1] & (accepted[1:] >= 1)))
    first = 1 if accepted[0] >= 1 else 0
    last = 0 if rejected[-1] else 1
    numerator = pairs - mean * ((ones - last) + (ones - first)) + (n - 1) * mean * mean
    denominator = ones - ones * ones / n
    return StreamSummary(n, ones, mean, numerator / denominator)


def lag1_autocorrelation(outcomes: np.ndarray) -> float | None:
    """Sample lag-1 autocorrelation of a 0/1 stream; None when it is undefined (constant or too short)."""
    values = np.asarray(outcomes, dtype=np.float64)
    if values.size < 3:
        return None
    centred = values - values.mean()
    denominator = float(centred @ centred)
    if denominator == 0.0:
        return None
    return float(centred[:-1] @ centred[1:]) / denominator


def batch_means_standard_error(values: np.ndarray, batches: int = 50) -> float:
    """Standard error of the mean of a correlated series: the spread of means of ``batches`` contiguous batches.

    With correlated cycles (rho != 0) the i.i.d. formula s / sqrt(n) is wrong;
    batch means are valid once each batch is much longer than the correlation.
    """
    values = np.asarray(values, dtype=np.float64)
    batches = min(batches, values.size // 2)
    if batches < 2:
        return 0.0
    size = values.size // batches
    means = values[: size * batches].reshape(batches, size).mean(axis=1)
    return float(means.std(ddof=1) / np.sqrt(batches))


Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Simulation:
    """Simulated tokens per cycle under Markov acceptance, against the exact value and the i.i.d. closed form."""

    accepted: np.ndarray  # accepted drafts of every cycle
    mean_tokens_per_cycle: float
    standard_error: float  # batch means: cycles are correlated
    interval_95: tuple[float, float]
    expected_tokens: float  # exact under the Markov model
    iid_expected_tokens: float  # the i.i.d. closed form at the same p
    iid_error: float  # how far the i.i.d. closed form is off, relative


def simulate(p: float, k: int, rho: float, cycles: int, seed: int) -> Simulation:
    accepted = sample_accepted(p, k, cycles, seed, rho)
    tokens = accepted + 1.0
    mean = float(tokens.mean())
    error = batch_means_standard_error(tokens)
    expected = expected_tokens(p, k, rho)
    iid = iid_expected_tokens(p, k)
    return Simulation(
        accepted=accepted,
        mean_tokens_per_cycle=mean,
        standard_error=error,
        interval_95=(mean - Z_95 * error, mean + Z_95 * error),
        expected_tokens=expected,
        iid_expected_tokens=iid,
        iid_error=iid / expected - 1.0,
    )


def curve(p: float, k: int, points: int) -> tuple[list[float], list[float]]:
    """Exact tokens per cycle over the whole range of rho this p allows."""
    low, high = rho_bounds(p)
    grid = [float(rho) for rho in np.linspace(low, high, points)]
    return grid, [expected_tokens(p, k, rho) for rho in grid]
