"""The engine-config endpoint: its contract, its parameters and what it says.

Whether each engine accepts the configs, and runs the schedule, is tested by reading them back the way
each engine reads them: tests/engines/ (one module per engine and the shared suite).
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

CONFIG = "/api/v1/engine-config"
CONTRACT_FIELDS = {
    "engine",
    "p",
    "k_max",
    "max_batch_that_fits",
    "batch_limit",
    "headline",
    "speculate",
    "config",
    "flags",
    "text",
    "tree",
    "schedule",
    "sources",
    "notes",
}


def _get(client: TestClient, **params: Any) -> dict[str, Any]:
    response = client.get(CONFIG, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _batches_named(config: dict[str, Any]) -> list[int]:
    """Every batch size a vLLM or TensorRT-LLM config names."""
    if "num_speculative_tokens_per_batch_size" in config:
        return [batch for start, end, _k in config["num_speculative_tokens_per_batch_size"] for batch in (start, end)]
    inner = config["speculative_config"]
    return [int(batch) for batch in inner["draft_len_schedule"]] + [config["max_batch_size"]]


def test_70b_config_never_names_a_batch_past_the_44_that_fit(client: TestClient) -> None:
    for engine in ("vllm", "trtllm"):
        body = _get(client, engine=engine, p=0.8, model="dense-70b", draft_path="org/draft")
        assert body["max_batch_that_fits"] == 44
        assert max(_batches_named(body["config"])) == 44


def test_trtllm_cannot_start_speculation_after_batch_one_so_it_says_leave_it_off(client: TestClient) -> None:
    body = _get(client, engine="trtllm", p=0.8, model="mixtral-8x7b", draft="dense-8b")
    assert body["speculate"] is False and body["config"] is None
    assert "loses already at batch 1" in body["headline"]
    assert any("cannot turn speculation on above a batch where it is off" in note for note in body["notes"])


def test_calibration_numbers_instead_of_p(client: TestClient) -> None:
    from app.model.arithmetic import closed_form

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
        ({"engine": "vllm", "p": 0.8, "engine_version": "0.1"}, "engine_version"),
        ({"engine": "vllm", "p": 0.8, "method": "tree-magic"}, "method"),
        ({"engine": "llamacpp", "p": 0.8, "method": "medusa"}, "method"),
        ({"engine": "vllm", "p": 0.8, "draft_path": "a b;c"}, "draft_path"),
        ({"engine": "vllm", "p": 0.8, "data_parallel": 0}, "data_parallel"),
        ({"engine": "vllm", "p": 0.8, "data_parallel": 65}, "data_parallel"),
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


def test_the_contract_fields_stay_and_the_version_and_its_sources_are_said(client: TestClient) -> None:
    for engine, newest in (("vllm", "2026-08"), ("sglang", "2026-08"), ("trtllm", "2026-09"), ("llamacpp", "b11434")):
        body = _get(client, engine=engine, p=0.8, draft_path="models/draft")
        assert set(body) >= CONTRACT_FIELDS
        assert body["engine_version"] == newest == body["engine_versions"][-1]
        assert body["sources"] and all("@" in source or "PR #" in source for source in body["sources"])


def test_an_unknown_version_lists_the_known_ones(client: TestClient) -> None:
    response = client.get(CONFIG, params={"engine": "trtllm", "p": 0.8, "engine_version": "9.9"})
    assert response.status_code == 422
    message = response.json()["detail"][0]["msg"]
    assert all(name in message for name in ("2025-10", "2026-03", "2026-09"))


def test_an_older_version_gets_its_own_key_meaning(client: TestClient) -> None:
    params = {"engine": "trtllm", "p": 0.8, "model": "dense-70b", "draft_path": "org/draft"}
    new = _get(client, **params)["config"]["speculative_config"]["draft_len_schedule"]
    old = _get(client, engine_version="2025-10", **params)["config"]["speculative_config"]["draft_len_schedule"]
    # one schedule, two key meanings: the old keys say from which batch each k runs (the first is batch 1), the new
    # ones up to which batch it runs, so each new key is the next old key less one
    old_keys, new_keys = [int(key) for key in old], [int(key) for key in new]
    assert old_keys[0] == 1 and list(old.values()) == list(new.values()) and len(old) > 1
    assert new_keys[:-1] == [key - 1 for key in old_keys[1:]] and new_keys[-1] > old_keys[-1]


def test_the_engine_k_at_each_batch_is_read_back_and_differences_named(client: TestClient) -> None:
    body = _get(client, engine="vllm", p=0.8, model="dense-70b", draft_path="org/draft")
    steps = body["schedule"]["steps"]
    schedule = [step["k"] for step in steps for _ in range(step["batch_from"], step["batch_to"] + 1)]
    assert body["engine_k_by_batch"] == schedule and body["differs_at"] == []
    llama = _get(client, engine="llamacpp", p=0.8, model="dense-70b", draft_path="d.gguf", batch=40)
    assert set(llama["engine_k_by_batch"]) == {schedule[39]}
    assert llama["differs_at"] == [batch for batch, k in enumerate(schedule, start=1) if k != schedule[39]]


def test_a_config_without_a_draft_model_says_what_to_fill_in(client: TestClient) -> None:
    body = _get(client, engine="vllm", p=0.8)
    assert body["placeholders"] and body["config"]["model"] in body["placeholders"]
    assert any("fill in model" in note for note in body["notes"])
    ngram = _get(client, engine="vllm", p=0.8, method="ngram")
    assert ngram["placeholders"] == [] and "model" not in ngram["config"]


def test_sglang_follows_the_draft_type_and_writes_its_adaptive_file(client: TestClient) -> None:
    standalone = _get(client, engine="sglang", p=0.8, draft_path="models/draft")
    assert standalone["config"]["speculative_algorithm"] == "STANDALONE"
    eagle = _get(client, engine="sglang", p=0.8, model="dense-70b", method="EAGLE3", draft_path="models/eagle3")
    assert eagle["config"]["speculative_algorithm"] == "EAGLE3"
    assert "adaptive.json" in eagle["files"] and "--speculative-adaptive-config" in eagle["flags"]
    assert eagle["differs_at"] == []
    legacy = _get(client, engine="sglang", p=0.8, sglang_algorithm="EAGLE", draft_path="models/eagle")
    assert legacy["config"]["speculative_algorithm"] == "EAGLE"


def test_a_setup_priced_with_a_head_gets_the_engines_own_drafter_for_it(client: TestClient) -> None:
    """draft=mtp prices an MTP head; without method= the config runs that head in each engine's own words (vLLM's
    method, SGLang's algorithm, TensorRT-LLM's decoding_type), not a separate draft model; llama.cpp's written
    config has no head and says so.  A method given still wins."""
    common = {"p": 0.8, "model": "qwen3.5-397b-a17b", "hw": "rtx-pro-6000-blackwell", "devices": 4}
    common |= {"weights": "int4", "draft": "mtp"}
    vllm = _get(client, engine="vllm", **common)
    assert vllm["config"]["method"] == "mtp" and "model" not in vllm["config"] and vllm["placeholders"] == []
    sglang = _get(client, engine="sglang", **common)
    assert sglang["config"]["speculative_algorithm"] == "NEXTN" and sglang["placeholders"] == []
    path = sglang["flags"][sglang["flags"].index("--speculative-draft-model-path") + 1]
    assert f"--model-path {path} " in sglang["text"]  # the target's own, as the launch line names it
    assert any("the target's own MTP layers" in note for note in sglang["notes"])
    trtllm = _get(client, engine="trtllm", **common)
    assert trtllm["config"]["speculative_config"]["decoding_type"] == "MTP"
    for body, word in ((vllm, "mtp"), (sglang, "NEXTN"), (trtllm, "MTP")):
        assert f"drafter {word}: " in " ".join(body["notes"])
    llama = _get(client, engine="llamacpp", **common)
    assert "--spec-type" in llama["flags"] and llama["flags"][llama["flags"].index("--spec-type") + 1] == "draft-simple"
    assert any("cannot run" in note and "MTP head" in note for note in llama["notes"])
    eagle3 = _get(client, engine="vllm", **{**common, "draft": "eagle3"})
    assert eagle3["config"]["method"] == "eagle3" and eagle3["config"]["model"] in eagle3["placeholders"]
    given = _get(client, engine="vllm", **common, method="ngram")
    assert given["config"]["method"] == "ngram"
    assert not any(note.startswith("drafter ") for note in given["notes"])
    plain = _get(client, engine="vllm", p=0.8)
    assert plain["config"]["method"] == "draft_model"
    pathed = _get(client, engine="trtllm", **common, draft_path="org/own-draft")
    assert pathed["config"]["speculative_config"]["decoding_type"] == "MTP"
    assert any("must be the target's own checkpoint" in note for note in pathed["notes"])
    head = _get(client, engine="vllm", **{**common, "draft": "eagle3"}, draft_path="org/eagle3-head")
    assert head["config"]["model"] == "org/eagle3-head" and not any("own checkpoint" in n for n in head["notes"])


def test_a_measured_profile_decides_and_the_iid_schedule_is_shown_beside_it(client: TestClient) -> None:
    params = {"engine": "vllm", "p": 0.8, "draft_path": "d", "k_max": 8}
    iid = _get(client, **params)
    # a profile that accepts the first positions far more often than i.i.d. p = 0.8 says (bursty acceptance)
    measured = _get(client, profile="0.95,0.93,0.91,0.89", **params)
    assert "measured profile up to k = 4" in measured["acceptance_model"]
    assert measured["engine_k_by_batch"][0] > iid["engine_k_by_batch"][0]
    assert measured["iid_differs_at"] and 1 in measured["iid_differs_at"]
    assert any("i.i.d. model at p = 0.800 would run another k" in note for note in measured["notes"])
    same = _get(client, profile="0.8,0.64,0.512", **params)  # exactly the i.i.d. shares: the same schedule
    assert same["iid_differs_at"] == []


@pytest.mark.parametrize("profile", ["0.5,0.9", "1.5", "a,b"])
def test_a_bad_profile_is_refused_naming_it(client: TestClient, profile: str) -> None:
    response = client.get(CONFIG, params={"engine": "vllm", "p": 0.8, "profile": profile})
    assert response.status_code == 422
    assert response.json()["detail"][0]["msg"].startswith("profile")
