"""From an engine's report or a setup to response models; shared by the API router and the command line."""

from __future__ import annotations

import json

from app.model import engine_config, engine_metrics, engines, trees
from app.model.acceptance import AcceptanceProfile
from app.model.capacity import decide
from app.model.engines.base import describe_batches
from app.web.schemas.engines import ClassCalibrationOut, EngineCalibrationOut, EngineConfigOut
from app.web.services.decision import CostRegime, calibration_out
from app.web.services.regimes import BuiltSetup, decision_schedule, devices_for_batch, devices_note


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
        cycles=item.measurement.cycles,
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


def calibrate_report(
    text: str,
    regime: CostRegime,
    k_max: int,
    k: int | None = None,
    label: str = "model_name",
    cycles: float | None = None,
    draft_lengths: tuple[int, ...] = (),
    engine_version: str | None = None,
) -> EngineCalibrationOut:
    """Detect the format, calibrate each class; raises EngineFormatError / CalibrationError with the reason.

    ``engine_version`` (with the engine the format belongs to) says which version wrote the report; a
    report whose format that version does not write is read all the same, with a note.
    """
    report, baseline = unwrap(text)
    if baseline is not None:
        format_name, measurements = engine_metrics.read_with_baseline(
            report, baseline, k=k, label=label, draft_lengths=draft_lengths
        )
    else:
        format_name, measurements = engine_metrics.read_measurements(
            report, k=k, label=label, cycles=cycles, draft_lengths=draft_lengths
        )
    engine = engine_metrics.FORMAT_ENGINE[format_name]
    known = engine_metrics.REPORT_FORMATS[format_name].versions
    version_notes: list[str] = []
    read_as = measurements[0].version if measurements else None
    if engine_version is not None:
        chosen = engines.version(engine, engine_version)
        if known and chosen.name not in known:
            version_notes.append(
                f"{engines.adapter(engine).TITLE} {chosen.name} does not write {format_name} (it is written by "
                f"{', '.join(known)}); read as {read_as or known[-1]}"
            )
        read_as = chosen.name if chosen.name in known else read_as
    classes = [engine_metrics.calibrate_measurement(m, regime.c, k_max, regime.verify) for m in measurements]
    outs = [_class_out(item, regime) for item in classes]
    notes: list[str] = []
    top = outs[0]
    if len(outs) > 1:
        pooled = engine_metrics.pooled(measurements)
        if pooled is not None:
            top = _class_out(engine_metrics.calibrate_measurement(pooled, regime.c, k_max, regime.verify), regime)
            notes.append(f"the top-level p sums all {len(outs)} classes; each class is calibrated on its own below")
        else:
            top = max(outs, key=lambda out: out.cycles or 0.0)
            notes.append(f"classes differ in k: the top-level p is the class {top.label!r} with the most verifications")
    sources = engines.version(engine, read_as).cite() if read_as in {v.name for v in engines.versions(engine)} else []
    return EngineCalibrationOut(
        engine=engine,
        engine_version=read_as,
        format_versions=list(known),
        sources=sources,
        format=format_name,
        format_description=engine_metrics.FORMATS[format_name],
        label_name=label,
        label=top.label,
        p=top.p,
        p_low=top.p_low,
        p_high=top.p_high,
        interval_level=top.interval_level,
        interval_method=top.interval_method,
        k=top.k,
        k_source=top.k_source,
        cycles=top.cycles,
        batch=top.batch,
        calibration=top.calibration,
        classes=outs,
        notes=version_notes + notes + top.notes,
    )


def engine_config_out(
    engine: str,
    p: float,
    k_max: int,
    batch_max: int,
    built: BuiltSetup,
    batch: int = 1,
    tree_acceptance: tuple[float, ...] | None = None,
    tree_budget: int = 0,
    method: str | None = None,
    draft_path: str | None = None,
    sglang_algorithm: str | None = None,
    trtllm_decoding_type: str | None = None,
    fit_batch: int = 1,
    engine_version: str | None = None,
    profile: tuple[float, ...] = (),
) -> EngineConfigOut:
    """The schedule on this setup (only batches that fit) written as ``engine`` takes it, and read back.

    ``method`` is the engine's own name for the drafter (vLLM method, SGLang algorithm, TensorRT-LLM
    decoding type, llama.cpp spec type); ``sglang_algorithm`` and ``trtllm_decoding_type`` are its older
    spellings for those two engines.
    """
    built = devices_for_batch(built, fit_batch)
    accepted = AcceptanceProfile.of(p, profile)
    decision = decide(accepted if profile else p, built.setup, k_max, batch_max, devices_note(built))
    schedule = decision_schedule(decision, built)
    model_notes: list[str] = [f"tokens per verification from {accepted.describe()}"]
    iid_differs: list[int] = []
    if profile:
        iid = decide(p, built.setup, k_max, batch_max, devices_note(built))
        iid_differs = [
            batch for batch, (a, b) in enumerate(zip(decision.best_k, iid.best_k, strict=True), start=1) if a != b
        ]
        if iid_differs:
            where = "batch" if len(iid_differs) == 1 else "batches"
            first = (
                f" (at batch 1: k = {iid.best_k[0]} against {decision.best_k[0]} from the profile)"
                if iid.best_k[0] != decision.best_k[0]
                else ""
            )
            model_notes.append(
                f"the i.i.d. model at p = {p:.3f} would run another k at {where} {describe_batches(iid_differs)}{first}"
            )
    tree = None
    tree_out = None
    notes: list[str] = []
    if tree_acceptance and tree_budget > 0:
        tree = trees.best_first_tree(tree_acceptance, tree_budget)
        paths = engine_config.tree_paths(tree)
        tree_out = {
            "nodes": len(paths),
            "depth": tree.depth,
            "expected_tokens": tree.value,
            "vllm_speculative_token_tree": str([tuple(path) for path in paths]),
            "trtllm_eagle_choices": paths,
        }
    limit = decision.batch_limit
    if batch > limit and limit:
        notes.append(f"batch {batch} does not fit; the flags use the largest batch that fits, {limit}")
    chosen_method = method
    if engine == "sglang" and sglang_algorithm:
        chosen_method = chosen_method or sglang_algorithm
    if engine == "trtllm" and trtllm_decoding_type:
        chosen_method = chosen_method or trtllm_decoding_type
    result = engine_config.export(
        engine,
        decision.best_k,
        decision.steps,
        limit,
        batch=batch,
        tree=tree,
        method=chosen_method,
        draft_path=draft_path,
        version=engine_version,
    )
    exported, version = result.exported, result.version
    return EngineConfigOut(
        engine=engine,
        engine_version=version.name,
        engine_versions=[known.name for known in engines.versions(engine)],
        p=p,
        k_max=k_max,
        max_batch_that_fits=decision.max_batch_that_fits,
        batch_limit=limit,
        headline=decision.headline,
        speculate=exported.config is not None,
        config=exported.config,
        flags=exported.flags,
        text=exported.text,
        files=exported.files,
        tree=tree_out,
        schedule=schedule,
        engine_k_by_batch=list(exported.runs),
        differs_at=list(exported.differs_at),
        placeholders=list(exported.placeholders),
        sources=version.cite(),
        acceptance_model=accepted.describe(),
        iid_differs_at=iid_differs,
        notes=model_notes + notes + exported.notes,
    )
