import dataclasses
import math
import pickle

import numpy as np
import pytest

from app.model import limits
from app.model.cost.presets import (
    ACCELERATOR_FIELDS,
    ACCELERATORS,
    MODEL_FIELDS,
    MODELS,
    WEIGHT_FORMATS,
    Accelerator,
    ModelSpec,
    with_overrides,
)
from app.model.cost.regimes import RooflineSetup, devices_to_fit, draft_step, memory_needed_gb, target_step

REQUIRED_ACCELERATORS = {"a100-80gb-sxm", "h100-sxm", "h200", "b200", "mi300x"}
REQUIRED_MODELS = {"dense-8b", "dense-70b", "dense-405b", "mixtral-8x7b", "deepseek-v3"}


def test_required_presets_exist() -> None:
    assert set(ACCELERATORS) >= REQUIRED_ACCELERATORS
    assert set(MODELS) >= REQUIRED_MODELS
    assert WEIGHT_FORMATS == {"bf16": 2.0, "fp8": 1.0, "int4": 0.5}


@pytest.mark.parametrize(
    ("key", "bandwidth", "dense_tflops"),
    [
        ("a100-80gb-sxm", 2.039, 312.0),
        ("h100-sxm", 3.35, 989.4),
        ("h200", 4.8, 989.4),
        ("b200", 8.0, 2250.0),
        ("mi300x", 5.3, 1307.4),
    ],
)
def test_accelerators_use_dense_not_sparsity_figures(key: str, bandwidth: float, dense_tflops: float) -> None:
    accelerator = ACCELERATORS[key]
    assert accelerator.bandwidth_tb_s == bandwidth
    assert accelerator.bf16_tflops == dense_tflops


@pytest.mark.parametrize("accelerator_key", sorted(ACCELERATORS))
@pytest.mark.parametrize("model_key", sorted(MODELS))
@pytest.mark.parametrize("weight_format", sorted(WEIGHT_FORMATS))
def test_every_preset_gives_finite_positive_step_time(accelerator_key: str, model_key: str, weight_format: str) -> None:
    bytes_per_param = WEIGHT_FORMATS[weight_format]
    setup = RooflineSetup(
        ACCELERATORS[accelerator_key],
        MODELS[model_key],
        MODELS["dense-1b"],
        target_bytes_per_param=bytes_per_param,
        draft_bytes_per_param=bytes_per_param,
    )
    batches = np.array([1, 8, 64, 1024])
    for tokens in (1, 5, 17):
        times = target_step(setup, batches, tokens).total_s
        assert np.all(np.isfinite(times)) and np.all(times > 0)
        assert np.all(np.diff(times) > 0)  # more sequences never take less time
    draft_times = draft_step(setup, batches).total_s
    assert np.all(np.isfinite(draft_times)) and np.all(draft_times > 0)
    # the fewest devices that hold it, or None exactly where even MAX_DEVICES of them cannot (a 1T-parameter target
    # in bf16 on 12 GB cards)
    fits = devices_to_fit(setup)
    too_big = float(memory_needed_gb(setup, 1)) > setup.accelerator.memory_gb * limits.MAX_DEVICES
    assert (fits is None) == too_big
    assert fits is None or float(memory_needed_gb(setup, 1)) <= setup.accelerator.memory_gb * fits


def test_dense_models_have_no_routed_parameters() -> None:
    for key in ("dense-1b", "dense-3b", "dense-8b", "dense-70b", "dense-405b"):
        model = MODELS[key]
        assert not model.is_moe
        assert model.routed_params_b == 0.0
        assert model.shared_params_b == model.total_params_b == model.active_params_b


def test_moe_split_matches_published_architecture() -> None:
    mixtral = MODELS["mixtral-8x7b"]
    # 32 layers x 8 experts x 3 matrices of 4096 x 14336 = 45.1B routed parameters.
    assert mixtral.routed_params_b == pytest.approx(32 * 8 * 3 * 4096 * 14336 / 1e9, rel=0.01)
    assert mixtral.shared_params_b + mixtral.routed_params_b * 2 / 8 == pytest.approx(12.9)
    deepseek = MODELS["deepseek-v3"]
    # 58 MoE layers x 256 experts x 3 matrices of 7168 x 2048 = 653.9B routed parameters.
    assert deepseek.routed_params_b == pytest.approx(58 * 256 * 3 * 7168 * 2048 / 1e9, rel=0.01)
    assert deepseek.expert_fraction == 8 / 256


def test_kv_cache_values_per_token() -> None:
    # Llama 3 8B: 32 layers x 8 KV heads x 128 x (K and V) = 65,536 values, 128 KiB in bf16.
    assert MODELS["dense-8b"].kv_values_per_token * 2 == 128 * 1024
    assert MODELS["dense-70b"].kv_values_per_token * 2 == 320 * 1024
    # DeepSeek-V3 MLA: 61 layers x 576 latent values.
    assert MODELS["deepseek-v3"].kv_values_per_token == 61 * 576


def test_every_field_can_be_overridden() -> None:
    accelerator = ACCELERATORS["mi300x"]  # a mesh: every field set
    for field in ACCELERATOR_FIELDS:
        changed = with_overrides(accelerator, {field: getattr(accelerator, field) * 2})
        assert getattr(changed, field) == getattr(accelerator, field) * 2
        assert dataclasses.asdict(changed)[field] == getattr(changed, field)
    model = MODELS["mixtral-8x7b"]
    edits = {
        "total_params_b": 50.0,
        "active_params_b": 14.0,
        "layers": 40,
        "query_heads": 48,
        "kv_heads": 4,
        "head_dim": 64,
        "kv_tensors": 1,
        "experts": 16,
        "experts_per_token": 1,
        "hidden": 2048,
    }
    assert set(edits) == set(MODEL_FIELDS)
    for field, value in edits.items():
        assert getattr(with_overrides(model, {field: value}), field) == value
    assert with_overrides(model, {"layers": None}) == model


def test_unknown_override_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown fields: wings"):
        with_overrides(ACCELERATORS["b200"], {"wings": 2})


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"total_params_b": 0.0}, "total_params_b must be positive"),
        ({"active_params_b": 60.0}, r"active_params_b \(60\) must not exceed total_params_b \(46.7\)"),
        ({"experts_per_token": 9}, r"experts_per_token \(9\) must not exceed experts \(8\)"),
        ({"active_params_b": 5.0}, r"active_params_b \(5\) must be at least .* \(11.675\)"),
        ({"kv_tensors": 3}, "kv_tensors must be 1"),
        ({"layers": 0}, "layers must be at least 1"),
    ],
)
def test_inconsistent_models_are_rejected(changes: dict[str, float], message: str) -> None:
    with pytest.raises(limits.FieldError, match=message) as refused:
        dataclasses.replace(MODELS["mixtral-8x7b"], **changes)
    assert refused.value.field == message.split(" ", 1)[0]  # the field it is about, named by the error itself
    # the fields the rule ties together are named by the error too, and a caller words it in its own labels
    assert refused.value.fields[0] == refused.value.field
    assert set(refused.value.fields) <= {field.name for field in dataclasses.fields(MODELS["mixtral-8x7b"])}
    labels = {name: name.upper() for name in refused.value.fields}
    worded = refused.value.worded(labels)
    assert all(name.upper() in worded for name in refused.value.fields)
    assert str(refused.value) == refused.value.worded({})


def test_a_rule_survives_pickling_and_words_any_value_written_into_it() -> None:
    """A rule raised in a heavy-work process comes back to the worker whole; a value in it is never a placeholder."""
    rule = limits.FieldError("experts_per_token", "{0} ({9}) must not exceed {1} ({x})", "experts")
    back = pickle.loads(pickle.dumps(rule))
    assert (back.field, back.fields, back.rule, str(back)) == (rule.field, rule.fields, rule.rule, str(rule))
    assert rule.worded({"experts": "Experts"}) == "experts_per_token ({9}) must not exceed Experts ({x})"


def test_a_rule_between_fields_names_each_field_it_ties() -> None:
    with pytest.raises(limits.FieldError) as refused:
        dataclasses.replace(MODELS["mixtral-8x7b"], active_params_b=5.0)
    assert refused.value.fields == ("active_params_b", "total_params_b", "experts_per_token", "experts")
    with pytest.raises(limits.FieldError) as refused:
        dataclasses.replace(MODELS["mixtral-8x7b"], active_params_b=60.0)
    assert refused.value.fields == ("active_params_b", "total_params_b")


def test_nonpositive_accelerator_is_rejected() -> None:
    with pytest.raises(ValueError, match="bandwidth_tb_s must be positive"):
        Accelerator("x", 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="bf16_tflops must be positive"):
        Accelerator("x", 1.0, math.nan, 1.0)
    with pytest.raises(ValueError, match="fp8_tflops must be positive"):
        Accelerator("x", 1.0, 1.0, 1.0, fp8_tflops=0.0)


def test_model_spec_defaults_are_dense() -> None:
    model = ModelSpec("tiny", 1.0, 1.0, 2, 2, 1, 8)
    assert model.experts == model.experts_per_token == 1
    assert model.kv_tensors == 2


def test_a_device_is_its_preset_over_any_link_but_not_with_figures_of_its_own() -> None:
    from app.model.cost.presets import device_preset

    for key, preset in ACCELERATORS.items():
        assert device_preset(preset) == key
        assert device_preset(with_overrides(preset, {"link_gb_s": 12.5, "name": "renamed"})) == key
        assert device_preset(with_overrides(preset, {"links": 3})) == key
        assert device_preset(with_overrides(preset, {"bandwidth_tb_s": preset.bandwidth_tb_s * 1.5})) is None
