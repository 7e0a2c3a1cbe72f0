"""Monte Carlo aggregate of 1,000,000 cycles against numpy drawing 1,000,000 geometric variates.

Bound (issue: seed demo): the aggregate takes at most 1.5x the bare draw, measured in the same process.
"""

from __future__ import annotations

import numpy as np

from app.model.arithmetic.monte_carlo import simulate
from benchmarks.timing import best_time

CYCLES = 1_000_000
REPEATS = 15
BOUND = 1.5


def main() -> None:
    rng = np.random.default_rng(0)
    bare = best_time(lambda: rng.geometric(0.25, size=CYCLES), REPEATS)
    aggregate = best_time(lambda: simulate(0.75, 6, 0.15, CYCLES, seed=0), REPEATS)
    ratio = aggregate / bare
    print(f"monte carlo: aggregate {aggregate * 1e3:.1f} ms, numpy geometric {bare * 1e3:.1f} ms (bound {BOUND}x)")
    print(f"RATIO monte_carlo_aggregate_1M {aggregate:.6f} {bare:.6f} {ratio:.3f}")


if __name__ == "__main__":
    main()
