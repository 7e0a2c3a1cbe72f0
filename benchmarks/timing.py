"""Timing helper shared by the benchmarks."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_time(function: Callable[[], object], repeats: int) -> float:
    """The fastest of several runs, in seconds: the least disturbed by the rest of the machine."""
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        best = min(best, time.perf_counter() - start)
    return best
