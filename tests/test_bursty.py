from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from app import bursty as b
from app import closed_form as cf


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_bounds_keep_both_probabilities_in_the_unit_interval(p: float, fraction: float) -> None:
    low, high = b.rho_bounds(p)
    rho = low + fraction * (high - low)
    for value in (low, high, rho):
        a = p + value * (1.0 - p)
        r = p * (1.0 - value)
        assert -1e-12 <= a <= 1.0 + 1e-12 and -1e-12 <= r <= 1.0 + 1e-12


@pytest.mark.parametrize(("p", "rho"), [(0.75, -0.34), (0.2, -0.26), (0.5, 1.01), (0.5, -1.01)])
def test_rho_outside_the_bounds_is_refused(p: float, rho: float) -> None:
    with pytest.raises(ValueError, match="rho must lie in"):
        b.expected_tokens(p, 4, rho)


@settings(max_examples=100, deadline=None)
@given(st.floats(0.01, 0.99), st.floats(0.0, 1.0))
def test_chain_has_mean_p_and_lag_one_correlation_rho(p: float, fraction: float) -> None:
    low, high = b.rho_bounds(p)
    rho = low + fraction * (high - low)
    chain = b.transitions(p, rho)
    stationary = chain.after_reject / (1.0 - chain.after_accept + chain.after_reject)
    if rho < 1.0:
        assert stationary == pytest.approx(p)
    assert chain.after_accept - chain.after_reject == pytest.approx(rho, abs=1e-12)


@settings(max_examples=200, deadline=None)
@given(st.floats(0.0, 1.0), st.integers(0, 30))
def test_rho_zero_is_the_closed_form(p: float, k: int) -> None:
    assert b.expected_tokens(p, k, 0.0) == cf.expected_tokens(p, k)


@pytest.mark.parametrize(("p", "k"), [(0.75, 6), (0.3, 2), (0.95, 12)])
def test_rho_zero_sampler_reproduces_the_iid_distribution(p: float, k: int) -> None:
    accepted = b.sample_accepted(p, k, 300_000, seed=3, rho=0.0)
    observed = np.bincount(accepted, minlength=k + 1).astype(float)
    expected = np.array(cf.accepted_distribution(p, k)) * accepted.size
    keep = expected >= 5
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], expected[~keep].sum())
    if expected[-1] == 0:
        observed, expected = observed[:-1], expected[:-1]
    assert stats.chisquare(observed, expected).pvalue > 0.001
    stream = b.acceptance_stream(accepted, k)
    autocorrelation = b.lag1_autocorrelation(stream)
    assert autocorrelation is not None and abs(autocorrelation) < 4.0 / np.sqrt(stream.size)


CASES = [(0.75, 6, 0.5), (0.75, 6, -0.3), (0.5, 4, 0.9), (0.9, 10, 0.6), (0.3, 5, -0.42), (0.6, 1, 0.4)]


@pytest.mark.parametrize(("p", "k", "rho"), CASES)
def test_mean_lies_within_its_interval_of_the_exact_expectation(p: float, k: int, rho: float) -> None:
    tokens = b.sample_accepted(p, k, 1_000_000, seed=17, rho=rho) + 1.0
    error = b.batch_means_standard_error(tokens)
    assert error > 0.0
    assert abs(tokens.mean() - b.expected_tokens(p, k, rho)) < 3.5 * error


@pytest.mark.parametrize(("p", "k", "rho"), CASES)
def test_stream_has_mean_p_and_autocorrelation_rho(p: float, k: int, rho: float) -> None:
    stream = b.acceptance_stream(b.sample_accepted(p, k, 500_000, seed=5, rho=rho), k)
    autocorrelation = b.lag1_autocorrelation(stream)
    assert autocorrelation is not None
    assert abs(autocorrelation - rho) < 0.01
    assert abs(stream.mean() - p) < 0.01


def naive_accepted(p: float, k: int, rho: float, cycles: int, seed: int) -> np.ndarray:
    """A position-by-position reference implementation, long burn-in instead of a stationary start."""
    chain = b.transitions(p, rho)
    rng = np.random.default_rng(seed)
    previous = bool(rng.random() < p)
    for _ in range(1_000):
        previous = bool(rng.random() < (chain.after_accept if previous else chain.after_reject))
    result = []
    for _ in range(cycles):
        accepted = 0
        while accepted < k:
            previous = bool(rng.random() < (chain.after_accept if previous else chain.after_reject))
            if not previous:
                break
            accepted += 1
        result.append(accepted)
    return np.array(result)


@pytest.mark.parametrize(("p", "k", "rho"), [(0.75, 4, 0.5), (0.5, 3, -0.8)])
def test_run_length_sampler_matches_a_naive_chain(p: float, k: int, rho: float) -> None:
    fast = np.bincount(b.sample_accepted(p, k, 60_000, seed=1, rho=rho), minlength=k + 1)
    slow = np.bincount(naive_accepted(p, k, rho, 60_000, seed=2), minlength=k + 1)
    assert stats.chi2_contingency(np.vstack([fast, slow])).pvalue > 0.001


def test_positive_correlation_lowers_tokens_per_cycle_negative_raises_it() -> None:
    iid = b.expected_tokens(0.75, 6, 0.0)
    assert b.expected_tokens(0.75, 6, 0.5) < iid < b.expected_tokens(0.75, 6, -0.3)


def test_rho_one_freezes_the_chain() -> None:
    assert b.expected_tokens(0.75, 6, 1.0) == pytest.approx(1.0 + 0.75 * 6)
    for seed in range(20):
        accepted = b.sample_accepted(0.75, 6, 1_000, seed=seed, rho=1.0)
        assert set(accepted.tolist()) in ({0}, {6})


@pytest.mark.parametrize("rho", [0.0, 0.5, 1.0])
def test_certain_acceptance_and_certain_rejection(rho: float) -> None:
    assert np.all(b.sample_accepted(1.0, 5, 1_000, seed=1, rho=rho) == 5)
    assert b.expected_tokens(1.0, 5, rho) == 6.0
    assert np.all(b.sample_accepted(0.0, 5, 1_000, seed=1, rho=rho) == 0)
    assert b.expected_tokens(0.0, 5, rho) == 1.0


def test_same_seed_same_sample() -> None:
    first = b.sample_accepted(0.7, 5, 10_000, seed=4, rho=0.3)
    assert np.array_equal(first, b.sample_accepted(0.7, 5, 10_000, seed=4, rho=0.3))
    assert not np.array_equal(first, b.sample_accepted(0.7, 5, 10_000, seed=5, rho=0.3))


@settings(max_examples=50, deadline=None)
@given(st.floats(0.0, 1.0), st.integers(0, 8), st.integers(0, 300), st.floats(0.0, 1.0), st.integers(0, 1000))
def test_sampler_returns_exactly_the_cycles_asked_for(
    p: float, k: int, cycles: int, fraction: float, seed: int
) -> None:
    low, high = b.rho_bounds(p)
    accepted = b.sample_accepted(p, k, cycles, seed=seed, rho=low + fraction * (high - low))
    assert accepted.shape == (cycles,)
    assert accepted.min(initial=0) >= 0 and accepted.max(initial=0) <= k


def test_acceptance_stream_and_autocorrelation_helpers() -> None:
    stream = b.acceptance_stream(np.array([2, 0, 3, 1]), k=3)
    assert stream.tolist() == [1, 1, 0, 0, 1, 1, 1, 1, 0]
    assert b.lag1_autocorrelation(np.array([1, 1, 1, 1])) is None
    assert b.lag1_autocorrelation(np.array([0, 1, 0, 1, 0, 1, 0, 1])) == pytest.approx(-7 / 8)
