"""Exactness and real text: the exact rule against two wrong rules, a chain with rollback, a real n-gram
draft/target pair on the standard library's docstrings, and bursty (Markov) acceptance."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from app.model.arithmetic import bursty, ngram, sampling
from app.model.limits import (
    BURSTY_CURVE_POINTS,
    DEFAULT_BURSTY_CYCLES,
    DEFAULT_CHAIN_TOKENS,
    GOODNESS_OF_FIT_ALPHA,
    HISTOGRAM_TOKENS,
    MAX_CHAIN_VOCAB,
    MAX_NGRAM_TOKENS,
    TRIAL_CHOICES,
    VOCAB_CHOICES,
)
from app.service import core_inputs
from app.service import sampling_inputs as inputs
from app.service.inputs import Input, link
from app.web.pages.controls import Control, Reading, url_text
from app.web.pages.figures import COLORS, figure, line
from app.web.pages.inputs import control
from app.web.pages.page import Page, View
from app.web.pages.text import fixed

TEMPERATURE_STEP = 0.05
RHO_STEP = 0.01


def _slider(item: Input, step: float = 1, **page: Any) -> Control:
    return control(item, kind="range", step=step, **page)


def _sizes(sizes: tuple[int, ...]) -> tuple[tuple[str, str], ...]:
    return tuple((str(size), f"{size:,}") for size in sizes)


VOCAB = control(inputs.VOCAB, kind="select", options=_sizes(VOCAB_CHOICES), help="tokens the two models choose from")
TARGET_TEMPERATURE = _slider(inputs.TARGET_TEMPERATURE, TEMPERATURE_STEP)
DRAFT_TEMPERATURE = _slider(inputs.DRAFT_TEMPERATURE, TEMPERATURE_STEP)
DRAFT_DISTANCE = _slider(
    inputs.DRAFT_DISTANCE, TEMPERATURE_STEP, help="standard deviation of the noise on the draft's logits"
)
TRIALS = control(inputs.TRIALS, kind="select", options=_sizes(TRIAL_CHOICES))
SEED = control(core_inputs.SEED, label="Seed", legacy=("xseed",))
CHAIN_K = _slider(inputs.CHAIN_K, name="chain_k")
NGRAM_K = _slider(inputs.NGRAM_K, name="ngram_k")
TEMPERATURE = _slider(inputs.NGRAM_TEMPERATURE, TEMPERATURE_STEP)
DRAFT_ORDER = _slider(inputs.DRAFT_ORDER)
TARGET_ORDER = _slider(inputs.TARGET_ORDER)
NGRAM_SEED = control(core_inputs.SEED, name="ngram_seed", label="N-gram seed", legacy=("ngseed",))
RHO = _slider(core_inputs.RHO, RHO_STEP, help="lag-1 correlation of acceptances; 0 is the closed form's coin flips")
P = _slider(core_inputs.P, 0.01, legacy=("rhop",))
K = _slider(inputs.BURSTY_K, label="Bursty draft length k", legacy=("rhok",))

CONTROLS = (
    VOCAB,
    TARGET_TEMPERATURE,
    DRAFT_TEMPERATURE,
    DRAFT_DISTANCE,
    TRIALS,
    SEED,
    CHAIN_K,
    NGRAM_K,
    TEMPERATURE,
    DRAFT_ORDER,
    TARGET_ORDER,
    NGRAM_SEED,
    RHO,
    P,
    K,
)

RULE_NAMES = {"exact": "Exact rule", "argmax": "Accept on argmax", "resample_target": "Resample from the target"}
RULE_COLORS = {"exact": COLORS["good"], "argmax": COLORS["bad"], "resample_target": COLORS["purple"]}
RULE_COLUMNS = ["Rule", "Acceptance (expected)", "Bias (TV)", "χ² p-value", "Output = target?"]
ACTION_COLORS = {
    "draft": COLORS["muted"],
    "accept": COLORS["good"],
    "reject": COLORS["bad"],
    "rollback": COLORS["bad"],
    "correct": COLORS["accent"],
    "bonus": COLORS["purple"],
}
MARKS = {"accepted": "✓", "rejected": "✗", "discarded": ""}


# --- cross-field rules -------------------------------------------------------------------------------


def rho_low(p: float) -> float:
    """The slider's lower end at this p: the least multiple of its step that the Markov chain allows."""
    low, _ = bursty.rho_bounds(p)
    return round(math.ceil(low / RHO_STEP - 1e-9) * RHO_STEP, 10)


def check_rules(reading: Reading) -> None:
    """The rules between controls: orders apart, rho within what p allows (strict: a 422 naming the label)."""
    draft, target = reading.integer("draft_order"), reading.integer("target_order")
    if draft >= target:
        message = f"{DRAFT_ORDER.label} must be below the target order ({target}); got {draft}"
        reading.correct(DRAFT_ORDER, target - 1, message)
    p, rho = reading.number("p"), reading.number("rho")
    low, high = bursty.rho_bounds(p)
    if not low - 1e-12 <= rho <= high:
        message = f"{RHO.label} must be from {fixed(low, 2)} to {high:g} at acceptance p = {fixed(p, 2)}; got {rho:g}"
        reading.correct(RHO, rho_low(p), message)


# --- the model's answers, cached: the page is seeded, and a change of one panel recomputes only that one ---------


@functools.lru_cache(maxsize=32)
def _rules(
    vocab: int, target_temperature: float, draft_temperature: float, distance: float, trials: int, seed: int
) -> tuple[sampling.DistributionPair, dict[sampling.RuleName, sampling.RuleResult]]:
    pair = sampling.make_pair(vocab, target_temperature, draft_temperature, distance, seed)
    return pair, sampling.compare_rules(pair, trials, seed)


@functools.lru_cache(maxsize=32)
def _chain(
    vocab: int, k: int, target_temperature: float, draft_temperature: float, distance: float, seed: int
) -> sampling.Chain:
    pair = sampling.make_markov_pair(vocab, target_temperature, draft_temperature, distance, seed)
    return sampling.speculative_chain(pair.target_next, pair.draft_next, [0], k, DEFAULT_CHAIN_TOKENS, seed)


@functools.lru_cache(maxsize=32)
def _ngram(k: int, temperature: float, draft_order: int, target_order: int, seed: int) -> ngram.PairRun:
    return ngram.run_pair(k, MAX_NGRAM_TOKENS, seed, temperature, draft_order, target_order)


@functools.lru_cache(maxsize=32)
def _bursty(p: float, k: int, rho: float) -> bursty.Simulation:
    return bursty.simulate(p, k, rho, DEFAULT_BURSTY_CYCLES, 0)


# --- display -----------------------------------------------------------------------------------------


def _or_na(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None or not math.isfinite(value) else fixed(value, digits)


def p_value_text(value: float) -> str:
    if value == 0.0:
        return "< 1e-300"
    return f"{value:.1e}" if value < 1e-4 else fixed(value, 3)


def _cell(text: str, css: str = "", header: bool = False) -> dict[str, Any]:
    return {"text": text, "class": css, "style": "", "header": header}


def _link(endpoint: str, **params: Any) -> str:
    return link(f"/api/v1/{endpoint}", {name: url_text(value) for name, value in params.items()})


def rule_panel(pair: sampling.DistributionPair, results: dict[sampling.RuleName, sampling.RuleResult]) -> View:
    exact = results["exact"]
    rows = [
        {
            "class": f"rule-{rule}",
            "cells": [
                _cell(RULE_NAMES[rule], header=True),
                _cell(f"{fixed(result.acceptance, 3)} ({fixed(result.acceptance_expected, 3)})"),
                _cell(fixed(result.bias, 3)),
                _cell(p_value_text(result.test.p_value)),
                _cell("passes" if result.passes else "fails", f"verdict verdict-{'pass' if result.passes else 'fail'}"),
            ],
        }
        for rule, result in results.items()
    ]
    return {
        "acceptance": f"{fixed(exact.acceptance, 3)} ± {fixed(exact.acceptance_standard_error, 3)}",
        "overlap": fixed(pair.overlap, 3),
        "table": {"columns": RULE_COLUMNS, "rows": rows},
        "test": (
            f"Pearson's χ² against the target over {exact.trials:,} trials of each rule, sparse tokens pooled so that "
            f"every bin expects at least {sampling.MIN_EXPECTED_PER_BIN:g}; a rule fails below α = "
            f"{GOODNESS_OF_FIT_ALPHA:g}."
        ),
    }


def rule_figure(pair: sampling.DistributionPair, results: dict[sampling.RuleName, sampling.RuleResult]) -> View:
    shown = np.argsort(-pair.target, kind="stable")[: min(HISTOGRAM_TOKENS, pair.vocab)]
    labels = [f"#{rank}" for rank in range(1, shown.size + 1)]
    if shown.size < pair.vocab:
        labels.append("rest")

    def with_rest(values: np.ndarray) -> list[float]:
        head = values[shown].tolist()
        return [*head, max(0.0, 1.0 - sum(head))] if shown.size < pair.vocab else head

    data = [
        {
            "type": "bar",
            "name": "target t",
            "x": labels,
            "y": with_rest(pair.target),
            "marker": {"color": COLORS["reference"]},
            "hovertemplate": "%{x}: %{y:.4f}<extra>target</extra>",
        },
        line(
            "draft q",
            labels,
            with_rest(pair.draft),
            line={"color": COLORS["muted"], "dash": "dot", "width": 1},
            hovertemplate="%{x}: %{y:.4f}<extra>draft</extra>",
        ),
        *(
            line(
                RULE_NAMES[rule],
                labels,
                with_rest(result.empirical),
                mode="markers",
                marker={
                    "color": RULE_COLORS[rule],
                    "size": 9 if rule == "exact" else 7,
                    "symbol": "circle" if rule == "exact" else "x",
                },
                hovertemplate=f"%{{x}}: %{{y:.4f}}<extra>{RULE_NAMES[rule]}</extra>",
            )
            for rule, result in results.items()
        ),
    ]
    return figure(data, "token, by target rank", "probability", x={"type": "category"}, y={"rangemode": "tozero"})


def _lengths(cycle: sampling.ChainCycle, k: int) -> str:
    drafted = cycle.start_length + k
    if cycle.bonus:
        return f"{cycle.start_length} → {drafted} → {cycle.end_length}"
    return f"{cycle.start_length} → {drafted} ↩ {cycle.start_length + cycle.accepted} → {cycle.end_length}"


def _draft_kind(cycle: sampling.ChainCycle, index: int) -> str:
    if index < cycle.accepted:
        return "accepted"
    return "rejected" if index == cycle.accepted and not cycle.bonus else "discarded"


def chain_panel(chain: sampling.Chain, vocab: int) -> View:
    k = chain.k
    rows = []
    for number, cycle in enumerate(chain.cycles, start=1):
        drafts = []
        for index, token in enumerate(cycle.drafted):
            kind = _draft_kind(cycle, index)
            drafts.append(_cell(f"{token} {MARKS[kind]}".strip(), f"tok tok-{kind}"))
        emitted = "bonus" if cycle.bonus else "correction"
        rows.append(
            {
                "class": "",
                "cells": [
                    _cell(str(number), header=True),
                    _cell(_lengths(cycle, k), "lengths"),
                    *drafts,
                    _cell(f"{cycle.emitted} ({emitted})", f"tok tok-{emitted}"),
                ],
            }
        )
    cycles = len(chain.cycles)
    return {
        "summary": (
            f"{chain.generated} tokens in {cycles} cycles ({fixed(chain.mean_tokens_per_cycle, 2)} per cycle), "
            f"{chain.rollbacks} rollbacks; acceptance {fixed(chain.acceptance, 3)}, "
            f"mean Σ min(t, q) {fixed(chain.mean_overlap, 3)}."
        ),
        "caption": f"All {cycles} cycles of the run, in order",
        "source": (
            f"Target and draft are Markov chains over {vocab:,} tokens (the family above, at most "
            f"{MAX_CHAIN_VOCAB:,}), generating {DEFAULT_CHAIN_TOKENS} tokens from token 0:"
        ),
        "table": {
            "columns": ["Cycle", "Sequence length", *(f"Draft {i}" for i in range(1, k + 1)), "Target adds"],
            "rows": rows,
        },
    }


def chain_figure(chain: sampling.Chain) -> View:
    steps = chain.steps
    return figure(
        [
            line(
                "sequence length",
                list(range(len(steps))),
                [step.length for step in steps],
                mode="lines+markers",
                line={"shape": "hv", "color": COLORS["ink"], "width": 1.5},
                marker={"size": 6, "color": [ACTION_COLORS[step.action] for step in steps]},
                text=[f"{step.action} token {step.token} at {step.position}" for step in steps],
                hovertemplate="step %{x}: length %{y}<br>%{text}<extra></extra>",
            )
        ],
        "step of the run",
        "sequence length",
        showlegend=False,
    )


def ngram_panel(run: ngram.PairRun) -> View:
    return {
        "corpus": f"{len(ngram.corpus()):,}",
        "acceptance": f"{fixed(run.acceptance, 3)} ± {fixed(run.acceptance_standard_error, 3)}",
        "tokens": f"{fixed(run.mean_tokens_per_cycle, 2)} ± {fixed(run.tokens_standard_error, 2)}",
        "closed_form": fixed(run.closed_form_tokens, 2),
        "autocorrelation": _or_na(run.autocorrelation),
        "bursty": _or_na(run.bursty_tokens),
        "overlap": fixed(run.mean_overlap, 3),
        "summary": (
            f"{run.generated:,} characters in {run.cycles:,} cycles; {run.accepted:,} of {run.verified:,} verified "
            f"drafts accepted."
        ),
        "text": [{"text": segment.text, "class": f"seg seg-{segment.kind}"} for segment in run.segments],
    }


def ngram_figure(run: ngram.PairRun) -> View:
    positions = [position for position in run.per_position if position.verified > 0]
    x = [position.position for position in positions]
    return figure(
        [
            {
                "type": "bar",
                "name": "measured",
                "x": x,
                "y": [position.acceptance for position in positions],
                "error_y": {
                    "type": "data",
                    "array": [position.standard_error for position in positions],
                    "color": COLORS["muted"],
                },
                "marker": {"color": COLORS["good"]},
                "text": [f"{position.accepted} / {position.verified}" for position in positions],
                "textposition": "none",
                "hovertemplate": "position %{x}: %{y:.3f} (%{text})<extra></extra>",
            },
            line(
                "mean Σ min(t, q)",
                x,
                [position.mean_overlap for position in positions],
                mode="lines+markers",
                line={"color": COLORS["accent"]},
            ),
            line(
                "overall acceptance",
                [0.5, run.k + 0.5],
                [run.acceptance, run.acceptance],
                line={"color": COLORS["ink"], "dash": "dash", "width": 1},
            ),
        ],
        "draft position in the cycle",
        "acceptance",
        x={"dtick": 1, "range": [0.5, run.k + 0.5]},
        y={"range": [0, 1.05]},
    )


def bursty_panel(p: float, rho: float, run: bursty.Simulation) -> View:
    low, high = run.interval_95
    percent = run.iid_error * 100
    chain = bursty.transitions(p, rho)
    return {
        "simulated": f"{fixed(run.mean_tokens_per_cycle, 2)} ± {fixed((high - low) / 2, 2)}",
        "exact": fixed(run.expected_tokens, 2),
        "iid": fixed(run.iid_expected_tokens, 2),
        "error": f"{'+' if percent >= 0 else '−'}{fixed(abs(percent), 1)}%",
        "transitions": (
            f"P(accept | accepted) = {fixed(chain.after_accept, 2)}, "
            f"P(accept | rejected) = {fixed(chain.after_reject, 2)}."
        ),
        "rho_low": rho_low(p),
    }


def bursty_figure(p: float, k: int, rho: float, run: bursty.Simulation) -> View:
    grid, exact = bursty.curve(p, k, BURSTY_CURVE_POINTS)
    low, high = run.interval_95
    mean = run.mean_tokens_per_cycle
    return figure(
        [
            line("exact, Markov", grid, exact, line={"color": COLORS["accent"], "width": 2.5}),
            line(
                "i.i.d. closed form",
                [grid[0], grid[-1]],
                [run.iid_expected_tokens] * 2,
                line={"color": COLORS["break_even"], "dash": "dash"},
            ),
            line(
                "simulated",
                [rho],
                [mean],
                mode="markers",
                error_y={"type": "data", "array": [high - mean], "arrayminus": [mean - low]},
                marker={"color": COLORS["best"], "size": 11, "line": {"color": COLORS["ink"], "width": 1}},
            ),
        ],
        "lag-1 correlation of acceptances ρ",
        "tokens per cycle",
        x={"range": [grid[0] - 0.02, 1.02]},
        y={"rangemode": "tozero"},
    )


def build(reading: Reading) -> View:
    check_rules(reading)
    vocab, trials, seed = int(reading.text("vocab")), int(reading.text("trials")), reading.integer("seed")
    family = (
        reading.number("target_temperature"),
        reading.number("draft_temperature"),
        reading.number("draft_distance"),
    )
    pair, results = _rules(vocab, *family, trials, seed)
    chain_vocab, chain_k = min(vocab, MAX_CHAIN_VOCAB), reading.integer("chain_k")
    chain = _chain(chain_vocab, chain_k, *family, seed)
    orders = (reading.integer("draft_order"), reading.integer("target_order"))
    ngram_k, temperature, ngram_seed = (
        reading.integer("ngram_k"),
        reading.number("temperature"),
        reading.integer("ngram_seed"),
    )
    run = _ngram(ngram_k, temperature, *orders, ngram_seed)
    p, k, rho = reading.number("p"), reading.integer("k"), reading.number("rho")
    simulation = _bursty(p, k, rho)
    family_query = dict(zip(("target_temperature", "draft_temperature", "draft_distance"), family, strict=True))
    return {
        "rule": rule_panel(pair, results),
        "chain": chain_panel(chain, chain_vocab),
        "ngram": {**ngram_panel(run), "draft_max": orders[1] - 1, "target_min": orders[0] + 1},
        "bursty": bursty_panel(p, rho, simulation),
        "figures": {
            "exact-histogram": rule_figure(pair, results),
            "chain-length": chain_figure(chain),
            "ngram-positions": ngram_figure(run),
            "bursty-chart": bursty_figure(p, k, rho, simulation),
        },
        "links": {
            "exact_rule": _link("exact-rule", vocab=vocab, **family_query, trials=trials, seed=seed),
            "chain": _link(
                "chain", vocab=chain_vocab, k=chain_k, tokens=DEFAULT_CHAIN_TOKENS, **family_query, seed=seed
            ),
            "ngram": _link(
                "ngram",
                k=ngram_k,
                tokens=MAX_NGRAM_TOKENS,
                temperature=temperature,
                draft_order=orders[0],
                target_order=orders[1],
                seed=ngram_seed,
            ),
            "bursty": _link("bursty", p=p, k=k, rho=rho, cycles=DEFAULT_BURSTY_CYCLES, seed=0),
        },
    }


PAGE = Page(
    name="exact",
    path="/exact",
    nav="Exactness and real text",
    nav_short="Exact",
    title="Exactness and real acceptance",
    question="Is the output exactly the target's, and how does acceptance behave on real text?",
    template="pages/exact.html",
    controls=CONTROLS,
    build=build,
    legacy_keys=(*(old for control in CONTROLS for old in control.legacy), RHO.name),
)
