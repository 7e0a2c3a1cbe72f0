"""Responses of the sampling endpoints: the exact rule, chains with rollback, the n-gram pair, bursty acceptance."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from app.model.arithmetic.ngram import PairRun, PositionStats
from app.model.arithmetic.sampling import ChainCycle, Step
from app.service.schemas.fill import RecordOut


class RuleOutcome(BaseModel):
    rule: Literal["exact", "argmax", "resample_target"]
    description: str
    trials: int
    accepted: int
    acceptance: float = Field(description="Measured fraction of drafts kept.")
    acceptance_standard_error: float = Field(description="sqrt(a (1 - a) / trials).")
    acceptance_expected: float = Field(
        description="The rule's acceptance probability in closed form: sum min(p, q) for the exact rule."
    )
    bias: float = Field(description="Total variation between the rule's output distribution and the target.")
    measured_bias: float = Field(
        description="Total variation between the empirical output and the target (includes sampling noise)."
    )
    chi_square: float
    degrees_of_freedom: int
    p_value: float = Field(description="Pearson chi-square goodness of fit of the output against the target.")
    bins: int = Field(description="Bins after pooling sparse tokens so each expects at least 5 counts.")
    passes: bool = Field(description="p_value above alpha: the output is indistinguishable from the target.")
    histogram: list[float] = Field(description="Empirical output frequency of each token in histogram_tokens.")
    histogram_rest: float = Field(description="Empirical output frequency of all other tokens together.")


class ExactRule(BaseModel):
    vocab: int
    target_temperature: float
    draft_temperature: float
    draft_distance: float
    trials: int
    seed: int
    alpha: float = Field(description="Significance level of the goodness-of-fit test.")
    overlap: float = Field(description="sum min(p, q) = 1 - total variation: the exact rule's acceptance.")
    total_variation: float
    histogram_tokens: list[int] = Field(description="Token ids shown, most likely under the target first.")
    target: list[float] = Field(description="Target probability of each token in histogram_tokens.")
    target_rest: float
    draft: list[float] = Field(description="Draft probability of each token in histogram_tokens.")
    draft_rest: float
    rules: list[RuleOutcome]


class ChainStepOut(
    RecordOut,
    record=Step,
    descriptions={
        "position": "Buffer position the step is about.",
        "length": "Sequence length (cache position) after the step.",
    },
):
    pass


class ChainCycleOut(
    RecordOut,
    record=ChainCycle,
    descriptions={
        "emitted": "The target's token: the correction after a rejection, or the bonus.",
        "acceptance_probabilities": "min(1, p(x)/q(x)) at each verified draft.",
        "overlaps": "sum min(p, q) at each verified position.",
    },
):
    pass


class ChainTrace(BaseModel):
    vocab: int
    k: int
    tokens: int
    seed: int
    target_temperature: float
    draft_temperature: float
    draft_distance: float
    generated: int
    rollbacks: int = Field(description="Cycles in which the length moved back to drop a rejected suffix.")
    acceptance: float = Field(description="Accepted / verified drafts.")
    mean_overlap: float = Field(description="Mean of sum min(p, q) over verified positions.")
    mean_tokens_per_cycle: float
    sequence: list[int] = Field(description="Prompt then generated tokens: the buffer up to its final length.")
    cycles: list[ChainCycleOut]
    steps: list[ChainStepOut]


class NgramPosition(
    RecordOut,
    record=PositionStats,
    descriptions={
        "position": "1-based draft position within a cycle.",
        "acceptance": "accepted / verified at this position; null when never reached.",
        "mean_overlap": "Mean of sum min(p, q) over those verifications.",
    },
):
    pass


class TextSegment(BaseModel):
    text: str
    kind: Literal["prompt", "accepted", "rejected", "discarded", "corrected", "bonus"]


class NgramRun(
    RecordOut,
    record=PairRun,
    omit=("chain",),
    descriptions={
        "acceptance": "Accepted / verified drafts: the i.i.d. estimate of p.",
        "mean_overlap": "Mean of sum min(p, q) over verified positions.",
        "draft_acceptance_rate": "Accepted / drafted, as a serving engine reports it.",
        "autocorrelation": "Lag-1 autocorrelation of the verified-draft outcomes.",
        "closed_form_tokens": "i.i.d. closed form E[T] at the measured acceptance.",
        "closed_form_from_rate": "i.i.d. closed form at the p implied by the draft acceptance rate.",
        "bursty_tokens": "Two-state Markov model at the measured acceptance and autocorrelation.",
    },
):
    tokens: int
    prompt: str
    corpus_characters: int = Field(description="Characters of standard-library docstrings both models learnt from.")
    histogram: list[int] = Field(description="Cycles with j accepted drafts, j = 0..k.")
    histogram_iid: list[float] = Field(description="i.i.d. truncated geometric at the measured acceptance, as counts.")
    per_position: list[NgramPosition]
    segments: list[TextSegment]


class BurstyPoint(BaseModel):
    rho: float
    expected_tokens: float


class Bursty(BaseModel):
    p: float
    k: int
    rho: float
    rho_min: float = Field(description="Smallest rho keeping both transition probabilities in [0, 1].")
    rho_max: float
    after_accept: float = Field(description="P(accept | previous draft accepted) = p + rho (1 - p).")
    after_reject: float = Field(description="P(accept | previous draft rejected) = p (1 - rho).")
    cycles: int
    seed: int
    mean_tokens_per_cycle: float
    standard_error: float = Field(description="Batch-means standard error (cycles are correlated when rho != 0).")
    interval_95: tuple[float, float]
    expected_tokens: float = Field(description="Exact long-run tokens per cycle under the Markov model.")
    iid_expected_tokens: float = Field(description="The i.i.d. closed form at the same p.")
    iid_error: float = Field(description="iid_expected_tokens / expected_tokens - 1: how far the closed form is off.")
    measured_acceptance: float | None = Field(description="Accepted / verified drafts; null at k = 0.")
    measured_autocorrelation: float | None
    histogram: list[int]
    histogram_iid: list[float] = Field(description="i.i.d. truncated geometric counts for the same cycles.")
    curve: list[BurstyPoint] = Field(description="Exact tokens per cycle across the allowed range of rho.")
