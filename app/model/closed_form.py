"""Closed form of speculative decoding under i.i.d. acceptance.

Symbols follow Leviathan et al. (2023): ``p`` is the per-token acceptance
probability (their alpha), ``k`` the draft length and ``c`` the cost of one
draft step relative to one target pass.  Verification cost is a function of
``k`` in target passes; it is 1 when verification is free (batch one,
memory-bound).  Other regimes live in ``app.regimes`` and plug in here.
"""

from __future__ import annotations

import math
from collections.abc import Callable

VerifyCost = Callable[[int], float]

BISECTION_STEPS = 200


def free_verification(k: int) -> float:
    """One target pass checks all k drafts plus one: memory-bound, batch one."""
    return 1.0


def expected_tokens(p: float, k: int) -> float:
    """E[T] = 1 + p + ... + p^k, accurate at p = 0, p = 1 and p within 1e-9 of 1."""
    if k == 0 or p == 0.0:
        return 1.0
    if p == 1.0:
        return float(k + 1)
    one_minus_p = 1.0 - p
    if p < 0.5:
        return (1.0 - p ** (k + 1)) / one_minus_p
    # Near 1 the textbook form cancels; 1 - p is exact here, so go through log1p/expm1.
    return -math.expm1((k + 1) * math.log1p(-one_minus_p)) / one_minus_p


def accepted_distribution(p: float, k: int) -> list[float]:
    """P(A = j) for j = 0..k: p^j (1 - p) below k, p^k at k (truncated geometric)."""
    probabilities = [p**j * (1.0 - p) for j in range(k)]
    probabilities.append(p**k)
    return probabilities


def cost_per_cycle(k: int, c: float, verify: VerifyCost = free_verification) -> float:
    """Cost of one cycle in target passes: k draft steps plus one verification."""
    if k == 0:
        return 1.0
    return k * c + verify(k)


def speedup(p: float, k: int, c: float, verify: VerifyCost = free_verification) -> float:
    """Tokens per unit of target time, relative to plain decoding (k = 0 gives 1)."""
    if k == 0:
        return 1.0
    return expected_tokens(p, k) / cost_per_cycle(k, c, verify)


def speedup_curve(p: float, c: float, k_max: int, verify: VerifyCost = free_verification) -> list[float]:
    """Speedup for k = 0..k_max."""
    return [speedup(p, k, c, verify) for k in range(k_max + 1)]


def best_k(p: float, c: float, k_max: int, verify: VerifyCost = free_verification) -> tuple[int, float]:
    """argmax of speedup over 1..k_max, ties to the smaller k; (0, 1.0) when none beats 1."""
    chosen, chosen_speedup = 0, 1.0
    for k in range(1, k_max + 1):
        value = speedup(p, k, c, verify)
        if value > chosen_speedup:
            chosen, chosen_speedup = k, value
    return chosen, chosen_speedup


def _bisect_increasing(function: Callable[[float], float], target: float, low: float, high: float) -> float:
    """x in [low, high] with function(x) = target, for a non-decreasing function."""
    for _ in range(BISECTION_STEPS):
        middle = 0.5 * (low + high)
        if middle in (low, high):
            break
        if function(middle) < target:
            low = middle
        else:
            high = middle
    return 0.5 * (low + high)


def break_even_acceptance(k: int, c: float, verify: VerifyCost = free_verification) -> float | None:
    """The acceptance p* where speedup(p*, k, c) = 1; None when even p = 1 does not pay."""
    if k == 0:
        return None
    cost = cost_per_cycle(k, c, verify)
    if expected_tokens(1.0, k) <= cost:
        return None
    if expected_tokens(0.0, k) >= cost:
        return 0.0
    return _bisect_increasing(lambda p: expected_tokens(p, k), cost, 0.0, 1.0)


def max_draft_cost(p: float, k: int, verify: VerifyCost = free_verification) -> float | None:
    """Largest draft cost c that still breaks even at (p, k); None when no c >= 0 does."""
    if k == 0:
        return None
    margin = expected_tokens(p, k) - verify(k)
    return margin / k if margin >= 0 else None


def leviathan_guarantee(p: float, c: float) -> float | None:
    """Leviathan Cor. 3.9: if p > c some k gives speedup at least (1 + p) / (1 + c)."""
    return (1.0 + p) / (1.0 + c) if p > c else None


def draft_acceptance_rate(p: float, k: int) -> float:
    """Accepted / drafted as a serving engine reports it: (p - p^(k+1)) / ((1 - p) k)."""
    if k == 0:
        raise ValueError("draft acceptance rate needs k >= 1")
    return p * expected_tokens(p, k - 1) / k


def mean_acceptance_length(p: float, k: int) -> float:
    """Tokens per verification step as a serving engine reports it; equals E[T]."""
    return expected_tokens(p, k)


def acceptance_from_draft_rate(rate: float, k: int) -> float:
    """Invert draft_acceptance_rate for p (both lie in [0, 1])."""
    if not 0.0 <= rate <= 1.0:
        raise ValueError("rate must lie in [0, 1]")
    if k == 0:
        raise ValueError("draft acceptance rate needs k >= 1")
    if rate in (0.0, 1.0):
        return rate
    return _bisect_increasing(lambda p: draft_acceptance_rate(p, k), rate, 0.0, 1.0)


def acceptance_from_mean_length(length: float, k: int) -> float:
    """Invert mean_acceptance_length for p; length lies in [1, k + 1]."""
    if not 1.0 <= length <= k + 1:
        raise ValueError("mean acceptance length must lie in [1, k + 1]")
    if k == 0 or length == 1.0:
        return 0.0
    if length == k + 1:
        return 1.0
    return _bisect_increasing(lambda p: expected_tokens(p, k), length, 0.0, 1.0)


def operations_increase(p: float, k: int, c_ops: float = 0.0) -> float:
    """Leviathan Thm 3.11: arithmetic grows by (1-p)(k c_ops + k + 1) / (1 - p^(k+1))."""
    return (k * c_ops + k + 1) / expected_tokens(p, k)
