"""Acceptance and implied speedup per interval, from the counter deltas of two /metrics scrapes of any engine
whose adapter names counters of drafts and of accepted tokens (in all or per position) in its ``RULES_METRICS``:
the series the rules and the Prometheus watch read, by the same names.

Counters only grow while a server runs; when any of them goes down (or the number of positions
changes), the server was restarted: that interval is reported as a reset and the new scrape becomes
the baseline.  An interval without drafts says so.  The batch is the engine's running-requests gauge.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

from app.model import engines, limits
from app.model.cost.capacity import max_batch_that_fits
from app.model.cost.regimes import RooflineSetup, roofline_speedup
from app.model.counters import prometheus_text
from app.model.counters.calibration import MAX_EXPOSITION_BYTES, CalibrationError, ErrorKind
from app.model.engines.base import EngineAdapter, RulesMetrics
from app.model.engines.reports import EngineFormatError, Measurement, check_value, position_of, positions_in_order
from app.model.live import engine_metrics
from app.model.rules.alerts import MIN_DRAFTS

DRIFT_LEVEL = 0.999


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


def watched(module: EngineAdapter) -> list[RulesMetrics]:
    """The series of an engine's versions that the /metrics watch can read, newest first: a counter of drafts
    and one of accepted tokens, in all or per position."""
    known: Mapping[str, RulesMetrics] = module.RULES_METRICS
    found = [known.get(version.name) for version in reversed(module.VERSIONS)]
    return [
        m for m in found if m is not None and (m.drafts or m.drafted_per_position) and (m.accepted or m.per_position)
    ]


def scrape_engines() -> list[str]:
    """The engines (by title) whose /metrics the watch reads: those with a version :func:`watched` holds."""
    return [engines.adapter(name).TITLE for name in engines.ENGINES if watched(engines.adapter(name))]


def _engine_of(names: set[str]) -> tuple[str, RulesMetrics]:
    """The registered engine whose counter of drafts the scrape holds, and that version's series."""
    wanted: list[str] = []
    for engine in engines.ENGINES:
        for metrics in watched(engines.adapter(engine)):
            counter = metrics.drafts or metrics.drafted_per_position
            if counter in names:
                return engine, metrics
            wanted.append(counter)
    raise EngineFormatError(
        ErrorKind.UNRELATED,
        f"watch reads spec-decode counters of drafts ({', '.join(dict.fromkeys(wanted))}); this scrape holds none: "
        "is speculative decoding on? (an engine that counts only verifications is watched with --prometheus)",
    )


def scrape_samples(text: str) -> list[prometheus_text.Sample]:
    """A pasted or fetched scrape's samples; refused where it is too large or not Prometheus text."""
    if len(text.encode("utf-8", errors="replace")) > MAX_EXPOSITION_BYTES:
        raise EngineFormatError(ErrorKind.TOO_LARGE, f"the body is larger than {MAX_EXPOSITION_BYTES:,} bytes")
    try:
        return list(prometheus_text.samples(text))
    except prometheus_text.ExpositionError as error:
        raise EngineFormatError(ErrorKind.UNPARSEABLE, f"the scrape is not Prometheus text: {error}") from None


def read_scrape(text: str, label: str = "model_name", value: str | None = None) -> Measurement:
    """One scrape's spec-decode counters summed over engines (and classes, unless ``value`` picks one), with the
    running requests of every class as its batch."""
    return read_samples(scrape_samples(text), label, value)


def read_samples(every: Sequence[prometheus_text.Sample], label: str, value: str | None = None) -> Measurement:
    """:func:`read_scrape` of a scrape's samples."""
    engine, m = _engine_of({sample.name for sample in every})
    running = [sample.value for sample in every if sample.name == m.running and math.isfinite(sample.value)]
    found = [sample for sample in every if value is None or sample.labels.get(label) == value]
    sums: dict[str, float] = {}
    positions: dict[str, dict[int, float]] = {}
    for sample in found:
        if sample.name not in (m.drafts, m.draft_tokens, m.accepted, m.per_position, m.drafted_per_position):
            continue
        check_value(sample.name, sample.value)
        if sample.name in (m.per_position, m.drafted_per_position):
            position = position_of(sample.name, sample.labels, m.position_label)
            counts = positions.setdefault(sample.name, {})
            counts[position] = counts.get(position, 0.0) + sample.value
        else:
            sums[sample.name] = sums.get(sample.name, 0.0) + sample.value
    per_position = positions_in_order(positions.get(m.per_position, {}), m.per_position)
    drafted = positions_in_order(positions.get(m.drafted_per_position, {}), m.drafted_per_position)
    drafts = sums.get(m.drafts, drafted[0] if drafted else 0.0)
    if value is not None and not sums and not positions:
        raise EngineFormatError(ErrorKind.AMBIGUOUS_MODEL, f"no spec-decode counters with {label}={value!r}")
    return Measurement(
        engine,
        m.scrape_format,
        value,
        drafts,
        sums.get(m.draft_tokens, float(sum(drafted))),
        sums.get(m.accepted, float(sum(per_position))),
        per_position,
        batch=sum(running) if running else None,
        drafted_per_position=drafted,
    )


def draft_lengths(drafted: tuple[float, ...]) -> tuple[int, ...]:
    """The lengths drafts ended at, from the drafts that reached each position: where fewer reached the next; none
    where every draft reached every position (one length) or nothing is counted per position."""
    reached = [*drafted, 0.0]
    tolerance = 1e-9 * max(drafted[0], 1.0) if drafted else 0.0
    if all(abs(value - reached[0]) <= tolerance for value in drafted):
        return ()
    return tuple(i for i in range(1, len(drafted) + 1) if reached[i - 1] - reached[i] > tolerance)


def went_down(before: Measurement, after: Measurement) -> str | None:
    """The first counter that decreased (a restart), or None."""
    if len(before.per_position) != len(after.per_position) or len(before.drafted_per_position) != len(
        after.drafted_per_position
    ):
        return "the number of draft positions"
    pairs = [
        ("the drafts counter", before.drafts or 0.0, after.drafts or 0.0),
        ("the draft tokens counter", before.draft_tokens or 0.0, after.draft_tokens or 0.0),
        ("the accepted tokens counter", before.accepted or 0.0, after.accepted or 0.0),
        *(
            (f"accepted tokens at position {i}", a, b)
            for i, (a, b) in enumerate(zip(before.per_position, after.per_position, strict=True))
        ),
        *(
            (f"drafts reaching position {i}", a, b)
            for i, (a, b) in enumerate(zip(before.drafted_per_position, after.drafted_per_position, strict=True))
        ),
    ]
    return next((name for name, a, b in pairs if b < a), None)


def interval_report(
    before: Measurement,
    after: Measurement,
    setup: RooflineSetup,
    calibrated: tuple[float, float] | None,
    batch_limit: int = limits.MAX_BATCH,
) -> IntervalReport:
    """What one interval says: acceptance with its interval, batch, the implied speedup, and any regression."""
    reason = went_down(before, after)
    if reason is not None:
        return IntervalReport("reset", message=f"counters reset ({reason} went down): server restarted? new baseline")
    drafts = (after.drafts or 0.0) - (before.drafts or 0.0)
    if drafts <= 0:
        return IntervalReport("idle", message="no drafts this interval: nothing to measure")
    measurement = replace(
        after,
        drafts=drafts,
        draft_tokens=(after.draft_tokens or 0.0) - (before.draft_tokens or 0.0),
        accepted=(after.accepted or 0.0) - (before.accepted or 0.0),
        per_position=tuple(b - a for a, b in zip(before.per_position, after.per_position, strict=True)),
        drafted_per_position=(),
        draft_lengths=draft_lengths(
            tuple(b - a for a, b in zip(before.drafted_per_position, after.drafted_per_position, strict=True))
        ),
    )
    running = after.batch if after.batch is not None else before.batch
    return measured_report(measurement, running, setup, calibrated, batch_limit)


def drift(measurement: Measurement, p: float, k: int, calibrated: tuple[float, float]) -> str | None:
    """ "fell" where acceptance over ``measurement`` lies below ``calibrated``, "rose" where above, on a 99.9%
    interval, so that hours of intervals at an unchanged p rarely raise a false alarm; None where it holds."""
    strict = engine_metrics.acceptance_interval(measurement, p, k, DRIFT_LEVEL)
    if strict.high is not None and strict.high < calibrated[0]:
        return "fell"
    if strict.low is not None and strict.low > calibrated[1]:
        return "rose"
    return None


def measured_report(
    measurement: Measurement,
    running: float | None,
    setup: RooflineSetup,
    calibrated: tuple[float, float] | None,
    batch_limit: int = limits.MAX_BATCH,
) -> IntervalReport:
    """One interval's counts calibrated and judged: the speedup at the running batch, and drift from the calibrated
    p; idle where they do not calibrate."""
    drafts = measurement.drafts or 0.0
    if drafts < MIN_DRAFTS:
        return IntervalReport(
            "idle",
            drafts=drafts,
            message=f"{drafts:,.0f} drafts this interval: too few to judge (the alerts need {MIN_DRAFTS})",
        )
    try:
        calibrated_now = engine_metrics.calibrate_measurement(measurement, 0.0, 1)
    except CalibrationError as error:
        return IntervalReport(
            "idle", drafts=drafts, message=f"counters this interval do not calibrate: {error.message}"
        )
    k = calibrated_now.result.k
    p = calibrated_now.result.acceptance
    low, high = calibrated_now.interval.low, calibrated_now.interval.high
    batch = max(1, round(running)) if running is not None else 1
    fit = max_batch_that_fits(setup, batch_limit)
    speedup = float(roofline_speedup(p, k, setup, batch))
    base = IntervalReport("ok", p=p, p_low=low, p_high=high, k=k, batch=batch, speedup=speedup, drafts=drafts)
    fit_note = f" (batch {batch} is more than the {fit} that fit this setup)" if batch > fit else ""
    moved = drift(measurement, p, k, calibrated) if calibrated is not None else None
    status, alarm = "ok", ""
    if moved is not None and calibrated is not None:
        status = "acceptance-dropped" if moved == "fell" else "acceptance-rose"
        shown = f"[{calibrated[0]:.3f}, {calibrated[1]:.3f}]"
        alarm = f"acceptance {'dropped below' if moved == 'fell' else 'rose above'} its calibrated {shown}"
    if speedup <= 1.0:
        message = f"speculation stops paying: {speedup:.2f}x at batch {batch} with k = {k}{fit_note}"
        return replace(base, status="stops-paying", message=message + (f"; {alarm}" if alarm else ""))
    return replace(base, status=status, message=(alarm or "ok") + fit_note)


def described(report: IntervalReport) -> str:
    """A report in words: p with its interval, k, batch, drafts and speedup, and what they mean."""
    if report.p is None:
        return report.message
    interval = f"[{report.p_low:.3f}, {report.p_high:.3f}]" if report.p_low is not None else "[?]"
    return (
        f"p {report.p:.3f} {interval}  k {report.k}  batch {report.batch}  drafts {report.drafts:,.0f}  "
        f"speedup {report.speedup:.2f}x  {report.message}"
    )


@dataclass
class WatchState:
    """Across intervals, whatever the source (one /metrics, or every class in Prometheus): each class's calibrated
    acceptance interval (the one given, else the first it measured), the regressions seen, the intervals read."""

    calibrated: tuple[float, float] | None
    per_class: dict[Hashable, tuple[float, float]] = field(default_factory=dict)
    regressions: int = 0
    index: int = 0
    failures: int = 0

    def judge(
        self,
        key: Hashable,
        report_for: Callable[[tuple[float, float] | None], IntervalReport],
        who: str = "",
        tail: str = "",
    ) -> tuple[IntervalReport, str]:
        """One class's interval judged against its calibrated interval, and its line (numbered ``index``, which
        the caller advances once per interval); the first interval that measures acceptance calibrates a class that
        was given none.  ``failures`` counts the Prometheus watch's failed queries in a row."""
        calibrated = self.calibrated or self.per_class.get(key)
        report = report_for(calibrated)
        text = f"interval {self.index:>4}{' ' + who if who else ''}: {described(report)}{tail}"
        if calibrated is None and report.status == "ok" and report.p_low is not None and report.p_high is not None:
            self.per_class[key] = (report.p_low, report.p_high)
            text += f"; calibrated interval [{report.p_low:.3f}, {report.p_high:.3f}]"
        if report.regression:
            self.regressions += 1
        return report, text


class ScrapeFailed(Exception):
    """A /metrics read that failed (unreachable, refused, not an engine's text): the interval says so."""


def watch_scrapes(
    read: Callable[[], Measurement],
    setup: RooflineSetup,
    *,
    interval: float,
    samples: int,
    calibrated: tuple[float, float] | None,
    emit: Callable[[str], None],
    on_reports: Callable[[list[IntervalReport], WatchState], None] = lambda reports, state: None,
    sleep: Callable[[float], None] = time.sleep,
) -> WatchState:
    """`watch URL`: ``samples`` intervals between consecutive scrapes of one /metrics, each judged as the
    Prometheus watch judges each class's (``WatchState.judge``); a failed scrape is an interval that says so."""
    state = WatchState(calibrated)
    previous: Measurement | None = None
    while state.index < samples:
        try:
            scrape = read()
        except ScrapeFailed as error:
            state.index += 1
            emit(f"interval {state.index:>4}: scrape failed: {error}")
            if state.index < samples:
                sleep(interval)
            continue
        if previous is not None:
            state.index += 1
            report, text = state.judge("", partial(interval_report, previous, scrape, setup))
            emit(text)
            on_reports([report], state)
        previous = scrape
        if state.index < samples:
            sleep(interval)
    return state
