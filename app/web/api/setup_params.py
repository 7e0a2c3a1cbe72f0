"""Query parameters of the roofline setup (presets, formats, overrides), shared by every router that prices a step."""

from __future__ import annotations

import inspect
from typing import Annotated, Any

from fastapi import Depends, Query

from app.model import limits
from app.model.limits import MAX_CONTEXT, MAX_OVERHEAD_US, MIN_EFFICIENCY, PRESET_FIELD_BOUNDS
from app.model.presets import ACCELERATOR_FIELDS, ACCELERATORS, DRAFT_CHOICES, MODEL_FIELDS, MODELS, WEIGHT_FORMATS
from app.service import regimes as regimes_report
from app.service.regimes import (
    DEFAULT_DRAFT,
    DEFAULT_HW,
    DEFAULT_MODEL,
    DEFAULTS,
    KV_CACHE_FORMATS,
    BuiltSetup,
    SetupError,
    SetupRequest,
    build_setup,
)
from app.web.core.errors import parameter_error

MAX_BATCH = regimes_report.MAX_BATCH
MAX_DEVICES = regimes_report.MAX_DEVICES


def _choice_query(allowed: list[str], description: str) -> Any:
    """A string parameter listed as an enum in the schema and checked by the handler (422 names it)."""
    return Query(description=f"{description} One of: {', '.join(allowed)}.", json_schema_extra={"enum": allowed})


# Bounds of every editable preset field: (type, lower bound, inclusive?, upper bound, description).
FIELD_BOUNDS = PRESET_FIELD_BOUNDS
PRESET_OWNERS = {"hw": "accelerator", "model": "target model", "draft": "draft model"}


def _override_parameters() -> list[inspect.Parameter]:
    parameters = []
    for prefix, fields in (("hw", ACCELERATOR_FIELDS), ("model", MODEL_FIELDS), ("draft", MODEL_FIELDS)):
        for field in fields:
            kind, low, inclusive, high, text = FIELD_BOUNDS[field]
            span = f"{low:g} to {high:g}" if inclusive else f"above {low:g}, at most {high:g}"
            query = Query(
                ge=low if inclusive else None,
                gt=None if inclusive else low,
                le=high,
                allow_inf_nan=False if kind is float else None,
                description=f"Override the {PRESET_OWNERS[prefix]} preset's {text} ({span}).",
            )
            annotation = Annotated[kind | None, query]  # type: ignore[valid-type]
            parameters.append(
                inspect.Parameter(
                    f"{prefix}_{field}", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation
                )
            )
    return parameters


def preset_overrides(**values: float | int | None) -> dict[str, float | int | None]:
    return {name: value for name, value in values.items() if value is not None}


preset_overrides.__signature__ = inspect.Signature(_override_parameters())  # type: ignore[attr-defined]


def _cost_term_parameters() -> list[inspect.Parameter]:
    return [
        inspect.Parameter(
            term.name,
            inspect.Parameter.KEYWORD_ONLY,
            default=term.default,
            annotation=Annotated[
                float if term.default is not None else float | None,
                Query(
                    ge=0.0, le=term.high, allow_inf_nan=False, description=f"{term.description}, 0 to {term.high:g}."
                ),
            ],
        )
        for term in limits.COST_TERMS
    ]


def cost_terms(**values: float | None) -> dict[str, float | None]:
    """The cost terms a request sets (those at their defaults are left out)."""
    defaults = {term.name: term.default for term in limits.COST_TERMS}
    return {name: value for name, value in values.items() if value != defaults[name]}


cost_terms.__signature__ = inspect.Signature(_cost_term_parameters())  # type: ignore[attr-defined]


def roofline_setup(
    overrides: Annotated[dict[str, float | int | None], Depends(preset_overrides)],
    terms: Annotated[dict[str, float | None], Depends(cost_terms)],
    hw: Annotated[str, _choice_query(list(ACCELERATORS), "Accelerator preset.")] = DEFAULT_HW,
    model: Annotated[str, _choice_query(list(MODELS), "Target model preset.")] = DEFAULT_MODEL,
    draft: Annotated[
        str,
        _choice_query(
            list(DRAFT_CHOICES),
            "Draft model preset, or a head on the target priced from its shape (eagle, eagle3, mtp).",
        ),
    ] = DEFAULT_DRAFT,
    weights: Annotated[
        str, _choice_query(list(WEIGHT_FORMATS), "Weight format of the target (and of the draft by default).")
    ] = limits.DEFAULT_WEIGHTS,
    draft_weights: Annotated[
        str | None, _choice_query(list(WEIGHT_FORMATS), "Weight format of the draft; defaults to weights.")
    ] = None,
    kv_cache: Annotated[str, _choice_query(list(KV_CACHE_FORMATS), "KV-cache format.")] = limits.DEFAULT_KV_CACHE,
    devices: Annotated[
        int,
        Query(
            ge=0, le=MAX_DEVICES, description=f"Devices in tensor parallel, 0 (auto: fewest that fit) to {MAX_DEVICES}."
        ),
    ] = 0,
    context: Annotated[
        int, Query(ge=0, le=MAX_CONTEXT, description=f"Tokens of context per sequence, 0 to {MAX_CONTEXT:,}.")
    ] = DEFAULTS.context_tokens,
    bandwidth_efficiency: Annotated[
        float,
        Query(
            ge=MIN_EFFICIENCY,
            le=1.0,
            allow_inf_nan=False,
            description=f"Achieved share of peak bandwidth, {MIN_EFFICIENCY:g} to 1.",
        ),
    ] = DEFAULTS.bandwidth_efficiency,
    compute_efficiency: Annotated[
        float,
        Query(
            ge=MIN_EFFICIENCY,
            le=1.0,
            allow_inf_nan=False,
            description=f"Achieved share of peak FLOPS, {MIN_EFFICIENCY:g} to 1.",
        ),
    ] = DEFAULTS.compute_efficiency,
    overhead_us: Annotated[
        float,
        Query(
            ge=0.0,
            le=MAX_OVERHEAD_US,
            allow_inf_nan=False,
            description=f"Fixed time per forward pass, microseconds, 0 to {MAX_OVERHEAD_US:,.0f}.",
        ),
    ] = DEFAULTS.step_overhead_us,
) -> BuiltSetup:
    request = SetupRequest(
        hw=hw,
        model=model,
        draft=draft,
        weights=weights,
        draft_weights=draft_weights,
        kv_cache=kv_cache,
        devices=devices,
        context=context,
        bandwidth_efficiency=bandwidth_efficiency,
        compute_efficiency=compute_efficiency,
        overhead_us=overhead_us,
        overrides=overrides,
        cost_terms=terms,
    )
    try:
        return build_setup(request)
    except SetupError as error:
        raise parameter_error(error.name, error.message) from error


Setup = Annotated[BuiltSetup, Depends(roofline_setup)]
Batch = Annotated[int, Query(ge=1, le=MAX_BATCH, description=f"Batch size (sequences per step), 1 to {MAX_BATCH}.")]
BatchMax = Annotated[int, Query(ge=1, le=MAX_BATCH, description=f"Largest batch size swept, 1 to {MAX_BATCH}.")]
# A schedule's batches, as engine-config, step-fit and rules take them.
DecidedBatchMax = Annotated[int, Query(ge=1, le=MAX_BATCH, description=f"Largest batch decided, 1 to {MAX_BATCH}.")]
OperatingBatch = Annotated[
    int,
    Query(
        ge=1,
        le=MAX_BATCH,
        description=f"Operating batch for engines that take one k (SGLang, llama.cpp), 1 to {MAX_BATCH}.",
    ),
]


# Rules between the setup's parameters, listed in the description of every operation that takes a setup.
RULES = "\n\nRules between parameters (a 422 names the parameter):\n\n"


def _named(field: str) -> str:
    return ", ".join(f"`{prefix}_{field}`" for prefix in ("model", "draft"))


SETUP_RULES = (
    f"- {_named('active_params_b')}, {_named('total_params_b')}: active_params_b is at most total_params_b, and "
    "at least total_params_b x experts_per_token / experts (each token uses its share of the routed experts);\n"
    f"- {_named('experts_per_token')}, {_named('experts')}: experts_per_token is at most experts;\n"
    "- `model`, `draft`: the preset with its edited fields must describe a valid model (the same rules when "
    "the edit is blamed on the preset). A 422 names a field of the rule that the request changed."
)
