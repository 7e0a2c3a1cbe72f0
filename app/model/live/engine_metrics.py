"""What serving engines report about speculative decoding, detected across engines and turned into p with an
interval.

Each engine's formats live in its package (``app/model/engines/<engine>/``: the names, where they are
defined, the versions that write them and a reader; samples of each are in :mod:`tests.samples.engine_reports`).
Here every format is reduced to the same counts of one class (one model, or one value of a label the user
names): verifications (drafts), drafted tokens, accepted draft tokens and, where the engine has them, accepted
tokens per draft position.  Those go through the calibration the rest of the product uses
(:mod:`app.model.counters.calibration`), and this
module adds the 95% interval of p.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from app.model import engines
from app.model.arithmetic import closed_form, mixed_lengths
from app.model.counters import calibration
from app.model.counters.calibration import MAX_EXPOSITION_BYTES, MAX_POSITIONS, ErrorKind
from app.model.engines.reports import (
    MAX_CLASSES,
    MAX_JSON_ITEMS,
    EngineFormatError,
    Measurement,
    ReadOptions,
    ReportFormat,
    check_text,
    clip,
    fail,
    json_payload,
)

INTERVAL_LEVEL = mixed_lengths.LEVEL  # the interval from a mixed-lengths estimate is labelled with it
K_REGRET = 0.05  # share of the speedup that the best k at p may lose within p's interval before a note says so
REPORT_FORMATS: dict[str, ReportFormat] = {report.name: report for report in engines.formats()}
FORMATS: dict[str, str] = {name: report.description for name, report in REPORT_FORMATS.items()}
FORMAT_ENGINE = {name: report.engine for name, report in REPORT_FORMATS.items()}

__all__ = [
    "MAX_CLASSES",
    "MAX_EXPOSITION_BYTES",
    "MAX_JSON_ITEMS",
    "EngineFormatError",
    "Measurement",
    "ReadOptions",
]


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None
    level: float
    method: str


@dataclass(frozen=True)
class EngineCalibration:
    measurement: Measurement
    result: calibration.Calibration
    interval: Interval
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------
# Detection and reading, by the engines' adapters


def detect_format(text: str) -> str:
    """The name of the format the text is in (a key of FORMATS), or an EngineFormatError saying why none fits."""
    check_text(text, "the body", "paste a /metrics scrape, a stats JSON or a llama.cpp log")
    payload = json_payload(text)
    for report in REPORT_FORMATS.values():
        if report.detect(text, payload):
            return report.name
    if payload is not None:
        raise fail(
            ErrorKind.UNRELATED,
            "JSON with none of vLLM's metrics.speculative_decoding, TensorRT-LLM's specDecodingStats, SGLang's "
            "avg_spec_accept_length or llama.cpp's timings.draft_n_accepted; for step times use the step-fit endpoint",
        )
    if re.search(r"(?m)^[A-Za-z_:][A-Za-z0-9_:]*(\{[^}]*\})?\s+([-+]?[0-9.]|[-+]?Inf|NaN)", text):
        names = sorted(set(re.findall(r"(?m)^([A-Za-z_:][A-Za-z0-9_:]*)", text)))[:5]
        raise fail(
            ErrorKind.UNRELATED,
            "a Prometheus scrape without speculative-decoding series (vllm:spec_decode_*, sglang:spec_*, "
            f"trtllm_spec_decode_* or llamacpp:spec_decode_*); it holds e.g. {', '.join(names)}: is speculative "
            "decoding enabled?",
        )
    raise fail(
        ErrorKind.UNPARSEABLE,
        f"unknown format (starts with {clip(text, 60)!r}): expected vLLM, SGLang, TensorRT-LLM or llama.cpp "
        "/metrics, vLLM per-request JSON, SGLang /server_info, TensorRT-LLM iteration stats JSON, llama.cpp "
        "timings JSON or a llama.cpp log",
    )


def read_measurements(
    text: str,
    k: int | None = None,
    label: str = "model_name",
    cycles: float | None = None,
    draft_lengths: tuple[int, ...] = (),
) -> tuple[str, list[Measurement]]:
    """Detect the format and read one Measurement per class (value of ``label``); k at most MAX_POSITIONS."""
    format_name = detect_format(text)
    report = REPORT_FORMATS[format_name]
    measurements = report.read(text, json_payload(text), ReadOptions(k, label, cycles, draft_lengths))
    for measurement in measurements:
        if measurement.k is not None and not 1 <= measurement.k <= MAX_POSITIONS:
            raise fail(
                ErrorKind.IMPLAUSIBLE,
                f"k = {measurement.k} ({measurement.k_source}) is outside 1..{MAX_POSITIONS}: "
                "no engine drafts that many",
            )
        if measurement.drafts is not None and measurement.draft_tokens is not None and measurement.drafts > 0:
            per_draft = measurement.draft_tokens / measurement.drafts
            if per_draft > MAX_POSITIONS + 1e-9:
                raise fail(
                    ErrorKind.IMPLAUSIBLE,
                    f"{per_draft:g} draft tokens per verification, more than {MAX_POSITIONS}: "
                    "the counts are inconsistent",
                )
    return format_name, measurements


def read_with_baseline(
    text: str, baseline: str, k: int | None = None, label: str = "model_name", draft_lengths: tuple[int, ...] = ()
) -> tuple[str, list[Measurement]]:
    """A scrape minus an earlier one of the same server (to drop warm-up traffic), for the formats whose
    counters can be subtracted (vLLM's, by its package)."""
    format_name, now = read_measurements(text, k=k, label=label, draft_lengths=draft_lengths)
    subtract = REPORT_FORMATS[format_name].subtract_baseline
    if subtract is None:
        takers = sorted({engines.adapter(r.engine).TITLE for r in REPORT_FORMATS.values() if r.subtract_baseline})
        raise fail(
            ErrorKind.INCONSISTENT,
            f"a baseline is subtracted from {' and '.join(takers)} counters only; this is {format_name}",
        )
    baseline_format, then = read_measurements(baseline, k=k, label=label, draft_lengths=draft_lengths)
    if baseline_format != format_name:
        raise fail(ErrorKind.INCONSISTENT, f"the baseline is {baseline_format}, the scrape {format_name}")
    return format_name, subtract(now, then)


# ---------------------------------------------------------------------------
# Calibration with an interval


def containing(interval: Interval, p: float) -> Interval:
    """The interval widened, where rounding left it short, to hold its own estimate p (all accepted: p = 1.0)."""
    if interval.low is None or interval.high is None or not math.isfinite(p):
        return interval
    if interval.low <= p <= interval.high:
        return interval
    return Interval(min(interval.low, p), max(interval.high, p), interval.level, interval.method)


def acceptance_interval(measurement: Measurement, p: float, k: int, level: float = INTERVAL_LEVEL) -> Interval:
    """An interval of p from the counts: likelihood-shaped where per-position counts exist, else from the mean;
    it always holds p itself."""
    return containing(_acceptance_interval(measurement, p, k, level), p)


def _acceptance_interval(measurement: Measurement, p: float, k: int, level: float) -> Interval:
    if measurement.schema == "v0" and measurement.draft_tokens and measurement.accepted is not None:
        low, high = mixed_lengths.wilson(measurement.accepted, measurement.draft_tokens, level)
        return Interval(low, high, level, "Wilson score: accepted / drafted estimates p directly (V0 counters)")
    cycles, drafted = measurement.drafts, measurement.draft_tokens
    if measurement.per_position and cycles and drafted is not None and drafted < k * cycles * (1 - 1e-9):
        lengths = measurement.draft_lengths
        mix = mixed_lengths.draft_mix(cycles, drafted, lengths) if lengths else None
        if mix is not None and measurement.accepted is not None:
            estimate = mixed_lengths.from_mix(mix, measurement.accepted, level)
        else:
            estimate = mixed_lengths.from_positions(cycles, measurement.per_position, min(lengths or (1,)), level)
        return Interval(estimate.low, estimate.high, level, estimate.method)
    if measurement.per_position and measurement.drafts:
        successes = float(sum(measurement.per_position))
        rejections = measurement.drafts - measurement.per_position[-1]
        low, high = mixed_lengths.wilson(successes, successes + rejections, level)
        return Interval(
            low, high, level, "Wilson score on accepted tokens out of accepted + rejections (per-position counts)"
        )
    if measurement.drafts and measurement.accepted is not None:
        z = float(stats.norm.ppf(0.5 + level / 2))
        length = 1.0 + measurement.accepted / measurement.drafts
        half = z * math.sqrt(closed_form.accepted_variance(p, k) / measurement.drafts)
        low_length = min(max(length - half, 1.0), k + 1.0)
        high_length = min(max(length + half, 1.0), k + 1.0)
        return Interval(
            closed_form.acceptance_from_mean_length(low_length, k),
            closed_form.acceptance_from_mean_length(high_length, k),
            level,
            "normal interval of the mean acceptance length over the verifications, mapped through E[T](p, k)",
        )
    return Interval(None, None, level, "none: the report holds a mean, not counts (give cycles for an interval)")


def verifications_name(format_name: str) -> str:
    """The report format's own name for its count of verifications (drafts)."""
    known = REPORT_FORMATS.get(format_name)
    return known.verifications if known is not None else "the report's count of drafts"


def over_requests(measurement: Measurement, k: int, level: float) -> Interval | None:
    """An interval of p from the spread between requests, where a report gives each request's verifications and
    accepted tokens but nothing per position (a llama.cpp log at -lv 3 with drafts of several lengths).

    Tokens per verification is a ratio estimate over the requests, R = sum(accepted) / sum(verifications); its
    variance comes from the requests as clusters, n / (n - 1) sum((a_i - R v_i)^2) / V^2, and the interval uses
    Student's t with n - 1 degrees of freedom; its ends map to p through E[T](p, k) like the estimate itself
    (which keeps the estimate's own bias from mixed lengths: see its method)."""
    requests = [(cycles, accepted) for cycles, accepted in measurement.requests if cycles > 0]
    if len(requests) < 2:
        return None
    verifications = np.array([cycles for cycles, _ in requests])
    accepted = np.array([value for _, value in requests])
    total = float(verifications.sum())
    ratio = float(accepted.sum()) / total
    n = len(requests)
    variance = n / (n - 1) * float(np.sum((accepted - ratio * verifications) ** 2)) / total**2
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * math.sqrt(variance)
    low_length = min(max(1.0 + ratio - half, 1.0), k + 1.0)
    high_length = min(max(1.0 + ratio + half, 1.0), k + 1.0)
    return Interval(
        closed_form.acceptance_from_mean_length(low_length, k),
        closed_form.acceptance_from_mean_length(high_length, k),
        level,
        f"over the {n} requests: tokens per verification as a ratio over requests (requests as clusters, "
        f"Student's t with {n - 1} degree{'' if n == 2 else 's'} of freedom), mapped through E[T](p, k); like p "
        "itself, a lower bound where drafts were cut short",
    )


def calibrate_measurement(
    measurement: Measurement, c: float, k_max: int, verify: closed_form.VerifyCost = closed_form.free_verification
) -> EngineCalibration:
    result = calibration.calibrate_from_counters(
        measurement, c, k_max, verify, measurement.k, verifications_name(measurement.format)
    )
    if result.interval is not None:
        low, high, method = result.interval
        known = math.isfinite(low) and math.isfinite(high)
        interval = Interval(low if known else None, high if known else None, INTERVAL_LEVEL, method)
        if not known:
            interval = over_requests(measurement, result.k, INTERVAL_LEVEL) or interval
    else:
        interval = acceptance_interval(measurement, result.acceptance, result.k)
    interval = containing(interval, result.acceptance)
    notes = [*measurement.notes, *result.notes]
    spread = best_k_spread(result, interval, k_max, verify)
    if spread:
        notes.append(spread)
    return EngineCalibration(measurement, result, interval, notes)


def best_k_spread(
    result: calibration.Calibration, interval: Interval, k_max: int, verify: closed_form.VerifyCost
) -> str:
    """A note where the best k at p would lose more than K_REGRET of the speedup at an end of p's interval,
    against the k best there (the interval is too wide to choose k by); empty where it would not, or where the
    interval is unknown."""
    if interval.low is None or interval.high is None:
        return ""
    worst = (0.0, 0, 0.0)
    for end in (interval.low, interval.high):
        there, best_there = closed_form.best_k(end, result.c, k_max, verify)
        loss = 1.0 - closed_form.speedup(end, result.best_k, result.c, verify) / best_there
        worst = max(worst, (loss, there, end))
    loss, there, end = worst
    if loss <= K_REGRET:
        return ""
    drafts = result.counters.drafts if result.counters is not None else None
    counted = f" ({drafts:,.0f} so far)" if drafts is not None else ""
    chosen = _k_words(result.best_k)
    return (
        f"p's 95% interval is too wide to choose k by: at p = {end:.4f}, within it, {_k_words(there)} is best and "
        f"{chosen} gives {loss:.0%} less; measure more drafts{counted} before acting on {chosen}"
    )


def _k_words(k: int) -> str:
    return f"k = {k}" if k else "speculation off (k = 0)"


def pooled(measurements: list[Measurement]) -> Measurement | None:
    """All classes summed, when they share k and carry counts; None otherwise."""
    if len(measurements) < 2:
        return None
    first = measurements[0]
    if any(m.schema != first.schema or m.drafts is None for m in measurements):
        return None
    positions = {len(m.per_position) for m in measurements}
    if len(positions) != 1:
        return None
    width = positions.pop()
    return Measurement(
        engine=first.engine,
        format=first.format,
        label=None,
        drafts=sum(m.drafts or 0.0 for m in measurements),
        draft_tokens=sum(m.draft_tokens or 0.0 for m in measurements),
        accepted=sum(m.accepted or 0.0 for m in measurements),
        per_position=tuple(sum(m.per_position[i] for m in measurements) for i in range(width)),
        k=first.k,
        k_source=first.k_source,
        batch=first.batch,
        schema=first.schema,
        emitted=sum(m.emitted or 0.0 for m in measurements) if first.schema == "v0" else None,
        series=sum(m.series for m in measurements),
        notes=(f"all {len(measurements)} classes summed",),
    )


@dataclass(frozen=True)
class ReportCalibration:
    """A report read and calibrated: its format, each class on its own, and the figure to lead with."""

    format: str
    classes: list[EngineCalibration]
    top: EngineCalibration  # all classes summed where they share k; else the class with the most verifications
    summed: bool  # whether ``top`` sums the classes


def calibrate_report(
    report: str,
    c: float,
    k_max: int,
    verify: closed_form.VerifyCost = closed_form.free_verification,
    *,
    baseline: str | None = None,
    k: int | None = None,
    label: str = "model_name",
    cycles: float | None = None,
    draft_lengths: tuple[int, ...] = (),
) -> ReportCalibration:
    """Detect the format, read each class (minus ``baseline`` when given) and calibrate it; the one reading
    behind POST /api/v1/calibrate, /decide and specdec-lab calibrate --from.  Raises CalibrationError."""
    if baseline is not None and baseline.strip():
        format_name, measurements = read_with_baseline(report, baseline, k=k, label=label, draft_lengths=draft_lengths)
    else:
        format_name, measurements = read_measurements(
            report, k=k, label=label, cycles=cycles, draft_lengths=draft_lengths
        )
    classes = [calibrate_measurement(m, c, k_max, verify) for m in measurements]
    summed = pooled(measurements)
    if summed is not None:
        return ReportCalibration(format_name, classes, calibrate_measurement(summed, c, k_max, verify), True)
    top = max(classes, key=lambda item: item.measurement.drafts or 0.0) if len(classes) > 1 else classes[0]
    return ReportCalibration(format_name, classes, top, False)
