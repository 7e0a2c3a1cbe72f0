"""From an engine's report or a setup to response models; shared by the API router and the command line."""

from __future__ import annotations

import json
from dataclasses import dataclass

from app.model import engines
from app.model.arithmetic import closed_form
from app.model.counters import calibration
from app.model.counters.calibration import CalibrationError
from app.model.engines.vllm.reports import read_scrape, scrape_since
from app.model.live import engine_metrics
from app.service.decision import CostRegime, calibration_out
from app.service.schemas.engines import ClassCalibrationOut, EngineCalibrationOut
from app.service.schemas.fill import filled


def _class_out(item: engine_metrics.EngineCalibration, regime: CostRegime) -> ClassCalibrationOut:
    interval = item.interval
    return ClassCalibrationOut(
        label=item.measurement.label,
        p=item.result.acceptance,
        p_low=interval.low,
        p_high=interval.high,
        interval_level=interval.level,
        interval_method=interval.method,
        k=item.result.k,
        k_source=item.measurement.k_source if item.measurement.k is not None else "counters",
        cycles=item.measurement.drafts,
        batch=item.measurement.batch,
        calibration=calibration_out(item.result, regime, source=item.measurement.format),
        notes=item.notes,
    )


def unwrap(text: str) -> tuple[str, str | None]:
    """A body {"report": "...", "baseline": "..."} (strings) to its two texts; any other body is the report itself."""
    stripped = text.lstrip()
    if not stripped.startswith("{"):
        return text, None
    try:
        payload = json.loads(stripped)
    except json.JSONDecodeError:
        return text, None
    if isinstance(payload, dict) and set(payload) <= {"report", "baseline"} and isinstance(payload.get("report"), str):
        baseline = payload.get("baseline")
        return payload["report"], baseline if isinstance(baseline, str) and baseline.strip() else None
    return text, None


class BaselineError(CalibrationError):
    """The report reads on its own but not with its baseline: the baseline is at fault (or what is left of the
    report once the baseline is subtracted)."""


@dataclass(frozen=True)
class CalibratedReport:
    """One report calibrated on one cost: the response, and the reading behind it."""

    out: EngineCalibrationOut  # what POST /api/v1/calibrate and specdec-lab calibrate --from answer
    read: engine_metrics.ReportCalibration  # each class's counts and calibration, and the one led with

    @property
    def top(self) -> calibration.Calibration:
        """The calibration of the class led with (all classes summed where they share k)."""
        return self.read.top.result


def calibrate_report(
    text: str,
    regime: CostRegime,
    k_max: int,
    k: int | None = None,
    label: str = "model_name",
    cycles: float | None = None,
    draft_lengths: tuple[int, ...] = (),
    engine_version: str | None = None,
    baseline: str | None = None,
) -> CalibratedReport:
    """Detect the format, calibrate each class; raises EngineFormatError / CalibrationError with the reason
    (a BaselineError where the report reads on its own and the fault is the baseline's).

    The one calibration of a report: POST /api/v1/calibrate, the /decide page and specdec-lab calibrate --from.
    ``text`` is the report, or a JSON body {"report": "...", "baseline": "..."}; ``baseline`` (an earlier scrape
    to subtract) is taken from that body unless given here.  ``engine_version`` (with the engine the format
    belongs to) says which version wrote the report; a report whose format that version does not write is read
    all the same, with a note.
    """
    report, wrapped = unwrap(text)
    if baseline is None or not baseline.strip():  # an empty baseline is none; the body's is taken
        baseline = wrapped if wrapped is not None and wrapped.strip() else None
    try:
        read = engine_metrics.calibrate_report(
            report,
            regime.c,
            k_max,
            regime.verify,
            baseline=baseline,
            k=k,
            label=label,
            cycles=cycles,
            draft_lengths=draft_lengths,
        )
    except CalibrationError as error:
        if baseline is None:
            raise
        # a fault in the report names the report (it is raised again here); else the baseline is at fault
        engine_metrics.read_measurements(report, k=k, label=label, draft_lengths=draft_lengths)  # as with a baseline
        raise BaselineError(error.kind, error.message) from None
    return CalibratedReport(_report_out(read, regime, label, engine_version), read)


def _report_out(
    read: engine_metrics.ReportCalibration, regime: CostRegime, label: str, engine_version: str | None
) -> EngineCalibrationOut:
    format_name = read.format
    engine = engine_metrics.FORMAT_ENGINE[format_name]
    known = engine_metrics.REPORT_FORMATS[format_name].versions
    version_notes: list[str] = []
    read_as = read.classes[0].measurement.version if read.classes else None
    if engine_version is not None:
        chosen = engines.version(engine, engine_version)
        if known and chosen.name not in known:
            version_notes.append(
                f"{engines.adapter(engine).TITLE} {chosen.name} does not write {format_name} (it is written by "
                f"{', '.join(known)}); read as {read_as or known[-1]}"
            )
        read_as = chosen.name if chosen.name in known else read_as
    outs = [_class_out(item, regime) for item in read.classes]
    top = _class_out(read.top, regime)
    notes: list[str] = []
    if read.summed:
        notes.append(f"the top-level p sums all {len(outs)} classes; each class is calibrated on its own below")
    elif len(outs) > 1:
        notes.append(f"classes differ in k: the top-level p is the class {top.label!r} with the most verifications")
    sources = engines.version(engine, read_as).cite() if read_as in {v.name for v in engines.versions(engine)} else []
    return filled(
        EngineCalibrationOut,
        top,
        engine=engine,
        engine_version=read_as,
        format_versions=list(known),
        sources=sources,
        format=format_name,
        format_description=engine_metrics.FORMATS[format_name],
        label_name=label,
        classes=outs,
        notes=version_notes + notes + top.notes,
    )


def calibrate_scrape(
    text: str,
    c: float,
    k_max: int,
    verify: closed_form.VerifyCost = closed_form.free_verification,
    k: int | None = None,
    baseline: str | None = None,
    model_name: str | None = None,
) -> calibration.Calibration:
    """p from one model of a vLLM /metrics scrape (minus an optional earlier scrape), read by vLLM's adapter:
    POST /api/v1/calibrate/metrics and specdec-lab calibrate --metrics.  Raises CalibrationError; a
    BaselineError where the baseline is at fault."""
    measurement = read_scrape(text, model_name, k)
    if baseline is not None and baseline.strip():
        try:
            measurement = scrape_since(measurement, baseline, model_name, k)
        except CalibrationError as error:
            raise BaselineError(error.kind, error.message) from None
    return calibration.calibrate_from_counters(
        measurement, c, k_max, verify, k, engine_metrics.verifications_name(measurement.format)
    )
