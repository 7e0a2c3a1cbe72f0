"""Exactness and real acceptance: the sampling rule, chains with rollback, an n-gram pair, bursty acceptance."""

from __future__ import annotations

import decimal
import functools
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar
from urllib.parse import urlencode

import numpy as np
from fastapi import APIRouter, Query, Request

from app.model import bursty, closed_form, ngram, sampling
from app.web.api.params import MAX_SEED, K, P, Rho, Seed, check_rho
from app.web.core.errors import parameter_error
from app.web.pages.page_format import JS_SPACE, js_exponential, js_fixed, js_number, js_round, js_string
from app.web.schemas.sampling import (
    Bursty,
    BurstyPoint,
    ChainCycleOut,
    ChainStepOut,
    ChainTrace,
    ExactRule,
    NgramPosition,
    NgramRun,
    RuleOutcome,
    TextSegment,
)

router = APIRouter(prefix="/api/v1", tags=["sampling"])
T = TypeVar("T")

MAX_VOCAB = 2_000
MAX_TRIALS = 500_000
MAX_HISTOGRAM_TOKENS = 200
MAX_CHAIN_VOCAB = 200
MAX_CHAIN_TOKENS = 200
MAX_CHAIN_K = 12
MAX_NGRAM_TOKENS = 1_000
MAX_NGRAM_K = 8
MAX_PROMPT = 200
MAX_BURSTY_CYCLES = 1_000_000
BURSTY_CURVE_POINTS = 41
ALPHA = 0.001
Z_95 = 1.959963984540054

RULE_DESCRIPTIONS = {
    "exact": "draft x ~ q, keep it with probability min(1, p(x)/q(x)), else sample max(0, p - q) normalised",
    "argmax": "keep the draft only if it is the target's most likely token, else sample p",
    "resample_target": "keep with probability min(1, p(x)/q(x)), but on rejection sample p, not the residual",
}

Vocab = Annotated[int, Query(ge=2, le=MAX_VOCAB, description=f"Vocabulary size, 2 to {MAX_VOCAB:,}.")]
ChainVocab = Annotated[
    int,
    Query(ge=2, le=MAX_CHAIN_VOCAB, description=f"Vocabulary size of the two Markov chains, 2 to {MAX_CHAIN_VOCAB}."),
]
Temperature = Annotated[
    float, Query(ge=0.05, le=5.0, allow_inf_nan=False, description="Sampling temperature, 0.05 to 5.")
]
Distance = Annotated[
    float,
    Query(
        ge=0.0,
        le=5.0,
        allow_inf_nan=False,
        description="Standard deviation of the noise added to the target's logits to make the draft's, 0 to 5.",
    ),
]
Trials = Annotated[
    int, Query(ge=1_000, le=MAX_TRIALS, description=f"Independent trials of each rule, 1,000 to {MAX_TRIALS:,}.")
]
HistogramTokens = Annotated[
    int,
    Query(
        ge=1, le=MAX_HISTOGRAM_TOKENS, description=f"Most likely tokens shown one by one, 1 to {MAX_HISTOGRAM_TOKENS}."
    ),
]
ChainK = Annotated[int, Query(ge=1, le=MAX_CHAIN_K, description=f"Draft length k, 1 to {MAX_CHAIN_K}.")]
ChainTokens = Annotated[
    int, Query(ge=1, le=MAX_CHAIN_TOKENS, description=f"Tokens to generate, 1 to {MAX_CHAIN_TOKENS}.")
]
NgramK = Annotated[int, Query(ge=1, le=MAX_NGRAM_K, description=f"Draft length k, 1 to {MAX_NGRAM_K}.")]
NgramTokens = Annotated[
    int, Query(ge=1, le=MAX_NGRAM_TOKENS, description=f"Characters to generate, 1 to {MAX_NGRAM_TOKENS:,}.")
]
DraftOrder = Annotated[
    int,
    Query(ge=1, le=6, description="Order of the draft model (characters of context + 1), 1 to 6; below the target's."),
]
TargetOrder = Annotated[int, Query(ge=2, le=7, description="Order of the target model, 2 to 7; above the draft's.")]
# Length and alphabet are checked in the handler (a 422 that says which rule failed) and documented here.
Prompt = Annotated[
    str,
    Query(
        description=f"Text to continue: printable ASCII (space to tilde), at most {MAX_PROMPT} characters.",
        json_schema_extra={"maxLength": MAX_PROMPT, "pattern": "^[ -~]*$"},
    ),
]
BurstyCycles = Annotated[
    int, Query(ge=100, le=MAX_BURSTY_CYCLES, description=f"Cycles to simulate, 100 to {MAX_BURSTY_CYCLES:,}.")
]


def _rule_outcome(result: sampling.RuleResult, shown: np.ndarray) -> RuleOutcome:
    empirical = result.empirical
    shown_mass = float(empirical[shown].sum())
    return RuleOutcome(
        rule=result.rule,
        description=RULE_DESCRIPTIONS[result.rule],
        trials=result.trials,
        accepted=result.accepted,
        acceptance=result.acceptance,
        acceptance_standard_error=result.acceptance_standard_error,
        acceptance_expected=result.acceptance_expected,
        bias=result.bias,
        measured_bias=result.measured_bias,
        chi_square=result.test.statistic,
        degrees_of_freedom=result.test.degrees_of_freedom,
        p_value=result.test.p_value,
        bins=result.test.bins,
        passes=result.test.p_value > ALPHA,
        histogram=empirical[shown].tolist(),
        histogram_rest=max(0.0, 1.0 - shown_mass),
    )


@router.get("/exact-rule", response_model=ExactRule)
def get_exact_rule(
    vocab: Vocab = 50,
    target_temperature: Temperature = 1.0,
    draft_temperature: Temperature = 1.0,
    draft_distance: Distance = 1.0,
    trials: Trials = 100_000,
    seed: Seed = 0,
    histogram_tokens: HistogramTokens = 30,
) -> ExactRule:
    """The exact rule beside two wrong rules on a seeded target/draft pair: acceptance, bias, goodness of fit."""
    return build_exact_rule(
        vocab, target_temperature, draft_temperature, draft_distance, trials, seed, histogram_tokens
    )


def build_exact_rule(
    vocab: int,
    target_temperature: float,
    draft_temperature: float,
    draft_distance: float,
    trials: int,
    seed: int,
    histogram_tokens: int,
) -> ExactRule:
    """The body of /exact-rule, shared with the page's first paint."""
    pair = sampling.make_pair(vocab, target_temperature, draft_temperature, draft_distance, seed)
    results = sampling.compare_rules(pair, trials, seed)
    shown = np.argsort(-pair.target, kind="stable")[: min(histogram_tokens, vocab)]
    return ExactRule(
        vocab=vocab,
        target_temperature=target_temperature,
        draft_temperature=draft_temperature,
        draft_distance=draft_distance,
        trials=trials,
        seed=seed,
        alpha=ALPHA,
        overlap=pair.overlap,
        total_variation=sampling.total_variation(pair.target, pair.draft),
        histogram_tokens=shown.tolist(),
        target=pair.target[shown].tolist(),
        target_rest=max(0.0, 1.0 - float(pair.target[shown].sum())),
        draft=pair.draft[shown].tolist(),
        draft_rest=max(0.0, 1.0 - float(pair.draft[shown].sum())),
        rules=[_rule_outcome(results[rule], shown) for rule in sampling.RULES],
    )


@router.get("/chain", response_model=ChainTrace)
def get_chain(
    vocab: ChainVocab = 20,
    k: ChainK = 4,
    tokens: ChainTokens = 40,
    target_temperature: Temperature = 1.0,
    draft_temperature: Temperature = 1.0,
    draft_distance: Distance = 1.0,
    seed: Seed = 0,
) -> ChainTrace:
    """Multi-token speculative sampling on two Markov chains: every draft, verdict and move of the length."""
    return build_chain(vocab, k, tokens, target_temperature, draft_temperature, draft_distance, seed)


def build_chain(
    vocab: int,
    k: int,
    tokens: int,
    target_temperature: float,
    draft_temperature: float,
    draft_distance: float,
    seed: int,
) -> ChainTrace:
    """The body of /chain, shared with the page's first paint."""
    pair = sampling.make_markov_pair(vocab, target_temperature, draft_temperature, draft_distance, seed)
    chain = sampling.speculative_chain(pair.target_next, pair.draft_next, [0], k, tokens, seed)
    verified = sum(cycle.verified for cycle in chain.cycles)
    accepted = sum(cycle.accepted for cycle in chain.cycles)
    overlap = sum(sum(cycle.overlaps[: cycle.verified]) for cycle in chain.cycles)
    return ChainTrace(
        vocab=vocab,
        k=k,
        tokens=tokens,
        seed=seed,
        target_temperature=target_temperature,
        draft_temperature=draft_temperature,
        draft_distance=draft_distance,
        generated=chain.generated,
        rollbacks=sum(1 for cycle in chain.cycles if not cycle.bonus),
        acceptance=accepted / verified,
        mean_overlap=overlap / verified,
        mean_tokens_per_cycle=chain.generated / len(chain.cycles),
        sequence=chain.sequence,
        cycles=[
            ChainCycleOut(
                start_length=cycle.start_length,
                drafted=cycle.drafted,
                accepted=cycle.accepted,
                emitted=cycle.emitted,
                bonus=cycle.bonus,
                acceptance_probabilities=cycle.acceptance_probabilities,
                overlaps=cycle.overlaps,
                end_length=cycle.end_length,
            )
            for cycle in chain.cycles
        ],
        steps=[ChainStepOut(**vars(step)) for step in chain.steps],
    )


@router.get("/ngram", response_model=NgramRun)
def get_ngram(
    request: Request,
    k: NgramK = 4,
    tokens: NgramTokens = 1_000,
    temperature: Temperature = 0.5,
    draft_order: DraftOrder = 3,
    target_order: TargetOrder = 6,
    seed: Seed = 0,
    prompt: Prompt = "Return the ",
) -> NgramRun:
    """Speculative sampling with two character n-gram models trained on standard-library docstrings."""
    if draft_order >= target_order:
        # Name the order the caller chose: the other one may be a default.
        if "draft_order" in request.query_params:
            raise parameter_error("draft_order", f"must be below target_order ({target_order}); got {draft_order}")
        raise parameter_error("target_order", f"must be above draft_order ({draft_order}); got {target_order}")
    if len(prompt) > MAX_PROMPT:
        raise parameter_error("prompt", f"must be at most {MAX_PROMPT} characters; got {len(prompt)}")
    outside = sorted({character for character in prompt if not " " <= character <= "~"})
    if outside:
        raise parameter_error("prompt", f"must be printable ASCII (space to tilde); got {''.join(outside)!r}")
    run = ngram.run_pair(k, tokens, seed, temperature, draft_order, target_order, prompt)
    histogram = np.bincount([cycle.accepted for cycle in run.chain.cycles], minlength=k + 1)
    return NgramRun(
        k=k,
        tokens=tokens,
        seed=seed,
        temperature=temperature,
        draft_order=draft_order,
        target_order=target_order,
        prompt=prompt,
        corpus_characters=len(ngram.corpus()),
        cycles=run.cycles,
        generated=run.generated,
        verified=run.verified,
        accepted=run.accepted,
        acceptance=run.acceptance,
        acceptance_standard_error=run.acceptance_standard_error,
        mean_overlap=run.mean_overlap,
        draft_acceptance_rate=run.draft_acceptance_rate,
        mean_tokens_per_cycle=run.mean_tokens_per_cycle,
        tokens_standard_error=run.tokens_standard_error,
        autocorrelation=run.autocorrelation,
        closed_form_tokens=run.closed_form_tokens,
        closed_form_from_rate=run.closed_form_from_rate,
        bursty_tokens=run.bursty_tokens,
        histogram=histogram.tolist(),
        histogram_iid=[run.cycles * share for share in closed_form.accepted_distribution(run.acceptance, k)],
        per_position=[NgramPosition(**vars(position)) for position in run.per_position],
        segments=[TextSegment(text=segment.text, kind=segment.kind) for segment in run.segments],
        text=run.text,
    )


def bursty_curve(p: float, k: int) -> list[BurstyPoint]:
    low, high = bursty.rho_bounds(p)
    grid = np.linspace(low, high, BURSTY_CURVE_POINTS)
    return [BurstyPoint(rho=float(rho), expected_tokens=bursty.expected_tokens(p, k, float(rho))) for rho in grid]


@dataclass(frozen=True)
class BurstyClosedForm:
    expected_tokens: float  # exact under the Markov model
    iid_expected_tokens: float  # the i.i.d. closed form at the same p
    iid_error: float  # how far the i.i.d. closed form is off, relative


def bursty_closed_form(p: float, k: int, rho: float) -> BurstyClosedForm:
    """Tokens per cycle under Markov acceptance against the i.i.d. closed form: no simulation, microseconds."""
    expected = bursty.expected_tokens(p, k, rho)
    iid = closed_form.expected_tokens(p, k)
    return BurstyClosedForm(expected_tokens=expected, iid_expected_tokens=iid, iid_error=iid / expected - 1.0)


@router.get("/bursty", response_model=Bursty)
def get_bursty(p: P = 0.75, k: K = 6, rho: Rho = 0.5, cycles: BurstyCycles = 200_000, seed: Seed = 0) -> Bursty:
    """Markov (bursty) acceptance: simulated tokens per cycle against the exact value and the i.i.d. closed form."""
    check_rho(p, rho)
    accepted = bursty.sample_accepted(p, k, cycles, seed, rho)
    tokens = accepted + 1.0
    mean = float(tokens.mean())
    error = bursty.batch_means_standard_error(tokens)
    exact = bursty_closed_form(p, k, rho)
    stream = bursty.summarise_stream(accepted, k)
    chain = bursty.transitions(p, rho)
    low, high = bursty.rho_bounds(p)
    return Bursty(
        p=p,
        k=k,
        rho=rho,
        rho_min=low,
        rho_max=high,
        after_accept=chain.after_accept,
        after_reject=chain.after_reject,
        cycles=cycles,
        seed=seed,
        mean_tokens_per_cycle=mean,
        standard_error=error,
        interval_95=(mean - Z_95 * error, mean + Z_95 * error),
        expected_tokens=exact.expected_tokens,
        iid_expected_tokens=exact.iid_expected_tokens,
        iid_error=exact.iid_error,
        measured_acceptance=stream.acceptance,
        measured_autocorrelation=stream.autocorrelation,
        histogram=np.bincount(accepted, minlength=k + 1).tolist(),
        histogram_iid=[cycles * share for share in closed_form.accepted_distribution(p, k)],
        curve=bursty_curve(p, k),
    )


# --- the page section's first paint ----------------------------------------------------------------
#
# page_context mirrors static/js/exact.js: the same URL keys, the same fallbacks (readNumber in static/js/state.js:
# a missing, malformed or out-of-range value gives that key's default), the same snapping of each range input to
# its step and the same number formatting, so what is painted before any script runs is what the script shows
# after fetching the API for the same URL.  Every value shown is rebuilt from parsed numbers, never echoed.

PAGE_VOCABS = (2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000)
PAGE_TRIALS = (10_000, 100_000, 500_000)
PAGE_HISTOGRAM_TOKENS = 30
PAGE_CHAIN_TOKENS = 40
PAGE_CYCLES_LISTED = 12
RULE_NAMES = {"exact": "Exact rule", "argmax": "Accept on argmax", "resample_target": "Resample from p"}

_EXACT_DECIMAL = decimal.Context(prec=1_000)  # wide enough for any double's exact decimal expansion

logger = logging.getLogger(__name__)


def _read_number(query: Mapping[str, str], name: str, fallback: float, low: float, high: float) -> float:
    """readNumber of static/js/state.js: the first value of ``name``, or the fallback when missing, malformed or
    outside [low, high]."""
    getlist = getattr(query, "getlist", None)  # URLSearchParams.get takes the first of repeated keys
    raw = (getlist(name) or [None])[0] if callable(getlist) else query.get(name)
    if not isinstance(raw, str) or not raw.strip(JS_SPACE):
        return fallback
    value = js_number(raw)
    return value if math.isfinite(value) and low <= value <= high else fallback


def _exponential(value: float) -> str:
    return js_exponential(value, 1)


def _fixed(value: float | None, digits: int = 2) -> str:
    """fixed of exact.js: toFixed, or "n/a" for a missing or non-finite value."""
    return "n/a" if value is None or not math.isfinite(value) else js_fixed(value, digits)


@dataclass(frozen=True)
class RangeInput:
    """An <input type=range>'s min, max and step, as written in the template."""

    low: str
    high: str
    step: str

    def snap(self, value: float) -> float:
        """The value the input holds after ``input.value = String(value)``: clamped, then the nearest step from
        min, halves up (HTML's value sanitization, in decimal arithmetic as browsers do it)."""
        low, high, step = decimal.Decimal(self.low), decimal.Decimal(self.high), decimal.Decimal(self.step)
        clamped = min(max(decimal.Decimal(repr(value)), low), high)
        steps = ((clamped - low) / step).quantize(decimal.Decimal(1), decimal.ROUND_HALF_UP, _EXACT_DECIMAL)
        rounded = low + steps * step
        if rounded > high:
            rounded -= step
        return float(max(rounded, low))


TEMPERATURE_INPUT = RangeInput("0.2", "3", "0.05")
DISTANCE_INPUT = RangeInput("0", "4", "0.05")
NGRAM_TEMPERATURE_INPUT = RangeInput("0.2", "2", "0.05")
RHO_P_INPUT = RangeInput("0.05", "0.99", "0.01")


@dataclass(frozen=True)
class ControlView:
    value: str  # the input's value attribute
    label: str  # the text of its <output>


@dataclass(frozen=True)
class SectionState:
    """The section's controls as exact.js restores them from the URL (restoreState)."""

    vocab_index: int
    target_temperature: float
    draft_temperature: float
    draft_distance: float
    trials: int
    seed: int
    chain_k: int
    ngram_k: int
    ngram_temperature: float
    ngram_draft_order: int
    ngram_target_order: int
    ngram_seed: int
    rho_p: float
    rho_k: int
    rho_min: float
    rho: float

    @property
    def vocab(self) -> int:
        return PAGE_VOCABS[self.vocab_index]

    @property
    def chain_vocab(self) -> int:
        return min(self.vocab, MAX_CHAIN_VOCAB)


def _nearest_vocab_index(value: float) -> int:
    """nearestVocabIndex of exact.js: nearest on a log scale, the smaller size on a tie."""
    best = 0
    for index, size in enumerate(PAGE_VOCABS):
        if abs(math.log(size) - math.log(value)) < abs(math.log(PAGE_VOCABS[best]) - math.log(value)):
            best = index
    return best


def _rho_minimum(p: float) -> float:
    """rhoMinimum of exact.js (the same arithmetic as bursty.rho_bounds, in the script's order of operations)."""
    if p <= 0 or p >= 1:
        return 0.0
    return -min(p, 1 - p) / max(p, 1 - p)


def section_state(query: Mapping[str, str]) -> SectionState:
    """restoreState of exact.js, from the page's query parameters; never raises."""
    trials = _read_number(query, "xtrials", 100_000, 10_000, MAX_TRIALS)
    ngram_draft = js_round(_read_number(query, "ngdraft", 3, 1, 6))
    ngram_target = js_round(_read_number(query, "ngtarget", 6, 2, 7))
    if ngram_draft >= ngram_target:  # keepOrdersApart("target")
        ngram_draft = max(1, ngram_target - 1)
    rho_p = RHO_P_INPUT.snap(_read_number(query, "rhop", 0.75, 0.05, 0.99))
    rho_min = math.ceil(_rho_minimum(rho_p) * 100 - 1e-9) / 100  # fitRhoToP
    rho = max(_read_number(query, "rho", 0.5, -1, 1), rho_min)
    return SectionState(
        vocab_index=_nearest_vocab_index(_read_number(query, "xvocab", 50, 2, MAX_VOCAB)),
        target_temperature=TEMPERATURE_INPUT.snap(_read_number(query, "xtt", 1, 0.2, 3)),
        draft_temperature=TEMPERATURE_INPUT.snap(_read_number(query, "xdt", 1, 0.2, 3)),
        draft_distance=DISTANCE_INPUT.snap(_read_number(query, "xdist", 1, 0, 4)),
        trials=int(trials) if trials in PAGE_TRIALS else 100_000,
        seed=math.trunc(_read_number(query, "xseed", 0, 0, MAX_SEED)),
        chain_k=js_round(_read_number(query, "chk", 4, 1, MAX_CHAIN_K)),
        ngram_k=js_round(_read_number(query, "ngk", 4, 1, MAX_NGRAM_K)),
        ngram_temperature=NGRAM_TEMPERATURE_INPUT.snap(_read_number(query, "ngtemp", 0.5, 0.2, 2)),
        ngram_draft_order=ngram_draft,
        ngram_target_order=ngram_target,
        ngram_seed=math.trunc(_read_number(query, "ngseed", 0, 0, MAX_SEED)),
        rho_p=rho_p,
        rho_k=js_round(_read_number(query, "rhok", 6, 1, 16)),
        rho_min=rho_min,
        rho=RangeInput(js_string(rho_min), "1", "0.01").snap(rho),
    )


def _controls(state: SectionState) -> dict[str, ControlView]:
    """Value and label of every control, keyed by element id, as exact.js's range() shows them."""

    def number(value: float, digits: int = 2) -> ControlView:
        return ControlView(js_string(value), _fixed(value, digits))

    def integer(value: int) -> ControlView:
        return ControlView(str(value), str(value))

    return {
        "exact-vocab": ControlView(str(state.vocab_index), f"{state.vocab:,}"),
        "exact-target-temp": number(state.target_temperature),
        "exact-draft-temp": number(state.draft_temperature),
        "exact-distance": number(state.draft_distance),
        "exact-seed": integer(state.seed),
        "chain-k": integer(state.chain_k),
        "ngram-k": integer(state.ngram_k),
        "ngram-temperature": number(state.ngram_temperature),
        "ngram-draft": integer(state.ngram_draft_order),
        "ngram-target": integer(state.ngram_target_order),
        "ngram-seed": integer(state.ngram_seed),
        "rho": number(state.rho),
        "rho-p": number(state.rho_p),
        "rho-k": integer(state.rho_k),
    }


def exact_rule_is_cheap(vocab: int, trials: int) -> bool:
    """Whether /exact-rule answers within the first paint's budget (about 25 ms on one core; measured:
    100,000 trials take 11 ms at vocabulary 2, 21-28 ms at 50 and 46 ms at 2,000; 10,000 trials at most 9 ms)."""
    return trials <= 10_000 or (trials <= 100_000 and vocab <= 50)


@dataclass(frozen=True)
class RuleRow:
    rule: str
    name: str
    acceptance: str
    bias: str
    p_value: str
    passes: bool


@dataclass(frozen=True)
class ExactRuleView:
    acceptance: str
    overlap: str
    rules: tuple[RuleRow, ...]


@functools.lru_cache(maxsize=64)
def _exact_rule_view(
    vocab: int, target_temperature: float, draft_temperature: float, draft_distance: float, trials: int, seed: int
) -> ExactRuleView:
    """renderRules of exact.js on what /exact-rule returns for the page's request (seeded, so cached)."""
    body = build_exact_rule(
        vocab, target_temperature, draft_temperature, draft_distance, trials, seed, PAGE_HISTOGRAM_TOKENS
    )
    exact = body.rules[0]
    return ExactRuleView(
        acceptance=f"{_fixed(exact.acceptance, 3)} ± {_fixed(exact.acceptance_standard_error, 3)}",
        overlap=_fixed(body.overlap, 3),
        rules=tuple(
            RuleRow(
                rule=rule.rule,
                name=RULE_NAMES[rule.rule],
                acceptance=f"{_fixed(rule.acceptance, 3)} ({_fixed(rule.acceptance_expected, 3)})",
                bias=_fixed(rule.bias, 3),
                p_value=_exponential(rule.p_value) if rule.p_value < 1e-4 else _fixed(rule.p_value, 3),
                passes=rule.passes,
            )
            for rule in body.rules
        ),
    )


@dataclass(frozen=True)
class ChainTokenView:
    kind: str  # accepted, rejected, discarded, correction or bonus
    text: str
    title: str


@dataclass(frozen=True)
class ChainCycleView:
    lengths: str
    tokens: tuple[ChainTokenView, ...]  # the drafts, then the target's token


@dataclass(frozen=True)
class ChainView:
    summary: str
    cycles: tuple[ChainCycleView, ...]


def _cycle_view(cycle: ChainCycleOut, k: int) -> ChainCycleView:
    """cycleRow of exact.js."""
    drafted = cycle.start_length + k
    if cycle.bonus:
        lengths = f"length {cycle.start_length} → {drafted} → {cycle.end_length}"
    else:
        lengths = (
            f"length {cycle.start_length} → {drafted} ↩ {cycle.start_length + cycle.accepted} → {cycle.end_length}"
        )
    tokens = []
    for index, token in enumerate(cycle.drafted):
        kind = "accepted"
        if index == cycle.accepted and not cycle.bonus:
            kind = "rejected"
        elif index > cycle.accepted:
            kind = "discarded"
        tokens.append(ChainTokenView(kind, str(token), f"{kind} draft"))
    if cycle.bonus:
        tokens.append(ChainTokenView("bonus", str(cycle.emitted), "bonus token"))
    else:
        tokens.append(ChainTokenView("correction", str(cycle.emitted), "target's correction"))
    return ChainCycleView(lengths, tuple(tokens))


@functools.lru_cache(maxsize=64)
def _chain_view(
    vocab: int, k: int, target_temperature: float, draft_temperature: float, draft_distance: float, seed: int
) -> ChainView:
    """renderChain of exact.js (all but the chart) on what /chain returns for the page's request."""
    body = build_chain(vocab, k, PAGE_CHAIN_TOKENS, target_temperature, draft_temperature, draft_distance, seed)
    summary = (
        f"{body.generated} tokens in {len(body.cycles)} cycles ({_fixed(body.mean_tokens_per_cycle)} per cycle), "
        f"{body.rollbacks} rollbacks; acceptance {_fixed(body.acceptance, 3)}, "
        f"mean Σ min(p, q) {_fixed(body.mean_overlap, 3)}."
    )
    return ChainView(summary, tuple(_cycle_view(cycle, body.k) for cycle in body.cycles[:PAGE_CYCLES_LISTED]))


@dataclass(frozen=True)
class BurstyView:
    exact: str
    iid: str
    error: str


def _bursty_view(p: float, k: int, rho: float) -> BurstyView:
    """renderBursty of exact.js for the closed-form readouts (the simulated one is left to the script)."""
    result = bursty_closed_form(p, k, rho)
    percent = result.iid_error * 100
    return BurstyView(
        exact=_fixed(result.expected_tokens),
        iid=_fixed(result.iid_expected_tokens),
        error=f"{'+' if percent >= 0 else '−'}{_fixed(abs(percent), 1)}%",
    )


def _guarded(name: str, build: Callable[[], T]) -> T | None:
    """A panel's first paint, or None (the panel then waits for its script) if building it fails."""
    try:
        return build()
    except Exception:
        logger.exception("first paint of the %s panel failed; the page's script renders it instead", name)
        return None


def page_context(query: Mapping[str, str]) -> dict[str, Any]:
    """First-paint numbers of this family's page section, from the page's URL state; never raises.

    Rendered here: every control's value, the exact rule's readouts and rule table (when /exact-rule is cheap at
    the URL's trials and vocabulary, see ``exact_rule_is_cheap``), the chain's summary and first cycles, and the
    bursty panel's closed-form readouts.  Left to the script: the charts, the n-gram pair (training takes
    seconds) and the bursty simulation.
    """
    state = _guarded("controls", lambda: section_state(query)) or section_state({})
    family = (state.target_temperature, state.draft_temperature, state.draft_distance)
    exact = None
    if exact_rule_is_cheap(state.vocab, state.trials):
        exact = _guarded("exact rule", lambda: _exact_rule_view(state.vocab, *family, state.trials, state.seed))
    request = {
        "vocab": state.vocab,
        "target_temperature": js_string(state.target_temperature),
        "draft_temperature": js_string(state.draft_temperature),
        "draft_distance": js_string(state.draft_distance),
        "trials": state.trials,
        "seed": state.seed,
        "histogram_tokens": PAGE_HISTOGRAM_TOKENS,
    }
    return {
        "state": state,
        "controls": _controls(state),
        "rho_min": js_string(state.rho_min),
        "trials": state.trials,
        "exact_rule": exact,
        "exact_rule_json": f"/api/v1/exact-rule?{urlencode(request)}",  # what the script fetches
        "chain": _guarded("chain", lambda: _chain_view(state.chain_vocab, state.chain_k, *family, state.seed)),
        "bursty": _guarded("bursty", lambda: _bursty_view(state.rho_p, state.rho_k, state.rho)),
    }
