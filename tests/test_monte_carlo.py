from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from app.model.arithmetic import closed_form as cf
from app.model.arithmetic import monte_carlo as mc


@pytest.mark.parametrize(("p", "k"), [(0.75, 6), (0.5, 3), (0.95, 10), (0.2, 1)])
def test_mean_lies_in_its_interval_of_expected_tokens(p: float, k: int) -> None:
    result = mc.simulate(p, k, 0.15, 400_000, seed=7)
    assert result.interval_low <= cf.expected_tokens(p, k) <= result.interval_high
    assert result.interval_high - result.interval_low < 0.005 * cf.expected_tokens(p, k)


@pytest.mark.parametrize(("p", "k"), [(0.75, 6), (0.9, 4), (0.3, 8)])
def test_histogram_follows_the_truncated_geometric(p: float, k: int) -> None:
    result = mc.simulate(p, k, 0.0, 200_000, seed=11)
    observed = np.array(result.histogram, dtype=float)
    expected = np.array(result.histogram_expected)
    keep = expected >= 5
    pooled_observed = np.append(observed[keep], observed[~keep].sum())
    pooled_expected = np.append(expected[keep], expected[~keep].sum())
    if pooled_expected[-1] == 0:
        pooled_observed, pooled_expected = pooled_observed[:-1], pooled_expected[:-1]
    _, p_value = stats.chisquare(pooled_observed, pooled_expected)
    assert p_value > 0.001


def test_chi_square_would_catch_a_wrong_distribution() -> None:
    result = mc.simulate(0.75, 6, 0.0, 200_000, seed=11)
    wrong = np.array(cf.accepted_distribution(0.72, 6)) * result.cycles
    _, p_value = stats.chisquare(np.array(result.histogram, dtype=float), wrong)
    assert p_value < 1e-6


def test_edges_are_exact() -> None:
    assert mc.simulate(0.0, 5, 0.1, 1000, seed=1).histogram == [1000, 0, 0, 0, 0, 0]
    assert mc.simulate(1.0, 5, 0.1, 1000, seed=1).histogram == [0, 0, 0, 0, 0, 1000]
    plain = mc.simulate(0.7, 0, 0.1, 1000, seed=1)
    assert plain.mean_tokens_per_cycle == 1.0
    assert plain.empirical_speedup == 1.0


def test_same_seed_same_result_and_different_seed_differs() -> None:
    first = mc.run_trace(0.75, 6, 0.15, 200, seed=3)
    assert first == mc.run_trace(0.75, 6, 0.15, 200, seed=3)
    assert first != mc.run_trace(0.75, 6, 0.15, 200, seed=4)
    assert mc.simulate(0.6, 4, 0.1, 5000, seed=9) == mc.simulate(0.6, 4, 0.1, 5000, seed=9)


def test_trace_is_consistent() -> None:
    k, c = 6, 0.15
    trace = mc.run_trace(0.75, k, c, 500, seed=5)
    total = 0
    for index, cycle in enumerate(trace.cycles, start=1):
        assert cycle.drafted == k
        assert 0 <= cycle.accepted <= k
        assert cycle.tokens == cycle.accepted + 1
        if cycle.accepted < k:
            assert cycle.rejected_at == cycle.accepted
            assert cycle.target_token == "correction"
        else:
            assert cycle.rejected_at is None
            assert cycle.target_token == "bonus"
        total += cycle.tokens
        assert cycle.total_tokens == total
        assert cycle.total_passes == pytest.approx(index * (k * c + 1))
    assert trace.tokens == total >= 500
    assert trace.tokens - trace.cycles[-1].tokens < 500
    assert trace.speedup == pytest.approx(trace.tokens / trace.passes)


def test_plain_decoding_trace() -> None:
    trace = mc.run_trace(0.9, 0, 0.3, 10, seed=0)
    assert [cycle.target_token for cycle in trace.cycles] == ["plain"] * 10
    assert trace.speedup == 1.0


@pytest.mark.parametrize("cycles", [1, 2, 3, 5, 10, 30])
@pytest.mark.parametrize(("p", "k"), [(0.75, 6), (0.5, 1), (0.99, 4), (0.01, 8), (1.0, 3), (0.0, 3)])
def test_interval_stays_inside_what_tokens_per_cycle_can_be(cycles: int, p: float, k: int) -> None:
    for seed in range(5):
        result = mc.simulate(p, k, 0.1, cycles, seed)
        assert 1.0 <= result.interval_low <= result.mean_tokens_per_cycle <= result.interval_high <= k + 1.0
        assert result.interval_low < result.interval_high  # never a single point, even when every cycle agrees


def test_interval_for_two_cycles_of_the_issue_stays_above_one() -> None:
    # The normal interval at cycles = 2 was [0.52, 2.48]: below the smallest possible value, 1.
    result = mc.simulate(0.75, 6, 0.15, 2, 0)
    assert result.interval_low >= 1.0 and result.interval_high <= 7.0


def test_interval_at_k_one_is_wilsons() -> None:
    # Tokens are 1 plus a Bernoulli(p) at k = 1: the score interval is exactly Wilson's for the acceptance.
    successes, trials, z = 7, 10, mc.Z_95
    phat = successes / trials
    centre = (phat + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z / (1 + z * z / trials) * np.sqrt(phat * (1 - phat) / trials + z * z / (4 * trials * trials))
    low, high = mc.score_interval(1 + phat, 1, trials)
    assert low == pytest.approx(1 + centre - half, abs=1e-9)
    assert high == pytest.approx(1 + centre + half, abs=1e-9)


def test_interval_covers_at_its_level_for_few_cycles() -> None:
    # Coverage of E[T] over many seeded runs of 5 cycles: at least 93% (the normal interval had 85%
    # here, and a degenerate one whenever all cycles agreed).
    p, k, cycles, runs = 0.75, 6, 5, 2000
    truth = cf.expected_tokens(p, k)
    covered = 0
    for seed in range(runs):
        result = mc.simulate(p, k, 0.0, cycles, seed)
        covered += result.interval_low <= truth <= result.interval_high
    assert covered / runs >= 0.93


def test_interval_for_many_cycles_is_the_normal_one() -> None:
    result = mc.simulate(0.75, 6, 0.15, 200_000, 3)
    half_width = mc.Z_95 * result.standard_error
    assert result.interval_low == pytest.approx(result.mean_tokens_per_cycle - half_width, rel=1e-3)
    assert result.interval_high == pytest.approx(result.mean_tokens_per_cycle + half_width, rel=1e-3)


def test_bursty_interval_stays_inside_the_range() -> None:
    for cycles in (1, 2, 3, 10):
        result = mc.simulate(0.75, 6, 0.1, cycles, 0, rho=0.5)
        assert 1.0 <= result.interval_low <= result.interval_high <= 7.0
