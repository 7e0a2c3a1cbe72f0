"""From an engine's report or a setup to response models; shared by the API router and the command line."""

from __future__ import annotations

import json

from app.model import engine_config, engine_metrics, trees
from app.model.capacity import decide
from app.web.schemas.engines import ClassCalibrationOut, EngineCalibrationOut, EngineConfigOut
from app.web.services.decision import CostRegime, calibration_out
from app.web.services.regimes import BuiltSetup, decision_schedule, devices_for_batch, devices_note

ENGINE_SOURCES: dict[str, list[str]] = {
    "vllm": ["vllm-project/vllm: vllm/config/speculative.py (SpeculativeConfig)"],
    "trtllm": ["NVIDIA/TensorRT-LLM: tensorrt_llm/llmapi/llm_args.py (DecodingBaseConfig, EagleDecodingConfig)"],
    "sglang": [
        "sgl-project/sglang: python/sglang/srt/server_args.py (--speculative-* flags)",
        "sgl-project/sglang: scripts/playground/bench_speculative.py (steps, topk, num_draft_tokens together)",
    ],
    "llamacpp": ["ggml-org/llama.cpp: common/arg.cpp (--draft-max, --draft-min, --draft-p-min)"],
}


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
) -> EngineCalibrationOut:
    """Detect the format, calibrate each class; raises EngineFormatError / CalibrationError with the reason."""
    report, baseline = unwrap(text)
    if baseline is not None:
        format_name, measurements = engine_metrics.read_with_baseline(report, baseline, k=k, label=label)
    else:
        format_name, measurements = engine_metrics.read_measurements(report, k=k, label=label, cycles=cycles)
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
    return EngineCalibrationOut(
        engine=engine_metrics.FORMAT_ENGINE[format_name],
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
        notes=notes + top.notes,
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
    sglang_algorithm: str = "EAGLE",
    trtllm_decoding_type: str = "Draft_Target",
    fit_batch: int = 1,
) -> EngineConfigOut:
    """The schedule on this setup (only batches that fit) written as ``engine`` takes it."""
    built = devices_for_batch(built, fit_batch)
    decision = decide(p, built.setup, k_max, batch_max, devices_note(built))
    schedule = decision_schedule(decision, built)
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
    k_here = decision.best_k[min(batch, limit) - 1] if limit else 0
    if batch > limit and limit:
        notes.append(f"batch {batch} does not fit; the flags use the largest batch that fits, {limit}")
    if engine == "vllm":
        exported = engine_config.vllm_speculative_config(decision.steps, limit, method, draft_path, tree)
    elif engine == "trtllm":
        exported = engine_config.trtllm_speculative_config(
            decision.steps, limit, tree, trtllm_decoding_type, draft_path
        )
    elif engine == "sglang":
        width = max(tree.ranks) if tree is not None else 1
        exported = engine_config.sglang_flags(k_here, sglang_algorithm, tree, width, draft_path)
        notes.append(f"SGLang takes one draft length: the schedule's k at batch {min(batch, limit) or 1}")
    else:
        exported = engine_config.llamacpp_flags(k_here)
        notes.append(f"llama.cpp takes one draft length: the schedule's k at batch {min(batch, limit) or 1}")
    text = exported.text
    if engine == "vllm" and exported.config is not None:
        text = json.dumps({"speculative_config": exported.config}, indent=2) + "\n\n" + exported.text
    return EngineConfigOut(
        engine=engine,
        p=p,
        k_max=k_max,
        max_batch_that_fits=decision.max_batch_that_fits,
        batch_limit=limit,
        headline=decision.headline,
        speculate=exported.config is not None,
        config=exported.config,
        flags=exported.flags,
        text=text,
        tree=tree_out,
        schedule=schedule,
        sources=ENGINE_SOURCES[engine],
        notes=notes + exported.notes,
    )
