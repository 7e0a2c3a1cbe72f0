"""What a live trtllm-serve says of its speculation, as ``measure`` reads it between requests.

Its Prometheus text is served at ``/prometheus/metrics`` (``tensorrt_llm/serve/openai_server.py``; ``/metrics`` is
the iteration statistics' JSON), with ``return_perf_metrics: true``.  The request-level counters
``trtllm_spec_decode_drafted_tokens_total`` and ``trtllm_spec_decode_accepted_tokens_total``, one series per
``token_position`` (PR #12636), count every request's drafts whole: position 0's drafted count is the number of
drafts, their sum the draft tokens, the accepted ones per position what vLLM's per-position counter counts.  (The
iteration-level ``trtllm_spec_decode_num_draft_tokens_total`` feeds only the latest iteration of each drain, so it
undercounts and is not read.)  The per-position series appear once a drafted request has finished; from start-up
the info gauge ``trtllm_speculative_config_info`` says ``spec_enabled`` and, as ``spec_num_tokens``, the
configured draft length (``max_draft_len``), which is k."""

from __future__ import annotations

from app.model.engines.base import LiveFormat, Source, SpecCounts, openai_completion
from app.model.engines.live import by_position, per_position_k, samples
from app.model.engines.trtllm.versions import COLLECTOR, REPOSITORY

PREFIX = "trtllm_"
DRAFTED = "trtllm_spec_decode_drafted_tokens_total"
ACCEPTED = "trtllm_spec_decode_accepted_tokens_total"
POSITION = "token_position"
CONFIG_INFO = "trtllm_speculative_config_info"

OPENAI_SERVER = Source(
    REPOSITORY,
    "tensorrt_llm/serve/openai_server.py",
    "050f80def8df",
    "/prometheus/metrics mounted if return_perf_metrics; trtllm_speculative_config_info labels spec_enabled, "
    "spec_num_tokens = max_draft_len; GET /version -> {'version': ...}",
)

OPENAI_PROTOCOL = Source(
    REPOSITORY,
    "tensorrt_llm/serve/openai_protocol.py",
    "050f80def8df",
    "CompletionRequest: stream, stream_options (include_usage), ignore_eos, max_tokens, temperature; extra fields "
    "forbidden",
)


def _config(text: str) -> dict[str, str]:
    """The labels of the speculative config's info gauge (empty without one)."""
    read = samples(text, PREFIX, "trtllm-serve (its Prometheus text at /prometheus/metrics)")
    return next((dict(sample.labels) for sample in read if sample.name == CONFIG_INFO), {})


def spec_counts(text: str) -> SpecCounts | None:
    """The drafts, draft tokens and accepted tokens per position so far (all 0 before a drafted request has
    finished); None on a server without speculation."""
    read = samples(text, PREFIX, "trtllm-serve (its Prometheus text at /prometheus/metrics)")
    drafted = by_position(read, DRAFTED, POSITION)
    accepted = by_position(read, ACCEPTED, POSITION)
    if not drafted:  # nothing drafted yet: zero counts where the config says it speculates
        return SpecCounts(0, 0, 0, ()) if _config(text).get("spec_enabled", "").lower() == "true" else None
    width = max(drafted) + 1
    per_position = tuple(int(accepted.get(index, 0)) for index in range(width))
    return SpecCounts(int(drafted.get(0, 0)), int(sum(drafted.values())), sum(per_position), per_position)


def _k(text: str, counts: SpecCounts | None) -> int | None:
    """spec_num_tokens of the config's info gauge; else the positions drafted."""
    configured = _config(text).get("spec_num_tokens", "")
    return int(configured) if configured.isdigit() and int(configured) > 0 else per_position_k(text, counts)


def completion(prompt: str, n_predict: int, model: str | None, cache_prompt: bool) -> dict[str, object]:
    """The OpenAI request without ``seed``: trtllm-serve's CompletionRequest refuses fields it does not declare
    (openai_protocol.py); temperature 0 is greedy without one."""
    body = openai_completion(prompt, n_predict, model, cache_prompt)
    del body["seed"]
    return body


LIVE = LiveFormat(
    engine="trtllm",
    title="TensorRT-LLM",
    metrics_path="/prometheus/metrics",
    marker=PREFIX,
    native=False,
    counts=spec_counts,
    k_of=_k,
    sources=(OPENAI_SERVER, COLLECTOR, OPENAI_PROTOCOL),
    body=completion,
    setup_hint="start trtllm-serve with return_perf_metrics: true in its extra options (the Prometheus counters)",
)
