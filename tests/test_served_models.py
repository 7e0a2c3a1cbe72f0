"""Which target preset a served model's name is."""

from __future__ import annotations

import pytest

from app.model.cost import presets
from app.model.live import served_models


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("meta-llama/Llama-3.1-70B-Instruct", "dense-70b"),
        ("meta-llama/Llama-3.3-70B-Instruct", "dense-70b"),
        ("/models/Meta-Llama-3-8B-Instruct-AWQ", "dense-8b"),
        ("meta-llama/Llama-3.1-8B", "dense-8b"),
        ("meta-llama/Llama-3.2-1B-Instruct", "dense-1b"),
        ("meta-llama/Llama-3.2-3B", "dense-3b"),
        ("meta-llama/Llama-3.1-405B-Instruct-FP8", "dense-405b"),
        ("mistralai/Mixtral-8x7B-Instruct-v0.1", "mixtral-8x7b"),
        ("deepseek-ai/DeepSeek-R1", "deepseek-v3"),
        ("deepseek-ai/DeepSeek-V3-0324", "deepseek-v3"),
    ],
)
def test_a_served_name_finds_its_preset(name: str, key: str) -> None:
    assert served_models.preset_for(name) == key


@pytest.mark.parametrize(
    "name", ["", "target-model", "Qwen/Qwen3-32B", "meta-llama/Llama-3.2-11B-Vision", "mistralai/Mixtral-8x22B"]
)
def test_a_name_of_no_preset_finds_none(name: str) -> None:
    assert served_models.preset_for(name) is None


def test_every_family_names_a_target_preset() -> None:
    assert set(served_models.FAMILY_NAMES) <= set(presets.MODELS)
