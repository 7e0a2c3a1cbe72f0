"""`specdec-lab watch --prometheus URL`: the watch over a Prometheus server instead of one /metrics.

The watch reads what the rules file records (:mod:`app.model.rules`), for every instance and class at once: the
running batch, the drafts, the counter resets, tokens per verification, and the acceptance per position with
the mean draft length (or, for an engine that counts only verifications, the k its gauge shows).  Where
Prometheus holds those ``specdec:*`` series (the operator loaded ``specdec-lab rules``), it reads them; where it
does not, it evaluates the very expressions of those recording rules, taken from the one rules builder with
their references to other records written out, over each interval.  It says which it does.

That is at most ``QUERIES_PER_EVALUATION`` queries per interval, instant queries (``/api/v1/query``) while
watching and range queries (``/api/v1/query_range``, at most ``MAX_HISTORY`` steps) for the history asked with
``--since``; each has a timeout and a size cap.  Each class's interval is then judged as the /metrics watch
judges it (:func:`app.model.live.watch.measured_report`): acceptance with its interval, the batch, the speedup this
implies on the setup, and a regression when speculation stops paying or acceptance leaves its calibrated
interval.

Counter resets (a restart) need no new baseline here: ``increase`` counts across them, and the line says so.
A Prometheus that does not answer, or answers an error, ends the watch with a plain message (exit 2).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

import httpx

from app.model import engines
from app.model.cost.regimes import RooflineSetup
from app.model.counters.calibration import CalibrationError
from app.model.engines.base import RulesMetrics
from app.model.engines.reports import Measurement, mean_only
from app.model.live.watch import IntervalReport, measured_report
from app.model.rules import promql
from app.model.rules.file import rules_id_pattern

QUERIES_PER_EVALUATION = 6
MAX_HISTORY = 1000  # steps of one range query
MAX_RESPONSE_BYTES = 8_000_000
MAX_FAILURES = 3  # consecutive failed intervals before the watch gives up
# Prometheus's increase() stretches each counter's growth to the ends of its window, but only as far back as the
# counter would have been zero, so two counters that began inside the window (a fresh engine) are stretched by
# different amounts: a share of drafts accepted at a position then reads a little above 1, or above the one before
# it.  Overshoots up to this share are that artefact and are read as the bound they cross; larger ones stand, and
# the calibration says the counts are inconsistent.
EXTRAPOLATION_SLACK = 0.1
HELD = "counts held to their bounds (by up to {:.1%}): increase() stretched counters that began in the window apart"


class PrometheusError(Exception):
    """Prometheus did not answer, or answered an error: the message says which, in words."""


@dataclass(frozen=True)
class Prometheus:
    """A Prometheus server's HTTP API at ``url`` (its root, as in http://host:9090)."""

    url: str
    timeout: float = 5.0

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise PrometheusError(
                f"--prometheus must be an http(s) URL such as http://127.0.0.1:9090; got {self.url!r}"
            )

    def _get(self, path: str, params: dict[str, str]) -> Any:
        url = self.url.rstrip("/") + path
        try:
            with (
                httpx.Client(timeout=self.timeout, follow_redirects=False) as client,
                client.stream("GET", url, params={**params, "timeout": f"{self.timeout:g}s"}) as response,
            ):
                chunks: list[bytes] = []
                size = 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > MAX_RESPONSE_BYTES:
                        raise PrometheusError(f"Prometheus at {self.url} sent more than {MAX_RESPONSE_BYTES:,} bytes")
                    chunks.append(chunk)
                status = response.status_code
            body = b"".join(chunks)
        except httpx.TimeoutException:
            raise PrometheusError(f"Prometheus at {self.url} did not answer within {self.timeout:g} s") from None
        except httpx.HTTPError as error:
            raise PrometheusError(f"Prometheus at {self.url} does not answer: {error}") from None
        try:
            payload = json.loads(body)
        except ValueError:
            raise PrometheusError(
                f"{url} answered HTTP {status} with something that is not Prometheus's JSON: is this a Prometheus?"
            ) from None
        if not isinstance(payload, dict) or payload.get("status") != "success":
            reason = payload.get("error", "no reason given") if isinstance(payload, dict) else "no reason given"
            kind = payload.get("errorType", "error") if isinstance(payload, dict) else "error"
            raise PrometheusError(f"Prometheus at {self.url} answered HTTP {status}, {kind}: {reason}")
        return payload.get("data")

    def query(self, expr: str, at: float) -> list[Sample]:
        """Each series of an instant query with its value at ``at``."""
        data = self._get("/api/v1/query", {"query": expr, "time": f"{at:.3f}"})
        if not isinstance(data, dict) or data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
            raise PrometheusError(f"Prometheus at {self.url} answered an instant query without a vector")
        return [Sample(_labels(item), _value(item)) for item in data["result"]]

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        """Each series of a range query with its samples from ``start`` to ``end``."""
        data = self._get(
            "/api/v1/query_range", {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        )
        if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
            raise PrometheusError(f"Prometheus at {self.url} answered a range query without a matrix")
        found = []
        for item in data["result"]:
            raw = item.get("values") if isinstance(item, dict) else None
            samples = raw if isinstance(raw, list) else []
            found.append(Series(_labels(item), tuple(_point(pair, self.url) for pair in samples)))
        return found


@dataclass(frozen=True)
class Sample:
    """One series of an instant query: its labels and its value (None where it is no finite number)."""

    labels: dict[str, str]
    value: float | None


@dataclass(frozen=True)
class Series:
    """One series of a range query: its labels and its samples, (time, value) with value None where it is no
    finite number."""

    labels: dict[str, str]
    points: tuple[tuple[float, float | None], ...]


def _labels(item: object) -> dict[str, str]:
    metric = item.get("metric") if isinstance(item, dict) else None
    return {str(key): str(value) for key, value in metric.items()} if isinstance(metric, dict) else {}


def _value(item: object) -> float | None:
    pair = item.get("value") if isinstance(item, dict) else None
    return number(pair[1]) if isinstance(pair, list) and len(pair) == 2 else None


def _point(pair: object, url: str) -> tuple[float, float | None]:
    if not isinstance(pair, list) or len(pair) != 2 or number(pair[0]) is None:
        raise PrometheusError(f"Prometheus at {url} answered a sample that is not [time, value]: {pair!r}"[:300])
    return float(pair[0]), number(pair[1])


QueryRange = Callable[[str, float, float, float], list[Series]]


@dataclass(frozen=True)
class RangeSeries:
    """One series of a range query: its labels, and its value at each time asked (None where it has none)."""

    labels: dict[str, str]
    values: list[float | None]


def range_series(query_range: QueryRange, expr: str, times: Sequence[float], step: float) -> list[RangeSeries]:
    """Each series ``expr`` gives over ``times`` (from the first to the last, every ``step`` seconds), its samples
    aligned to those times: what the fleet watch, the rollout check and the spec counts (for the plan too) read."""
    index_of = {round(at, 3): index for index, at in enumerate(times)}
    found = []
    for series in query_range(expr, times[0], times[-1], step):
        values: list[float | None] = [None] * len(times)
        for at, value in series.points:
            index = index_of.get(round(at, 3))
            if index is not None:
                values[index] = value
        found.append(RangeSeries(series.labels, values))
    return found


# ---------------------------------------------------------------------------
# What to ask


@dataclass(frozen=True)
class Target:
    """What the watch reads: the records of the rules file where Prometheus holds them (``recorded``, the rules
    files' RULES_LABEL values), else the very expressions of those records, evaluated over each interval."""

    engine: str
    version: str
    metrics: RulesMetrics
    label: str
    matcher: str  # added to every selector, e.g. model_name="m"
    recorded: tuple[str, ...] = ()

    def series(self, seconds: float) -> promql.Series:
        return promql.Series(self.metrics, self.label, f"{max(1, round(seconds))}s", self.matcher)

    def read(self) -> tuple[str, ...]:
        """The records the watch reads: at most QUERIES_PER_EVALUATION of them."""
        measured = self.series(1.0).measured()
        wanted = [promql.RUNNING_BATCH, promql.DRAFTS, promql.COUNTER_RESETS, promql.TOKENS]
        if self.metrics.counts_verifications:
            wanted.append(promql.RUNNING_K)
        else:
            wanted += [promql.AT_POSITION, promql.DRAFT_LENGTH]
        return tuple(name for name in wanted if name in measured)

    def queries(self, seconds: float) -> dict[str, str]:
        """Record name -> PromQL over one interval of ``seconds``: the recorded series, or their expressions."""
        if self.recorded:
            which = (
                f'{promql.RULES_LABEL}="{self.recorded[0]}"'
                if len(self.recorded) == 1
                else f'{promql.RULES_LABEL}=~"{"|".join(self.recorded)}"'
            )
            selector = ", ".join(part for part in (which, self.matcher) if part)
            return {name: f"{name}{{{selector}}}" for name in self.read()}
        measured = self.series(seconds).measured()
        return {name: promql.inlined(measured, name) for name in self.read()}


def _unwatchable(name: str, version: str, metrics: RulesMetrics | None) -> str:
    """Why the watch cannot follow this engine version, or empty."""
    title = engines.adapter(name).TITLE
    if metrics is None:
        return f"{title} {version}: no Prometheus series are known for it"
    if metrics.missing:
        return metrics.missing
    if not promql.Series(metrics, "instance", "1s").counted:
        return f"{title} {version} exports only gauges of acceptance: the watch needs a counter of verifications"
    return ""


def detect(prometheus: Prometheus, engine: str | None, version: str | None, label: str, value: str | None) -> Target:
    """The engine whose series Prometheus holds (or the one named), its newest version with counters, and the
    rules files of that engine loaded there."""
    candidates: dict[str, tuple[str, RulesMetrics]] = {}
    for name in engines.ENGINES if engine is None else (engine,):
        known: Mapping[str, RulesMetrics] = engines.adapter(name).RULES_METRICS
        chosen = engines.version(name, version) if engine is not None else engines.versions(name)[-1]
        metrics = known.get(chosen.name)
        problem = _unwatchable(name, chosen.name, metrics)
        if problem and engine is not None:
            raise PrometheusError(problem)
        if metrics is not None and not problem:
            candidates[name] = (chosen.name, metrics)
    identifying = {
        promql.Series(metrics, label, "1s").verifications_counter()[0]: name
        for name, (_, metrics) in candidates.items()
    }
    which = ", ".join(engines.adapter(name).TITLE for name in candidates)
    none = f"no spec-decode counters of {which} ({', '.join(identifying)}): "
    none += "is the engine scraped, with speculative decoding on?"
    engine = present_engine(prometheus.query, prometheus.url, identifying, none, "spec-decode counters")
    matcher = f'{label}="{_escaped(value)}"' if value is not None else ""
    chosen_version, metrics = candidates[engine]
    return Target(engine, chosen_version, metrics, label, matcher, _rules_files(prometheus, engine, metrics, label))


def present_engine(
    query: Callable[[str, float], list[Sample]], url: str, identifying: Mapping[str, str], none: str, what: str
) -> str:
    """The one engine whose identifying series (series name: engine) Prometheus at ``url`` holds now; an error
    saying ``none`` where it holds none, or naming the engines where it holds ``what`` of several."""
    found = query(f'count by (__name__) ({{__name__=~"{"|".join(identifying)}"}})', time.time())
    present = sorted(
        {identifying[name] for name in (item.labels.get("__name__", "") for item in found) if name in identifying}
    )
    if not present:
        raise PrometheusError(f"Prometheus at {url} holds {none}")
    if len(present) > 1:
        raise PrometheusError(f"Prometheus at {url} holds {what} of {', '.join(present)}: name one with --engine")
    return present[0]


def _rules_files(prometheus: Prometheus, engine: str, metrics: RulesMetrics, label: str) -> tuple[str, ...]:
    """The rules files of this engine loaded in Prometheus (their RULES_LABEL values) whose records carry the
    class label wherever the engine's own series do: a file written per another label records no class of this
    one."""
    by = promql.RULES_LABEL if label == "instance" else f"{promql.RULES_LABEL}, {label}"
    pattern = rules_id_pattern(engine)
    files = [
        item.labels
        for item in prometheus.query(
            f'count by ({by}) ({promql.TOKENS}{{{promql.RULES_LABEL}=~"{pattern}"}})', time.time()
        )
    ]
    if files and label != "instance":
        counter = promql.Series(metrics, label, "1s").verifications_counter()[0]
        labelled = any(
            item.labels.get(label) for item in prometheus.query(f"count by ({label}) ({counter})", time.time())
        )
        files = [item for item in files if item.get(label) or not labelled]
    return tuple(sorted({item.get(promql.RULES_LABEL, "") for item in files} - {""}))


def _escaped(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


# ---------------------------------------------------------------------------
# From answers to reports


Key = tuple[str, str]  # (instance, class)


@dataclass
class Interval:
    """What Prometheus said of one interval, per class: each record's value, and the acceptance per position."""

    values: dict[str, dict[Key, float]] = field(default_factory=dict)
    positions: dict[Key, dict[int, float]] = field(default_factory=dict)

    def classes(self) -> list[Key]:
        found = set(self.values.get(promql.DRAFTS, {})) | set(self.values.get(promql.RUNNING_BATCH, {}))
        return sorted(found | set(self.positions))


def replica_key(metric: Mapping[str, str], label: str) -> Key:
    """A series' replica: its instance and, unless the class label is the instance, its class."""
    return metric.get("instance", ""), "" if label == "instance" else metric.get(label, "")


def number(raw: object) -> float | None:
    """A sample's value as a finite number; None where it is not one (NaN, +Inf, not a number)."""
    if not isinstance(raw, str | int | float):
        return None
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _store(interval: Interval, name: str, metric: dict[str, str], value: float | None, label: str) -> None:
    if value is None:
        return
    key = replica_key(metric, label)
    if name == promql.AT_POSITION:  # its position label is always "position" (the record renames the engine's)
        position = metric.get("position", "")
        if position.isdigit():
            interval.positions.setdefault(key, {})[int(position)] = value
    else:
        interval.values.setdefault(name, {})[key] = value


def evaluate(prometheus: Prometheus, target: Target, seconds: float, times: Sequence[float]) -> list[Interval]:
    """One Interval per time (each covering the ``seconds`` before it): instant queries for one time, range
    queries for several (Prometheus's answers are typed where they are read: a shape it should not answer is
    a PrometheusError there)."""
    intervals = [Interval() for _ in times]
    for name, expr in target.queries(seconds).items():
        if len(times) == 1:
            for item in prometheus.query(expr, times[0]):
                _store(intervals[0], name, item.labels, item.value, target.label)
            continue
        for series in range_series(prometheus.query_range, expr, times, seconds):
            for index, value in enumerate(series.values):
                _store(intervals[index], name, series.labels, value, target.label)
    return intervals


@dataclass(frozen=True)
class Settled:
    """Per draft, held to what counts allow: the share accepted at each position, the mean draft length (None
    where not recorded) and the tokens accepted; ``moved``, the largest relative change that took."""

    shares: tuple[float, ...]
    mean_length: float | None
    accepted: float
    moved: float = 0.0


def settled(shares: list[float], mean_length: float | None, accepted: float) -> Settled:
    """The shares, mean draft length and tokens accepted per draft (the shares' sum where there are shares), held
    to what counts allow where they cross it by no more than EXTRAPOLATION_SLACK, the error of ratios of
    extrapolated increases: a share at most 1 and at most the one before it; a mean length of at least one token
    and the tokens accepted, and at most k where the shares give k."""
    reached: list[float] = []
    moved, bound = 0.0, 1.0
    for share in shares:
        if bound < share <= bound * (1.0 + EXTRAPOLATION_SLACK):
            moved, share = max(moved, share / bound - 1.0), bound
        reached.append(share)
        bound = share
    if reached:
        accepted = sum(reached)
    if mean_length is not None:
        low, high = max(1.0, accepted), float(len(reached)) if reached else math.inf
        held = mean_length
        if mean_length < low <= mean_length * (1.0 + EXTRAPOLATION_SLACK):
            held = low
        elif high < mean_length <= high * (1.0 + EXTRAPOLATION_SLACK):
            held = high
        moved, mean_length = max(moved, abs(held / mean_length - 1.0)), held
    return Settled(tuple(reached), mean_length, accepted, moved)


def class_report(
    interval: Interval,
    key: Key,
    target: Target,
    setup: RooflineSetup,
    calibrated: tuple[float, float] | None,
) -> IntervalReport:
    """One class's interval judged as the /metrics watch judges one: acceptance, batch, speedup, regression.

    The counts are read back from the records: drafts, accepted tokens per position (the share at each position
    times the drafts) or in all (tokens per verification less one, times the drafts), drafted tokens (the mean
    draft length times the drafts); an engine that counts only verifications gives tokens per verification at the
    k its gauge shows."""
    values = {name: found[key] for name, found in interval.values.items() if key in found}
    m = target.metrics
    running, drafts, tokens = (
        values.get(promql.RUNNING_BATCH),
        values.get(promql.DRAFTS, 0.0),
        values.get(promql.TOKENS),
    )
    if drafts <= 0 or tokens is None:
        return IntervalReport("idle", message="no drafts this interval: nothing to measure")
    held: Settled | None = None
    try:
        if m.counts_verifications:
            steps = values.get(promql.RUNNING_K)
            if steps is None or round(steps) < 1:
                return IntervalReport("idle", drafts=drafts, message=f"no {m.running_k}: the k is not known")
            k = round(steps)
            length = min(max(tokens, 1.0), k + 1.0)
            measurement = mean_only(target.engine, m.scrape_format, None, length, k, m.running_k, drafts, running, [])
        else:
            shares = interval.positions.get(key, {})
            if m.per_position and not shares:
                return IntervalReport("idle", drafts=drafts, message="no per-position counts yet: nothing to measure")
            held = settled(
                [shares.get(i, 0.0) for i in range(max(shares, default=-1) + 1)],
                values.get(promql.DRAFT_LENGTH),
                tokens - 1.0,
            )
            per_position = tuple(share * drafts for share in held.shares)
            mean_length, accepted = held.mean_length, held.accepted
            measurement = Measurement(
                engine=target.engine,
                format=m.scrape_format,
                label=None,
                drafts=drafts,
                draft_tokens=(mean_length if mean_length is not None else len(per_position)) * drafts,
                accepted=accepted * drafts,
                per_position=per_position,
                batch=running,
            )
    except CalibrationError as error:
        return IntervalReport("idle", drafts=drafts, message=f"counts do not calibrate: {error.message}")
    report = measured_report(measurement, running, setup, calibrated)
    if held is not None and held.moved > 0.0 and report.p is not None:
        report = replace(report, message=f"{report.message}; {HELD.format(held.moved)}")
    return report
