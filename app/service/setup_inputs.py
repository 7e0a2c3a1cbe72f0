"""The inputs of the roofline setup (presets, formats, serving conditions, cost terms and the presets' edited
fields), declared once for every API operation that prices a step, the /batch and /decide pages and the
command line.  ``request`` turns their values into a ``SetupRequest``; ``built`` builds it, and what the model
refuses becomes an InputError naming the input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.model import limits
from app.model.presets import (
    ACCELERATOR_FIELDS,
    ACCELERATORS,
    DRAFT_CHOICES,
    DRAFT_HEADS,
    MODEL_FIELDS,
    MODELS,
    WEIGHT_FORMATS,
)
from app.service.inputs import Input, InputError, checked
from app.service.regimes import (
    DEFAULTS,
    KV_CACHE_FORMATS,
    BuiltSetup,
    SetupError,
    SetupRequest,
    build_setup,
)


def _model_title(key: str) -> str:
    return MODELS[key].name if key in MODELS else f"{DRAFT_HEADS[key]} on the target"


def _format_title(formats: Mapping[str, float]) -> Any:
    return lambda key: f"{key} ({formats[key]:g} B)"


def _keys(choices: Mapping[str, object] | tuple[str, ...]) -> Any:
    return lambda: tuple(choices)


HW = Input(
    "hw",
    "Accelerator",
    str,
    limits.DEFAULT_HW,
    "Accelerator preset",
    choices=_keys(ACCELERATORS),
    titles=lambda key: ACCELERATORS[key].name,
)
DEVICES = Input(
    "devices",
    "Devices",
    int,
    0,
    "Devices in tensor parallel, 0 for the fewest that hold both models",
    0,
    limits.MAX_DEVICES,
)
MODEL = Input(
    "model",
    "Target model",
    str,
    limits.DEFAULT_MODEL,
    "Target model preset",
    choices=_keys(MODELS),
    titles=_model_title,
)
WEIGHTS = Input(
    "weights",
    "Weights (bytes per parameter)",
    str,
    limits.DEFAULT_WEIGHTS,
    "Weight format of the target (and of the draft by default)",
    choices=_keys(WEIGHT_FORMATS),
    titles=_format_title(WEIGHT_FORMATS),
)
DRAFT = Input(
    "draft",
    "Draft model",
    str,
    limits.DEFAULT_DRAFT,
    "Draft model preset, or a head on the target priced from its shape (eagle, eagle3, mtp)",
    choices=_keys(DRAFT_CHOICES),
    titles=_model_title,
)
DRAFT_WEIGHTS = Input(
    "draft_weights",
    "Draft weights (bytes per parameter)",
    str,
    None,
    "Weight format of the draft; defaults to weights",
    choices=_keys(WEIGHT_FORMATS),
    titles=_format_title(WEIGHT_FORMATS),
)
CONTEXT = Input(
    "context",
    "Context tokens per sequence",
    int,
    DEFAULTS.context_tokens,
    "Tokens of context per sequence",
    0,
    limits.MAX_CONTEXT,
)
KV_CACHE = Input(
    "kv_cache",
    "KV cache format",
    str,
    limits.DEFAULT_KV_CACHE,
    "KV-cache format",
    choices=_keys(KV_CACHE_FORMATS),
    titles=_format_title(KV_CACHE_FORMATS),
)
BANDWIDTH_EFFICIENCY = Input(
    "bandwidth_efficiency",
    "Bandwidth efficiency",
    float,
    DEFAULTS.bandwidth_efficiency,
    "Achieved share of peak bandwidth",
    limits.MIN_EFFICIENCY,
    1.0,
)
COMPUTE_EFFICIENCY = Input(
    "compute_efficiency",
    "Compute efficiency",
    float,
    DEFAULTS.compute_efficiency,
    "Achieved share of peak FLOPS",
    limits.MIN_EFFICIENCY,
    1.0,
)
OVERHEAD_US = Input(
    "overhead_us",
    "Overhead per pass (µs)",
    float,
    DEFAULTS.step_overhead_us,
    "Fixed time per forward pass, microseconds",
    0.0,
    limits.MAX_OVERHEAD_US,
)
COST_TERMS = tuple(
    Input(term.name, term.label, float, term.default, term.description, 0.0, term.high) for term in limits.COST_TERMS
)
# In the order the pages show them.
SETUP: tuple[Input, ...] = (
    HW,
    DEVICES,
    MODEL,
    WEIGHTS,
    DRAFT,
    CONTEXT,
    KV_CACHE,
    BANDWIDTH_EFFICIENCY,
    COMPUTE_EFFICIENCY,
    OVERHEAD_US,
    *COST_TERMS,
)

# The presets' editable fields: on screen, and whose preset each prefix edits.
FIELD_LABELS: dict[str, str] = {
    "bandwidth_tb_s": "Bandwidth (TB/s)",
    "bf16_tflops": "Dense BF16 TFLOPS",
    "memory_gb": "Memory (GB)",
    "total_params_b": "Total parameters (B)",
    "active_params_b": "Active parameters (B)",
    "layers": "Layers",
    "query_heads": "Query heads",
    "kv_heads": "KV heads",
    "head_dim": "Head dim",
    "kv_tensors": "KV tensors (2 = K and V, 1 = latent)",
    "experts": "Experts (1 = dense)",
    "experts_per_token": "Experts per token",
}
PRESETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "hw": ("accelerator", ACCELERATOR_FIELDS),
    "model": ("target model", MODEL_FIELDS),
    "draft": ("draft model", MODEL_FIELDS),
}


def _edited_field(prefix: str, field: str) -> Input:
    kind, low, inclusive, high, text = limits.PRESET_FIELD_BOUNDS[field]
    owner = PRESETS[prefix][0]
    return Input(
        f"{prefix}_{field}",
        f"{FIELD_LABELS[field]} ({owner})",
        kind,
        None,
        f"Override the {owner} preset's {text}",
        low,
        high,
        above=not inclusive,
    )


OVERRIDES: tuple[Input, ...] = tuple(
    _edited_field(prefix, field) for prefix, (_, fields) in PRESETS.items() for field in fields
)
# What the command line names as options (it edits the presets' fields with --set), and what every API
# operation that prices a step takes.
SERVING: tuple[Input, ...] = (*SETUP, DRAFT_WEIGHTS)
ROOFLINE: tuple[Input, ...] = (*SERVING, *OVERRIDES)


def request(given: Mapping[str, Any], overrides: Mapping[str, float | int | None] | None = None) -> SetupRequest:
    """The setup's request from the values of ROOFLINE (each at its default when not given); ``overrides`` adds
    preset fields named as in the API (the command line's --set), which the model checks."""
    values = checked(ROOFLINE, given)
    edited = {item.name: values[item.name] for item in OVERRIDES if values[item.name] is not None}
    return SetupRequest(
        hw=values["hw"],
        model=values["model"],
        draft=values["draft"],
        weights=values["weights"],
        draft_weights=values["draft_weights"],
        kv_cache=values["kv_cache"],
        devices=values["devices"],
        context=values["context"],
        bandwidth_efficiency=values["bandwidth_efficiency"],
        compute_efficiency=values["compute_efficiency"],
        overhead_us=values["overhead_us"],
        overrides={**edited, **(overrides or {})},
        cost_terms={item.name: values[item.name] for item in COST_TERMS if values[item.name] != item.default},
    )


def built(given: Mapping[str, Any]) -> BuiltSetup:
    """The roofline the values describe; what the model refuses is an InputError naming the input."""
    try:
        return build_setup(request(given))
    except SetupError as error:
        raise InputError(error.name, error.message) from None
