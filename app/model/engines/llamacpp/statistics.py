"""llama.cpp's statistics line, the one reader of it for logs, reports and ``measure``.

At ``-lv 4`` llama-server logs, per drafter (``common/speculative.cpp``), ``statistics <type>: #calls(b,g,a) =
B G A, #gen drafts = ..., #acc drafts = ..., #gen tokens = ..., #acc tokens = ...`` (older builds print one
``#calls``), and in build b11312 further fields and ``dur(b,g,a) = B, G, A ms``, the time spent beginning,
generating and accepting drafts.  Every count is cumulative since the server started, so the last line of
each drafter holds its total.

Once a drafter has been verified (``n_call_accept > 0``) the line also carries ``#mean acc len = M, #acc rate/pos =
(r1, r2, ...)``: ``common_speculative_print_stats`` in ggml-org/llama.cpp ``common/speculative.cpp`` @ 001d906a6d86
(the stored commit read; b11312 prints the same, read in llama-cpp-python 0.3.36's sdist at common/speculative.cpp
line 2964) prints
``n_acc_tokens_per_pos[i] / n_call_accept`` with three decimals, where ``n_acc_tokens_per_pos[i]`` counts the
verifications that accepted at least ``i + 1`` tokens.  So ``r_i * a`` (``a`` of ``#calls(b,g,a)``) is the count of
position ``i + 1``, to within ``0.0005 * a``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

STATISTICS_LINE = re.compile(
    r"statistics\s+(?P<kind>[\w-]+)\s*:\s*#calls(?:\(b,g,a\))?\s*=\s*(?P<b>\d+)(?:\s+(?P<g>\d+)\s+(?P<a>\d+))?,\s*"
    r"#gen drafts\s*=\s*(?P<drafts>\d+),\s*#acc drafts\s*=\s*(?P<acc_drafts>\d+),\s*"
    r"#gen tokens\s*=\s*(?P<tokens>\d+),\s*#acc tokens\s*=\s*(?P<acc_tokens>\d+)"
    r"(?:,\s*#mean acc len\s*=\s*(?P<mean>[0-9.]+))?(?:,\s*#acc rate/pos\s*=\s*\((?P<rates>[0-9.,\s]*)\))?"
    r"(?:[^\n]*?dur\(b,g,a\)\s*=\s*(?P<dur_b>[0-9.]+),\s*(?P<dur_g>[0-9.]+),\s*(?P<dur_a>[0-9.]+)\s*ms)?"
)


# Any line that names a drafter's statistics, read or not: what ``unread_statistics`` holds to the pattern above.
STATISTICS_MENTION = re.compile(r"(?m)^[^\n]*\bstatistics\s+[\w-]+\s*:[^\n]*$")


# What may follow ``#acc tokens = N`` on a line read in full: the fields b11312 and b11434 print, in their order.
_KNOWN_TAIL = re.compile(
    r"(?:,\s*#mean acc len\s*=\s*[0-9.]+)?(?:,\s*#acc rate/pos\s*=\s*\([0-9.,\s]*\))?"
    r"(?:,\s*dur\(b,g,a\)\s*=\s*[0-9.]+,\s*[0-9.]+,\s*[0-9.]+\s*ms)?\s*"
)


def unread_statistics(text: str) -> list[str]:
    """The statistics lines this reader does not read in full: a field it does not know, or a line it does not
    match at all (a build that prints them otherwise)."""
    unread = []
    for mention in STATISTICS_MENTION.finditer(text):
        line = mention.group(0)
        match = STATISTICS_LINE.search(line)
        if match is None or _KNOWN_TAIL.fullmatch(line, match.end("acc_tokens")) is None:
            unread.append(line.strip())
    return unread


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
    rates: tuple[float, ...] = ()  # #acc rate/pos: share of verifications accepting at least i + 1 tokens

    def position_counts(self) -> tuple[float, ...] | None:
        """Per-position accepted counts (verifications accepting at least i + 1 tokens); None where the line has no
        rates although the drafter was verified, or rates that do not agree with its totals.

        Position 1 is ``#acc drafts`` exactly (a draft counts as accepted when it accepts at least one token); the
        others are ``#acc rate/pos`` times the verifications, whole numbers where that sums to ``#acc tokens``,
        else scaled to it (the rates carry three decimals, so ``0.0005 * a`` per position)."""
        calls = self.accept_calls
        if calls is None:
            return None
        if calls == 0 or self.accepted_tokens == 0:
            return tuple(0.0 for _ in self.rates)
        if not self.rates:
            return None
        raw = [rate * calls for rate in self.rates]
        if abs(sum(raw) - self.accepted_tokens) > 0.0005 * calls * len(raw) + 1.0:
            return None
        counts = [float(self.accepted_drafts), *(float(round(value)) for value in raw[1:])]
        if sum(counts) == self.accepted_tokens:
            return tuple(counts)
        rest, target = sum(raw[1:]), self.accepted_tokens - self.accepted_drafts
        if rest <= 0 or target < 0:
            return None
        return (
            float(self.accepted_drafts),
            *(min(value * target / rest, float(self.accepted_drafts)) for value in raw[1:]),
        )


def _read(match: re.Match[str]) -> DrafterStatistics:
    return DrafterStatistics(
        drafter=match["kind"],
        accept_calls=int(match["a"]) if match["a"] is not None else None,
        drafts=int(match["drafts"]),
        accepted_drafts=int(match["acc_drafts"]),
        tokens=int(match["tokens"]),
        accepted_tokens=int(match["acc_tokens"]),
        draft_ms=float(match["dur_g"]) if match["dur_g"] is not None else None,
        rates=parse_rates(match["rates"]),
    )


def parse_rates(text: str | None) -> tuple[float, ...]:
    """'0.881, 0.772, 0.744' -> (0.881, 0.772, 0.744); () for None or an empty list."""
    if not text or not text.strip():
        return ()
    return tuple(float(item) for item in text.split(",") if item.strip())


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
