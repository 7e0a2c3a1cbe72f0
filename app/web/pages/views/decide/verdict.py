"""The verdict /decide opens with: the plan's schedule, its speedup at the user's batch, and where the acceptance
came from; the config it runs is the plan's (step 3 below shows its notes, the rules and the dashboard)."""

from __future__ import annotations

from typing import Any

from app.model.cost import presets
from app.model.cost.regimes import ScheduleStep
from app.model.live import served_models
from app.service import plan
from app.service.regimes import accuracy_out, off_range_text, off_ranges
from app.web.pages.controls import Reading
from app.web.pages.text import times

# How many ranges of the schedule the verdict names before it elides the middle ones (the table has them all).
SHOWN_STEPS = 4


def _batches(step: ScheduleStep) -> str:
    if step.batch_to == step.batch_from:
        return f"batch {step.batch_from}"
    return f"batches {step.batch_from}–{step.batch_to}"


def schedule_text(steps: list[ScheduleStep], batch_limit: int) -> str:
    """'k = 4 at batches 1–7, k = 3 at batches 8–29, off from batch 30' (the schedule in one line)."""
    if not steps:
        return "nothing fits"
    parts: list[str] = []
    for step in steps:
        if step.k:
            parts.append(f"k = {step.k} at {_batches(step)}")
        else:
            last = step.batch_to >= batch_limit
            parts.append(f"off from batch {step.batch_from}" if last else f"off at {_batches(step)}")
    if len(parts) > SHOWN_STEPS:
        parts = [*parts[: SHOWN_STEPS - 1], "…", parts[-1]]
    return ", ".join(parts)


def verdict_part(made: plan.Plan, batch: int, source: str) -> dict[str, str]:
    """The one answer: the schedule, the speedup at the user's batch, and where the acceptance comes from."""
    decision = made.decision
    if decision.batch_limit < 1:
        return {"schedule": "Nothing fits on this setup", "speedup": decision.headline, "source": source}
    at = min(max(batch, 1), decision.batch_limit)
    k, speedup = decision.best_k[at - 1], decision.best_speedup[at - 1]
    where = f"at batch {at}" + (f" (batch {batch} does not fit)" if batch > decision.batch_limit else "")
    if decision.off_from_batch is None and not decision.loses_at_batch_one:
        headline = "Speculate"
    elif decision.loses_at_batch_one and all(value == 0 for value in decision.best_k):
        headline = "Do not speculate"
    else:
        headline = "Speculate where it pays"
    schedule = schedule_text(decision.steps, decision.batch_limit)
    if decision.off_from_batch is None and decision.best_k[-1]:
        fits = decision.batch_limit == decision.max_batch_that_fits
        largest = "the largest that fits" if fits else "the last decided"
        schedule += f"; it still pays at batch {decision.batch_limit}, {largest}"
    interval = off_range_text(off_ranges(decision, accuracy_out(made.built.setup, made.built.measured)))
    return {
        "schedule": f"{headline}: {schedule}",
        "speedup": (f"k = {k}, {times(speedup)} {where}" if k else f"leave it off {where} (1.00×)"),
        "source": source,
        "interval": f"{interval[0].upper()}{interval[1:]}." if interval else "",
    }


def acceptance_source(made: plan.Plan, engine: dict[str, Any], mode: str) -> str:
    """Where the plan's acceptance comes from, in a few words."""
    described = made.acceptance.describe()
    if engine.get("fetch"):
        return "No report read yet (the URL was not fetched): these are the example report's numbers, not yours."
    if engine.get("example"):
        return f"From the example report ({described}): paste your server's to decide on yours."
    if mode == "metrics":
        return f"From your {engine.get('engine') or 'engine'}'s report: {described}."
    return f"From the {'acceptance rate' if mode == 'rate' else 'mean acceptance length'} you gave: {described}."


def target_from_report(reading: Reading, engine: dict[str, Any]) -> str:
    """The target model a report's model_name names: chosen for the user when they have not chosen one, and a note
    when it is not the one they chose or names no preset.  Returns the note ('' when there is nothing to say)."""
    served = str(engine.get("served_model") or "")
    if not served or engine.get("example") or engine.get("fetch"):
        return ""
    key = served_models.preset_for(served)
    chosen = reading.text("model")
    if key is None:
        return (
            f"The report's model_name {served!r} matches no target preset: the schedule is for "
            f"{presets.MODELS[chosen].name}; choose the closest one under Your setup."
        )
    if "model" in reading.given:
        if key == chosen:
            return ""
        return (
            f"The report's model_name {served!r} is the {presets.MODELS[key].name} preset, not the chosen target "
            f"{presets.MODELS[chosen].name}: the schedule is for the chosen one."
        )
    reading.values["model"] = key
    return f"Target model {presets.MODELS[key].name}, from the report's model_name {served!r}."


__all__ = ["acceptance_source", "schedule_text", "target_from_report", "verdict_part"]
