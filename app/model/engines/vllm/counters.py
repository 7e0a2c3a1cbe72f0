"""The Prometheus series each vLLM version exports, for the rules and the watch, and what the
off-schedule alert tells an operator to do."""

from __future__ import annotations

from app.model.engines import base
from app.model.engines.vllm.versions import PER_BATCH_SCHEDULE, VERSIONS

HOW_TO_APPLY = (  # what the off-schedule alert tells an operator to do
    "set num_speculative_tokens_per_batch_size in --speculative-config to the schedule "
    "(specdec-lab config --engine vllm writes it)"
)


RULES_METRICS = {
    version.name: base.RulesMetrics(
        running="vllm:num_requests_running",
        scrape_format="vllm-metrics",
        drafts="vllm:spec_decode_num_drafts_total",
        draft_tokens="vllm:spec_decode_num_draft_tokens_total",
        accepted="vllm:spec_decode_num_accepted_tokens_total",
        per_position="vllm:spec_decode_num_accepted_tokens_per_pos_total",
        # 2025-10 runs one num_speculative_tokens at every batch: one series per position from 0 to it.  Later
        # versions look the k up per batch and export no gauge of it: the mean draft length bounds it from below.
        k_from="mean-draft-length" if version.can(PER_BATCH_SCHEDULE) else "positions",
        loses=()
        if not version.can(PER_BATCH_SCHEDULE)
        else (
            "the k vLLM runs at each batch is not exported: the schedule check compares the mean draft length "
            "(drafted / drafts), which is at most the k run, so it sees a server drafting longer than the schedule, "
            "not one drafting shorter",
        ),
    )
    for version in VERSIONS
}
