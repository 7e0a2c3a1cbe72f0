"""What serving engines report about speculative decoding, read by format, and turned into p with an interval.

Every format is reduced to the same counts of one class (one model, or one value of a label the user
names): verifications (drafts), drafted tokens, accepted draft tokens and, where the engine has them,
accepted tokens per draft position.  Those go through the calibration the rest of the product uses
(:mod:`app.model.calibration`), and this module adds the 95% interval of p.  Names and formats were
read in each engine's source (see ``docs/engines.md`` for the files):

- **vLLM** Prometheus text at ``/metrics``.  V1 engine (``vllm/v1/spec_decode/metrics.py``): counters
  ``vllm:spec_decode_num_drafts``, ``vllm:spec_decode_num_draft_tokens``,
  ``vllm:spec_decode_num_accepted_tokens`` and ``vllm:spec_decode_num_accepted_tokens_per_pos`` (label
  ``position``), exported with ``_total``, one series per ``engine`` and ``model_name``.  V0 engine
  (``vllm/spec_decode/metrics.py``, older releases): ``..._num_draft_tokens_total``,
  ``..._num_accepted_tokens_total``, ``..._num_emitted_tokens_total`` and the gauge
  ``vllm:spec_decode_efficiency``.  Some exporters write ``vllm_`` for ``vllm:``; both are read.  The
  batch is the gauge ``vllm:num_requests_running``.
- **SGLang** Prometheus text: gauges ``sglang:spec_accept_length`` (tokens per verification, bonus
  included) and ``sglang:spec_accept_rate`` (``python/sglang/srt/metrics/collector.py``); its JSON at
  ``/server_info`` (``/get_server_info`` in older releases) carries ``avg_spec_accept_length`` in each
  entry of ``internal_states`` (some releases nest it under ``decode``), and the server arguments
  ``speculative_num_steps``, ``speculative_eagle_topk`` and ``speculative_num_draft_tokens``.  These are
  means, not counts: an interval needs the number of verifications (``cycles``).
- **TensorRT-LLM** iteration statistics JSON (``trtllm-serve`` ``/metrics``, ``LLM.get_stats``): each
  iteration's ``specDecodingStats`` with ``numDraftTokens``, ``numAcceptedTokens``,
  ``numRequestsWithDraftTokens`` and ``acceptanceLength`` (``cpp/include/tensorrt_llm/executor/types.h``;
  the Python bindings spell them ``num_draft_tokens`` ...).  A request with draft tokens in an iteration
  is one verification.
- **llama.cpp**: the server's per-task line ``draft acceptance rate = R (A accepted / G generated)``,
  the ``statistics <kind>: ... #gen drafts = D, #acc drafts = ., #gen tokens = G, #acc tokens = A`` line
  of newer builds (``common/speculative.cpp``), and the ``speculative`` example's summary
  (``n_draft``, ``n_drafted``, ``n_accept``, ``accept``).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from prometheus_client.parser import text_string_to_metric_families
from scipy import stats

from app.model import calibration, closed_form
from app.model.calibration import MAX_COUNTER, MAX_EXPOSITION_BYTES, MAX_POSITIONS, CalibrationError, ErrorKind

MAX_CLASSES = 32
MAX_JSON_ITEMS = 100_000
INTERVAL_LEVEL = 0.95
ENGINES = ("vllm", "sglang", "trtllm", "llamacpp")

FORMATS: dict[str, str] = {
    "vllm-metrics": "vLLM /metrics (Prometheus text): spec-decode counters of the V1 engine",
    "vllm-metrics-v0": "vLLM /metrics (Prometheus text): spec-decode counters of the older V0 engine",
    "sglang-metrics": "SGLang /metrics (Prometheus text): sglang:spec_accept_length and sglang:spec_accept_rate gauges",
    "sglang-server-info": "SGLang /server_info JSON: avg_spec_accept_length in internal_states",
    "trtllm-iteration-stats": "TensorRT-LLM iteration statistics JSON: specDecodingStats per iteration",
    "llamacpp-log": "llama.cpp printed summary: draft acceptance rate / statistics lines",
    "llamacpp-speculative": "llama.cpp speculative example summary: n_draft, n_drafted, n_accept",
}
FORMAT_ENGINE = {name: name.split("-", 1)[0] for name in FORMATS}


class EngineFormatError(CalibrationError):
    """A body no engine format explains, or whose numbers cannot be calibrated; says what is wrong."""


@dataclass(frozen=True)
class Measurement:
    """Spec-decode counts of one class, as read from one engine's report."""

    engine: str
    format: str
    label: str | None
    cycles: float | None  # verifications; None when the format holds only a mean
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


@dataclass(frozen=True)
class Interval:
    low: float | None
    high: float | None
    level: float
    method: str


@dataclass(frozen=True)
class EngineCalibration:
    measurement: Measurement
    result: calibration.Calibration
    interval: Interval
    notes: list[str] = field(default_factory=list)


def _fail(kind: ErrorKind, message: str) -> EngineFormatError:
    return EngineFormatError(kind, message)


def _clip(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------
# Detection


def _json_payload(text: str) -> Any | None:
    """The JSON value of the text, or of its lines (JSON Lines) as a list; None when it is not JSON."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return json.loads(stripped)
    except json.JSONDecodeError:
        pass
    items = []
    for number, line in enumerate(stripped.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            items.append(json.loads(line))
        except json.JSONDecodeError as error:
            raise _fail(
                ErrorKind.UNPARSEABLE, f"the body looks like JSON but line {number} does not parse ({error.msg})"
            ) from None
        if len(items) > MAX_JSON_ITEMS:
            raise _fail(ErrorKind.TOO_LARGE, f"more than {MAX_JSON_ITEMS:,} JSON lines")
    return items


def _has_key(value: Any, keys: tuple[str, ...], depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(value, Mapping):
        return any(key in value for key in keys) or any(_has_key(item, keys, depth + 1) for item in value.values())
    if isinstance(value, list):
        return any(_has_key(item, keys, depth + 1) for item in value[:50])
    return False


LLAMA_RATE = re.compile(
    r"draft acceptance rate\s*=\s*([0-9.]+%?)\s*\(\s*(\d+)\s*(?:accepted\s*)?/\s*(\d+)\s*(?:generated)?\s*\)"
)
LLAMA_STATS = re.compile(
    r"#gen drafts\s*=\s*(\d+),\s*#acc drafts\s*=\s*(\d+),\s*#gen tokens\s*=\s*(\d+),\s*#acc tokens\s*=\s*(\d+)"
)
LLAMA_EXAMPLE = {name: re.compile(rf"\b{name}\s*=\s*(\d+)\s*$", re.M) for name in ("n_draft", "n_drafted", "n_accept")}


def detect_format(text: str) -> str:
    """The name of the format the text is in (a key of FORMATS), or an EngineFormatError saying why none fits."""
    if len(text.encode("utf-8", errors="replace")) > MAX_EXPOSITION_BYTES:
        raise _fail(ErrorKind.TOO_LARGE, f"the body is larger than {MAX_EXPOSITION_BYTES:,} bytes")
    if not text.strip():
        raise _fail(ErrorKind.EMPTY, "the body is empty: paste a /metrics scrape, a stats JSON or a llama.cpp log")
    payload = _json_payload(text)
    if payload is not None:
        if _has_key(payload, ("specDecodingStats", "spec_decoding_stats")):
            return "trtllm-iteration-stats"
        if _has_key(payload, ("avg_spec_accept_length", "internal_states")):
            return "sglang-server-info"
        raise _fail(
            ErrorKind.UNRELATED,
            "JSON with neither TensorRT-LLM's specDecodingStats nor SGLang's avg_spec_accept_length; "
            "for step times use the step-fit endpoint",
        )
    if LLAMA_RATE.search(text) or LLAMA_STATS.search(text):
        return "llamacpp-log"
    if LLAMA_EXAMPLE["n_drafted"].search(text) and LLAMA_EXAMPLE["n_accept"].search(text):
        return "llamacpp-speculative"
    if re.search(r"(?m)^(vllm[:_])spec_decode_", text):
        return "vllm-metrics-v0" if not re.search(r"(?m)^vllm[:_]spec_decode_num_drafts", text) else "vllm-metrics"
    if re.search(r"(?m)^sglang[:_]spec_accept_", text):
        return "sglang-metrics"
    if re.search(r"(?m)^[A-Za-z_:][A-Za-z0-9_:]*(\{[^}]*\})?\s+([-+]?[0-9.]|[-+]?Inf|NaN)", text):
        names = sorted(set(re.findall(r"(?m)^([A-Za-z_:][A-Za-z0-9_:]*)", text)))[:5]
        raise _fail(
            ErrorKind.UNRELATED,
            "a Prometheus scrape without speculative-decoding series (vllm:spec_decode_* or sglang:spec_accept_*)"
            f"; it holds e.g. {', '.join(names)}: is speculative decoding enabled?",
        )
    raise _fail(
        ErrorKind.UNPARSEABLE,
        f"unknown format (starts with {_clip(text, 60)!r}): expected vLLM or SGLang /metrics, SGLang /server_info, "
        "TensorRT-LLM iteration stats JSON or a llama.cpp summary",
    )


# ---------------------------------------------------------------------------
# Prometheus text (vLLM, SGLang)


def _samples(text: str) -> Iterable[tuple[str, dict[str, str], float]]:
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                yield sample.name, dict(sample.labels), float(sample.value)
    except (ValueError, TypeError, KeyError, IndexError) as error:
        raise _fail(
            ErrorKind.UNPARSEABLE, f"not a Prometheus text exposition: the parser stopped with '{_clip(str(error))}'"
        ) from error


def _base(name: str, engine: str) -> str | None:
    for prefix in (f"{engine}:", f"{engine}_"):
        if name.startswith(prefix):
            stem = name[len(prefix) :]
            if stem.endswith("_created"):
                return None
            return stem[: -len("_total")] if stem.endswith("_total") else stem
    return None


def _check_value(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise _fail(ErrorKind.NON_FINITE, f"{name} has the value {value}; counters must be finite")
    if value < 0:
        raise _fail(ErrorKind.NEGATIVE, f"{name} is negative ({value:g}); counters never go below 0")
    if value > MAX_COUNTER:
        raise _fail(ErrorKind.IMPLAUSIBLE, f"{name} is {value:g}, beyond {MAX_COUNTER:g}")


@dataclass
class _Group:
    sums: dict[str, float] = field(default_factory=dict)
    gauges: dict[str, list[float]] = field(default_factory=dict)
    per_position: dict[int, float] = field(default_factory=dict)
    series: set[tuple[tuple[str, str], ...]] = field(default_factory=set)


def _groups(text: str, engine: str, label: str) -> tuple[dict[str, _Group], float | None]:
    groups: dict[str, _Group] = {}
    running: dict[str, float] = {}
    running_name = "num_requests_running" if engine == "vllm" else "num_running_reqs"
    for name, labels, value in _samples(text):
        base = _base(name, engine)
        if base is None:
            continue
        key = labels.get(label, "")
        if base == running_name:
            running[key] = running.get(key, 0.0) + value if math.isfinite(value) else running.get(key, 0.0)
            continue
        if not base.startswith("spec_"):
            continue
        _check_value(name, value)
        group = groups.setdefault(key, _Group())
        if len(groups) > MAX_CLASSES:
            raise _fail(ErrorKind.AMBIGUOUS_MODEL, f"more than {MAX_CLASSES} values of the label {label!r}")
        group.series.add(tuple(sorted((k, v) for k, v in labels.items() if k != "position")))
        if base == "spec_decode_num_accepted_tokens_per_pos":
            raw = labels.get("position")
            position = int(raw) if raw is not None and raw.isdigit() else -1
            if not 0 <= position < MAX_POSITIONS:
                raise _fail(
                    ErrorKind.BAD_LABEL, f"{name} needs a position label from 0 to {MAX_POSITIONS - 1}; got {raw!r}"
                )
            group.per_position[position] = group.per_position.get(position, 0.0) + value
        elif base.startswith("spec_decode_num_"):
            group.sums[base] = group.sums.get(base, 0.0) + value
        else:
            group.gauges.setdefault(base, []).append(value)
    total_running = sum(running.values()) if running else None
    return groups, total_running


def _vllm(text: str, label: str, k: int | None) -> list[Measurement]:
    groups, running = _groups(text, "vllm", label)
    if not groups:
        raise _fail(ErrorKind.UNRELATED, "no vllm:spec_decode_* series: is speculative decoding enabled?")
    measurements = []
    for key, group in sorted(groups.items()):
        sums = group.sums
        positions = group.per_position
        if positions and sorted(positions) != list(range(len(positions))):
            raise _fail(
                ErrorKind.BAD_LABEL, f"per-position counters must cover positions 0..k-1; got {sorted(positions)}"
            )
        per_position = tuple(positions[i] for i in range(len(positions)))
        drafts = sums.get("spec_decode_num_drafts")
        for needed in ("spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens"):
            if needed not in sums:
                found = ", ".join(sorted(f"vllm:{name}" for name in sums)) or "only gauges"
                raise _fail(ErrorKind.MISSING_COUNTER, f"missing counter vllm:{needed}_total; found {found}")
        emitted = sums.get("spec_decode_num_emitted_tokens")
        if drafts is None and emitted is None:
            raise _fail(
                ErrorKind.MISSING_COUNTER,
                "missing vllm:spec_decode_num_drafts_total (V1) and vllm:spec_decode_num_emitted_tokens_total (V0)",
            )
        efficiency = group.gauges.get("spec_decode_efficiency")
        measurements.append(
            Measurement(
                engine="vllm",
                format="vllm-metrics" if drafts is not None else "vllm-metrics-v0",
                label=key or None,
                cycles=drafts,
                draft_tokens=sums["spec_decode_num_draft_tokens"],
                accepted=sums["spec_decode_num_accepted_tokens"],
                per_position=per_position,
                k=k,
                k_source="given" if k is not None else "counters",
                batch=running,
                schema="v1" if drafts is not None else "v0",
                emitted=emitted,
                efficiency=efficiency[0] if efficiency and len(efficiency) == 1 else None,
                series=len(group.series),
            )
        )
    return measurements


def _integral(value: float, tolerance: float = 0.02) -> int | None:
    nearest = round(value)
    return int(nearest) if nearest >= 1 and abs(value - nearest) <= tolerance * max(1.0, value) else None


def _k_from_sglang_rate(length: float, rate: float) -> tuple[int | None, str]:
    """k from accept length and accept rate: (L - 1) / k in current SGLang, L / (k + 1) in older releases."""
    if rate <= 0 or length <= 1:
        return None, ""
    current = _integral((length - 1.0) / rate)
    if current is not None:
        return current, "sglang:spec_accept_rate read as (accept length - 1) / k (current SGLang)"
    older = _integral(length / rate - 1.0)
    if older is not None:
        return older, "sglang:spec_accept_rate read as accept length / (k + 1) (older SGLang)"
    return None, ""


def _mean_only(
    engine: str,
    format_name: str,
    label: str | None,
    length: float,
    k: int | None,
    k_source: str,
    cycles: float | None,
    batch: float | None,
    notes: list[str],
) -> Measurement:
    if not math.isfinite(length) or length < 1:
        raise _fail(ErrorKind.INCONSISTENT, f"the accept length is {length:g}; it counts the bonus token, so >= 1")
    if k is None:
        raise _fail(
            ErrorKind.UNKNOWN_K,
            "the report gives a mean accept length but not the draft length: give k (speculative_num_steps)",
        )
    if length > k + 1 + 1e-9:
        raise _fail(ErrorKind.INCONSISTENT, f"the accept length {length:g} exceeds k + 1 = {k + 1}")
    known = cycles is not None and cycles > 0
    count = float(cycles) if known and cycles is not None else 1.0
    if not known:
        notes.append("a mean without counts: no sampling interval unless cycles (verifications) is given")
    return Measurement(
        engine=engine,
        format=format_name,
        label=label,
        cycles=count if known else None,
        draft_tokens=count * k,
        accepted=count * (min(length, k + 1.0) - 1.0),
        mean_length=length,
        k=k,
        k_source=k_source,
        batch=batch,
        notes=tuple(notes),
    )


def _sglang_metrics(text: str, label: str, k: int | None, cycles: float | None) -> list[Measurement]:
    groups, running = _groups(text, "sglang", label)
    if not groups:
        raise _fail(ErrorKind.UNRELATED, "no sglang:spec_accept_* series: is speculative decoding enabled?")
    generated = None
    for name, _labels, value in _samples(text):
        if _base(name, "sglang") == "generation_tokens" and math.isfinite(value):
            generated = (generated or 0.0) + value
    measurements = []
    for key, group in sorted(groups.items()):
        lengths = group.gauges.get("spec_accept_length")
        if not lengths:
            raise _fail(ErrorKind.MISSING_COUNTER, "missing gauge sglang:spec_accept_length")
        length = float(np.mean(lengths))
        notes = []
        chosen_k, source = k, "given"
        rates = group.gauges.get("spec_accept_rate")
        if chosen_k is None and rates:
            chosen_k, how = _k_from_sglang_rate(length, float(np.mean(rates)))
            source = "from accept length and accept rate"
            if how:
                notes.append(how)
        chosen_cycles = cycles
        if chosen_cycles is None and generated and length > 0 and len(groups) == 1:
            chosen_cycles = generated / length
            notes.append(
                "verifications estimated as sglang:generation_tokens_total / accept length (the gauge covers the last "
                "logging interval, the counter the whole run): the interval is approximate"
            )
        measurements.append(
            _mean_only("sglang", "sglang-metrics", key or None, length, chosen_k, source, chosen_cycles, running, notes)
        )
    return measurements


def _sglang_server_info(payload: Any, k: int | None, cycles: float | None) -> list[Measurement]:
    info = payload[0] if isinstance(payload, list) and payload else payload
    if not isinstance(info, Mapping):
        raise _fail(ErrorKind.UNPARSEABLE, "SGLang /server_info must be a JSON object")
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
        raise _fail(
            ErrorKind.MISSING_COUNTER,
            "no numeric avg_spec_accept_length in internal_states: is speculative decoding enabled?",
        )
    notes = []
    if len(lengths) > 1:
        notes.append(f"{len(lengths)} internal states (data-parallel ranks) averaged")
    steps = info.get("speculative_num_steps")
    topk = info.get("speculative_eagle_topk")
    chosen_k, source = k, "given"
    if chosen_k is None and isinstance(steps, int) and not isinstance(steps, bool) and steps >= 1:
        chosen_k, source = steps, "speculative_num_steps"
        if isinstance(topk, int) and topk > 1:
            notes.append(f"speculative_eagle_topk = {topk}: a tree; p is the chain-equivalent acceptance at depth k")
    return [
        _mean_only("sglang", "sglang-server-info", None, float(np.mean(lengths)), chosen_k, source, cycles, None, notes)
    ]


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _fail(ErrorKind.NON_FINITE, f"{name} must be a finite number; got {_clip(repr(value), 40)}")
    if value < 0:
        raise _fail(ErrorKind.NEGATIVE, f"{name} is negative ({value:g})")
    if value > MAX_COUNTER:
        raise _fail(ErrorKind.IMPLAUSIBLE, f"{name} is {value:g}, beyond {MAX_COUNTER:g}")
    return float(value)


TRT_NAMES = {
    "drafted": ("numDraftTokens", "num_draft_tokens"),
    "accepted": ("numAcceptedTokens", "num_accepted_tokens"),
    "requests": ("numRequestsWithDraftTokens", "num_requests_with_draft_tokens"),
    "length": ("acceptanceLength", "acceptance_length"),
}


def _pick(mapping: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        if name in mapping:
            return mapping[name]
    return None


def _iterations(payload: Any) -> list[Mapping[str, Any]]:
    if isinstance(payload, Mapping):
        for key in ("stats", "iteration_stats", "iterations"):
            if isinstance(payload.get(key), list):
                return [item for item in payload[key] if isinstance(item, Mapping)]
        return [payload]
    if isinstance(payload, list):
        items = []
        for item in payload:
            if isinstance(item, str):  # LLM.get_stats() can hand out each iteration as a JSON string
                try:
                    item = json.loads(item)
                except json.JSONDecodeError:
                    continue
            if isinstance(item, Mapping):
                items.append(item)
        return items
    return []


def _trtllm(payload: Any, k: int | None) -> list[Measurement]:
    iterations = _iterations(payload)
    drafted = accepted = requests = 0.0
    batches = []
    inconsistent = 0
    used = 0
    for index, iteration in enumerate(iterations):
        spec = _pick(iteration, ("specDecodingStats", "spec_decoding_stats"))
        if not isinstance(spec, Mapping):
            continue
        values = {}
        for key, names in TRT_NAMES.items():
            raw = _pick(spec, names)
            if raw is None and key != "length":
                raise _fail(ErrorKind.MISSING_COUNTER, f"iteration {index}: specDecodingStats has no {names[0]}")
            values[key] = None if raw is None else _number(raw, f"iteration {index} {names[0]}")
        if not values["drafted"]:
            continue
        assert values["accepted"] is not None and values["requests"] is not None and values["drafted"] is not None
        if values["accepted"] > values["drafted"]:
            raise _fail(
                ErrorKind.INCONSISTENT,
                f"iteration {index}: numAcceptedTokens ({values['accepted']:g}) exceed numDraftTokens "
                f"({values['drafted']:g})",
            )
        if values["requests"] <= 0:
            raise _fail(ErrorKind.INCONSISTENT, f"iteration {index}: draft tokens but numRequestsWithDraftTokens is 0")
        length = values["length"]
        expected = 1.0 + values["accepted"] / values["requests"]
        if length is not None and abs(length - expected) > 1e-3 * expected:
            inconsistent += 1
        drafted += values["drafted"]
        accepted += values["accepted"]
        requests += values["requests"]
        used += 1
        inflight = _pick(iteration, ("inflightBatchingStats", "inflight_batching_stats"))
        generation = _pick(inflight, ("numGenRequests", "num_gen_requests")) if isinstance(inflight, Mapping) else None
        active = _pick(iteration, ("numActiveRequests", "num_active_requests"))
        batch = generation if generation is not None else active
        if isinstance(batch, int | float) and not isinstance(batch, bool) and math.isfinite(batch) and batch >= 0:
            batches.append(float(batch))
    if used == 0:
        raise _fail(
            ErrorKind.ZERO_DRAFTS, "no iteration with draft tokens (numDraftTokens > 0): nothing was speculated"
        )
    notes = [f"{used} iterations with draft tokens summed"]
    if inconsistent:
        notes.append(f"{inconsistent} iterations report an acceptanceLength other than 1 + accepted / requests")
    chosen_k, source = k, "given"
    if chosen_k is None:
        chosen_k = _integral(drafted / requests, 1e-6)
        source = "numDraftTokens / numRequestsWithDraftTokens"
        if chosen_k is None:
            chosen_k = math.ceil(drafted / requests)
            source = "rounded up from numDraftTokens / numRequestsWithDraftTokens (drafts of varying length)"
    return [
        Measurement(
            engine="trtllm",
            format="trtllm-iteration-stats",
            label=None,
            cycles=requests,
            draft_tokens=drafted,
            accepted=accepted,
            k=chosen_k,
            k_source=source,
            batch=float(np.mean(batches)) if batches else None,
            notes=tuple(notes),
        )
    ]


def _llamacpp_log(text: str, k: int | None) -> list[Measurement]:
    rates = [(int(a), int(g)) for _r, a, g in LLAMA_RATE.findall(text)]
    stats_lines = [tuple(int(x) for x in match) for match in LLAMA_STATS.findall(text)]
    notes = ["llama.cpp ends a draft early when the draft's probability falls below --draft-p-min"]
    if rates:
        accepted = float(sum(a for a, _g in rates))
        generated = float(sum(g for _a, g in rates))
        notes.append(f"{len(rates)} 'draft acceptance rate' lines summed")
    else:
        accepted = float(sum(line[3] for line in stats_lines))
        generated = float(sum(line[2] for line in stats_lines))
        notes.append(f"{len(stats_lines)} statistics lines summed")
    if accepted > generated:
        raise _fail(ErrorKind.INCONSISTENT, f"accepted ({accepted:g}) exceeds generated draft tokens ({generated:g})")
    if generated <= 0:
        raise _fail(ErrorKind.ZERO_DRAFTS, "no draft tokens were generated")
    cycles = None
    tokens_per_draft = None
    if stats_lines:
        drafts = sum(line[0] for line in stats_lines)
        tokens = sum(line[2] for line in stats_lines)
        if drafts > 0 and tokens > 0:
            tokens_per_draft = tokens / drafts
            cycles = generated / tokens_per_draft
    chosen_k, source = k, "given (--draft-max)"
    if chosen_k is None:
        if tokens_per_draft is None:
            raise _fail(
                ErrorKind.UNKNOWN_K,
                "the log has acceptance lines but no statistics line with #gen drafts: give k (--draft-max)",
            )
        chosen_k = math.ceil(tokens_per_draft - 1e-9)
        source = "mean draft length (#gen tokens / #gen drafts), rounded up"
    if cycles is None:
        cycles = generated / chosen_k
        notes.append("verifications estimated as generated / k (no statistics line): drafts assumed full length")
    return [
        Measurement(
            engine="llamacpp",
            format="llamacpp-log",
            label=None,
            cycles=cycles,
            draft_tokens=generated,
            accepted=accepted,
            k=chosen_k,
            k_source=source,
            notes=tuple(notes),
        )
    ]


def _llamacpp_example(text: str, k: int | None) -> list[Measurement]:
    found = {name: pattern.findall(text) for name, pattern in LLAMA_EXAMPLE.items()}
    drafted, accepted = float(found["n_drafted"][-1]), float(found["n_accept"][-1])
    chosen_k, source = k, "given"
    if chosen_k is None and found["n_draft"]:
        chosen_k, source = int(found["n_draft"][-1]), "n_draft"
    if chosen_k is None or chosen_k < 1:
        raise _fail(ErrorKind.UNKNOWN_K, "the summary has no n_draft: give k (--draft-max)")
    if drafted <= 0:
        raise _fail(ErrorKind.ZERO_DRAFTS, "n_drafted is 0: nothing was drafted")
    if accepted > drafted:
        raise _fail(ErrorKind.INCONSISTENT, f"n_accept ({accepted:g}) exceeds n_drafted ({drafted:g})")
    return [
        Measurement(
            engine="llamacpp",
            format="llamacpp-speculative",
            label=None,
            cycles=drafted / chosen_k,
            draft_tokens=drafted,
            accepted=accepted,
            k=chosen_k,
            k_source=source,
            notes=("verifications estimated as n_drafted / n_draft: drafts cut short by --draft-p-min count as full",),
        )
    ]


def read_measurements(
    text: str, k: int | None = None, label: str = "model_name", cycles: float | None = None
) -> tuple[str, list[Measurement]]:
    """Detect the format and read one Measurement per class (value of ``label``); k at most MAX_POSITIONS."""
    format_name, measurements = _read(text, k, label, cycles)
    for measurement in measurements:
        if measurement.k is not None and not 1 <= measurement.k <= MAX_POSITIONS:
            raise _fail(
                ErrorKind.IMPLAUSIBLE,
                f"k = {measurement.k} ({measurement.k_source}) is outside 1..{MAX_POSITIONS}: "
                "no engine drafts that many",
            )
        if measurement.cycles is not None and measurement.draft_tokens is not None and measurement.cycles > 0:
            per_draft = measurement.draft_tokens / measurement.cycles
            if per_draft > MAX_POSITIONS + 1e-9:
                raise _fail(
                    ErrorKind.IMPLAUSIBLE,
                    f"{per_draft:g} draft tokens per verification, more than {MAX_POSITIONS}: "
                    "the counts are inconsistent",
                )
    return format_name, measurements


def _read(text: str, k: int | None, label: str, cycles: float | None) -> tuple[str, list[Measurement]]:
    format_name = detect_format(text)
    if format_name.startswith("vllm"):
        return format_name, _vllm(text, label, k)
    if format_name == "sglang-metrics":
        return format_name, _sglang_metrics(text, label, k, cycles)
    payload = _json_payload(text)
    if format_name == "sglang-server-info":
        return format_name, _sglang_server_info(payload, k, cycles)
    if format_name == "trtllm-iteration-stats":
        return format_name, _trtllm(payload, k)
    if format_name == "llamacpp-log":
        return format_name, _llamacpp_log(text, k)
    return format_name, _llamacpp_example(text, k)


def _minus(name: str, now: float | None, then: float | None) -> float | None:
    if now is None or then is None:
        return now
    if now < then:
        raise _fail(
            ErrorKind.COUNTER_RESET,
            f"{name} went down from {then:g} in the baseline to {now:g}: counters only grow, so the server was "
            "restarted in between (scrape a new baseline)",
        )
    return now - then


def subtract_baseline(measurements: list[Measurement], baseline: list[Measurement]) -> list[Measurement]:
    """Counts accumulated since an earlier scrape of the same server, class by class (vLLM counters)."""
    earlier = {m.label: m for m in baseline}
    result = []
    for now in measurements:
        then = earlier.get(now.label)
        if then is None:
            result.append(now)
            continue
        if len(then.per_position) not in (0, len(now.per_position)):
            raise _fail(ErrorKind.COUNTER_RESET, "the baseline has another number of draft positions: k changed")
        positions = tuple(
            _minus(f"vllm:spec_decode_num_accepted_tokens_per_pos{{position={i}}}", a, b) or 0.0
            for i, (a, b) in enumerate(
                zip(now.per_position, then.per_position or (0.0,) * len(now.per_position), strict=True)
            )
        )
        result.append(
            replace(
                now,
                cycles=_minus("vllm:spec_decode_num_drafts", now.cycles, then.cycles),
                draft_tokens=_minus("vllm:spec_decode_num_draft_tokens", now.draft_tokens, then.draft_tokens),
                accepted=_minus("vllm:spec_decode_num_accepted_tokens", now.accepted, then.accepted),
                emitted=_minus("vllm:spec_decode_num_emitted_tokens", now.emitted, then.emitted),
                per_position=positions,
                efficiency=None,
                notes=(*now.notes, "counts since the baseline scrape"),
            )
        )
    return result


def read_with_baseline(
    text: str, baseline: str, k: int | None = None, label: str = "model_name"
) -> tuple[str, list[Measurement]]:
    """A vLLM scrape minus an earlier one of the same server (to drop warm-up traffic)."""
    format_name, now = read_measurements(text, k=k, label=label)
    if not format_name.startswith("vllm"):
        raise _fail(ErrorKind.INCONSISTENT, f"a baseline is subtracted from vLLM counters only; this is {format_name}")
    baseline_format, then = read_measurements(baseline, k=k, label=label)
    if baseline_format != format_name:
        raise _fail(ErrorKind.INCONSISTENT, f"the baseline is {baseline_format}, the scrape {format_name}")
    return format_name, subtract_baseline(now, then)


# ---------------------------------------------------------------------------
# Calibration with an interval


def _wilson(successes: float, trials: float, level: float) -> tuple[float, float]:
    z = float(stats.norm.ppf(0.5 + level / 2))
    if trials <= 0:
        return 0.0, 1.0
    share = successes / trials
    denominator = 1 + z * z / trials
    centre = (share + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def _length_sd(p: float, k: int) -> float:
    distribution = np.array(closed_form.accepted_distribution(p, k))
    values = np.arange(k + 1, dtype=np.float64)
    mean = float(distribution @ values)
    return math.sqrt(max(float(distribution @ values**2) - mean * mean, 0.0))


def acceptance_interval(measurement: Measurement, p: float, k: int, level: float = INTERVAL_LEVEL) -> Interval:
    """An interval of p from the counts: likelihood-shaped where per-position counts exist, else from the mean."""
    if measurement.schema == "v0" and measurement.draft_tokens and measurement.accepted is not None:
        low, high = _wilson(measurement.accepted, measurement.draft_tokens, level)
        return Interval(low, high, level, "Wilson score: accepted / drafted estimates p directly (V0 counters)")
    if measurement.per_position and measurement.cycles:
        successes = float(sum(measurement.per_position))
        rejections = measurement.cycles - measurement.per_position[-1]
        low, high = _wilson(successes, successes + rejections, level)
        return Interval(
            low, high, level, "Wilson score on accepted tokens out of accepted + rejections (per-position counts)"
        )
    if measurement.cycles and measurement.accepted is not None:
        z = float(stats.norm.ppf(0.5 + level / 2))
        length = 1.0 + measurement.accepted / measurement.cycles
        half = z * _length_sd(p, k) / math.sqrt(measurement.cycles)
        low_length = min(max(length - half, 1.0), k + 1.0)
        high_length = min(max(length + half, 1.0), k + 1.0)
        return Interval(
            closed_form.acceptance_from_mean_length(low_length, k),
            closed_form.acceptance_from_mean_length(high_length, k),
            level,
            "normal interval of the mean acceptance length over the verifications, mapped through E[T](p, k)",
        )
    return Interval(None, None, level, "none: the report holds a mean, not counts (give cycles for an interval)")


def to_counters(measurement: Measurement) -> calibration.SpecDecodeCounters:
    if measurement.schema == "v0":
        return calibration.SpecDecodeCounters(
            schema="v0",
            drafts=None,
            draft_tokens=measurement.draft_tokens or 0.0,
            accepted_tokens=measurement.accepted or 0.0,
            emitted_tokens=measurement.emitted,
            efficiency=measurement.efficiency,
            model_name=measurement.label,
            series=measurement.series,
        )
    cycles = measurement.cycles
    if cycles is None:  # a mean alone: one nominal verification carries it
        cycles = 1.0
    return calibration.SpecDecodeCounters(
        schema="v1",
        drafts=cycles,
        draft_tokens=measurement.draft_tokens if measurement.draft_tokens is not None else 0.0,
        accepted_tokens=measurement.accepted if measurement.accepted is not None else 0.0,
        accepted_per_position=measurement.per_position,
        model_name=measurement.label,
        series=measurement.series,
    )


def calibrate_measurement(
    measurement: Measurement, c: float, k_max: int, verify: closed_form.VerifyCost = closed_form.free_verification
) -> EngineCalibration:
    result = calibration.calibrate_from_counters(to_counters(measurement), c, k_max, verify, measurement.k)
    interval = acceptance_interval(measurement, result.acceptance, result.k)
    return EngineCalibration(measurement, result, interval, [*measurement.notes, *result.notes])


def pooled(measurements: list[Measurement]) -> Measurement | None:
    """All classes summed, when they share k and carry counts; None otherwise."""
    if len(measurements) < 2:
        return None
    first = measurements[0]
    if any(m.schema != first.schema or m.cycles is None for m in measurements):
        return None
    positions = {len(m.per_position) for m in measurements}
    if len(positions) != 1:
        return None
    width = positions.pop()
    return Measurement(
        engine=first.engine,
        format=first.format,
        label=None,
        cycles=sum(m.cycles or 0.0 for m in measurements),
        draft_tokens=sum(m.draft_tokens or 0.0 for m in measurements),
        accepted=sum(m.accepted or 0.0 for m in measurements),
        per_position=tuple(sum(m.per_position[i] for m in measurements) for i in range(width)),
        k=first.k,
        k_source=first.k_source,
        batch=first.batch,
        schema=first.schema,
        emitted=sum(m.emitted or 0.0 for m in measurements) if first.schema == "v0" else None,
        series=sum(m.series for m in measurements),
        notes=(f"all {len(measurements)} classes summed",),
    )


# ---------------------------------------------------------------------------
# Samples for tests and examples: each format written from seeded i.i.d. acceptance


def sample_accepted(p: float, k: int, cycles: int, seed: int) -> np.ndarray:
    """Accepted drafts per verification: truncated geometric draws."""
    rng = np.random.default_rng(seed)
    if p >= 1:
        return np.full(cycles, k)
    return np.minimum(rng.geometric(1.0 - p, size=cycles) - 1, k)


def example_report(format_name: str, p: float, k: int, cycles: int, seed: int, classes: int = 1) -> str:
    """A report in ``format_name`` after ``cycles`` verifications per class with i.i.d. acceptance p."""
    if format_name not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    accepted = [sample_accepted(p, k, cycles, seed + index) for index in range(classes)]
    if format_name == "vllm-metrics":
        lines = []
        for kind, help_text in (
            ("num_drafts", "Number of spec decoding drafts."),
            ("num_draft_tokens", "Number of draft tokens."),
            ("num_accepted_tokens", "Number of accepted tokens."),
            ("num_accepted_tokens_per_pos", "Accepted tokens per draft position."),
        ):
            lines += [
                f"# HELP vllm:spec_decode_{kind}_total {help_text}",
                f"# TYPE vllm:spec_decode_{kind}_total counter",
            ]
            for index, draws in enumerate(accepted):
                base = f'engine="0",model_name="model-{index}"'
                if kind == "num_drafts":
                    lines.append(f"vllm:spec_decode_{kind}_total{{{base}}} {float(cycles)}")
                elif kind == "num_draft_tokens":
                    lines.append(f"vllm:spec_decode_{kind}_total{{{base}}} {float(cycles * k)}")
                elif kind == "num_accepted_tokens":
                    lines.append(f"vllm:spec_decode_{kind}_total{{{base}}} {float(draws.sum())}")
                else:
                    for position in range(k):
                        value = float(np.sum(draws > position))
                        lines.append(f'vllm:spec_decode_{kind}_total{{{base},position="{position}"}} {value}')
        lines += ["# TYPE vllm:num_requests_running gauge", 'vllm:num_requests_running{engine="0"} 8.0']
        return "\n".join(lines) + "\n"
    draws = accepted[0]
    length = 1.0 + float(draws.mean())
    if format_name == "sglang-metrics":
        return (
            "# HELP sglang:spec_accept_length The average acceptance length of speculative decoding.\n"
            "# TYPE sglang:spec_accept_length gauge\n"
            f'sglang:spec_accept_length{{model_name="target"}} {length!r}\n'
            "# TYPE sglang:spec_accept_rate gauge\n"
            f'sglang:spec_accept_rate{{model_name="target"}} {(length - 1) / k!r}\n'
        )
    if format_name == "sglang-server-info":
        return json.dumps(
            {
                "speculative_num_steps": k,
                "speculative_eagle_topk": 1,
                "speculative_num_draft_tokens": k + 1,
                "internal_states": [{"avg_spec_accept_length": length, "last_gen_throughput": 100.0}],
            }
        )
    if format_name == "trtllm-iteration-stats":
        batch = 8
        iterations = []
        for start in range(0, cycles, batch):
            chunk = draws[start : start + batch]
            iterations.append(
                {
                    "iter": start // batch,
                    "numActiveRequests": len(chunk),
                    "inflightBatchingStats": {"numGenRequests": len(chunk), "numContextRequests": 0},
                    "specDecodingStats": {
                        "numDraftTokens": len(chunk) * k,
                        "numAcceptedTokens": int(chunk.sum()),
                        "numRequestsWithDraftTokens": len(chunk),
                        "acceptanceLength": 1.0 + float(chunk.mean()),
                        "iterLatencyMS": 1.0,
                        "draftOverhead": 0.2,
                    },
                }
            )
        return json.dumps(iterations)
    if format_name == "llamacpp-log":
        lines = []
        for task, start in enumerate(range(0, cycles, 500)):
            chunk = draws[start : start + 500]
            got, made = int(chunk.sum()), len(chunk) * k
            lines += [
                f"slot print_timing: id  0 | task {task} |",
                f"draft acceptance rate = {got / made:0.5f} ({got:5d} accepted / {made:5d} generated)",
                f"statistics draft: #calls(b,g,a) = 1 {len(chunk)} {len(chunk)}, #gen drafts = {len(chunk)}, "
                f"#acc drafts = {int(np.sum(chunk > 0))}, #gen tokens = {made}, #acc tokens = {got}, "
                "dur(b,g,a) = 0.006, 21.272, 0.010 ms",
            ]
        return "\n".join(lines) + "\n"
    if format_name == "llamacpp-speculative":
        return (
            f"n_draft   = {k}\nn_predict = {int(draws.sum()) + cycles}\nn_drafted = {cycles * k}\n"
            f"n_accept  = {int(draws.sum())}\naccept    = {100 * draws.sum() / (cycles * k):.3f}%\n"
        )
    # vllm-metrics-v0: every accepted position counts, prefix or not; emitted = accepted prefix + bonus
    rng = np.random.default_rng(seed + 99)
    any_position = int(rng.binomial(cycles * k, p))
    emitted = int(draws.sum()) + cycles
    return (
        f"vllm:spec_decode_num_draft_tokens_total {float(cycles * k)}\n"
        f"vllm:spec_decode_num_accepted_tokens_total {float(any_position)}\n"
        f"vllm:spec_decode_num_emitted_tokens_total {float(emitted)}\n"
        f"vllm:spec_decode_efficiency {emitted / (cycles * (k + 1))!r}\n"
    )
