"""llama.cpp's reports read into counts of one class (see :mod:`app.model.live.engine_metrics`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.model.engines import reports
from app.model.engines.llamacpp.statistics import (
    STATISTICS_MENTION,
    has_statistics,
    last_statistics,
    parse_rates,
    unread_statistics,
)
from app.model.engines.llamacpp.versions import NAME
from app.model.engines.reports import ErrorKind, fail

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
SPEC_SERIES = (
    "llamacpp:spec_decode_num_drafts_total",
    "llamacpp:spec_decode_num_draft_tokens_total",
    "llamacpp:spec_decode_num_accepted_tokens_total",
    "llamacpp:spec_decode_num_accepted_tokens_per_pos_total",
)
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


def _detect_metrics(text: str, payload: Any) -> bool:
    return payload is None and re.search(r"(?m)^llamacpp:spec_decode_", text) is not None


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


def _detect_timings(text: str, payload: Any) -> bool:
    return payload is not None and reports.has_key(payload, ("draft_n_accepted",))


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
        _detect_timings,
        _read_timings,
        verifications="timings.draft_n",
    ),
    reports.ReportFormat(
        "llamacpp-metrics",
        NAME,
        "llama.cpp /metrics (Prometheus text): llamacpp:spec_decode_* counters per position",
        ("2026-10", "b11434"),
        _detect_metrics,
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
