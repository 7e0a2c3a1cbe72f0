"""Sample engine reports for tests and demonstrations: each report format the adapters read, written from
seeded i.i.d. acceptance p at draft length k, the way that engine writes it.

The product reads reports; it never writes these.  ``example_report`` names a format the registry knows
(``app.model.live.engine_metrics.FORMATS``); a format without a writer here is a KeyError, so a new format needs one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import numpy as np

from app.model.counters.counts import CounterNames, SpecCounts, counter_families
from app.model.counters.prometheus_text import Family, exposition
from app.model.live.engine_metrics import REPORT_FORMATS


def sample_accepted(p: float, k: int, cycles: int, seed: int) -> np.ndarray:
    """Accepted drafts per verification: truncated geometric draws."""
    rng = np.random.default_rng(seed)
    if p >= 1:
        return np.full(cycles, k)
    return np.minimum(rng.geometric(1.0 - p, size=cycles) - 1, k)


# vLLM's V1 spec-decode counters, whose names llama-server took over (with its own prefix)
SPEC_DECODE_COUNTERS = {
    "drafts": "spec_decode_num_drafts",
    "draft_tokens": "spec_decode_num_draft_tokens",
    "accepted": "spec_decode_num_accepted_tokens",
    "per_position": "spec_decode_num_accepted_tokens_per_pos",
}


def per_request(draws: np.ndarray, size: int) -> list[np.ndarray]:
    """The verifications split into requests (or iterations) of ``size`` each, the last one shorter."""
    return [draws[start : start + size] for start in range(0, len(draws), size)]


def prometheus_counters(
    prefix: str,
    stems: dict[str, str],
    p: float,
    k: int,
    cycles: int,
    seed: int,
    classes: int,
    *,
    labels: str = "",
    position_label: str = "position",
    per_position_drafted: str | None = None,
    running: tuple[str, float] | None = None,
) -> str:
    """Spec-decode counters after ``cycles`` verifications per class of i.i.d. acceptance p at draft length k.

    ``stems`` maps 'drafts', 'draft_tokens', 'accepted', 'per_position' to the engine's metric stems (a
    missing key is not written); ``per_position_drafted`` names a drafted-per-position counter.
    """
    given = tuple(re.findall(r'(\w+)="([^"]*)"', labels))
    draws = [sample_accepted(p, k, cycles, seed + index) for index in range(classes)]
    classed = [(*given, ("model_name", f"model-{index}")) for index in range(classes)]
    names = CounterNames(
        **{kind: f"{prefix}{stem}_total" for kind, stem in stems.items()}, position_label=position_label
    )
    rows = [
        (
            base,
            SpecCounts(cycles, cycles * k, int(accepted.sum()), tuple(int(np.sum(accepted > at)) for at in range(k))),
        )
        for base, accepted in zip(classed, draws, strict=True)
    ]
    families = counter_families(names, rows)
    if per_position_drafted:
        drafted = tuple(((*base, (position_label, str(at))), float(cycles)) for base in classed for at in range(k))
        families.append(Family(f"{prefix}{per_position_drafted}_total", "counter", drafted))
    if running is not None:
        families.append(Family(f"{prefix}{running[0]}", "gauge", ((given, running[1]),)))
    return exposition(families)


def vllm_metrics(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    return prometheus_counters(
        "vllm:",
        SPEC_DECODE_COUNTERS,
        p,
        k,
        cycles,
        seed,
        classes,
        labels='engine="0",',
        running=("num_requests_running", 8.0),
    )


def vllm_metrics_v0(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    draws = sample_accepted(p, k, cycles, seed)
    rng = np.random.default_rng(seed + 99)
    any_position = int(rng.binomial(cycles * k, p))  # V0 counts every accepted position, prefix or not
    emitted = int(draws.sum()) + cycles
    return (
        f"vllm:spec_decode_num_draft_tokens_total {float(cycles * k)}\n"
        f"vllm:spec_decode_num_accepted_tokens_total {float(any_position)}\n"
        f"vllm:spec_decode_num_emitted_tokens_total {float(emitted)}\n"
        f"vllm:spec_decode_efficiency {emitted / (cycles * (k + 1))!r}\n"
    )


def vllm_request(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    draws = sample_accepted(p, k, cycles, seed)
    responses = []
    for index, chunk in enumerate(per_request(draws, 50)):
        histogram = [int((chunk == j).sum()) for j in range(k + 1)]
        responses.append(
            {
                "id": f"cmpl-{index}",
                "object": "text_completion",
                "metrics": {
                    "speculative_decoding": {
                        "mean_acceptance_length": 1.0 + float(chunk.mean()),
                        "draft_acceptance_rate": float(chunk.sum()) / (len(chunk) * k),
                        "acceptance_histogram": histogram,
                        "num_spec_steps": len(chunk),
                        "num_accepted_draft_tokens": int(chunk.sum()),
                        "num_draft_tokens": len(chunk) * k,
                        "num_spec_tokens": k,
                    }
                },
            }
        )
    return "\n".join(json.dumps(response) for response in responses) + "\n"


def sglang_metrics(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    draws = sample_accepted(p, k, cycles, seed)
    length = 1.0 + float(draws.mean())
    generated = float(draws.sum() + cycles)
    return (
        "# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.\n"
        "# TYPE sglang:spec_accept_length gauge\n"
        f'sglang:spec_accept_length{{model_name="target"}} {length!r}\n'
        "# TYPE sglang:spec_accept_rate gauge\n"
        f'sglang:spec_accept_rate{{model_name="target"}} {(length - 1) / k!r}\n'
        "# TYPE sglang:spec_num_steps gauge\n"
        f'sglang:spec_num_steps{{model_name="target"}} {float(k)}\n'
        "# TYPE sglang:spec_num_draft_tokens gauge\n"
        f'sglang:spec_num_draft_tokens{{model_name="target"}} {float(k + 1)}\n'
        "# TYPE sglang:spec_verify_calls_total counter\n"
        f'sglang:spec_verify_calls_total{{model_name="target"}} {float(cycles)}\n'
        "# TYPE sglang:generation_tokens_total counter\n"
        f'sglang:generation_tokens_total{{model_name="target"}} {generated}\n'
    )


def sglang_server_info(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    length = 1.0 + float(sample_accepted(p, k, cycles, seed).mean())
    return json.dumps(
        {
            "speculative_num_steps": k,
            "speculative_eagle_topk": 1,
            "speculative_num_draft_tokens": k + 1,
            "internal_states": [{"avg_spec_accept_length": length, "last_gen_throughput": 100.0}],
        }
    )


def sglang_request(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    """/generate responses with meta_info as SGLang's spec_decoding_meta.py fills it."""
    draws = sample_accepted(p, k, cycles, seed)
    responses = []
    for chunk in per_request(draws, 40):
        histogram = [int((chunk == j).sum()) for j in range(k + 1)]
        meta = {
            "spec_verify_ct": len(chunk),
            "spec_num_correct_drafts": int(chunk.sum()),
            "spec_num_proposed_drafts": len(chunk) * k,
            "spec_accept_length": float(1 + chunk.mean()),
            "spec_correct_drafts_histogram": histogram,
        }
        responses.append({"text": "...", "meta_info": meta})
    return json.dumps(responses)


def trtllm_iteration_stats(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    draws = sample_accepted(p, k, cycles, seed)
    batch = 8
    iterations = []
    for index, chunk in enumerate(per_request(draws, batch)):
        iterations.append(
            {
                "iter": index,
                "numActiveRequests": len(chunk),
                "inflightBatchingStats": {"numGenRequests": len(chunk), "numContextRequests": 0},
                "specDecodingStats": {
                    "numDraftTokens": len(chunk) * k,
                    "numAcceptedTokens": int(chunk.sum()),
                    "numRequestsWithDraftTokens": len(chunk),
                    "acceptanceLength": 1.0 + float(chunk.mean()),
                    "iterLatencyMS": 1.0,
                    "draftOverhead": 0.2,
                },
            }
        )
    return json.dumps(iterations)


def trtllm_metrics(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    return prometheus_counters(
        "trtllm_",
        {"per_position": "spec_decode_accepted_tokens"},
        p,
        k,
        cycles,
        seed,
        classes,
        labels='engine_type="trtllm",',
        position_label="token_position",
        per_position_drafted="spec_decode_drafted_tokens",
    )


def llamacpp_metrics(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    text = prometheus_counters(
        "llamacpp:",
        SPEC_DECODE_COUNTERS,
        p,
        k,
        cycles,
        seed,
        1,
    )
    return re.sub(r'\{model_name="model-0",?', "{", text).replace("{}", "")


def llamacpp_counts(counts: SpecCounts) -> str:
    """llama-server's /metrics holding the given spec-decode counts, written by the product's exposition writer:
    for reports no i.i.d. draw gives (drafts of several lengths, a flat tail)."""
    names = CounterNames(**{kind: f"llamacpp:{stem}_total" for kind, stem in SPEC_DECODE_COUNTERS.items()})
    return exposition(counter_families(names, [((), counts)]))


def llamacpp_log(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    draws = sample_accepted(p, k, cycles, seed)
    lines = [
        "spec common_specu: adding speculative implementation 'draft-simple'",
        f"  - n_max={k}, n_min=0, p_min=0.00",
    ]
    calls = gen = acc = drafts = acc_drafts = 0
    for task, chunk in enumerate(per_request(draws, 500)):
        got, made = int(chunk.sum()), len(chunk) * k
        calls += len(chunk)
        gen += made
        acc += got
        drafts += len(chunk)
        acc_drafts += int((chunk > 0).sum())
        lines += [
            f"slot print_timing: id  0 | task {task} | draft acceptance = {got / made:0.5f} ({got:5d} accepted / "
            f"{made:5d} generated), mean len = {1 + got / len(chunk):5.2f}",
            f"spec common_specu: statistics     draft-simple: #calls(b,g,a) = {task + 1:4d} {calls:6d} {calls:6d}, "
            f"#gen drafts = {drafts:6d}, #acc drafts = {acc_drafts:5d}, #gen tokens = {gen:6d}, #acc tokens = {acc:5d}"
            ", dur(b,g,a) = 0.006, 21.272, 0.010 ms",
        ]
    return "\n".join(lines) + "\n"


def llamacpp_speculative(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    draws = sample_accepted(p, k, cycles, seed)
    return (
        f"n_draft   = {k}\nn_predict = {int(draws.sum()) + cycles}\nn_drafted = {cycles * k}\n"
        f"n_accept  = {int(draws.sum())}\naccept    = {100 * draws.sum() / (cycles * k):.3f}%\n"
    )


def llamacpp_timings(p: float, k: int, cycles: int, seed: int, classes: int) -> str:
    draws = sample_accepted(p, k, cycles, seed)
    responses = []
    for chunk in per_request(draws, 40):
        responses.append(
            {
                "content": "...",
                "timings": {
                    "predicted_n": int(chunk.sum()) + len(chunk),
                    "predicted_ms": 100.0,
                    "draft_n": len(chunk) * k,
                    "draft_n_accepted": int(chunk.sum()),
                },
            }
        )
    return json.dumps(responses)


SampleWriter = Callable[[float, int, int, int, int], str]  # (p, k, cycles, seed, classes) -> a report

WRITERS: dict[str, SampleWriter] = {
    "vllm-metrics": vllm_metrics,
    "vllm-metrics-v0": vllm_metrics_v0,
    "vllm-request": vllm_request,
    "sglang-metrics": sglang_metrics,
    "sglang-server-info": sglang_server_info,
    "sglang-request": sglang_request,
    "trtllm-iteration-stats": trtllm_iteration_stats,
    "trtllm-metrics": trtllm_metrics,
    "llamacpp-metrics": llamacpp_metrics,
    "llamacpp-log": llamacpp_log,
    "llamacpp-speculative": llamacpp_speculative,
    "llamacpp-timings": llamacpp_timings,
}


def example_report(format_name: str, p: float, k: int, cycles: int, seed: int, classes: int = 1) -> str:
    """A report in ``format_name`` after ``cycles`` verifications per class with i.i.d. acceptance p."""
    if format_name not in REPORT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(REPORT_FORMATS)}")
    return WRITERS[format_name](p, k, cycles, seed, classes)
