"""The Prometheus series each SGLang version exports, for the rules and the watch, and what the
off-schedule alert tells an operator to do."""

from __future__ import annotations

from app.model.engines import base

HOW_TO_APPLY = (  # what the off-schedule alert tells an operator to do
    "give SGLang the flags specdec-lab config --engine sglang writes (the adaptive config per batch tier, "
    "--speculative-adaptive-config, or one draft length where the algorithm takes one)"
)


_GAUGES_LOSE = (
    "no per-position counters: SGLang exports no acceptance per position, so the profile cannot be seen and p is "
    "the i.i.d. p that gives the measured tokens per verification at the running k",
)


# the spec counters and the k gauge of 2026-05 (sglang:spec_verify_calls_total, sglang:spec_num_steps)
_SINCE_2026_05 = base.RulesMetrics(
    running="sglang:num_running_reqs",
    scrape_format="sglang-metrics",
    verify_calls="sglang:spec_verify_calls_total",
    generated="sglang:generation_tokens_total",
    accept_length="sglang:spec_accept_length",
    running_k="sglang:spec_num_steps",
    k_from="gauge",
    loses=(
        *_GAUGES_LOSE,
        "no counter of drafted or accepted tokens: tokens per verification is sglang:generation_tokens_total / "
        "sglang:spec_verify_calls_total (each request's first token, from prefill, counts too), and p has no "
        "sampling interval",
        "sglang:spec_num_steps is a gauge of the tier running at the scrape: tiers run between scrapes are not "
        "seen, and a window whose batch crossed a tier mixes two k",
    ),
)


RULES_METRICS = {
    "2026-03": base.RulesMetrics(
        running="sglang:num_running_reqs",
        scrape_format="sglang-metrics",
        accept_length="sglang:spec_accept_length",
        missing="",
        loses=(
            *_GAUGES_LOSE,
            "only gauges: sglang:spec_accept_length is the mean of the last logging interval, so the window's "
            "tokens per verification is an unweighted mean of scraped values (busy and idle moments count alike, "
            "intervals between scrapes are lost) with no count of verifications: no interval for p and no "
            "minimum of drafts before an alert",
            "no gauge of the k running: the schedule check cannot be made (SGLang 2026-05 has sglang:spec_num_steps)",
        ),
    ),
    "2026-05": _SINCE_2026_05,
    "2026-08": _SINCE_2026_05,  # PR #33518 added per-request counts; the series are 2026-05's
}
