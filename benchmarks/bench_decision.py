"""Worst-case work of the decision endpoints, each against its bound, measured in the same process.

- Calibrating a pasted exposition at the 1,000,000-byte cap (a realistic /metrics page: the spec-decode
  counters among many histogram lines) against prometheus_client's parser merely iterating the same
  text.  Bound: at most 1.5x the bare parse.
- The whole /trees computation at its caps (budget 256, 16 ranked candidates, widths 2, 4, 8, 16: chains,
  fixed-width trees, the Sequoia-style dynamic programme and the search over every depth).  Bound: 0.25 s.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from app.model.arithmetic import trees
from app.model.counters import calibration
from app.service.engines import calibrate_scrape
from benchmarks.timing import best_time

REPEATS = 5
PARSE_BOUND = 1.5
TREES_BOUND_SECONDS = 0.25


def large_exposition(limit: int = calibration.MAX_EXPOSITION_BYTES) -> str:
    head = calibration.example_exposition(0.8, 5, drafts=100_000, engines=4)
    lines = [
        head,
        "# HELP vllm:e2e_request_latency_seconds Histogram of end to end request latency in seconds.",
        "# TYPE vllm:e2e_request_latency_seconds histogram",
    ]
    size = sum(len(line) + 1 for line in lines)
    index = 0
    while True:
        labels = f'engine="0",le="{0.001 * (index + 1):.3f}",model_name="target-model"'
        line = f"vllm:e2e_request_latency_seconds_bucket{{{labels}}} {index}.0"
        if size + len(line) + 1 > limit - 64:
            break
        lines.append(line)
        size += len(line) + 1
        index += 1
    return "\n".join(lines) + "\n"


def main() -> None:
    text = large_exposition()

    def bare_parse() -> None:
        for family in text_string_to_metric_families(text):
            for _ in family.samples:
                pass

    parse_seconds = best_time(bare_parse, REPEATS)
    calibrate_seconds = best_time(lambda: calibrate_scrape(text, c=0.1, k_max=64), REPEATS)
    ratio = calibrate_seconds / parse_seconds
    print(
        f"calibrate a {len(text.encode()):,}-byte exposition: {calibrate_seconds * 1e3:.1f} ms; "
        f"bare prometheus_client parse {parse_seconds * 1e3:.1f} ms (bound {PARSE_BOUND}x)"
    )
    print(f"RATIO calibrate_1MB_exposition {calibrate_seconds:.6f} {parse_seconds:.6f} {ratio:.3f}")

    acceptance = tuple(0.9 * 0.5 ** (i + 1) / (1 - 0.5**16) for i in range(trees.MAX_WIDTH))
    trees_seconds = best_time(
        lambda: trees.compare_trees(acceptance, trees.MAX_TREE_BUDGET, 0.05, widths=(2, 4, 8, 16)), REPEATS
    )
    print(
        f"trees at the caps (budget {trees.MAX_TREE_BUDGET}, width {trees.MAX_WIDTH}): "
        f"{trees_seconds * 1e3:.1f} ms (bound {TREES_BOUND_SECONDS * 1e3:.0f} ms)"
    )
    print(
        f"RATIO trees_at_caps {trees_seconds:.6f} {TREES_BOUND_SECONDS:.6f} {trees_seconds / TREES_BOUND_SECONDS:.3f}"
    )


if __name__ == "__main__":
    main()
