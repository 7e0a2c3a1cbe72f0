"""The Prometheus series each llama.cpp version exports, for the rules and the watch, and what the
off-schedule alert tells an operator to do."""

from __future__ import annotations

from app.model.engines import base

HOW_TO_APPLY = (  # what the off-schedule alert tells an operator to do
    "llama.cpp runs one k at every batch: restart llama-server with the flags specdec-lab config --engine "
    "llamacpp writes for this batch (--spec-draft-n-max, or the n-gram size, at this k; without --spec-type when "
    "it is 0)"
)


# PR #26389's /metrics spec counters (2026-10, build b11312); b11434 exports the same series
# (tools/server/server-task.cpp of both builds' source packages).
_SPEC_COUNTERS = base.RulesMetrics(
    running="llamacpp:requests_processing",
    scrape_format="llamacpp-metrics",
    drafts="llamacpp:spec_decode_num_drafts_total",
    draft_tokens="llamacpp:spec_decode_num_draft_tokens_total",
    accepted="llamacpp:spec_decode_num_accepted_tokens_total",
    per_position="llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
    k_from="positions",
    loses=(
        "llama-server exports /metrics only when started with --metrics",
        "the per-position series appear once a request that drafted has finished: until then after a start "
        "there is no p and no k",
        "steps where the n-gram drafter found nothing to draft are plain decoding and are not verifications: "
        "tokens per verification and the speedup cover the steps that drafted",
    ),
)


RULES_METRICS = {
    "2026-03": base.RulesMetrics(
        running="llamacpp:requests_processing",
        scrape_format="llamacpp-metrics",
        missing="llama.cpp 2026-03 reports speculation only in its log: llamacpp:spec_decode_num_drafts_total, "
        "llamacpp:spec_decode_num_accepted_tokens_total and llamacpp:spec_decode_num_accepted_tokens_per_pos_total "
        "came with PR #26389 (2026-10, build b11312)",
    ),
    "2026-10": _SPEC_COUNTERS,
    "b11434": _SPEC_COUNTERS,
}
