"""What TensorRT-LLM reports and how the product reads it: its Prometheus series (for the rules, the watch and the
canary's decode time), its report and step-time formats, and how measure drives a live server of it.

TensorRT-LLM's step times: its iteration statistics, decode-only iterations (``iterLatencyMS`` at
``inflightBatchingStats.numGenRequests`` sequences, each drafting ``specDecodingStats.numDraftTokens /
numRequestsWithDraftTokens`` tokens).

Its Prometheus text is served at ``/prometheus/metrics`` (``tensorrt_llm/serve/openai_server.py``; ``/metrics`` is
the iteration statistics' JSON), with ``return_perf_metrics: true``.  The request-level counters
``trtllm_spec_decode_drafted_tokens_total`` and ``trtllm_spec_decode_accepted_tokens_total``, one series per
``token_position`` (PR #12636), count every request's drafts whole: position 0's drafted count is the number of
drafts, their sum the draft tokens, the accepted ones per position what vLLM's per-position counter counts.  (The
iteration-level ``trtllm_spec_decode_num_draft_tokens_total`` feeds only the latest iteration of each drain, so it
undercounts and is not read.)  The per-position series appear once a drafted request has finished; from start-up
the info gauge ``trtllm_speculative_config_info`` says ``spec_enabled`` and, as ``spec_num_tokens``, the
configured draft length (``max_draft_len``), which is k.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from app.model.counters.counts import SpecCounts
from app.model.engines import base, reports, step_times
from app.model.engines.base import LiveFormat, Source, openai_completion
from app.model.engines.live import by_position, per_position_k, samples
from app.model.engines.reports import ErrorKind, fail
from app.model.engines.step_times import StepFitError
from app.model.engines.trtllm.versions import COLLECTOR, NAME, REPOSITORY

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


DECODE_TIME = base.DecodeTime(
    seconds="trtllm_time_per_output_token_seconds_sum",
    tokens="trtllm_time_per_output_token_seconds_count",
    per_request=True,
    sources=(COLLECTOR,),
    note="MetricsCollector observes each finished request's time per output token once: sum / count is the mean "
    "over requests of their per-token times, not weighted by their tokens (no per-token series is exported)",
)


def _detect(payload: Any) -> bool:
    return isinstance(payload, list) and any(isinstance(item, dict) and "iterLatencyMS" in item for item in payload)


def _read(payload: Any) -> list[step_times.StepRow]:
    """Decode-only iterations of TensorRT-LLM's iteration stats: iterLatencyMS at numGenRequests sequences."""
    rows = []
    for number, record in enumerate(payload):
        if not isinstance(record, dict):
            continue
        inflight = record.get("inflightBatchingStats") or {}
        spec = record.get("specDecodingStats") or {}
        if not isinstance(inflight, dict) or not isinstance(spec, dict):
            continue
        try:
            context = float(inflight.get("numContextRequests", 0) or 0)
            batch = float(inflight.get("numGenRequests", 0) or 0)
            ms = float(record["iterLatencyMS"])
            drafted = float(spec.get("numDraftTokens", 0) or 0)
            requests = float(spec.get("numRequestsWithDraftTokens", 0) or 0)
        except (KeyError, TypeError, ValueError):
            raise StepFitError(f"iteration {number}: needs numeric iterLatencyMS and numGenRequests") from None
        if context > 0 or batch < 1:
            continue  # a prefill shares the iteration: not a decoding step
        k = round(drafted / requests) if requests > 0 else 0
        if requests > 0 and (requests != batch or abs(drafted / requests - k) > 1e-9):
            continue  # some sequences drafted and some did not, or drafts of several lengths
        rows.append(step_times.step_row(batch, k + 1, ms, f"iteration {number}", draft_steps=k))
    return rows


STEP_TIMES = (
    step_times.StepTimeFormat(
        "trtllm-iteration-stats",
        NAME,
        "TensorRT-LLM iteration statistics JSON: iterLatencyMS of decode-only iterations",
        _detect,
        _read,
    ),
)


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
    counts=spec_counts,
    k_of=_k,
    sources=(OPENAI_SERVER, COLLECTOR, OPENAI_PROTOCOL),
    body=completion,
    setup_hint="start trtllm-serve with return_perf_metrics: true in its extra options (the Prometheus counters)",
)


PROMETHEUS = reports.PrometheusNames(
    prefix="trtllm",
    running="num_requests_running",
    position_label="token_position",
    counters=("spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens"),
)


TRT_NAMES = {
    "drafted": ("numDraftTokens", "num_draft_tokens"),
    "accepted": ("numAcceptedTokens", "num_accepted_tokens"),
    "requests": ("numRequestsWithDraftTokens", "num_requests_with_draft_tokens"),
    "length": ("acceptanceLength", "acceptance_length"),
}


def _pick(mapping: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        if name in mapping:
            return mapping[name]
    return None


def _iterations(payload: Any) -> list[Mapping[str, Any]]:
    if isinstance(payload, Mapping):
        for key in ("stats", "iteration_stats", "iterations"):
            if isinstance(payload.get(key), list):
                return [item for item in payload[key] if isinstance(item, Mapping)]
        return [payload]
    if isinstance(payload, list):
        items = []
        for item in payload:
            if isinstance(item, str):  # LLM.get_stats() can hand out each iteration as a JSON string
                try:
                    item = json.loads(item)
                except json.JSONDecodeError:
                    continue
            if isinstance(item, Mapping):
                items.append(item)
        return items
    return []


def _read_stats(text: str, payload: Any, options: reports.ReadOptions) -> list[reports.Measurement]:
    drafted = accepted = requests = 0.0
    batches = []
    inconsistent = used = 0
    lengths: set[int] = set()
    mixed_iterations = 0
    for index, iteration in enumerate(_iterations(payload)):
        spec = _pick(iteration, ("specDecodingStats", "spec_decoding_stats", "specdec_stats"))
        if not isinstance(spec, Mapping):
            continue
        values = {}
        for key, names in TRT_NAMES.items():
            raw = _pick(spec, names)
            if raw is None and key != "length":
                raise fail(
                    ErrorKind.MISSING_COUNTER, f"TensorRT-LLM: iteration {index}: specDecodingStats has no {names[0]}"
                )
            values[key] = None if raw is None else reports.number(raw, f"iteration {index} {names[0]}")
        if not values["drafted"]:
            continue
        drafted_here, accepted_here, requests_here = values["drafted"], values["accepted"], values["requests"]
        assert accepted_here is not None and requests_here is not None
        if accepted_here > drafted_here:
            raise fail(
                ErrorKind.INCONSISTENT,
                f"iteration {index}: numAcceptedTokens ({accepted_here:g}) exceed numDraftTokens ({drafted_here:g})",
            )
        if requests_here <= 0:
            raise fail(ErrorKind.INCONSISTENT, f"iteration {index}: draft tokens but numRequestsWithDraftTokens is 0")
        length = values["length"]
        expected = 1.0 + accepted_here / requests_here
        if length is not None and length > 0 and abs(length - expected) > 1e-3 * expected:
            inconsistent += 1
        drafted += drafted_here
        accepted += accepted_here
        requests += requests_here
        used += 1
        per_request = reports.integral(drafted_here / requests_here, 1e-9)
        if per_request is None:
            mixed_iterations += 1
        else:
            lengths.add(per_request)
        inflight = _pick(iteration, ("inflightBatchingStats", "inflight_batching_stats"))
        generation = _pick(inflight, ("numGenRequests", "num_gen_requests")) if isinstance(inflight, Mapping) else None
        active = _pick(iteration, ("numActiveRequests", "num_active_requests"))
        batch = generation if generation is not None else active
        if isinstance(batch, int | float) and not isinstance(batch, bool) and math.isfinite(batch) and batch >= 0:
            batches.append(float(batch))
    if used == 0:
        raise fail(ErrorKind.ZERO_DRAFTS, "no iteration with draft tokens (numDraftTokens > 0): nothing was speculated")
    notes = [f"{used} iterations with draft tokens summed"]
    if inconsistent:
        notes.append(f"{inconsistent} iterations report an acceptanceLength other than 1 + accepted / requests")
    # py_executor.py (_get_iter_stats: numDraftTokens sums each request's draft length, numRequestsWithDraftTokens
    # counts them) at NVIDIA/TensorRT-LLM @ 9521caf4696c, the stored commit read: under a draft_len_schedule one
    # iteration runs one batch, so its requests share one length, read per iteration; k is never a mean's rounding.
    k, source = options.k, "given"
    draft_lengths = options.draft_lengths
    if k is None and options.draft_lengths:
        k, source = max(options.draft_lengths), "the largest of the draft lengths given (the schedule)"
    if k is None:
        if mixed_iterations or not lengths:
            raise fail(
                ErrorKind.UNKNOWN_K,
                f"TensorRT-LLM: in {mixed_iterations} of {used} iterations the requests drafted different lengths "
                "(numDraftTokens / numRequestsWithDraftTokens is not whole), so the draft length is not in the "
                "stats: give k (max_draft_len) and, under a draft_len_schedule, its draft lengths; k is never "
                "guessed from a mean",
            )
        k = max(lengths)
        if len(lengths) == 1:
            source = "numDraftTokens / numRequestsWithDraftTokens, the same whole number in every iteration"
        else:
            source = "the longest per-iteration draft length (numDraftTokens / numRequestsWithDraftTokens)"
            draft_lengths = tuple(sorted(lengths))
            notes.append(
                f"iterations drafted {', '.join(map(str, sorted(lengths)))} tokens per request (a draft_len_schedule)"
            )
    batch = float(np.mean(batches)) if batches else None
    counts = (requests, drafted, accepted)
    return reports.single_class(
        NAME,
        "trtllm-iteration-stats",
        options,
        counts,
        k,
        source,
        notes,
        version="2026-03",
        batch=batch,
        draft_lengths=draft_lengths,
    )


def _read_metrics(text: str, payload: Any, options: reports.ReadOptions) -> list[reports.Measurement]:
    """Per token position: drafted_tokens{token_position} and accepted_tokens{token_position} (PR #12636).

    Position 0's drafted count is the number of drafts (every draft has a first token), so these give the
    drafts, the draft tokens, and accepted tokens per position; the iteration counters alone have no drafts.
    """
    found, running = reports.found_groups(
        text, PROMETHEUS, options.label, "TensorRT-LLM: no trtllm_spec_decode_* series"
    )
    measurements = []
    for key, group in sorted(found.items()):
        drafted = group.positions.get("spec_decode_drafted_tokens", {})
        accepted = group.positions.get("spec_decode_accepted_tokens", {})
        if not drafted or not accepted:
            present = ", ".join(sorted({*group.sums, *group.gauges, *group.positions})) or "nothing"
            raise fail(
                ErrorKind.MISSING_COUNTER,
                "TensorRT-LLM: missing trtllm_spec_decode_drafted_tokens_total and "
                "trtllm_spec_decode_accepted_tokens_total per token_position (PR #12636; they need "
                f"return_perf_metrics: true); found {present}",
            )
        width = max(drafted) + 1
        drafted_at = [drafted.get(i, 0.0) for i in range(width)]
        accepted_at = [accepted.get(i, 0.0) for i in range(width)]
        drafts = drafted_at[0]
        notes = ("drafts = drafted tokens at position 0; k = the positions drafted",)
        lengths = options.draft_lengths
        if not lengths and any(abs(value - drafts) > 1e-9 * max(drafts, 1.0) for value in drafted_at):
            # drafted per position tells how many drafts reached each position: the mix of lengths is known
            reached = [*drafted_at, 0.0]
            lengths = tuple(i for i in range(1, width + 1) if reached[i - 1] - reached[i] > 0)
        measurements.append(
            reports.counter_measurement(
                NAME,
                "trtllm-metrics",
                key or None,
                drafts,
                float(sum(drafted_at)),
                float(sum(accepted_at)),
                tuple(accepted_at),
                reports.ReadOptions(options.k, options.label, options.cycles, lengths),
                batch=running,
                series=len(group.series),
                version="2026-03",
                notes=notes,
            )
        )
    return measurements


REPORTS = (
    reports.ReportFormat(
        "trtllm-iteration-stats",
        NAME,
        "TensorRT-LLM iteration statistics JSON: specDecodingStats per iteration",
        ("2025-10", "2026-03", "2026-09"),
        reports.json_with("specDecodingStats", "spec_decoding_stats", "specdec_stats"),
        _read_stats,
        verifications="specDecodingStats.numRequestsWithDraftTokens",
    ),
    reports.ReportFormat(
        "trtllm-metrics",
        NAME,
        "TensorRT-LLM /prometheus/metrics: trtllm_spec_decode_* counters per token_position",
        ("2026-03", "2026-09"),
        reports.text_matching(r"^trtllm[:_]spec_decode_"),
        _read_metrics,
        verifications="trtllm_spec_decode_num_draft_tokens_total",
    ),
)
