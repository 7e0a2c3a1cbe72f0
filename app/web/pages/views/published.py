"""How good the defaults are: every published measurement against the cost model's prediction from the other
sources (leave-one-source-out), per class, each published batch sweep's crossover, and what cannot be priced."""

from __future__ import annotations

import math
from typing import Any

from app.model.cost import published
from app.service.published import published_out
from app.service.schemas.published import PublishedCrossoverOut, PublishedOut
from app.web.pages.controls import Reading
from app.web.pages.figures import COLORS, figure, line
from app.web.pages.page import Page, View
from app.web.pages.text import cells

BAND = 0.15  # the chart's band around predicted = measured
FAMILIES = {  # the scatter's traces, by draft method
    "head drafts": tuple(published.HEAD_OF_METHOD),
    "draft models": ("draft-model",),
    "sparse KV": ("draft-model-sparse-kv", "self-speculation-sparse-kv"),
    "n-gram": ("ngram",),
}
TRACE_COLORS = (COLORS["accent"], COLORS["best"], COLORS["purple"], COLORS["good"])


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _signed(value: float | None) -> str:
    return "–" if value is None else f"{value:+.0%}"


def _times(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}×"


SPEEDUP_TICKS = (0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0)


def scatter(report: PublishedOut) -> dict[str, Any]:
    """Predicted against measured on log axes, the diagonal and a ±15% band."""
    scored = [point for point in report.points if point.predicted is not None and point.measured]
    values = [value for point in scored for value in (point.predicted or 1.0, point.measured or 1.0)] or [1.0]
    low, high = min(values) / 1.2, max(values) * 1.2
    edge = {"color": COLORS["reference"], "dash": "dot", "width": 1}
    data = [
        line(
            "measured = predicted",
            [low, high],
            [low, high],
            line={"color": COLORS["muted"], "width": 1},
            hoverinfo="skip",
        ),
        line(f"±{BAND:.0%}", [low, high], [low * (1 + BAND), high * (1 + BAND)], line=edge, hoverinfo="skip"),
        line(
            f"−{BAND:.0%}",
            [low, high],
            [low * (1 - BAND), high * (1 - BAND)],
            line=edge,
            hoverinfo="skip",
            showlegend=False,
        ),
    ]
    for (name, methods), color in zip(FAMILIES.items(), TRACE_COLORS, strict=True):
        chosen = [point for point in scored if point.draft_method in methods]
        if not chosen:
            continue
        data.append(
            line(
                name,
                [point.measured for point in chosen],
                [point.predicted for point in chosen],
                mode="markers",
                marker={"size": 8, "color": color, "line": {"color": COLORS["ink"], "width": 0.5}},
                text=[f"{point.id}<br>{point.setup_class}" for point in chosen],
                hovertemplate="%{text}<br>measured %{x:.2f}×, predicted %{y:.2f}×<extra></extra>",
            )
        )
    axis_range = [math.log10(low), math.log10(high)]
    # Plotly labels a log axis under two decades by the leading digit alone ("4" for 0.4): name each tick in full
    ticks = [value for value in SPEEDUP_TICKS if low <= value <= high]
    labels = {"tickvals": ticks, "ticktext": [f"{value:g}×" for value in ticks]}
    return figure(
        data,
        "measured speedup",
        "predicted speedup",
        x={"type": "log", "range": axis_range, **labels},
        y={"type": "log", "range": axis_range, **labels},
    )


def points_table(report: PublishedOut) -> dict[str, Any]:
    rows = []
    for point in report.points:
        if not point.priced:
            continue
        note = "sets its sweep's acceptance" if point.sets_acceptance else _signed(point.error)
        batch, k = ("–" if value is None else str(value) for value in (point.batch, point.k))
        row = cells(
            point.id,
            point.setup_class or "",
            batch,
            k,
            _times(point.measured),
            _times(point.predicted),
            note,
            header=True,
        )
        rows.append({"class": "off" if abs(point.error or 0.0) > BAND else "", **row, "url": point.url})
    return {"columns": ["Point", "Class", "Batch", "k", "Measured", "Predicted", "Error"], "rows": rows}


def excluded_table(report: PublishedOut) -> dict[str, Any]:
    rows = [
        {**cells(point.id, point.excluded_because or "", header=True), "url": point.url}
        for point in report.points
        if not point.priced
    ]
    return {"columns": ["Point", "Why it cannot be priced"], "rows": rows}


def exclusions_table(report: PublishedOut) -> dict[str, Any]:
    """What keeps points out, and how many a source's missing figure alone keeps out (each would be priced)."""
    rows = [cells(row.reason, str(row.points), str(row.alone), header=True) for row in report.exclusions]
    return {"columns": ["What is missing", "Points", "Lacking only this"], "rows": rows}


def intervals_table(report: PublishedOut) -> dict[str, Any]:
    rows = [
        cells(row.setup_class, str(row.points), f"{1 + row.interval_spread:.2f}", row.interval_from, header=True)
        for row in report.intervals
    ]
    return {"columns": ["Class (any engine)", "Points", "A factor either way", "From"], "rows": rows}


def classes_table(report: PublishedOut) -> dict[str, Any]:
    rows = [
        cells(
            row.setup_class,
            str(row.points),
            _percent(row.median_error) if row.median_error is not None else "too few",
            _percent(row.worst_error),
            header=True,
        )
        for row in report.classes
    ]
    return {"columns": ["Class", "Points", "Median error", "Worst error"], "rows": rows}


def stops_in_range(row: PublishedCrossoverOut) -> bool:
    """Whether a sweep stops paying inside its own batches, as measured or as predicted."""
    return row.measured is not None or row.predicted_inside_own_range


def crossovers_table(report: PublishedOut, stops: bool = True) -> dict[str, Any]:
    """The sweeps that stop paying in their range, measured or predicted (``stops``), or the others."""
    rows = []
    for row in report.crossovers:
        if stops_in_range(row) != stops:
            continue
        interval = "–" if row.range_low is None else f"{row.range_low}–{row.range_high or 'beyond 4096'}"
        verdict = "–" if row.measured is None else ("yes" if row.within_2x and row.inside_range else "no")
        measured = "never in range" if row.measured is None else measured_range(row.measured_after, row.measured)
        if row.measured is not None and row.measured == row.batches[0]:
            measured = "pays at no batch"
        predicted = "beyond 4096" if row.predicted is None else str(row.predicted)
        if row.predicted == 1:
            predicted = "pays at no batch"
        batches = f"{row.batches[0]}–{row.batches[-1]}"
        rows.append(cells(row.sweep, batches, measured, predicted, interval, verdict, header=True))
    columns = ["Sweep", "Batches", "Stops paying (measured)", "Predicted", "Interval holds 1", "Within 2× and inside"]
    return {"columns": columns, "rows": rows}


def measured_range(after: int | None, measured: int) -> str:
    """Where a sweep's grid puts its crossover: '24' where the batch before paid at 16 reads '17–24'."""
    if after is None or after + 1 >= measured:
        return str(measured)
    return f"{after + 1}–{measured}"


def _with_others(sweep: str, others: list[str]) -> str:
    """A sweep named with the count of its source's other sweeps over the same plain server."""
    if not others:
        return sweep
    return f"{sweep} and {len(others)} more over the same plain server"


def step_times_table(report: PublishedOut) -> dict[str, Any]:
    rows = [
        cells(_with_others(row.sweep, row.same_plain_server), _times(row.growth), header=True)
        for row in report.step_times.growth
    ]
    return {"columns": ["Sweep", "Step growth, predicted over measured"], "rows": rows}


def _short_or_long(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{abs(value):.0%} {'short' if value < 0 else 'long'}"


def step_times_sentence(report: PublishedOut) -> str:
    check = report.step_times
    return (
        f"On {check.points} points from {check.sources} sources that give the baseline's rate, the plain step is "
        f"predicted {_short_or_long(check.median_error)} at the median "
        f"({_short_or_long(check.large_batch_median_error)} on the {check.large_batch_points} from batch "
        f"{check.large_batch_from})."
    )


def offered_text(report: PublishedOut) -> str:
    """How many terms the protocol was offered, and how many of them for one draft method or context regime."""
    scoped = sum("@" in name for name in report.candidate_terms)
    return f"{len(report.candidate_terms)} offered, {scoped} of them for one draft method or context regime"


def build(reading: Reading) -> View:
    del reading
    report = published_out()
    headline = (
        f"{report.points_priced} of {report.points_total} published points priced, from {report.sources_priced} of "
        f"{report.sources_total} sources. Each source predicted by terms fitted on the others: median error "
        f"{_percent(report.median_error)}, worst {_percent(report.worst_error)} over {report.points_scored} points."
    )
    if report.interval_spread is not None:
        headline += (
            f" Over every point, the interval around a prediction is a factor of {1 + report.interval_spread:.2f} "
            f"either way and holds at least {report.interval_coverage:.0%} of their errors; a class with 9 points or "
            f"more has its own. Made for each source from the other sources alone, the interval of its class held "
            f"{report.interval_held_out_of_source} of the {report.points_scored}."
        )
    terms = ", ".join(f"{name} {value:g}" for name, value in {**report.terms, **report.scoped_terms}.items())
    return {
        "headline": headline,
        "summary": report.summary,
        "chosen": ", ".join(report.chosen_terms) or "none",
        "offered": offered_text(report),
        "terms": terms,
        "figures": {"published-chart": scatter(report)},
        "classes": classes_table(report),
        "intervals": intervals_table(report),
        "crossovers": crossovers_table(report),
        "crossovers_paying": crossovers_table(report, stops=False),
        "step_times": step_times_table(report),
        "step_times_sentence": step_times_sentence(report),
        "points": points_table(report),
        "excluded": excluded_table(report),
        "exclusions": exclusions_table(report),
        "links": {"api": "/api/v1/published"},
    }


PAGE = Page(
    name="published",
    path="/published",
    nav="Published measurements",
    nav_short="Data",
    title="The cost model against published measurements",
    question="How close are the batch answers to what others measured, on sources the fit never saw?",
    template="pages/published.html",
    controls=(),
    build=build,
)
