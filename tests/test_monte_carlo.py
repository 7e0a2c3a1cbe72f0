from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from app.model import closed_form as cf
from app.model import monte_carlo as mc


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
