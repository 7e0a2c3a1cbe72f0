"""The counts of speculative decoding, one record, and the one writer of them as Prometheus counters.

Every engine counts the same four things, under its own names: verifications of a draft (drafts, which some
engines call cycles or verify calls), drafted tokens, accepted draft tokens (the verification's own token
excluded) and, per draft position, the drafts whose token there was accepted.  :class:`SpecCounts` holds them;
:func:`counter_families` writes them under an engine's names, for an example report or a measured delta.
:class:`Measurement` is one class's counts as a report gives them, with what it says beside them, which
calibration reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.model.counters.prometheus_text import Family, Labels


@dataclass(frozen=True)
class SpecCounts:
    """An engine's speculative-decoding counts (cumulative from one scrape, or the difference of two)."""

    drafts: int = 0  # verifications of a draft
    draft_tokens: int = 0
    accepted: int = 0  # accepted draft tokens (the verification's own token excluded)
    per_position: tuple[int, ...] = ()  # drafts with at least position + 1 tokens accepted, from position 0

    def _aligned(self, other: SpecCounts) -> tuple[tuple[int, ...], tuple[int, ...]]:
        width = max(len(self.per_position), len(other.per_position))
        return (
            self.per_position + (0,) * (width - len(self.per_position)),
            other.per_position + (0,) * (width - len(other.per_position)),
        )

    def minus(self, before: SpecCounts) -> SpecCounts:
        """The counts since ``before``; a ValueError when one went down (the server restarted between them)."""
        now, then = self._aligned(before)
        delta = SpecCounts(
            self.drafts - before.drafts,
            self.draft_tokens - before.draft_tokens,
            self.accepted - before.accepted,
            tuple(a - b for a, b in zip(now, then, strict=True)),
        )
        if min(delta.drafts, delta.draft_tokens, delta.accepted, *delta.per_position, 0) < 0:
            raise ValueError("a speculative counter went down: the server restarted during the measurement")
        return delta

    def plus(self, other: SpecCounts) -> SpecCounts:
        mine, theirs = self._aligned(other)
        return SpecCounts(
            self.drafts + other.drafts,
            self.draft_tokens + other.draft_tokens,
            self.accepted + other.accepted,
            tuple(a + b for a, b in zip(mine, theirs, strict=True)),
        )


@dataclass(frozen=True)
class Measurement:
    """Spec-decode counts of one class, as read from one engine's report (or given by hand), with what the report
    says beside them; what calibration reads.  ``schema`` "v0" is older vLLM's: emitted tokens, no drafts."""

    engine: str
    format: str
    label: str | None
    drafts: float | None  # verifications of a draft; None when the format holds only a mean
    draft_tokens: float | None
    accepted: float | None  # accepted draft tokens (bonus excluded)
    per_position: tuple[float, ...] = ()
    mean_length: float | None = None
    k: int | None = None
    k_source: str = "given"
    batch: float | None = None
    schema: str = "v1"
    emitted: float | None = None
    efficiency: float | None = None
    series: int = 1
    notes: tuple[str, ...] = ()
    draft_lengths: tuple[int, ...] = ()  # the lengths the engine drafted at, where known
    version: str | None = None  # the engine version whose format this was read as
    # (verifications, accepted draft tokens) of each request, where the report gives them one by one
    requests: tuple[tuple[float, float], ...] = ()
    drafted_per_position: tuple[float, ...] = ()  # drafts that reached each position, where the engine counts them


@dataclass(frozen=True)
class CounterNames:
    """An engine's full names of the four counters (an empty name: the engine does not write that count)."""

    drafts: str = ""
    draft_tokens: str = ""
    accepted: str = ""
    per_position: str = ""
    position_label: str = "position"

    @classmethod
    def spec_decode(cls, prefix: str) -> CounterNames:
        """The names vLLM's V1 engine gives them (and llama.cpp's server after it), under ``prefix``."""
        stem = f"{prefix}spec_decode_num"
        return cls(f"{stem}_drafts_total", f"{stem}_draft_tokens_total", f"{stem}_accepted_tokens_total",
                   f"{stem}_accepted_tokens_per_pos_total")  # fmt: skip


HELP = {
    "drafts": "Verifications of a draft.",
    "draft_tokens": "Drafted tokens.",
    "accepted": "Accepted draft tokens.",
    "per_position": "Drafts whose token at the position was accepted.",
}


def counter_families(names: CounterNames, rows: Sequence[tuple[Labels, SpecCounts]]) -> list[Family]:
    """The counts of each labelled series in ``rows`` as counter families under ``names``; a count whose name is
    empty is not written, and each position of ``per_position`` is one series with the position as a label."""
    families = []
    for kind, help_text in HELP.items():
        name = getattr(names, kind)
        if not name:
            continue
        if kind == "per_position":
            values = tuple(
                ((*labels, (names.position_label, str(position))), float(value))
                for labels, counts in rows
                for position, value in enumerate(counts.per_position)
            )
        else:
            values = tuple((labels, float(getattr(counts, kind))) for labels, counts in rows)
        families.append(Family(name, "counter", values, help_text))
    return families
