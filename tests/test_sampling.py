from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from app.model.arithmetic import sampling as s

ALPHA = 0.001
TRIALS = 100_000

# (vocab, target temperature, draft temperature, draft distance, seed)
PAIRS = [
    (10, 1.0, 1.0, 1.0, 0),
    (50, 1.0, 1.0, 1.0, 1),
    (1000, 1.0, 1.0, 1.0, 2),
    (200, 0.7, 1.3, 0.5, 3),
    (30, 1.5, 0.8, 2.0, 4),  # the argmax rule's bias is only about 0.005 here
]


def distributions(size: int) -> st.SearchStrategy[np.ndarray]:
    weights = st.lists(st.floats(0.0, 1.0), min_size=size, max_size=size).filter(lambda w: sum(w) > 1e-3)
    return weights.map(lambda w: np.array(w) / sum(w))


@pytest.mark.parametrize("parameters", PAIRS)
def test_exact_rule_passes_and_both_wrong_rules_fail_the_same_test(
    parameters: tuple[int, float, float, float, int],
) -> None:
    pair = s.make_pair(*parameters)
    results = s.compare_rules(pair, TRIALS, seed=11)
    assert {result.trials for result in results.values()} == {TRIALS}
    assert results["exact"].test.p_value > ALPHA
    assert results["argmax"].test.p_value < ALPHA
    assert results["resample_target"].test.p_value < ALPHA
    assert results["exact"].bias == 0.0
    for rule in ("argmax", "resample_target"):
        assert results[rule].bias > 0.0
        # The measured bias tracks the rule's bias in closed form up to the sampling noise floor.
        assert abs(results[rule].measured_bias - results[rule].bias) <= results["exact"].measured_bias + 0.01


@pytest.mark.parametrize("parameters", PAIRS)
def test_acceptance_matches_one_minus_total_variation(parameters: tuple[int, float, float, float, int]) -> None:
    pair = s.make_pair(*parameters)
    result = s.run_rule(pair, "exact", TRIALS, seed=5)
    assert result.acceptance_expected == pytest.approx(1.0 - s.total_variation(pair.target, pair.draft))
    assert abs(result.acceptance - pair.overlap) < 3.0 * result.acceptance_standard_error


def test_standard_error_of_acceptance_is_calibrated() -> None:
    pair = s.make_pair(30, 1.0, 1.0, 1.0, seed=8)
    within = [
        abs((result := s.run_rule(pair, "exact", 4_000, seed)).acceptance - pair.overlap)
        <= result.acceptance_standard_error
        for seed in range(300)
    ]
    # About 68% of estimates lie within one standard error; 300 runs put that within +/- 0.09 easily.
    assert 0.59 <= np.mean(within) <= 0.77


def test_argmax_rule_acceptance_and_bias_in_closed_form() -> None:
    pair = s.make_pair(40, 1.0, 1.0, 1.5, seed=2)
    favourite = int(np.argmax(pair.target))
    assert s.rule_acceptance(pair, "argmax") == pair.draft[favourite]
    bias = s.total_variation(s.rule_output_distribution(pair, "argmax"), pair.target)
    assert bias == pytest.approx(pair.draft[favourite] * (1.0 - pair.target[favourite]))
    result = s.run_rule(pair, "argmax", TRIALS, seed=3)
    assert abs(result.acceptance - result.acceptance_expected) < 4.0 * result.acceptance_standard_error


def test_same_seed_same_output_different_seed_differs() -> None:
    pair = s.make_pair(100, 1.0, 1.0, 1.0, seed=4)
    first, accepted = s.speculative_sample(pair, 10_000, np.random.default_rng(9))
    second, accepted_again = s.speculative_sample(pair, 10_000, np.random.default_rng(9))
    other, _ = s.speculative_sample(pair, 10_000, np.random.default_rng(10))
    assert np.array_equal(first, second) and np.array_equal(accepted, accepted_again)
    assert not np.array_equal(first, other)
    assert np.array_equal(s.make_pair(100, 1.0, 1.0, 1.0, seed=4).draft, pair.draft)
    assert not np.array_equal(s.make_pair(100, 1.0, 1.0, 1.0, seed=5).draft, pair.draft)


def test_identical_models_accept_everything() -> None:
    pair = s.make_pair(64, 0.8, 0.8, 0.0, seed=1)
    assert pair.overlap == pytest.approx(1.0)
    result = s.run_rule(pair, "exact", 20_000, seed=1)
    assert result.accepted == 20_000


def test_temperature_and_distance_steer_the_family() -> None:
    near = s.make_pair(500, 1.0, 1.0, 0.2, seed=0)
    far = s.make_pair(500, 1.0, 1.0, 2.0, seed=0)
    assert near.overlap > far.overlap
    cold = s.make_pair(500, 0.3, 1.0, 0.0, seed=0)
    assert cold.target.max() > near.target.max()
    assert cold.overlap < 1.0


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 12).flatmap(lambda n: st.tuples(distributions(n), distributions(n))))
def test_exactness_identity_holds_for_any_pair(pq: tuple[np.ndarray, np.ndarray]) -> None:
    """min(p, q) + (1 - beta) * residual = p: the reason the exact rule outputs the target."""
    p, q = pq
    pair = s.DistributionPair(target=p, draft=q)
    reconstructed = np.minimum(p, q) + (1.0 - pair.overlap) * s.residual(p, q)
    assert np.allclose(reconstructed, p, atol=1e-12)
    for rule in s.RULES:
        assert s.rule_output_distribution(pair, rule).sum() == pytest.approx(1.0)


@settings(max_examples=60, deadline=None)
@given(distributions(8), st.integers(0, 2**32 - 1))
def test_inverse_cdf_never_draws_a_token_of_zero_probability(p: np.ndarray, seed: int) -> None:
    drawn = s.inverse_cdf(p, np.random.default_rng(seed).random(2_000))
    assert np.all(p[drawn] > 0.0)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 50.0), min_size=1, max_size=60))
def test_pooled_bins_each_expect_enough(expected_list: list[float]) -> None:
    expected = np.array(expected_list)
    labels = s.pooled_bins(expected)
    binned = np.bincount(labels, weights=expected)
    assert labels.min() == 0 and set(labels.tolist()) == set(range(binned.size))
    if expected.sum() >= s.MIN_EXPECTED_PER_BIN:
        assert binned.min() >= s.MIN_EXPECTED_PER_BIN - 1e-9


def test_chi_square_agrees_with_scipy_on_dense_bins() -> None:
    counts = np.array([30, 25, 45])
    probabilities = np.array([0.3, 0.3, 0.4])
    ours = s.chi_square_test(counts, probabilities)
    theirs = stats.chisquare(counts, probabilities * 100)
    assert ours.statistic == pytest.approx(theirs.statistic)
    assert ours.p_value == pytest.approx(theirs.pvalue)
    assert ours.degrees_of_freedom == 2


# --- chains with rollback -------------------------------------------------


def test_chain_trace_rolls_back_the_rejected_suffix() -> None:
    pair = s.make_markov_pair(12, 1.0, 1.0, 1.2, seed=3)
    k = 4
    chain = s.speculative_chain(pair.target_next, pair.draft_next, [0], k, 300, seed=2)
    assert chain.generated >= 300
    sequence: list[int] = [0]
    rollbacks = 0
    for index, cycle in enumerate(chain.cycles):
        steps = [step for step in chain.steps if step.cycle == index]
        assert [step.action for step in steps[:k]] == ["draft"] * k
        assert [step.length for step in steps[:k]] == list(range(cycle.start_length + 1, cycle.start_length + k + 1))
        assert cycle.start_length == len(sequence)
        if cycle.bonus:
            assert [step.action for step in steps[k:]] == ["accept"] * k + ["bonus"]
        else:
            rollbacks += 1
            actions = [step.action for step in steps[k:]]
            assert actions == ["accept"] * cycle.accepted + ["reject", "rollback", "correct"]
            rollback = steps[k + cycle.accepted + 1]
            # One integer moves back: the length drops from start + k to the rejected position.
            assert rollback.length == cycle.start_length + cycle.accepted
            assert steps[-1].length == rollback.length + 1
        sequence.extend([*cycle.drafted[: cycle.accepted], cycle.emitted])
        assert cycle.end_length == len(sequence) == steps[-1].length
    assert sequence == chain.sequence
    assert rollbacks > 0
    stream = chain.acceptance_stream()
    assert sum(stream) == sum(cycle.accepted for cycle in chain.cycles)
    assert len(stream) == sum(cycle.verified for cycle in chain.cycles)


def test_chain_output_follows_the_target_chain() -> None:
    """First and second generated tokens from a fixed prompt are distributed as the target's, not the draft's."""
    pair = s.make_markov_pair(6, 1.0, 1.0, 1.5, seed=7)
    runs = 3_000
    first = np.zeros(pair.vocab)
    second = np.zeros(pair.vocab)
    for seed in range(runs):
        chain = s.speculative_chain(pair.target_next, pair.draft_next, [2], 3, 2, seed=seed, record_steps=False)
        first[chain.sequence[1]] += 1
        second[chain.sequence[2]] += 1
    target_first = pair.target[2]
    target_second = target_first @ pair.target
    assert s.chi_square_test(first, target_first).p_value > ALPHA
    assert s.chi_square_test(second, target_second).p_value > ALPHA
    assert s.chi_square_test(first, pair.draft[2]).p_value < ALPHA


def test_chain_is_reproducible() -> None:
    pair = s.make_markov_pair(20, 1.0, 1.0, 1.0, seed=1)
    first = s.speculative_chain(pair.target_next, pair.draft_next, [1], 5, 100, seed=4)
    again = s.speculative_chain(pair.target_next, pair.draft_next, [1], 5, 100, seed=4)
    other = s.speculative_chain(pair.target_next, pair.draft_next, [1], 5, 100, seed=5)
    assert first.sequence == again.sequence and first.steps == again.steps
    assert first.sequence != other.sequence


def test_chain_with_k_zero_is_plain_sampling() -> None:
    pair = s.make_markov_pair(5, 1.0, 1.0, 1.0, seed=1)
    chain = s.speculative_chain(pair.target_next, pair.draft_next, [0], 0, 20, seed=1)
    assert len(chain.cycles) == 20
    assert all(cycle.bonus and cycle.accepted == 0 for cycle in chain.cycles)
