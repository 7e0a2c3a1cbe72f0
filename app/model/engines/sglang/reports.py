"""What SGLang reports and how the product reads it: its Prometheus series (for the rules, the watch and the canary's
decode time), its report and step-time formats, and how measure drives a live server of it.

SGLang's step times: ``scripts/playground/bench_speculative.py`` JSON Lines (keys ``batch_size``,
``steps``, ``topk``, ``num_draft_tokens``, ``step_time`` in seconds), one object or a list of them.

SGLang exports no per-position counts; since PR #25689 it counts its verifications, ``sglang:spec_verify_calls_total``,
beside ``sglang:generation_tokens_total``, and since PR #25940 the draft length running now as the gauge
``sglang:spec_num_steps`` (``python/sglang/srt/observability/metrics_collector.py``); the verifications are
added when a request finishes, so a window's counts are whole once its requests have returned.  Every generated
token is either a verification's own or an accepted draft token or a request's first (from its prompt's pass), so
over a window the accepted draft tokens are the generated tokens less the verifications less the window's
requests.  A release before those (2026-03) exports neither, and its speculating server cannot be told from a plain
one here.  The ``sglang:spec_accept_length`` gauge covers SGLang's own logging interval, not a window of ours,
and is not read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from app.model.counters.counts import SpecCounts
from app.model.engines import base, reports, step_times
from app.model.engines.base import LiveFormat
from app.model.engines.live import samples, summed
from app.model.engines.reports import ErrorKind, fail
from app.model.engines.sglang.versions import METRICS, NAME
from app.model.engines.step_times import StepFitError

HOW_TO_APPLY = (  # what the off-schedule alert tells an operator to do
    "give SGLang the flags specdec-lab config --engine sglang writes (the adaptive config per batch tier, "
    "--speculative-adaptive-config, or one draft length where the algorithm takes one)"
)


_GAUGES_LOSE = (
    "no per-position counters: SGLang exports no acceptance per position, so the profile cannot be seen and p is "
    "the i.i.d. p that gives the measured tokens per verification at the running k",
)


# the spec counters and the k gauge of 2026-05 (sglang:spec_verify_calls_total, sglang:spec_num_steps)
_SINCE_2026_05 = base.RulesMetrics(
    running="sglang:num_running_reqs",
    scrape_format="sglang-metrics",
    verify_calls="sglang:spec_verify_calls_total",
    generated="sglang:generation_tokens_total",
    accept_length="sglang:spec_accept_length",
    running_k="sglang:spec_num_steps",
    k_from="gauge",
    loses=(
        *_GAUGES_LOSE,
        "no counter of drafted or accepted tokens: tokens per verification is sglang:generation_tokens_total / "
        "sglang:spec_verify_calls_total (each request's first token, from prefill, counts too), and p has no "
        "sampling interval",
        "sglang:spec_num_steps is a gauge of the tier running at the scrape: tiers run between scrapes are not "
        "seen, and a window whose batch crossed a tier mixes two k",
    ),
)


RULES_METRICS = {
    "2026-03": base.RulesMetrics(
        running="sglang:num_running_reqs",
        scrape_format="sglang-metrics",
        accept_length="sglang:spec_accept_length",
        missing="",
        loses=(
            *_GAUGES_LOSE,
            "only gauges: sglang:spec_accept_length is the mean of the last logging interval, so the window's "
            "tokens per verification is an unweighted mean of scraped values (busy and idle moments count alike, "
            "intervals between scrapes are lost) with no count of verifications: no interval for p and no "
            "minimum of drafts before an alert",
            "no gauge of the k running: the schedule check cannot be made (SGLang 2026-05 has sglang:spec_num_steps)",
        ),
    ),
    "2026-05": _SINCE_2026_05,
    "2026-08": _SINCE_2026_05,  # PR #33518 added per-request counts; the series are 2026-05's
}


DECODE_TIME = base.DecodeTime(
    seconds="sglang:inter_token_latency_seconds_sum",
    tokens="sglang:inter_token_latency_seconds_count",
    sources=(METRICS,),
    note="TokenizerMetricsCollector.observe_inter_token_latency adds each interval to the histogram's sum and the "
    "tokens it gave to its buckets, so the histogram's count is tokens and sum / count the per-token time",
)


def _detect(payload: Any) -> bool:
    return (isinstance(payload, dict) and "step_time" in payload) or isinstance(payload, list)


def _read(payload: Any) -> list[step_times.StepRow]:
    records = [payload] if isinstance(payload, dict) else payload
    rows = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise StepFitError(f"line {number}: each line must be a JSON object")
        try:
            batch = float(record["batch_size"])
            steps = int(record.get("steps", 0) or 0)
            topk = int(record.get("topk", 0) or 0)
            draft_tokens = int(record.get("num_draft_tokens", 0) or 0)
            seconds = float(record["step_time"])
        except (KeyError, TypeError, ValueError):
            raise StepFitError(f"line {number}: needs numeric batch_size and step_time (seconds)") from None
        if steps < 0 or topk < 0 or draft_tokens < 0 or steps > 64:
            raise StepFitError(f"line {number}: steps, topk and num_draft_tokens must be at least 0 (steps <= 64)")
        tokens = draft_tokens if steps else 1
        rows.append(step_times.step_row(batch, max(tokens, 1), seconds * 1e3, f"line {number}", steps, max(topk, 1)))
    return rows


STEP_TIMES = (
    step_times.StepTimeFormat(
        "sglang-bench-speculative",
        NAME,
        "SGLang bench_speculative.py JSON Lines: batch_size, steps, topk, num_draft_tokens, step_time (s)",
        _detect,
        _read,
        fallback=True,  # any list of objects: tried after the formats that name a key of their own
    ),
)


PREFIX = "sglang:"
VERIFY = "sglang:spec_verify_calls_total"
GENERATED = "sglang:generation_tokens_total"
STEPS = "sglang:spec_num_steps"


def _steps(text: str) -> int | None:
    read = samples(text, PREFIX, "an SGLang server")
    values = [sample.value for sample in read if sample.name == STEPS]
    return round(max(values)) if values and max(values) >= 1 else None


def spec_counts(text: str) -> SpecCounts | None:
    """Verifications, draft tokens (verifications x the steps running) and generated tokens less verifications (each
    request's first token still in it: see LiveFormat.first_tokens_in_accepted); None where it does not speculate."""
    read = samples(text, PREFIX, "an SGLang server")
    verify = summed(read, VERIFY)
    if verify is None:  # no request has finished yet, or no speculation (or a release before 2026-05: no gauge)
        return SpecCounts(0, 0, 0, ()) if _steps(text) else None
    generated = summed(read, GENERATED) or 0.0
    steps = _steps(text) or 0
    return SpecCounts(int(verify), int(verify) * steps, int(generated - verify), ())


def _k(text: str, counts: SpecCounts | None) -> int | None:
    return _steps(text) if counts is not None else None


LIVE = LiveFormat(
    engine="sglang",
    title="SGLang",
    marker=PREFIX,
    counts=spec_counts,
    k_of=_k,
    sources=(METRICS,),
    first_tokens_in_accepted=True,
    version_path="/get_server_info",  # every server argument and "version"; no /version route at 0025436e
    setup_hint="start SGLang with --enable-metrics (a release with sglang:spec_verify_calls_total and spec_num_steps)",
)


PROMETHEUS = reports.PrometheusNames(prefix="sglang", running="num_running_reqs", counters=("spec_verify_calls",))


def k_from_rate(length: float, rate: float) -> tuple[int | None, str]:
    """k from accept length and accept rate: (L - 1) / k since PR #23530, L / (k + 1) before."""
    if rate <= 0 or length <= 1:
        return None, ""
    current = reports.integral((length - 1.0) / rate)
    if current is not None:
        return current, "sglang:spec_accept_rate read as (accept length - 1) / k (SGLang 2026-05)"
    older = reports.integral(length / rate - 1.0)
    if older is not None:
        return older, "sglang:spec_accept_rate read as accept length / (k + 1) (SGLang 2026-03)"
    return None, ""


def _read_metrics(text: str, payload: Any, options: reports.ReadOptions) -> list[reports.Measurement]:
    found, running = reports.found_groups(
        text, PROMETHEUS, options.label, "SGLang: no sglang:spec_* series: is speculative decoding enabled?"
    )
    generated: dict[str, float] = {}
    for name, labels, value in reports.samples(text):
        if reports.stem_of(name, "sglang") == "generation_tokens" and math.isfinite(value):
            key = labels.get(options.label, "")
            generated[key] = generated.get(key, 0.0) + value
    measurements = []
    for key, group in sorted(found.items()):
        lengths = group.gauges.get("spec_accept_length")
        if not lengths:
            raise fail(ErrorKind.MISSING_COUNTER, "SGLang: missing gauge sglang:spec_accept_length")
        length = float(np.mean(lengths))
        notes: list[str] = []
        k, source = options.k, "given"
        live_steps = group.gauges.get("spec_num_steps")
        live_tokens = group.gauges.get("spec_num_draft_tokens")
        version = "2026-05" if live_steps is not None else "2026-03"
        if k is None and live_steps:
            k, source = round(float(np.mean(live_steps))), "sglang:spec_num_steps (the tier running now)"
            if live_tokens and abs(float(np.mean(live_tokens)) - (k + 1)) > 1e-9:
                notes.append("sglang:spec_num_draft_tokens is not steps + 1: a tree; p is chain-equivalent")
        rates = group.gauges.get("spec_accept_rate")
        if k is None and rates:
            k, how = k_from_rate(length, float(np.mean(rates)))
            source = "from accept length and accept rate"
            if how:
                notes.append(how)
        if live_steps is not None and len(set(live_steps)) > 1:
            notes.append(f"series report several steps {sorted(set(live_steps))}: an adaptive schedule")
        if rates and live_steps is not None:
            notes.append(
                "in adaptive mode sglang:spec_accept_rate divides by the startup draft width, not the tier that ran; "
                "p here comes from the accept length at the steps running now"
            )
        verify = group.sums.get("spec_verify_calls")
        cycles = options.cycles
        if cycles is None and verify and key in generated:
            length = generated[key] / verify
            cycles = verify
            notes.append(
                "accept length = sglang:generation_tokens_total / sglang:spec_verify_calls_total (exact, whole run)"
            )
        elif cycles is None and key in generated and length > 0 and len(found) == 1:
            cycles = generated[key] / length
            notes.append(
                "verifications estimated as sglang:generation_tokens_total / accept length (the gauge covers the last "
                "logging interval, the counter the whole run): the interval is approximate"
            )
        measurement = reports.mean_only(NAME, "sglang-metrics", key or None, length, k, source, cycles, running, notes)
        measurements.append(_versioned(measurement, version, options))
    return measurements


def _versioned(measurement: reports.Measurement, version: str, options: reports.ReadOptions) -> reports.Measurement:
    return replace(measurement, version=version, draft_lengths=options.draft_lengths)


def _read_server_info(text: str, payload: Any, options: reports.ReadOptions) -> list[reports.Measurement]:
    info = payload[0] if isinstance(payload, list) and payload else payload
    if not isinstance(info, Mapping):
        raise fail(ErrorKind.UNPARSEABLE, "SGLang /server_info must be a JSON object")
    states = info.get("internal_states")
    if states is None and isinstance(info.get("decode"), list) and info["decode"]:
        info = info["decode"][0]
        states = info.get("internal_states") if isinstance(info, Mapping) else None
    if not isinstance(states, list) or not states:
        states = [info]
    lengths = []
    for state in states:
        value = state.get("avg_spec_accept_length") if isinstance(state, Mapping) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        lengths.append(float(value))
    if not lengths:
        raise fail(
            ErrorKind.MISSING_COUNTER,
            "SGLang: no numeric avg_spec_accept_length in internal_states: is speculative decoding enabled?",
        )
    notes = []
    if len(lengths) > 1:
        notes.append(f"{len(lengths)} internal states (data-parallel ranks) averaged")
    steps = info.get("speculative_num_steps")
    topk = info.get("speculative_eagle_topk")
    k, source = options.k, "given"
    if k is None and isinstance(steps, int) and not isinstance(steps, bool) and steps >= 1:
        k, source = steps, "speculative_num_steps"
        if isinstance(topk, int) and topk > 1:
            notes.append(f"speculative_eagle_topk = {topk}: a tree; p is the chain-equivalent acceptance at depth k")
    if info.get("speculative_adaptive"):
        notes.append(
            "speculative_adaptive: steps vary by batch tier; the top-level speculative_num_steps is the startup "
            "value (give draft_lengths for the tiers)"
        )
    measurement = reports.mean_only(
        NAME, "sglang-server-info", None, float(np.mean(lengths)), k, source, options.cycles, None, notes
    )
    return [_versioned(measurement, "2026-05", options)]


# The per-request counts SGLang returns (versions.REQUEST_META, versions.REQUEST_META_OLDER,
# versions.SPEC_TOKENS_DETAILS): /generate's meta_info, filled by TokenizerManager._calculate_spec_decoding_metrics:
# spec_verify_ct verifications, the accepted draft tokens, the proposed ones = spec_verify_ct *
# (speculative_num_draft_tokens - 1), and a histogram whose entry j counts the verifications that accepted exactly j.
# The keys' names changed twice (read in each release's package): sglang 0.5.10 spec_accept_token_num,
# spec_draft_token_num, spec_accept_histogram; 0.5.11 spec_accepted_drafts, spec_proposed_drafts,
# spec_accept_histogram; 0.5.12 on, PR #24081's spec_num_correct_drafts, spec_num_proposed_drafts,
# spec_correct_drafts_histogram, with 0.5.11's kept beside them as aliases.  Since PR #33518 the OpenAI endpoints
# return the same counts as the response-level sglext.spec_tokens_details of a request that sent
# return_spec_tokens_details (spec_tokens_details_from_meta_info), one object for n = 1 and a list in choice order for
# n > 1 (serving_chat.py, serving_completions.py; read in the sglang 0.5.23 package).
# (accepted, proposed, histogram) key names, newest first: a response is read by the first set it carries
REQUEST_NAMES = (
    ("spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_correct_drafts_histogram"),  # 0.5.12 on
    ("spec_accepted_drafts", "spec_proposed_drafts", "spec_accept_histogram"),  # 0.5.11
    ("spec_accept_token_num", "spec_draft_token_num", "spec_accept_histogram"),  # 0.5.10 and before
)


def _request_counts(item: Any) -> list[tuple[Mapping[str, Any], bool]]:
    """The count mappings of one response (meta_info, or each entry of sglext.spec_tokens_details), and whether each
    came from sglext."""
    if not isinstance(item, Mapping):
        return []
    meta = item.get("meta_info")
    if isinstance(meta, Mapping) and "spec_verify_ct" in meta:
        return [(meta, False)]
    sglext = item.get("sglext")
    details = sglext.get("spec_tokens_details") if isinstance(sglext, Mapping) else None
    if isinstance(details, Mapping):
        details = [details]
    if isinstance(details, list):
        return [(entry, True) for entry in details if isinstance(entry, Mapping) and "spec_verify_ct" in entry]
    return [(item, False)] if "spec_verify_ct" in item else []


def _names_of(counts: Mapping[str, Any], index: int) -> tuple[int, tuple[str, str, str]]:
    """Which release's key names a response carries: (index into REQUEST_NAMES, the names)."""
    for generation, names in enumerate(REQUEST_NAMES):
        if names[0] in counts or names[1] in counts:
            missing = [name for name in names[:2] if name not in counts]
            if missing:
                raise fail(ErrorKind.MISSING_COUNTER, f"SGLang: response {index} has {names[0]!r} but no {missing[0]}")
            return generation, names
    raise fail(
        ErrorKind.MISSING_COUNTER,
        f"SGLang: response {index} has spec_verify_ct but none of the accepted/proposed draft counts SGLang writes: "
        "spec_num_correct_drafts and spec_num_proposed_drafts (0.5.12 on, PR #24081), spec_accepted_drafts and "
        "spec_proposed_drafts (0.5.11), spec_accept_token_num and spec_draft_token_num (0.5.10 and before)",
    )


def _read_requests(text: str, payload: Any, options: reports.ReadOptions) -> list[reports.Measurement]:
    items = payload if isinstance(payload, list) else [payload]
    if isinstance(payload, Mapping) and isinstance(payload.get("choices"), list) and "sglext" not in payload:
        items = list(payload["choices"])
    cycles = accepted = proposed = 0.0
    histograms: list[list[float]] = []
    used = without_histogram = 0
    from_sglext = False
    generations: set[int] = set()
    entries = [(counts, sglext) for item in items for counts, sglext in _request_counts(item)]
    for index, (counts, sglext) in enumerate(entries):
        if not counts.get("spec_verify_ct"):
            continue
        from_sglext = from_sglext or sglext
        generation, (correct_key, proposed_key, histogram_key) = _names_of(counts, index)
        generations.add(generation)
        verify = reports.number(counts["spec_verify_ct"], f"response {index} spec_verify_ct")
        correct = reports.number(counts[correct_key], f"response {index} {correct_key}")
        drafted = reports.number(counts[proposed_key], f"response {index} {proposed_key}")
        if correct > drafted:
            raise fail(ErrorKind.INCONSISTENT, f"response {index}: {correct_key} exceeds {proposed_key}")
        histogram = counts.get(histogram_key)
        if isinstance(histogram, list) and histogram:
            values = [reports.number(value, f"response {index} histogram") for value in histogram]
            if sum(values) != verify or sum(j * value for j, value in enumerate(values)) != correct:
                raise fail(
                    ErrorKind.INCONSISTENT,
                    f"response {index}: {histogram_key} does not sum to spec_verify_ct verifications and "
                    f"{correct_key} accepted tokens",
                )
            histograms.append(values)
        else:
            without_histogram += 1
        cycles += verify
        accepted += correct
        proposed += drafted
        used += 1
    if used == 0:
        raise fail(ErrorKind.ZERO_DRAFTS, "SGLang: no response with spec_verify_ct > 0")
    named = ", ".join(f"{REQUEST_NAMES[g][0]} and {REQUEST_NAMES[g][1]}" for g in sorted(generations))
    notes = [f"{used} responses' spec_verify_ct, {named} summed"]
    if len(generations) > 1:
        notes.append("the responses carry the key names of different SGLang releases")
    k, source = options.k, "given"
    if k is None:
        k = reports.integral(proposed / cycles, 1e-9)
        source = "proposed draft tokens / spec_verify_ct = speculative_num_draft_tokens - 1 (tokenizer_manager.py)"
        if k is None:
            raise fail(
                ErrorKind.UNKNOWN_K,
                "SGLang: the proposed draft tokens are not a whole multiple of spec_verify_ct: give k",
            )
        notes.append(
            "k = speculative_num_draft_tokens - 1 at start-up; under --speculative-adaptive the steps run vary by "
            "tier (give draft_lengths)"
        )
    per_position: tuple[float, ...] = ()
    if histograms and not without_histogram:
        width = max(len(values) for values in histograms)
        exactly = [sum(values[j] for values in histograms if j < len(values)) for j in range(width)]
        if any(exactly[j] for j in range(k + 1, width)):
            raise fail(ErrorKind.INCONSISTENT, f"SGLang: a verification accepted more than k = {k} draft tokens")
        per_position = tuple(float(sum(exactly[j] for j in range(i + 1, width))) for i in range(k))
        notes.append("per-position counts from the histogram: position i = verifications accepting > i")
    elif histograms:
        notes.append(f"{without_histogram} responses carry no acceptance histogram: no per-position counts")
    totals = (cycles, proposed, accepted)
    # sglext.spec_tokens_details came with PR #33518 (2026-08); PR #24081's names in meta_info are 2026-05's (sglang
    # 0.5.12, whose flags are still 2026-03's, wrote them first); the older names only 2026-03's releases wrote
    if from_sglext:
        version = "2026-08"
        notes.append("read from sglext.spec_tokens_details (the request sent return_spec_tokens_details)")
    elif 0 in generations:
        version = "2026-05"
    else:
        version = "2026-03"
        notes.append(f"meta_info under the key names of sglang 0.5.11 and before ({named}): SGLang 2026-03")
    return reports.single_class(NAME, "sglang-request", options, totals, k, source, notes, per_position, version)


REPORTS = (
    reports.ReportFormat(
        "sglang-request",
        NAME,
        "SGLang responses: /generate meta_info, or the OpenAI endpoints' sglext.spec_tokens_details, which SGLang "
        'returns only to a request that sends "return_spec_tokens_details": true (PR #33518) (spec_verify_ct, '
        "spec_num_correct_drafts, spec_num_proposed_drafts, spec_correct_drafts_histogram; in meta_info of sglang "
        "0.5.11 spec_accepted_drafts, spec_proposed_drafts, spec_accept_histogram, and of 0.5.10 and before "
        "spec_accept_token_num, spec_draft_token_num, spec_accept_histogram)",
        ("2026-03", "2026-05", "2026-08"),
        reports.json_with("spec_verify_ct", without=("internal_states",)),
        _read_requests,
        verifications="spec_verify_ct",
    ),
    reports.ReportFormat(
        "sglang-server-info",
        NAME,
        "SGLang /server_info JSON: avg_spec_accept_length in internal_states",
        ("2026-03", "2026-05", "2026-08"),
        reports.json_with("avg_spec_accept_length", "internal_states"),
        _read_server_info,
        verifications="avg_spec_accept_length",
    ),
    reports.ReportFormat(
        "sglang-metrics",
        NAME,
        "SGLang /metrics (Prometheus text): spec_accept_length, spec_num_steps gauges, spec_verify_calls_total",
        ("2026-03", "2026-05", "2026-08"),
        reports.text_matching(r"^sglang[:_]spec_(accept_|num_steps|verify_calls)"),
        _read_metrics,
        verifications="sglang:spec_verify_calls_total",
    ),
)
