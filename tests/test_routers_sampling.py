from __future__ import annotations

import itertools
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.model import limits
from app.model.arithmetic import bursty, closed_form, sampling


def get(client: TestClient, path: str, **params: Any) -> dict[str, Any]:
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def refused(client: TestClient, path: str, name: str, **params: Any) -> str:
    response = client.get(path, params=params)
    assert response.status_code == 422, response.text
    detail = response.json()["detail"]
    assert detail[0]["loc"] == ["query", name]
    message: str = detail[0]["msg"]
    assert message.startswith(name)
    return message


def test_exact_rule_passes_and_wrong_rules_fail(client: TestClient) -> None:
    body = get(client, "/api/v1/exact-rule", vocab=100, trials=100_000, seed=3)
    pair = sampling.make_pair(100, 1.0, 1.0, 1.0, seed=3)
    assert body["overlap"] == pytest.approx(pair.overlap)
    assert body["total_variation"] == pytest.approx(1.0 - pair.overlap)
    rules = {rule["rule"]: rule for rule in body["rules"]}
    assert list(rules) == ["exact", "argmax", "resample_target"]
    assert rules["exact"]["passes"] and rules["exact"]["bias"] == 0.0
    assert not rules["argmax"]["passes"] and not rules["resample_target"]["passes"]
    exact = rules["exact"]
    assert abs(exact["acceptance"] - body["overlap"]) < 3 * exact["acceptance_standard_error"]
    assert len(body["histogram_tokens"]) == len(body["target"]) == len(exact["histogram"]) == 30
    assert body["target"] == sorted(body["target"], reverse=True)
    assert sum(body["target"]) + body["target_rest"] == pytest.approx(1.0)
    assert sum(exact["histogram"]) + exact["histogram_rest"] == pytest.approx(1.0)


def test_exact_rule_is_reproducible(client: TestClient) -> None:
    params = {"vocab": 40, "trials": 5_000, "seed": 9}
    assert get(client, "/api/v1/exact-rule", **params) == get(client, "/api/v1/exact-rule", **params)


@pytest.mark.parametrize(
    ("name", "value", "bounds"),
    [
        ("vocab", 1, "from 2 to 2000"),
        ("vocab", limits.MAX_VOCAB + 1, "from 2 to 2000"),
        ("trials", limits.MAX_TRIALS + 1, "from 1000 to 500000"),
        ("trials", "1e9", "from 1000 to 500000"),
        ("target_temperature", 0, "from 0.05 to 5"),
        ("draft_temperature", "inf", "from 0.05 to 5"),
        ("draft_distance", "nan", "from 0 to 5"),
        ("histogram_tokens", 0, "from 1 to 200"),
    ],
)
def test_exact_rule_bounds(client: TestClient, name: str, value: object, bounds: str) -> None:
    assert bounds in refused(client, "/api/v1/exact-rule", name, **{name: value})


def test_chain_rolls_back_one_integer(client: TestClient) -> None:
    body = get(client, "/api/v1/chain", vocab=30, k=5, tokens=80, seed=2, draft_distance=1.5)
    assert body["generated"] >= 80
    assert body["rollbacks"] > 0
    assert len(body["sequence"]) == body["cycles"][-1]["end_length"]
    for step in body["steps"]:
        if step["action"] == "rollback":
            cycle = body["cycles"][step["cycle"]]
            assert step["length"] == cycle["start_length"] + cycle["accepted"] < cycle["start_length"] + body["k"]
    lengths = [step["length"] for step in body["steps"]]
    assert any(later < earlier for earlier, later in itertools.pairwise(lengths))


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("vocab", limits.MAX_CHAIN_VOCAB + 1),
        ("k", 0),
        ("k", limits.MAX_CHAIN_K + 1),
        ("tokens", limits.MAX_CHAIN_TOKENS + 1),
    ],
)
def test_chain_bounds(client: TestClient, name: str, value: int) -> None:
    refused(client, "/api/v1/chain", name, **{name: value})


def test_ngram_pair_against_the_closed_form(client: TestClient) -> None:
    body = get(client, "/api/v1/ngram", k=4, tokens=400, seed=1)
    assert body["corpus_characters"] > 100_000
    assert body["generated"] >= 400
    assert body["closed_form_tokens"] == pytest.approx(closed_form.expected_tokens(body["acceptance"], 4))
    assert sum(body["histogram"]) == body["cycles"] == body["per_position"][0]["verified"]
    assert sum(body["histogram_iid"]) == pytest.approx(body["cycles"])
    assert len(body["per_position"]) == 4
    kept = "".join(s["text"] for s in body["segments"] if s["kind"] in ("prompt", "accepted", "corrected", "bonus"))
    assert kept == body["text"]
    assert body["text"].startswith("Return the ")
    assert get(client, "/api/v1/ngram", k=4, tokens=400, seed=1) == body


def test_ngram_orders_must_differ_and_the_error_names_what_was_sent(client: TestClient) -> None:
    assert "below target_order" in refused(client, "/api/v1/ngram", "draft_order", draft_order=6, target_order=5)
    assert "above draft_order" in refused(client, "/api/v1/ngram", "target_order", target_order=3)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("k", limits.MAX_NGRAM_K + 1),
        ("tokens", limits.MAX_NGRAM_TOKENS + 1),
        ("draft_order", 0),
        ("target_order", 8),
        ("temperature", -1),
        ("prompt", "caf\u00e9"),
        ("prompt", "x" * (limits.MAX_PROMPT + 1)),
    ],
)
def test_ngram_bounds(client: TestClient, name: str, value: object) -> None:
    refused(client, "/api/v1/ngram", name, **{name: value})


def test_bursty_simulation_against_exact_and_iid(client: TestClient) -> None:
    body = get(client, "/api/v1/bursty", p=0.75, k=6, rho=0.5, cycles=400_000, seed=2)
    low, high = body["interval_95"]
    assert low <= body["expected_tokens"] <= high
    assert body["expected_tokens"] == pytest.approx(bursty.expected_tokens(0.75, 6, 0.5))
    assert body["iid_expected_tokens"] == closed_form.expected_tokens(0.75, 6)
    assert not low <= body["iid_expected_tokens"] <= high  # the i.i.d. closed form is visibly off
    assert body["iid_error"] > 0.05
    assert body["measured_autocorrelation"] == pytest.approx(0.5, abs=0.02)
    assert body["rho_min"] == pytest.approx(-1 / 3)
    assert body["curve"][0]["rho"] == pytest.approx(-1 / 3) and body["curve"][-1]["rho"] == 1.0
    assert sum(body["histogram"]) == 400_000


def test_bursty_at_rho_zero_is_the_closed_form(client: TestClient) -> None:
    body = get(client, "/api/v1/bursty", p=0.6, k=4, rho=0.0, cycles=100_000)
    assert body["expected_tokens"] == body["iid_expected_tokens"] == closed_form.expected_tokens(0.6, 4)


@pytest.mark.parametrize("path", ["/api/v1/bursty", "/api/v1/simulate", "/api/v1/run"])
def test_rho_outside_what_p_allows_names_its_bounds(client: TestClient, path: str) -> None:
    message = refused(client, path, "rho", p=0.75, rho=-0.5)
    assert "-0.333333 to 1 at p = 0.75" in message
    assert "from -1 to 1" in refused(client, path, "rho", rho=1.5)


def test_simulate_and_run_without_rho_are_unchanged(client: TestClient) -> None:
    params = {"p": 0.7, "k": 5, "c": 0.1, "seed": 4}
    plain = get(client, "/api/v1/simulate", cycles=20_000, **params)
    assert plain == get(client, "/api/v1/simulate", cycles=20_000, rho=0, **params)
    assert plain["rho"] == 0.0 and plain["markov_expected_tokens"] is None
    run = get(client, "/api/v1/run", tokens=200, **params)
    assert run == get(client, "/api/v1/run", tokens=200, rho=0.0, **params)


def test_simulate_with_rho_is_held_against_both_models(client: TestClient) -> None:
    body = get(client, "/api/v1/simulate", p=0.75, k=6, c=0.15, cycles=500_000, seed=1, rho=0.5)
    low, high = body["interval_95"]
    assert body["markov_expected_tokens"] == pytest.approx(bursty.expected_tokens(0.75, 6, 0.5))
    assert low <= body["markov_expected_tokens"] <= high
    assert body["expected_tokens"] == closed_form.expected_tokens(0.75, 6)
    assert high < body["expected_tokens"]


def test_run_with_rho_comes_in_runs(client: TestClient) -> None:
    bursty_run = get(client, "/api/v1/run", p=0.5, k=4, tokens=3_000, seed=1, rho=0.9)
    accepted = [cycle["accepted"] for cycle in bursty_run["cycles"]]
    assert sum(accepted) + len(accepted) == bursty_run["tokens"] >= 3_000
    # With rho = 0.9 a cycle that accepted everything is usually followed by another.
    full_after_full = sum(1 for a, b in itertools.pairwise(accepted) if a == 4 and b == 4)
    full = sum(1 for a in accepted[:-1] if a == 4)
    assert full_after_full / full > 0.5 > 0.5**4
