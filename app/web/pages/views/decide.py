"""Decide for my server: from what the server reports to the config it takes.

One step per section, each with its own results: (1) p from a draft acceptance rate, a mean acceptance
length or any engine's report (vLLM or SGLang /metrics, SGLang /server_info, TensorRT-LLM iteration stats,
a llama.cpp log; POSTed to the view as a JSON body, never in the URL; a URL only where the server may fetch);
(2) the best k per batch on the user's setup at the calibrated p, only at batches that fit; (3) that schedule
as the chosen engine's config; (4) the draft sources side by side; (5) chains against trees.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from app.model import calibration, capacity, closed_form, draft_sources, engine_metrics, engines, regimes, trees
from app.model.acceptance import Acceptance, AcceptanceProfile, iid_p
from app.model.calibration import CalibrationError, ErrorKind
from app.model.limits import DEFAULT_C, K_MAX_LIMIT, MAX_DRAFT_COST, ROOFLINE_BETA
from app.model.regimes import RegimeName
from app.web.core.config import get_settings
from app.web.pages.controls import Control, ControlError, Reading, Value, url_text
from app.web.pages.figures import COLORS, figure, line
from app.web.pages.page import Page, View
from app.web.pages.text import fixed, times
from app.web.pages.views import batch as batch_view
from app.web.services.decision import (
    DEFAULT_K_MAX,
    DEFAULT_TREE_ACCEPTANCE,
    DEFAULT_TREE_BUDGET,
    DEFAULT_TREE_WIDTHS,
    MAX_BATCH,
    CostRegime,
    cost_regime,
    tree_verification_assumption,
)
from app.web.services.engines import engine_config_out
from app.web.services.fetch import FetchError, check_url, fetch_text
from app.web.services.regimes import BuiltSetup, SetupError, SetupRequest, build_setup, devices_note

# The example scrape the page opens with: vLLM's counters after EXAMPLE_DRAFTS drafts of i.i.d. acceptance.
EXAMPLE_P = 0.8
EXAMPLE_K = 5
EXAMPLE_DRAFTS = 20_000
EXAMPLE_SEED = 7
# What the page asks for first in the rate and length modes (any typical engine reading).
DEFAULT_RATE = 0.55
DEFAULT_LENGTH = 3.2
DEFAULT_MEASURED_K = 5
MAX_LIST_TEXT = 1_000  # characters of the positional acceptance list

SETUP = regimes.default_setup()
SETUP_TEXT = f"{SETUP.accelerator.name}, target {SETUP.target.name}, draft {SETUP.draft.name}"
REGIME_LABELS = {
    RegimeName.MEMORY_BOUND: "memory-bound: v = 1",
    RegimeName.LINEAR: "linear: v = 1 + β·k",
    RegimeName.COMPUTE_BOUND: "compute-bound: v = k + 1",
    RegimeName.ROOFLINE: "roofline of the default setup",
}
MODES = (
    ("metrics", "an engine's report (vLLM, SGLang, TensorRT-LLM, llama.cpp)"),
    ("rate", "a draft acceptance rate (accepted / drafted)"),
    ("length", "a mean acceptance length (tokens per step)"),
)
# Draft sources: p and c of each, editable; the defaults are the cited values (derived from Spec-Bench).
SOURCE_DIGITS = 4
SCHEDULE_POINTS = 120  # batches drawn on the schedule's log axis, besides the ends of every step


@dataclass(frozen=True)
class SourceControl(Control):
    """p or c of one draft source; the one-page version carried every edit in one key, src_edit=id:p:c,..."""

    source: str = ""
    part: int = 1  # where the value sits in id:p:c

    def from_legacy(self, value: str) -> str | None:
        items = (item.split(":") for item in value.split(","))
        return next((item[self.part] for item in items if len(item) == 3 and item[0].strip() == self.source), None)

    def read(self, raw: str | None, strict: bool) -> tuple[Value | None, str | None]:
        return super().read(self.from_legacy(raw) if raw is not None and ":" in raw else raw, strict)


def _source_controls(source: draft_sources.DraftSource) -> tuple[Control, Control]:
    p, c = round(source.acceptance, SOURCE_DIGITS), round(source.draft_cost, SOURCE_DIGITS)
    p_label, c_label = f"Acceptance p of {source.name}", f"Draft cost c of {source.name}"
    legacy = ("src_edit",)
    return (
        SourceControl(f"{source.id}_p", p_label, "number", p, 0.0, 1.0, legacy=legacy, source=source.id, part=1),
        SourceControl(
            f"{source.id}_c", c_label, "number", c, 0.0, MAX_DRAFT_COST, legacy=legacy, source=source.id, part=2
        ),
    )


SOURCE_CONTROLS = {source.id: _source_controls(source) for source in draft_sources.DEFAULT_SOURCES}

C = Control(
    "c",
    "Draft cost c per draft step",
    "number",
    DEFAULT_C,
    0.0,
    MAX_DRAFT_COST,
    help="in target passes; the roofline derives it from the batch",
    legacy=("dec_c",),
)
REGIME = Control(
    "regime",
    "Verification cost",
    "select",
    RegimeName.MEMORY_BOUND.value,
    options=tuple((name.value, label) for name, label in REGIME_LABELS.items()),
    legacy=("dec_regime",),
)
BETA = Control("beta", "β (linear)", "number", ROOFLINE_BETA, 0.0, 1.0, legacy=("dec_beta",))
BATCH = Control(
    "batch",
    "Batch size (roofline)",
    "number",
    1,
    1,
    MAX_BATCH,
    1,
    integer=True,
    help=SETUP_TEXT,
    legacy=("dec_batch",),
)
K_MAX = Control(
    "k_max", "Largest k searched", "number", DEFAULT_K_MAX, 1, K_MAX_LIMIT, 1, integer=True, legacy=("dec_kmax",)
)
MODE = Control("mode", "I have", "select", "metrics", options=MODES, legacy=("cal_mode",))
RATE = Control("rate", "Draft acceptance rate", "number", DEFAULT_RATE, 0.0, 1.0, legacy=("cal_rate",))
LENGTH = Control(
    "length", "Mean acceptance length", "number", DEFAULT_LENGTH, 1.0, K_MAX_LIMIT + 1, legacy=("cal_length",)
)
REPORT_K = Control(
    "report_k",
    "Draft length k, if the report does not say it",
    "number",
    0,
    0,
    K_MAX_LIMIT,
    1,
    integer=True,
    help="0: read from the report (llama.cpp's --spec-draft-n-max, vLLM's num_speculative_tokens)",
)
K = Control(
    "k",
    "Draft length k it was measured at",
    "number",
    DEFAULT_MEASURED_K,
    1,
    K_MAX_LIMIT,
    1,
    integer=True,
    legacy=("cal_k",),
)
EXAMPLE = Control("example_p", "Example scrape with p =", "number", EXAMPLE_P, 0.0, 1.0)
ACCEPTANCE = Control(
    "acceptance",
    "Positional acceptance P1 ≥ P2 ≥ …",
    "text",
    ",".join(f"{value:g}" for value in DEFAULT_TREE_ACCEPTANCE),
    max_length=MAX_LIST_TEXT,
    help="comma-separated, sum at most 1",
    legacy=("tree_p",),
)
BUDGET = Control(
    "budget",
    "Tokens verified per step (budget)",
    "range",
    DEFAULT_TREE_BUDGET,
    1,
    trees.MAX_TREE_BUDGET,
    1,
    integer=True,
    legacy=("tree_budget",),
)
METRICS = Control(
    "metrics", "Engine report", "text", "", max_length=calibration.MAX_EXPOSITION_BYTES, help="pasted text"
)
BASELINE = Control("baseline", "Earlier report", "text", "", max_length=calibration.MAX_EXPOSITION_BYTES)
MAX_URL = 2_000
URL = Control("url", "Report URL", "text", "", max_length=MAX_URL, help="the engine's /metrics or /server_info")
# The user's own setup, as the batch page defines it (one definition of every bound); the address keys are its own.
SETUP_NAMES = ("hw", "devices", "model", "draft", "weights", "kv_cache", "context")
SETUP_CONTROLS = tuple(replace(control, legacy=()) for control in batch_view.SETUP if control.name in SETUP_NAMES)
ENGINE_LABELS = {name: str(module.TITLE) for name, module in engines.ADAPTERS.items()}
ENGINE = Control(
    "engine", "Engine", "select", "vllm", options=tuple((name, ENGINE_LABELS[name]) for name in engine_metrics.ENGINES)
)
DRAFT_PATH = Control(
    "draft_path",
    "Draft model (path or name)",
    "text",
    "",
    max_length=300,
    help="empty: the config shows what to fill in",
)
METHOD = Control(
    "method",
    "Drafter",
    "text",
    "",
    max_length=40,
    help="as the engine names it (eagle3, ngram, ...); empty: a separate draft model",
)
ENGINE_VERSION = Control(
    "engine_version",
    "Engine version",
    "text",
    "",
    max_length=40,
    help="empty: the newest known; "
    + "; ".join(
        f"{ENGINE_LABELS[name]} {', '.join(v.name for v in engines.versions(name))}" for name in engines.ENGINES
    ),
)
TREE_REGIME = Control(
    "tree_regime",
    "Verification cost of a tree",
    "select",
    RegimeName.ROOFLINE.value,
    options=tuple((name.value, label) for name, label in REGIME_LABELS.items()),
    legacy=("dec_regime",),  # the one-page version priced trees with the cost of every step
)

CONTROLS: tuple[Control, ...] = (
    C,
    REGIME,
    BETA,
    BATCH,
    K_MAX,
    MODE,
    RATE,
    LENGTH,
    K,
    REPORT_K,
    EXAMPLE,
    URL,
    *SETUP_CONTROLS,
    ENGINE,
    DRAFT_PATH,
    METHOD,
    ENGINE_VERSION,
    TREE_REGIME,
    *(control for pair in SOURCE_CONTROLS.values() for control in pair),
    ACCEPTANCE,
    BUDGET,
)


def _query(**params: Any) -> str:
    return "&".join(
        f"{name}={value!r}" if isinstance(value, float) else f"{name}={value}" for name, value in params.items()
    )


def _chosen(reading: Reading, c: float) -> CostRegime:
    return cost_regime(reading.text("regime"), c, beta=reading.number("beta"), batch=reading.integer("batch"))


def _cost_query(reading: Reading) -> dict[str, Any]:
    """The API parameters of the cost regime, as the page's controls set them."""
    params: dict[str, Any] = {"regime": reading.text("regime")}
    if reading.text("regime") == RegimeName.LINEAR.value:
        params["beta"] = reading.number("beta")
    if reading.text("regime") == RegimeName.ROOFLINE.value:
        params["batch"] = reading.integer("batch")
    return params


def _chosen_tree(reading: Reading) -> CostRegime:
    """The trees' verification cost: by default the roofline of the default setup, so a tree's size costs."""
    return cost_regime(
        reading.text("tree_regime"), reading.number("c"), beta=reading.number("beta"), batch=reading.integer("batch")
    )


def _tree_cost_query(reading: Reading) -> dict[str, Any]:
    name = reading.text("tree_regime")
    params: dict[str, Any] = {"regime": name}
    if name == RegimeName.LINEAR.value:
        params["beta"] = reading.number("beta")
    if name == RegimeName.ROOFLINE.value:
        params["batch"] = reading.integer("batch")
    return params


# ---------------------------------------------------------------------------
# 1. Calibration


@functools.lru_cache(maxsize=8)
def example_scrape(p: float) -> str:
    return calibration.example_exposition(p, EXAMPLE_K, drafts=EXAMPLE_DRAFTS, seed=EXAMPLE_SEED)


def example_link(p: float) -> str:
    query = _query(p=p, k=EXAMPLE_K, drafts=EXAMPLE_DRAFTS, seed=EXAMPLE_SEED)
    return f"/api/v1/calibrate/example-metrics?{query}"


FETCH_OFF = (
    "This server does not fetch URLs (its SPECDEC_ALLOW_FETCH setting is off), so that it cannot be used to probe "
    "a private network. Run specdec-lab calibrate --from {url} on your own machine, or paste the report's text here."
)


EXAMPLE_INSTEAD = (
    "The numbers below are the example report's, not your server's: nothing was read from the URL. "
    "Paste the report's text to calibrate your own."
)


def notes_of(info: Mapping[str, object]) -> list[str]:
    notes = info["notes"]
    assert isinstance(notes, list)
    return [str(note) for note in notes]


def _engine_error(control: Control, error: CalibrationError) -> ControlError:
    if error.kind == ErrorKind.UNKNOWN_K:
        return ControlError(REPORT_K, f"{REPORT_K.label}: {error.message}; give it in this field")
    return ControlError(control, f"{control.label}: {error.message}")


def _report_text(reading: Reading) -> tuple[str, str, str | None]:
    """(report, baseline, message about the URL): the pasted text, or the URL's when the server may fetch it."""
    body = reading.body
    if body is None:  # asked for with GET: the example scrape the page opens with
        return example_scrape(reading.number("example_p")), "", None
    report, baseline = body.get("metrics", ""), body.get("baseline", "")
    url = reading.text("url").strip()
    if not url or report.strip():
        return report, baseline, None
    if not get_settings().allow_fetch:
        try:
            shown = check_url(url)
        except FetchError as error:
            raise ControlError(URL, f"{URL.label}: {error}") from None
        return "", "", FETCH_OFF.format(url=shown)
    try:
        return fetch_text(url), baseline, None
    except FetchError as error:
        raise ControlError(URL, f"{URL.label}: {error}") from None


def _interval(item: engine_metrics.EngineCalibration) -> str:
    interval = item.interval
    if interval.low is None or interval.high is None:
        return "no interval (the report holds a mean only)"
    return f"{fixed(interval.low, 3)} – {fixed(interval.high, 3)}"


def _engine_report(reading: Reading, chosen: CostRegime) -> tuple[calibration.Calibration, dict[str, Any]]:
    """p from any engine's report, its format detected; per class where the report has several."""
    report, baseline, fetch_message = _report_text(reading)
    k_max = reading.integer("k_max")
    given_k = reading.integer("report_k") or None
    if fetch_message is not None:
        report = example_scrape(reading.number("example_p"))
    try:
        if baseline.strip():
            try:
                format_name, measurements = engine_metrics.read_with_baseline(report, baseline, k=given_k)
            except CalibrationError as error:
                engine_metrics.read_measurements(report, k=given_k)  # a fault in the report names the report
                raise _engine_error(BASELINE, error) from None
        else:
            format_name, measurements = engine_metrics.read_measurements(report, k=given_k)
        classes = [engine_metrics.calibrate_measurement(m, chosen.c, k_max, chosen.verify) for m in measurements]
        pooled = engine_metrics.pooled(measurements)
        top = (
            engine_metrics.calibrate_measurement(pooled, chosen.c, k_max, chosen.verify)
            if pooled is not None
            else max(classes, key=lambda item: item.measurement.cycles or 0.0)
        )
    except CalibrationError as error:
        raise _engine_error(METRICS, error) from None
    engine = engine_metrics.FORMAT_ENGINE[format_name]
    measurement = top.measurement
    k_source = "given" if measurement.k_source == "given" and measurement.k is not None else "read from the report"
    rows = [
        _cells(
            item.measurement.label or "(none)",
            fixed(item.result.acceptance, 3),
            _interval(item),
            str(item.result.k),
            "n/a" if item.measurement.cycles is None else f"{item.measurement.cycles:,.0f}",
            header=True,
        )
        for item in classes
    ]
    info = {
        "shown": True,
        "engine": ENGINE_LABELS[engine],
        "engine_key": engine,
        "format": engine_metrics.FORMATS[format_name],
        "interval": _interval(top),
        "p_low": top.interval.low,
        "p_high": top.interval.high,
        "level": f"{top.interval.level:.0%} interval, {top.interval.method}",
        "k": f"{top.result.k} ({k_source})",
        "several": len(classes) > 1,
        "classes": {"columns": ["Class", "p", "Interval", "k", "Verifications"], "rows": rows},
        "fetch": fetch_message or "",
        "notes": (
            [f"{len(classes)} classes in the report: each is calibrated on its own below."] if len(classes) > 1 else []
        )
        + list(top.measurement.notes),  # the calibration's own notes are listed under it
    }
    if fetch_message is not None:  # nothing of the user's was read: say whose numbers these are
        info["format"] = f"the example report, not yours (the URL was not fetched); {info['format']}"
        info["notes"] = [EXAMPLE_INSTEAD, *notes_of(info)]
    return top.result, info


NO_ENGINE: dict[str, Any] = {
    "shown": False,
    "engine": "",
    "engine_key": "",
    "format": "",
    "interval": "",
    "p_low": None,
    "p_high": None,
    "level": "",
    "k": "",
    "several": False,
    "classes": {"columns": [], "rows": []},
    "fetch": "",
    "notes": [],
}


def _calibrate(reading: Reading, chosen: CostRegime) -> tuple[calibration.Calibration, dict[str, str], dict[str, Any]]:
    """The calibration for the chosen mode, where its numbers come from as an API link, and the engine read."""
    mode, k_max, k = reading.text("mode"), reading.integer("k_max"), reading.integer("k")
    cost = {"c": reading.number("c"), "k_max": k_max, **_cost_query(reading)}
    if mode == "rate":
        rate = reading.number("rate")
        result = calibration.calibrate_from_rate(rate, k, chosen.c, k_max, chosen.verify)
        link = {"href": f"/api/v1/calibrate/rate?{_query(rate=rate, k=k, **cost)}", "text": "/calibrate/rate"}
        return result, link, NO_ENGINE
    if mode == "length":
        length = reading.number("length")
        if length > k + 1:
            message = f"{LENGTH.label} must be from 1 to k + 1 = {k + 1} at k = {k}; got {LENGTH.shown(length)}"
            reading.correct(LENGTH, float(k + 1), message)
            length = float(k + 1)
        result = calibration.calibrate_from_length(length, k, chosen.c, k_max, chosen.verify)
        href = f"/api/v1/calibrate/length?{_query(length=length, k=k, **cost)}"
        return result, {"href": href, "text": "/calibrate/length"}, NO_ENGINE
    result, info = _engine_report(reading, chosen)
    return result, {"href": f"/api/v1/calibrate?{_query(**cost)}", "text": "POST /calibrate"}, info


def _verdict(result: calibration.Calibration) -> tuple[str, str]:
    departure = result.departure
    if departure is None:
        if result.source == "exposition":
            return "No per-position counters: independence from token to token cannot be checked.", ""
        return "A single rate or length cannot test independence: the i.i.d. model is assumed.", ""
    gap = f"largest gap between conditional acceptance and p: {fixed(departure.max_conditional_deviation, 3)}"
    if departure.consistent_with_iid is None:
        return f"One position only: nothing to test ({gap}).", ""
    p_value = departure.p_value if departure.p_value is not None else math.nan
    shown = f"{p_value:.1e}" if p_value < 1e-4 else fixed(p_value, 3)
    chi = fixed(departure.chi_square, 1) if departure.chi_square is not None else "n/a"
    test = f"χ² = {chi} on {departure.degrees_of_freedom} df, p-value {shown}"
    if departure.consistent_with_iid:
        return f"Acceptance looks i.i.d. ({test}; {gap}).", "consistent"
    return f"Acceptance is not i.i.d. ({test}; {gap}): predictions for other k are approximate.", "departs"


def _cells(*texts: str, header: bool = False) -> dict[str, Any]:
    cells: list[dict[str, Any]] = [{"text": text} for text in texts]
    if header:
        cells[0]["header"] = True
    return {"cells": cells}


def calibration_figure(result: calibration.Calibration) -> dict[str, Any]:
    ks = [row.k for row in result.predictions]
    best = result.best_k
    return figure(
        [
            line(
                f"speedup at p = {fixed(result.acceptance, 3)}",
                ks,
                [row.speedup for row in result.predictions],
                mode="lines+markers",
                line={"color": COLORS["accent"], "width": 3},
                hovertemplate="k = %{x}<br>%{y:.2f}×<extra></extra>",
            ),
            line(
                "break-even",
                [ks[0], ks[-1]],
                [1, 1],
                line={"color": COLORS["break_even"], "dash": "dash", "width": 2},
                hoverinfo="skip",
            ),
            line(
                f"measured k = {result.k}",
                [result.k],
                [result.speedup_at_k],
                mode="markers",
                marker={"size": 13, "color": "rgba(0,0,0,0)", "line": {"color": COLORS["ink"], "width": 2.5}},
                hovertemplate="measured k = %{x}<br>%{y:.2f}×<extra></extra>",
            ),
            line(
                f"recommended k = {best}" if best else "recommended: do not speculate",
                [best],
                [result.best_speedup],
                mode="markers",
                marker={
                    "size": 16,
                    "symbol": "star",
                    "color": COLORS["best"],
                    "line": {"color": COLORS["ink"], "width": 1},
                },
                hovertemplate="k = %{x}<br>%{y:.2f}×<extra></extra>",
            ),
        ],
        "draft length k",
        "speedup ×",
        x={"dtick": 4 if len(ks) > 20 else 1, "range": [-0.3, ks[-1] + 0.3]},
        y={"rangemode": "tozero"},
    )


def positions_figure(result: calibration.Calibration) -> dict[str, Any]:
    positions = [row.position for row in result.positions]
    span = [0.7, positions[-1] + 0.3] if positions else [0.5, result.k + 0.5]
    data = [
        line(
            f"i.i.d.: p = {fixed(result.acceptance, 3)}",
            span,
            [result.acceptance, result.acceptance],
            line={"color": COLORS["muted"], "dash": "dot", "width": 2},
            hoverinfo="skip",
        )
    ]
    if positions:
        data.append(
            line(
                "accepted given the previous one was",
                positions,
                [row.conditional for row in result.positions],
                mode="lines+markers",
                line={"color": COLORS["purple"], "width": 2.5},
                marker={"size": 9},
                hovertemplate="position %{x}<br>%{y:.3f}<extra></extra>",
            )
        )
    note = {"text": "no per-position counters", "x": 0.5, "y": 0.5, "xref": "paper", "yref": "paper"}
    return figure(
        data,
        "draft position",
        "acceptance",
        x={"dtick": 1, "range": span},
        y={"range": [0, 1.02]},
        annotations=[] if positions else [{**note, "showarrow": False, "font": {"color": COLORS["muted"]}}],
    )


def calibration_part(reading: Reading, result: calibration.Calibration) -> dict[str, Any]:
    verdict, kind = _verdict(result)
    return {
        "p": fixed(result.acceptance, 3),
        "best_k": str(result.best_k) if result.best_k else "off",
        "best_speedup": times(result.best_speedup),
        "observed": f"{fixed(result.mean_acceptance_length, 2)} / {fixed(result.draft_acceptance_rate, 2)}",
        "verdict": f"Measured at k = {result.k}. {verdict}",
        "verdict_kind": kind,
        "positions": {
            "columns": ["Position", "Accepted / draft", "i.i.d. pⁱ", "Given the previous accepted"],
            "rows": [
                _cells(
                    str(row.position),
                    fixed(row.rate, 4),
                    fixed(row.iid_rate, 4),
                    "–" if row.conditional is None else fixed(row.conditional, 4),
                )
                for row in result.positions
            ],
        },
        "has_positions": bool(result.positions),
        "predictions": {
            "columns": ["k", "Tokens per cycle", "Cost per cycle", "Speedup"],
            "rows": [
                {
                    "class": "recommended" if row.k == result.best_k else "",
                    **_cells(
                        str(row.k), fixed(row.expected_tokens, 2), fixed(row.cost_per_cycle, 2), times(row.speedup)
                    ),
                }
                for row in result.predictions
            ],
        },
        "notes": list(result.notes),
        "example": example_scrape(reading.number("example_p")) if reading.body is None else None,
    }


def recommendation(
    decision: capacity.Decision, batch: int, result: calibration.Calibration, chosen: CostRegime
) -> dict[str, str]:
    """One recommendation, on the user's setup (the schedule of step 2 at the batch asked for); the generic
    cost's figures stay only in the predictions table, labelled as not being the user's hardware."""
    generic = (
        f"On a generic cost: c = {fixed(chosen.c, 2)} per draft step and {chosen.regime.label} verification, "
        f"best k {result.best_k or 'off'} ({times(result.best_speedup)}). Not your hardware: the recommendation "
        "above is the schedule of step 2 on your setup."
    )
    if decision.batch_limit < 1:
        return {"best_k": "nothing fits", "best_speedup": "–", "where": decision.headline, "generic": generic}
    at = min(max(batch, 1), decision.batch_limit)
    k, speedup = decision.best_k[at - 1], decision.best_speedup[at - 1]
    where = f"On your setup at batch {at}" + (f" (batch {batch} does not fit)" if batch > decision.batch_limit else "")
    return {
        "best_k": str(k) if k else "off",
        "best_speedup": times(speedup) if k else times(1.0),
        "where": f"{where}, from step 2's schedule: " + (f"k = {k}, {times(speedup)}." if k else "leave it off."),
        "generic": generic,
    }


# ---------------------------------------------------------------------------
# 2. Draft sources


def source_edits(reading: Reading) -> dict[str, tuple[float, float]]:
    """(p, c) of every source whose p or c differs from the cited value; the cited value exact where kept."""
    edits = {}
    for source in draft_sources.DEFAULT_SOURCES:
        p_control, c_control = SOURCE_CONTROLS[source.id]
        p, c = reading.number(p_control.name), reading.number(c_control.name)
        if p != p_control.default or c != c_control.default:
            edits[source.id] = (
                p if p != p_control.default else source.acceptance,
                c if c != c_control.default else source.draft_cost,
            )
    return edits


def _short(name: str) -> str:
    """The short name in brackets ("EAGLE-2", "PLD", ...), which keeps a chart's axis labels level."""
    return name[name.rindex("(") + 1 : -1] if name.endswith(")") and "(" in name else name


def sources_part(reading: Reading, verify: closed_form.VerifyCost) -> tuple[dict[str, Any], dict[str, Any], str]:
    edits = source_edits(reading)
    evaluations = draft_sources.compare_sources(reading.integer("k_max"), verify, edits)
    by_id = {evaluation.source.id: evaluation for evaluation in evaluations}
    ordered = [by_id[source_id] for source_id in draft_sources.SOURCE_IDS]
    rows = {}
    for evaluation in ordered:
        source = evaluation.source
        depth = str(source.reference_depth)
        rows[source.id] = {
            "name": source.name,
            "tau": fixed(source.mean_accepted_tokens, 2),
            "speedup": times(source.measured_speedup),
            "depth": f"{depth} (tree of {source.tree_nodes})" if source.tree_nodes else depth,
            "per_cost": "free"
            if evaluation.accepted_per_draft_cost is None
            else fixed(evaluation.accepted_per_draft_cost, 2),
            "per_cycle": fixed(evaluation.speedup_at_reference, 2),
            "best_k": str(evaluation.best_k) if evaluation.best_k else "off",
            "best_speedup": times(evaluation.best_speedup),
            "edited": source.edited,
        }
    best = evaluations[0]
    summary = (
        f"Fastest under this verification cost: {best.source.name}, {times(best.best_speedup)} at k = {best.best_k}."
        if best.best_k
        else "Under this verification cost no source beats plain decoding."
    )
    names = [_short(evaluation.source.name) for evaluation in ordered]
    chart = figure(
        [
            {
                "type": "bar",
                "name": "tokens per unit of cycle cost",
                "x": names,
                "y": [evaluation.speedup_at_reference for evaluation in ordered],
                "marker": {"color": COLORS["accent"]},
                "hovertemplate": "%{y:.2f} tokens per unit of cycle cost at the measured depth<extra></extra>",
            },
            line(
                "best predicted speedup",
                names,
                [evaluation.best_speedup for evaluation in ordered],
                mode="markers",
                yaxis="y2",
                marker={
                    "symbol": "diamond",
                    "size": 13,
                    "color": COLORS["best"],
                    "line": {"color": COLORS["ink"], "width": 1},
                },
                hovertemplate="%{y:.2f}× at its best k<extra></extra>",
            ),
        ],
        "",
        "tokens / unit cycle cost",
        y={"rangemode": "tozero"},
        yaxis2={
            "title": {"text": "best speedup ×", "standoff": 8},
            "overlaying": "y",
            "side": "right",
            "rangemode": "tozero",
            "showgrid": False,
            "automargin": True,
            "tickformat": ".1f",
        },
    )
    citations = [
        f"{source.name}: {source.method}. τ = {source.mean_accepted_tokens:g} and speedup {source.measured_speedup:g}× "
        f"from {source.measurement}. Depth: {source.depth_source}."
        for source in draft_sources.DEFAULT_SOURCES
    ]
    part = {
        "rows": rows,
        "summary": summary,
        "uses": "Each source is priced with its own cited p and c, not your calibration: edit its p to use yours.",
        "citations": citations,
        "derivation": " ".join(draft_sources.DERIVATION.split()),
    }
    overrides = ",".join(f"{source_id}:{p!r}:{c!r}" for source_id, (p, c) in edits.items())
    query = _query(k_max=reading.integer("k_max"), **_cost_query(reading))
    link = f"/api/v1/draft-sources?{query}" + (f"&overrides={overrides}" if overrides else "")
    return part, chart, link


# ---------------------------------------------------------------------------
# 3. The k schedule on the default setup


def user_setup(reading: Reading) -> BuiltSetup:
    """The roofline of the user's setup; a setup the model refuses is refused naming the control's label."""
    request = SetupRequest(
        hw=reading.text("hw"),
        model=reading.text("model"),
        draft=reading.text("draft"),
        weights=reading.text("weights"),
        kv_cache=reading.text("kv_cache"),
        devices=reading.integer("devices"),
        context=reading.integer("context"),
    )
    try:
        return build_setup(request)
    except SetupError as error:
        control = next((item for item in SETUP_CONTROLS if item.name == error.name), SETUP_CONTROLS[0])
        raise ControlError(control, f"{control.label}: {error.message}") from None


def setup_text(built: BuiltSetup) -> str:
    setup = built.setup
    return (
        f"{setup.devices} × {setup.accelerator.name}{devices_note(built)}, target {setup.target.name}, "
        f"draft {setup.draft.name}, context {setup.context_tokens} tokens"
    )


def schedule_part(
    accepted: Acceptance, k_max: int, built: BuiltSetup, setup_query: str
) -> tuple[dict[str, Any], dict[str, Any], dict[str, str], capacity.Decision]:
    """Best k per batch on the user's setup over the batches that fit in its memory, as the API decides it."""
    decision = capacity.decide(accepted, built.setup, k_max, MAX_BATCH, devices_note(built))
    p = iid_p(accepted)
    steps = decision.steps
    batches = np.arange(1, decision.batch_limit + 1, dtype=np.int64)
    best_k, best_speedup = np.asarray(decision.best_k), np.asarray(decision.best_speedup)
    # The chart needs every step's ends and enough batches between them for a smooth curve on a log axis.
    ends = [index for step in steps for index in (step.batch_from - 1, step.batch_to - 1)]
    spread = np.round(np.geomspace(1, max(decision.batch_limit, 1), SCHEDULE_POINTS)).astype(np.int64) - 1
    shown = np.unique(np.concatenate((spread, ends))) if steps else np.array([], dtype=np.int64)
    rows = [
        _cells(
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
    if isinstance(accepted, AcceptanceProfile) and accepted.measured:
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
            line(
                "break-even",
                [1, max(decision.batch_limit, 1)],
                [1, 1],
                line={"color": COLORS["break_even"], "dash": "dash", "width": 1.5},
                hoverinfo="skip",
            ),
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
    query = _query(p=p, k_max=k_max) + setup_query
    links = {
        "schedule": f"/api/v1/regimes/schedule?{query}",
        "schedule_csv": f"/api/v1/regimes/schedule?{query}&format=csv",
    }
    part = {
        "summary": summary,
        "fits": fits,
        "max_batch_that_fits": decision.max_batch_that_fits,
        "setup": setup_text(built),
        "table": {"columns": ["Batch sizes", "Best k", "Speedup"], "rows": rows},
    }
    return part, chart, links, decision


def setup_query(reading: Reading) -> str:
    """The setup's controls that differ from their defaults, as API parameters (after others: starts with &)."""
    return "".join(
        f"&{control.name}={url_text(reading[control.name])}"
        for control in SETUP_CONTROLS
        if reading[control.name] != control.default
    )


def _config_choice(reading: Reading, control: Control, check: Any) -> str | None:
    """A text control's value for the engine, or None (the default) with the reason on the page when refused."""
    text = reading.text(control.name).strip()
    if not text:
        return None
    try:
        check(text)
    except ValueError as error:
        reading.correct(control, "", f"{control.label}: {error}")
        return None
    return text


def _check_draft_path(text: str) -> None:
    if not re.fullmatch(r"[A-Za-z0-9_.~/+\-]+", text):
        raise ValueError("a file path or hub name of letters, digits and - _ . / ~ +")


def config_part(reading: Reading, p: float, built: BuiltSetup, profile: tuple[float, ...] = ()) -> dict[str, Any]:
    """The schedule written as the chosen engine takes it, by the service behind /api/v1/engine-config."""
    engine = reading.text("engine")
    module = engines.adapter(engine)
    version = _config_choice(reading, ENGINE_VERSION, lambda name: engines.version(engine, name))
    method = _config_choice(reading, METHOD, module.choose_method)
    draft_path = _config_choice(reading, DRAFT_PATH, _check_draft_path)
    out = engine_config_out(
        engine,
        p,
        reading.integer("k_max"),
        MAX_BATCH,
        built,
        batch=reading.integer("batch"),
        method=method,
        draft_path=draft_path,
        engine_version=version,
        profile=profile,
    )
    return {
        "engine": ENGINE_LABELS[engine],
        "engine_version": f"{ENGINE_LABELS[engine]} {out.engine_version}",
        "headline": out.headline,
        "text": out.text,
        "files": [{"name": name, "text": text} for name, text in out.files.items()],
        "placeholders": list(out.placeholders),
        # where tokens per verification come from is said under the schedule (step 2), once
        "notes": [note for note in out.notes if not note.startswith("tokens per verification from")],
        "sources": list(out.sources),
    }


# ---------------------------------------------------------------------------
# 4. Chains and trees


def _acceptance(reading: Reading) -> tuple[float, ...]:
    """The positional acceptance from its text; a malformed list is refused naming its label."""
    text = reading.text("acceptance")
    try:
        values = [float(item) for item in (part.strip() for part in text.split(",")) if item]
        if not values:
            raise ValueError("needs at least one probability, e.g. 0.6,0.2,0.1")
        if not all(math.isfinite(value) for value in values):
            raise ValueError("must hold finite numbers")
        if len(values) > trees.MAX_WIDTH:
            raise ValueError(f"takes at most {trees.MAX_WIDTH} numbers; got {len(values)}")
        return trees.positional_acceptance(values)
    except ValueError as error:
        reason = str(error) if "could not convert" not in str(error) else "must be comma-separated numbers"
        reason = reason.removeprefix("positional acceptance ")
        reading.correct(ACCEPTANCE, str(ACCEPTANCE.default), f"{ACCEPTANCE.label}: {reason}; got {text[:40]!r}")
        return tuple(DEFAULT_TREE_ACCEPTANCE)


FAMILY_COLORS = (COLORS["muted"], COLORS["accent"], "#6c8ee0", COLORS["good"], "#7fbf9a", COLORS["best"])


def _family_style(index: int, kind: str) -> dict[str, Any]:
    strong = kind not in ("chain", "level_filled", "independent_sequences")
    return {
        "color": FAMILY_COLORS[index % len(FAMILY_COLORS)],
        "width": 3.5 if strong else 2,
        "dash": "dot" if kind == "independent_sequences" else "solid",
    }


def calibrated_tree_acceptance(p: float) -> tuple[float, ...]:
    """Positional acceptance from a chain's calibrated p: P1 = p (the top candidate is the chain's draft), and
    P2, P3, ... in the default's proportions over the remaining 1 - p, never above the one before."""
    default = DEFAULT_TREE_ACCEPTANCE
    rest = [value * (1.0 - p) / (1.0 - default[0]) for value in default[1:]]
    values = [p]
    for value in rest:
        values.append(min(value, values[-1]))
    return trees.positional_acceptance(values)


def trees_part(
    reading: Reading, chosen: CostRegime, calibrated_p: float | None = None
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], str]:
    acceptance = _acceptance(reading)
    if calibrated_p is not None and reading.text("acceptance") == ACCEPTANCE.default:
        acceptance = calibrated_tree_acceptance(calibrated_p)
        uses = (
            f"Uses P1 = {fixed(acceptance[0], 3)}, the calibrated p, and P2.. in the default's proportions over the "
            "rest (a chain's counters say nothing of second choices): edit the field with your tree's own."
        )
    else:
        uses = "Uses the positional acceptance in the field (" + ",".join(f"{v:g}" for v in acceptance) + ")."
    budget = reading.integer("budget")
    comparison = trees.compare_trees(acceptance, budget, chosen.c, chosen.verify, DEFAULT_TREE_WIDTHS)
    budgets = list(range(budget + 1))

    def bound(value: float | None) -> str:
        return "unbounded" if value is None else fixed(value, 2)

    summary = (
        f"Best: {comparison.best_family} with {comparison.best_budget} drafted tokens per step, "
        f"{times(comparison.best_speedup)} (the {trees.BEST_SPEEDUP_TREE} has depth {comparison.optimal_shape.depth}). "
        f"A chain never yields more than {bound(comparison.chain_bound)} tokens per step, "
        f"a binary tree {bound(comparison.binary_tree_bound)}, any tree {bound(comparison.full_bound)}."
    )
    tokens: list[dict[str, Any]] = []
    speedups: list[dict[str, Any]] = []
    for index, family in enumerate(comparison.families):
        most = family.kind == "best_speedup"
        style = _family_style(index, family.kind)
        # The tokens chart draws the most-tokens tree (any depth); the speedup chart the best-speedup tree.
        values = comparison.optimal_values if most else family.values
        tokens_name = trees.MOST_TOKENS_TREE if most else family.name
        tokens.append(
            line(
                tokens_name,
                budgets,
                values,
                line=style,
                hovertemplate=f"{tokens_name}<br>n = %{{x}}: %{{y:.3f}}<extra></extra>",
            )
        )
        speedups.append(
            line(
                family.name,
                budgets,
                family.speedups,
                line=style,
                showlegend=False,
                hovertemplate=f"{family.name}<br>n = %{{x}}: %{{y:.2f}}×<extra></extra>",
            )
        )
    for name, value, color in (
        ("chain bound 1/(1−P1)", comparison.chain_bound, COLORS["muted"]),
        ("binary bound 1/(1−P1−P2)", comparison.binary_tree_bound, COLORS["accent"]),
    ):
        if value is not None:
            tokens.append(
                line(
                    name,
                    [0, budget],
                    [value, value],
                    line={"color": color, "dash": "dash", "width": 1.5},
                    hoverinfo="skip",
                )
            )
    speedups.append(
        line(
            "break-even",
            [0, budget],
            [1, 1],
            line={"color": COLORS["break_even"], "dash": "dash", "width": 1.5},
            hoverinfo="skip",
        )
    )
    speedups.append(
        line(
            f"best: n = {comparison.best_budget}",
            [comparison.best_budget],
            [comparison.best_speedup],
            mode="markers",
            marker={
                "size": 15,
                "symbol": "star",
                "color": COLORS["best"],
                "line": {"color": COLORS["ink"], "width": 1},
            },
            hovertemplate="n = %{x}<br>%{y:.2f}×<extra></extra>",
        )
    )
    x_title = "tokens verified per step (budget n)"
    tokens_figure = figure(tokens, x_title, "tokens per step", y={"rangemode": "tozero"})
    speedup_figure = figure(speedups, x_title, "speedup ×", y={"rangemode": "tozero"})
    query = _query(
        acceptance=",".join(f"{value:g}" for value in acceptance),
        budget=budget,
        c=reading.number("c"),
        **_tree_cost_query(reading),
        widths=",".join(str(width) for width in DEFAULT_TREE_WIDTHS),
    )
    part = {
        "summary": summary,
        "uses": uses,
        "assumption": tree_verification_assumption(chosen),
        "most_tokens": trees.MOST_TOKENS_TREE,
        "best_speedup": trees.BEST_SPEEDUP_TREE,
    }
    return part, tokens_figure, speedup_figure, f"/api/v1/trees?{query}"


# ---------------------------------------------------------------------------


def build(reading: Reading) -> View:
    chosen = _chosen(reading, reading.number("c"))
    result, calibration_link, engine = _calibrate(reading, chosen)
    sources, sources_chart, sources_link = sources_part(reading, chosen.verify)
    built = user_setup(reading)
    query = setup_query(reading)
    profile = tuple(position.rate for position in result.positions)
    accepted = AcceptanceProfile.of(result.acceptance, profile)
    schedule, schedule_chart, schedule_links, decision = schedule_part(accepted, reading.integer("k_max"), built, query)
    schedule["acceptance_model"] = "Tokens per verification from " + accepted.describe() + "."
    config = config_part(reading, result.acceptance, built, profile)
    tree_cost = _chosen_tree(reading)
    tree_part, trees_chart, trees_speedup_chart, trees_link = trees_part(reading, tree_cost, result.acceptance)
    p_query = f"engine={reading.text('engine')}&p={result.acceptance!r}&k_max={reading.integer('k_max')}{query}"
    if profile:
        p_query += "&profile=" + ",".join(f"{share:.6g}" for share in profile)
    for name in ("draft_path", "method", "engine_version"):
        if reading.text(name).strip():
            p_query += f"&{name}={url_text(reading.text(name).strip())}"
    calibrated = calibration_part(reading, result)
    calibrated["engine"] = engine
    calibrated.update(recommendation(decision, reading.integer("batch"), result, chosen))
    return {
        "cost": {"regime": chosen.regime.label, "c": fixed(chosen.c, 3)},
        "calibration": calibrated,
        "sources": sources,
        "schedule": schedule,
        "config": config,
        "trees": tree_part,
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
            **schedule_links,
            "config": f"/api/v1/engine-config?{p_query}",
            "trees": trees_link,
        },
    }


PAGE = Page(
    name="decide",
    path="/decide",
    nav="Decide for my server",
    title="From serving metrics to a decision",
    question="What p does my server see, which draft source and k should I run, and do trees pay?",
    template="pages/decide.html",
    controls=CONTROLS,
    build=build,
    body_controls=(METRICS, BASELINE),
    legacy_keys=("dec_", "cal_", "src_", "tree_"),
)
