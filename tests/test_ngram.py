from __future__ import annotations

import hashlib
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.model.arithmetic import bursty, ngram
from app.model.arithmetic import closed_form as cf
from app.model.arithmetic.sampling import DistributionPair, run_rule

HELD_OUT = "Return a new list containing all items from the iterable in ascending order.\n"


def test_corpus_is_large_in_the_alphabet_and_the_same_in_a_fresh_interpreter() -> None:
    text = ngram.corpus()
    assert len(text) > 100_000
    assert set(text) <= set(ngram.ALPHABET)
    digest = hashlib.sha256(text.encode()).hexdigest()
    script = (
        "import hashlib; from app.model.arithmetic import ngram; "
        "print(hashlib.sha256(ngram.corpus().encode()).hexdigest())"
    )
    fresh = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert fresh.stdout.strip() == digest


def test_kneser_ney_on_a_toy_corpus_by_hand() -> None:
    ids = ngram.encode("abcab")
    counts = ngram.NgramCounts(ids)
    model = ngram.NgramModel(2, counts=counts)
    a, b, c = (ngram.CHAR_TO_ID[x] for x in "abc")
    bigram = counts.raw(2)
    unigram = counts.continuation(1)
    # Bigrams ab (2), bc (1), ca (1): n1 = 2, n2 = 1, so D2 = n1 / (n1 + 2 n2) = 1/2.
    assert bigram.discount == pytest.approx(2 / (2 + 2 * 1))
    # Continuation counts: b preceded by a only, c by b, a by c: each 1 -> D1 = 1/(1+0), clipped to 0.95.
    assert unigram.discount == pytest.approx(0.95)
    d2, d1 = bigram.discount, unigram.discount
    uniform = 1.0 / ngram.VOCAB
    p1 = {x: (1 - d1) / 3 + d1 * 3 / 3 * uniform for x in (a, b, c)}
    # After "a": c(ab) = 2, one distinct follower.
    expected_b = (2 - d2) / 2 + d2 * 1 / 2 * p1[b]
    distribution = model.distribution([a])
    assert distribution[b] == pytest.approx(expected_b)
    assert distribution[c] == pytest.approx(d2 * 1 / 2 * p1[c])
    assert distribution.sum() == pytest.approx(1.0)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.lists(st.sampled_from(ngram.ALPHABET), max_size=8), st.floats(0.2, 2.0))
def test_every_distribution_is_proper_and_positive(order: int, context: list[str], temperature: float) -> None:
    distribution = ngram.NgramModel(order, temperature).distribution(ngram.encode("".join(context)).tolist())
    assert distribution.shape == (ngram.VOCAB,)
    assert distribution.sum() == pytest.approx(1.0)
    assert np.all(distribution > 0.0)


def cross_entropy(model: ngram.NgramModel, text: str) -> float:
    ids = ngram.encode(text).tolist()
    return -float(np.mean([np.log2(model.distribution(ids[:i])[ids[i]]) for i in range(1, len(ids))]))


def test_higher_orders_predict_unseen_text_better() -> None:
    entropies = [cross_entropy(ngram.NgramModel(order), HELD_OUT) for order in (1, 2, 3, 5)]
    assert entropies == sorted(entropies, reverse=True)
    assert entropies[-1] < 3.0 < entropies[0]


def test_temperature_sharpens() -> None:
    context = ngram.encode("the ").tolist()
    warm = ngram.NgramModel(4, 1.0).distribution(context)
    cold = ngram.NgramModel(4, 0.5).distribution(context)
    assert cold.max() > warm.max()
    assert int(np.argmax(cold)) == int(np.argmax(warm))


def test_pair_run_is_consistent_and_reproducible() -> None:
    run = ngram.run_pair(k=4, tokens=600, seed=3, temperature=0.7, draft_order=3, target_order=6)
    assert run == ngram.run_pair(k=4, tokens=600, seed=3, temperature=0.7, draft_order=3, target_order=6)
    assert run.text != ngram.run_pair(k=4, tokens=600, seed=4, temperature=0.7, draft_order=3, target_order=6).text
    assert run.generated >= 600
    assert run.verified == sum(position.verified for position in run.per_position)
    assert run.accepted == sum(position.accepted for position in run.per_position)
    assert run.per_position[0].verified == run.cycles
    assert [position.verified for position in run.per_position] == sorted(
        (position.verified for position in run.per_position), reverse=True
    )
    assert run.acceptance == run.accepted / run.verified
    assert run.mean_tokens_per_cycle == pytest.approx((run.accepted + run.cycles) / run.cycles)
    assert run.closed_form_tokens == cf.expected_tokens(run.acceptance, 4)
    assert run.draft_acceptance_rate == pytest.approx(run.accepted / (4 * run.cycles))
    stream = np.array(run.chain.acceptance_stream())
    assert run.autocorrelation == bursty.lag1_autocorrelation(stream)


def test_marked_text_reassembles_the_output() -> None:
    run = ngram.run_pair(k=5, tokens=300, seed=1)
    kept = "".join(s.text for s in run.segments if s.kind in ("prompt", "accepted", "corrected", "bonus"))
    assert kept == run.text
    kinds = {segment.kind for segment in run.segments}
    assert {"prompt", "accepted", "rejected", "corrected"} <= kinds
    corrections = sum(1 for cycle in run.chain.cycles if not cycle.bonus)
    rejected_text = "".join(s.text for s in run.segments if s.kind == "rejected")
    assert len(rejected_text) == corrections


def test_measured_acceptance_matches_the_rules_own_probability() -> None:
    """Averaged over verified positions, sum min(p, q) is what the exact rule accepts with."""
    run = ngram.run_pair(k=4, tokens=3_000, seed=2, temperature=1.0, draft_order=3, target_order=5)
    assert abs(run.acceptance - run.mean_overlap) < 4.0 * run.acceptance_standard_error


def test_exact_rule_on_the_ngram_pair_outputs_the_target() -> None:
    context = ngram.encode("Return the ").tolist()
    pair = DistributionPair(
        target=ngram.NgramModel(5).distribution(context), draft=ngram.NgramModel(2).distribution(context)
    )
    assert run_rule(pair, "exact", 50_000, seed=1).test.p_value > 0.001
    assert run_rule(pair, "resample_target", 50_000, seed=1).test.p_value < 0.001


def test_invalid_arguments_are_refused() -> None:
    with pytest.raises(ValueError, match="order"):
        ngram.run_pair(k=3, tokens=10, seed=0, draft_order=4, target_order=4)
    with pytest.raises(ValueError, match="printable ASCII"):
        ngram.run_pair(k=3, tokens=10, seed=0, prompt="caf\u00e9")
    with pytest.raises(ValueError, match="order"):
        ngram.NgramModel(ngram.MAX_ORDER + 1)
