"""A canary check: are the replicas that run speculation faster than those that do not, per class, and does
their acceptance hold?

Over a window cut into intervals of the rate interval, each side's per-token decode time is read from the
engine's own series (its adapter's ``DECODE_TIME``: seconds spent decoding over tokens decoded in the
interval).  Each interval with tokens on both sides gives one ratio, control time over canary time; the
speedup is their geometric mean, with a Student t interval over intervals (not one ratio of totals, whose
spread would be unknown).  The canary's acceptance over the window is judged against its calibrated interval
(given, or the first half of the window's, the second half judged out of sample) on a 99.9% interval, as the
watch judges drift.

The verdict is *promote* (the speedup interval's lower bound above 1 and acceptance holding), *roll back* (its
upper bound below 1, or acceptance fell) or *hold*, which says how many more intervals at the spread seen
would decide.  A class whose canary counts no drafts is *not speculating*: no verdict, not an error.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from scipy import stats

from app.model import rules
from app.model.counters.calibration import CalibrationError
from app.model.engines.base import DecodeTime
from app.model.engines.reports import Measurement
from app.model.live import engine_metrics
from app.model.live.watch import drift

LEVEL = 0.95  # the speedup interval's confidence
MIN_INTERVALS = 3  # intervals with tokens on both sides before a speedup interval is drawn
MAX_INTERVALS = 1000  # intervals in one window (the steps of one range query)
MIN_INTERVAL_S = 1.0
MAX_INTERVAL_S = 3600.0
MAX_WINDOW_S = 7 * 24 * 3600.0
MAX_MATCHER_CHARS = 500
MAX_MORE_INTERVALS = 100_000  # beyond this a hold says no amount of data at this difference would decide

PROMOTE, ROLL_BACK, HOLD, NOT_SPECULATING = "promote", "roll back", "hold", "not speculating"
EXIT_CODES = {PROMOTE: 0, ROLL_BACK: 1, HOLD: 3}  # 2: Prometheus does not answer, or the input is refused

_NAME = r"[a-zA-Z_][a-zA-Z0-9_]*"
_ONE = rf'\s*({_NAME})\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*'
_MATCHER = re.compile(rf"^{_ONE}(?:,{_ONE})*,?\s*$")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


class RolloutInputError(ValueError):
    """Input the check refuses: the option, as the command line names it, and why."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option
        self.message = message


# ---------------------------------------------------------------------------
# Input


def class_label(option: str, label: str) -> str:
    """The label whose values are the classes, checked as the rules check it (a Prometheus label name): the check
    and the plan write it into PromQL."""
    try:
        return rules.check_label(label)
    except rules.RulesError as error:
        raise RolloutInputError(option, error.message) from None


def matcher(option: str, text: str) -> str:
    """A PromQL label matcher list (``role="canary"``, ``instance=~"a.*",pool="x"``), normalised; refused with
    the option's name where it is not one."""
    if len(text) > MAX_MATCHER_CHARS:
        raise RolloutInputError(option, f"at most {MAX_MATCHER_CHARS} characters; got {len(text)}")
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1]
    if not body.strip() or not _MATCHER.match(body):
        raise RolloutInputError(
            option, f'must be label matchers such as role="canary" or instance=~"canary-.*"; got {text!r}'
        )
    pairs = re.findall(_ONE, body)
    return ",".join(f'{name}{op}"{value}"' for name, op, value in pairs)


def distinct(canary: str, control: str) -> None:
    """Canary and control written the same way select the same series: refused."""
    if sorted(canary.split(",")) == sorted(control.split(",")):
        raise RolloutInputError("--control", f"selects what --canary selects ({canary}): give the plain replicas")


def duration(option: str, text: str | float, low: float, high: float) -> float:
    """Seconds from 30, "30s", "5m", "1h"; refused outside [low, high]."""
    if isinstance(text, int | float):
        seconds = float(text)
    else:
        found = _DURATION.match(text)
        if found is None:
            raise RolloutInputError(option, f"must be a duration such as 30s, 5m or 1h; got {text!r}")
        seconds = float(found.group(1)) * _UNITS[found.group(2) or "s"]
    if not (math.isfinite(seconds) and low <= seconds <= high):
        raise RolloutInputError(option, f"must be from {low:g} s to {high:g} s; got {text}")
    return seconds


def intervals_in(window: float, interval: float) -> int:
    """The intervals a window holds; refused where it holds fewer than MIN_INTERVALS (too short for the rate
    interval) or more than MAX_INTERVALS."""
    count = int(window // interval + 1e-9)
    if count < MIN_INTERVALS:
        raise RolloutInputError(
            "--window",
            f"{window:g} s is too short for --interval {interval:g} s: it holds {count} interval"
            f"{'' if count == 1 else 's'}, and a speedup interval needs at least {MIN_INTERVALS}; give a window "
            f"of at least {MIN_INTERVALS * interval:g} s or a shorter --interval",
        )
    if count > MAX_INTERVALS:
        raise RolloutInputError(
            "--window",
            f"{window:g} s holds {count} intervals of {interval:g} s; at most {MAX_INTERVALS}: give a longer "
            "--interval",
        )
    return count


def window_and_interval(window: str | float, interval: str | float) -> tuple[float, float]:
    """--window and --interval in seconds, each in its bounds, the window holding a count of intervals the check
    can use."""
    interval_s = duration("--interval", interval, MIN_INTERVAL_S, MAX_INTERVAL_S)
    window_s = duration("--window", window, MIN_INTERVAL_S, MAX_WINDOW_S)
    intervals_in(window_s, interval_s)
    return window_s, interval_s


def calibrated_interval(text: str | None) -> tuple[float, float] | None:
    if text is None:
        return None
    try:
        low, high = (float(part) for part in text.split(","))
    except ValueError:
        raise RolloutInputError("--calibrated", f"must be LOW,HIGH with 0 <= LOW <= HIGH <= 1; got {text!r}") from None
    if not 0.0 <= low <= high <= 1.0:
        raise RolloutInputError("--calibrated", f"must be LOW,HIGH with 0 <= LOW <= HIGH <= 1; got {text!r}")
    return low, high


# ---------------------------------------------------------------------------
# PromQL of the decode time, per class


def _selector(name: str, match: str) -> str:
    return f"{name}{{{match}}}" if match else name


def by(label: str) -> str:
    """Per replica and class: each replica's counters are read apart, so that one restarting loses only its own
    interval."""
    return "instance" if label == "instance" else f"instance, {label}"


def decode_seconds(series: DecodeTime, label: str, match: str) -> str:
    """The counter of seconds spent decoding, per replica and class, on the replicas ``match`` selects."""
    return f"sum by ({by(label)}) ({_selector(series.seconds, match)})"


def decode_tokens(series: DecodeTime, label: str, match: str) -> str:
    """The count of tokens those seconds decoded, per replica and class (less the first tokens where the engine
    times them apart)."""
    tokens = f"sum by ({by(label)}) ({_selector(series.tokens, match)})"
    if series.first_tokens:
        return f"{tokens} - {f'sum by ({by(label)}) ({_selector(series.first_tokens, match)})'}"
    return tokens


def interval_deltas(
    seconds: Sequence[float | None], tokens: Sequence[float | None]
) -> list[tuple[float, float] | None]:
    """One replica's seconds and tokens decoded in each interval, from its counters read at the intervals' ends
    (one more reading than intervals, the first at the window's start); None where a reading is missing or a
    counter went down (a restart: that interval of that replica is left out)."""
    found: list[tuple[float, float] | None] = []
    for index in range(len(seconds) - 1):
        a, b = seconds[index], seconds[index + 1]
        c, d = tokens[index], tokens[index + 1]
        if a is None or b is None or c is None or d is None or b < a or d < c:
            found.append(None)
        else:
            found.append((b - a, d - c))
    return found


def class_deltas(replicas: Sequence[Sequence[tuple[float, float] | None]]) -> list[tuple[float, float] | None]:
    """A class's seconds and tokens per interval: the sum over its replicas that have both that interval."""
    if not replicas:
        return []
    found: list[tuple[float, float] | None] = []
    for index in range(len(replicas[0])):
        known = [replica[index] for replica in replicas if replica[index] is not None]
        found.append(
            (sum(pair[0] for pair in known if pair), sum(pair[1] for pair in known if pair)) if known else None
        )
    return found


# ---------------------------------------------------------------------------
# Spec-decode counts per interval, from raw counter readings
#
# Counts that are divided by one another (accepted at a position over drafts) are taken as differences of the
# counters' readings at the intervals' ends, not from PromQL's increase(): increase() extrapolates each series
# to the window's edges by its own first value, so that a series born inside the window (llama.cpp's
# per-position counters appear once a drafted request has finished) is stretched differently from the drafts
# counter beside it, and the ratio can pass 1.


def counter_deltas(readings: Sequence[float | None]) -> list[float | None]:
    """A counter's increase over each interval between its readings: 0 where the series is read at neither end
    (it did not exist yet), None where it is read at one end only (born or gone inside the interval) or went
    down (a restart)."""
    found: list[float | None] = []
    for a, b in itertools.pairwise(readings):
        if a is None and b is None:
            found.append(0.0)
        elif a is None or b is None or b < a:
            found.append(None)
        else:
            found.append(b - a)
    return found


def replica_counts(series: Mapping[str, Sequence[float | None]], intervals: int) -> list[dict[str, float] | None]:
    """One replica's counts per interval (counter name -> increase), from each of its counters' readings; None for
    an interval where any of them does not read cleanly, so that every count of an interval comes from the same
    two scrapes."""
    deltas = {name: counter_deltas(readings) for name, readings in series.items()}
    found: list[dict[str, float] | None] = []
    for index in range(intervals):
        row = {name: value for name, values in deltas.items() if (value := values[index]) is not None}
        found.append(row if len(row) == len(deltas) else None)
    return found


def contradicts(row: Mapping[str, float], chain: Sequence[str]) -> bool:
    """Whether counts that cannot grow along ``chain`` (drafts, then the tokens accepted at position 0, 1, ...:
    a token is accepted only after every token before it) do, beyond rounding."""
    values = [row.get(name, 0.0) for name in chain]
    return any(later > earlier + 1e-9 * max(1.0, earlier) for earlier, later in itertools.pairwise(values))


def without_contradictions(
    counts: Sequence[dict[str, float] | None], chain: Sequence[str]
) -> tuple[list[dict[str, float] | None], int]:
    """One replica's counts per interval with every interval whose counts contradict ``chain`` left out, and the
    interval before it: the two share the reading that a scrape made while the counters disagreed (seen once, on
    a loaded machine, as more tokens accepted at position 0 than drafts over a window). Returns the counts and
    how many intervals were left out."""
    kept = list(counts)
    left_out = 0
    for index, row in enumerate(counts):
        if row is not None and contradicts(row, chain):
            for which in (index - 1, index):
                if which >= 0 and kept[which] is not None:
                    kept[which] = None
                    left_out += 1
    return kept, left_out


def summed(rows: Iterable[dict[str, float] | None]) -> dict[str, float] | None:
    """Counts added up, name by name, over the rows that read cleanly; None where none did."""
    known = [row for row in rows if row is not None]
    if not known:
        return None
    total: dict[str, float] = {}
    for row in known:
        for name, value in row.items():
            total[name] = total.get(name, 0.0) + value
    return total


def class_counts(
    replicas: Sequence[Sequence[dict[str, float] | None]], intervals: int
) -> list[dict[str, float] | None]:
    """A class's counts per interval: the sum over its replicas that read cleanly in that interval."""
    return [summed(replica[index] for replica in replicas) for index in range(intervals)]


# ---------------------------------------------------------------------------
# The speedup over intervals


@dataclass(frozen=True)
class SpeedupEstimate:
    """Control's per-token time over the canary's, per interval and over the window."""

    ratios: tuple[float, ...]  # one per interval with tokens on both sides
    speedup: float | None  # their geometric mean
    low: float | None
    high: float | None
    level: float = LEVEL
    log_mean: float | None = None
    log_sd: float | None = None

    @property
    def intervals(self) -> int:
        return len(self.ratios)


def per_token(seconds: float | None, tokens: float | None) -> float | None:
    """Seconds per token in one interval; None where nothing was decoded (or the counts are not numbers)."""
    if seconds is None or tokens is None or not (math.isfinite(seconds) and math.isfinite(tokens)):
        return None
    if tokens < 0.5 or seconds <= 0.0:
        return None
    return seconds / tokens


def speedup_estimate(
    control: Sequence[float | None],
    canary: Sequence[float | None],
    level: float = LEVEL,
    min_intervals: int = MIN_INTERVALS,
) -> SpeedupEstimate:
    """The speedup from per-interval per-token times of control and canary (None: no tokens that interval); its
    interval once ``min_intervals`` intervals have tokens on both sides."""
    ratios = tuple(c / s for c, s in zip(control, canary, strict=True) if c is not None and s is not None)
    if not ratios:
        return SpeedupEstimate((), None, None, None, level)
    logs = [math.log(r) for r in ratios]
    mean = sum(logs) / len(logs)
    if len(logs) < 2:
        return SpeedupEstimate(ratios, math.exp(mean), None, None, level, mean, None)
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
    half = float(stats.t.ppf(0.5 + level / 2, len(logs) - 1)) * sd / math.sqrt(len(logs))
    if len(ratios) < max(min_intervals, 2):
        return SpeedupEstimate(ratios, math.exp(mean), None, None, level, mean, sd)
    return SpeedupEstimate(ratios, math.exp(mean), math.exp(mean - half), math.exp(mean + half), level, mean, sd)


def intervals_to_decide(estimate: SpeedupEstimate) -> int | None:
    """How many intervals in all, at the mean and spread seen, would put the interval clear of 1; None where the
    spread is not known or no number up to MAX_MORE_INTERVALS would."""
    mean, sd = estimate.log_mean, estimate.log_sd
    if mean is None or sd is None or mean == 0.0:
        return None
    if sd == 0.0:
        return max(MIN_INTERVALS, estimate.intervals)
    n = max(MIN_INTERVALS, estimate.intervals)
    while n <= MAX_MORE_INTERVALS:
        if float(stats.t.ppf(0.5 + estimate.level / 2, n - 1)) * sd / math.sqrt(n) < abs(mean):
            return n
        n = n + max(1, n // 20)
    return None


# ---------------------------------------------------------------------------
# Acceptance against its calibrated interval


@dataclass(frozen=True)
class AcceptanceCheck:
    """The canary's acceptance over the judged part of the window, against its calibrated interval."""

    status: str  # holds, fell, rose, unknown, not speculating
    p: float | None = None
    low: float | None = None
    high: float | None = None
    k: int | None = None
    drafts: float = 0.0
    calibrated: tuple[float, float] | None = None
    calibrated_from: str = ""  # "given" or "the first half of the window"
    message: str = ""


def acceptance_or_why(measurement: Measurement) -> tuple[float, float, float, int] | str:
    """p with its interval and the k, from one stretch's counts; or why they give none."""
    if not measurement.drafts:
        return "no drafts counted"
    try:
        found = engine_metrics.calibrate_measurement(measurement, 0.0, 1)
    except CalibrationError as error:
        return f"the counts do not calibrate: {error.message}"
    low, high = found.interval.low, found.interval.high
    if low is None or high is None:
        return f"the counts give p = {found.result.acceptance:.3f} with no interval ({found.interval.method})"
    return found.result.acceptance, low, high, found.result.k


def judge_acceptance(
    judged: Measurement | None, calibrated: tuple[float, float] | None, calibrated_from: str
) -> AcceptanceCheck:
    """Acceptance over ``judged`` against ``calibrated`` on a 99.9% interval (fell: its upper bound below the
    calibrated interval; rose: its lower bound above)."""
    unknown = AcceptanceCheck("unknown", calibrated=calibrated, calibrated_from=calibrated_from)
    if judged is None or not judged.drafts:
        return replace(unknown, message="no drafts counted in the part of the window judged")
    found = acceptance_or_why(judged)
    if isinstance(found, str):
        return replace(unknown, drafts=judged.drafts, message="the canary's counts do not calibrate")
    p, low, high, k = found
    base = AcceptanceCheck("holds", p, low, high, k, judged.drafts, calibrated, calibrated_from)
    if calibrated is None:
        return replace(base, status="unknown", message="no calibrated interval to judge it by")
    moved = drift(judged, p, k, calibrated)
    words = {"fell": "fell below", "rose": "rose above", None: "holds within"}[moved]
    shown = f"[{calibrated[0]:.3f}, {calibrated[1]:.3f}]"
    return replace(
        base, status=moved or "holds", message=f"acceptance {p:.3f} {words} its calibrated {shown} ({calibrated_from})"
    )


# ---------------------------------------------------------------------------
# The verdict


@dataclass(frozen=True)
class Verdict:
    status: str  # promote, roll back, hold, not speculating
    reason: str
    more_intervals: int | None = None  # for a hold: how many more intervals would decide
    more_seconds: float | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)


def _shown(estimate: SpeedupEstimate) -> str:
    if estimate.speedup is None:
        return "no interval with tokens on both sides"
    if estimate.low is None or estimate.high is None:
        return f"speedup {estimate.speedup:.2f}x over {estimate.intervals} interval(s), no interval yet"
    return (
        f"speedup {estimate.speedup:.2f}x, {estimate.level:.0%} interval [{estimate.low:.2f}, {estimate.high:.2f}] "
        f"over {estimate.intervals} intervals"
    )


def verdict(
    estimate: SpeedupEstimate, acceptance: AcceptanceCheck, interval_s: float, speculating: bool = True
) -> Verdict:
    """Promote, roll back or hold (with how much more data would decide); not speculating where the canary
    counts no drafts."""
    if not speculating:
        return Verdict(NOT_SPECULATING, "the canary exports no spec-decode counters for this class: not speculating")
    shown = _shown(estimate)
    if acceptance.status == "fell":
        return Verdict(ROLL_BACK, f"{acceptance.message}; {shown}")
    if estimate.high is not None and estimate.high < 1.0:
        return Verdict(ROLL_BACK, f"the canary is slower than control: {shown}")
    if estimate.low is not None and estimate.low > 1.0:
        notes = () if acceptance.status in ("holds", "rose") else (f"acceptance not judged: {acceptance.message}",)
        return Verdict(PROMOTE, f"the canary is faster than control: {shown}; {acceptance.message}", notes=notes)
    if estimate.intervals < MIN_INTERVALS or estimate.low is None:
        more = MIN_INTERVALS - estimate.intervals
        return Verdict(
            HOLD,
            f"too little traffic: {shown}; needs at least {MIN_INTERVALS} intervals with tokens on both sides, "
            f"{more} more (about {more * interval_s:g} s of traffic on both)",
            more,
            more * interval_s,
        )
    needed = intervals_to_decide(estimate)
    if needed is None:
        return Verdict(
            HOLD,
            f"{shown} holds 1: canary and control decode alike; no amount of data at this difference would decide",
        )
    more = max(1, needed - estimate.intervals)
    return Verdict(
        HOLD,
        f"{shown} holds 1: about {more} more intervals ({more * interval_s:g} s) at the spread seen would decide",
        more,
        more * interval_s,
    )


def overall(statuses: Sequence[str]) -> str:
    """One verdict for every class: roll back if any class rolls back, promote if every judged class promotes,
    else hold (nothing judged is a hold)."""
    judged = [status for status in statuses if status != NOT_SPECULATING]
    if ROLL_BACK in judged:
        return ROLL_BACK
    if judged and all(status == PROMOTE for status in judged):
        return PROMOTE
    return HOLD
