"""Watching a fleet with Prometheus: the rules file and the Grafana dashboard for a setup and schedule."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, Response

from app.model import engines, limits, rules
from app.web.api.params import KMax
from app.web.api.setup_params import (
    MAX_BATCH,
    RULES,
    SETUP_RULES,
    DecidedBatchMax,
    OperatingBatch,
    Setup,
    _choice_query,
)
from app.web.core.errors import parameter_error, with_rules
from app.web.schemas.rules import RulesOut, rules_out
from app.web.services.regimes import BuiltSetup
from app.web.services.watch import dashboard_document, watch_rules

router = APIRouter(prefix="/api/v1", tags=["rules"])

ENGINES = list(engines.ENGINES)
VERSIONS_TEXT = "; ".join(f"{name}: {', '.join(v.name for v in engines.versions(name))}" for name in engines.ENGINES)
MAX_TEXT = 100
DURATION_PATTERN = r"^\s*(\d+(ms|s|m|h|d|w|y))+\s*$"
LABEL_PATTERN = r"^[a-zA-Z_][a-zA-Z0-9_]*$"

RULES_RULES = (
    RULES
    + (
        "- `engine_version` is one the engine knows, and one that exports spec-decode series to Prometheus (a "
        "version without them gets a 422 naming what is missing);\n"
        "- `p_low` is at most `p`;\n"
        "- `window` is from 1s to 7d and `hold` at most 7d, each a Prometheus duration (largest unit first: 1h30m);\n"
        "- `label` is a label name that does not start with __;\n"
        '- `match` is label matchers separated by commas (name="value", name=~"regex", != and !~);\n'
        "- `method` is one of the engine's own drafters (the list depends on the engine);\n"
        "- `devices`: both models and one sequence fit in the devices' memory.\n"
    )
    + SETUP_RULES
)


def rules_request(
    engine: Annotated[str, Query(description=f"One of: {', '.join(ENGINES)}.", json_schema_extra={"enum": ENGINES})],
    engine_version: Annotated[
        str | None,
        Query(max_length=MAX_TEXT, description=f"The engine version (the newest by default). Known: {VERSIONS_TEXT}."),
    ] = None,
    p: Annotated[
        float,
        Query(ge=0.0, le=1.0, allow_inf_nan=False, description="Acceptance p the schedule is decided for, 0 to 1."),
    ] = limits.ROOFLINE_DEFAULT_P,
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
    k_max: KMax = limits.ROOFLINE_DEFAULT_K_MAX,
    batch_max: DecidedBatchMax = MAX_BATCH,
    batch: OperatingBatch = 1,
    method: Annotated[
        str | None,
        Query(max_length=MAX_TEXT, description="The drafter in the engine's own words, as for engine-config."),
    ] = None,
    label: Annotated[
        str,
        Query(
            max_length=MAX_TEXT,
            description="The label whose values are the classes (with instance).",
            json_schema_extra={"pattern": LABEL_PATTERN},
        ),
    ] = rules.DEFAULT_LABEL,
    window: Annotated[
        str,
        Query(
            max_length=MAX_TEXT,
            description="Rate window of the recording rules (a Prometheus duration, 1s to 7d).",
            json_schema_extra={"pattern": DURATION_PATTERN},
        ),
    ] = rules.DEFAULT_WINDOW,
    hold: Annotated[
        str,
        Query(
            max_length=MAX_TEXT,
            description="How long a condition holds before its alert fires (for:), at most 7d.",
            json_schema_extra={"pattern": DURATION_PATTERN},
        ),
    ] = rules.DEFAULT_HOLD,
    match: Annotated[
        str,
        Query(
            max_length=rules.MAX_MATCH,
            description='Label matchers added to every series the rules read, such as job="vllm" (empty: all).',
        ),
    ] = "",
    fit_batch: Annotated[
        int,
        Query(
            ge=1,
            le=MAX_BATCH,
            description="With devices=0: choose the fewest devices that hold both models and this many sequences, "
            f"1 to {MAX_BATCH}.",
        ),
    ] = 1,
) -> tuple[rules.RulesRequest, int]:
    if engine not in ENGINES:
        raise parameter_error("engine", f"must be one of {', '.join(ENGINES)}; got {engine!r}", engine)
    request = rules.RulesRequest(
        engine=engine,
        version=engine_version,
        p=p,
        p_low=p_low,
        k_max=k_max,
        batch_max=batch_max,
        batch=batch,
        method=method,
        label=label,
        window=window.strip(),
        hold=hold.strip(),
        match=match,
    )
    return request, fit_batch


RulesQuery = Annotated[tuple[rules.RulesRequest, int], Depends(rules_request)]


def made_rules(built: BuiltSetup, query: tuple[rules.RulesRequest, int]) -> rules.RulesFile:
    request, fit_batch = query
    try:
        return watch_rules(built, request, fit_batch)
    except rules.RulesError as error:
        raise parameter_error(error.name, error.message) from None


YAML_RESPONSE: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {
            "application/yaml": {
                "schema": {
                    "type": "object",
                    "description": "A Prometheus rules file: rule groups, for rule_files.",
                    "required": ["groups"],
                    "properties": {"groups": {"type": "array", "items": {"type": "object"}}},
                }
            }
        },
        "description": "JSON, or the rules file itself with format=yaml.",
    },
    422: {"description": "An unknown engine or version, a version without spec-decode series, bad durations."},
}


@router.get("/rules", response_model=RulesOut, responses=YAML_RESPONSE)
@with_rules(RULES_RULES)
def get_rules(
    built: Setup,
    query: RulesQuery,
    format: Annotated[str, _choice_query(["json", "yaml"], "Response format.")] = "json",
) -> RulesOut | Response:
    """Prometheus recording and alerting rules for this engine version, setup and schedule, per instance and class."""
    if format not in ("json", "yaml"):
        raise parameter_error("format", f"must be json or yaml; got {format!r}", format)
    made = made_rules(built, query)
    if format == "yaml":
        return Response(
            made.text,
            media_type="application/yaml; charset=utf-8",
            headers={"content-disposition": f'attachment; filename="specdec-{made.engine}.rules.yml"'},
        )
    return rules_out(made)


@router.get(
    "/dashboard",
    response_model=dict[str, Any],
    responses={200: {"description": "A Grafana dashboard (classic JSON model) over the recording rules."}},
)
@with_rules(RULES_RULES)
def get_dashboard(built: Setup, query: RulesQuery) -> JSONResponse:
    """A Grafana dashboard over the rules of the same parameters: tokens against break-even, speedup, acceptance."""
    return JSONResponse(dashboard_document(made_rules(built, query)))
