"""Step 1: p from a rate, a length or any engine's report, with its interval and the one recommendation."""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from app.model.cost import capacity
from app.model.counters import calibration
from app.model.counters.calibration import CalibrationError, ErrorKind
from app.model.live import engine_metrics
from app.service import rollout_plan
from app.service.decision import (
    CostRegime,
)
from app.service.engines import BaselineError, calibrate_report
from app.service.fetch import FetchError, check_url, fetch_text
from app.service.inputs import link
from app.service.plan_inputs import engine_title
from app.service.regimes import BuiltSetup
from app.web.core.config import get_settings
from app.web.pages.controls import Control, ControlError, Reading
from app.web.pages.figures import COLORS, break_even, figure, line, marked
from app.web.pages.text import cells, fixed, times
from app.web.pages.views.decide.controls import (
    BASELINE,
    EXAMPLE_DRAFTS,
    EXAMPLE_K,
    EXAMPLE_SEED,
    LENGTH,
    METRICS,
    REPORT_K,
    URL,
    cost_query,
)

# ---------------------------------------------------------------------------
# 1. Calibration


@functools.lru_cache(maxsize=8)
def example_scrape(p: float) -> str:
    return calibration.example_exposition(p, EXAMPLE_K, drafts=EXAMPLE_DRAFTS, seed=EXAMPLE_SEED)


def example_link(p: float) -> str:
    params = {"p": p, "k": EXAMPLE_K, "drafts": EXAMPLE_DRAFTS, "seed": EXAMPLE_SEED}
    return link("/api/v1/calibrate/example-metrics", params)


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


UNREAD = "unread_url"  # in a view's body: the URL that could not be read, so that it is tried once per view


def _is_example(reading: Reading, report: str) -> bool:
    """Whether the report is the example scrape the page opens with (at the page's example p)."""
    return report.strip() == example_scrape(reading.number("example_p")).strip()


def _report_text(reading: Reading) -> tuple[str, str, str | None]:
    """(report, baseline, message about the URL): the pasted text, or the URL's when the server may fetch it."""
    body = reading.body
    if body is None:  # asked for with GET: the example scrape the page opens with (build posts a URL's as empty)
        return example_scrape(reading.number("example_p")), "", None
    report, baseline = body.get("metrics", ""), body.get("baseline", "")
    url = reading.text("url").strip()
    if not url or body.get(UNREAD) == url or (report.strip() and not _is_example(reading, report)):
        return report, baseline, None  # the example the paste box opens with gives way to a URL not yet tried
    try:
        if not get_settings().allow_fetch:
            return "", "", FETCH_OFF.format(url=check_url(url))
        fetched = fetch_text(url)
    except FetchError as error:
        if reading.strict:
            raise ControlError(URL, f"{URL.label}: {error}") from None
        # an address that names it (read leniently): said, and the example shown, as with no URL
        reading.notes.append(f"{URL.label}: {error}; showing the example report.")
        body["metrics"], body[UNREAD] = example_scrape(reading.number("example_p")), url  # tried once per view
        return body["metrics"], "", None
    body["metrics"] = fetched  # fetched once per view: every part of the page reads this same scrape
    return fetched, baseline, None


def _interval(item: engine_metrics.EngineCalibration) -> str:
    interval = item.interval
    if interval.low is None or interval.high is None:
        return "no interval (the report holds a mean only)"
    return f"{fixed(interval.low, 3)} – {fixed(interval.high, 3)}"


def _engine_report(reading: Reading, chosen: CostRegime) -> tuple[calibration.Calibration, dict[str, Any]]:
    """p from any engine's report, its format detected; per class where the report has several. The report is
    calibrated as POST /api/v1/calibrate calibrates it (app.service.engines.calibrate_report)."""
    report, baseline, fetch_message = _report_text(reading)
    k_max = reading.integer("k_max")
    given_k = reading.integer("report_k") or None
    if fetch_message is not None:
        report = example_scrape(reading.number("example_p"))
    for k in (given_k, None):
        try:
            calibrated = calibrate_report(report, chosen, k_max, k=k, baseline=baseline)
            break
        except BaselineError as error:
            raise _engine_error(BASELINE, error) from None
        except CalibrationError as error:
            if error.field != "k" or k is None:
                raise _engine_error(METRICS, error) from None
            # the report contradicts the k given: the strict reading refuses that field by its label, and the
            # page's address is corrected to the report's own k (the page's example scrape counts another k)
            reading.correct(REPORT_K, 0, f"{REPORT_K.label}: {error.message}")
    out, read = calibrated.out, calibrated.read
    classes, top = read.classes, read.top
    engine = out.engine
    measurement = top.measurement
    k_source = "given" if measurement.k_source == "given" and measurement.k is not None else "read from the report"
    rows = [
        cells(
            item.measurement.label or "(none)",
            fixed(item.result.acceptance, 3),
            _interval(item),
            str(item.result.k),
            "n/a" if item.measurement.drafts is None else f"{item.measurement.drafts:,.0f}",
            header=True,
        )
        for item in classes
    ]
    info = {
        "shown": True,
        "engine": engine_title(engine),
        "engine_key": engine,
        "format": out.format_description,
        "interval": _interval(top),
        "p_low": top.interval.low,
        "p_high": top.interval.high,
        "level": f"{top.interval.level:.0%} interval, {top.interval.method}",
        "k": f"{top.result.k} ({k_source})",
        "several": len(classes) > 1,
        "classes": {"columns": ["Class", "p", "Interval", "k", "Verifications"], "rows": rows},
        "rollout": {"columns": ROLLOUT_COLUMNS, "rows": []},  # filled on the user's setup (rollout_table)
        "fetch": fetch_message or "",
        "served_model": top.measurement.label or "",  # the class's model_name (or the label the user split by)
        "example": "",  # said when the numbers are the example report's
        "notes": (
            [f"{len(classes)} classes in the report: each is calibrated on its own below."] if len(classes) > 1 else []
        )
        + list(top.measurement.notes),  # the calibration's own notes are listed under it
    }
    if fetch_message is not None:  # nothing of the user's was read: say whose numbers these are
        info["format"] = f"the example report, not yours (the URL was not fetched); {info['format']}"
        info["notes"] = [EXAMPLE_INSTEAD, *notes_of(info)]
    elif _is_example(reading, report):
        p = fixed(reading.number("example_p"), 2)
        info["example"] = f"Example: the numbers below are a synthetic report's at p = {p}; paste your server's above."
    return calibrated.top, info


# the rollout plan's table, one row per class (rollout_table); its columns stand also where it has no rows
ROLLOUT_COLUMNS = ["Class", "Acceptance", "Batches", "Verdict", "Gain", "Config"]


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
    "rollout": {"columns": ROLLOUT_COLUMNS, "rows": []},
    "fetch": "",
    "served_model": "",
    "example": "",
    "notes": [],
}


def calibrate(reading: Reading, chosen: CostRegime) -> tuple[calibration.Calibration, dict[str, str], dict[str, Any]]:
    """The calibration for the chosen mode, where its numbers come from as an API link, and the engine read."""
    mode, k_max, k = reading.text("mode"), reading.integer("k_max"), reading.integer("k")
    cost = {"c": reading.number("c"), "k_max": k_max, **cost_query(reading)}
    if mode == "rate":
        rate = reading.number("rate")
        result = calibration.calibrate_from_rate(rate, k, chosen.c, k_max, chosen.verify)
        href = link("/api/v1/calibrate/rate", {"rate": rate, "k": k, **cost})
        return result, {"href": href, "text": "/calibrate/rate"}, NO_ENGINE
    if mode == "length":
        length = reading.number("length")
        if length > k + 1:
            message = f"{LENGTH.label} must be from 1 to k + 1 = {k + 1} at k = {k}; got {LENGTH.shown(length)}"
            reading.correct(LENGTH, float(k + 1), message)
            length = float(k + 1)
        result = calibration.calibrate_from_length(length, k, chosen.c, k_max, chosen.verify)
        href = link("/api/v1/calibrate/length", {"length": length, "k": k, **cost})
        return result, {"href": href, "text": "/calibrate/length"}, NO_ENGINE
    result, info = _engine_report(reading, chosen)
    return result, {"href": link("/api/v1/calibrate", cost), "text": "POST /calibrate"}, info


def _verdict(result: calibration.Calibration) -> tuple[str, str]:
    departure = result.departure
    if departure is None:
        if result.source == "exposition" and result.counters is not None and result.counters.per_position:
            return (
                "Drafts of several lengths: independence from token to token is not tested (the test needs every "
                "draft k long).",
                "",
            )
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
            break_even(ks[0], ks[-1]),
            line(
                f"measured k = {result.k}",
                [result.k],
                [result.speedup_at_k],
                mode="markers",
                marker={"size": 13, "color": "rgba(0,0,0,0)", "line": {"color": COLORS["ink"], "width": 2.5}},
                hovertemplate="measured k = %{x}<br>%{y:.2f}×<extra></extra>",
            ),
            marked(
                f"best k under this cost = {best}" if best else "under this cost: do not speculate",
                [best],
                [result.best_speedup],
                "k = %{x}<br>%{y:.2f}×<extra></extra>",
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
                cells(
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
                    **cells(
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
        "where": f"{where}, from step 2's schedule: "
        + (f"k = {k}, {times(speedup)}." if k else "leave it off.")
        + (
            f" That is beyond the {len(result.positions)} positions the report measured: step 2 says how tokens per "
            "verification are carried on past them, so measure at that k before relying on it."
            if result.positions and k > len(result.positions)
            else ""
        ),
        "generic": generic,
    }


def rollout_table(reading: Reading, built: BuiltSetup) -> dict[str, Any]:
    """Where the pasted report holds several classes: the rollout plan on the user's setup, one row per class in
    rollout order (app.service.rollout_plan); empty where the report is not one scrape that counts drafts."""
    report, _baseline, fetch_message = _report_text(reading)
    if fetch_message is not None:
        return {"columns": ROLLOUT_COLUMNS, "rows": []}
    try:
        engine, version, classes = rollout_plan.from_scrape(report, "model_name")
        planned = rollout_plan.plan_classes(engine, version, classes, built, "model_name", reading.integer("k_max"))
    except (CalibrationError, ValueError):
        return {"columns": ROLLOUT_COLUMNS, "rows": []}
    rows = []
    for row in planned.classes:
        seen = rollout_plan.acceptance_seen(row, lambda value: fixed(value, 3))
        batches = rollout_plan.batches_seen(row)
        gain = row.gain
        shown = f"{gain.point:.2f}× [{gain.low:.2f}, {gain.high:.2f}]" if gain else "–"
        config = " ".join(row.config.flags) if row.config else "–"
        made = cells(row.class_ or "(none)", seen, batches, row.verdict, shown, config, header=True)
        made["cells"][-1]["class"] = "config"  # flags read left to right, in the font they are typed in
        rows.append(made)
    return {"columns": ROLLOUT_COLUMNS, "rows": rows}
