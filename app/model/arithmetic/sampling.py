"""The exact speculative sampling rule on real distributions, and two wrong rules.

The rule (Leviathan et al. 2023, Alg. 1; Chen et al. 2023): draft x ~ q, accept
with probability min(1, p(x)/q(x)), otherwise output a token drawn from the
residual max(0, p - q) normalised.  The output is distributed exactly as p and
a draft is accepted with probability sum_x min(p(x), q(x)) = 1 - TV(p, q).

Two rules people get wrong, with their output distributions in closed form:

- ``argmax``: accept the draft only when it equals the target's most likely
  token; otherwise output a sample of the target.  Output
  q(a) 1[x = a] + (1 - q(a)) p(x) with a = argmax p: too much mass on a.
- ``resample_target``: the right acceptance test, but on rejection sample
  from p instead of the residual.  Output min(p, q) + (1 - beta) p with
  beta = sum min(p, q): too much mass where the draft already agreed.

Distributions come from a parametric family: a Zipf-shaped vector of target
logits (-log rank), the draft's logits perturbed by Gaussian noise whose
standard deviation is the "distance", each model with its own temperature.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from app.model.limits import GOODNESS_OF_FIT_ALPHA

FloatArray = np.ndarray
RuleName = Literal["exact", "argmax", "resample_target"]
RULES: tuple[RuleName, ...] = ("exact", "argmax", "resample_target")

MIN_EXPECTED_PER_BIN = 5.0
"""Pool categories until every chi-square bin expects at least this many counts (Cochran's rule)."""


@dataclass(frozen=True)
class DistributionPair:
    target: FloatArray  # p, shape (vocab,)
    draft: FloatArray  # q, shape (vocab,)

    @property
    def vocab(self) -> int:
        return int(self.target.size)

    @property
    def overlap(self) -> float:
        """sum min(p, q) = 1 - TV(p, q): the exact rule's acceptance probability."""
        return float(np.minimum(self.target, self.draft).sum())


def softmax(logits: FloatArray, temperature: float) -> FloatArray:
    scaled = np.asarray(logits, dtype=np.float64) / temperature
    scaled = scaled - scaled.max(axis=-1, keepdims=True)
    weights = np.exp(scaled)
    result: FloatArray = weights / weights.sum(axis=-1, keepdims=True)
    return result


def zipf_logits(vocab: int) -> FloatArray:
    """-log(rank): softmax at temperature 1 is Zipf's law with exponent 1, like word frequencies."""
    result: FloatArray = -np.log(np.arange(1, vocab + 1, dtype=np.float64))
    return result


def make_pair(
    vocab: int,
    target_temperature: float = 1.0,
    draft_temperature: float = 1.0,
    draft_distance: float = 1.0,
    seed: int = 0,
) -> DistributionPair:
    """Target softmax(z / T_p) with z = -log rank; draft softmax((z + distance * noise) / T_q), seeded."""
    target, draft = _family(vocab, target_temperature, draft_temperature, draft_distance, seed, per_token=False)
    return DistributionPair(target=target, draft=draft)


def _family(
    vocab: int, target_temperature: float, draft_temperature: float, draft_distance: float, seed: int, per_token: bool
) -> tuple[FloatArray, FloatArray]:
    """The family's target and draft: one pair of vectors, or (``per_token``) a pair of rows per previous token,
    each row with its own shuffled ranks and noise."""
    if vocab < 2:
        raise ValueError("vocab must be at least 2")
    if target_temperature <= 0 or draft_temperature <= 0:
        raise ValueError("temperatures must be positive")
    if draft_distance < 0:
        raise ValueError("draft_distance must be non-negative")
    rng = np.random.default_rng(seed)
    logits = zipf_logits(vocab)
    if per_token:
        logits = np.stack([logits[rng.permutation(vocab)] for _ in range(vocab)])
    noise = rng.standard_normal(logits.shape)
    return softmax(logits, target_temperature), softmax(logits + draft_distance * noise, draft_temperature)


def total_variation(first: FloatArray, second: FloatArray) -> float:
    return 0.5 * float(np.abs(np.asarray(first) - np.asarray(second)).sum())


def inverse_cdf(probabilities: FloatArray, uniforms: FloatArray) -> np.ndarray:
    """Categorical draws by inverse CDF; tokens of zero probability are never drawn."""
    cumulative = np.cumsum(probabilities)
    drawn = np.searchsorted(cumulative, uniforms * cumulative[-1], side="right")
    result: np.ndarray = np.minimum(drawn, probabilities.size - 1)
    return result


def residual(target: FloatArray, draft: FloatArray) -> FloatArray:
    """max(0, p - q) normalised; p itself when the residual vanishes (then rejection has probability 0)."""
    difference = np.maximum(np.asarray(target) - np.asarray(draft), 0.0)
    mass = difference.sum()
    if mass <= 0.0:
        return np.asarray(target, dtype=np.float64)
    result: FloatArray = difference / mass
    return result


def acceptance_ratio(target: FloatArray, draft: FloatArray) -> FloatArray:
    """p(x)/q(x) per token (infinite where q(x) = 0: such a token is never drafted)."""
    ratio = np.full(target.size, np.inf)
    np.divide(target, draft, out=ratio, where=draft > 0)
    return ratio


def rule_output_distribution(pair: DistributionPair, rule: RuleName) -> FloatArray:
    """The distribution a rule outputs, in closed form."""
    p, q = pair.target, pair.draft
    if rule == "exact":
        return p.copy()
    if rule == "argmax":
        favourite = int(np.argmax(p))
        output: FloatArray = (1.0 - q[favourite]) * p
        output[favourite] += q[favourite]
        return output
    if rule == "resample_target":
        result: FloatArray = np.minimum(p, q) + (1.0 - pair.overlap) * p
        return result
    raise ValueError(f"unknown rule {rule!r}")


def rule_acceptance(pair: DistributionPair, rule: RuleName) -> float:
    """Probability that a rule keeps the draft."""
    if rule == "argmax":
        return float(pair.draft[int(np.argmax(pair.target))])
    return pair.overlap


def speculative_sample(pair: DistributionPair, trials: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The exact rule for many independent trials at once: (output tokens, accepted flags)."""
    p, q = pair.target, pair.draft
    drafted = inverse_cdf(q, rng.random(trials))
    accepted = rng.random(trials) < acceptance_ratio(p, q)[drafted]
    output = drafted
    rejected = np.flatnonzero(~accepted)
    if rejected.size:
        output[rejected] = inverse_cdf(residual(p, q), rng.random(rejected.size))
    return output, accepted


def sample_rule(
    pair: DistributionPair, rule: RuleName, trials: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Any of the three rules for many trials: (output tokens, accepted flags)."""
    if rule == "exact":
        return speculative_sample(pair, trials, rng)
    p, q = pair.target, pair.draft
    drafted = inverse_cdf(q, rng.random(trials))
    if rule == "argmax":
        accepted = drafted == int(np.argmax(p))
        rng.random(trials)  # keep the random stream aligned with the other rules
    elif rule == "resample_target":
        accepted = rng.random(trials) < acceptance_ratio(p, q)[drafted]
    else:
        raise ValueError(f"unknown rule {rule!r}")
    output = drafted
    rejected = np.flatnonzero(~accepted)
    if rejected.size:
        output[rejected] = inverse_cdf(p, rng.random(rejected.size))
    return output, accepted


def pooled_bins(expected: FloatArray, minimum: float = MIN_EXPECTED_PER_BIN) -> np.ndarray:
    """Bin label per category so that every bin expects at least ``minimum`` counts.

    Categories expecting ``minimum`` or more keep their own bin; the sparse ones
    are pooled in order of increasing expectation into bins of at least
    ``minimum``; a last sparse remainder joins the previous pooled bin (or the
    smallest dense bin).
    """
    expected = np.asarray(expected, dtype=np.float64)
    labels = np.empty(expected.size, dtype=np.int64)
    order = np.argsort(expected, kind="stable")
    dense = order[expected[order] >= minimum]
    sparse = order[expected[order] < minimum]
    labels[dense] = np.arange(dense.size)
    next_label = dense.size
    running = 0.0
    pending: list[int] = []
    for category in sparse.tolist():
        pending.append(category)
        running += float(expected[category])
        if running >= minimum:
            labels[pending] = next_label
            next_label += 1
            pending, running = [], 0.0
    if pending:
        if next_label > dense.size:
            labels[pending] = next_label - 1
        elif dense.size:
            labels[pending] = labels[dense[0]]
        else:
            labels[pending] = 0
    return labels


@dataclass(frozen=True)
class GoodnessOfFit:
    statistic: float
    degrees_of_freedom: int
    p_value: float
    bins: int


def chi_square_test(counts: np.ndarray, probabilities: FloatArray) -> GoodnessOfFit:
    """Pearson's chi-square of observed counts against a distribution, sparse bins pooled."""
    counts = np.asarray(counts, dtype=np.float64)
    total = counts.sum()
    expected = np.asarray(probabilities, dtype=np.float64) * total
    labels = pooled_bins(expected)
    bins = int(labels.max()) + 1
    observed_binned = np.bincount(labels, weights=counts, minlength=bins)
    expected_binned = np.bincount(labels, weights=expected, minlength=bins)
    expected_binned *= total / expected_binned.sum()
    if bins < 2:
        return GoodnessOfFit(statistic=0.0, degrees_of_freedom=0, p_value=1.0, bins=bins)
    from scipy import stats  # deferred: importing scipy.stats takes about a second

    result = stats.chisquare(observed_binned, expected_binned)
    return GoodnessOfFit(
        statistic=float(result.statistic),
        degrees_of_freedom=bins - 1,
        p_value=float(result.pvalue),
        bins=bins,
    )


@dataclass(frozen=True)
class RuleResult:
    rule: RuleName
    trials: int
    accepted: int
    acceptance: float  # measured
    acceptance_standard_error: float
    acceptance_expected: float  # the rule's acceptance probability in closed form
    counts: np.ndarray  # output counts per token
    output_distribution: FloatArray  # the rule's output distribution in closed form
    bias: float  # TV(output distribution, target), closed form
    measured_bias: float  # TV(empirical output, target)
    test: GoodnessOfFit

    @property
    def empirical(self) -> FloatArray:
        result: FloatArray = self.counts / self.trials
        return result

    @property
    def passes(self) -> bool:
        """The output is indistinguishable from the target at the goodness-of-fit level alpha."""
        return self.test.p_value > GOODNESS_OF_FIT_ALPHA


def run_rule(pair: DistributionPair, rule: RuleName, trials: int, seed: int) -> RuleResult:
    """Run one rule for ``trials`` trials and hold its output against the target."""
    rng = np.random.default_rng(seed)
    output, accepted = sample_rule(pair, rule, trials, rng)
    counts = np.bincount(output, minlength=pair.vocab)
    accepted_count = int(np.count_nonzero(accepted))
    acceptance = accepted_count / trials
    theoretical = rule_output_distribution(pair, rule)
    return RuleResult(
        rule=rule,
        trials=trials,
        accepted=accepted_count,
        acceptance=acceptance,
        acceptance_standard_error=math.sqrt(acceptance * (1.0 - acceptance) / trials),
        acceptance_expected=rule_acceptance(pair, rule),
        counts=counts,
        output_distribution=theoretical,
        bias=total_variation(theoretical, pair.target),
        measured_bias=total_variation(counts / trials, pair.target),
        test=chi_square_test(counts, pair.target),
    )


def compare_rules(pair: DistributionPair, trials: int, seed: int) -> dict[RuleName, RuleResult]:
    """All three rules on the same pair, each with the same seed (common random numbers)."""
    return {rule: run_rule(pair, rule, trials, seed) for rule in RULES}


# --- multi-token chains ---------------------------------------------------

NextTokenDistribution = Callable[[Sequence[int]], FloatArray]
"""Maps the tokens so far to a distribution over the next token."""


@dataclass(frozen=True)
class Step:
    """One event of a chain; ``length`` is the sequence length (cache position) after it."""

    cycle: int
    action: Literal["draft", "accept", "reject", "rollback", "correct", "bonus"]
    position: int
    token: int
    length: int


@dataclass
class ChainCycle:
    start_length: int
    drafted: list[int]
    accepted: int  # drafts kept, 0..k
    emitted: int  # the target's token: correction after a rejection, bonus after k acceptances
    bonus: bool
    acceptance_probabilities: list[float]  # min(1, p(x)/q(x)) at each verified draft
    overlaps: list[float]  # sum min(p, q) at each verified position
    end_length: int

    @property
    def verified(self) -> int:
        """Drafts the target actually judged: all k, or up to and including the first rejection."""
        return self.accepted if self.bonus else self.accepted + 1


@dataclass
class Chain:
    prompt_length: int
    k: int
    sequence: list[int]  # prompt + generated, i.e. the buffer up to the final length
    cycles: list[ChainCycle] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)

    @property
    def generated(self) -> int:
        return len(self.sequence) - self.prompt_length

    @property
    def rollbacks(self) -> int:
        """Cycles that ended at a rejection: the sequence length moved back."""
        return sum(1 for cycle in self.cycles if not cycle.bonus)

    @property
    def acceptance(self) -> float:
        """Accepted over verified drafts."""
        return sum(cycle.accepted for cycle in self.cycles) / sum(cycle.verified for cycle in self.cycles)

    @property
    def mean_overlap(self) -> float:
        """sum min(p, q) averaged over the verified positions: the rule's own acceptance probability."""
        overlap = sum(sum(cycle.overlaps[: cycle.verified]) for cycle in self.cycles)
        return overlap / sum(cycle.verified for cycle in self.cycles)

    @property
    def mean_tokens_per_cycle(self) -> float:
        return self.generated / len(self.cycles)

    def acceptance_stream(self) -> list[int]:
        """Outcomes of every verified draft in order: 1 accepted, 0 rejected."""
        stream: list[int] = []
        for cycle in self.cycles:
            stream.extend([1] * cycle.accepted)
            if not cycle.bonus:
                stream.append(0)
        return stream


def _draw(probabilities: FloatArray, uniform: float) -> int:
    cumulative = probabilities.cumsum()
    index = int(cumulative.searchsorted(uniform * cumulative[-1], side="right"))
    return min(index, probabilities.size - 1)


def speculative_chain(
    target: NextTokenDistribution,
    draft: NextTokenDistribution,
    prompt: Sequence[int],
    k: int,
    tokens: int,
    seed: int,
    record_steps: bool = True,
) -> Chain:
    """Generate at least ``tokens`` tokens with draft length ``k`` and the exact rule.

    The sequence lives in one buffer with an integer length.  Drafting writes
    k tokens past the length; verification keeps the accepted prefix, and a
    rejection at draft j moves the length back to start + j (the rejected
    suffix stays in the buffer but is dead), then writes the correction.
    Generation stops after the cycle in which the count reaches ``tokens``.
    """
    if k < 0:
        raise ValueError("k must be non-negative")
    rng = np.random.default_rng(seed)
    buffer = list(prompt) + [0] * (tokens + k + 1)
    length = len(prompt)
    chain = Chain(prompt_length=len(prompt), k=k, sequence=[])
    steps = chain.steps
    cycle_index = 0
    while length - len(prompt) < tokens:
        start = length
        draft_distributions: list[FloatArray] = []
        drafted: list[int] = []
        for offset in range(k):
            distribution = draft(buffer[: start + offset])
            token = _draw(distribution, float(rng.random()))
            buffer[start + offset] = token
            draft_distributions.append(distribution)
            drafted.append(token)
            if record_steps:
                steps.append(Step(cycle_index, "draft", start + offset, token, start + offset + 1))
        accepted = 0
        acceptance_probabilities: list[float] = []
        overlaps: list[float] = []
        emitted = -1
        bonus = True
        for offset in range(k):
            p = target(buffer[: start + offset])
            q = draft_distributions[offset]
            token = drafted[offset]
            ratio = min(1.0, float(p[token]) / float(q[token]))
            acceptance_probabilities.append(ratio)
            overlaps.append(float(np.minimum(p, q).sum()))
            if float(rng.random()) * float(q[token]) < float(p[token]):
                accepted += 1
                if record_steps:
                    steps.append(Step(cycle_index, "accept", start + offset, token, start + k))
                continue
            bonus = False
            if record_steps:
                steps.append(Step(cycle_index, "reject", start + offset, token, start + k))
            length = start + offset
            if record_steps:
                steps.append(Step(cycle_index, "rollback", start + offset, token, length))
            emitted = _draw(residual(p, q), float(rng.random()))
            buffer[length] = emitted
            length += 1
            if record_steps:
                steps.append(Step(cycle_index, "correct", length - 1, emitted, length))
            break
        if bonus:
            length = start + k
            emitted = _draw(target(buffer[:length]), float(rng.random()))
            buffer[length] = emitted
            length += 1
            if record_steps:
                steps.append(Step(cycle_index, "bonus", length - 1, emitted, length))
        chain.cycles.append(
            ChainCycle(
                start_length=start,
                drafted=drafted,
                accepted=accepted,
                emitted=emitted,
                bonus=bonus,
                acceptance_probabilities=acceptance_probabilities,
                overlaps=overlaps,
                end_length=length,
            )
        )
        cycle_index += 1
    chain.sequence = buffer[:length]
    return chain


@dataclass(frozen=True)
class MarkovPair:
    """A target and a draft Markov chain over a small vocabulary: next-token distributions per previous token."""

    target: FloatArray  # (vocab, vocab), row = previous token
    draft: FloatArray

    @property
    def vocab(self) -> int:
        return int(self.target.shape[0])

    def target_next(self, context: Sequence[int]) -> FloatArray:
        result: FloatArray = self.target[context[-1]]
        return result

    def draft_next(self, context: Sequence[int]) -> FloatArray:
        result: FloatArray = self.draft[context[-1]]
        return result


def make_markov_pair(
    vocab: int,
    target_temperature: float = 1.0,
    draft_temperature: float = 1.0,
    draft_distance: float = 1.0,
    seed: int = 0,
) -> MarkovPair:
    """Each row is the parametric family of ``make_pair`` with its own shuffled ranks and noise."""
    target, draft = _family(vocab, target_temperature, draft_temperature, draft_distance, seed, per_token=True)
    return MarkovPair(target=target, draft=draft)
