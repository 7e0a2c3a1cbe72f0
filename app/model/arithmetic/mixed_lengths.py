"""p from counters whose drafts were not all k tokens long.

An engine that runs a per-batch schedule (vLLM's ``num_speculative_tokens_per_batch_size``, TensorRT-LLM's
``draft_len_schedule``, SGLang's adaptive steps) drafts k tokens at one batch and fewer at another, and
n-gram or confidence-cut drafts (llama.cpp's ``--spec-draft-p-min``) end early.  Its counters then mix
drafts of several lengths.  The truncated-geometric estimator that assumes every draft was k long counts a
short draft that was accepted to its end as a rejection, so it is biased low (true p = 0.70 drafted at
k = 4 and k = 2 reads as 0.64).

Two unbiased estimators, each with a 95% interval:

- **the draft-length mix is known** (the lengths the engine ran, and at most two of them, so that the
  number of drafts of each follows from drafts and draft tokens): the method of moments on the accepted
  tokens, sum over lengths L of n_L * (p - p^(L+1)) / (1 - p) = accepted, solved for p; the interval maps
  accepted +/- z * its standard deviation under the model through the same increasing function;
- **otherwise, with per-position counts**: only the positions every draft reaches (below the shortest
  length m, 1 when nothing is known) enter, where the data are a truncated geometric at m and the
  estimator accepted / (accepted + drafts ending in a rejection) is the maximum likelihood; a Wilson
  interval on those counts.

Without per-position counts and without a known mix, p cannot be given without bias: the caller says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from scipy import optimize, stats

from app.model.arithmetic import closed_form

LEVEL = 0.95
SLACK = 1e-6


@dataclass(frozen=True)
class MixedEstimate:
    p: float
    low: float
    high: float
    method: str
    mix: dict[int, float]  # drafts of each length, where known
    positions_used: int  # per-position counts used (0 for the moment estimator)


def draft_mix(drafts: float, draft_tokens: float, lengths: Sequence[int]) -> dict[int, float] | None:
    """Drafts of each length from the totals, when the lengths are one or two distinct values; else None."""
    distinct = sorted(set(lengths))
    if not distinct or distinct[0] < 1:
        return None
    if len(distinct) == 1:
        length = distinct[0]
        return {length: drafts} if abs(draft_tokens - length * drafts) <= SLACK * max(draft_tokens, 1.0) else None
    if len(distinct) != 2:
        return None
    short, long = distinct
    long_drafts = (draft_tokens - short * drafts) / (long - short)
    short_drafts = drafts - long_drafts
    tolerance = SLACK * max(drafts, 1.0)
    if long_drafts < -tolerance or short_drafts < -tolerance:
        return None
    return {short: max(short_drafts, 0.0), long: max(long_drafts, 0.0)}


def _solve(mix: dict[int, float], accepted: float) -> float:
    ceiling = sum(count * length for length, count in mix.items())
    if accepted <= 0:
        return 0.0
    if accepted >= ceiling:
        return 1.0
    return float(
        optimize.brentq(
            lambda p: (
                sum(count * (closed_form.expected_tokens(p, length) - 1.0) for length, count in mix.items()) - accepted
            ),
            0.0,
            1.0 - 1e-15,
            xtol=1e-13,
        )
    )


def from_mix(mix: dict[int, float], accepted: float, level: float = LEVEL) -> MixedEstimate:
    """Method of moments on accepted tokens over a known mix of draft lengths."""
    p = _solve(mix, accepted)
    z = float(stats.norm.ppf(0.5 + level / 2))
    # the spread of accepted tokens under the model, at the estimate (at an edge, one accepted token's worth)
    spread = math.sqrt(sum(count * closed_form.accepted_variance(p, length) for length, count in mix.items()))
    spread = max(spread, 1.0)
    low, high = _solve(mix, accepted - z * spread), _solve(mix, accepted + z * spread)
    described = " and ".join(f"{count:g} drafts of {length}" for length, count in sorted(mix.items()))
    return MixedEstimate(
        p=p,
        low=low,
        high=high,
        method=(
            f"method of moments over the draft lengths the engine ran ({described}): accepted tokens = "
            "sum of drafts x E[accepted | length]; interval from the spread of accepted tokens at p"
        ),
        mix=mix,
        positions_used=0,
    )


def wilson(successes: float, trials: float, level: float = LEVEL) -> tuple[float, float]:
    """The Wilson score interval of a share; exactly 0 and 1 at its ends at no and at all successes (where floating
    point gives 0.9999999999999999)."""
    z = float(stats.norm.ppf(0.5 + level / 2))
    if trials <= 0:
        return 0.0, 1.0
    share = min(max(successes / trials, 0.0), 1.0)
    denominator = 1 + z * z / trials
    centre = (share + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / denominator
    return 0.0 if successes <= 0 else max(0.0, centre - half), 1.0 if successes >= trials else min(1.0, centre + half)


def from_positions(drafts: float, per_position: Sequence[float], shortest: int, level: float = LEVEL) -> MixedEstimate:
    """Maximum likelihood from the positions every draft reaches (the first ``shortest`` of them)."""
    used = max(1, min(shortest, len(per_position)))
    successes = float(sum(per_position[:used]))
    rejections = drafts - float(per_position[used - 1])
    trials = successes + rejections
    p = successes / trials if trials > 0 else 0.0
    low, high = wilson(successes, trials, level)
    return MixedEstimate(
        p=min(max(p, 0.0), 1.0),
        low=low,
        high=high,
        method=(
            f"maximum likelihood from the first {used} position(s), which every draft reaches (drafts vary in "
            "length): accepted / (accepted + drafts ending in a rejection there); Wilson interval"
        ),
        mix={},
        positions_used=used,
    )
