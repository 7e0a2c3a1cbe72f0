"""An OpenAI-compatible streamed completion, timed as it arrives: what ``measure`` reads from vLLM, SGLang and
TensorRT-LLM, which serve ``/v1/completions`` with ``"stream": true`` as server-sent events (``data: {...}``
lines, ``data: [DONE]`` last) and, with ``"stream_options": {"include_usage": true}``, a last chunk whose
``usage`` counts the completion's tokens.

A request's decoding phase runs from its first streamed token (which the prompt's pass produced) to its last;
with speculation a chunk may carry several tokens, so the tokens are the usage's count, not the chunks'."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass


class StreamReadError(ValueError):
    """A stream that is not an OpenAI-compatible completion, with the reason."""


@dataclass(frozen=True)
class StreamTimings:
    """One streamed completion: tokens generated, the decoding phase's time (first token to last), the time from
    sending to the last token, and the prompt's tokens; no draft counts (the engine's /metrics has them)."""

    predicted_n: int
    predicted_ms: float
    total_ms: float
    prompt_n: int = 0
    draft_n: int | None = None
    draft_n_accepted: int | None = None


def stream_timings(events: Iterable[tuple[float, str]], sent: float) -> StreamTimings:
    """The timings of one streamed completion from its ``(arrival seconds, line)`` pairs and the sending time."""
    first: float | None = None
    last: float | None = None
    usage: dict[str, object] | None = None
    for arrived, line in events:
        if not line.startswith("data:"):
            continue
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            break
        try:
            chunk = json.loads(data)
        except ValueError:
            raise StreamReadError(f"a streamed line is not JSON: {data[:80]!r}") from None
        if not isinstance(chunk, dict):
            raise StreamReadError("a streamed chunk is not a JSON object")
        if isinstance(chunk.get("error"), dict | str):
            raise StreamReadError(f"the server answered with an error: {str(chunk['error'])[:200]}")
        if isinstance(chunk.get("usage"), dict):
            usage = chunk["usage"]
        choices = chunk.get("choices")
        if isinstance(choices, list) and any(isinstance(c, dict) and c.get("text") for c in choices):
            first = arrived if first is None else first
            last = arrived
    if usage is None or not isinstance(usage.get("completion_tokens"), int):
        raise StreamReadError("the stream ended without usage.completion_tokens (stream_options.include_usage)")
    if first is None or last is None:
        raise StreamReadError("the stream carried no text")
    return StreamTimings(
        predicted_n=int(usage["completion_tokens"]),  # type: ignore[call-overload]
        predicted_ms=(last - first) * 1e3,
        total_ms=(last - sent) * 1e3,
        prompt_n=int(usage.get("prompt_tokens") or 0),  # type: ignore[call-overload]
    )
