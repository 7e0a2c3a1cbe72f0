"""The Prometheus series each TensorRT-LLM version exports, for the rules and the watch, and what the
off-schedule alert tells an operator to do."""

from __future__ import annotations

from app.model.engines import base

HOW_TO_APPLY = (  # what the off-schedule alert tells an operator to do
    "set draft_len_schedule in speculative_config to the schedule (specdec-lab config --engine trtllm writes it)"
)


RULES_METRICS = {
    "2025-10": base.RulesMetrics(
        running="trtllm_num_requests_running",
        scrape_format="trtllm-metrics",
        missing="TensorRT-LLM 2025-10 exports no spec-decode series to Prometheus: "
        "trtllm_spec_decode_drafted_tokens_total and trtllm_spec_decode_accepted_tokens_total per token_position "
        "came with PR #12545 and PR #12636 (2026-03); read its iteration statistics with calibrate instead",
    ),
    **{
        name: base.RulesMetrics(
            running="trtllm_num_requests_running",
            scrape_format="trtllm-metrics",
            per_position="trtllm_spec_decode_accepted_tokens_total",
            drafted_per_position="trtllm_spec_decode_drafted_tokens_total",
            position_label="token_position",
            k_from="longest-draft",
            loses=(
                "the counters need return_perf_metrics: true; without it they stay empty and no rule has data",
                "the k run at each batch is not exported: the schedule check takes the longest draft in the window "
                "(the last token_position drafted), which sees a server drafting longer than the schedule, not one "
                "drafting shorter",
            ),
        )
        for name in ("2026-03", "2026-09")
    },
}
