"""Decide for my server: from what the server reports to the config it takes.

One step per section, each with its own results: (1) p from a draft acceptance rate, a mean acceptance
length or any engine's report (vLLM or SGLang /metrics, SGLang /server_info, TensorRT-LLM iteration stats,
a llama.cpp log; POSTed to the view as a JSON body, never in the URL; a URL only where the server may fetch);
(2) the best k per batch on the user's setup at the calibrated p, only at batches that fit; (3) that schedule
as the chosen engine's config; (4) the draft sources side by side; (5) chains against trees; (6) the user's own
servers measured over batch sizes, where the deployment allows it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from app.service import plan
from app.web.pages.controls import Reading
from app.web.pages.page import Page, View
from app.web.pages.text import fixed
from app.web.pages.views.decide.calibrate import (
    calibrate,
    calibration_figure,
    calibration_part,
    example_link,
    positions_figure,
    recommendation,
    rollout_table,
)
from app.web.pages.views.decide.controls import (
    ACCEPTANCE,
    BASELINE,
    BUDGET,
    CONTROLS,
    EXAMPLE_DRAFTS,
    EXAMPLE_K,
    EXAMPLE_P,
    EXAMPLE_SEED,
    METRICS,
    SOURCE_CONTROLS,
    TREE_REGIME,
    chosen_cost,
)
from app.web.pages.views.decide.measure import measure_part
from app.web.pages.views.decide.schedule import config_part, plan_request, schedule_part, setup_params, user_setup
from app.web.pages.views.decide.sources import sources_part
from app.web.pages.views.decide.trees import trees_part
from app.web.pages.views.decide.verdict import acceptance_source, target_from_report, verdict_part
from app.web.pages.views.decide.watch import watch_part

# The controls folded under "other options" (other draft sources, trees): an address that sets one opens them.
OTHER_OPTIONS = frozenset(
    {ACCEPTANCE.name, BUDGET.name, TREE_REGIME.name}
    | {control.name for controls in SOURCE_CONTROLS.values() for control in controls}
)


# The big cards and the verdict while no report has been read (a URL the server may not fetch).
NO_RESULT = {"p": "–", "best_k": "–", "best_speedup": "–", "observed": "–"}


def build(reading: Reading) -> View:
    if reading.body is None and reading.text("url").strip():  # an address naming a report URL reads it, not the
        reading = replace(reading, body={})  # example: as if posted with an empty paste box
    chosen = chosen_cost(reading, reading.number("c"))
    result, calibration_link, engine = calibrate(reading, chosen)
    sources, sources_chart, sources_link = sources_part(reading, chosen.verify)
    target_note = target_from_report(reading, engine)  # before the setup: a report's model_name may choose it
    built = user_setup(reading)
    setup = setup_params(reading)
    if engine["several"]:  # the classes in rollout order, on this setup
        engine["rollout"] = rollout_table(reading, built)
    profile = tuple(position.rate for position in result.positions)
    # the rules and the dashboard alert below the calibrated interval's lower end
    low = engine.get("p_low")
    # one plan: the schedule, the config, the rules and the dashboard below are all read from it
    made = plan.build(plan_request(reading, result.acceptance, profile, low if isinstance(low, float) else None), built)
    schedule, schedule_chart = schedule_part(made)
    schedule["acceptance_model"] = "Tokens per verification from " + made.acceptance.describe() + "."
    config = config_part(made)
    trees_cost = chosen_cost(reading, reading.number("c"), "tree_regime")
    tree_part, trees_chart, trees_speedup_chart, trees_link = trees_part(reading, trees_cost, result.acceptance)
    watch = watch_part(made)
    decision = made.decision
    calibrated = calibration_part(reading, result)
    calibrated["engine"] = engine
    calibrated.update(recommendation(decision, reading.integer("batch"), result, chosen))
    if target_note:
        engine["notes"] = [target_note, *engine["notes"]]
    verdict: dict[str, Any] = {
        **verdict_part(made, reading.integer("batch"), acceptance_source(made, engine, reading.text("mode"))),
        "target": target_note,
        "ready": not engine["fetch"],
    }
    if engine["fetch"]:  # no report of the user's was read: nothing of the example's passes for a result
        calibrated.update(NO_RESULT)
        verdict.update(schedule="No report read yet", speedup="–")
    return {
        "verdict": verdict,
        "other_options": {"open": bool(reading.given & OTHER_OPTIONS)},
        "cost": {"regime": chosen.regime.label, "c": fixed(chosen.c, 3)},
        "calibration": calibrated,
        "sources": sources,
        "schedule": schedule,
        "config": config,
        "watch": watch,
        "trees": tree_part,
        "measure": measure_part(),
        "figures": {
            "calibration": calibration_figure(result),
            "positions": positions_figure(result),
            "sources": sources_chart,
            "schedule": schedule_chart,
            "trees": trees_chart,
            "trees_speedup": trees_speedup_chart,
        },
        "links": {
            "calibration": calibration_link["href"],
            "calibration_text": calibration_link["text"],
            "example": example_link(reading.number("example_p")),
            "sources": sources_link,
            **made.links(setup),
            "trees": trees_link,
        },
    }


PAGE = Page(
    name="decide",
    path="/decide",
    nav="Decide for my server",
    nav_short="Decide",
    title="From serving metrics to a decision",
    question="What p does my server see, which draft source and k should I run, and do trees pay?",
    template="pages/decide.html",
    controls=CONTROLS,
    build=build,
    body_controls=(METRICS, BASELINE),
    legacy_keys=("dec_", "cal_", "src_", "tree_"),
)

__all__ = ["EXAMPLE_DRAFTS", "EXAMPLE_K", "EXAMPLE_P", "EXAMPLE_SEED", "PAGE", "SOURCE_CONTROLS", "build"]
