"""Acceptance and implied speedup per interval, from the counter deltas of two /metrics scrapes (vLLM,
llama.cpp or TensorRT-LLM: any engine whose counters carry drafts and accepted tokens per position).

Counters only grow while a server runs; when any of them goes down (or the number of positions
changes), the server was restarted: that interval is reported as a reset and the new scrape becomes
the baseline.  An interval without drafts says so.  The batch is the engine's running-requests gauge.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from app.model import engine_metrics, engines
from app.model.calibration import CalibrationError, ErrorKind
from app.model.capacity import max_batch_that_fits
from app.model.engine_metrics import Measurement
from app.model.regimes import RooflineSetup, roofline_speedup

DRIFT_LEVEL = 0.999
# The /metrics formats that count drafts and accepted tokens per position: named by each engine's series.
COUNTER_FORMATS = tuple(
    dict.fromkeys(
        metrics.scrape_format
        for module in engines.ADAPTERS.values()
        for metrics in module.RULES_METRICS.values()
        if metrics.counts_drafts and metrics.scrape_format
    )
)


@dataclass(frozen=True)
class Scrape:
    drafts: float
    draft_tokens: float
    accepted: float
    per_position: tuple[float, ...]
    running: float | None
    format: str = "vllm-metrics"
    draft_lengths: tuple[int, ...] = ()


@dataclass(frozen=True)
class IntervalReport:
    status: str  # ok, idle, reset, stops-paying, acceptance-dropped, acceptance-rose
    p: float | None = None
    p_low: float | None = None
    p_high: float | None = None
    k: int | None = None
    batch: int | None = None
    speedup: float | None = None
    drafts: float = 0.0
    message: str = ""

    @property
    def regression(self) -> bool:
        return self.status in ("stops-paying", "acceptance-dropped")


def read_scrape(text: str, label: str = "model_name", value: str | None = None) -> Scrape:
    """One scrape's spec-decode counters summed over engines (and classes, unless ``value`` picks one)."""
    format_name, measurements = engine_metrics.read_measurements(text, label=label)
    if format_name not in COUNTER_FORMATS:
        raise engine_metrics.EngineFormatError(
            ErrorKind.UNRELATED,
            f"watch reads spec-decode counters ({', '.join(COUNTER_FORMATS)}); this is {format_name}",
        )
    if value is not None:
        measurements = [m for m in measurements if m.label == value]
        if not measurements:
            raise engine_metrics.EngineFormatError(
                ErrorKind.AMBIGUOUS_MODEL, f"no spec-decode counters with {label}={value!r}"
            )
    widths = {len(m.per_position) for m in measurements}
    width = max(widths)
    return Scrape(
        drafts=sum(m.cycles or 0.0 for m in measurements),
        draft_tokens=sum(m.draft_tokens or 0.0 for m in measurements),
        accepted=sum(m.accepted or 0.0 for m in measurements),
        per_position=tuple(
            sum(m.per_position[i] if i < len(m.per_position) else 0.0 for m in measurements) for i in range(width)
        ),
        running=measurements[0].batch,
        format=format_name,
        draft_lengths=measurements[0].draft_lengths,
    )


def went_down(before: Scrape, after: Scrape) -> str | None:
    """The first counter that decreased (a restart), or None."""
    if len(before.per_position) != len(after.per_position):
        return "the number of draft positions"
    pairs = [
        ("the drafts counter", before.drafts, after.drafts),
        ("the draft tokens counter", before.draft_tokens, after.draft_tokens),
        ("the accepted tokens counter", before.accepted, after.accepted),
        *(
            (f"accepted tokens at position {i}", a, b)
            for i, (a, b) in enumerate(zip(before.per_position, after.per_position, strict=True))
        ),
    ]
    return next((name for name, a, b in pairs if b < a), None)


def interval_report(
    before: Scrape,
    after: Scrape,
    setup: RooflineSetup,
    calibrated: tuple[float, float] | None,
    batch_limit: int = 1024,
) -> IntervalReport:
    """What one interval says: acceptance with its interval, batch, the implied speedup, and any regression."""
    reason = went_down(before, after)
    if reason is not None:
        return IntervalReport("reset", message=f"counters reset ({reason} went down): server restarted? new baseline")
    drafts = after.drafts - before.drafts
    if drafts <= 0:
        return IntervalReport("idle", message="no drafts this interval: nothing to measure")
    measurement = Measurement(
        engine=engine_metrics.FORMAT_ENGINE[after.format],
        format=after.format,
        label=None,
        cycles=drafts,
        draft_tokens=after.draft_tokens - before.draft_tokens,
        accepted=after.accepted - before.accepted,
        per_position=tuple(b - a for a, b in zip(before.per_position, after.per_position, strict=True)),
        draft_lengths=after.draft_lengths,
    )
    running = after.running if after.running is not None else before.running
    return measured_report(measurement, running, setup, calibrated, batch_limit)


def measured_report(
    measurement: Measurement,
    running: float | None,
    setup: RooflineSetup,
    calibrated: tuple[float, float] | None,
    batch_limit: int = 1024,
) -> IntervalReport:
    """One interval's counts calibrated and judged; idle where they do not calibrate."""
    drafts = measurement.cycles or 0.0
    try:
        calibrated_now = engine_metrics.calibrate_measurement(measurement, 0.0, 1)
    except CalibrationError as error:
        return IntervalReport(
            "idle", drafts=drafts, message=f"counters this interval do not calibrate: {error.message}"
        )
    return judged(measurement, calibrated_now, calibrated_now.result.k, running, drafts, setup, calibrated, batch_limit)


def judged(
    measurement: Measurement,
    calibrated_now: engine_metrics.EngineCalibration,
    k: int,
    running: float | None,
    drafts: float,
    setup: RooflineSetup,
    calibrated: tuple[float, float] | None,
    batch_limit: int = 1024,
) -> IntervalReport:
    """An interval's counts once calibrated: the speedup at the running batch, and drift from the calibrated p."""
    p = calibrated_now.result.acceptance
    low, high = calibrated_now.interval.low, calibrated_now.interval.high
    batch = max(1, round(running)) if running is not None else 1
    fit = max_batch_that_fits(setup, batch_limit)
    speedup = float(roofline_speedup(p, k, setup, batch))
    base = IntervalReport("ok", p=p, p_low=low, p_high=high, k=k, batch=batch, speedup=speedup, drafts=drafts)
    fit_note = f" (batch {batch} is more than the {fit} that fit this setup)" if batch > fit else ""
    drift = None
    # Judge drift on a 99.9% interval, so that hours of intervals at an unchanged p rarely raise a false alarm.
    strict = engine_metrics.acceptance_interval(measurement, p, k, DRIFT_LEVEL)
    if calibrated is not None and strict.high is not None and strict.low is not None:
        shown = f"[{calibrated[0]:.3f}, {calibrated[1]:.3f}]"
        if strict.high < calibrated[0]:
            drift = ("acceptance-dropped", f"acceptance dropped below its calibrated {shown}")
        elif strict.low > calibrated[1]:
            drift = ("acceptance-rose", f"acceptance rose above its calibrated {shown}")
    if speedup <= 1.0:
        message = f"speculation stops paying: {speedup:.2f}x at batch {batch} with k = {k}{fit_note}"
        return replace(base, status="stops-paying", message=message + (f"; {drift[1]}" if drift else ""))
    if drift is not None:
        return replace(base, status=drift[0], message=drift[1] + fit_note)
    return replace(base, message="ok" + fit_note)


def format_line(index: int, report: IntervalReport) -> str:
    if report.p is None:
        return f"interval {index:>4}: {report.message}"
    interval = f"[{report.p_low:.3f}, {report.p_high:.3f}]" if report.p_low is not None else "[?]"
    return (
        f"interval {index:>4}: p {report.p:.3f} {interval}  k {report.k}  batch {report.batch}  "
        f"drafts {report.drafts:,.0f}  speedup {report.speedup:.2f}x  {report.message}"
    )
