"""Steps 2 and 3: the best k per batch on the user's setup, and that schedule as the engine's config."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from app.model import engines, limits
from app.model.arithmetic.acceptance import iid_p
from app.model.cost import published
from app.model.limits import InputError
from app.service import plan, plan_inputs
from app.service.plan_inputs import engine_title
from app.service.regimes import BuiltSetup, SetupError, accuracy_out, build_setup, devices_note
from app.web.pages.controls import Control, ControlError, Reading, changed_from_defaults
from app.web.pages.figures import COLORS, break_even, figure, line
from app.web.pages.text import cells, fixed, times
from app.web.pages.views import batch as batch_view
from app.web.pages.views.decide.controls import (
    DATA_PARALLEL,
    DRAFT_PATH,
    ENGINE_VERSION,
    METHOD,
    SCHEDULE_POINTS,
    SETUP_CONTROLS,
)

# ---------------------------------------------------------------------------
# 3. The k schedule on the default setup


def user_setup(reading: Reading) -> BuiltSetup:
    """The roofline of the user's setup; a setup the model refuses is refused naming the control's label."""
    try:
        return build_setup(batch_view.setup_request(reading))
    except SetupError as error:
        control = next((item for item in SETUP_CONTROLS if item.name == error.name), SETUP_CONTROLS[0])
        raise ControlError(control, f"{control.label}: {error.message}") from None


def setup_text(built: BuiltSetup) -> str:
    setup = built.setup
    draft = f"{setup.draft.name}, drafting all k in one pass" if setup.parallel_draft else setup.draft.name
    devices = f"{setup.devices} × {setup.accelerator.name}{devices_note(built)}"
    return f"{devices}, target {setup.target.name}, draft {draft}, context {setup.context_tokens} tokens"


def schedule_part(made: plan.Plan) -> tuple[dict[str, Any], dict[str, Any]]:
    """Best k per batch on the user's setup over the batches that fit in its memory: the plan's decision."""
    decision, accepted, built, k_max = made.decision, made.acceptance, made.built, made.request.k_max
    p = iid_p(accepted)
    steps = decision.steps
    batches = np.arange(1, decision.batch_limit + 1, dtype=np.int64)
    best_k, best_speedup = np.asarray(decision.best_k), np.asarray(decision.best_speedup)
    # The chart needs every step's ends and enough batches between them for a smooth curve on a log axis.
    ends = [index for step in steps for index in (step.batch_from - 1, step.batch_to - 1)]
    spread = np.round(np.geomspace(1, max(decision.batch_limit, 1), SCHEDULE_POINTS)).astype(np.int64) - 1
    shown = np.unique(np.concatenate((spread, ends))) if steps else np.array([], dtype=np.int64)
    rows = [
        cells(
            f"{step.batch_from}–{step.batch_to}" if step.batch_to > step.batch_from else str(step.batch_from),
            str(step.k) if step.k else "off",
            f"{times(step.speedup_at_from)} → {times(step.speedup_at_to)}"
            if step.batch_to > step.batch_from
            else times(step.speedup_at_from),
            header=True,
        )
        for step in steps
    ]
    summary = f"At p = {fixed(p, 3)}: {decision.headline}"
    if accepted.measured:
        summary = f"From the measured acceptance profile (p = {fixed(p, 3)} beyond it): {decision.headline}"
    fits = (
        f"The largest batch that fits in {fixed(decision.capacity_gb, 0)} GB: {decision.max_batch_that_fits}"
        if decision.max_batch_that_fits
        else f"Not even batch 1 fits in {fixed(decision.capacity_gb, 0)} GB: add devices"
    )
    ks = best_k[shown].tolist()
    chart = figure(
        [
            line(
                "speedup at the best k",
                batches[shown].tolist(),
                best_speedup[shown].tolist(),
                customdata=ks,
                line={"color": COLORS["accent"], "width": 3},
                hovertemplate="batch %{x}: %{y:.2f}× at k = %{customdata}<extra></extra>",
            ),
            line(
                "best k",
                batches[shown].tolist(),
                ks,
                yaxis="y2",
                line={"shape": "hv", "color": COLORS["good"], "dash": "dot", "width": 2},
                hovertemplate="batch %{x}: k = %{y}<extra></extra>",
            ),
            break_even(1, max(decision.batch_limit, 1), width=1.5),
        ],
        "batch size (only batches that fit)",
        "speedup ×",
        x={"type": "log", "dtick": 1},
        y={"rangemode": "tozero", "tickformat": ".1f"},
        yaxis2={
            "title": {"text": "best k", "standoff": 8},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
            "automargin": True,
            **({"dtick": 1} if k_max <= 16 else {}),
        },
    )
    part = {
        "summary": summary,
        "fits": fits,
        "max_batch_that_fits": decision.max_batch_that_fits,
        "setup": setup_text(built),
        "accuracy": _accuracy_line(built),
        "table": {"columns": ["Batch sizes", "Best k", "Speedup"], "rows": rows},
    }
    return part, chart


def _accuracy_line(built: BuiltSetup) -> str:
    """How good the schedule is, in one line (the whole account is on /batch and in the API's accuracy)."""
    if built.measured is not None:
        return f"How good: {built.measured.sentence} (see /batch)."
    given = "" if accuracy_out(built.setup).source == "defaults" else "the terms given here; "
    mine = published.accuracy_for(published.class_of_setup(built.setup))  # the setup's class, as /batch states it
    return f"How good: {given}{mine.sentence} (see /batch)."


def setup_params(reading: Reading) -> list[tuple[str, str]]:
    """The setup's controls that differ from their defaults, as API parameters (names and values as the page's
    address writes them; the link encodes them)."""
    return [*changed_from_defaults(SETUP_CONTROLS, reading).items()]


def _config_choice(reading: Reading, control: Control, check: Callable[[str], object]) -> str | None:
    """A text control's value for the engine, or None (the default) with the reason on the page when refused."""
    text = reading.text(control.name).strip()
    if not text:
        return None
    try:
        check(text)
    except ValueError as error:
        message = error.message if isinstance(error, InputError) else str(error)
        reading.correct(control, "", f"{control.label}: {message}")
        return None
    return text


def plan_request(reading: Reading, p: float, profile: tuple[float, ...], p_low: float | None) -> plan.PlanRequest:
    """The page's plan request: its engine and choices (a refused choice falls back to the default, with the
    reason beside its control), the calibrated acceptance, and the lower end of its interval for the alerts."""
    engine = reading.text("engine")
    module = engines.adapter(engine)
    version = _config_choice(reading, ENGINE_VERSION, lambda name: engines.version(engine, name))
    method = _config_choice(reading, METHOD, module.choose_method)
    draft_path = _config_choice(reading, DRAFT_PATH, plan_inputs.DRAFT_PATH.check)
    return plan.PlanRequest(
        engine=engine,
        p=p,
        profile=profile,
        k_max=reading.integer("k_max"),
        batch_max=limits.MAX_BATCH,
        batch=reading.integer("batch"),
        data_parallel=reading.integer(DATA_PARALLEL.name),
        method=method,
        draft_path=draft_path,
        version=version,
        p_low=p_low if p_low is not None and p_low <= p else None,
    )


def config_part(made: plan.Plan) -> dict[str, Any]:
    """The plan's config, as /api/v1/engine-config serves it for the same query."""
    out = made.config_out()
    engine = made.request.engine
    return {
        "engine": engine_title(engine),
        "engine_version": f"{engine_title(engine)} {out.engine_version}",
        "headline": out.headline,
        "text": out.text,
        "files": [{"name": name, "text": text} for name, text in out.files.items()],
        "placeholders": list(out.placeholders),
        # where tokens per verification come from is said under the schedule (step 2), once
        "notes": [note for note in out.notes if note != made.acceptance_note],
        "sources": list(out.sources),
    }
