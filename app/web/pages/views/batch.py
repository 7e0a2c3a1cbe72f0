"""Batch size and hardware: where verification stops being free, and which k to run at each batch size.

Everything on the page comes from the API's builders (``app.service.regimes``), so that the page, its
JSON twin and the CSV/JSON links it offers give the same numbers: the sweep over batch sizes, the best-k
schedule and the two-regime p x k tables.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from typing import Any

from app.model import limits
from app.model.arithmetic import closed_form
from app.model.cost import published
from app.model.cost.capacity import fewest_devices
from app.model.cost.presets import (
    ACCELERATORS,
    MODELS,
    draft_preset,
)
from app.model.cost.regimes import REGIME_NAMES, RegimeName
from app.model.limits import InputError
from app.service import regime_inputs, setup_inputs
from app.service.inputs import Input, link
from app.service.regimes import (
    BuiltSetup,
    Measured,
    RegimeRequest,
    SetupError,
    SetupRequest,
    build_regime,
    build_setup,
    p_values_for,
    schedule_out,
    sweep_out,
    two_regime_table,
)
from app.service.schemas.regimes import BatchSweepOut, ScheduleOut, SetupOut, TableOut
from app.web.pages import inputs
from app.web.pages.controls import Control, ControlError, Reading, changed_from_defaults, url_text
from app.web.pages.figures import COLORS, break_even, figure, line, marked
from app.web.pages.page import Page, View
from app.web.pages.text import cells, fixed, times

MAX_BATCH = limits.MAX_BATCH
K_SEARCH_MAX = limits.BATCH_K_SLIDER_MAX  # best k, in the readouts and the schedule alike
TABLE_K_MAX = limits.BATCH_TABLE_K_MAX
GROUPS = setup_inputs.PRESETS  # the presets whose fields a page edits, by prefix


def _control(item: Input, **page: Any) -> Control:
    """The page's control of one input; the one-page version's keys were rg_<name>."""
    return inputs.control(item, legacy=(f"rg_{item.name}",), **page)


BLANK = "blank: the overhead per pass"
SETUP_HELP = {
    "devices": "0 = the fewest that hold both models",
    "drafting": "P-EAGLE and block drafters: one pass always",
}
STEPS = {
    "bandwidth_efficiency": 0.01,
    "compute_efficiency": 0.01,
    **dict.fromkeys(("overhead_us", *(term.name for term in setup_inputs.COST_TERMS)), 1.0),
}
REGIME_OPTIONS = [(name, name) for name in REGIME_NAMES]
SETUP = tuple(
    _control(
        item,
        # a term without a default of its own (the draft step's overhead) is blank until given: the pass's is used
        help=SETUP_HELP.get(item.name, "" if item.kind is not float or item.default is not None else BLANK),
        **({"step": STEPS[item.name]} if item.name in STEPS else {}),
    )
    for item in setup_inputs.SETUP
)
# Where the terms came from: a step fit's steps and out-of-sample error, written with its terms (blank: not measured)
MEASURED = tuple(inputs.control(item) for item in setup_inputs.MEASURED)
FIELDS = tuple(_control(item) for item in setup_inputs.OVERRIDES)
SLIDERS = (
    _control(regime_inputs.P, kind="range", step=0.01, help="chance the target accepts each drafted token"),
    _control(regime_inputs.K, kind="range", help="tokens the draft model guesses per cycle"),
    _control(regime_inputs.BATCH),
)


def _table_side(side: tuple[Input, Input, Input]) -> tuple[Control, ...]:
    regime, beta, batch = side
    return (_control(regime, options=REGIME_OPTIONS), _control(beta, step=0.05), _control(batch))


TABLE = (
    *_table_side(regime_inputs.LEFT),
    *_table_side(regime_inputs.RIGHT),
    _control(regime_inputs.C, step=0.01),
)
CONTROLS = (*SETUP, *MEASURED, *FIELDS, *SLIDERS, *TABLE)
BY_NAME = {control.name: control for control in CONTROLS}

# The batch slider: position i is batch round(2 ** (i / steps per doubling)), 1 to MAX_BATCH.
BATCH_POSITIONS = round(limits.BATCH_SLIDER_STEPS_PER_DOUBLING * math.log2(MAX_BATCH))
BATCH_STEPS = [
    min(MAX_BATCH, math.floor(2 ** (i / limits.BATCH_SLIDER_STEPS_PER_DOUBLING) + 0.5))
    for i in range(BATCH_POSITIONS + 1)
]


def batch_position(batch: int) -> int:
    """The slider position nearest to a batch size on the log scale."""
    return min(BATCH_POSITIONS, max(0, round(limits.BATCH_SLIDER_STEPS_PER_DOUBLING * math.log2(batch))))


# ---------------------------------------------------------------------------
# The roofline, with a rule between preset fields broken by an edit named by its label


def _preset(group: str, key: str, target: str = "") -> Any:
    if group == "hw":
        return ACCELERATORS[key]
    return draft_preset(key, target) if group == "draft" else MODELS[key]


def _words(label: str) -> str:
    words = re.sub(r"\s*\(.*\)", "", label)
    return words if words[:2].isupper() else words[0].lower() + words[1:]


RULE_WORDS = {field: _words(label) for field, label in setup_inputs.FIELD_LABELS.items()}  # a rule's fields


def setup_request(reading: Reading, overrides: dict[str, float | int] | None = None) -> SetupRequest:
    """The setup a page's controls describe (this page's, or /decide's, which takes the same names), read as the
    API reads the same parameters (setup_inputs.request); what a page has no control for stays at its default."""
    given = {
        item.name: reading.values[item.name] for item in setup_inputs.SETUP if reading.values.get(item.name) is not None
    }
    return replace(setup_inputs.request(given), overrides=overrides or {}, measured=_measured(reading))


def _measured(reading: Reading) -> Measured | None:
    """The step fit the address names; one of its two values without the other is refused (strict) or left out
    with a note, and the terms then answer as given."""
    try:
        return setup_inputs.measured({item.name: reading.values.get(item.name) for item in setup_inputs.MEASURED})
    except InputError as error:
        control = BY_NAME[error.name]
        if reading.strict:
            raise ControlError(control, error.message) from error
        reading.notes.append(f"{error.message}: the terms are taken as given, not measured.")
        return None


def edited_fields(reading: Reading) -> dict[str, float | int]:
    """Preset fields the address changes: a value equal to the preset's is no edit."""
    edits: dict[str, float | int] = {}
    for control in FIELDS:
        value = reading[control.name]
        group, field = control.name.split("_", 1)
        if value is not None and value != getattr(_preset(group, reading.text(group), reading.text("model")), field):
            edits[control.name] = int(value) if control.integer else float(value)
    return edits


def roofline(reading: Reading) -> tuple[BuiltSetup, dict[str, float | int]]:
    """The roofline the controls describe and the edits it kept.

    An edit that breaks a rule between fields (experts per token above experts, say) is a ControlError naming
    its label when read strictly; read leniently it falls back to the preset's value, with a note.
    """
    edits = edited_fields(reading)
    while True:
        try:
            return build_setup(setup_request(reading, edits)), edits
        except SetupError as error:
            blamed = error.name if error.name in edits else next(iter(edits), None)
            if blamed is None:
                raise
            control = BY_NAME[blamed]
            rule = error.worded(RULE_WORDS)
            if reading.strict:
                raise ControlError(control, f"{control.label} {control.shown(edits[blamed])}: {rule}") from error
            group, field = blamed.split("_", 1)
            preset = getattr(_preset(group, reading.text(group), reading.text("model")), field)
            reading.notes.append(
                f"{control.label} {control.shown(edits.pop(blamed))} from the address breaks a rule ({rule});"
                f" showing the preset's {control.shown(preset)}."
            )


# ---------------------------------------------------------------------------
# Display


def _pays(batch: int | None, fits: int) -> str:
    """A batch from which speculation stops paying, counted over the batches that fit in memory: a tile's value,
    short (the sentence that explains it is _pays_note's)."""
    if batch is not None:
        return str(batch)
    if not fits:
        return "nothing fits"
    return f"never (1–{fits})" if fits > 1 else "never (1)"


def _pays_note(sweep: BatchSweepOut, fits: int) -> str:
    """The sentence under the tiles for a crossover that never comes, said plainly."""
    batches = f"every batch that fits (1 to {fits})" if fits > 1 else "batch 1, the only one that fits"
    sentences = []
    if fits and sweep.crossover_batch is None:
        sentences.append(f"Speculation at k = {sweep.k} never stops paying: it pays at {batches}.")
    if fits and sweep.best_crossover_batch is None:
        sentences.append(f"Some k pays at {batches}.")
    return " ".join(sentences)


def _best(best_k: int, best_speedup: float) -> str:
    if not best_k:
        return "off"
    return f"{'≥ ' if best_k == K_SEARCH_MAX else ''}{best_k} ({times(best_speedup)})"


ROOFLINE_LEAVES_OUT = (
    "The roofline counts weight and KV-cache reads and FLOPs and, on more than one device, the hidden states its "
    "all-reduces carry over the accelerator's link at the datasheet's rate; by default it adds fixed times per "
    "pass, per draft step and per sequence of a cycle, and a latency per all-reduce, all fitted to published "
    "measurements. It leaves out all-reduces slower than the link's rate (no peer-to-peer, an NVL bridge "
    "beyond its pair, several nodes), the scheduler's own "
    "work and the draft's KV cache. Fit the efficiencies and the overheads below to your server's step times with "
    "step-fit."
)


def _devices_that_fit(setup: SetupOut, batch: int, built: BuiltSetup) -> str:
    devices = fewest_devices(built.setup, batch, limits.MAX_DEVICES)
    if devices is None:
        return f"no count up to {limits.MAX_DEVICES} × {setup.accelerator.name} holds it"
    return f"{devices} × {setup.accelerator.name} hold{'s' if devices == 1 else ''} it"


def devices_offer(sweep: BatchSweepOut, built: BuiltSetup | None) -> dict[str, str]:
    """Beside the Devices control, when this batch does not fit on the devices in use (the user's count, kept
    across a change of model or accelerator, or the fewest that hold both models): say so, and offer the fewest
    that hold it."""
    setup = sweep.setup
    if sweep.current.fits or built is None:
        return {"devices_note": "", "devices_fit": "", "devices_fit_label": ""}
    name = setup.accelerator.name
    subject, them = (f"Batch {sweep.batch} does", "it") if sweep.batch > 1 else ("The two models do", "them")
    devices = fewest_devices(built.setup, sweep.batch, limits.MAX_DEVICES)
    if devices is None:
        note = f"{subject} not fit on {setup.devices} × {name}, nor on any count up to {limits.MAX_DEVICES}."
        return {"devices_note": note, "devices_fit": "", "devices_fit_label": ""}
    note = f"{subject} not fit on {setup.devices} × {name}; {devices} hold{'s' if devices == 1 else ''} {them}."
    return {"devices_note": note, "devices_fit": str(devices), "devices_fit_label": f"Use {devices}"}


SOURCES = {
    "defaults": "Defaults: terms fitted to published measurements",
    "measured": "Measured: terms fitted to your step times",
    "given": "Given: the terms set here",
}


def _source(sweep: BatchSweepOut) -> str:
    """Where the crossover and the chart come from, as the label above them says it."""
    accuracy = sweep.accuracy
    if accuracy is None:
        return ""
    if accuracy.source == "measured" and accuracy.measured_steps is not None and accuracy.measured_error is not None:
        return (
            f"{SOURCES['measured']} ({accuracy.measured_steps} steps, out-of-sample error "
            f"{accuracy.measured_error:.0%})"
        )
    return SOURCES.get(accuracy.source, "")


def readouts(sweep: BatchSweepOut, built: BuiltSetup | None = None) -> dict[str, str]:
    point, setup = sweep.current, sweep.setup
    memory = f"{fixed(point.memory_needed_gb, 1)} / {fixed(setup.memory_capacity_gb, 0)} GB"
    fits = min(sweep.max_batch_that_fits, sweep.batch_max)
    speedup, best_k, fit_note = times(point.speedup), _best(point.best_k, point.best_speedup), ""
    if not point.fits:
        speedup = best_k = "does not fit"
        where = f"{setup.devices} × {setup.accelerator.name}"
        if sweep.max_batch_that_fits:
            fit_note = (
                f"Batch {sweep.batch} does not fit in {fixed(setup.memory_capacity_gb, 0)} GB on {where}: at most "
                f"{sweep.max_batch_that_fits} sequences fit"
            )
        else:
            fit_note = f"Not even batch 1 fits in {fixed(setup.memory_capacity_gb, 0)} GB on {where}"
        if built is not None:
            fit_note += f"; {_devices_that_fit(setup, sweep.batch, built)}."
        else:
            fit_note += "."
    return {
        "speedup": speedup,
        "best_k": best_k,
        "crossover": _pays(sweep.crossover_batch, fits),
        "best_crossover": _pays(sweep.best_crossover_batch, fits),
        "pays_note": _pays_note(sweep, fits),
        "headline": sweep.headline,
        "fit_note": fit_note,
        "leaves_out": ROOFLINE_LEAVES_OUT,
        "accuracy": sweep.accuracy.summary if sweep.accuracy is not None else "",
        "source": _source(sweep),
        "draft_cost": fixed(point.draft_cost, 2),
        "verification_cost": fixed(point.verification_cost, 2),
        "step": f"{fixed(point.target_step_ms, 2)} ms plain, {fixed(point.verify_step_ms, 2)} ms verifying",
        "bound": "compute-bound" if point.verify_compute_bound else "memory-bound",
        "memory": memory + ("" if point.fits else " (does not fit)"),
        "devices": f"{setup.devices} × {setup.accelerator.name}"
        + (" (the fewest that fit)" if setup.devices_auto else ""),
        "devices_auto": str(setup.devices),
        **devices_offer(sweep, built),
        "batch": str(sweep.batch),
        "search": f"Best k is searched over 1 to {K_SEARCH_MAX}, here and in the schedule.",
    }


X_PAD = 0.14  # of a decade: wider than half a marker (and its ring) on a phone's chart
LOG_TICKS = [2**i for i in range(int(math.log2(MAX_BATCH)) + 1)]


@dataclass(frozen=True)
class Reference:
    """A table's regime drawn across the chart: priced with the setup's draft cost c(B) at this batch, as the
    curve is (the roofline regime prices its own batch), so that the two are read on one cost."""

    label: str
    draft_cost: float
    speedup: float


def references(
    requests: tuple[RegimeRequest, RegimeRequest], sweep: BatchSweepOut, built: BuiltSetup
) -> list[Reference]:
    found = []
    # the closed form's k c: a parallel draft's one pass over k positions is k steps of c = that pass / k
    draft_cost = sweep.current.draft_cost / (max(sweep.k, 1) if built.setup.parallel_draft else 1)
    for request in requests:
        regime = build_regime(request, draft_cost, built)
        value = closed_form.speedup(sweep.p, sweep.k, regime.draft_cost, regime.verify)
        found.append(Reference(regime.label, regime.draft_cost, value))
    return found


def batch_figure(sweep: BatchSweepOut, references: list[Reference]) -> dict[str, Any]:
    """Speedup against batch size at this k and at the best k, break-even, both table regimes, memory shaded."""
    batches = sweep.batches
    data: list[Any] = [
        line(
            f"speedup at k = {sweep.k}",
            batches,
            sweep.speedup,
            line={"color": COLORS["accent"], "width": 3},
            hovertemplate="batch %{x}<br>%{y:.2f}×<extra></extra>",
            meta="speedup",
        ),
        line(
            "best k at each batch",
            batches,
            sweep.best_speedup,
            line={"color": COLORS["best"], "width": 2, "dash": "dashdot"},
            customdata=sweep.best_k,
            hovertemplate="batch %{x}<br>best k = %{customdata}: %{y:.2f}×<extra></extra>",
            meta="best",
        ),
        break_even(1, sweep.batch_max, "break-even (S = 1)", meta="break_even"),
    ]
    for side, color, reference in zip(("left", "right"), (COLORS["good"], COLORS["purple"]), references, strict=True):
        data.append(
            line(
                f"{side}: {reference.label}, c = {fixed(reference.draft_cost, 2)}: {times(reference.speedup)}",
                [1, sweep.batch_max],
                [reference.speedup, reference.speedup],
                line={"color": color, "dash": "dot", "width": 1.5},
                hoverinfo="skip",
                meta=f"regime_{side}",
            )
        )
    # the stated error's interval around the curve (drawn after the curves, which stay the first traces)
    stated = sweep.accuracy is not None and sweep.accuracy.source == "defaults"  # else the band has no width
    if sweep.speedup_low and sweep.speedup_high and stated:
        spread = sweep.accuracy.interval_spread if sweep.accuracy is not None else None  # narrowed for the checker
        said = f"a factor of {1 + spread:.2f} either way" if spread is not None else "as stated"
        data += [
            line(
                "interval low",
                batches,
                sweep.speedup_low,
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                meta="interval_low",
            ),
            line(
                f"k = {sweep.k} within its {published.COVERAGE:.0%} interval ({said})",
                batches,
                sweep.speedup_high,
                line={"width": 0},
                fill="tonexty",
                fillcolor=COLORS["band"],
                hoverinfo="skip",
                meta="interval",
            ),
        ]
    shapes: list[dict[str, Any]] = []
    crossover = sweep.crossover_batch
    if crossover is not None:
        data.append(
            marked(
                f"crossover at batch {crossover}",
                [crossover],
                [sweep.speedup[batches.index(crossover)]],
                "stops paying from batch %{x}<extra></extra>",
                symbol="x",
                size=13,
                color=COLORS["bad"],
                meta="crossover",
            )
        )
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": crossover,
                "x1": crossover,
                "y0": 0,
                "y1": 1,
                "line": {"color": COLORS["bad"], "dash": "dot", "width": 1.5},
            }
        )
    data.append(
        line(
            f"batch {sweep.batch}",
            [sweep.batch],
            [sweep.current.speedup],
            mode="markers",
            marker={"size": 14, "color": "rgba(0,0,0,0)", "line": {"color": COLORS["ink"], "width": 2.5}},
            hovertemplate="batch %{x}<br>%{y:.2f}×<extra></extra>",
            meta="current",
        )
    )
    for run in sweep.crossover_ranges:  # where paying is within the stated error, each run of batches
        high = run.high if run.high is not None else sweep.batch_max
        verb = "not pay" if run.pays_past else "stop paying"
        where = f"batch {run.low}" if run.high == run.low else f"batches {run.low} to {run.high or 'the last'}"
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": run.low,
                "x1": high if high > run.low else run.low + 0.5,  # one batch drawn half a batch wide
                "y0": 0,
                "y1": 0.04,
                "fillcolor": COLORS["bad"],
                "opacity": 0.35,
                "line": {"width": 0},
                "name": f"may {verb}: {where}",
                "showlegend": True,
            }
        )
    if sweep.max_batch_that_fits < sweep.batch_max:
        shapes.append(
            {
                "type": "rect",
                "xref": "x",
                "yref": "paper",
                "x0": max(sweep.max_batch_that_fits, 1),
                "x1": sweep.batch_max,
                "y0": 0,
                "y1": 1,
                "fillcolor": COLORS["unfit"],
                "line": {"width": 0},
                "layer": "below",
                "name": "does not fit in memory",
                "showlegend": True,
            }
        )
    return figure(
        data,
        "batch size B (log scale)",
        "speedup ×",
        x={
            "type": "log",
            # a little room either side, so that a marker at batch 1 or at the last batch is drawn whole
            "range": [-X_PAD, math.log10(sweep.batch_max) + X_PAD],
            "tickvals": LOG_TICKS,
            "ticktext": [str(tick) for tick in LOG_TICKS],
        },
        y={"rangemode": "tozero"},
        shapes=shapes,
    )


def schedule_table(schedule: ScheduleOut) -> dict[str, Any]:
    rows = []
    for step in schedule.steps:
        batches = f"{step.batch_from}–{step.batch_to}" if step.batch_to > step.batch_from else str(step.batch_from)
        speedup = f"{times(step.speedup_at_from)} → {times(step.speedup_at_to)}"
        rows.append({"class": "on" if step.k else "off", **cells(batches, str(step.k) if step.k else "off", speedup)})
    return {"columns": ["Batch sizes", "k", "Speedup"], "rows": rows}


def cell_color(value: float) -> str:
    """Green above 1, red below, stronger the further from 1 (log scale, saturating at 3x and at a third)."""
    strength = min(abs(math.log(value)) / math.log(3), 1.0) if value > 0 else 1.0
    alpha = fixed(0.12 + 0.55 * strength, 2)
    if value > 1:
        return f"background-color: rgba(46, 139, 87, {alpha})"
    if value < 1:
        return f"background-color: rgba(192, 57, 43, {alpha})"
    return ""


def regime_tables(table: TableOut) -> dict[str, dict[str, Any]]:
    """Both regimes' p x k tables: two decimals, coloured, the cell that turns from win to loss outlined."""
    highlight = table.highlight
    sides = {}
    for side, regime, grid in (("a", table.regime_a, table.speedup_a), ("b", table.regime_b, table.speedup_b)):
        rows = []
        for p, values in zip(table.p_values, grid, strict=True):
            cells: list[dict[str, Any]] = [{"text": fixed(p, 2), "header": True}]
            for k, value in zip(table.k_values, values, strict=True):
                classes = ["win" if value > 1 else "loss" if value < 1 else ""]
                if highlight and highlight.p == p and highlight.k == k:
                    classes.append("highlight")
                cells.append(
                    {"text": fixed(value, 2), "class": " ".join(filter(None, classes)), "style": cell_color(value)}
                )
            rows.append({"cells": cells})
        sides[side] = {
            "caption": f"{regime.label}, c = {fixed(regime.draft_cost, 3)}",
            "columns": ["p \\ k", *(str(k) for k in table.k_values)],
            "rows": rows,
        }
    return sides


def table_summary(table: TableOut) -> str:
    highlight = table.highlight
    if highlight is None:
        return "No cell wins on the left and loses on the right."
    return (
        f"At p = {fixed(highlight.p, 2)}, k = {highlight.k}: a {times(highlight.speedup_a)} win "
        f"{table.regime_a.name} turns into a {times(highlight.speedup_b)} loss {table.regime_b.name}; "
        f"{table.win_to_loss_cells} cells flip from win to loss."
    )


def build(reading: Reading) -> View:
    built, edits = roofline(reading)
    p, k, batch = reading.number("p"), reading.integer("k"), reading.integer("batch")
    sweep = sweep_out(p, k, K_SEARCH_MAX, MAX_BATCH, batch, limits.ROOFLINE_POINTS, built)
    schedule = schedule_out(p, K_SEARCH_MAX, MAX_BATCH, built)
    p_first, p_last, p_step = limits.ROOFLINE_TABLE_P
    rows = p_values_for(p_first, p_last, p_step, limits.MAX_TABLE_ROWS)
    side_a, side_b = (
        RegimeRequest(
            RegimeName(reading.text(f"regime_{side}")),
            reading.number(f"beta_{side}"),
            reading.integer(f"batch_{side}"),
        )
        for side in ("a", "b")
    )
    table = two_regime_table(side_a, side_b, reading.number("c"), rows, TABLE_K_MAX, built, p, k)

    setup_params = [*changed_from_defaults((*SETUP, *MEASURED), reading).items()]
    setup_params += [(name, url_text(value)) for name, value in edits.items()]
    point = [("p", url_text(p)), ("k", str(k))]
    table_params = [*setup_params, *changed_from_defaults(TABLE, reading).items()]
    schedule_params = [*setup_params, point[0], ("k_max", str(K_SEARCH_MAX))]
    table_params += [*point, ("k_max", str(TABLE_K_MAX))]
    sweep_params = [*setup_params, *point, ("batch", str(batch)), ("k_max", str(K_SEARCH_MAX))]

    presets = {group: _preset(group, reading.text(group), reading.text("model")) for group in GROUPS}
    fields = {}
    for control in FIELDS:
        group, field = control.name.split("_", 1)
        preset = getattr(presets[group], field)
        value = edits.get(control.name, preset)
        fields[control.name] = {"value": url_text(value), "preset": url_text(preset), "edited": control.name in edits}
    return {
        "readouts": readouts(sweep, built),
        "fields": fields,
        "open": {
            **{group: any(name.startswith(f"{group}_") for name in edits) for group in GROUPS},
            "cost_terms": any(
                reading.values.get(name) != BY_NAME[name].default for name in (term.name for term in limits.COST_TERMS)
            ),
        },
        "regime_inputs": {
            side: {
                "beta": reading.text(f"regime_{side}") == RegimeName.LINEAR.value,
                "batch": reading.text(f"regime_{side}") == RegimeName.ROOFLINE.value,
            }
            for side in ("a", "b")
        },
        "sliders": {"batch": {"steps": BATCH_STEPS, "position": batch_position(batch), "text": f"batch {batch}"}},
        "figures": {"batch-chart": batch_figure(sweep, references((side_a, side_b), sweep, built))},
        "tables": {"schedule": schedule_table(schedule), **regime_tables(table)},
        "summary": table_summary(table),
        "schedule_headline": schedule.headline,
        "links": {
            "sweep": link("/api/v1/regimes/speedup-vs-batch", sweep_params),
            "schedule_csv": link("/api/v1/regimes/schedule", [*schedule_params, ("format", "csv")]),
            "schedule_json": link("/api/v1/regimes/schedule", schedule_params),
            "table_csv": link("/api/v1/regimes/table", [*table_params, ("format", "csv")]),
            "table_json": link("/api/v1/regimes/table", table_params),
            "fitted_terms": link("/batch", fitted_terms_params(reading, edits)),
        },
    }


def fitted_terms_params(reading: Reading, edits: dict[str, float | int]) -> list[tuple[str, str]]:
    """This page's state with the efficiencies and overheads fitted to published measurements in place: the
    defaults, so none of them is written."""
    fitted = published.published_fit()["terms"]
    dropped = {*fitted, *(item.name for item in MEASURED)}
    kept = [(name, text) for name, text in changed_from_defaults(CONTROLS, reading).items() if name not in dropped]
    return [*kept, *((name, url_text(value)) for name, value in edits.items())]


PAGE = Page(
    name="batch",
    path="/batch",
    nav="Batch size and hardware",
    nav_short="Batch",
    title="When verification stops being free: batch size and hardware",
    question="At which batch size does speculation stop paying on my hardware, and which k should run at each batch?",
    template="pages/batch.html",
    controls=CONTROLS,
    build=build,
    legacy_keys=("rg_",),
)
