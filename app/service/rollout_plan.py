"""`specdec-lab rollout plan`: per class, the measured acceptance, the batches it ran, the plan's schedule and
config for that acceptance on the user's setup, the gain weighted over those batches, and a verdict, in
rollout order (:mod:`app.model.live.rollout_plan` for the arithmetic).

The classes come from a Prometheus server (the spec-decode counters' increase over a window and the
running-requests gauge sampled over it: a bounded number of queries, as the watch) or from one pasted scrape
holding several classes (the counters since each server started, and the gauge as scraped).  Each class's
schedule and config are the plan's (:func:`app.service.plan.build`), decided once for that class.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from app.model import engines, rules
from app.model.arithmetic.acceptance import AcceptanceProfile
from app.model.counters import prometheus_text
from app.model.engines.base import RulesMetrics
from app.model.engines.reports import MAX_CLASSES, EngineFormatError, Measurement, verification_measurement
from app.model.live import rollout, rollout_plan
from app.model.live.watch import read_samples, scrape_samples
from app.service import plan
from app.service.clients import spec_counts
from app.service.clients.prometheus import Prometheus, PrometheusError, Series, detect
from app.service.regimes import BuiltSetup, accuracy_out
from app.service.schemas.rollout import (
    BatchesOut,
    GainOut,
    MeasuredAcceptanceOut,
    PlanClassOut,
    PlannedConfigOut,
    PlannedScheduleOut,
    RolloutPlanOut,
)

MAX_SAMPLES = 1000  # steps of the range query of the running gauge


@dataclass(frozen=True)
class Measured:
    """One class as read: its spec-decode counts (None: no counters, not speculating) and its batches."""

    name: str
    measurement: Measurement | None
    batches: rollout_plan.Batches
    unread: str = ""  # why counts seen for the class were not read (none where there were none)
    intervals: tuple[dict[str, float] | None, ...] = ()  # the counts of each interval read (from Prometheus)
    contradicting: int = 0  # replica intervals left out where the counts contradicted one another


def from_prometheus(
    prometheus: Prometheus,
    label: str,
    window_s: float,
    step_s: float,
    engine: str | None = None,
    version: str | None = None,
    clock: Callable[[], float] = time.time,
) -> tuple[str, str, list[Measured], list[str]]:
    """Engine, version, the classes and the queries asked."""
    target = detect(prometheus, engine, version, label, None)
    m = target.metrics
    if not (m.counts_drafts or m.counts_verifications):
        raise PrometheusError(
            f"{engines.adapter(target.engine).TITLE} {target.version} counts neither drafts nor verifications: the "
            "rollout plan needs them (use calibrate on a report of each class)"
        )
    end = float(round(clock()))
    asked: list[str] = []

    def query_range(expr: str, start: float, stop: float, step: float) -> list[Series]:
        asked.append(expr)
        return prometheus.query_range(expr, start, stop, step)

    # the counts over the window, from the counters' readings at every interval's end (one scrape's readings
    # for every count of an interval: their ratios hold)
    intervals = max(1, min(MAX_SAMPLES, int(window_s // step_s)))
    reading_step = window_s / intervals
    times = [end - reading_step * (intervals - index) for index in range(intervals + 1)]
    measurements: dict[str, Measurement | None] = {}
    unread: dict[str, str] = {}
    read = spec_counts.read(query_range, m, label, "", times)
    for name, counts in read.items():
        try:
            measurements[name] = spec_counts.measurement(target.engine, m, counts, 0, intervals)
        except EngineFormatError as error:
            measurements[name], unread[name] = None, error.message
    running: dict[str, list[float]] = {}
    for item in query_range(f"sum by (instance, {label}) ({m.running})", end - step_s * (intervals - 1), end, step_s):
        running.setdefault(item.labels.get(label, ""), []).extend(v for _, v in item.points if v is not None)
    classes = []
    for name in sorted(set(measurements) | set(running))[:MAX_CLASSES]:
        batches = rollout_plan.Batches.of(running.get(name, []))
        seen = read.get(name)
        counted = tuple(seen.intervals) if seen is not None else ()
        left_out = seen.contradicting if seen is not None else 0
        classes.append(Measured(name, measurements.get(name), batches, unread.get(name, ""), counted, left_out))
    return target.engine, target.version, classes, asked


def from_scrape(text: str, label: str) -> tuple[str, str, list[Measured]]:
    """Engine, version and the classes of one pasted scrape (counters since each server started)."""
    every = scrape_samples(text)
    counted = _verifications_engine({sample.name for sample in every})
    if counted is not None:
        return _verification_classes(every, label, *counted)
    whole = read_samples(every, label)
    engine = whole.engine
    version = engines.versions(engine)[-1].name
    m = engines.adapter(engine).RULES_METRICS[version]
    counters = {m.drafts, m.drafted_per_position, m.per_position} - {""}
    names = {s.labels.get(label, "") for s in every if s.name in counters} | {
        s.labels.get(label, "") for s in every if s.name == m.running
    }
    classes = []
    for name in sorted(names)[:MAX_CLASSES]:
        running = [s.value for s in every if s.name == m.running and s.labels.get(label, "") == name]
        try:
            scrape = read_samples(every, label, name)
        except EngineFormatError:
            scrape = None
        measurement = None
        if scrape is not None and (scrape.drafts or 0.0) > 0:
            measurement = replace(scrape, label=None, batch=None, drafted_per_position=())
        classes.append(Measured(name, measurement, rollout_plan.Batches.of(running)))
    return engine, version, classes


def _verifications_engine(names: set[str]) -> tuple[str, str, RulesMetrics] | None:
    """The engine and version whose counter of verifications the scrape holds, where that version counts only
    verifications (SGLang's series); None for every other scrape."""
    for engine in engines.ENGINES:
        for version in reversed(engines.versions(engine)):
            m = engines.adapter(engine).RULES_METRICS.get(version.name)
            if m is not None and m.counts_verifications and m.verify_calls in names:
                return engine, version.name, m
    return None


def _verification_classes(
    every: Sequence[prometheus_text.Sample], label: str, engine: str, version: str, m: RulesMetrics
) -> tuple[str, str, list[Measured]]:
    """The classes of a scrape whose engine counts only verifications: tokens per verification since each server
    started, at the k its gauge shows now."""
    names = {s.labels.get(label, "") for s in every if s.name in (m.verify_calls, m.running)}
    classes = []
    for name in sorted(names)[:MAX_CLASSES]:
        mine = [s for s in every if s.labels.get(label, "") == name and math.isfinite(s.value)]
        verifications = sum(s.value for s in mine if s.name == m.verify_calls)
        generated = [s.value for s in mine if s.name == m.generated]
        unread = ""
        try:
            measurement = verification_measurement(
                engine,
                m.scrape_format,
                verifications,
                sum(generated) if generated else None,
                [s.value for s in mine if s.name == m.running_k],
            )
        except EngineFormatError as error:
            measurement, unread = None, error.message
        running = [s.value for s in mine if s.name == m.running]
        classes.append(Measured(name, measurement, rollout_plan.Batches.of(running), unread))
    return engine, version, classes


def _profile(measurement: Measurement) -> tuple[float, ...]:
    if not measurement.per_position or not measurement.drafts:
        return ()
    shares = tuple(min(1.0, value / measurement.drafts) for value in measurement.per_position)
    try:
        AcceptanceProfile.of(shares[0], shares)
    except ValueError:
        return ()
    return shares


def plan_classes(
    engine: str,
    version: str,
    classes: Sequence[Measured],
    built: BuiltSetup,
    label: str,
    k_max: int,
) -> RolloutPlanOut:
    """Per class: acceptance, batches, schedule, gain, verdict and config; in rollout order."""
    # what /batch states beside the same setup: a step fit's own error, else the defaults' median on the setup's class
    # (every point's where the class has too few), the terms given here compared with the same
    accuracy = accuracy_out(built.setup, built.measured)
    if accuracy.source == "measured" and accuracy.measured_error is not None:
        error = accuracy.measured_error
    else:
        error = accuracy.class_median_error or accuracy.median_error or 0.0
    rows: list[tuple[tuple[int, float], PlanClassOut]] = []
    for measured in classes:
        m = measured.measurement
        found = rollout.acceptance_or_why(m) if m is not None else measured.unread or None
        gain = acceptance = schedule = config = None
        if m is None or isinstance(found, str) or found is None:
            drafts = (m.drafts or 0.0) if m is not None else 0.0
            verdict = (  # counts seen and not read say why
                rollout_plan.ClassVerdict(rollout_plan.MEASURE_FIRST, found)
                if isinstance(found, str)
                else rollout_plan.judge(None, drafts, m is not None)
            )
        else:
            p, low, high, k = found
            profile = _profile(m)
            made = plan.build(
                plan.PlanRequest(engine=engine, p=p, profile=profile, k_max=k_max, version=version), built
            )
            decision = made.decision
            gain = rollout_plan.weighted_gain(
                decision.best_k, decision.best_speedup, built.setup, measured.batches, low, high, error
            )
            verdict = rollout_plan.judge(gain, m.drafts or 0.0, True)
            acceptance = MeasuredAcceptanceOut(p=p, low=low, high=high, k=k, profile=list(profile))
            schedule = PlannedScheduleOut(
                best_k=list(decision.best_k), off_from_batch=decision.off_from_batch, headline=decision.headline
            )
            if verdict.verdict == rollout_plan.TURN_ON:
                made_config = made.config_out()
                config = PlannedConfigOut(text=made_config.text, flags=made_config.flags, config=made_config.config)
        row = PlanClassOut(
            class_=measured.name,
            intervals=list(measured.intervals),  # every interval's counts as read, None where none read cleanly
            contradicting_intervals=measured.contradicting,
            batches=BatchesOut(
                samples=measured.batches.samples,
                histogram={str(b): n for b, n in measured.batches.counts.items()},
                quantiles=measured.batches.quantiles(),
            ),
            acceptance=acceptance,
            drafts=m.drafts if m is not None else 0.0,
            schedule=schedule,
            config=config,
            verdict=verdict.verdict,
            reason=verdict.reason,
            gain=None
            if gain is None
            else GainOut(
                point=gain.point,
                at_p_low=gain.at_low,
                at_p_high=gain.at_high,
                low=gain.low,
                high=gain.high,
                model_error=gain.model_error,
            ),
        )
        rows.append((rollout_plan.order_key(verdict.verdict, gain), row))
    return RolloutPlanOut(
        engine=engine,
        engine_version=version,
        label=label,
        setup=rules.setup_text(built.setup),
        cost_model=accuracy.summary,
        classes=[row for _key, row in sorted(rows, key=lambda item: item[0])],
    )


def acceptance_seen(row: PlanClassOut, number: Callable[[float], str]) -> str:
    """A planned class's measured acceptance with its interval, each written by ``number``, or "not measured"."""
    acceptance = row.acceptance
    if acceptance is None:
        return "not measured"
    return f"{number(acceptance.p)} [{number(acceptance.low)}, {number(acceptance.high)}]"


def batches_seen(row: PlanClassOut) -> str:
    """A planned class's batch quantiles as "p50 8, p90 32", or "none seen"."""
    return ", ".join(f"{key} {value}" for key, value in row.batches.quantiles.items()) or "none seen"
