"""`specdec-lab rollout check --prometheus URL --canary MATCHER --control MATCHER`: the canary check over a
Prometheus server.

At most ``QUERIES`` queries, each with the Prometheus client's timeout and size cap (as ``watch --prometheus``):
which engine's decode-time series Prometheus holds; the series each matcher selects (a matcher selecting none is
named, canary and control selecting a common series are refused); the seconds and tokens decoded per class in
every interval of the window, for each side (range queries, one step per interval); which classes the canary
counts drafts for; and the canary's spec-decode counters read at every interval's end
(:mod:`app.service.clients.spec_counts`), the window's first half calibrating and its second judged.  The arithmetic is
:mod:`app.model.live.rollout`'s.  Everything read goes into the report, so that ``--format json`` loses nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from app.model import engines
from app.model.engines.base import DecodeTime, RulesMetrics
from app.model.engines.reports import MAX_CLASSES, EngineFormatError, Measurement
from app.model.live import rollout
from app.service.clients import spec_counts
from app.service.clients.prometheus import (
    Prometheus,
    PrometheusError,
    Sample,
    Series,
    present_engine,
    range_series,
    replica_key,
)
from app.service.schemas.fill import filled
from app.service.schemas.rollout import (
    AcceptanceCheckOut,
    CanaryCountsOut,
    CheckClassOut,
    DecodeTimeOut,
    HalfCountsOut,
    QueryAskedOut,
    ReadingsOut,
    ReplicaReadingOut,
    RolloutCheckOut,
    SpeedupCheckOut,
)

QUERIES = 12


@dataclass(frozen=True)
class CheckRequest:
    canary: str
    control: str
    label: str = "model_name"
    window_s: float = 1800.0
    interval_s: float = 60.0
    engine: str | None = None
    version: str | None = None
    calibrated: tuple[float, float] | None = None


def check_request(
    canary: str,
    control: str,
    label: str,
    window: str | float,
    interval: str | float,
    calibrated: str | None,
    engine: str | None = None,
    version: str | None = None,
) -> CheckRequest:
    """The check's request from its options as written, each read and bounded in the order POST /rollout/check
    has always checked them (each on its own, then canary against control and the window against the interval);
    a RolloutInputError names the option."""
    canary_series, control_series = rollout.matcher("--canary", canary), rollout.matcher("--control", control)
    label = rollout.class_label("--label", label)
    window_s = rollout.duration("--window", window, rollout.MIN_INTERVAL_S, rollout.MAX_WINDOW_S)
    interval_s = rollout.duration("--interval", interval, rollout.MIN_INTERVAL_S, rollout.MAX_INTERVAL_S)
    given = rollout.calibrated_interval(calibrated)
    rollout.distinct(canary_series, control_series)
    rollout.intervals_in(window_s, interval_s)
    return CheckRequest(canary_series, control_series, label, window_s, interval_s, engine, version, given)


@dataclass
class _Reader:
    """Prometheus, counting the queries asked and keeping each one with what it answered."""

    prometheus: Prometheus
    asked: list[QueryAskedOut]

    def _count(self) -> None:
        if len(self.asked) >= QUERIES:
            raise PrometheusError(f"the check needs more than {QUERIES} queries: refused")

    def query(self, expr: str, at: float) -> list[Sample]:
        self._count()
        found = self.prometheus.query(expr, at)
        self.asked.append(QueryAskedOut(query=expr, time=at, series=len(found)))
        return found

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        self._count()
        found = self.prometheus.query_range(expr, start, end, step)
        self.asked.append(QueryAskedOut(query=expr, start=start, end=end, step=step, series=len(found)))
        return found


def _engine(reader: _Reader, given: str | None) -> tuple[str, DecodeTime]:
    """The engine whose decode-time series Prometheus holds (or the one named)."""
    names = [given] if given is not None else list(engines.ENGINES)
    series = {name: engines.adapter(name).DECODE_TIME for name in names}
    missing = {name: found.missing for name, found in series.items() if found.missing or not found.seconds}
    if given is not None and missing:
        raise PrometheusError(missing[given] or f"{engines.adapter(given).TITLE} exports no decode-time series")
    wanted = {found.seconds: name for name, found in series.items() if name not in missing}
    none = f"none of the decode-time series ({', '.join(wanted)}): is the engine scraped?"
    engine = present_engine(reader.query, reader.prometheus.url, wanted, none, "decode-time series")
    return engine, series[engine]


def _selected(reader: _Reader, series: DecodeTime, option: str, match: str, at: float) -> list[dict[str, str]]:
    found = [item.labels for item in reader.query(f"{series.seconds}{{{match}}}", at)]
    if not found:
        raise rollout.RolloutInputError(
            option,
            f"{match} selects no series of {series.seconds} in Prometheus at {reader.prometheus.url}: is that "
            "label on the replicas' series (through scrape_configs relabelling)?",
        )
    return found


def _per_replica_range(
    reader: _Reader, expr: str, label: str, start: float, end: float, step: float, times: list[float]
) -> dict[tuple[str, str], list[float | None]]:
    """(instance, class) -> one value per time (None where Prometheus has none)."""
    values: dict[tuple[str, str], list[float | None]] = {}
    for series in range_series(reader.query_range, expr, times, step):
        key = replica_key(series.labels, label)
        row = values.setdefault(key, [None] * len(times))
        for index, value in enumerate(series.values):
            if value is not None:
                row[index] = value
    return values


def _decoded(
    reader: _Reader, series: DecodeTime, label: str, match: str, times: list[float], step: float
) -> tuple[dict[str, list[tuple[float, float] | None]], dict[str, ReplicaReadingOut]]:
    """Class -> seconds and tokens decoded per interval, summed over the replicas; and every reading."""
    seconds = _per_replica_range(
        reader, rollout.decode_seconds(series, label, match), label, times[0], times[-1], step, times
    )
    tokens = _per_replica_range(
        reader, rollout.decode_tokens(series, label, match), label, times[0], times[-1], step, times
    )
    replicas: dict[str, list[list[tuple[float, float] | None]]] = {}
    for key in sorted(set(seconds) | set(tokens)):
        deltas = rollout.interval_deltas(seconds.get(key, [None] * len(times)), tokens.get(key, [None] * len(times)))
        replicas.setdefault(key[1], []).append(deltas)
    readings = {
        f"{instance} {name}".strip(): ReplicaReadingOut(
            seconds=seconds.get((instance, name)), tokens=tokens.get((instance, name))
        )
        for instance, name in sorted(set(seconds) | set(tokens))
    }
    return {key: rollout.class_deltas(rows) for key, rows in replicas.items()}, readings


def _measured(halves: list[Measurement | None]) -> CanaryCountsOut | None:
    if all(half is None for half in halves):
        return None
    return CanaryCountsOut(
        halves=[
            None if half is None else filled(HalfCountsOut, half, accepted_per_position=list(half.per_position))
            for half in halves
        ]
    )


def check(
    prometheus: Prometheus,
    request: CheckRequest,
    clock: Callable[[], float] = time.time,
) -> RolloutCheckOut:
    """The canary check's report: per class the per-interval decode times of both sides, the speedup with its
    interval, the canary's acceptance against its calibrated interval and the verdict; the overall verdict and its
    exit code; every query asked."""
    count = rollout.intervals_in(request.window_s, request.interval_s)
    reader = _Reader(prometheus, [])
    engine, series = _engine(reader, request.engine)
    version = engines.version(engine, request.version) if request.version else engines.versions(engine)[-1]
    metrics: RulesMetrics | None = engines.adapter(engine).RULES_METRICS.get(version.name)
    end = float(round(clock()))
    canary_series = _selected(reader, series, "--canary", request.canary, end)
    control_series = _selected(reader, series, "--control", request.control, end)
    common = {tuple(sorted(m.items())) for m in canary_series} & {tuple(sorted(m.items())) for m in control_series}
    if common:
        shown = ", ".join(dict(item).get("instance", str(dict(item))) for item in sorted(common)[:3])
        raise rollout.RolloutInputError(
            "--control",
            f"{request.control} and --canary {request.canary} both select {len(common)} series ({shown}): a replica "
            "is either canary or control",
        )
    step = request.interval_s
    times = [end - step * (count - index) for index in range(count + 1)]  # the window's start, then each end
    label = request.label
    decoded: dict[str, dict[str, list[tuple[float, float] | None]]] = {}
    readings: dict[str, dict[str, ReplicaReadingOut]] = {}
    for side, match in (("canary", request.canary), ("control", request.control)):
        decoded[side], readings[side] = _decoded(reader, series, label, match, times, step)
    classes = sorted({"" if label == "instance" else m.get(label, "") for m in canary_series} | set(decoded["canary"]))[
        :MAX_CLASSES
    ]
    speculating: set[str] = set()
    # class -> stretch -> the canary's counts over it, or why they were not read
    stretches: dict[str, dict[str, Measurement | str | None]] = {}
    counted = metrics is not None and not metrics.missing and (metrics.counts_drafts or metrics.counts_verifications)
    if metrics is not None and counted:
        counter = metrics.drafts or metrics.drafted_per_position or metrics.verify_calls
        speculating = {
            item.labels.get(label, "")
            for item in reader.query(f"count by ({label}) ({counter}{{{request.canary}}} > 0)", end)
        }
        half = count // 2  # intervals: the first half calibrates, the second is judged; both, against a given one
        spans = {
            "first": (count - 2 * half, count - half),
            "second": (count - half, count),
            "both": (count - 2 * half, count),
        }
        for key, counts in spec_counts.read(reader.query_range, metrics, label, request.canary, times).items():
            stretches[key] = {}
            for name, (start, stop) in spans.items():
                try:
                    stretches[key][name] = spec_counts.measurement(engine, metrics, counts, start, stop)
                except EngineFormatError as error:
                    stretches[key][name] = f"the canary's counts are not read: {error.message}"
    per_class: list[CheckClassOut] = []
    for key in classes:
        rows = []
        control_times, canary_times = [], []
        for index, at in enumerate(times[1:]):
            row: dict[str, float | None] = {"end": at}
            for side in ("canary", "control"):
                pair = (decoded[side].get(key) or [None] * count)[index]
                row[f"{side}_seconds"], row[f"{side}_tokens"] = pair if pair is not None else (None, None)
                row[f"{side}_per_token_s"] = rollout.per_token(*pair) if pair is not None else None
            canary_times.append(row["canary_per_token_s"])
            control_times.append(row["control_per_token_s"])
            rows.append(row)
        estimate = rollout.speedup_estimate(control_times, canary_times)
        read = stretches.get(key, {})
        first, second, both = (_counts(read.get(name)) for name in ("first", "second", "both"))
        calibrated: tuple[float, float] | None
        used: tuple[str, ...]  # the stretches the acceptance is judged on
        if request.calibrated is not None:
            calibrated, source, judged, used = request.calibrated, "given", both, ("both",)
        else:
            found = rollout.acceptance_or_why(first) if first is not None else "no counts"
            calibrated = None if isinstance(found, str) else (found[1], found[2])
            source, judged, used = "the first half of the window", second, ("first", "second")
        unread = next((why for name in used if isinstance(why := read.get(name), str)), None)
        if unread is not None and (judged is None or calibrated is None):
            acceptance = rollout.AcceptanceCheck("unknown", calibrated=calibrated, message=unread)
        elif counted:
            acceptance = rollout.judge_acceptance(judged, calibrated, source)
        else:
            why = (
                metrics.missing
                if metrics is not None and metrics.missing
                else f"{engines.adapter(engine).TITLE} {version.name} exports no counts of drafted and accepted tokens"
            )
            acceptance = rollout.AcceptanceCheck("unknown", message=f"acceptance not judged: {why}")
        verdict = rollout.verdict(estimate, acceptance, step, key in speculating)
        per_class.append(
            CheckClassOut(
                class_=key,
                verdict=verdict.status,
                reason=verdict.reason,
                notes=list(verdict.notes),
                more_intervals=verdict.more_intervals,
                more_seconds=verdict.more_seconds,
                speedup=filled(SpeedupCheckOut, estimate, point=estimate.speedup, ratios=list(estimate.ratios)),
                acceptance=filled(AcceptanceCheckOut, acceptance, counts=_measured([first, second])),
                intervals=rows,
            )
        )
    status = rollout.overall([item.verdict for item in per_class])
    return RolloutCheckOut(
        verdict=status,
        exit_code=rollout.EXIT_CODES[status],
        prometheus=prometheus.url,
        engine=engine,
        engine_version=version.name,
        label=label,
        canary=request.canary,
        control=request.control,
        window_s=request.window_s,
        interval_s=step,
        end=end,
        decode_time=DecodeTimeOut(
            seconds=series.seconds,
            tokens=series.tokens,
            first_tokens=series.first_tokens or None,
            per_request=series.per_request,
            what=series.note,
            sources=series.cite(),
        ),
        replicas={"canary": canary_series, "control": control_series},
        readings=ReadingsOut(times=times, **readings),
        classes=per_class,
        queries=reader.asked,
    )


def _counts(found: Measurement | str | None) -> Measurement | None:
    """A stretch's counts, or None where there were none or they were not read."""
    return found if isinstance(found, Measurement) else None
