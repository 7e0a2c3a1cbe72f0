"""The cost model against published measurements (app/model/data/published_speedups.json), each source
predicted by terms fitted on the others.

Every point the dataset's fields let the cost model price is priced (``published.exclusion`` says why the others
are not); a sweep whose source gives no acceptance length takes its per-token acceptance from its smallest batch,
which then tests nothing.  For each source, the terms the protocol chose (``fitting.select_terms``: a term
enters only if it lowers this error) are fitted on every other source and that source's points are predicted:
the leave-one-source-out error.  Beside it, the in-source figure: the same terms fitted on every source, the
predicted points included, which is what a fit to the very sweeps it predicts would claim.

Prints each term's effect (the error with it left out of the chosen set), the error per class, each sweep over
batch with its measured and predicted crossover and the interval's batch range, the plain step's predicted time
against the baseline's own figure where the source gives its rate (``fitting.step_time_check``: the fit takes
each sweep's growth of that step but never its level, so the level says whether its terms give step times an
engine has), RATIO lines against the goals
(median 15%, worst 35%, 90% of the points priced), and last one line a script can read:

    published: P of N points priced from S sources; leave-one-source-out median M%, worst W%; crossovers within
    2x: C of D
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from app.model.cost import fitting, published
from app.web.pages.views.published import measured_range

GOAL_MEDIAN = 0.15
GOAL_WORST = 0.35
GOAL_PRICED = 0.90


def _errors(values: np.ndarray) -> tuple[float, float]:
    values = np.abs(values[~np.isnan(values)])
    return math.expm1(float(np.median(values))), math.expm1(float(values.max()))


def main() -> None:
    started = time.perf_counter()
    points = published.load()
    problem = fitting.problem(points)
    scored = problem.scored
    committed = published.published_fit()
    chosen = list(committed["protocol"]["chosen"])
    tried: dict[str, tuple[float, float]] = {}
    fresh, steps = fitting.select_terms(problem, tried=tried)
    print(f"{len(points)} published points, {len(problem.points)} priced, {int(scored.sum())} scored")
    print(
        "protocol (each step the term that lowered most the leave-one-source-out mean |log error| of the speedups"
        " and of each sweep's plain-step growth):"
    )
    for step in steps:
        print(f"  + {step.term:<48} {step.loss_before:.4f} -> {step.loss_after:.4f}")
    print(
        "the committed terms are " + ("this choice" if fresh == chosen else f"{chosen}; run scripts/fit_published.py")
    )
    holdout = fitting.leave_one_source_out(problem, chosen)
    before, highest = fitting.loss(holdout), fitting.worst(holdout)
    print(
        f"terms for one method or context regime, {len(tried)} tried beside those (a term enters where it lowers"
        f" {before:.4f} by {fitting.MIN_GAIN} and holds the worst point, {math.expm1(highest):.0%}); the closest:"
    )
    for name, (error, top) in sorted(tried.items(), key=lambda item: item[1][0])[:6]:
        short = "" if error <= before - fitting.MIN_GAIN else f"gains {before - error:.4f}"
        worse = "" if top <= highest else f"worst {math.expm1(top):.0%}"
        print(f"  ? {name:<48} {error:.4f}  {', '.join(filter(None, (short, worse))) or 'enters'}")

    in_source = problem.predict(fitting.resolved(problem, fitting.fit(problem, chosen, scored)))
    in_median, in_worst = _errors(np.where(scored, np.log(in_source / problem.measured), np.nan))
    _count, median, worst = holdout.summary(scored)
    plain = fitting.leave_one_source_out(problem, [])
    _count, plain_median, plain_worst = plain.summary(scored)
    print(f"\n{'':<44} {'median':>7} {'worst':>7}")
    print(f"{'leave-one-source-out, the chosen terms':<44} {median or 0:>7.1%} {worst or 0:>7.1%}")
    print(f"{'in-source (fitted on every source)':<44} {in_median:>7.1%} {in_worst:>7.1%}")
    print(f"{'leave-one-source-out, the plain roofline':<44} {plain_median or 0:>7.1%} {plain_worst or 0:>7.1%}")
    print("\neach chosen term's effect (leave-one-source-out without it):")
    for name in chosen:
        without = fitting.leave_one_source_out(problem, [term for term in chosen if term != name])
        _n, dropped_median, dropped_worst = without.summary(scored)
        print(f"  - {name:<48} median {dropped_median or 0:.1%}, worst {dropped_worst or 0:.1%}")
    # the all-reduces' payload over each accelerator's link has no free value, so it is no candidate term; what
    # leaving it out does is printed beside the terms'
    zero = np.zeros_like(problem.work.batch)
    unlinked = dataclasses.replace(
        problem,
        work=dataclasses.replace(problem.work, plain_payload_s=zero, verify_payload_s=zero, draft_payload_s=zero),
    )
    _n, unlinked_median, unlinked_worst = fitting.leave_one_source_out(unlinked, chosen).summary(scored)
    print(f"  - {'the payload over the link (regimes.payload_s)':<48} median {unlinked_median or 0:.1%}, worst "
          f"{unlinked_worst or 0:.1%}")  # fmt: skip

    print(f"\n{'class':<72} {'points':>6} {'median':>7} {'worst':>7}")
    labels = np.array([published.point_class(point).label for point in problem.points])
    for label in sorted(set(labels)):
        n, class_median, class_worst = holdout.summary(scored & (labels == label))
        if n:
            median_text = f"{class_median or 0:.1%}" if n >= published.MIN_CLASS_POINTS else "-"
            print(f"{label:<72} {n:>6} {median_text:>7} {class_worst or 0:>7.1%}")

    fit = fitting.fit_published((fresh, steps))  # the search above, not run twice
    interval = fit["interval"]
    print(
        f"\nthe stated interval: a factor of {1 + (interval['spread'] or 0):.2f} either way holds at least "
        f"{interval['coverage']:.0%} of the {interval['points']} scored points (split-conformal); each point against "
        f"its class's interval made from the other sources alone: {interval['held_out_of_source']} of "
        f"{interval['points']} inside"
    )
    print(f"\n{'sweep over batch':<48} {'measured':>8} {'predicted':>9} {'interval':>12} {'2x':>4}")
    crossing = [row for row in fit["crossovers"] if row["measured"] is not None]
    within = sum(1 for row in crossing if row["within_2x"] and row["inside_range"])
    for row in fit["crossovers"]:
        low, high = row["range"]
        interval = "-" if low is None else f"{low}-{high or 'on'}"
        ok = "-" if row["measured"] is None else ("yes" if row["within_2x"] and row["inside_range"] else "no")
        measured = "-" if row["measured"] is None else measured_range(row["measured_after"], row["measured"])
        print(f"{row['sweep']:<48} {measured:>8} {row['predicted'] or '-':>9} {interval:>12} {ok:>4}")
    never = [row for row in fit["crossovers"] if row["measured"] is None and row["predicted_inside_own_range"]]
    if never:
        print("sweeps that never cross, predicted to cross inside their range: " + ", ".join(r["sweep"] for r in never))

    check = fit["step_times"]
    large = check["large_batch"]
    growth = sorted(check["growth"].values())
    print(
        f"\nthe plain step's time, predicted against the baseline's own figure (its level is never fitted): "
        f"{check['points']} points from {check['sources']} sources, median {check['median_error'] or 0:+.0%} "
        f"(absolute {check['median_absolute_error'] or 0:.0%}); from batch {fitting.STEP_CHECK_LARGE_BATCH}: "
        f"{large['points']} points, median {large['median_error'] or 0:+.0%}"
    )
    if growth:
        print(
            f"a sweep's step from its smallest batch to its largest grows (fitted), predicted over measured, "
            f"{float(np.median(growth)):.2f}x at the median ({growth[0]:.2f}x to {growth[-1]:.2f}x over "
            f"{len(growth)} plain servers)"
        )
    for point, value in zip(problem.points, holdout.predicted, strict=True):
        if not math.isnan(value):
            print(f"RATIO published_{point.id} {value:.4f} {point.speedup:.4f} {value / (point.speedup or 1):.3f}")
    sources = {published.source(point) for point in problem.points}
    priced_share = len(problem.points) / len(points)
    print(f"RATIO published_loso_median {median or 0:.4f} {GOAL_MEDIAN:.4f} {(median or 0) / GOAL_MEDIAN:.3f}")
    print(f"RATIO published_loso_worst {worst or 0:.4f} {GOAL_WORST:.4f} {(worst or 0) / GOAL_WORST:.3f}")
    print(f"RATIO published_priced_share {priced_share:.4f} {GOAL_PRICED:.4f} {priced_share / GOAL_PRICED:.3f}")
    print(f"\n{time.perf_counter() - started:.0f} s")
    print(
        f"published: {len(problem.points)} of {len(points)} points priced from {len(sources)} sources; "
        f"leave-one-source-out median {(median or 0) * 100:.0f}%, worst {(worst or 0) * 100:.0f}%; "
        f"crossovers within 2x: {within} of {len(crossing)}"
    )


if __name__ == "__main__":
    main()
