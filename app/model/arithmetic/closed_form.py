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


def accepted_variance(p: float, k: int) -> float:
    """Var[A] of the accepted draft tokens of one cycle (the variance of tokens per cycle too: they differ by one)."""
    probabilities = accepted_distribution(p, k)
    mean = sum(j * share for j, share in enumerate(probabilities))
    return max(sum((j - mean) ** 2 * share for j, share in enumerate(probabilities)), 0.0)


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


def _verify_at(k: int, verify: VerifyCost) -> float:
    return 1.0 if k == 0 else verify(k)


def beats(p: float, longer: int, shorter: int, c: float, verify: VerifyCost = free_verification) -> bool:
    """Whether speedup(p, longer) > speedup(p, shorter), decided without subtracting two speedups.

    With E_j = E_i + p^(i+1) E[T](p, j-i-1) and C_j = C_i + (j-i) c + v(j) - v(i), S_j > S_i exactly when
    the gain p^(i+1) E[T](p, j-i-1) C_i exceeds the loss E_i ((j-i) c + v(j) - v(i)).  Both sides are
    products of positive terms, compared through their logarithms, so neither cancellation nor underflow of
    p^(i+1) turns a real improvement into a floating-point tie: at c = 0 (free verification) every longer
    draft wins, and only a real tie keeps the shorter k.
    """
    if longer <= shorter:
        raise ValueError("longer must exceed shorter")
    loss = expected_tokens(p, shorter) * (
        (longer - shorter) * c + (_verify_at(longer, verify) - _verify_at(shorter, verify))
    )
    if loss < 0.0:
        return True
    if p == 0.0:
        return False
    if loss == 0.0:
        return True
    log_gain = (
        (shorter + 1) * math.log(p)
        + math.log(expected_tokens(p, longer - shorter - 1))
        + math.log(cost_per_cycle(shorter, c, verify))
    )
    return log_gain > math.log(loss)


def best_k(p: float, c: float, k_max: int, verify: VerifyCost = free_verification) -> tuple[int, float]:
    """argmax of speedup over 1..k_max, ties to the smaller k; (0, 1.0) when none beats 1.

    Candidates are compared with :func:`beats`, never by rounded speedups, so the answer is the true argmax.
    """
    chosen = 0
    for k in range(1, k_max + 1):
        if beats(p, k, chosen, c, verify):
            chosen = k
    return chosen, speedup(p, chosen, c, verify)


def limit_reached(best: int, k_search_max: int) -> bool:
    """Best k is the longest draft searched: a longer one may do better, so the search range binds."""
    return best > 0 and best >= k_search_max


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
    if expected_tokens(1.0, k) == cost:
        return 1.0  # k c + v(k) = k + 1: only p = 1 breaks even
    if expected_tokens(1.0, k) < cost:
        return None
    if expected_tokens(0.0, k) >= cost:
        return 0.0
    return _bisect_increasing(lambda p: expected_tokens(p, k), cost, 0.0, 1.0)


def max_draft_cost(p: float, k: int, verify: VerifyCost = free_verification) -> float | None:
    """Largest draft cost c that still breaks even at (p, k); None when no c >= 0 does."""
    if k == 0:
        return None
    # E[T] - v(k) = p E[T](p, k - 1) - (v(k) - 1): the accepted drafts are never computed as E[T] - 1,
    # which loses all digits of p for tiny p.
    margin = p * expected_tokens(p, k - 1) - (verify(k) - 1.0)
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
    longest = float(k + 1)  # as a float, as the length is: a huge k + 1 rounds
    if not 1.0 <= length <= longest:
        raise ValueError("mean acceptance length must lie in [1, k + 1]")
    if k == 0 or length == 1.0:
        return 0.0
    if length == longest:
        return 1.0
    return _bisect_increasing(lambda p: expected_tokens(p, k), length, 0.0, 1.0)


def operations_increase(p: float, k: int, c_ops: float = 0.0) -> float:
    """Leviathan Thm 3.11: arithmetic grows by (1-p)(k c_ops + k + 1) / (1 - p^(k+1))."""
    return (k * c_ops + k + 1) / expected_tokens(p, k)
