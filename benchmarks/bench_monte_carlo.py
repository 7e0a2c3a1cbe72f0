"""Monte Carlo aggregate of 1,000,000 cycles against numpy drawing 1,000,000 geometric variates.

Bound (issue: seed demo): the aggregate takes at most 1.5x the bare draw, measured in the same process.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from app.monte_carlo import simulate

CYCLES = 1_000_000
REPEATS = 15
BOUND = 1.5


def best_time(function: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    rng = np.random.default_rng(0)
    bare = best_time(lambda: rng.geometric(0.25, size=CYCLES))
    aggregate = best_time(lambda: simulate(0.75, 6, 0.15, CYCLES, seed=0))
    ratio = aggregate / bare
    print(f"monte carlo: aggregate {aggregate * 1e3:.1f} ms, numpy geometric {bare * 1e3:.1f} ms (bound {BOUND}x)")
    print(f"RATIO monte_carlo_aggregate_1M {aggregate:.6f} {bare:.6f} {ratio:.3f}")


if __name__ == "__main__":
    main()
