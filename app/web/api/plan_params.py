"""The parameters of one plan (app.service.plan), declared once for /engine-config, /rules and /dashboard.

``PlanQuery`` reads what the decision depends on (engine, drafter, version, acceptance as p, a draft
acceptance rate or a mean acceptance length at k, a measured profile, the schedule's batches, a tree);
``WatchQuery`` adds the watch's window for the rules and the dashboard.  ``built_plan`` builds the plan and
turns what the model refuses into a 422 naming the parameter.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Annotated, Any

from fastapi import Depends, Query

from app.model import closed_form, engine_config, engines, limits, rules, trees
from app.model.acceptance import AcceptanceProfile
from app.model.engines.base import UnknownVersionError
from app.service import plan
from app.service.regimes import BuiltSetup
from app.web.api.params import K_MAX_LIMIT, KMax
from app.web.api.setup_params import MAX_BATCH, DecidedBatchMax, OperatingBatch
from app.web.core.errors import parameter_error

ENGINES = list(engines.ENGINES)
VERSIONS_TEXT = "; ".join(f"{name}: {', '.join(v.name for v in engines.versions(name))}" for name in engines.ENGINES)
METHODS_TEXT = "; ".join(f"{name}: {', '.join(engines.adapter(name).METHODS)}" for name in engines.ENGINES)
MAX_LABEL = 100
MAX_TEXT = 1_000
DRAFT_PATH_PATTERN = r"^[A-Za-z0-9_.~/+\-]+$"
DURATION_PATTERN = r"^\s*(\d+(ms|s|m|h|d|w|y))+\s*$"
LABEL_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"
DEFAULT_P = limits.ROOFLINE_DEFAULT_P

PROFILE_RULE = "- `profile`: each share from 0 to 1, not increasing along the positions.\n"
# Rules between the plan's parameters, listed in the description of each operation that takes them.
PLAN_RULES = (
    "- `p`, `rate`, `mean_length`: give at most one of them;\n"
    "- `k` is required with rate or mean_length;\n"
    "- `mean_length` is at most k + 1;\n"
    "- `tree_acceptance` is required with tree_budget > 0; its values do not increase and sum to at most 1;\n"
    "- `tree_budget` fits the engine's tree format;\n"
    "- `engine_version` is one the engine knows (the list depends on the engine);\n"
    "- `method` is one of the engine's own drafters (the list depends on the engine);\n"
    "- `draft_path` is one the engine can load;\n" + PROFILE_RULE
)

OptionalK = Annotated[
    int | None,
    Query(
        ge=1,
        le=K_MAX_LIMIT,
        description=f"Draft length of the measurement, 1 to {K_MAX_LIMIT}; read from the data if omitted.",
    ),
]
ProfileQuery = Annotated[
    str,
    Query(
        max_length=MAX_TEXT,
        pattern=r"^\s*([0-9.]+\s*(,\s*[0-9.]+\s*)*)?$",
        description="A measured acceptance profile: the share of drafts accepted at least to position 1, 2, ... "
        "(each 0 to 1, not increasing), comma-separated, as calibrate's calibration.positions[].rate or "
        "measure's profile; tokens per verification then come from it, the i.i.d. p only beyond it.",
    ),
]
EngineVersionQuery = Annotated[
    str | None,
    Query(
        max_length=MAX_LABEL,
        description=f"The engine version (the newest by default). Known: {VERSIONS_TEXT}.",
    ),
]


def profile_shares(text: str) -> tuple[float, ...]:
    try:
        shares = tuple(float(item) for item in text.split(",") if item.strip())
        AcceptanceProfile.of(0.5, shares)
    except ValueError as error:
        message = str(error) if "could not convert" not in str(error) else "must be comma-separated numbers"
        raise parameter_error("profile", f"{message}; got {text[:60]!r}", text) from None
    if len(shares) > K_MAX_LIMIT:
        raise parameter_error("profile", f"takes at most {K_MAX_LIMIT} positions; got {len(shares)}", text)
    return shares


def version_name(engine: str, name: str | None) -> str | None:
    if name is None:
        return None
    try:
        return engines.version(engine, name).name
    except UnknownVersionError as error:
        raise parameter_error(
            "engine_version", f"{error.engine} has no version {error.version!r}; known: {', '.join(error.known)}", name
        ) from None


def _acceptance(p: float | None, rate: float | None, length: float | None, k: int | None) -> float:
    given = [name for name, value in (("p", p), ("rate", rate), ("mean_length", length)) if value is not None]
    if not given:
        return DEFAULT_P
    if len(given) != 1:
        raise parameter_error("p", "give exactly one of p, rate (with k) or mean_length (with k)")
    if p is not None:
        return p
    if k is None:
        raise parameter_error("k", f"is required with {given[0]}: the draft length the measurement was taken at")
    if rate is not None:
        return closed_form.acceptance_from_draft_rate(rate, k)
    assert length is not None
    if length > k + 1:
        raise parameter_error("mean_length", f"must be at most k + 1 = {k + 1}; got {length:g}")
    return closed_form.acceptance_from_mean_length(length, k)


def _tree_acceptance(text: str) -> tuple[float, ...]:
    try:
        return trees.positional_acceptance([float(item) for item in text.split(",") if item.strip()])
    except ValueError as error:
        raise parameter_error("tree_acceptance", str(error)) from None


def plan_request(
    engine: Annotated[str, Query(description=f"One of: {', '.join(ENGINES)}.", json_schema_extra={"enum": ENGINES})],
    p: Annotated[float | None, Query(ge=0.0, le=1.0, allow_inf_nan=False, description="Acceptance p, 0 to 1.")] = None,
    rate: Annotated[
        float | None,
        Query(ge=0.0, le=1.0, allow_inf_nan=False, description="Or: draft acceptance rate measured at k, 0 to 1."),
    ] = None,
    mean_length: Annotated[
        float | None,
        Query(
            ge=1.0,
            le=K_MAX_LIMIT + 1,
            allow_inf_nan=False,
            description=f"Or: mean acceptance length at k, 1 to {K_MAX_LIMIT + 1}.",
        ),
    ] = None,
    k: OptionalK = None,
    k_max: KMax = 8,
    batch_max: DecidedBatchMax = MAX_BATCH,
    batch: OperatingBatch = 1,
    tree_acceptance: Annotated[
        str,
        Query(max_length=MAX_TEXT, description="Positional acceptance P1 >= P2 >= ... for a tree, comma-separated."),
    ] = "",
    tree_budget: Annotated[
        int,
        Query(
            ge=0,
            le=trees.MAX_TREE_BUDGET,
            description=f"Tree nodes, 0 (a chain, from the schedule) to {trees.MAX_TREE_BUDGET}.",
        ),
    ] = 0,
    method: Annotated[
        str | None,
        Query(
            max_length=MAX_LABEL,
            description="The drafter in the engine's own words (any case). "
            f"{METHODS_TEXT}. Without it: a separate draft model.",
        ),
    ] = None,
    draft_path: Annotated[
        str | None,
        Query(
            max_length=MAX_TEXT,
            pattern=DRAFT_PATH_PATTERN,
            description="The draft model's file path or hub name (letters, digits and - _ . / ~ +), written as is.",
        ),
    ] = None,
    sglang_algorithm: Annotated[
        str | None,
        Query(
            description="SGLang --speculative-algorithm (as method=). One of: "
            f"{', '.join(engine_config.SGLANG_ALGORITHMS)}; without it STANDALONE, a separate draft model.",
            json_schema_extra={"enum": list(engine_config.SGLANG_ALGORITHMS)},
        ),
    ] = None,
    trtllm_decoding_type: Annotated[
        str | None,
        Query(
            description="TensorRT-LLM decoding_type (as method=). One of: "
            + ", ".join(engine_config.TRTLLM_DECODING_TYPES)
            + "; without it Draft_Target.",
            json_schema_extra={"enum": list(engine_config.TRTLLM_DECODING_TYPES)},
        ),
    ] = None,
    fit_batch: Annotated[
        int,
        Query(
            ge=1,
            le=MAX_BATCH,
            description="With devices=0: choose the fewest devices that hold both models and this many sequences, "
            f"1 to {MAX_BATCH}.",
        ),
    ] = 1,
    engine_version: EngineVersionQuery = None,
    profile: ProfileQuery = "",
) -> plan.PlanRequest:
    """The plan's request; a 422 names what cannot be combined."""
    if engine not in engines.ADAPTERS:  # the registry as it is now (an engine registered later included)
        raise parameter_error("engine", f"must be one of {', '.join(engines.ADAPTERS)}; got {engine!r}", engine)
    if sglang_algorithm is not None and sglang_algorithm not in engine_config.SGLANG_ALGORITHMS:
        raise parameter_error(
            "sglang_algorithm", f"must be one of {', '.join(engine_config.SGLANG_ALGORITHMS)}", sglang_algorithm
        )
    if trtllm_decoding_type is not None and trtllm_decoding_type not in engine_config.TRTLLM_DECODING_TYPES:
        raise parameter_error(
            "trtllm_decoding_type",
            f"must be one of {', '.join(engine_config.TRTLLM_DECODING_TYPES)}",
            trtllm_decoding_type,
        )
    # the older spellings of method= for two engines, named by each adapter (METHOD_ALIAS)
    older = {"sglang_algorithm": sglang_algorithm, "trtllm_decoding_type": trtllm_decoding_type}
    chosen_method = method or older.get(getattr(engines.adapter(engine), "METHOD_ALIAS", ""))
    chosen_version = version_name(engine, engine_version)
    shares = profile_shares(profile)
    try:
        engines.adapter(engine).choose_method(chosen_method)
    except ValueError as error:
        raise parameter_error("method", str(error), method) from None
    tree = _tree_acceptance(tree_acceptance) if tree_acceptance.strip() else None
    acceptance = _acceptance(p, rate, mean_length, k)
    if tree_budget > 0 and not tree_acceptance.strip():
        raise parameter_error("tree_acceptance", "is required with tree_budget > 0")
    return plan.PlanRequest(
        engine=engine,
        p=acceptance,
        profile=shares,
        k_max=k_max,
        batch_max=batch_max,
        batch=batch,
        fit_batch=fit_batch,
        method=chosen_method,
        draft_path=draft_path,
        version=chosen_version,
        tree_acceptance=tree if tree_budget > 0 else None,
        tree_budget=tree_budget,
    )


PlanQuery = Annotated[plan.PlanRequest, Depends(plan_request)]


def _patterned(description: str, pattern: str) -> Any:
    """A short text parameter whose pattern the OpenAPI document states (the model checks it and names it)."""
    return Query(max_length=MAX_LABEL, description=description, json_schema_extra={"pattern": pattern})


def watch_request(
    request: PlanQuery,
    p_low: Annotated[
        float | None,
        Query(
            ge=0.0,
            le=1.0,
            allow_inf_nan=False,
            description="The calibrated lower bound of p (calibrate's p_low), 0 to 1: below it the acceptance alert "
            f"fires. Default: p - {rules.DEFAULT_P_MARGIN:g}.",
        ),
    ] = None,
    label: Annotated[
        str, _patterned("The label whose values are the classes (with instance).", LABEL_PATTERN)
    ] = rules.DEFAULT_LABEL,
    window: Annotated[
        str, _patterned("Rate window of the recording rules (a Prometheus duration, 1s to 7d).", DURATION_PATTERN)
    ] = rules.DEFAULT_WINDOW,
    hold: Annotated[
        str, _patterned("How long a condition holds before its alert fires (for:), at most 7d.", DURATION_PATTERN)
    ] = rules.DEFAULT_HOLD,
    match: Annotated[
        str,
        Query(
            max_length=rules.MAX_MATCH,
            description='Label matchers added to every series the rules read, such as job="vllm" (empty: all).',
        ),
    ] = "",
) -> plan.PlanRequest:
    """The plan's request with the watch's window; the rules' own checks (version with series, durations,
    label, matchers, p_low) answer before anything is decided."""
    watched = replace(request, p_low=p_low, label=label, window=window.strip(), hold=hold.strip(), match=match)
    try:
        rules.check(watched.rules_request())
    except rules.RulesError as error:
        raise parameter_error(error.name, error.message) from None
    return watched


WatchQuery = Annotated[plan.PlanRequest, Depends(watch_request)]


def built_plan(request: plan.PlanRequest, built: BuiltSetup) -> plan.Plan:
    """The plan, or a 422 naming the parameter the engine or the model refuses."""
    try:
        return plan.build(request, built)
    except engine_config.ConfigRuleError as error:
        raise parameter_error("draft_path" if request.draft_path else "method", str(error)) from None
    except ValueError as error:
        raise parameter_error("tree_budget", str(error)) from None


def watched_plan(request: plan.PlanRequest, built: BuiltSetup) -> plan.Plan:
    """The plan with its rules made (a 422 naming the parameter when they cannot be)."""
    made = built_plan(request, built)
    try:
        made.rules  # noqa: B018 - the rules are made here so that their refusal is a 422
    except rules.RulesError as error:
        raise parameter_error(error.name, error.message) from None
    return made
