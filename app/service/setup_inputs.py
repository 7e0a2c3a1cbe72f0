"""The inputs of the roofline setup (presets, formats, serving conditions, cost terms and the presets' edited
fields), declared once for every API operation that prices a step, the /batch and /decide pages and the
command line.  ``request`` turns their values into a ``SetupRequest``; ``built`` builds it, and what the model
refuses becomes an InputError naming the input.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.model import limits
from app.model.cost import presets
from app.model.engines.step_times import MAX_ROWS
from app.model.limits import InputError
from app.service.inputs import Input, checked, same_named
from app.service.regimes import (
    DEFAULTS,
    DRAFTINGS,
    KV_CACHE_FORMATS,
    BuiltSetup,
    Measured,
    SetupError,
    SetupRequest,
    build_setup,
)


def _model_title(key: str) -> str:
    return presets.MODELS[key].name if key in presets.MODELS else f"{presets.DRAFT_HEADS[key].label} on the target"


def _model(name: str, label: str, default: str, help: str, keys: Mapping[str, object] | tuple[str, ...]) -> Input:
    """A model preset to choose (or a head on the target), shown by its name."""
    return Input(name, label, str, default, help, choices=_keys(keys), titles=_model_title)


def _format(name: str, label: str, default: str | None, help: str, formats: Mapping[str, float]) -> Input:
    """A number format to choose: each shown with its bytes per value."""
    titles = {key: f"{key} ({size:g} B)" for key, size in formats.items()}
    return Input(name, label, str, default, help, choices=_keys(formats), titles=titles.__getitem__)


def _keys(choices: Mapping[str, object] | tuple[str, ...]) -> Any:
    return lambda: tuple(choices)


HW = Input(
    "hw",
    "Accelerator",
    str,
    limits.DEFAULT_HW,
    "Accelerator preset",
    choices=_keys(presets.ACCELERATORS),
    titles=lambda key: presets.ACCELERATORS[key].name,
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
MODEL = _model("model", "Target model", limits.DEFAULT_MODEL, "Target model preset", presets.MODELS)
WEIGHTS = _format(
    "weights",
    "Weights (bytes per parameter)",
    limits.DEFAULT_WEIGHTS,
    "Weight format of the target (and of the draft by default)",
    presets.WEIGHT_FORMATS,
)
DRAFT = _model(
    "draft",
    "Draft model",
    limits.DEFAULT_DRAFT,
    "Draft model preset, or a head on the target priced from its shape (eagle, eagle3, mtp)",
    presets.DRAFT_CHOICES,
)
DRAFTING = Input(
    "drafting",
    "Drafting",
    str,
    DRAFTINGS[0],
    "How the draft proposes its k tokens: chain, one per draft pass (k passes a cycle); parallel, all k in one pass "
    "over k positions (P-EAGLE, PARD, block drafters such as DFlash)",
    choices=_keys(DRAFTINGS),
    titles={"chain": "chain (k passes of one token)", "parallel": "parallel (one pass of k)"}.__getitem__,
)
DRAFT_WEIGHTS = _format(
    "draft_weights",
    "Draft weights (bytes per parameter)",
    None,
    "Weight format of the draft; defaults to weights",
    presets.WEIGHT_FORMATS,
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
KV_CACHE = _format("kv_cache", "KV cache format", limits.DEFAULT_KV_CACHE, "KV-cache format", KV_CACHE_FORMATS)


def _efficiency(name: str, default: float, peak: str) -> Input:
    label = name.replace("_", " ").capitalize()
    return Input(name, label, float, default, f"Achieved share of peak {peak}", limits.MIN_EFFICIENCY, 1.0)


BANDWIDTH_EFFICIENCY = _efficiency("bandwidth_efficiency", DEFAULTS.bandwidth_efficiency, "bandwidth")
COMPUTE_EFFICIENCY = _efficiency("compute_efficiency", DEFAULTS.compute_efficiency, "FLOPS")
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
    DRAFTING,
    CONTEXT,
    KV_CACHE,
    BANDWIDTH_EFFICIENCY,
    COMPUTE_EFFICIENCY,
    OVERHEAD_US,
    *COST_TERMS,
)

# Where the efficiencies and overheads come from when a step fit gave them (POST /api/v1/step-fit's `query`,
# measure --batch's sweep): the answers then say "measured" with the fit's own error instead of the defaults'.
FIT_STEPS = Input(
    "fit_steps",
    "Measured steps fitted",
    int,
    None,
    "With the terms a step fit gave: the measured steps it fitted them to (with fit_error; the step fit's answer "
    "writes both)",
    1,
    MAX_ROWS,
)
FIT_ERROR = Input(
    "fit_error",
    "Out-of-sample error of the fit (%)",
    float,
    None,
    "With fit_steps: the step fit's out-of-sample error (each batch predicted from the others), in percent",
    0.0,
    1000.0,
)
MEASURED: tuple[Input, ...] = (FIT_STEPS, FIT_ERROR)


def measured(values: Mapping[str, Any]) -> Measured | None:
    """The step fit the values name (both of MEASURED, or neither); one without the other names the missing one."""
    steps, error = values.get(FIT_STEPS.name), values.get(FIT_ERROR.name)
    if steps is None and error is None:
        return None
    if steps is None:
        raise InputError(FIT_STEPS.name, f"{FIT_STEPS.label} is needed with {FIT_ERROR.label}")
    if error is None:
        raise InputError(FIT_ERROR.name, f"{FIT_ERROR.label} is needed with {FIT_STEPS.label}")
    return Measured(int(steps), float(error) / 100.0)


# The presets' editable fields: on screen, and whose preset each prefix edits.
FIELD_LABELS: dict[str, str] = {
    "bandwidth_tb_s": "Bandwidth (TB/s)",
    "bf16_tflops": "Dense BF16 TFLOPS",
    "memory_gb": "Memory (GB)",
    "link_gb_s": "Link (GB/s, both ways)",
    "links": "Links in a mesh",
    "fp8_tflops": "Dense FP8 TFLOPS",
    "total_params_b": "Total parameters (B)",
    "active_params_b": "Active parameters (B)",
    "layers": "Layers",
    "query_heads": "Query heads",
    "kv_heads": "KV heads",
    "head_dim": "Head dim",
    "kv_tensors": "KV tensors (2 = K and V, 1 = latent)",
    "experts": "Experts (1 = dense)",
    "experts_per_token": "Experts per token",
    "hidden": "Hidden width",
}
PRESETS: dict[str, tuple[str, tuple[str, ...]]] = {
    "hw": ("accelerator", presets.ACCELERATOR_FIELDS),
    "model": ("target model", presets.MODEL_FIELDS),
    "draft": ("draft model", presets.MODEL_FIELDS),
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
ROOFLINE: tuple[Input, ...] = (*SERVING, *MEASURED, *OVERRIDES)


def request(given: Mapping[str, Any]) -> SetupRequest:
    """The setup's request from the values of ROOFLINE (each at its default when not given)."""
    values = checked(ROOFLINE, given)
    edited = {item.name: values[item.name] for item in OVERRIDES if values[item.name] is not None}
    terms = {item.name: values[item.name] for item in COST_TERMS if values[item.name] != item.default}
    return SetupRequest(
        **same_named(SetupRequest, values) | {"overrides": edited, "cost_terms": terms, "measured": measured(values)}
    )


def built(given: Mapping[str, Any]) -> BuiltSetup:
    """The roofline the values describe; what the model refuses is an InputError naming the input."""
    try:
        return build_setup(request(given))
    except SetupError as error:
        raise InputError(error.name, error.message) from None
