from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from app.model.arithmetic import bursty as b
from app.model.arithmetic import closed_form as cf


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
    if rho < 0.999:
        stationary = chain.after_reject / (1.0 - chain.after_accept + chain.after_reject)
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


def test_rho_one_freezes_the_chain_and_is_the_limit() -> None:
    p, k = 0.75, 6
    limit = 1.0 + k * p / (p + k * (1.0 - p))  # cycles weighted by positions used: p / k : 1 - p
    assert b.expected_tokens(p, k, 1.0) == pytest.approx(limit)
    assert b.expected_tokens(p, k, 1.0 - 1e-9) == pytest.approx(limit, rel=1e-6)
    assert b.expected_tokens(p, k, 0.999) == pytest.approx(limit, rel=1e-2)
    means = []
    for seed in range(400):
        accepted = b.sample_accepted(p, k, 50, seed=seed, rho=1.0)
        assert set(accepted.tolist()) in ({0}, {k})
        means.append(accepted.mean() + 1.0)
    assert abs(np.mean(means) - limit) < 4.0 * np.std(means) / np.sqrt(len(means))


@settings(max_examples=100, deadline=None)
@given(st.floats(0.01, 0.99), st.integers(1, 40), st.floats(0.0, 1.0))
def test_expected_tokens_is_continuous_and_bounded(p: float, k: int, fraction: float) -> None:
    low, high = b.rho_bounds(p)
    rho = low + fraction * (high - low)
    value = b.expected_tokens(p, k, rho)
    assert 1.0 <= value <= k + 1.0
    nearby = min(rho + 1e-7, 1.0)
    assert b.expected_tokens(p, k, nearby) == pytest.approx(value, rel=1e-4)


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


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 6).flatmap(lambda k: st.tuples(st.just(k), st.lists(st.integers(0, k), max_size=40))))
def test_stream_summary_matches_the_stream_it_does_not_build(case: tuple[int, list[int]]) -> None:
    k, counts = case
    accepted = np.array(counts, dtype=np.int64)
    stream = b.acceptance_stream(accepted, k)
    summary = b.summarise_stream(accepted, k)
    assert summary.verified == stream.size
    assert summary.accepted == int(stream.sum())
    if stream.size:
        assert summary.acceptance == pytest.approx(stream.mean())
    expected = b.lag1_autocorrelation(stream)
    if expected is None:
        assert summary.autocorrelation is None
    else:
        assert summary.autocorrelation == pytest.approx(expected, abs=1e-9)


def test_monte_carlo_with_rho_zero_is_unchanged_and_with_rho_is_bursty() -> None:
    from app.model.arithmetic import monte_carlo as mc

    assert mc.simulate(0.7, 5, 0.1, 20_000, seed=3) == mc.simulate(0.7, 5, 0.1, 20_000, seed=3, rho=0.0)
    assert mc.run_trace(0.7, 5, 0.1, 300, seed=3) == mc.run_trace(0.7, 5, 0.1, 300, seed=3, rho=0.0)
    result = mc.simulate(0.75, 6, 0.15, 400_000, seed=2, rho=0.5)
    assert result.rho == 0.5
    assert result.markov_expected_tokens == b.expected_tokens(0.75, 6, 0.5)
    assert result.interval_low <= result.markov_expected_tokens <= result.interval_high
    assert result.interval_high < result.expected_tokens == cf.expected_tokens(0.75, 6)
    trace = mc.run_trace(0.75, 6, 0.15, 2_000, seed=2, rho=0.5)
    assert trace.tokens == sum(cycle.tokens for cycle in trace.cycles) >= 2_000
    assert trace.cycles[-1].total_tokens == trace.tokens
    assert trace == mc.run_trace(0.75, 6, 0.15, 2_000, seed=2, rho=0.5)
