"""Worst-case work of the engine endpoints, each against its bound, measured in the same process.

- Calibrating a 1,000,000-byte vLLM scrape through format detection (POST /api/v1/calibrate's path)
  against prometheus_client's parser merely iterating the same text.  Bound: at most 1.5x the bare parse.
- Fitting 5,000 measured step times (the cap) against a budget of 1 s.
- The engine config of a 70B target (decision over every batch that fits, trees off) against the plain
  schedule of the same setup.  Bound: at most 1.5x.
"""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from app.model.live.step_fit import fit_step_times, read_step_times
from app.service import plan
from app.service.decision import cost_regime
from app.service.engines import calibrate_report
from app.service.regimes import SetupRequest, build_setup, schedule_out
from benchmarks.bench_decision import large_exposition
from benchmarks.timing import best_time
from tests.samples.step_times import example_step_times

REPEATS = 5
FIT_BUDGET_SECONDS = 1.0


def main() -> None:
    text = large_exposition()

    def bare_parse() -> None:
        for family in text_string_to_metric_families(text):
            for _ in family.samples:
                pass

    regime = cost_regime("memory-bound", 0.1)
    parse_seconds = best_time(bare_parse, REPEATS)
    calibrate_seconds = best_time(lambda: calibrate_report(text, regime, 64), REPEATS)
    print(
        f"detect and calibrate a {len(text.encode()):,}-byte scrape: {calibrate_seconds * 1e3:.1f} ms; "
        f"bare parse {parse_seconds * 1e3:.1f} ms (bound 1.5x)"
    )
    print(
        f"RATIO calibrate_any_1MB {calibrate_seconds:.6f} {parse_seconds:.6f} {calibrate_seconds / parse_seconds:.3f}"
    )

    built = build_setup(SetupRequest())
    steps = example_step_times(built.setup, list(range(1, 501)), list(range(1, 11)), noise=0.05, seed=1)

    def fit() -> None:
        name, rows = read_step_times(steps)
        fit_step_times(built.setup, name, rows)

    fit_seconds = best_time(fit, 3)
    print(f"fit 5,000 step times: {fit_seconds * 1e3:.1f} ms (budget {FIT_BUDGET_SECONDS * 1e3:.0f} ms)")
    print(f"RATIO step_fit_5000_rows {fit_seconds:.6f} {FIT_BUDGET_SECONDS:.6f} {fit_seconds / FIT_BUDGET_SECONDS:.3f}")

    big = build_setup(SetupRequest(model="dense-70b", devices=8))
    schedule_seconds = best_time(lambda: schedule_out(0.8, 16, 1024, big), REPEATS)
    request = plan.PlanRequest(engine="vllm", p=0.8, k_max=16, batch_max=1024)
    config_seconds = best_time(lambda: plan.build(request, big).config_out(), REPEATS)
    print(f"engine config {config_seconds * 1e3:.1f} ms; schedule alone {schedule_seconds * 1e3:.1f} ms (bound 1.5x)")
    ratio = config_seconds / schedule_seconds
    print(f"RATIO engine_config_vs_schedule {config_seconds:.6f} {schedule_seconds:.6f} {ratio:.3f}")


if __name__ == "__main__":
    main()
