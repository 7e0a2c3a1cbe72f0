"""llama.cpp (llama-server): everything specdec-lab knows of it.

Versions, named by the month of the change that set their format:

- ``2026-03``: ``-md DRAFT`` alone speculates; ``--draft-max`` (``--draft``, ``--draft-n``), ``--draft-min``
  and ``--draft-p-min`` (default 0.75); per-request log line ``draft acceptance rate = R (A accepted / G
  generated)``.
- ``2026-10`` (build b11312, the one vendored by llama-cpp-python 0.3.36 and tested live here): PR #22397
  removed ``--draft-max``/``--draft-min``/``--draft``/``--draft-n`` (llama-server exits on them) for
  ``--spec-draft-n-max``/``--spec-draft-n-min``; ``--spec-type`` chooses the drafter and defaults to
  ``none`` (``-md`` alone drafts nothing); ``--spec-draft-p-min`` defaults to 0.0; ``/metrics`` has
  ``llamacpp:spec_decode_num_drafts_total`` (verifications of a non-empty draft),
  ``..._num_draft_tokens_total``, ``..._num_accepted_tokens_total`` and
  ``..._num_accepted_tokens_per_pos_total{position}`` (from 0: drafts with at least position + 1 accepted,
  one series per position up to the configured maximum); the per-request line
  ``draft acceptance = R (A accepted / G generated), mean len = L`` (L = 1 + accepted / verifications);
  the ``-lv 4`` line ``statistics <type>: #calls(b,g,a) = B G A, #gen drafts = ..., #acc drafts = ...,
  #gen tokens = ..., #acc tokens = ...``, cumulative since the server started; ``timings.draft_n`` and
  ``timings.draft_n_accepted`` in each response.  Per-request ``speculative.n_max`` is compiled out in
  this build (``tools/server/server-schema.cpp``): one draft length per server.

llama.cpp takes one draft length for every batch (parallel slots), so the config carries the schedule's
k at the batch the user names.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.model.engines.base import (
    ConfigRequest,
    ConfigRuleError,
    EngineVersion,
    Exported,
    RulesMetrics,
    Source,
    describe_batches,
    differences,
    quoted,
)
from app.model.engines.reports import (
    ErrorKind,
    Measurement,
    PrometheusNames,
    ReadOptions,
    ReportFormat,
    counter_measurement,
    fail,
    groups,
    has_key,
    number,
    positions_in_order,
)

NAME = "llamacpp"
TITLE = "llama.cpp"
REPOSITORY = "ggml-org/llama.cpp"
B11312 = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"

ARG_CPP_2025 = Source(
    REPOSITORY, "common/arg.cpp", "145b6280d6aa1890e22457143dad0badb3fd6820", "--draft-max, --draft-min, --draft-p-min"
)
ARG_CPP = Source(REPOSITORY, "common/arg.cpp", B11312, "--spec-type, --spec-draft-n-max/-n-min/-p-min, removed flags")
COMMON_H = Source(REPOSITORY, "common/common.h", B11312, "common_params_speculative defaults: n_max 3, p_min 0.0")
SPECULATIVE_CPP = Source(
    REPOSITORY, "common/speculative.cpp", B11312, "spec types; statistics line (cumulative since start)"
)
SERVER_CONTEXT = Source(
    REPOSITORY, "tools/server/server-context.cpp", B11312, "draft acceptance line with mean len; spec counters"
)
SERVER_TASK = Source(REPOSITORY, "tools/server/server-task.cpp", B11312, "/metrics: llamacpp:spec_decode_*")

# Capabilities, set once per version below.
SPEC_FLAGS = "--spec-type and --spec-draft-* flags"  # PR #22397: the spec params refactor (the older flags removed)

VERSIONS = (
    EngineVersion(
        "2026-03",
        "2026-03",
        "before PR #22397: --draft-max/--draft-min/--draft-p-min (p_min 0.75); a draft model alone speculates",
        (ARG_CPP_2025,),
        "the older flags",
    ),
    EngineVersion(
        "2026-10",
        "2026-10",
        "PR #22397 spec params refactor (--spec-type, --spec-draft-n-max); build b11312 (llama-cpp-python 0.3.36)",
        (ARG_CPP, COMMON_H, SPECULATIVE_CPP, SERVER_CONTEXT, SERVER_TASK),
        "--spec-type draft-simple and --spec-draft-* flags; /metrics spec counters per position",
        capabilities=frozenset({SPEC_FLAGS}),
    ),
)
ALIASES = {"b11312": "2026-10"}

SPEC_TYPES = (
    "none",
    "draft-simple",
    "draft-eagle3",
    "draft-mtp",
    "draft-dflash",
    "draft-dspark",
    "ngram-simple",
    "ngram-map-k",
    "ngram-map-k4v",
    "ngram-mod",
    "ngram-cache",
)
WRITTEN_TYPES = ("draft-simple", "ngram-simple", "ngram-mod")
REMOVED = ("--draft", "--draft-n", "--draft-max", "--draft-min", "--draft-n-min")
PLACEHOLDER_MODEL = "<draft.gguf>"
DEFAULT_P_MIN = 0.0  # common_params_speculative_draft.p_min in common/common.h (b11312)
OLD_DEFAULT_P_MIN = 0.75


def spec_type(given: str | None, draft_path: str | None) -> str:
    if given is None or not given.strip():
        return "draft-simple"
    lowered = given.strip().lower().replace("_", "-")
    if lowered not in WRITTEN_TYPES:
        raise ValueError(f"llama.cpp --spec-type must be one of {', '.join(WRITTEN_TYPES)}; got {given!r}")
    return lowered


# ---------------------------------------------------------------------------
# Config writer


def write_config(request: ConfigRequest, version: EngineVersion) -> Exported:
    best = list(request.best_k)
    limit = request.batch_limit
    if not best or limit < 1:
        return Exported(None, [], "", ["nothing fits: llama-server cannot run this setup"])
    batch = min(request.batch, limit)
    k = best[batch - 1]
    if k == 0:
        return Exported(
            None, [], "", [f"k = 0 at batch {batch}: run llama-server without speculation"], runs=tuple([0] * limit)
        )
    kind = spec_type(request.method, request.draft_path)
    notes = [f"llama.cpp takes one draft length: the schedule's k = {k} at batch {batch} (--parallel {batch})"]
    placeholders: tuple[str, ...] = ()
    draft = request.draft_path
    if kind == "draft-simple" and not draft:
        draft, placeholders = PLACEHOLDER_MODEL, (PLACEHOLDER_MODEL,)
        notes.append("fill in -md: the draft model's GGUF file (or choose ngram-simple, which needs none)")
    config: dict[str, Any]
    if version.can(SPEC_FLAGS):
        if kind == "draft-simple":
            assert draft is not None
            flags = ["--spec-type", kind, "-md", draft, "--spec-draft-n-max", str(k), "--spec-draft-n-min", "0"]
            config = {"--spec-type": kind, "-md": draft, "--spec-draft-n-max": k, "--spec-draft-n-min": 0}
            notes.append(
                f"--spec-draft-p-min is left at its default {DEFAULT_P_MIN:g} (common/common.h): drafts are not cut "
                "short by the draft's confidence, as the i.i.d. model assumes"
            )
        elif kind == "ngram-simple":
            flags = ["--spec-type", kind, "--spec-ngram-simple-size-m", str(k)]
            config = {"--spec-type": kind, "--spec-ngram-simple-size-m": k}
            notes.append("ngram-simple drafts up to --spec-ngram-simple-size-m tokens found earlier in the context")
        else:
            flags = ["--spec-type", kind, "--spec-ngram-mod-n-max", str(k), "--spec-ngram-mod-n-min", "1"]
            config = {"--spec-type": kind, "--spec-ngram-mod-n-max": k, "--spec-ngram-mod-n-min": 1}
    else:
        if kind != "draft-simple":
            raise ValueError(f"llama.cpp {version.name} has no --spec-type: only a draft model (draft-simple)")
        assert draft is not None
        flags = ["-md", draft, "--draft-max", str(k), "--draft-min", "0"]
        config = {"-md": draft, "--draft-max": k, "--draft-min": 0}
        notes.append(f"--draft-p-min is left at {OLD_DEFAULT_P_MIN:g}, this version's default")
    flags += ["--parallel", str(batch)]
    config["--parallel"] = batch
    runs = [k] * limit
    differ = differences(best, runs)
    if differ:
        notes.append(
            f"llama-server runs k = {k} also at batches {describe_batches(differ)}, where the schedule differs"
        )
    text = "llama-server -m TARGET.gguf " + " ".join(quoted(flags))
    return Exported(config, flags, text, notes, runs=tuple(runs), differs_at=differ, placeholders=placeholders)


# ---------------------------------------------------------------------------
# Config reader: llama-server's argument parser, as far as speculation goes

_VALUED = {
    "--spec-type",
    "-md",
    "--spec-draft-model",
    "--model-draft",
    "--spec-draft-n-max",
    "--spec-draft-n-min",
    "--spec-draft-p-min",
    "--draft-p-min",
    "--spec-ngram-simple-size-m",
    "--spec-ngram-simple-size-n",
    "--spec-ngram-mod-n-max",
    "--spec-ngram-mod-n-min",
    "--spec-ngram-mod-n-match",
    "--parallel",
    "-np",
}
_VALUED_OLD = {"-md", "--model-draft", "--draft-max", "--draft", "--draft-n", "--draft-min", "--draft-n-min"} | {
    "--draft-p-min",
    "--parallel",
    "-np",
}


def parse_flags(flags: Sequence[str], version: EngineVersion) -> dict[str, str]:
    """The speculative flags as llama-server's common/arg.cpp takes them; a ConfigRuleError where it exits."""
    where = (ARG_CPP if version.can(SPEC_FLAGS) else ARG_CPP_2025).cite()
    valued = _VALUED if version.can(SPEC_FLAGS) else _VALUED_OLD
    parsed: dict[str, str] = {}
    index = 0
    while index < len(flags):
        flag = flags[index]
        if version.can(SPEC_FLAGS) and flag in REMOVED:
            raise ConfigRuleError(f"{flag}: the argument has been removed (llama-server exits 1)", where)
        if flag not in valued:
            raise ConfigRuleError(f"error: invalid argument: {flag}", where)
        if index + 1 >= len(flags):
            raise ConfigRuleError(f"error: {flag} expects a value", where)
        value = flags[index + 1]
        if flag == "--spec-type":
            for name in value.split(","):
                if name not in SPEC_TYPES:
                    raise ConfigRuleError(f"unknown speculative type: {name}", SPECULATIVE_CPP.cite())
            parsed[flag] = ",".join(filter(None, [parsed.get(flag, ""), value]))  # repeats append
        else:
            parsed[flag] = value
        index += 2
    return parsed


def _count(parsed: Mapping[str, str], names: Sequence[str], default: int, where: str) -> int:
    for name in names:
        if name in parsed:
            try:
                value = int(parsed[name])
            except ValueError:
                raise ConfigRuleError(f"{name}: invalid value {parsed[name]!r}", where) from None
            if value < 0:
                raise ConfigRuleError(f"{name}: invalid value", where)
            return value
    return default


def draft_length(flags: Sequence[str], version: EngineVersion) -> int:
    """The most tokens llama-server drafts per step with these flags (0: it does not speculate)."""
    where = (ARG_CPP if version.can(SPEC_FLAGS) else ARG_CPP_2025).cite()
    parsed = parse_flags(flags, version)
    draft = parsed.get("-md", parsed.get("--spec-draft-model", parsed.get("--model-draft")))
    if draft is not None and (not draft.strip() or "<" in draft or ">" in draft):
        raise ConfigRuleError(f"-md {draft!r} is not a file llama-server can load", where)
    if not version.can(SPEC_FLAGS):
        if draft is None:
            return 0
        return _count(parsed, ("--draft-max", "--draft", "--draft-n"), 16, where)
    types = [name for name in parsed.get("--spec-type", "none").split(",") if name != "none"]
    if not types:
        return 0  # --spec-type defaults to none: a draft model alone is loaded and unused
    kind = types[0]
    if kind.startswith("draft-"):
        if draft is None:
            raise ConfigRuleError(f"--spec-type {kind} needs a draft model (-md)", SPECULATIVE_CPP.cite())
        return _count(parsed, ("--spec-draft-n-max",), 3, where)
    if kind == "ngram-mod":
        return _count(parsed, ("--spec-ngram-mod-n-max",), 64, where)
    if kind == "ngram-cache":
        return 8
    return _count(parsed, ("--spec-ngram-simple-size-m",), 48, where)


def read_config(exported: Exported, version: EngineVersion, batch_limit: int) -> list[int]:
    return [draft_length(exported.flags, version)] * batch_limit


# ---------------------------------------------------------------------------
# Reports

PROMETHEUS = PrometheusNames(
    prefix="llamacpp",
    running="requests_processing",
    counters=("spec_decode_num_drafts", "spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens"),
)
ACCEPTANCE_LINE = re.compile(
    r"draft acceptance(?P<old> rate)?\s*=\s*[0-9.]+%?\s*\(\s*(?P<accepted>\d+)\s*accepted\s*/\s*"
    r"(?P<generated>\d+)\s*generated\s*\)(?:,\s*mean len\s*=\s*(?P<length>[0-9.]+))?"
)
STATISTICS_LINE = re.compile(
    r"statistics\s+(?P<kind>[\w-]+)\s*:\s*#calls(?:\(b,g,a\))?\s*=\s*(?P<b>\d+)(?:\s+(?P<g>\d+)\s+(?P<a>\d+))?,\s*"
    r"#gen drafts\s*=\s*(?P<drafts>\d+),\s*#acc drafts\s*=\s*(?P<acc_drafts>\d+),\s*"
    r"#gen tokens\s*=\s*(?P<tokens>\d+),\s*#acc tokens\s*=\s*(?P<acc_tokens>\d+)"
)
N_MAX_LINE = re.compile(r"\bn_max\s*=\s*(\d+)")
EXAMPLE = {name: re.compile(rf"\b{name}\s*=\s*(\d+)\s*$", re.M) for name in ("n_draft", "n_drafted", "n_accept")}


def _detect_metrics(text: str, payload: Any) -> bool:
    return payload is None and re.search(r"(?m)^llamacpp:spec_decode_", text) is not None


def _read_metrics(text: str, payload: Any, options: ReadOptions) -> list[Measurement]:
    found, running = groups(text, PROMETHEUS, options.label)
    if not found:
        raise fail(ErrorKind.UNRELATED, "llama.cpp: no llamacpp:spec_decode_* series")
    group = found.get("") or next(iter(found.values()))
    sums = group.sums
    missing = [stem for stem in PROMETHEUS.counters if stem not in sums]
    if missing:
        raise fail(
            ErrorKind.MISSING_COUNTER,
            f"llama.cpp: missing {', '.join(f'llamacpp:{stem}_total' for stem in missing)} (build b11312 or later)",
        )
    per_position = positions_in_order(
        group.positions.get("spec_decode_num_accepted_tokens_per_pos", {}), "llama.cpp per-position counters"
    )
    notes = ["k = the number of positions /metrics reports: the configured --spec-draft-n-max (or the n-gram maximum)"]
    if not per_position:
        notes = [
            "no per-position series yet (it appears once a request that drafted has finished): give k "
            "(--spec-draft-n-max)"
        ]
    return [
        counter_measurement(
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
    return payload is None and (ACCEPTANCE_LINE.search(text) is not None or STATISTICS_LINE.search(text) is not None)


def _read_log(text: str, payload: Any, options: ReadOptions) -> list[Measurement]:
    """Per-request acceptance lines (summed) or the cumulative statistics lines (the last of each type)."""
    statistics: dict[str, re.Match[str]] = {}
    for match in STATISTICS_LINE.finditer(text):
        statistics[match["kind"]] = match  # cumulative since the server started: the last line holds the total
    lines = list(ACCEPTANCE_LINE.finditer(text))
    notes: list[str] = []
    k, source = options.k, "given (--spec-draft-n-max)"
    if k is None:
        configured = N_MAX_LINE.findall(text)
        if configured:
            k, source = int(configured[-1]), "n_max in the log's speculative start-up line"
    version = "2026-03" if lines and all(line["old"] for line in lines) else "2026-10"
    cycles: float | None
    if statistics and all(m["a"] is not None for m in statistics.values()):
        accepted = float(sum(int(m["acc_tokens"]) for m in statistics.values()))
        generated = float(sum(int(m["tokens"]) for m in statistics.values()))
        calls = [m["a"] for m in statistics.values()]
        cycles = float(sum(int(a) for a in calls)) if all(a is not None for a in calls) else None
        notes.append(
            f"statistics lines are cumulative since the server started: the last line of each type "
            f"({', '.join(sorted(statistics))}) is the total"
        )
    elif lines and all(line["length"] is not None for line in lines):
        accepted = float(sum(int(line["accepted"]) for line in lines))
        generated = float(sum(int(line["generated"]) for line in lines))
        cycles = 0.0
        for line in lines:
            length = float(line["length"])
            if int(line["accepted"]) > 0:
                if length <= 1.0:
                    raise fail(ErrorKind.INCONSISTENT, "llama.cpp: accepted tokens but mean len 1.00")
                cycles += round(int(line["accepted"]) / (length - 1.0))
        notes.append(
            f"{len(lines)} per-request 'draft acceptance' lines summed; verifications = accepted / (mean len - 1) "
            "per line, to the nearest whole number"
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
    return [
        Measurement(
            engine=NAME,
            format="llamacpp-log",
            label=None,
            cycles=cycles,
            draft_tokens=generated,
            accepted=accepted,
            k=k,
            k_source=source,
            notes=tuple(notes),
            draft_lengths=options.draft_lengths,
            version=version,
        )
    ]


def _detect_timings(text: str, payload: Any) -> bool:
    return payload is not None and has_key(payload, ("draft_n_accepted",))


def _read_timings(text: str, payload: Any, options: ReadOptions) -> list[Measurement]:
    items = payload if isinstance(payload, list) else [payload]
    drafted = accepted = 0.0
    count = 0
    for index, item in enumerate(items):
        timings = item.get("timings", item) if isinstance(item, Mapping) else None
        if not isinstance(timings, Mapping) or "draft_n" not in timings:
            continue
        drafted += number(timings["draft_n"], f"response {index} timings.draft_n")
        accepted += number(timings.get("draft_n_accepted", 0), f"response {index} timings.draft_n_accepted")
        count += 1
    if count == 0 or drafted <= 0:
        raise fail(ErrorKind.ZERO_DRAFTS, "llama.cpp: no response with timings.draft_n > 0")
    if options.k is None:
        raise fail(
            ErrorKind.UNKNOWN_K,
            "llama.cpp timings give drafted and accepted tokens but not the draft length: give k (--spec-draft-n-max)",
        )
    return [
        Measurement(
            engine=NAME,
            format="llamacpp-timings",
            label=None,
            cycles=drafted / options.k,
            draft_tokens=drafted,
            accepted=accepted,
            k=options.k,
            k_source="given (--spec-draft-n-max)",
            notes=(
                f"{count} responses' timings summed; timings carry no count of verifications, so drafts are taken "
                "as full length (use /metrics for the exact count)",
            ),
            draft_lengths=options.draft_lengths,
            version="2026-10",
        )
    ]


def _detect_example(text: str, payload: Any) -> bool:
    found = EXAMPLE["n_drafted"].search(text) is not None and EXAMPLE["n_accept"].search(text) is not None
    return payload is None and found


def _read_example(text: str, payload: Any, options: ReadOptions) -> list[Measurement]:
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
    return [
        Measurement(
            engine=NAME,
            format="llamacpp-speculative",
            label=None,
            cycles=drafted / k,
            draft_tokens=drafted,
            accepted=accepted,
            k=k,
            k_source=source,
            notes=("verifications estimated as n_drafted / n_draft: drafts cut short count as full",),
            draft_lengths=options.draft_lengths,
        )
    ]


REPORTS = (
    ReportFormat(
        "llamacpp-timings",
        NAME,
        "llama.cpp responses' timings JSON: draft_n and draft_n_accepted",
        ("2026-10",),
        _detect_timings,
        _read_timings,
    ),
    ReportFormat(
        "llamacpp-metrics",
        NAME,
        "llama.cpp /metrics (Prometheus text): llamacpp:spec_decode_* counters per position",
        ("2026-10",),
        _detect_metrics,
        _read_metrics,
    ),
    ReportFormat(
        "llamacpp-log",
        NAME,
        "llama.cpp server log: draft acceptance lines, statistics lines",
        ("2026-03", "2026-10"),
        _detect_log,
        _read_log,
    ),
    ReportFormat(
        "llamacpp-speculative",
        NAME,
        "llama.cpp speculative example summary: n_draft, n_drafted, n_accept",
        ("2026-03", "2026-10"),
        _detect_example,
        _read_example,
    ),
)


METHODS = WRITTEN_TYPES
HOW_TO_APPLY = (  # what the off-schedule alert tells an operator to do
    "llama.cpp runs one k at every batch: restart llama-server with the flags specdec-lab config --engine "
    "llamacpp writes for this batch (--spec-draft-n-max, or the n-gram size, at this k; without --spec-type when "
    "it is 0)"
)


def choose_method(given: str | None) -> str | None:
    """The --spec-type (None: draft-simple with a draft model)."""
    return spec_type(given, None) if given else None


# ---------------------------------------------------------------------------
# Prometheus rules: the series each version exports (tools/server/server-task.cpp, --metrics)

RULES_METRICS = {
    "2026-03": RulesMetrics(
        running="llamacpp:requests_processing",
        scrape_format="llamacpp-metrics",
        missing="llama.cpp 2026-03 reports speculation only in its log: llamacpp:spec_decode_num_drafts_total, "
        "llamacpp:spec_decode_num_accepted_tokens_total and llamacpp:spec_decode_num_accepted_tokens_per_pos_total "
        "came with PR #22397 (2026-10, build b11312)",
    ),
    "2026-10": RulesMetrics(
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
    ),
}
