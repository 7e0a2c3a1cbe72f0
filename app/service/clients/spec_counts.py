"""A class's spec-decode counts over the intervals of a window, read from Prometheus as the counters' raw values
at the intervals' ends (range queries, one step per interval) and differenced per replica with
:mod:`app.model.live.rollout`'s arithmetic: every count of an interval comes from the same two scrapes, so that
ratios of them (accepted at a position over drafts, tokens over verifications) hold, where PromQL's increase()
stretches each series by its own extrapolation. For the canary check and the rollout plan.

An engine that counts drafts gives drafts, draft tokens and the accepted tokens at each position; one that
counts only verifications (SGLang) gives verifications and generated tokens, with the lowest and the highest k
its gauge showed in each interval.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.model.engines.base import RulesMetrics
from app.model.engines.reports import Measurement, increase_measurement, verification_measurement
from app.model.live import rollout
from app.service.clients.prometheus import QueryRange, range_series, replica_key

DRAFTS, DRAFT_TOKENS, VERIFICATIONS, GENERATED = "drafts", "draft tokens", "verifications", "generated"
AT_POSITION = "accepted at position "  # followed by the position


@dataclass(frozen=True)
class ClassCounts:
    """One class's counts per interval (None where no replica read cleanly), and the k its gauge showed."""

    intervals: list[dict[str, float] | None]
    k_lowest: list[float | None]
    k_highest: list[float | None]
    contradicting: int = 0  # replica intervals left out where the counts contradicted one another


def counters(metrics: RulesMetrics, label: str, match: str) -> dict[str, tuple[str, bool]]:
    """Count name -> (PromQL of the counter's raw value per replica and class, whether it is split by position)."""
    by = rollout.by(label)

    def selector(name: str, *extra: str) -> str:
        return f"{name}{{{','.join(part for part in (*extra, match) if part)}}}"

    if metrics.counts_drafts:
        drafts = (
            selector(metrics.drafts)
            if metrics.drafts
            else selector(metrics.drafted_per_position, f'{metrics.position_label}="0"')
        )
        found = {
            DRAFTS: (f"sum by ({by}) ({drafts})", False),
            AT_POSITION: (f"sum by ({by}, {metrics.position_label}) ({selector(metrics.per_position)})", True),
        }
        drafted = metrics.draft_tokens or metrics.drafted_per_position
        if drafted:
            found[DRAFT_TOKENS] = (f"sum by ({by}) ({selector(drafted)})", False)
        return found
    return {
        VERIFICATIONS: (f"sum by ({by}) ({selector(metrics.verify_calls)})", False),
        GENERATED: (f"sum by ({by}) ({selector(metrics.generated)})", False),
    }


def read(
    query_range: QueryRange, metrics: RulesMetrics, label: str, match: str, times: list[float]
) -> dict[str, ClassCounts]:
    """Class -> its counts in each interval between ``times`` (at least two readings, evenly spaced)."""
    step = times[1] - times[0]
    replicas: dict[tuple[str, str], dict[str, list[float | None]]] = {}
    for name, (expr, positional) in counters(metrics, label, match).items():
        for answer in range_series(query_range, expr, times, step):
            labels = answer.labels
            key = name
            if positional:
                raw = labels.get(metrics.position_label, "")
                if not raw.isdigit():
                    continue
                key = f"{AT_POSITION}{int(raw)}"
            replica = replica_key(labels, label)
            row = replicas.setdefault(replica, {}).setdefault(key, [None] * len(times))
            for index, value in enumerate(answer.values):
                if value is not None:
                    row[index] = value
    intervals = len(times) - 1
    per_class: dict[str, list[list[dict[str, float] | None]]] = {}
    contradicting: dict[str, int] = {}
    for (_, name), series in replicas.items():
        counts = rollout.replica_counts(series, intervals)
        positions = sorted(int(key.removeprefix(AT_POSITION)) for key in series if key.startswith(AT_POSITION))
        if metrics.counts_drafts and positions:
            chain = [DRAFTS, *(f"{AT_POSITION}{position}" for position in range(positions[-1] + 1))]
            counts, left_out = rollout.without_contradictions(counts, chain)
            contradicting[name] = contradicting.get(name, 0) + left_out
        per_class.setdefault(name, []).append(counts)
    k_lowest: dict[str, list[float | None]] = {}
    k_highest: dict[str, list[float | None]] = {}
    if not metrics.counts_drafts and metrics.running_k:
        window = f"{max(1, round(step))}s"
        for found, how in ((k_lowest, "min"), (k_highest, "max")):
            expr = f"{how} by ({label}) ({how}_over_time({metrics.running_k}{{{match}}}[{window}]))"
            # the gauge over each interval, read at the interval's end (times[1:])
            for answer in range_series(query_range, expr, times[1:], step):
                row = found.setdefault(answer.labels.get(label, ""), [None] * intervals)
                for index, value in enumerate(answer.values):
                    if value is not None:
                        row[index] = value
    return {
        name: ClassCounts(
            rollout.class_counts(rows, intervals),
            k_lowest.get(name, [None] * intervals),
            k_highest.get(name, [None] * intervals),
            contradicting.get(name, 0),
        )
        for name, rows in per_class.items()
    }


def measurement(engine: str, metrics: RulesMetrics, counts: ClassCounts, first: int, last: int) -> Measurement | None:
    """The counts of intervals ``first`` to ``last - 1`` as one measurement; None where nothing was counted in
    them. Raises EngineFormatError where an engine that counts verifications ran two k in them."""
    total = rollout.summed(counts.intervals[first:last])
    if total is None:
        return None
    if metrics.counts_drafts:
        drafts = total.get(DRAFTS, 0.0)
        if drafts <= 0:
            return None
        shares = {int(name.removeprefix(AT_POSITION)): value for name, value in total.items() if AT_POSITION in name}
        return increase_measurement(engine, metrics.scrape_format, drafts, total.get(DRAFT_TOKENS), shares)
    ks = [k for k in (*counts.k_lowest[first:last], *counts.k_highest[first:last]) if k is not None]
    return verification_measurement(
        engine, metrics.scrape_format, total.get(VERIFICATIONS, 0.0), total.get(GENERATED), ks
    )
