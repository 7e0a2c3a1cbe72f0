"""Exactness and real acceptance: the sampling rule, chains with rollback, an n-gram pair, bursty acceptance."""

from __future__ import annotations

import functools

import numpy as np
from fastapi import APIRouter, Request

from app.model.arithmetic import bursty, closed_form, ngram, sampling
from app.model.limits import BURSTY_CURVE_POINTS, GOODNESS_OF_FIT_ALPHA
from app.service import core_inputs
from app.service import sampling_inputs as inputs
from app.service.schemas.fill import filled
from app.service.schemas.sampling import (
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
from app.web.api.inputs import takes
from app.web.api.params import RHO_RULES, check_rho
from app.web.api.setup_params import RULES
from app.web.core.errors import parameter_error, with_rules
from app.web.core.heavy import HEAVY, in_worker_process, run_heavy

router = APIRouter(prefix="/api/v1", tags=["sampling"])

RULE_DESCRIPTIONS = {
    "exact": "draft x ~ q, keep it with probability min(1, p(x)/q(x)), else sample max(0, p - q) normalised",
    "argmax": "keep the draft only if it is the target's most likely token, else sample p",
    "resample_target": "keep with probability min(1, p(x)/q(x)), but on rejection sample p, not the residual",
}


NGRAM_RULES = RULES + ("- `draft_order` is below `target_order`: the draft is the smaller model.")


def _rule_outcome(result: sampling.RuleResult, shown: np.ndarray) -> RuleOutcome:
    empirical = result.empirical
    shown_mass = float(empirical[shown].sum())
    return filled(  # the result's and its test's own fields by name, and these
        RuleOutcome,
        result,
        result.test,
        description=RULE_DESCRIPTIONS[result.rule],
        chi_square=result.test.statistic,
        histogram=empirical[shown].tolist(),
        histogram_rest=max(0.0, 1.0 - shown_mass),
    )


@router.get(
    "/exact-rule", summary="The exact rule against two wrong rules", response_model=ExactRule, dependencies=HEAVY
)
@in_worker_process
@takes(inputs.VOCAB, *inputs.FAMILY, inputs.TRIALS, core_inputs.SEED, inputs.HISTOGRAM_TOKENS)
def get_exact_rule(
    vocab: int,
    target_temperature: float,
    draft_temperature: float,
    draft_distance: float,
    trials: int,
    seed: int,
    histogram_tokens: int,
) -> ExactRule:
    """The exact rule beside two wrong rules on a seeded target/draft pair: acceptance, bias, goodness of fit."""
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
        alpha=GOODNESS_OF_FIT_ALPHA,
        overlap=pair.overlap,
        total_variation=sampling.total_variation(pair.target, pair.draft),
        histogram_tokens=shown.tolist(),
        target=pair.target[shown].tolist(),
        target_rest=max(0.0, 1.0 - float(pair.target[shown].sum())),
        draft=pair.draft[shown].tolist(),
        draft_rest=max(0.0, 1.0 - float(pair.draft[shown].sum())),
        rules=[_rule_outcome(results[rule], shown) for rule in sampling.RULES],
    )


@router.get("/chain", summary="Several drafts per cycle, with rollback", response_model=ChainTrace, dependencies=HEAVY)
@in_worker_process
@takes(inputs.CHAIN_VOCAB, inputs.CHAIN_K, inputs.CHAIN_TOKENS, *inputs.FAMILY, core_inputs.SEED)
def get_chain(
    vocab: int,
    k: int,
    tokens: int,
    target_temperature: float,
    draft_temperature: float,
    draft_distance: float,
    seed: int,
) -> ChainTrace:
    """Multi-token speculative sampling on two Markov chains: every draft, verdict and move of the length."""
    pair = sampling.make_markov_pair(vocab, target_temperature, draft_temperature, draft_distance, seed)
    chain = sampling.speculative_chain(pair.target_next, pair.draft_next, [0], k, tokens, seed)
    return filled(
        ChainTrace,
        chain,
        vocab=vocab,
        k=k,
        tokens=tokens,
        seed=seed,
        target_temperature=target_temperature,
        draft_temperature=draft_temperature,
        draft_distance=draft_distance,
        cycles=[filled(ChainCycleOut, cycle) for cycle in chain.cycles],
        steps=[ChainStepOut(**vars(step)) for step in chain.steps],
    )


def ngram_answer(
    k: int, tokens: int, temperature: float, draft_order: int, target_order: int, seed: int, prompt: str
) -> NgramRun:
    """The n-gram run and its summary; called in a heavy-work process."""
    run = ngram.run_pair(k, tokens, seed, temperature, draft_order, target_order, prompt)
    histogram = np.bincount([cycle.accepted for cycle in run.chain.cycles], minlength=k + 1)
    return filled(
        NgramRun,
        run,  # k, the seed, the temperature and both orders as the run was made with them
        tokens=tokens,
        prompt=prompt,
        corpus_characters=len(ngram.corpus()),
        histogram=histogram.tolist(),
        histogram_iid=[run.cycles * share for share in closed_form.accepted_distribution(run.acceptance, k)],
        per_position=[NgramPosition(**vars(position)) for position in run.per_position],
        segments=[TextSegment(text=segment.text, kind=segment.kind) for segment in run.segments],
    )


@router.get("/ngram", summary="A real n-gram draft and target", response_model=NgramRun, dependencies=HEAVY)
@with_rules(NGRAM_RULES)
@takes(
    inputs.NGRAM_K,
    inputs.NGRAM_TOKENS,
    inputs.NGRAM_TEMPERATURE,
    inputs.DRAFT_ORDER,
    inputs.TARGET_ORDER,
    core_inputs.SEED,
    inputs.PROMPT,
)
async def get_ngram(
    request: Request,
    k: int,
    tokens: int,
    temperature: float,
    draft_order: int,
    target_order: int,
    seed: int,
    prompt: str,
) -> NgramRun:
    """Speculative sampling with two character n-gram models trained on standard-library docstrings."""
    if draft_order >= target_order:
        # Name the order the caller chose: the other one may be a default.
        if "draft_order" in request.query_params:
            raise parameter_error("draft_order", f"must be below target_order ({target_order}); got {draft_order}")
        raise parameter_error("target_order", f"must be above draft_order ({draft_order}); got {target_order}")
    outside = sorted({character for character in prompt if not " " <= character <= "~"})
    if outside:
        raise parameter_error("prompt", f"must be printable ASCII (space to tilde); got {''.join(outside)!r}")
    # Training and sampling take a while: in a heavy-work process, off this worker's interpreter.
    call = functools.partial(ngram_answer, k, tokens, temperature, draft_order, target_order, seed, prompt)
    answer: NgramRun = await run_heavy(request.app, call)
    return answer


@router.get(
    "/bursty", summary="Bursty (Markov) acceptance against the closed form", response_model=Bursty, dependencies=HEAVY
)
@in_worker_process
@with_rules(RHO_RULES)
@takes(core_inputs.P, inputs.BURSTY_K, core_inputs.RHO, inputs.BURSTY_CYCLES, core_inputs.SEED)
def get_bursty(p: float, k: int, rho: float, cycles: int, seed: int) -> Bursty:
    """Markov (bursty) acceptance: simulated tokens per cycle against the exact value and the i.i.d. closed form."""
    check_rho(p, rho)
    run = bursty.simulate(p, k, rho, cycles, seed)
    stream = bursty.summarise_stream(run.accepted, k)
    chain = bursty.transitions(p, rho)
    low, high = bursty.rho_bounds(p)
    grid, curve = bursty.curve(p, k, BURSTY_CURVE_POINTS)
    return filled(
        Bursty,
        run,
        chain,  # the transition probabilities after an acceptance and after a rejection
        p=p,
        k=k,
        rho=rho,
        rho_min=low,
        rho_max=high,
        cycles=cycles,
        seed=seed,
        measured_acceptance=stream.acceptance,
        measured_autocorrelation=stream.autocorrelation,
        histogram=np.bincount(run.accepted, minlength=k + 1).tolist(),
        histogram_iid=[cycles * share for share in closed_form.accepted_distribution(p, k)],
        curve=[BurstyPoint(rho=rho, expected_tokens=tokens) for rho, tokens in zip(grid, curve, strict=True)],
    )
