"""Exported configs use each engine's own keys and types, and agree with memory and with each other.

The tables below were written from reading each engine's config definitions (docs/engines.md cites
the files); they are the test's independent account of what each engine accepts.
"""

from __future__ import annotations

import ast
import itertools
import json
from typing import Any

import pytest
from fastapi.testclient import TestClient

CONFIG = "/api/v1/engine-config"

# vllm-project/vllm, vllm/config/speculative.py, class SpeculativeConfig
VLLM_KEYS: dict[str, Any] = {
    "num_speculative_tokens": int,  # int = Field(default=None, gt=0)
    "num_speculative_tokens_per_batch_size": list,  # list[tuple[int, int, int]] | None
    "speculative_token_tree": str,  # str | None
    "method": str,
    "model": str,
}
# NVIDIA/TensorRT-LLM, tensorrt_llm/llmapi/llm_args.py: DecodingBaseConfig and EagleDecodingConfig
TRTLLM_KEYS: dict[str, Any] = {
    "decoding_type": str,  # Literal["Draft_Target"] / ["Eagle"] / ["Eagle3"] / ["NGram"] / ["MTP"]
    "max_draft_len": int,  # Optional[int]
    "max_total_draft_tokens": int,  # Optional[int]
    "max_concurrency": int,  # Optional[int]
    "draft_len_schedule": dict,  # Optional[dict[int, int]]
    "eagle_choices": list,  # Optional[List[List[int]]]
    "speculative_model": str,  # Optional[Union[str, Path]]
}
TRTLLM_DECODING_TYPES = {"Draft_Target", "Eagle", "Eagle3", "NGram", "MTP"}
# sgl-project/sglang, python/sglang/srt/server_args.py (ServerArgs fields and their flags)
SGLANG_KEYS: dict[str, Any] = {
    "speculative_algorithm": str,
    "speculative_num_steps": int,
    "speculative_eagle_topk": int,
    "speculative_num_draft_tokens": int,
    "speculative_draft_model_path": str,
}
# ggml-org/llama.cpp, common/arg.cpp
LLAMACPP_FLAGS: dict[str, Any] = {"--draft-max": int, "--draft-min": int, "--draft-p-min": float}


def _get(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get(CONFIG, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _check_types(config: dict[str, Any], table: dict[str, Any]) -> None:
    assert set(config) <= set(table), set(config) - set(table)
    for key, value in config.items():
        expected = table[key]
        assert isinstance(value, expected) and not isinstance(value, bool), (key, value)


@pytest.mark.parametrize("model", ["dense-8b", "dense-70b", "mixtral-8x7b"])
def test_vllm_keys_types_and_a_schedule_that_covers_every_batch_that_fits(client: TestClient, model: str) -> None:
    draft = "dense-8b" if model == "mixtral-8x7b" else "dense-1b"
    body = _get(client, engine="vllm", p=0.8, model=model, draft=draft, draft_path="my/draft", method="draft_model")
    config = body["config"]
    _check_types(config, VLLM_KEYS)
    ranges = config["num_speculative_tokens_per_batch_size"]
    assert all(isinstance(item, list) and len(item) == 3 and all(isinstance(v, int) for v in item) for item in ranges)
    assert ranges[0][0] == 1 and ranges[-1][1] == body["max_batch_that_fits"] == body["batch_limit"]
    assert all(a[1] + 1 == b[0] for a, b in itertools.pairwise(ranges))  # contiguous, inclusive
    assert config["num_speculative_tokens"] == max(k for _s, _e, k in ranges) > 0
    assert "--max-num-seqs" in body["flags"] and body["flags"][body["flags"].index("--max-num-seqs") + 1] == str(
        body["max_batch_that_fits"]
    )
    assert json.loads(body["flags"][1]) == config


def _batches_named(config: dict[str, Any]) -> list[int]:
    """Every batch size a vLLM or TensorRT-LLM config names."""
    if "num_speculative_tokens_per_batch_size" in config:
        return [batch for start, end, _k in config["num_speculative_tokens_per_batch_size"] for batch in (start, end)]
    inner = config["speculative_config"]
    return [int(batch) for batch in inner["draft_len_schedule"]] + [inner["max_concurrency"]]


def test_70b_config_never_names_a_batch_past_the_44_that_fit(client: TestClient) -> None:
    for engine in ("vllm", "trtllm"):
        body = _get(client, engine=engine, p=0.8, model="dense-70b")
        assert body["max_batch_that_fits"] == 44
        assert max(_batches_named(body["config"])) == 44


def test_trtllm_schedule_starts_at_one_with_max_draft_len_and_agrees_with_max_concurrency(client: TestClient) -> None:
    body = _get(client, engine="trtllm", p=0.7, model="dense-8b", draft="dense-3b", draft_path="draft/dir")
    config = body["config"]["speculative_config"]
    _check_types(config, TRTLLM_KEYS)
    assert config["decoding_type"] in TRTLLM_DECODING_TYPES
    schedule = {int(batch): k for batch, k in config["draft_len_schedule"].items()}
    assert all(isinstance(k, int) for k in schedule.values())
    assert schedule[1] == config["max_draft_len"] == max(schedule.values())
    batches = sorted(schedule)
    assert list(schedule) == batches
    off = next((batch for batch in batches if schedule[batch] == 0), None)
    if off is not None:
        assert config["max_concurrency"] == off - 1
        assert off <= body["max_batch_that_fits"]
    else:
        assert config["max_concurrency"] == body["max_batch_that_fits"]
    assert "max_concurrency:" in body["text"] and "draft_len_schedule:" in body["text"]


def test_trtllm_cannot_start_speculation_after_batch_one_so_it_says_leave_it_off(client: TestClient) -> None:
    body = _get(client, engine="trtllm", p=0.8, model="mixtral-8x7b", draft="dense-8b")
    assert body["speculate"] is False and body["config"] is None
    assert "loses already at batch 1" in body["headline"]
    assert any("draft_len_schedule must start at batch 1" in note for note in body["notes"])


def test_sglang_flags_steps_topk_and_draft_tokens_are_consistent(client: TestClient) -> None:
    chain = _get(client, engine="sglang", p=0.8, batch=16)
    _check_types(chain["config"], SGLANG_KEYS)
    config = chain["config"]
    assert config["speculative_eagle_topk"] == 1
    assert config["speculative_num_draft_tokens"] == config["speculative_num_steps"] + 1
    k_at_16 = next(s["k"] for s in chain["schedule"]["steps"] if s["batch_from"] <= 16 <= s["batch_to"])
    assert config["speculative_num_steps"] == k_at_16
    flags = chain["flags"]
    assert flags[flags.index("--speculative-num-steps") + 1] == str(config["speculative_num_steps"])
    tree = _get(client, engine="sglang", p=0.8, tree_budget=12, tree_acceptance="0.6,0.2,0.1")["config"]
    steps, topk, tokens = (
        tree["speculative_num_steps"],
        tree["speculative_eagle_topk"],
        tree["speculative_num_draft_tokens"],
    )
    assert tokens == 13 and tokens <= steps * topk + 1 and topk > 1


def test_llamacpp_flags(client: TestClient) -> None:
    body = _get(client, engine="llamacpp", p=0.8)
    _check_types(body["config"], LLAMACPP_FLAGS)
    flags = body["flags"]
    assert flags[0::2] == list(LLAMACPP_FLAGS)
    assert int(flags[1]) == body["schedule"]["steps"][0]["k"] and float(flags[5]) == 0.75


def test_trees_as_vllm_paths_and_trtllm_eagle_choices(client: TestClient) -> None:
    params = {"p": 0.8, "tree_budget": 10, "tree_acceptance": "0.6,0.2,0.1,0.05"}
    vllm = _get(client, engine="vllm", **params)
    paths = ast.literal_eval(vllm["config"]["speculative_token_tree"])
    assert isinstance(paths, list) and all(isinstance(path, tuple) for path in paths)
    assert len(paths) == 10 == vllm["config"]["num_speculative_tokens"]
    assert all(path[:-1] in paths for path in paths if len(path) > 1)  # every parent is in the tree
    trt = _get(client, engine="trtllm", trtllm_decoding_type="Eagle3", **params)["config"]["speculative_config"]
    _check_types(trt, TRTLLM_KEYS)
    assert trt["decoding_type"] == "Eagle3"
    assert [tuple(choice) for choice in trt["eagle_choices"]] == paths
    assert trt["max_total_draft_tokens"] == 10 and trt["max_draft_len"] == max(len(path) for path in paths)


def test_calibration_numbers_instead_of_p(client: TestClient) -> None:
    from app.model import closed_form

    rate = closed_form.draft_acceptance_rate(0.8, 5)
    by_rate = _get(client, engine="vllm", rate=rate, k=5)
    assert by_rate["p"] == pytest.approx(0.8, abs=1e-9)
    by_length = _get(client, engine="vllm", mean_length=closed_form.expected_tokens(0.8, 5), k=5)
    assert by_length["p"] == pytest.approx(0.8, abs=1e-9)


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"engine": "tgi", "p": 0.8}, "engine"),
        ({"engine": "vllm", "p": 0.8, "rate": 0.5}, "p"),
        ({"engine": "vllm", "rate": 0.5}, "k"),
        ({"engine": "vllm", "mean_length": 7.0, "k": 3}, "mean_length"),
        ({"engine": "vllm", "p": 0.8, "tree_budget": 4}, "tree_acceptance"),
        ({"engine": "vllm", "p": 0.8, "tree_budget": 4, "tree_acceptance": "0.2,0.6"}, "tree_acceptance"),
        ({"engine": "sglang", "p": 0.8, "sglang_algorithm": "MAGIC"}, "sglang_algorithm"),
        ({"engine": "trtllm", "p": 0.8, "trtllm_decoding_type": "Medusa2"}, "trtllm_decoding_type"),
        ({"engine": "vllm", "p": 1.5}, "p"),
    ],
)
def test_bad_parameters_get_a_422_naming_them(client: TestClient, params: dict[str, Any], name: str) -> None:
    response = client.get(CONFIG, params=params)
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["msg"].startswith(name)


def test_devices_can_be_chosen_to_hold_the_batch_asked_for(client: TestClient) -> None:
    body = _get(client, engine="vllm", p=0.8, model="dense-70b", fit_batch=256)
    setup = body["schedule"]["setup"]
    assert setup["devices_auto"] is True and setup["devices"] == 4
    assert body["max_batch_that_fits"] >= 256 and "256 sequences" in body["headline"]
    fixed = _get(client, engine="vllm", p=0.8, model="dense-70b", devices=2, fit_batch=256)
    assert fixed["schedule"]["setup"]["devices"] == 2 and fixed["max_batch_that_fits"] == 44
