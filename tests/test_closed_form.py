from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.model.arithmetic import closed_form as cf

probabilities = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
draft_lengths = st.integers(min_value=0, max_value=64)
costs = st.floats(min_value=0.0, max_value=2.0, allow_nan=False)


@pytest.mark.parametrize(
    ("p", "k", "tokens", "operations"),
    [(0.8, 5, 3.69, 1.63), (0.9, 10, 6.86, 1.60)],
)
def test_reference_values_of_leviathan(p: float, k: int, tokens: float, operations: float) -> None:
    assert round(cf.expected_tokens(p, k), 2) == tokens
    assert round(cf.operations_increase(p, k, 0.0), 2) == operations


def test_seed_demo_defaults() -> None:
    assert round(cf.expected_tokens(0.75, 6), 2) == 3.47
    assert round(cf.cost_per_cycle(6, 0.15), 2) == 1.90
    assert round(cf.speedup(0.75, 6, 0.15), 2) == 1.82
    assert cf.best_k(0.75, 0.15, 12)[0] == 4


def test_exact_at_the_edges() -> None:
    assert cf.expected_tokens(0.0, 7) == 1.0
    assert cf.expected_tokens(1.0, 7) == 8.0
    assert cf.expected_tokens(0.3, 0) == 1.0
    assert cf.speedup(0.9, 0, 0.5) == 1.0
    assert cf.accepted_distribution(0.0, 3) == [1.0, 0.0, 0.0, 0.0]
    assert cf.accepted_distribution(1.0, 3) == [0.0, 0.0, 0.0, 1.0]


@pytest.mark.parametrize("gap", [1e-9, 1e-12, 1e-15])
@pytest.mark.parametrize("k", [1, 5, 64])
def test_accurate_near_one(gap: float, k: int) -> None:
    p = 1.0 - gap
    # Exact sum with high precision: sum_j p^j.
    exact = math.fsum(p**j for j in range(k + 1))
    assert cf.expected_tokens(p, k) == pytest.approx(exact, rel=1e-13)
    assert cf.expected_tokens(p, k) <= k + 1


@given(probabilities, probabilities, draft_lengths)
def test_expected_tokens_rises_with_p(p1: float, p2: float, k: int) -> None:
    low, high = sorted((p1, p2))
    assert cf.expected_tokens(low, k) <= cf.expected_tokens(high, k) + 1e-12


@given(probabilities, st.integers(min_value=0, max_value=63))
def test_expected_tokens_rises_with_k_and_is_bounded(p: float, k: int) -> None:
    value = cf.expected_tokens(p, k)
    assert 1.0 <= value <= k + 1
    assert value <= cf.expected_tokens(p, k + 1)


@given(probabilities, draft_lengths)
def test_distribution_sums_to_one_and_has_mean_expected_tokens_minus_one(p: float, k: int) -> None:
    distribution = cf.accepted_distribution(p, k)
    assert math.fsum(distribution) == pytest.approx(1.0, abs=1e-12)
    mean = math.fsum(j * q for j, q in enumerate(distribution))
    assert mean + 1 == pytest.approx(cf.expected_tokens(p, k), rel=1e-9, abs=1e-9)


@given(probabilities, costs)
def test_speedup_is_one_at_k_zero(p: float, c: float) -> None:
    assert cf.speedup(p, 0, c) == 1.0


@given(probabilities, st.integers(min_value=1, max_value=64))
def test_conversions_round_trip(p: float, k: int) -> None:
    rate = cf.draft_acceptance_rate(p, k)
    assert 0.0 <= rate <= 1.0
    assert cf.acceptance_from_draft_rate(rate, k) == pytest.approx(p, abs=1e-9)
    length = cf.mean_acceptance_length(p, k)
    if p < 0.999:  # near 1 the length is flat in p: any p in a 1e-9-wide interval fits
        assert cf.acceptance_from_mean_length(length, k) == pytest.approx(p, abs=1e-7)


def test_reported_rate_is_not_p() -> None:
    assert cf.draft_acceptance_rate(0.75, 6) == pytest.approx(0.75 * (1 - 0.75**6) / (0.25 * 6))
    assert cf.draft_acceptance_rate(0.75, 6) < 0.75


@given(
    st.floats(min_value=0.01, max_value=0.99, allow_nan=False),
    st.floats(min_value=0.0, max_value=0.98, allow_nan=False),
)
def test_best_k_is_at_least_one_when_p_beats_c(p: float, c: float) -> None:
    if p <= c:
        return
    best, value = cf.best_k(p, c, 64)
    assert best >= 1
    assert value > 1.0
    guarantee = cf.leviathan_guarantee(p, c)
    assert guarantee is not None
    assert value >= guarantee - 1e-12


def test_do_not_speculate_when_nothing_pays() -> None:
    assert cf.best_k(0.1, 0.5, 20) == (0, 1.0)


def test_best_k_ties_go_to_the_smaller_k() -> None:
    # p = 1 and c = 1: every k gives (k + 1) / (k + 1) = 1, so nothing beats 1.
    assert cf.best_k(1.0, 1.0, 10) == (0, 1.0)
    # p = 1, c = 0: S = k + 1 strictly increasing -> the largest k.
    assert cf.best_k(1.0, 0.0, 10) == (10, 11.0)


@given(st.integers(min_value=1, max_value=30), st.floats(min_value=0.0, max_value=0.8, allow_nan=False))
def test_break_even_acceptance_gives_speedup_one(k: int, c: float) -> None:
    p_star = cf.break_even_acceptance(k, c)
    if p_star is None:
        assert cf.speedup(1.0, k, c) <= 1.0
        return
    assert cf.speedup(p_star, k, c) == pytest.approx(1.0, abs=1e-9)


@given(probabilities, st.integers(min_value=1, max_value=30))
def test_max_draft_cost_breaks_even(p: float, k: int) -> None:
    c_max = cf.max_draft_cost(p, k)
    assert c_max is not None  # E[T] >= 1 = v(k) always
    assert cf.speedup(p, k, c_max) == pytest.approx(1.0, abs=1e-9)


def test_operations_increase_matches_theorem_form() -> None:
    p, k, c_ops = 0.7, 4, 0.05
    theorem = (1 - p) * (k * c_ops + k + 1) / (1 - p ** (k + 1))
    assert cf.operations_increase(p, k, c_ops) == pytest.approx(theorem, rel=1e-12)


def test_conversion_bounds_are_enforced() -> None:
    with pytest.raises(ValueError, match="rate"):
        cf.acceptance_from_draft_rate(1.5, 3)
    with pytest.raises(ValueError, match="length"):
        cf.acceptance_from_mean_length(9.0, 3)


# ---------------------------------------------------------------------------
# Accuracy at the edges


@pytest.mark.parametrize("p", [1e-12, 1e-9, 1e-6, 1e-3, 0.3, 0.5, 0.9, 1 - 1e-9, 1.0])
@pytest.mark.parametrize("k", [1, 2, 5, 64])
def test_max_draft_cost_has_no_cancellation(p: float, k: int) -> None:
    # (E[T] - 1) / k = (p + p^2 + ... + p^k) / k, summed term by term in exact rationals of the float p.
    from fractions import Fraction

    exact = sum(Fraction(p) ** j for j in range(1, k + 1)) / k
    value = cf.max_draft_cost(p, k)
    assert value is not None
    assert abs(Fraction(value) - exact) <= Fraction(1, 10**9) * exact


def test_max_draft_cost_at_tiny_p_is_p() -> None:
    # Was 1.0000889e-12 at p = 1e-12, k = 1 (E[T] - 1 loses the digits of p).
    assert cf.max_draft_cost(1e-12, 1) == 1e-12


@given(st.floats(min_value=0.0, max_value=1.0), st.integers(min_value=1, max_value=64))
def test_break_even_is_one_where_only_p_equal_to_one_pays_nothing(beta: float, k: int) -> None:
    from app.model.cost.regimes import compute_bound_verification

    # k c + v(k) = k + 1 exactly: c = 1 with free verification, c = 0 under the compute-bound regime.
    assert cf.break_even_acceptance(k, 1.0) == 1.0
    assert cf.break_even_acceptance(k, 0.0, compute_bound_verification) == 1.0
    assert cf.speedup(1.0, k, 1.0) == 1.0
    assert cf.break_even_acceptance(k, 1.0 + 1e-9) is None


def test_break_even_of_the_issue_example() -> None:
    assert cf.break_even_acceptance(6, 1.0) == 1.0  # /api/v1/break-even?p=0.5&k=6&c=1


@pytest.mark.parametrize("p", [1e-12, 1e-6, 0.1, 0.5, 0.9, 0.999, 1.0])
@pytest.mark.parametrize("k_max", [1, 8, 53, 64])
def test_best_k_at_zero_cost_is_the_longest_draft(p: float, k_max: int) -> None:
    # With c = 0 and free verification every extra draft adds p^(k+1) > 0 tokens at no cost: the argmax is
    # k_max, although the floating speedups stop changing (at p = 0.5 from k = 53 on).
    assert cf.best_k(p, 0.0, k_max)[0] == k_max


def test_best_k_at_zero_cost_of_the_issue_example() -> None:
    assert cf.speedup(0.5, 53, 0.0) == cf.speedup(0.5, 64, 0.0)  # a floating tie ...
    assert cf.best_k(0.5, 0.0, 64) == (64, cf.speedup(0.5, 64, 0.0))  # ... is not a real one


def test_best_k_keeps_real_ties_at_the_smaller_k() -> None:
    # p = 0: every k gives 1 / (k c + 1) <= 1, so none beats plain decoding, not even at c = 0 (a real tie).
    assert cf.best_k(0.0, 0.0, 64) == (0, 1.0)
    # p = c: S(1) = (1 + p) / (1 + c) = 1 = S(0) exactly, a real tie, so k = 0 (do not speculate) is kept.
    assert cf.beats(0.5, 1, 0, 0.5) is False
    assert cf.best_k(0.5, 0.5, 64) == (0, 1.0)
    # S(2) = S(1) exactly when c = p^2 / (1 + p - p^2): at p = 0.5 that is c = 0.2, which no float is; the
    # comparison of exact terms then decides by the float c actually given, on the side that c lies.
    assert cf.beats(0.5, 2, 1, 0.2 - 1e-12) is True
    assert cf.beats(0.5, 2, 1, 0.2 + 1e-12) is False


@given(probabilities, costs, st.integers(min_value=1, max_value=64))
def test_best_k_is_an_argmax(p: float, c: float, k_max: int) -> None:
    best, value = cf.best_k(p, c, k_max)
    assert value == cf.speedup(p, best, c)
    for k in range(1, k_max + 1):
        assert cf.speedup(p, k, c) <= value * (1 + 1e-12)
    assert cf.limit_reached(best, k_max) == (best == k_max)
