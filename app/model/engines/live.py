"""What ``measure`` reads from a live server of any engine between requests, and how each engine is driven.

Every engine package defines ``LIVE``, a :class:`LiveFormat`: where its Prometheus text is, the prefix of its
series there (which tells the engine), how its cumulative speculative counts are read from one scrape, where its
configured k shows, and whether requests go to llama-server's own ``/completion`` or to an OpenAI-compatible
``/v1/completions``, streamed.  The counts of a window are the difference of two scrapes (:class:`SpecCounts`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.model import prometheus_text
from app.model.engines.base import Source


class LiveReadError(ValueError):
    """A scrape or a response that is not what the engine writes, with the reason."""


@dataclass(frozen=True)
class SpecCounts:
    drafts: int  # verifications of a draft
    draft_tokens: int
    accepted: int  # accepted draft tokens (the verification's own token excluded)
    per_position: tuple[int, ...]  # drafts with at least position + 1 tokens accepted, from position 0


def samples(text: str, prefix: str, engine: str) -> list[prometheus_text.Sample]:
    """The scrape's samples whose names start with ``prefix``; LiveReadError when it has none (not this engine)."""
    try:
        read = [sample for sample in prometheus_text.samples(text) if sample.name.startswith(prefix)]
    except prometheus_text.ExpositionError as error:
        raise LiveReadError(f"/metrics is not a Prometheus text exposition: {error}") from None
    if not read:
        raise LiveReadError(f"/metrics has no {prefix}* series: is this {engine}?")
    return read


def summed(read: list[prometheus_text.Sample], name: str) -> float | None:
    """The sum of ``name``'s series over their labels (engines, models, ranks); None when there is none."""
    values = [sample.value for sample in read if sample.name == name]
    return sum(values) if values else None


def by_position(read: list[prometheus_text.Sample], name: str, label: str) -> dict[int, float]:
    """``name`` summed per value of its position label."""
    found: dict[int, float] = {}
    for sample in read:
        position = sample.labels.get(label, "")
        if sample.name == name and position.isdigit():
            found[int(position)] = found.get(int(position), 0.0) + sample.value
    return found


def prefixed_spec_counts(text: str, prefix: str, engine: str) -> SpecCounts | None:
    """An engine's ``<prefix>spec_decode_*_total`` counters (vLLM's and llama.cpp's names), summed over their series;
    None when it exports none of them (a server without speculation, for vLLM)."""
    read = samples(text, prefix, engine)
    names = {sample.name for sample in read}
    stem = f"{prefix}spec_decode_"
    if not any(name.startswith(stem) and name.endswith("_total") for name in names):
        return None
    positions = by_position(read, f"{stem}num_accepted_tokens_per_pos_total", "position")
    count = max(positions) + 1 if positions else 0
    return SpecCounts(
        int(summed(read, f"{stem}num_drafts_total") or 0),
        int(summed(read, f"{stem}num_draft_tokens_total") or 0),
        int(summed(read, f"{stem}num_accepted_tokens_total") or 0),
        tuple(int(positions.get(index, 0)) for index in range(count)),
    )


def openai_completion(prompt: str, n_predict: int, model: str | None, cache_prompt: bool) -> dict[str, object]:
    """An OpenAI /v1/completions request that decodes every token at temperature 0, streamed with its usage."""
    return {
        "model": model,
        "prompt": prompt,
        "max_tokens": n_predict,
        "temperature": 0.0,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True},
        "seed": 0,
    }


@dataclass(frozen=True)
class LiveFormat:
    """How ``measure`` drives a live server of one engine and reads its speculation between requests."""

    engine: str  # the package's NAME
    title: str
    metrics_path: str  # where its Prometheus text is served
    marker: str  # the prefix of its series there: what tells this engine from the others
    native: bool  # llama-server's /completion with its own timings; otherwise OpenAI /v1/completions, streamed
    counts: Callable[[str], SpecCounts | None]  # cumulative, from one scrape; None: the server does not speculate
    k_of: Callable[[str, SpecCounts | None], int | None]  # the configured k where the scrape (or its counts) say it
    sources: tuple[Source, ...]
    # the request of one completion that decodes n tokens whatever it says: (prompt, n, served model, cache prompt)
    body: Callable[[str, int, str | None, bool], dict[str, object]] = openai_completion
    completion_path: str = "/v1/completions"
    # accepted counts every generated token a verification did not draft, each request's first token included:
    # the window's requests are taken off (SGLang's accepted = generation tokens - verifications)
    first_tokens_in_accepted: bool = False
    drafter_named: bool = True  # whether the scrape names the drafter (vLLM's does not)
    version_path: str | None = "/version"  # answers {"version": ...}
    batches_itself: bool = True  # its scheduler batches what arrives; llama-server needs a slot per request
    setup_hint: str = ""  # what to start the server with for its counters

    def cite(self) -> list[str]:
        return [source.cite() for source in self.sources]


def per_position_k(text: str, counts: SpecCounts | None) -> int | None:
    """k as the number of per-position series, where they exist from start-up, one per position up to k."""
    return len(counts.per_position) if counts is not None and counts.per_position else None
