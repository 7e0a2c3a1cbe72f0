"""The cost model against published measurements (app/model/data/published_speedups.json), fitted on one half.

The points the cost model can price (a preset accelerator and target, an EAGLE, EAGLE-3 or MTP head or
n-gram lookup, k and the batch named, lossless) are split by source (``published.split``): each sweep offers
every other point by batch for holding out, no source holds out more than all the others together, and the
rest fit the terms of app.model.published.SpecCosts.  A sweep whose source gives no
acceptance length takes the one that makes its smallest batch come out right (that point is then used for
nothing else).  ``before`` is the plain roofline (fixed efficiencies and one overhead per pass, no cycle or
all-reduce terms: the defaults before the fit); ``after`` the same points with the terms fitted here, which are
the product's defaults (``app/model/data/published_fit.json``; the run says whether they still agree).

RATIO published_<id>_<before|after> predicted measured ratio, for each held-out point; then the median and
worst error of each, and per sweep the crossover batch measured and predicted.
"""

from __future__ import annotations

import time
from dataclasses import asdict

from app.model import published


def main() -> None:
    started = time.perf_counter()
    points = published.load()
    priced = [point for point in points if point.priced]
    train = published.split(points)
    before = published.PLAIN_ROOFLINE
    after = published.fitted(points, published.FIT_START, train, published.FREE_TERMS)
    print(f"{len(points)} published points, {len(priced)} priced, {len(train)} fit the terms")
    print("fitted terms: " + ", ".join(f"{name} {value:.4g}" for name, value in asdict(after).items()))
    shipped = published.SpecCosts()
    agree = all(
        abs(getattr(after, name) - getattr(shipped, name)) <= 0.005 * max(abs(getattr(shipped, name)), 1.0)
        for name in published.FREE_TERMS
    )
    print(
        "the shipped defaults " + ("are these terms" if agree else f"differ: {shipped}; run scripts/fit_published.py")
    )
    predictions = {}
    for label, costs in (("before", before), ("after", after)):
        predictions[label] = [item for item in published.predict_all(points, costs, train) if not item.train]
        median, worst = published.errors(predictions[label])
        sources = {published.source(item.point) for item in predictions[label]}
        print(
            f"{label}: held-out median error {median:.1%}, worst {worst:.1%} over {len(predictions[label])} points "
            f"from {len(sources)} sources"
        )
    print(f"\n{'sweep':<42} {'crossover measured':>18} {'before':>7} {'after':>6}")
    for name, group in published.sweeps(priced).items():
        if len({point.batch for point in group}) < 3:  # a sweep over batch sizes
            continue
        row = []
        for costs in (before, after):
            length, _where, _used = published.acceptance_for(group, costs)
            row.append(published.crossover(group, costs, length))
        print(f"{name:<42} {row[0][0] or '-':>18} {row[0][1] or '-':>7} {row[1][1] or '-':>6}")
    print()
    for label, items in predictions.items():
        for item in items:
            print(
                f"RATIO published_{item.point.id}_{label} {item.predicted:.4f} {item.point.speedup:.4f} "
                f"{item.ratio:.3f}"
            )
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
