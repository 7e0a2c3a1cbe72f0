"""The inputs of exactness and real text (the exact rule, a chain with rollback, an n-gram pair, bursty
acceptance), declared once for the API and the /exact page.  Where the page shows an input under a key of its
own (``chain_k`` for the chain's k), the page names that key; label, bounds and default stay here."""

from __future__ import annotations

from dataclasses import replace

from app.model import limits
from app.model.arithmetic import ngram
from app.service import core_inputs
from app.service.inputs import Input

PROMPT_PATTERN = "^[ -~]*$"


def _temperature(name: str, label: str, default: float, legacy: str) -> Input:
    return Input(
        name,
        label,
        float,
        default,
        "Sampling temperature",
        limits.TEMPERATURE_MIN,
        limits.TEMPERATURE_MAX,
        legacy=(legacy,),
    )


def _count(name: str, label: str, default: int, help: str, most: int) -> Input:
    """How many of something a request asks for: 1 to ``most``."""
    return Input(name, label, int, default, help, 1, most)


def _order(name: str, label: str, default: int, which: str, span: tuple[int, int], legacy: str) -> Input:
    return Input(name, label, int, default, f"Order of the {which}", *span, legacy=(legacy,))


VOCAB = Input(
    "vocab", "Vocabulary", int, limits.DEFAULT_VOCAB, "Vocabulary size", 2, limits.MAX_VOCAB, legacy=("xvocab",)
)
CHAIN_VOCAB = Input(
    "vocab",
    "Vocabulary of the chains",
    int,
    limits.DEFAULT_CHAIN_VOCAB,
    "Vocabulary size of the two Markov chains",
    2,
    limits.MAX_CHAIN_VOCAB,
)
TARGET_TEMPERATURE = _temperature("target_temperature", "Target temperature", limits.DEFAULT_TEMPERATURE, "xtt")
DRAFT_TEMPERATURE = _temperature("draft_temperature", "Draft temperature", limits.DEFAULT_TEMPERATURE, "xdt")
DRAFT_DISTANCE = Input(
    "draft_distance",
    "Draft's distance from the target",
    float,
    limits.DEFAULT_DRAFT_DISTANCE,
    "Standard deviation of the noise added to the target's logits to make the draft's",
    0.0,
    limits.MAX_DRAFT_DISTANCE,
    legacy=("xdist",),
)
TRIALS = Input(
    "trials",
    "Trials",
    int,
    limits.DEFAULT_TRIALS,
    "Independent trials of each rule",
    limits.MIN_TRIALS,
    limits.MAX_TRIALS,
    legacy=("xtrials",),
)
HISTOGRAM_TOKENS = _count(
    "histogram_tokens",
    "Tokens shown",
    limits.HISTOGRAM_TOKENS,
    "Most likely tokens shown one by one",
    limits.MAX_HISTOGRAM_TOKENS,
)
CHAIN_K = Input(
    "k", "Chain draft length k", int, limits.DEFAULT_CHAIN_K, "Draft length k", 1, limits.MAX_CHAIN_K, legacy=("chk",)
)
CHAIN_TOKENS = _count(
    "tokens", "Chain tokens", limits.DEFAULT_CHAIN_TOKENS, "Tokens to generate", limits.MAX_CHAIN_TOKENS
)
NGRAM_K = Input(
    "k", "N-gram draft length k", int, limits.DEFAULT_NGRAM_K, "Draft length k", 1, limits.MAX_NGRAM_K, legacy=("ngk",)
)
NGRAM_TOKENS = _count(
    "tokens", "N-gram characters", limits.MAX_NGRAM_TOKENS, "Characters to generate", limits.MAX_NGRAM_TOKENS
)
NGRAM_TEMPERATURE = _temperature(
    "temperature", "N-gram temperature (both models)", limits.DEFAULT_NGRAM_TEMPERATURE, "ngtemp"
)
DRAFT_ORDER = _order(
    "draft_order",
    "Draft order",
    limits.DEFAULT_DRAFT_ORDER,
    "draft model (characters of context + 1); below the target's",
    limits.DRAFT_ORDER_RANGE,
    "ngdraft",
)
TARGET_ORDER = _order(
    "target_order",
    "Target order",
    limits.DEFAULT_TARGET_ORDER,
    "target model; above the draft's",
    limits.TARGET_ORDER_RANGE,
    "ngtarget",
)
# The alphabet is checked by the endpoint (a 422 that says which rule failed) and documented here.
PROMPT = Input(
    "prompt",
    "Prompt",
    str,
    ngram.DEFAULT_PROMPT,
    f"Text to continue: printable ASCII (space to tilde), at most {limits.MAX_PROMPT} characters",
    max_length=limits.MAX_PROMPT,
    pattern=PROMPT_PATTERN,
    pattern_rule=True,
)
# Bursty acceptance's k: the closed form's, its slider drafting at least one token.
BURSTY_K = replace(core_inputs.K, slider=(1, limits.DEMO_K_SLIDER_MAX))
BURSTY_CYCLES = Input(
    "cycles",
    "Cycles",
    int,
    limits.DEFAULT_BURSTY_CYCLES,
    "Cycles to simulate",
    limits.MIN_BURSTY_CYCLES,
    limits.MAX_BURSTY_CYCLES,
)

FAMILY: tuple[Input, ...] = (TARGET_TEMPERATURE, DRAFT_TEMPERATURE, DRAFT_DISTANCE)
