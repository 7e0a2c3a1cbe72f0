"""llama.cpp's statistics line, the one reader of it for logs, reports and ``measure``.

At ``-lv 4`` llama-server logs, per drafter (``common/speculative.cpp``), ``statistics <type>: #calls(b,g,a) =
B G A, #gen drafts = ..., #acc drafts = ..., #gen tokens = ..., #acc tokens = ...`` (older builds print one
``#calls``), and in build b11312 further fields and ``dur(b,g,a) = B, G, A ms``, the time spent beginning,
generating and accepting drafts.  Every count is cumulative since the server started, so the last line of
each drafter holds its total.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STATISTICS_LINE = re.compile(
    r"statistics\s+(?P<kind>[\w-]+)\s*:\s*#calls(?:\(b,g,a\))?\s*=\s*(?P<b>\d+)(?:\s+(?P<g>\d+)\s+(?P<a>\d+))?,\s*"
    r"#gen drafts\s*=\s*(?P<drafts>\d+),\s*#acc drafts\s*=\s*(?P<acc_drafts>\d+),\s*"
    r"#gen tokens\s*=\s*(?P<tokens>\d+),\s*#acc tokens\s*=\s*(?P<acc_tokens>\d+)"
    r"(?:[^\n]*?dur\(b,g,a\)\s*=\s*(?P<dur_b>[0-9.]+),\s*(?P<dur_g>[0-9.]+),\s*(?P<dur_a>[0-9.]+)\s*ms)?"
)


@dataclass(frozen=True)
class DrafterStatistics:
    """One statistics line: one drafter's counts since the server started."""

    drafter: str  # the speculative type: draft-simple, ngram-simple, ...
    accept_calls: int | None  # the a of #calls(b,g,a): verifications; None where the build prints one count
    drafts: int
    accepted_drafts: int
    tokens: int  # drafted tokens
    accepted_tokens: int
    draft_ms: float | None  # the g of dur(b,g,a): time generating drafts; None where the line has no dur


def _read(match: re.Match[str]) -> DrafterStatistics:
    return DrafterStatistics(
        drafter=match["kind"],
        accept_calls=int(match["a"]) if match["a"] is not None else None,
        drafts=int(match["drafts"]),
        accepted_drafts=int(match["acc_drafts"]),
        tokens=int(match["tokens"]),
        accepted_tokens=int(match["acc_tokens"]),
        draft_ms=float(match["dur_g"]) if match["dur_g"] is not None else None,
    )


def has_statistics(text: str) -> bool:
    return STATISTICS_LINE.search(text) is not None


def last_statistics(text: str, *, timed: bool = False) -> dict[str, DrafterStatistics]:
    """The last statistics line of each drafter (the totals), in the order the drafters first appear; with
    ``timed``, the last line that has its dur(b,g,a)."""
    last: dict[str, DrafterStatistics] = {}
    for match in STATISTICS_LINE.finditer(text):
        line = _read(match)
        if not timed or line.draft_ms is not None:
            last[line.drafter] = line
    return last
