"""What ``measure`` reads from a live server of any engine between requests.

Every engine package defines ``LIVE``, a :class:`app.model.engines.base.LiveFormat`: where its Prometheus text
is, the prefix of its series there (which tells the engine), how its cumulative speculative counts are read from
one scrape, where its configured k shows, and its request (llama-server's own ``/completion`` or an OpenAI
``/v1/completions``, streamed).  The counts of a window are the difference of two scrapes; the readers that the
engines' ``counts`` share are here."""

from __future__ import annotations

from app.model.counters import prometheus_text
from app.model.counters.counts import SpecCounts


class LiveReadError(ValueError):
    """A scrape or a response that is not what the engine writes, with the reason."""


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


def per_position_k(text: str, counts: SpecCounts | None) -> int | None:
    """k as the number of per-position series, where they exist from start-up, one per position up to k."""
    return len(counts.per_position) if counts is not None and counts.per_position else None
