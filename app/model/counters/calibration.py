"""From serving metrics to p: calibration of the i.i.d. acceptance model.

Engines do not report p.  They report counters, and the two summaries people
read off them are neither p nor each other:

- draft acceptance rate = accepted / drafted = (p - p^(k+1)) / ((1 - p) k);
- mean acceptance length = 1 + accepted / drafts = E[T] (tokens per verification).

Both are inverted here with the closed form.  A Prometheus text exposition
scraped from a vLLM server is read by vLLM's adapter
(:mod:`app.model.engines.vllm.reports`, on the one Prometheus text parser,
:mod:`app.model.counters.prometheus_text`); its spec-decode counters are turned here
into p, the per-position acceptance and a measure of how far acceptance departs
from i.i.d.

vLLM counter names (vLLM's V1 engine, ``vllm/v1/spec_decode/metrics.py``):
``vllm:spec_decode_num_drafts``, ``vllm:spec_decode_num_draft_tokens``,
``vllm:spec_decode_num_accepted_tokens`` and
``vllm:spec_decode_num_accepted_tokens_per_pos`` with a ``position`` label
0..k-1, each exposed with the ``_total`` suffix by prometheus_client.  Position
i counts the drafts in which at least i + 1 tokens were accepted, so under the
i.i.d. model its rate per draft is p^(i+1).

The older V0 engine (``vllm/spec_decode/metrics.py``) exposed no drafts counter;
it had ``vllm:spec_decode_num_draft_tokens_total``,
``vllm:spec_decode_num_emitted_tokens_total`` and
``vllm:spec_decode_num_accepted_tokens_total``, where (as its source notes) a
token counts as accepted whether or not the tokens before it were, so
accepted / drafted estimates p directly, and emitted tokens per cycle
(cycles = draft tokens / k) is the mean acceptance length.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np
from scipy import stats

from app.model.arithmetic import closed_form, mixed_lengths
from app.model.arithmetic.closed_form import VerifyCost, free_verification
from app.model.counters.counts import CounterNames, Measurement, SpecCounts, counter_families
from app.model.counters.prometheus_text import Family, exposition

MAX_EXPOSITION_BYTES = 1_000_000
MAX_POSITIONS = 64
MAX_COUNTER = 1e15  # a quadrillion tokens: no real counter gets there, and squares of it stay finite
IID_TEST_LEVEL = 0.01
# Scrapes are not atomic across counters: allow this much slack when checking sums.
RELATIVE_SLACK = 1e-3

DRAFT_TOKENS = "spec_decode_num_draft_tokens"
ACCEPTED = "spec_decode_num_accepted_tokens"
EMITTED = "spec_decode_num_emitted_tokens"
EFFICIENCY = "spec_decode_efficiency"
VLLM_DRAFTS = CounterNames.spec_decode("vllm:").drafts  # the count of drafts an error names by default
CREATED_AT = 1.7e9  # fixed creation timestamp in synthetic expositions


class ErrorKind(StrEnum):
    EMPTY = "empty"
    TOO_LARGE = "too_large"
    UNPARSEABLE = "unparseable"
    NO_SAMPLES = "no_samples"
    UNRELATED = "unrelated"
    MISSING_COUNTER = "missing_counter"
    NON_FINITE = "non_finite"
    NEGATIVE = "negative"
    IMPLAUSIBLE = "implausible"
    ZERO_DRAFTS = "zero_drafts"
    INCONSISTENT = "inconsistent"
    AMBIGUOUS_MODEL = "ambiguous_model"
    BAD_LABEL = "bad_label"
    UNKNOWN_K = "unknown_k"
    COUNTER_RESET = "counter_reset"


class CalibrationError(ValueError):
    """A measurement that cannot be turned into p, with a message saying why and, where one count is at fault, the
    count it is about (``field``: drafts, draft_tokens, accepted or per_position), or ``k`` where the draft length
    given is what the counts contradict."""

    def __init__(self, kind: ErrorKind, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.field = field


# ---------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class KPrediction:
    k: int
    expected_tokens: float
    cost_per_cycle: float
    speedup: float


@dataclass(frozen=True)
class PositionAcceptance:
    """Acceptance at draft position ``position`` (1-based) measured from per-position counters."""

    position: int
    accepted: float
    rate: float  # accepted at this position / drafts; i.i.d. predicts p^position
    conditional: float | None  # accepted here / accepted at the previous position; i.i.d. predicts p
    iid_rate: float


@dataclass(frozen=True)
class IidDeparture:
    """How far per-position acceptance departs from the i.i.d. (truncated geometric) model."""

    chi_square: float | None
    degrees_of_freedom: int
    p_value: float | None
    max_conditional_deviation: float  # max over positions of |conditional - p|
    max_rate_deviation: float  # max over positions of |rate - p^position|
    consistent_with_iid: bool | None  # None when the test has no degrees of freedom
    small_expected_counts: bool  # some expected count below 5: the chi-square is approximate


@dataclass(frozen=True)
class Calibration:
    source: str  # "draft_rate", "mean_length" or "exposition"
    k: int
    acceptance: float  # the inferred p
    draft_acceptance_rate: float  # observed (or implied by the given length)
    mean_acceptance_length: float  # observed (or implied by the given rate)
    estimator: str
    c: float
    predictions: list[KPrediction]
    best_k: int
    best_speedup: float
    speedup_at_k: float  # predicted from the observed tokens per cycle at the measured k
    acceptance_from_mean_length: float
    acceptance_from_draft_rate: float
    positions: list[PositionAcceptance] = field(default_factory=list)
    departure: IidDeparture | None = None
    counters: Measurement | None = None
    notes: list[str] = field(default_factory=list)
    interval: tuple[float, float, str] | None = None  # set where the estimator brings its own 95% interval


# ---------------------------------------------------------------------------
# Conversions (a) and (b)


def _predictions(p: float, c: float, k_max: int, verify: VerifyCost) -> tuple[list[KPrediction], int, float]:
    rows = [
        KPrediction(
            k=k,
            expected_tokens=closed_form.expected_tokens(p, k),
            cost_per_cycle=closed_form.cost_per_cycle(k, c, verify),
            speedup=closed_form.speedup(p, k, c, verify),
        )
        for k in range(k_max + 1)
    ]
    chosen, chosen_speedup = closed_form.best_k(p, c, k_max, verify)
    return rows, chosen, chosen_speedup


def _check_common(k: int, c: float, k_max: int) -> None:
    if k < 1:
        raise ValueError("k must be at least 1: with k = 0 nothing is drafted")
    if not (math.isfinite(c) and c >= 0.0):
        raise ValueError("c must be a finite number >= 0")
    if k_max < 1:
        raise ValueError("k_max must be at least 1")


def calibrate_from_rate(
    rate: float, k: int, c: float, k_max: int, verify: VerifyCost = free_verification
) -> Calibration:
    """p from the draft acceptance rate (accepted / drafted) measured at draft length k."""
    return _from_one_measure("draft_rate", rate, k, c, k_max, verify)


def calibrate_from_length(
    length: float, k: int, c: float, k_max: int, verify: VerifyCost = free_verification
) -> Calibration:
    """p from the mean acceptance length (tokens per verification, bonus token included) at draft length k."""
    return _from_one_measure("mean_length", length, k, c, k_max, verify)


_ONE_MEASURE_ESTIMATORS = {
    "draft_rate": "inverse of the draft acceptance rate (p - p^(k+1)) / ((1 - p) k)",
    "mean_length": "inverse of the mean acceptance length (1 - p^(k+1)) / (1 - p)",
}


def _from_one_measure(source: str, measured: float, k: int, c: float, k_max: int, verify: VerifyCost) -> Calibration:
    """p inferred from the one measure named by source; the other measure is what that p implies."""
    _check_common(k, c, k_max)
    if source == "draft_rate":
        rate = measured
        p = closed_form.acceptance_from_draft_rate(rate, k)
        length = closed_form.mean_acceptance_length(p, k)
    else:
        length = measured
        p = closed_form.acceptance_from_mean_length(length, k)
        rate = closed_form.draft_acceptance_rate(p, k)
    return _calibration(
        source,
        _ONE_MEASURE_ESTIMATORS[source],
        p,
        rate,
        length,
        k,
        c,
        k_max,
        verify,
        p_from_length=p,
        p_from_rate=p,
        notes=[_rate_is_not_p(rate, p)],
    )


def _calibration(
    source: str,
    estimator: str,
    p: float,
    rate: float,
    length: float,
    k: int,
    c: float,
    k_max: int,
    verify: VerifyCost,
    *,
    p_from_length: float,
    p_from_rate: float,
    notes: list[str],
    positions: list[PositionAcceptance] | None = None,
    departure: IidDeparture | None = None,
    counters: Measurement | None = None,
    interval: tuple[float, float, str] | None = None,
) -> Calibration:
    """A calibration at the inferred p: predictions for every k and the speedup at the measured k."""
    predictions, chosen, chosen_speedup = _predictions(p, c, k_max, verify)
    return Calibration(
        source=source,
        k=k,
        acceptance=p,
        draft_acceptance_rate=rate,
        mean_acceptance_length=length,
        estimator=estimator,
        c=c,
        predictions=predictions,
        best_k=chosen,
        best_speedup=chosen_speedup,
        speedup_at_k=length / closed_form.cost_per_cycle(k, c, verify),
        acceptance_from_mean_length=p_from_length,
        acceptance_from_draft_rate=p_from_rate,
        positions=positions or [],
        departure=departure,
        counters=counters,
        notes=notes,
        interval=interval,
    )


def _rate_is_not_p(rate: float, p: float) -> str:
    return (
        f"draft acceptance rate {rate:.4f} is not p: under i.i.d. acceptance p = {p:.4f} "
        "(the rate counts drafts after the first rejection as failures)"
    )


# ---------------------------------------------------------------------------
# Estimation from counters


def _slack(total: float) -> float:
    return RELATIVE_SLACK * abs(total)


def _accepted_length_counts(drafts: float, per_position: tuple[float, ...]) -> np.ndarray:
    """Number of drafts with exactly j accepted tokens, j = 0..k, from 'at least i + 1 accepted' counts."""
    at_least = np.array((drafts, *per_position), dtype=np.float64)
    counts = at_least[:-1] - at_least[1:]
    return np.append(counts, at_least[-1])


def iid_departure(drafts: float, per_position: tuple[float, ...], p: float) -> IidDeparture:
    """Pearson chi-square of the accepted-length histogram against the truncated geometric at p."""
    k = len(per_position)
    observed = _accepted_length_counts(drafts, per_position)
    expected = drafts * np.array(closed_form.accepted_distribution(p, k))
    rates = np.array(per_position) / drafts
    iid_rates = np.array([p ** (i + 1) for i in range(k)])
    previous = np.array((drafts, *per_position[:-1]))
    conditionals = [a / b for a, b in zip(per_position, previous, strict=True) if b > 0]
    max_conditional = max((abs(value - p) for value in conditionals), default=0.0)
    degrees = k - 1  # k + 1 bins, one total, one fitted parameter
    usable = expected > 0
    small = bool(np.any(expected[usable] < 5.0))
    max_rate = float(np.max(np.abs(rates - iid_rates))) if k else 0.0
    if degrees < 1:
        chi_square, p_value, consistent = None, None, None  # k = 1: one parameter fits two bins exactly
    elif np.any(observed[~usable] > 0):
        chi_square, p_value, consistent = None, 0.0, False  # counts where the model puts probability 0
    else:
        chi_square = float(np.sum((observed[usable] - expected[usable]) ** 2 / expected[usable]))
        p_value = float(stats.chi2.sf(chi_square, degrees))
        consistent = p_value >= IID_TEST_LEVEL
    return IidDeparture(
        chi_square=chi_square,
        degrees_of_freedom=max(degrees, 0),
        p_value=p_value,
        max_conditional_deviation=float(max_conditional),
        max_rate_deviation=max_rate,
        consistent_with_iid=consistent,
        small_expected_counts=small,
    )


def _positions_report(drafts: float, per_position: tuple[float, ...], p: float) -> list[PositionAcceptance]:
    rows = []
    previous = drafts
    for index, accepted in enumerate(per_position):
        rows.append(
            PositionAcceptance(
                position=index + 1,
                accepted=accepted,
                rate=accepted / drafts,
                conditional=accepted / previous if previous > 0 else None,
                iid_rate=p ** (index + 1),
            )
        )
        previous = accepted
    return rows


def _k_from_v0_efficiency(counters: Measurement) -> int | None:
    """V0's efficiency gauge is emitted / (draft_tokens / k * (k + 1)); solve it for k."""
    if counters.efficiency is None or counters.emitted is None or counters.efficiency <= 0 or not counters.draft_tokens:
        return None
    ratio = counters.emitted / (counters.efficiency * counters.draft_tokens)  # (k + 1) / k
    if ratio <= 1.0:
        return None
    estimate = 1.0 / (ratio - 1.0)
    nearest = round(estimate)
    return nearest if nearest >= 1 and abs(estimate - nearest) < 0.05 else None


def calibrate_from_counters(
    counters: Measurement,
    c: float,
    k_max: int,
    verify: VerifyCost = free_verification,
    k: int | None = None,
    verifications: str = VLLM_DRAFTS,
) -> Calibration:
    """p, per-position acceptance and the i.i.d. check from (possibly differenced) spec-decode counters;
    ``verifications`` is the report's own name for its count of drafts, which an error names.  A count missing
    from the report reads as 0, and a v1 report with a mean alone as one verification that carries it."""
    drafts = None if counters.schema == "v0" else 1.0 if counters.drafts is None else counters.drafts
    counters = replace(
        counters, drafts=drafts, draft_tokens=counters.draft_tokens or 0.0, accepted=counters.accepted or 0.0
    )
    if counters.schema == "v0":
        return _calibrate_v0(counters, c, k_max, verify, k, verifications)
    return _calibrate_v1(counters, c, k_max, verify, k, verifications)


def _calibrate_v1(
    counters: Measurement, c: float, k_max: int, verify: VerifyCost, k: int | None, verifications: str
) -> Calibration:
    drafts = counters.drafts or 0.0
    if drafts <= 0:
        raise CalibrationError(
            ErrorKind.ZERO_DRAFTS,
            f"{verifications} is 0: the server has not speculated yet, so nothing can be measured",
            "drafts",
        )
    draft_tokens, accepted = counters.draft_tokens or 0.0, counters.accepted or 0.0
    per_position = counters.per_position
    notes: list[str] = []
    if accepted > draft_tokens + _slack(draft_tokens):
        raise CalibrationError(
            ErrorKind.INCONSISTENT,
            f"accepted tokens ({accepted:g}) exceed drafted tokens ({draft_tokens:g}); counters are inconsistent",
            "accepted",
        )
    if draft_tokens < drafts - _slack(drafts):
        raise CalibrationError(
            ErrorKind.INCONSISTENT,
            f"fewer draft tokens ({draft_tokens:g}) than drafts ({drafts:g}); every draft proposes at least one token",
            "draft_tokens",
        )
    tokens_per_draft = draft_tokens / drafts
    if not math.isfinite(tokens_per_draft):
        raise CalibrationError(
            ErrorKind.INCONSISTENT,
            f"draft tokens per draft ({draft_tokens:g} / {drafts:g}) is not a finite number; counters are inconsistent",
            "draft_tokens",
        )
    if per_position:
        positions_k = len(per_position)
        if k is not None and k != positions_k:
            raise CalibrationError(
                ErrorKind.INCONSISTENT,
                f"k = {k} was given but the exposition has per-position counters for k = {positions_k}",
                "k",
            )
        k = positions_k
        chain = (drafts, *per_position)
        for index in range(positions_k):
            if chain[index + 1] > chain[index] + _slack(chain[index]):
                what = "drafts" if index == 0 else f"position {index - 1}"
                raise CalibrationError(
                    ErrorKind.INCONSISTENT,
                    f"accepted at position {index} ({chain[index + 1]:g}) exceeds {what} ({chain[index]:g}); "
                    "a token is accepted only after every token before it",
                    "per_position",
                )
        position_sum = float(sum(per_position))
        if abs(position_sum - accepted) > _slack(accepted):
            raise CalibrationError(
                ErrorKind.INCONSISTENT,
                f"per-position accepted counts sum to {position_sum:g} but accepted tokens are {accepted:g}",
                "per_position",
            )
    elif k is None:
        nearest = round(tokens_per_draft)
        if abs(tokens_per_draft - nearest) > 1e-6 * max(1.0, tokens_per_draft):
            raise CalibrationError(
                ErrorKind.UNKNOWN_K,
                f"draft tokens per draft is {tokens_per_draft:.4f}, not a whole number, and there are no "
                "per-position counters: give k (num_speculative_tokens)",
                "draft_tokens",
            )
        k = int(nearest)
        notes.append(f"k = {k} inferred from draft tokens / drafts")
    if k < 1:
        raise CalibrationError(ErrorKind.INCONSISTENT, "the counters imply k = 0: nothing was drafted", "accepted")
    if tokens_per_draft > k + _slack(k * drafts) / drafts:
        raise CalibrationError(
            ErrorKind.INCONSISTENT,
            f"draft tokens per draft is {tokens_per_draft:.4f}, more than k = {k}",
            "draft_tokens",
        )
    mixed = tokens_per_draft < k - 1e-6 or len(set(counters.draft_lengths)) > 1
    if mixed:
        notes.append(
            f"drafts averaged {tokens_per_draft:.3f} tokens against k = {k}: drafts of several lengths (a per-batch "
            "schedule, or drafts cut short), so p comes from an estimator that does not assume every draft was k long"
        )
    if accepted > k * drafts + _slack(k * drafts):
        raise CalibrationError(
            ErrorKind.INCONSISTENT, f"accepted tokens per draft ({accepted / drafts:.4f}) exceed k = {k}", "accepted"
        )

    length = min(1.0 + accepted / drafts, float(k + 1))
    rate = min(accepted / draft_tokens, 1.0) if draft_tokens > 0 else 0.0
    p_from_length = closed_form.acceptance_from_mean_length(length, k)
    p_from_rate = closed_form.acceptance_from_draft_rate(min(accepted / (k * drafts), 1.0), k)
    positions: list[PositionAcceptance] = []
    departure = None
    interval = None
    if mixed:
        estimate = _mixed_estimate(counters, drafts, draft_tokens, accepted, per_position, k, notes)
        p, estimator = estimate.p, estimate.method
        interval = (estimate.low, estimate.high, estimate.method)
        if per_position:
            positions = _positions_report(drafts, per_position, p)
    elif per_position:
        successes = float(sum(per_position))
        rejections = drafts - per_position[-1]
        p = successes / (successes + rejections) if successes + rejections > 0 else 0.0
        p = min(max(p, 0.0), 1.0)
        estimator = (
            "maximum likelihood of the truncated geometric from per-position counts: "
            "accepted / (accepted + drafts ending in a rejection)"
        )
        positions = _positions_report(drafts, per_position, p)
        departure = iid_departure(drafts, per_position, p)
    else:
        p = p_from_length
        estimator = "inverse of the mean acceptance length 1 + accepted / drafts (no per-position counters)"
        notes.append("no per-position counters: the departure from i.i.d. cannot be measured")
    notes.append(_rate_is_not_p(rate, p))
    return _calibration(
        "exposition",
        estimator,
        p,
        rate,
        length,
        k,
        c,
        k_max,
        verify,
        p_from_length=p_from_length,
        p_from_rate=p_from_rate,
        notes=notes,
        positions=positions,
        departure=departure,
        counters=counters,
        interval=interval,
    )


def _mixed_estimate(
    counters: Measurement,
    drafts: float,
    draft_tokens: float,
    accepted: float,
    per_position: tuple[float, ...],
    k: int,
    notes: list[str],
) -> mixed_lengths.MixedEstimate:
    """p without bias from drafts of several lengths, or a CalibrationError saying what is missing."""
    lengths = counters.draft_lengths
    mix = mixed_lengths.draft_mix(drafts, draft_tokens, lengths) if lengths else None
    if mix is not None:
        return mixed_lengths.from_mix(mix, accepted)
    if lengths and len(set(lengths)) <= 2:
        notes.append(
            f"the draft lengths given ({', '.join(map(str, sorted(set(lengths))))}) do not explain "
            f"{draft_tokens:g} draft tokens in {drafts:g} drafts; per-position counts used instead"
        )
    if per_position:
        shortest = min(lengths) if lengths else 1
        if not lengths:
            notes.append(
                "the draft lengths the engine ran are not known (give draft_lengths, e.g. the schedule's k values): "
                "only position 1, which every draft reaches, is used; the interval is wider for it"
            )
        return mixed_lengths.from_positions(drafts, per_position, shortest)
    tokens_per_draft = draft_tokens / drafts
    p = closed_form.acceptance_from_mean_length(min(1.0 + accepted / drafts, tokens_per_draft + 1.0), k)
    return mixed_lengths.MixedEstimate(
        p=p,
        low=math.nan,
        high=math.nan,
        method=(
            f"none: drafts averaged {tokens_per_draft:.3f} tokens, so they were of several lengths, and the report "
            "has no per-position counts, so p cannot be given without bias; p shown is the truncated geometric at "
            f"k = {k} for the measured tokens per verification, a lower bound (give draft_lengths, at most two "
            "values, for an unbiased p); the measured totals stand as reported"
        ),
        mix={},
        positions_used=0,
    )


def _calibrate_v0(
    counters: Measurement, c: float, k_max: int, verify: VerifyCost, k: int | None, verifications: str
) -> Calibration:
    draft_tokens, accepted = counters.draft_tokens or 0.0, counters.accepted or 0.0
    emitted = counters.emitted or 0.0
    notes = ["older vLLM (V0) counters: accepted tokens count every accepted position, prefix or not"]
    if draft_tokens <= 0:
        raise CalibrationError(
            ErrorKind.ZERO_DRAFTS,
            f"{verifications} is 0: the server has not speculated yet",
            "drafts",
        )
    if accepted > draft_tokens + _slack(draft_tokens):
        raise CalibrationError(
            ErrorKind.INCONSISTENT,
            f"accepted tokens ({accepted:g}) exceed drafted tokens ({draft_tokens:g}); counters are inconsistent",
            "accepted",
        )
    if k is None:
        k = _k_from_v0_efficiency(counters)
        if k is None:
            raise CalibrationError(
                ErrorKind.UNKNOWN_K,
                "these older vLLM counters have no drafts counter: give k (num_speculative_tokens)",
                "draft_tokens",
            )
        notes.append(f"k = {k} inferred from vllm:spec_decode_efficiency")
    cycles = draft_tokens / k
    if abs(cycles - round(cycles)) > 1e-6 * max(1.0, cycles):
        raise CalibrationError(
            ErrorKind.INCONSISTENT, f"draft tokens ({draft_tokens:g}) are not a multiple of k = {k}", "draft_tokens"
        )
    if emitted < cycles - _slack(cycles) or emitted > (k + 1) * cycles + _slack((k + 1) * cycles):
        raise CalibrationError(
            ErrorKind.INCONSISTENT,
            f"emitted tokens ({emitted:g}) must lie between the number of cycles ({cycles:g}) "
            f"and {k + 1} per cycle ({(k + 1) * cycles:g})",
            "accepted",
        )
    length = min(max(emitted / cycles, 1.0), float(k + 1))
    p = closed_form.acceptance_from_mean_length(length, k)
    p_direct = min(accepted / draft_tokens, 1.0)
    notes.append(
        f"accepted / drafted = {p_direct:.4f} estimates p directly here; p from tokens per cycle is {p:.4f}; "
        "a gap between the two is a departure from i.i.d. acceptance"
    )
    return _calibration(
        "exposition",
        "inverse of the mean acceptance length emitted / (draft tokens / k)",
        p,
        closed_form.draft_acceptance_rate(p, k),
        length,
        k,
        c,
        k_max,
        verify,
        p_from_length=p,
        p_from_rate=p_direct,
        notes=notes,
        counters=counters,
    )


# ---------------------------------------------------------------------------
# Synthetic expositions


def example_exposition(
    p: float,
    k: int,
    drafts: int = 10_000,
    seed: int | None = None,
    engines: int = 1,
    model_name: str = "target-model",
    schema: str = "v1",
) -> str:
    """A /metrics text as vLLM would expose it after ``drafts`` drafts with i.i.d. acceptance p.

    Without a seed the counts are the expected ones (rounded); with a seed they are sampled.
    """
    if not 0.0 <= p <= 1.0 or k < 1 or drafts < 0 or engines < 1:
        raise ValueError("need 0 <= p <= 1, k >= 1, drafts >= 0 and engines >= 1")
    if seed is None:
        at_least = [round(drafts * p ** (i + 1)) for i in range(k)]
        accepted_lengths = None
    else:
        rng = np.random.default_rng(seed)
        accepted_lengths = np.minimum(rng.geometric(1.0 - p, size=drafts) - 1, k) if p < 1 else np.full(drafts, k)
        at_least = [int(np.sum(accepted_lengths > i)) for i in range(k)]
    accepted = int(sum(at_least))
    by_engine = [(("engine", str(engine)), ("model_name", model_name)) for engine in range(engines)]

    def split(total: int) -> list[int]:
        share, extra = divmod(total, engines)
        return [share + (1 if index < extra else 0) for index in range(engines)]

    def created(names: Iterable[str]) -> list[Family]:
        """The creation time vLLM writes beside each counter."""
        values = tuple((labels, CREATED_AT) for labels in by_engine)
        return [Family(name.removesuffix("_total") + "_created", "gauge", values) for name in names if name]

    running = ((by_engine[0], 3.0),)
    families = [Family("vllm:num_requests_running", "gauge", running, "Number of requests in model execution batches.")]
    if schema == "v1":
        drafted, tokens, kept = split(drafts), split(drafts * k), split(accepted)
        positions = [split(total) for total in at_least]
        rows = [
            (labels, SpecCounts(drafted[at], tokens[at], kept[at], tuple(total[at] for total in positions)))
            for at, labels in enumerate(by_engine)
        ]
        names = CounterNames.spec_decode("vllm:")
        families += counter_families(names, rows) + created((names.drafts, names.draft_tokens, names.accepted))
    elif schema == "v0":
        # V0 counted every accepted position; under i.i.d. acceptance that is p per drafted token.
        emitted = accepted + drafts
        if seed is None:
            any_position = round(drafts * k * p)
        else:
            rng_any = np.random.default_rng(seed + 1)
            any_position = int(rng_any.binomial(drafts * k, p))
        counted = [(f"vllm:{DRAFT_TOKENS}_total", drafts * k), (f"vllm:{ACCEPTED}_total", any_position),
                   (f"vllm:{EMITTED}_total", emitted)]  # fmt: skip
        for name, total in counted:
            values = tuple((labels, float(value)) for labels, value in zip(by_engine, split(total), strict=True))
            families.append(Family(name, "counter", values))
        families += created(name for name, _total in counted)
        efficiency = emitted / (drafts * (k + 1)) if drafts else 0.0
        gauge = (((("model_name", model_name),), efficiency),)
        families.append(Family(f"vllm:{EFFICIENCY}", "gauge", gauge, "Speculative decoding system efficiency."))
    else:
        raise ValueError("schema must be 'v1' or 'v0'")
    return exposition(families)
