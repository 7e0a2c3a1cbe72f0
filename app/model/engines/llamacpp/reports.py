"""What llama.cpp reports and how the product reads it: its Prometheus series (for the rules, the watch and the canary's
decode time), its report and step-time formats, and how measure drives a live server of it.

llama.cpp's step times: llama-server writes no file of them; ``specdec-lab measure --batch`` times its
passes and writes the CSV :mod:`app.model.live.step_fit` reads, so there is no format of its own here.

llama.cpp's statistics line, the one reader of it for logs, reports and ``measure``.

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

What a live llama-server says of its speculation, as ``measure`` reads it between requests: the
``llamacpp:spec_decode_*`` counters of ``/metrics`` (``tools/server/server-task.cpp``, with ``--metrics``), all
0 until the server has drafted.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.model.counters.counts import SpecCounts
from app.model.engines import base, reports, step_times
from app.model.engines.base import LiveFormat
from app.model.engines.live import LiveReadError, per_position_k, prefixed_spec_counts
from app.model.engines.llamacpp.versions import B11312, NAME, REPOSITORY, SERVER_CONTEXT, SERVER_TASK
from app.model.engines.reports import ErrorKind, fail

HOW_TO_APPLY = (  # what the off-schedule alert tells an operator to do
    "llama.cpp runs one k at every batch: restart llama-server with the flags specdec-lab config --engine "
    "llamacpp writes for this batch (--spec-draft-n-max, or the n-gram size, at this k; without --spec-type when "
    "it is 0)"
)


# PR #26389's /metrics spec counters (2026-10, build b11312); b11434 exports the same series
# (tools/server/server-task.cpp of both builds' source packages).
_SPEC_COUNTERS = base.RulesMetrics(
    running="llamacpp:requests_processing",
    scrape_format="llamacpp-metrics",
    drafts="llamacpp:spec_decode_num_drafts_total",
    draft_tokens="llamacpp:spec_decode_num_draft_tokens_total",
    accepted="llamacpp:spec_decode_num_accepted_tokens_total",
    per_position="llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
    k_from="positions",
    loses=(
        "llama-server exports /metrics only when started with --metrics",
        "the per-position series appear once a request that drafted has finished: until then after a start "
        "there is no p and no k",
        "steps where the n-gram drafter found nothing to draft are plain decoding and are not verifications: "
        "tokens per verification and the speedup cover the steps that drafted",
    ),
)


RULES_METRICS = {
    "2026-03": base.RulesMetrics(
        running="llamacpp:requests_processing",
        scrape_format="llamacpp-metrics",
        missing="llama.cpp 2026-03 reports speculation only in its log: llamacpp:spec_decode_num_drafts_total, "
        "llamacpp:spec_decode_num_accepted_tokens_total and llamacpp:spec_decode_num_accepted_tokens_per_pos_total "
        "came with PR #26389 (2026-10, build b11312)",
    ),
    "2026-10": _SPEC_COUNTERS,
    "b11434": _SPEC_COUNTERS,
}


SERVER_TASK_METRICS = base.Source(
    REPOSITORY,
    "tools/server/server-task.cpp",
    B11312,
    "/metrics counters tokens_predicted_total (metrics.predict.count) and tokens_predicted_seconds_total "
    "(metrics.predict.time / 1e6), prefixed llamacpp:",
)

DECODE_TIME = base.DecodeTime(
    seconds="llamacpp:tokens_predicted_seconds_total",
    tokens="llamacpp:tokens_predicted_total",
    sources=(SERVER_TASK_METRICS,),
    note="seconds spent generating over tokens generated, added when each request finishes: an interval counts "
    "the requests that finished in it",
)


STEP_TIMES: tuple[step_times.StepTimeFormat, ...] = ()


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
    marker=PREFIX,
    native=True,
    counts=spec_counts,
    k_of=per_position_k,  # its per-position series appear once it has drafted, one per position up to n_max
    sources=(SERVER_TASK, SERVER_CONTEXT),
    body=completion,
    completion_path="/completion",
    version_path=None,
    batches_itself=False,
    setup_hint="start llama-server with --metrics",
)


PROMETHEUS = reports.PrometheusNames(
    prefix="llamacpp",
    running="requests_processing",
    counters=("spec_decode_num_drafts", "spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens"),
)


# The per-request line of tools/server/server-context.cpp (print_timings): "draft acceptance rate = R (A accepted /
# G generated)" in older builds; "draft acceptance = R (...), mean len = L" followed at -lv 4 by "acc per pos = (...)"
# (ggml-org/llama.cpp @ 001d906a6d86, the stored commit read); and "..., mean acceptance length = L, acceptance rate
# per position = (...)" in builds with PR #24536.  L = 1 + accepted / verifications and each rate is the share of
# the request's verifications accepting at least i + 1 tokens (three decimals).
ACCEPTANCE_LINE = re.compile(
    r"draft acceptance(?P<old> rate)?\s*=\s*[0-9.]+%?\s*\(\s*(?P<accepted>\d+)\s*accepted\s*/\s*"
    r"(?P<generated>\d+)\s*generated\s*\)(?:,\s*mean (?:len|acceptance length)\s*=\s*(?P<length>[0-9.]+))?"
    r"(?:,\s*acceptance rate per position\s*=\s*\((?P<rates>[0-9.,\s]*)\))?"
    r"(?:[ \t]*\r?\n[^\n]*?\bacc per pos\s*=\s*\((?P<trace_rates>[0-9.,\s]*)\))?"
)


N_MAX_LINE = re.compile(r"\bn_max\s*=\s*(\d+)")


# Lines of the log about drafts, read or not, and each as the reader reads it in full.
_ACCEPTANCE_MENTION = re.compile(r"(?m)^[^\n]*\bdraft acceptance\b[^\n]*$")
_PER_POSITION_MENTION = re.compile(r"(?m)^[^\n]*\bper pos[^\n]*$")
_PER_POSITION_LINE = re.compile(r"\bacc per pos\s*=\s*\([0-9.,\s]*\)\s*$")


# The series of /metrics about drafts (tools/server/server-task.cpp) and the timings fields of a response.
SPEC_SERIES = (_SPEC_COUNTERS.drafts, _SPEC_COUNTERS.draft_tokens, _SPEC_COUNTERS.accepted, _SPEC_COUNTERS.per_position)
TIMINGS_FIELDS = ("draft_n", "draft_n_accepted")


def unread_lines(text: str) -> list[str]:
    """The lines of a llama-server log about drafts that the log reader does not read in full: statistics lines,
    per-request 'draft acceptance' lines and their 'acc per pos' lines printed otherwise than it knows."""
    unread = unread_statistics(text)
    for mention in _ACCEPTANCE_MENTION.finditer(text):
        line = mention.group(0)
        match = ACCEPTANCE_LINE.search(line)
        if match is None or line[match.end() :].strip():
            unread.append(line.strip())
    unread += [
        mention.group(0).strip()
        for mention in _PER_POSITION_MENTION.finditer(text)
        if _PER_POSITION_LINE.search(mention.group(0)) is None
        and _ACCEPTANCE_MENTION.search(mention.group(0)) is None
        and STATISTICS_MENTION.search(mention.group(0)) is None
    ]
    return unread


def unread_series(text: str) -> list[str]:
    """The llamacpp:spec_* series of a /metrics scrape that the metrics reader does not know."""
    names = re.findall(r"(?m)^(llamacpp:spec_[\w:]*)", text)
    return sorted({name for name in names if name not in SPEC_SERIES})


def unread_timings(timings: Mapping[str, Any]) -> list[str]:
    """The fields of a response's timings about drafts that the timings reader does not know."""
    return sorted(name for name in timings if "draft" in name and name not in TIMINGS_FIELDS)


EXAMPLE = {name: re.compile(rf"\b{name}\s*=\s*(\d+)\s*$", re.M) for name in ("n_draft", "n_drafted", "n_accept")}


def _read_metrics(text: str, payload: Any, options: reports.ReadOptions) -> list[reports.Measurement]:
    found, running = reports.found_groups(
        text, PROMETHEUS, options.label, "llama.cpp: no llamacpp:spec_decode_* series"
    )
    group = found.get("") or next(iter(found.values()))
    sums = group.sums
    missing = [stem for stem in PROMETHEUS.counters if stem not in sums]
    if missing:
        raise fail(
            ErrorKind.MISSING_COUNTER,
            f"llama.cpp: missing {', '.join(f'llamacpp:{stem}_total' for stem in missing)} (build b11312 or later)",
        )
    per_position = reports.positions_in_order(
        group.positions.get("spec_decode_num_accepted_tokens_per_pos", {}), "llama.cpp per-position counters"
    )
    notes = ["k = the number of positions /metrics reports: the configured --spec-draft-n-max (or the n-gram maximum)"]
    if not per_position:
        notes = [
            "no per-position series yet (it appears once a request that drafted has finished): give k "
            "(--spec-draft-n-max)"
        ]
    return [
        reports.counter_measurement(
            NAME,
            "llamacpp-metrics",
            None,
            sums["spec_decode_num_drafts"],
            sums["spec_decode_num_draft_tokens"],
            sums["spec_decode_num_accepted_tokens"],
            per_position,
            options,
            batch=running,
            version="2026-10",
            notes=tuple(notes),
            k_source="per-position series: the configured maximum draft length",
        )
    ]


def _detect_log(text: str, payload: Any) -> bool:
    return payload is None and (ACCEPTANCE_LINE.search(text) is not None or has_statistics(text))


def _sum_positions(vectors: list[tuple[float, ...]]) -> tuple[float, ...]:
    width = max((len(vector) for vector in vectors), default=0)
    return tuple(sum(vector[i] for vector in vectors if i < len(vector)) for i in range(width))


def _line_positions(line: re.Match[str], cycles: float) -> tuple[float, ...] | None:
    """Per-position counts of one per-request line: rate * verifications, the whole numbers the engine counted where
    rounding each gives them (the rates carry three decimals, so each count is known to 0.0005 * verifications) and
    they sum to the line's accepted tokens, else scaled to those."""
    rates = parse_rates(line["rates"] if line["rates"] is not None else line["trace_rates"])
    accepted = int(line["accepted"])
    if accepted == 0:
        return ()
    if not rates or cycles <= 0:
        return None
    raw = [rate * cycles for rate in rates]
    total = sum(raw)
    if total <= 0 or abs(total - accepted) > 0.0005 * cycles * len(raw) + 1.0:
        return None
    whole = [float(round(value)) for value in raw]
    if sum(whole) == accepted and all(
        abs(value - count) <= 0.0005 * cycles + 1e-9 for value, count in zip(raw, whole, strict=True)
    ):
        return tuple(whole)
    return tuple(min(value * accepted / total, cycles) for value in raw)


def _read_log(text: str, payload: Any, options: reports.ReadOptions) -> list[reports.Measurement]:
    """Per-request acceptance lines (summed) or the cumulative statistics lines (the last of each type)."""
    statistics = last_statistics(text)  # cumulative since the server started: the last line holds the total
    lines = list(ACCEPTANCE_LINE.finditer(text))
    notes: list[str] = []
    k, source = options.k, "given (--spec-draft-n-max)"
    if k is None:
        configured = N_MAX_LINE.findall(text)
        if configured:
            k, source = int(configured[-1]), "n_max in the log's speculative start-up line"
    version = "2026-03" if lines and all(line["old"] for line in lines) else "2026-10"
    unread = unread_lines(text)
    if unread:
        notes.append(f"{len(unread)} line(s) about drafts in a format this reader does not know, not read: {unread[0]}")
    cycles: float | None
    positions: tuple[float, ...] | None = None
    requests: list[tuple[float, float]] = []  # (verifications, accepted) per request line
    if statistics and all(line.accept_calls is not None for line in statistics.values()):
        accepted = float(sum(line.accepted_tokens for line in statistics.values()))
        generated = float(sum(line.tokens for line in statistics.values()))
        cycles = float(sum(line.accept_calls or 0 for line in statistics.values()))
        notes.append(
            f"statistics lines are cumulative since the server started: the last line of each type "
            f"({', '.join(sorted(statistics))}) is the total"
        )
        counted = [line.position_counts() for line in statistics.values()]
        if all(vector is not None for vector in counted):
            positions = _sum_positions([vector for vector in counted if vector is not None])
            notes.append(
                "per-position counts = #acc rate/pos x the verifications (a of #calls(b,g,a)), scaled to sum to "
                "#acc tokens: common_speculative_print_stats prints n_acc_tokens_per_pos / n_call_accept to three "
                "decimals (common/speculative.cpp)"
            )
    elif lines and all(line["length"] is not None for line in lines):
        accepted = float(sum(int(line["accepted"]) for line in lines))
        generated = float(sum(int(line["generated"]) for line in lines))
        cycles = 0.0
        per_line: list[tuple[float, ...] | None] = []
        for line in lines:
            length = float(line["length"])
            line_cycles = 0.0
            if int(line["accepted"]) > 0:
                if length <= 1.0:
                    raise fail(ErrorKind.INCONSISTENT, "llama.cpp: accepted tokens but mean len 1.00")
                line_cycles = float(round(int(line["accepted"]) / (length - 1.0)))
            cycles += line_cycles
            requests.append((line_cycles, float(line["accepted"])))
            per_line.append(_line_positions(line, line_cycles))
        notes.append(
            f"{len(lines)} per-request 'draft acceptance' lines summed; verifications = accepted / (mean length - 1) "
            "per line, to the nearest whole number"
        )
        if all(vector is not None for vector in per_line):
            positions = _sum_positions([vector for vector in per_line if vector is not None])
            notes.append(
                "per-position counts = the line's acceptance rate per position x its verifications, the whole numbers "
                "where they sum to its accepted tokens, else scaled to them (tools/server/server-context.cpp prints "
                "n_accepted_per_pos / verification steps to three decimals)"
            )
        if cycles == 0:
            cycles = None
    else:
        accepted = float(sum(int(line["accepted"]) for line in lines))
        generated = float(sum(int(line["generated"]) for line in lines))
        cycles = None
        notes.append(f"{len(lines)} 'draft acceptance rate' lines summed (an older build: no mean len)")
    if accepted > generated:
        raise fail(ErrorKind.INCONSISTENT, f"accepted ({accepted:g}) exceeds generated draft tokens ({generated:g})")
    if generated <= 0:
        raise fail(ErrorKind.ZERO_DRAFTS, "no draft tokens were generated")
    if k is None:
        raise fail(
            ErrorKind.UNKNOWN_K,
            "llama.cpp: the log does not say the configured draft length: give k (--spec-draft-n-max), which is "
            "never guessed from a mean",
        )
    if cycles is None:
        cycles = generated / k
        notes.append("verifications estimated as generated / k: drafts assumed full length")
    elif lines and not statistics:
        cycles = max(cycles, generated / k)  # a draft holds at most k tokens
    per_position: tuple[float, ...] = ()
    if positions is not None and sum(positions) > 0:
        if len(positions) > k:
            raise fail(
                ErrorKind.INCONSISTENT,
                f"llama.cpp: the log accepts up to {len(positions)} tokens per verification, more than k = {k}",
            )
        per_position = positions + (0.0,) * (k - len(positions))  # positions never reached print no rate
    counts = (cycles, generated, accepted)
    return reports.single_class(
        NAME, "llamacpp-log", options, counts, k, source, notes, per_position, version, requests=tuple(requests)
    )


def _read_timings(text: str, payload: Any, options: reports.ReadOptions) -> list[reports.Measurement]:
    items = payload if isinstance(payload, list) else [payload]
    drafted = accepted = 0.0
    count = 0
    for index, item in enumerate(items):
        timings = item.get("timings", item) if isinstance(item, Mapping) else None
        if not isinstance(timings, Mapping) or "draft_n" not in timings:
            continue
        drafted += reports.number(timings["draft_n"], f"response {index} timings.draft_n")
        accepted += reports.number(timings.get("draft_n_accepted", 0), f"response {index} timings.draft_n_accepted")
        count += 1
    if count == 0 or drafted <= 0:
        raise fail(ErrorKind.ZERO_DRAFTS, "llama.cpp: no response with timings.draft_n > 0")
    if options.k is None:
        raise fail(
            ErrorKind.UNKNOWN_K,
            "llama.cpp timings give drafted and accepted tokens but not the draft length: give k (--spec-draft-n-max)",
        )
    note = (
        f"{count} responses' timings summed; timings carry no count of verifications, so drafts are taken as full "
        "length (use /metrics for the exact count)"
    )
    counts = (drafted / options.k, drafted, accepted)
    return reports.single_class(
        NAME, "llamacpp-timings", options, counts, options.k, "given (--spec-draft-n-max)", [note], version="2026-10"
    )


def _detect_example(text: str, payload: Any) -> bool:
    found = EXAMPLE["n_drafted"].search(text) is not None and EXAMPLE["n_accept"].search(text) is not None
    return payload is None and found


def _read_example(text: str, payload: Any, options: reports.ReadOptions) -> list[reports.Measurement]:
    found = {name: pattern.findall(text) for name, pattern in EXAMPLE.items()}
    drafted, accepted = float(found["n_drafted"][-1]), float(found["n_accept"][-1])
    k, source = options.k, "given"
    if k is None and found["n_draft"]:
        k, source = int(found["n_draft"][-1]), "n_draft"
    if k is None or k < 1:
        raise fail(ErrorKind.UNKNOWN_K, "the summary has no n_draft: give k (--spec-draft-n-max)")
    if drafted <= 0:
        raise fail(ErrorKind.ZERO_DRAFTS, "n_drafted is 0: nothing was drafted")
    if accepted > drafted:
        raise fail(ErrorKind.INCONSISTENT, f"n_accept ({accepted:g}) exceeds n_drafted ({drafted:g})")
    note = "verifications estimated as n_drafted / n_draft: drafts cut short count as full"
    return reports.single_class(
        NAME, "llamacpp-speculative", options, (drafted / k, drafted, accepted), k, source, [note]
    )


REPORTS = (
    reports.ReportFormat(
        "llamacpp-timings",
        NAME,
        "llama.cpp responses' timings JSON: draft_n and draft_n_accepted",
        ("2026-10", "b11434"),
        reports.json_with("draft_n_accepted"),
        _read_timings,
        verifications="timings.draft_n",
    ),
    reports.ReportFormat(
        "llamacpp-metrics",
        NAME,
        "llama.cpp /metrics (Prometheus text): llamacpp:spec_decode_* counters per position",
        ("2026-10", "b11434"),
        reports.text_matching(r"^llamacpp:spec_decode_"),
        _read_metrics,
        verifications="llamacpp:spec_decode_num_drafts_total",
    ),
    reports.ReportFormat(
        "llamacpp-log",
        NAME,
        "llama.cpp server log: draft acceptance lines, statistics lines",
        ("2026-03", "2026-10", "b11434"),
        _detect_log,
        _read_log,
        verifications="the log's 'draft acceptance' lines (mean len) or statistics lines (#calls)",
    ),
    reports.ReportFormat(
        "llamacpp-speculative",
        NAME,
        "llama.cpp speculative example summary: n_draft, n_drafted, n_accept",
        ("2026-03", "2026-10", "b11434"),
        _detect_example,
        _read_example,
        verifications="n_drafted",
    ),
)
