"""What a live llama-server says of its speculation, as ``measure`` reads it between requests: the
``llamacpp:spec_decode_*`` counters of ``/metrics`` (``tools/server/server-task.cpp``, with ``--metrics``), all
0 until the server has drafted."""

from __future__ import annotations

from dataclasses import dataclass

from app.model.engines.base import LiveFormat, SpecCounts
from app.model.engines.live import LiveReadError, prefixed_spec_counts
from app.model.engines.llamacpp.versions import SERVER_CONTEXT, SERVER_TASK

PREFIX = "llamacpp:"


def spec_counts(text: str) -> SpecCounts:
    """llama.cpp's speculative counters from a /metrics scrape (all 0 where the engine has not drafted)."""
    counts = prefixed_spec_counts(text, PREFIX, "a llama-server started with --metrics")
    return counts if counts is not None else SpecCounts(0, 0, 0, ())


@dataclass(frozen=True)
class Timings:
    """A /completion response's ``timings`` (``tools/server/server-task.cpp``): tokens decoded and the time it
    took, the prompt tokens evaluated (few when the prompt was cached), and the tokens drafted and accepted."""

    predicted_n: int
    predicted_ms: float
    prompt_n: int = 0
    draft_n: int = 0
    draft_n_accepted: int = 0


def response_timings(result: object) -> Timings:
    """The timings of a /completion response; a LiveReadError when it has no timings.predicted_n/_ms."""
    timings = result.get("timings") if isinstance(result, dict) else None
    if not isinstance(timings, dict) or "predicted_n" not in timings or "predicted_ms" not in timings:
        raise LiveReadError("the response has no timings.predicted_n/_ms")
    return Timings(
        predicted_n=int(timings["predicted_n"]),
        predicted_ms=float(timings["predicted_ms"]),
        prompt_n=int(timings.get("prompt_n", 0) or 0),
        draft_n=int(timings.get("draft_n", 0) or 0),
        draft_n_accepted=int(timings.get("draft_n_accepted", 0) or 0),
    )


def _k(text: str, counts: SpecCounts | None) -> int | None:
    """llama-server's per-position series appear once it has drafted, one per position up to its n_max."""
    return len(counts.per_position) if counts is not None and counts.per_position else None


def completion(prompt: str, n_predict: int, model: str | None, cache_prompt: bool) -> dict[str, object]:
    """llama-server's own /completion request (``tools/server/server-task.cpp``): every token decoded, greedy."""
    return {
        "prompt": prompt,
        "n_predict": n_predict,
        "temperature": 0.0,
        "ignore_eos": True,
        "cache_prompt": cache_prompt,
        "seed": 0,
    }


LIVE = LiveFormat(
    engine="llamacpp",
    title="llama.cpp",
    metrics_path="/metrics",
    marker=PREFIX,
    native=True,
    counts=spec_counts,
    k_of=_k,
    sources=(SERVER_TASK, SERVER_CONTEXT),
    body=completion,
    completion_path="/completion",
    version_path=None,
    batches_itself=False,
    setup_hint="start llama-server with --metrics",
)
