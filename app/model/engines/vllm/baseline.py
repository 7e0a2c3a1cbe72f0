"""vLLM's counters since an earlier scrape of the same server: a scrape minus a baseline, class by class (to
drop warm-up traffic); a counter that went down means the server restarted in between."""

from __future__ import annotations

from dataclasses import replace

from app.model.engines.reports import ErrorKind, Measurement, fail


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
