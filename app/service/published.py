"""The published measurements against the cost model: one report for the API, the page and the benchmark."""

from __future__ import annotations

import math

from app.model.cost import fitting, published
from app.service.schemas.fill import filled
from app.service.schemas.published import (
    PublishedClassOut,
    PublishedCrossoverOut,
    PublishedExclusionOut,
    PublishedGrowthOut,
    PublishedIntervalOut,
    PublishedOut,
    PublishedPointOut,
    PublishedStepTimesOut,
)


def published_out() -> PublishedOut:
    fit = published.published_fit()
    loso = fit["leave_one_source_out"]
    rows = {row["id"]: row for row in fit["points"]}
    points = []
    for point in published.load():
        row = rows.get(point.id)
        predicted = row["predicted"] if row else None
        points.append(
            filled(  # the point's own fields by name, and these
                PublishedPointOut,
                point,
                url=point.url.split(" ", 1)[0],
                setup_class=published.point_class(point).label if point.priced else None,
                measured=point.speedup,
                predicted=predicted,
                error=None if predicted is None or not point.speedup else predicted / point.speedup - 1,
                sets_acceptance=bool(row and row["sets_acceptance"]),
                excluded_because=published.exclusion(point),
            )
        )
    classes = [
        PublishedClassOut(
            setup_class=label,
            points=row["points"],
            median_error=row["median_error"] if row["points"] >= published.MIN_CLASS_POINTS else None,
            worst_error=row["worst_error"],
        )
        for label, row in loso["classes"].items()
    ]
    crossovers = [  # the fit's row by name, its interval in two fields
        PublishedCrossoverOut(**row, range_low=row["range"][0], range_high=row["range"][1]) for row in fit["crossovers"]
    ]
    check = fit["step_times"]
    step_times = PublishedStepTimesOut(
        points=check["points"],
        sources=check["sources"],
        median_error=check["median_error"],
        median_absolute_error=check["median_absolute_error"],
        large_batch_from=fitting.STEP_CHECK_LARGE_BATCH,
        large_batch_points=check["large_batch"]["points"],
        large_batch_median_error=check["large_batch"]["median_error"],
        growth=[
            PublishedGrowthOut(sweep=name, growth=value, same_plain_server=check["growth_shared"].get(name, []))
            for name, value in check["growth"].items()
        ],
    )
    priced = [point for point in points if point.priced]
    accuracy = published.shipped_accuracy()
    return PublishedOut(
        points_total=len(points),
        points_priced=len(priced),
        points_scored=loso["points"],
        sources_total=len({published.source(point) for point in published.load()}),
        sources_priced=len({published.source(point) for point in published.load() if point.priced}),
        median_error=loso["median_error"],
        worst_error=loso["worst_error"],
        terms=dict(fit["terms"]),
        scoped_terms=dict(fit["scoped_terms"]),
        chosen_terms=list(fit["protocol"]["chosen"]),
        candidate_terms=list(fit["protocol"]["candidates"]),
        summary=accuracy.sentence,
        classes=classes,
        crossovers=crossovers,
        step_times=step_times,
        interval_spread=fit["interval"]["spread"],
        intervals=[
            PublishedIntervalOut(
                setup_class=item.setup_class,
                points=item.class_points,
                interval_spread=math.expm1(item.spread),
                interval_from=item.spread_from,
            )
            for item in published.answered_classes()
        ],
        interval_coverage=fit["interval"]["coverage"],
        interval_held_out_of_source=fit["interval"]["held_out_of_source"],
        exclusions=[
            PublishedExclusionOut(reason=reason, points=count, alone=alone)
            for reason, count, alone in published.exclusion_counts(published.load())
        ],
        points=points,
    )
