"""vLLM's reports read into counts of one class (see :mod:`app.model.live.engine_metrics`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from app.model.engines import reports
from app.model.engines.reports import ErrorKind, fail
from app.model.engines.vllm.baseline import subtract_baseline
from app.model.engines.vllm.versions import NAME, VERSIONS

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


def _detect_metrics(text: str, payload: Any) -> bool:
    return payload is None and re.search(r"(?m)^vllm[:_]spec_decode_num_drafts", text) is not None


def _detect_metrics_v0(text: str, payload: Any) -> bool:
    return payload is None and re.search(r"(?m)^vllm[:_]spec_decode_", text) is not None


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
                cycles=None,
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


def _detect_request(text: str, payload: Any) -> bool:
    return payload is not None and reports.has_key(payload, ("num_spec_steps", "acceptance_histogram"))


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
        _detect_request,
        _read_request,
        verifications="metrics.speculative_decoding",
    ),
    reports.ReportFormat(
        "vllm-metrics",
        NAME,
        "vLLM /metrics (Prometheus text): spec-decode counters of the V1 engine",
        ("2025-10", "2026-06", "2026-08"),
        _detect_metrics,
        read_metrics,
        subtract_baseline,
    ),
    reports.ReportFormat(
        "vllm-metrics-v0",
        NAME,
        "vLLM /metrics (Prometheus text): spec-decode counters of the older V0 engine",
        (),
        _detect_metrics_v0,
        read_metrics,
        subtract_baseline,
        verifications="vllm:spec_decode_num_draft_tokens_total",
    ),
)
