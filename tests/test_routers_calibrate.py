"""Every /calibrate route but POST /calibrate (app/web/api/routes/calibrate.py) over HTTP, with the 422
discipline; draft sources and trees are in test_routers_sources.py and test_routers_trees.py."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from app.model.arithmetic import closed_form
from app.model.cost.regimes import default_setup, linear_verification, roofline_draft_cost, roofline_verification
from app.model.counters import calibration
from app.web.api.routes.calibrate import MAX_BODY_BYTES

RATE = "/api/v1/calibrate/rate"
LENGTH = "/api/v1/calibrate/length"
COUNTERS = "/api/v1/calibrate/counters"
METRICS = "/api/v1/calibrate/metrics"
EXAMPLE = "/api/v1/calibrate/example-metrics"
TREES = "/api/v1/trees"


def messages(response: object) -> list[str]:
    body = response.json()  # type: ignore[attr-defined]
    return [item["msg"] for item in body["detail"]]


# ---------------------------------------------------------------------------
# Calibration


def test_rate_and_length_agree_with_the_closed_form(client: TestClient) -> None:
    p, k = 0.8, 5
    rate = closed_form.draft_acceptance_rate(p, k)
    by_rate = client.get(RATE, params={"rate": rate, "k": k, "c": 0.1, "k_max": 10}).json()
    by_length = client.get(LENGTH, params={"length": closed_form.expected_tokens(p, k), "k": k, "c": 0.1}).json()
    assert by_rate["acceptance"] == pytest.approx(p, abs=1e-9)
    assert by_length["acceptance"] == pytest.approx(p, abs=1e-9)
    assert [row["k"] for row in by_rate["predictions"]] == list(range(11))
    best, speed = closed_form.best_k(p, 0.1, 10)
    assert (by_rate["best_k"], by_rate["best_speedup"]) == (best, pytest.approx(speed))
    assert by_rate["speculate"] is True
    assert by_rate["regime"] == {
        "name": "memory-bound",
        "label": "memory-bound (v = 1)",
        "beta": None,
        "batch": None,
        "c": 0.1,
    }


def test_regimes_price_the_predictions(client: TestClient) -> None:
    linear = client.get(RATE, params={"rate": 0.6, "k": 4, "c": 0.05, "regime": "linear", "beta": 0.2}).json()
    p = linear["acceptance"]
    verify = linear_verification(0.2)
    assert linear["predictions"][3]["speedup"] == pytest.approx(closed_form.speedup(p, 3, 0.05, verify))
    compute = client.get(RATE, params={"rate": 0.6, "k": 4, "regime": "compute-bound"}).json()
    assert compute["best_k"] == 0 and compute["speculate"] is False
    roofline = client.get(RATE, params={"rate": 0.6, "k": 4, "regime": "roofline", "batch": 32}).json()
    c = float(roofline_draft_cost(default_setup(), 32))
    assert roofline["regime"]["c"] == pytest.approx(c)
    expected = closed_form.speedup(p, 4, c, roofline_verification(default_setup(), 32))
    assert roofline["predictions"][4]["speedup"] == pytest.approx(expected)


def test_counters_endpoint(client: TestClient) -> None:
    drafts, k, p = 20_000, 4, 0.7
    positions = [round(drafts * p ** (i + 1)) for i in range(k)]
    params = {
        "drafts": drafts,
        "draft_tokens": drafts * k,
        "accepted": sum(positions),
        "per_position": ",".join(map(str, positions)),
    }
    body = client.get(COUNTERS, params=params).json()
    assert body["source"] == "counters"
    assert body["k"] == k
    assert body["acceptance"] == pytest.approx(p, abs=1e-4)
    assert len(body["positions"]) == k
    assert body["departure"]["consistent_with_iid"] is True


@pytest.mark.parametrize(
    ("params", "name", "fragment"),
    [
        ({"drafts": 0, "draft_tokens": 0, "accepted": 0}, "drafts", "not speculated"),
        ({"drafts": 10, "draft_tokens": 40, "accepted": 50}, "accepted", "exceed drafted"),
        ({"drafts": 10, "draft_tokens": 40, "accepted": 6, "per_position": "3,4,0,0"}, "per_position", "exceeds"),
        ({"drafts": 10, "draft_tokens": 40, "accepted": 6, "per_position": "3,x"}, "per_position", "comma-separated"),
        ({"drafts": 10, "draft_tokens": 35, "accepted": 6}, "draft_tokens", "give k"),
        ({"drafts": 10, "draft_tokens": 5, "accepted": 2}, "draft_tokens", "fewer draft tokens"),
        ({"drafts": 10, "draft_tokens": 40, "accepted": 6, "per_position": "3,2,0,0"}, "per_position", "sum to 5"),
        (
            {"drafts": 10, "draft_tokens": 40, "accepted": 6, "per_position": ",".join(["1"] * 65)},
            "per_position",
            "at most 64",
        ),
    ],
)
def test_counters_422_names_the_parameter(
    client: TestClient, params: dict[str, object], name: str, fragment: str
) -> None:
    response = client.get(COUNTERS, params=params)
    assert response.status_code == 422
    [item] = response.json()["detail"]
    assert item["loc"] == ["query", name]
    assert item["msg"].startswith(f"{name}:") and fragment in item["msg"]


@pytest.mark.parametrize(
    ("url", "params", "name", "fragment"),
    [
        (RATE, {"rate": 1.5, "k": 4}, "rate", "from 0 to 1"),
        (RATE, {"rate": 0.5, "k": 0}, "k", "from 1 to 64"),
        (RATE, {"rate": 0.5, "k": 4, "regime": "warp-drive"}, "regime", "memory-bound, compute-bound"),
        (RATE, {"rate": 0.5, "k": 4, "beta": 2}, "beta", "from 0 to 1"),
        (RATE, {"rate": "nan", "k": 4}, "rate", "finite"),
        (LENGTH, {"length": 7, "k": 5}, "length", "k + 1 = 6"),
        (LENGTH, {"length": 0.5, "k": 5}, "length", "from 1 to 65"),
        (RATE, {"k": 4}, "rate", "required"),
    ],
)
def test_calibration_422(client: TestClient, url: str, params: dict[str, object], name: str, fragment: str) -> None:
    response = client.get(url, params=params)
    assert response.status_code == 422
    assert any(message.startswith(name) and fragment in message for message in messages(response)), messages(response)


def test_a_k_the_counts_contradict_is_refused_by_the_k_parameter(client: TestClient) -> None:
    """The k given is what the counters contradict: every calibration blames the query's k, not the report."""
    scrape = calibration.example_exposition(0.7, 5, drafts=10_000)
    message = "k: k = 6 was given but the exposition has per-position counters for k = 5"
    for url in (METRICS, "/api/v1/calibrate"):
        response = client.post(f"{url}?k=6", content=scrape, headers={"content-type": "text/plain"})
        assert response.status_code == 422, (url, response.text)
        assert response.json()["detail"][0]["loc"] == ["query", "k"] and messages(response) == [message]
        assert client.post(f"{url}?k=5", content=scrape, headers={"content-type": "text/plain"}).status_code == 200
    counters = {"drafts": 1000, "draft_tokens": 3000, "accepted": 2000, "per_position": "900,700,400", "k": 4}
    response = client.get(COUNTERS, params=counters)
    assert response.status_code == 422 and response.json()["detail"][0]["loc"] == ["query", "k"]
    assert messages(response) == ["k: k = 4 was given but the exposition has per-position counters for k = 3"]


def test_pasted_exposition_as_text(client: TestClient) -> None:
    text = calibration.example_exposition(0.85, 6, drafts=100_000, engines=2)
    response = client.post(
        METRICS, params={"c": 0.1, "k_max": 12}, content=text, headers={"content-type": "text/plain"}
    )
    assert response.status_code == 200
    body = response.json()
    assert body["acceptance"] == pytest.approx(0.85, abs=1e-4)
    assert body["k"] == 6
    assert body["counters"]["series"] == 2
    assert body["counters"]["schema_version"] == "v1"
    assert [row["position"] for row in body["positions"]] == [1, 2, 3, 4, 5, 6]


def v1_text(drafts: int, positions: list[int]) -> str:
    k = len(positions)
    lines = [
        f"vllm:spec_decode_num_drafts_total {drafts}",
        f"vllm:spec_decode_num_draft_tokens_total {drafts * k}",
        f"vllm:spec_decode_num_accepted_tokens_total {sum(positions)}",
    ]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{position="{i}"}} {v}' for i, v in enumerate(positions)
    ]
    return "\n".join(lines) + "\n"


def test_pasted_exposition_as_json_with_baseline(client: TestClient) -> None:
    """10,000 warm-up drafts at p = 0.5, then 50,000 at p = 0.9: subtracting the first scrape isolates the second."""
    warm = [round(10_000 * 0.5 ** (i + 1)) for i in range(4)]
    steady = [round(50_000 * 0.9 ** (i + 1)) for i in range(4)]
    baseline = v1_text(10_000, warm)
    later = v1_text(60_000, [a + b for a, b in zip(warm, steady, strict=True)])
    whole = client.post(METRICS, json={"metrics": later}).json()
    interval = client.post(METRICS, json={"metrics": later, "baseline": baseline}).json()
    assert interval["acceptance"] == pytest.approx(0.9, abs=1e-4)
    assert whole["acceptance"] < 0.87  # the warm-up drags the lifetime counters down
    assert interval["counters"]["drafts"] == 50_000


def test_example_metrics_round_trip(client: TestClient) -> None:
    text = client.get(EXAMPLE, params={"p": 0.7, "k": 3, "drafts": 50_000, "seed": 4}).text
    assert "vllm:spec_decode_num_accepted_tokens_per_pos_total" in text
    body = client.post(METRICS, content=text, headers={"content-type": "text/plain"}).json()
    assert body["acceptance"] == pytest.approx(0.7, abs=0.01)
    v0 = client.get(EXAMPLE, params={"p": 0.6, "k": 4, "schema": "v0"}).text
    assert "vllm:spec_decode_num_emitted_tokens_total" in v0
    assert client.post(METRICS, content=v0).json()["acceptance"] == pytest.approx(0.6, abs=1e-3)


BAD_BODIES: dict[str, tuple[str, str, str]] = {
    "empty": ("", "metrics", "empty"),
    "prose": ("this is not a scrape", "metrics", "not a Prometheus text exposition"),
    "unrelated": ("process_cpu_seconds_total 1.5\n", "metrics", "no vLLM spec-decode counters"),
    "missing": (
        "vllm:spec_decode_num_draft_tokens_total 10\nvllm:spec_decode_num_accepted_tokens_total 4\n",
        "metrics",
        "missing counter",
    ),
    "negative": (
        "vllm:spec_decode_num_drafts_total 10\nvllm:spec_decode_num_draft_tokens_total 40\n"
        "vllm:spec_decode_num_accepted_tokens_total -1\n",
        "metrics",
        "negative",
    ),
    "zero drafts": (
        "vllm:spec_decode_num_drafts_total 0\nvllm:spec_decode_num_draft_tokens_total 0\n"
        "vllm:spec_decode_num_accepted_tokens_total 0\n",
        "metrics",
        "has not speculated yet",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_BODIES))
def test_bad_expositions_get_clear_422(client: TestClient, case: str) -> None:
    text, field, fragment = BAD_BODIES[case]
    response = client.post(METRICS, content=text, headers={"content-type": "text/plain"})
    assert response.status_code == 422
    [item] = response.json()["detail"]
    assert item["loc"] == ["body", field]
    assert item["msg"].startswith(f"{field}:") and fragment in item["msg"]
    assert item["type"] == "value_error"


def test_bad_exposition_messages_differ(client: TestClient) -> None:
    seen = {client.post(METRICS, content=text).json()["detail"][0]["msg"] for text, _, _ in BAD_BODIES.values()}
    assert len(seen) == len(BAD_BODIES)


@pytest.mark.parametrize(
    ("body", "content_type", "field", "fragment"),
    [
        (b"\xff\xfe\x00", "text/plain", "metrics", "UTF-8"),
        (b"{not json", "application/json", "metrics", "does not parse"),
        (b"[1, 2]", "application/json", "metrics", "must be an object"),
        (b'{"metrics": 3}', "application/json", "metrics", "is required"),
        (b'{"metrics": "x", "extra": 1}', "application/json", "metrics", "unknown JSON fields extra"),
        (
            b'{"metrics": "vllm:spec_decode_num_drafts_total 1", "baseline": 5}',
            "application/json",
            "baseline",
            "JSON string",
        ),
    ],
)
def test_malformed_bodies(client: TestClient, body: bytes, content_type: str, field: str, fragment: str) -> None:
    response = client.post(METRICS, content=body, headers={"content-type": content_type})
    assert response.status_code == 422
    [item] = response.json()["detail"]
    assert item["loc"] == ["body", field] and fragment in item["msg"]


def test_baseline_errors_name_the_baseline(client: TestClient) -> None:
    now = calibration.example_exposition(0.7, 3, drafts=100)
    later = calibration.example_exposition(0.7, 3, drafts=1_000)
    response = client.post(METRICS, json={"metrics": now, "baseline": later})
    assert response.status_code == 422
    [item] = response.json()["detail"]
    assert item["loc"] == ["body", "baseline"] and "restarted" in item["msg"]
    response = client.post(METRICS, json={"metrics": now, "baseline": "garbage here"})
    assert response.json()["detail"][0]["loc"] == ["body", "baseline"]


def test_oversized_body_is_refused_without_reading_it_all(client: TestClient) -> None:
    response = client.post(METRICS, content=b"#" * (MAX_BODY_BYTES + 1), headers={"content-type": "text/plain"})
    assert response.status_code == 422
    assert "at most" in response.json()["detail"][0]["msg"]

    def chunks() -> object:
        for _ in range(MAX_BODY_BYTES // 65_536 + 2):
            yield b"#" * 65_536

    streamed = client.post(METRICS, content=chunks(), headers={"content-type": "text/plain"})  # type: ignore[arg-type]
    assert streamed.status_code == 422
    single = "# " + "x" * calibration.MAX_EXPOSITION_BYTES
    too_large = client.post(METRICS, json={"metrics": single})
    assert too_large.status_code == 422 and "larger than" in too_large.json()["detail"][0]["msg"]


def test_post_query_parameters_are_validated(client: TestClient) -> None:
    text = calibration.example_exposition(0.7, 3)
    response = client.post(METRICS, params={"k_max": 0}, content=text)
    assert response.status_code == 422 and messages(response)[0].startswith("k_max")
    response = client.post(METRICS, params={"regime": "nope"}, content=text)
    assert response.status_code == 422 and messages(response)[0].startswith("regime")
    response = client.post(METRICS, params={"model_name": "x" * 201}, content=text)
    assert response.status_code == 422 and messages(response)[0].startswith("model_name")


def test_openapi_documents_the_body(client: TestClient) -> None:
    operation = client.get("/openapi.json").json()["paths"][METRICS]["post"]
    assert set(operation["requestBody"]["content"]) == {"text/plain", "application/json"}
    assert operation["requestBody"]["content"]["text/plain"]["schema"]["maxLength"] == calibration.MAX_EXPOSITION_BYTES


def test_responses_are_json_serialisable_without_nan(client: TestClient) -> None:
    for url, params in [
        (RATE, {"rate": 1.0, "k": 3}),
        (RATE, {"rate": 0.0, "k": 3}),
        (LENGTH, {"length": 4, "k": 3}),
        (TREES, {"acceptance": "1"}),
        (TREES, {"acceptance": "0.5,0.5", "budget": 8}),
    ]:
        response = client.get(url, params=params)
        assert response.status_code == 200, (url, params, response.text)
        assert "NaN" not in response.text and "Infinity" not in response.text, url
