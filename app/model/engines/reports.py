"""The toolkit every engine's report readers share: one class's counts (:class:`Measurement`), errors that
say what is wrong, and parsers for the shapes engines write (Prometheus text, JSON and JSON Lines).

The readers themselves live in each engine's package (``app/model/engines/<engine>/reports.py``); detection and
calibration across engines in :mod:`app.model.live.engine_metrics`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.model.counters import prometheus_text
from app.model.counters.calibration import (
    MAX_COUNTER,
    MAX_EXPOSITION_BYTES,
    MAX_POSITIONS,
    VLLM_DRAFTS,
    CalibrationError,
    ErrorKind,
)
from app.model.counters.counts import Measurement

MAX_CLASSES = 32
MAX_JSON_ITEMS = 100_000

__all__ = ["MAX_EXPOSITION_BYTES", "MAX_POSITIONS", "ErrorKind", "Measurement"]


class EngineFormatError(CalibrationError):
    """A body no engine format explains, or whose numbers cannot be calibrated; says what is wrong."""


@dataclass(frozen=True)
class ReadOptions:
    """What the caller knows beside the report."""

    k: int | None = None
    label: str = "model_name"
    cycles: float | None = None
    draft_lengths: tuple[int, ...] = ()


@dataclass(frozen=True)
class ReportFormat:
    """One report format of one engine: how to recognise it and read it (its samples are in tests.samples)."""

    name: str
    engine: str
    description: str
    versions: tuple[str, ...]  # the engine versions that write it
    detect: Callable[[str, Any], bool]  # (text, JSON payload or None) -> is it this format
    read: Callable[[str, Any, ReadOptions], list[Measurement]]
    # (now, baseline) -> counts since the baseline, for formats of counters that only grow; None for the others
    subtract_baseline: Callable[[list[Measurement], list[Measurement]], list[Measurement]] | None = None
    # the format's own name for the count of verifications (drafts), which an error about none names
    verifications: str = VLLM_DRAFTS


def fail(kind: ErrorKind, message: str) -> EngineFormatError:
    return EngineFormatError(kind, message)


def clip(text: str, limit: int = 100) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def json_payload(text: str) -> Any | None:
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
            raise fail(
                ErrorKind.UNPARSEABLE, f"the body looks like JSON but line {number} does not parse ({error.msg})"
            ) from None
        if len(items) > MAX_JSON_ITEMS:
            raise fail(ErrorKind.TOO_LARGE, f"more than {MAX_JSON_ITEMS:,} JSON lines")
    return items


def text_matching(pattern: str) -> Callable[[str, Any], bool]:
    """A detector of a text report (not JSON) with a line that ``pattern`` matches at its start."""
    line = re.compile(pattern, re.MULTILINE)
    return lambda text, payload: payload is None and line.search(text) is not None


def json_with(*keys: str, without: tuple[str, ...] = ()) -> Callable[[str, Any], bool]:
    """A detector of a JSON report holding one of ``keys`` (at any depth) and none of ``without``."""
    return lambda text, payload: (
        payload is not None and has_key(payload, keys) and not (without and has_key(payload, without))
    )


def has_key(value: Any, keys: tuple[str, ...], depth: int = 0) -> bool:
    if depth > 4:
        return False
    if isinstance(value, Mapping):
        return any(key in value for key in keys) or any(has_key(item, keys, depth + 1) for item in value.values())
    if isinstance(value, list):
        return any(has_key(item, keys, depth + 1) for item in value[:50])
    return False


def check_text(text: str, what: str, empty_hint: str) -> None:
    """A TOO_LARGE or EMPTY error for a text no reader should parse (``what`` names it, the hint says what to
    paste)."""
    if len(text.encode("utf-8", errors="replace")) > MAX_EXPOSITION_BYTES:
        raise fail(ErrorKind.TOO_LARGE, f"{what} is larger than {MAX_EXPOSITION_BYTES:,} bytes")
    if not text.strip():
        raise fail(ErrorKind.EMPTY, f"{what} is empty: {empty_hint}")


def samples(text: str) -> Iterable[tuple[str, dict[str, str], float]]:
    try:
        for sample in prometheus_text.samples(text):
            yield sample.name, sample.labels, sample.value
    except prometheus_text.ExpositionError as error:
        raise fail(ErrorKind.UNPARSEABLE, f"not a Prometheus text exposition: {error}") from error


def stem_of(name: str, prefix: str) -> str | None:
    """'vllm:spec_decode_num_drafts_total' -> 'spec_decode_num_drafts' for prefix 'vllm' (':' or '_' after it)."""
    for start in (f"{prefix}:", f"{prefix}_"):
        if name.startswith(start):
            stem = name[len(start) :]
            if stem.endswith("_created"):
                return None
            return stem[: -len("_total")] if stem.endswith("_total") else stem
    return None


def position_of(name: str, labels: Mapping[str, str], label: str) -> int:
    """The draft position a per-position series counts, from its ``label``; refused naming the series where it is
    not one from 0 to MAX_POSITIONS - 1."""
    raw = labels.get(label, "")
    position = int(raw) if raw.isdigit() else -1
    if not 0 <= position < MAX_POSITIONS:
        raise fail(ErrorKind.BAD_LABEL, f"{name} needs a {label} label from 0 to {MAX_POSITIONS - 1}; got {raw!r}")
    return position


def check_value(name: str, value: float) -> None:
    if not math.isfinite(value):
        raise fail(ErrorKind.NON_FINITE, f"{name} has the value {value}; counters must be finite")
    if value < 0:
        raise fail(ErrorKind.NEGATIVE, f"{name} is negative ({value:g}); counters never go below 0")
    if value > MAX_COUNTER:
        raise fail(
            ErrorKind.IMPLAUSIBLE, f"{name} is {value:g}, beyond {MAX_COUNTER:g}; no real counter gets that large"
        )


@dataclass
class Group:
    """The spec-decode series of one class: counters summed over its series, gauges, per-position counters."""

    sums: dict[str, float] = field(default_factory=dict)
    gauges: dict[str, list[float]] = field(default_factory=dict)
    positions: dict[str, dict[int, float]] = field(default_factory=dict)  # stem -> position -> count
    series: set[tuple[tuple[str, str], ...]] = field(default_factory=set)


@dataclass(frozen=True)
class PrometheusNames:
    """How one engine names its spec-decode series in Prometheus text."""

    prefix: str  # 'vllm', 'sglang', 'trtllm', 'llamacpp'
    running: str  # the gauge of running requests (the batch)
    spec: str = "spec_"  # stems of spec-decode series start with this
    position_label: str = "position"
    counters: tuple[str, ...] = ()  # stems read as counters (summed); others spec_* are gauges


def groups(text: str, names: PrometheusNames, label: str) -> tuple[dict[str, Group], float | None]:
    """Spec-decode series split by the value of ``label``, and the running requests summed."""
    found: dict[str, Group] = {}
    running: dict[str, float] = {}
    count = 0
    for name, labels, value in samples(text):
        count += 1
        stem = stem_of(name, names.prefix)
        if stem is None:
            continue
        key = labels.get(label, "")
        if stem == names.running:
            running[key] = running.get(key, 0.0) + value if math.isfinite(value) else running.get(key, 0.0)
            continue
        if not stem.startswith(names.spec):
            continue
        check_value(name, value)
        group = found.setdefault(key, Group())
        if len(found) > MAX_CLASSES:
            raise fail(ErrorKind.AMBIGUOUS_MODEL, f"more than {MAX_CLASSES} values of the label {label!r}")
        group.series.add(tuple(sorted((k, v) for k, v in labels.items() if k != names.position_label)))
        if names.position_label in labels:
            position = position_of(name, labels, names.position_label)
            counts = group.positions.setdefault(stem, {})
            counts[position] = counts.get(position, 0.0) + value
        elif stem in names.counters:
            group.sums[stem] = group.sums.get(stem, 0.0) + value
        else:
            group.gauges.setdefault(stem, []).append(value)
    if count == 0:
        raise fail(ErrorKind.NO_SAMPLES, "the exposition holds no samples (only comments or blank lines)")
    total_running = sum(running.values()) if running else None
    return found, total_running


def found_groups(
    text: str, names: PrometheusNames, label: str, none_found: str
) -> tuple[dict[str, Group], float | None]:
    """As :func:`groups`; an UNRELATED error saying ``none_found`` when the text has none of the engine's series."""
    found, running = groups(text, names, label)
    if not found:
        raise fail(ErrorKind.UNRELATED, none_found)
    return found, running


def positions_in_order(counts: dict[int, float], what: str) -> tuple[float, ...]:
    """Per-position counts as a tuple 0..k-1; a 422 when positions are missing in between."""
    if counts and sorted(counts) != list(range(len(counts))):
        raise fail(ErrorKind.BAD_LABEL, f"{what} must cover positions 0..k-1 without gaps; got {sorted(counts)}")
    return tuple(counts[i] for i in range(len(counts)))


def integral(value: float, tolerance: float = 0.02) -> int | None:
    nearest = round(value)
    return int(nearest) if nearest >= 1 and abs(value - nearest) <= tolerance * max(1.0, value) else None


def number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise fail(ErrorKind.NON_FINITE, f"{name} must be a finite number; got {clip(repr(value), 40)}")
    if value < 0:
        raise fail(ErrorKind.NEGATIVE, f"{name} is negative ({value:g})")
    if value > MAX_COUNTER:
        raise fail(ErrorKind.IMPLAUSIBLE, f"{name} is {value:g}, beyond {MAX_COUNTER:g}")
    return float(value)


def mean_only(
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
    if length == 0 or cycles == 0:  # a gauge or counter not yet moved: no verification has run
        name = "sglang:spec_accept_length" if format_name == "sglang-metrics" else f"{engine}'s accept length"
        raise fail(
            ErrorKind.ZERO_DRAFTS,
            f"{name} is {length:g} over {cycles or 0:g} verifications: the server has not speculated yet",
        )
    if not math.isfinite(length) or length < 1:
        raise fail(ErrorKind.INCONSISTENT, f"the accept length is {length:g}; it counts the bonus token, so >= 1")
    if k is None:
        raise fail(
            ErrorKind.UNKNOWN_K,
            "the report gives a mean accept length but not the draft length: give k (speculative_num_steps)",
        )
    if length > k + 1 + 1e-9:
        raise fail(ErrorKind.INCONSISTENT, f"the accept length {length:g} exceeds k + 1 = {k + 1}")
    known = cycles is not None and cycles > 0
    count = float(cycles) if known and cycles is not None else 1.0
    if not known:
        notes.append("a mean without counts: no sampling interval unless cycles (verifications) is given")
    return Measurement(
        engine=engine,
        format=format_name,
        label=label,
        drafts=count if known else None,
        draft_tokens=count * k,
        accepted=count * (min(length, k + 1.0) - 1.0),
        mean_length=length,
        k=k,
        k_source=k_source,
        batch=batch,
        notes=tuple(notes),
    )


# ---------------------------------------------------------------------------
# Shared pieces of readers and sample writers


def increase_measurement(
    engine: str, format_name: str, drafts: float, drafted: float | None, shares: dict[int, float]
) -> Measurement:
    """One class's counts from the counters' increases over a window: drafts, draft tokens (None: every draft
    as long as the positions counted) and the accepted tokens at each position."""
    per_position = tuple(shares.get(i, 0.0) for i in range(max(shares) + 1)) if shares else ()
    return Measurement(
        engine=engine,
        format=format_name,
        label=None,
        drafts=drafts,
        draft_tokens=drafted if drafted is not None else len(per_position) * drafts,
        accepted=float(sum(per_position)),
        per_position=per_position,
    )


# Generated tokens count each request's first token, which no verification gives: tokens per verification may
# pass k + 1 by that much (one token in fifty: requests of 50 tokens or more at k + 1 per verification).
FIRST_TOKEN_SLACK = 0.02


def verification_measurement(
    engine: str, format_name: str, verifications: float, generated: float | None, running_k: Sequence[float]
) -> Measurement | None:
    """One class's counts where an engine counts only verifications and generated tokens, with a gauge of the k
    running (SGLang's): tokens per verification at that k, with the verifications as the count behind it. None
    where there is nothing to read (no verification, no generated tokens, or no k seen); an error where the k
    seen over the window changed, since one mean cannot be split between two draft lengths."""
    ks = sorted({round(value) for value in running_k if math.isfinite(value) and value >= 1})
    if verifications <= 0 or generated is None or not ks:
        return None
    if len(ks) > 1:
        raise fail(
            ErrorKind.INCONSISTENT,
            f"the k running changed over the window ({', '.join(map(str, ks))}): tokens per verification mixes "
            "them, so p cannot be read without bias; ask over a window with one k",
        )
    k = ks[0]
    length = max(generated / verifications, 1.0)
    if length > (k + 1.0) * (1.0 + FIRST_TOKEN_SLACK):
        raise fail(
            ErrorKind.INCONSISTENT,
            f"{length:.3f} tokens per verification is more than k + 1 = {k + 1} allows: the k the gauge shows did not "
            "run all through the window",
        )
    length = min(length, k + 1.0)
    return mean_only(engine, format_name, None, length, k, "the gauge of the k running", verifications, None, [])


def counter_measurement(
    engine: str,
    format_name: str,
    label: str | None,
    drafts: float | None,
    draft_tokens: float,
    accepted: float,
    per_position: tuple[float, ...],
    options: ReadOptions,
    *,
    batch: float | None = None,
    series: int = 1,
    version: str | None = None,
    notes: tuple[str, ...] = (),
    k_source: str = "per-position counters",
) -> Measurement:
    """One class's counts from drafts, draft tokens, accepted tokens and per-position counters."""
    k = options.k
    source = "given"
    if k is None and per_position:
        k, source = len(per_position), k_source
    return Measurement(
        engine=engine,
        format=format_name,
        label=label,
        drafts=drafts,
        draft_tokens=draft_tokens,
        accepted=accepted,
        per_position=per_position,
        k=k,
        k_source=source if k is not None else "counters",
        batch=batch,
        series=series,
        notes=notes,
        draft_lengths=options.draft_lengths,
        version=version,
    )


def single_class(
    engine: str,
    format_name: str,
    options: ReadOptions,
    counts: tuple[float | None, float, float],
    k: int,
    k_source: str,
    notes: Sequence[str],
    per_position: tuple[float, ...] = (),
    version: str | None = None,
    *,
    batch: float | None = None,
    draft_lengths: tuple[int, ...] | None = None,
    requests: tuple[tuple[float, float], ...] = (),
) -> list[Measurement]:
    """The one class of a report that names none (responses' JSON, a log, iteration statistics): ``counts`` are
    (verifications, draft tokens, accepted draft tokens); the draft lengths are those given unless the report
    shows its own."""
    return [
        Measurement(
            engine,
            format_name,
            None,
            *counts,
            per_position,
            k=k,
            k_source=k_source,
            batch=batch,
            notes=tuple(notes),
            draft_lengths=options.draft_lengths if draft_lengths is None else draft_lengths,
            version=version,
            requests=requests,
        )
    ]
