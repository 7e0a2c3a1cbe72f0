"""What a live llama-server says of its speculation, as ``measure`` reads it between requests: the
``llamacpp:spec_decode_*`` counters of ``/metrics`` (``tools/server/server-task.cpp``, with ``--metrics``), all
0 until the server has drafted."""

from __future__ import annotations

from dataclasses import dataclass

from app.model import prometheus_text

PREFIX = "llamacpp:"
PER_POSITION = "spec_decode_num_accepted_tokens_per_pos_total"


class LiveReadError(ValueError):
    """A scrape that is not llama-server's /metrics, with the reason."""


@dataclass(frozen=True)
class SpecCounts:
    drafts: int
    draft_tokens: int
    accepted: int
    per_position: tuple[int, ...]  # drafts with at least position + 1 tokens accepted, from position 0


def prefixed_spec_counts(text: str, prefix: str, engine: str) -> SpecCounts | None:
    """An engine's ``<prefix>spec_decode_*_total`` counters from a /metrics scrape, summed over its series
    (engines, models); None when it exports none of them (a server without speculation, for vLLM).  A scrape with
    no ``<prefix>`` series at all is not this engine's: LiveReadError."""
    values: dict[str, float] = {}
    positions: dict[int, float] = {}
    seen = False
    try:
        read = list(prometheus_text.samples(text))
    except prometheus_text.ExpositionError as error:
        raise LiveReadError(f"/metrics is not a Prometheus text exposition: {error}") from None
    for sample in read:
        if not sample.name.startswith(prefix):
            continue
        seen = True
        name = sample.name[len(prefix) :]
        if not name.startswith("spec_decode_") or not name.endswith("_total"):
            continue
        if name == PER_POSITION:
            if sample.labels.get("position", "").isdigit():
                index = int(sample.labels["position"])
                positions[index] = positions.get(index, 0.0) + sample.value
        else:
            values[name] = values.get(name, 0.0) + sample.value
    if not seen:
        raise LiveReadError(f"/metrics has no {prefix}* series: is this {engine}?")
    if not values and not positions:
        return None
    count = max(positions) + 1 if positions else 0
    return SpecCounts(
        int(values.get("spec_decode_num_drafts_total", 0)),
        int(values.get("spec_decode_num_draft_tokens_total", 0)),
        int(values.get("spec_decode_num_accepted_tokens_total", 0)),
        tuple(int(positions.get(index, 0)) for index in range(count)),
    )


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
