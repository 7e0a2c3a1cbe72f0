"""POST /api/v1/measure's refusals, each a 4xx naming the input: a deployment that does not allow measuring, bad
servers or batches, a URL that is no inference server, an unknown job.  (The sweep itself runs against real
llama-servers in tests/test_measure_jobs_live.py.)"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator

import httpx
import pytest
from fastapi.testclient import TestClient

from app.web.core.config import Settings
from app.web.main import create_app
from tests.support import answering


@pytest.fixture(scope="module")
def allowed() -> Iterator[TestClient]:
    with TestClient(create_app(Settings(allow_measure=True))) as test_client:
        yield test_client


def _message(response: object) -> str:
    detail = response.json()["detail"]  # type: ignore[attr-defined]
    return detail if isinstance(detail, str) else " ".join(item["msg"] for item in detail)


def test_measuring_is_refused_where_the_deployment_does_not_allow_it(client: TestClient) -> None:
    response = client.post("/api/v1/measure", params={"servers": "http://127.0.0.1:1 http://127.0.0.1:2"})
    assert response.status_code == 403 and "SPECDEC_ALLOW_MEASURE" in _message(response)


@pytest.mark.parametrize(
    ("query", "field", "said"),
    [
        ({"servers": "http://127.0.0.1:9"}, "servers", "from 2 to 8 servers"),
        ({"servers": "ftp://a.example http://127.0.0.1:9"}, "servers", "not an http(s) URL"),
        ({"servers": "http://127.0.0.1:9 http://127.0.0.1:9/"}, "servers", "the same server is given twice"),
        ({"servers": "http://127.0.0.1:8 http://127.0.0.1:9", "batches": "0,2"}, "batches", "from 1 to 256"),
        ({"servers": "http://127.0.0.1:8 http://127.0.0.1:9", "batches": "two"}, "batches", "not a whole number"),
        ({"servers": "http://127.0.0.1:8 http://127.0.0.1:9", "n_predict": "1"}, "n_predict", "from 2 to 4096"),
        ({"servers": "http://127.0.0.1:8 http://127.0.0.1:9", "timeout": "7200"}, "timeout", "from 1 to 3600"),
        (
            {"servers": "http://127.0.0.1:8 http://127.0.0.1:9", "engine": "vllm", "method": "ngram-simple"},
            "method",
            "vLLM method must be one of",
        ),
    ],
)
def test_bad_inputs_get_a_422_naming_the_input(
    allowed: TestClient, query: dict[str, str], field: str, said: str
) -> None:
    response = allowed.post("/api/v1/measure", params=query)
    assert response.status_code == 422, response.text
    assert field in _message(response) and said in _message(response), _message(response)
    assert response.json()["detail"][0]["loc"] == ["query", field]  # a query parameter, not the body


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("\n".join(f"prompt {index}" for index in range(65)), "at most 64 prompts"),
        ("short\n" + "x" * 8_001, "line 2 has 8,001"),
        ("y" * 65_537, "at most 65,536 bytes"),
        (b"\xff\xfe", "UTF-8"),
    ],
)
def test_bad_prompts_get_a_422_naming_the_body(allowed: TestClient, body: str | bytes, said: str) -> None:
    servers = {"servers": "http://127.0.0.1:8 http://127.0.0.1:9"}
    response = allowed.post("/api/v1/measure", params=servers, content=body, headers={"content-type": "text/plain"})
    assert response.status_code == 422, response.text
    [item] = response.json()["detail"]
    assert item["loc"] == ["body", "prompts"] and item["msg"].startswith("prompts: ") and said in item["msg"], item


def test_the_prompts_become_the_jobs_workload() -> None:
    from app.service import live_inputs
    from app.service.measure_jobs import JobRequest, _sweep

    assert live_inputs.prompt_list("  \n\n") is None  # nothing given: the built-in prompts
    prompts = live_inputs.prompt_list("one prompt\n\n  another  \n")
    assert prompts == ("one prompt", "another")
    request = JobRequest(("http://a:1", "http://b:2"), (1, 2), 16, 1, 100, 60.0, prompts=prompts)
    with httpx.Client() as client:
        sweep = _sweep(client, request, lambda done, total, label: None, threading.Event())
    assert sweep.prompts == ["one prompt", "another"]


def test_a_url_that_is_no_inference_server_is_named_at_once(allowed: TestClient) -> None:
    with answering(lambda path, query: (404, "text/plain", b"not here")) as address:
        other = f"http://{address}/x"
        response = allowed.post("/api/v1/measure", params={"servers": f"http://{address} {other}"})
    assert response.status_code == 422
    assert f"http://{address}/health: HTTP 404" in _message(response) and "servers" in _message(response)


def test_the_forms_text_inputs_are_text_boxes_and_its_numbers_number_boxes(monkeypatch: pytest.MonkeyPatch) -> None:
    from app.web.core.config import get_settings

    monkeypatch.setenv("SPECDEC_ALLOW_MEASURE", "true")  # the page reads the deployment's settings
    get_settings.cache_clear()
    try:
        with TestClient(create_app()) as client:
            page = client.get("/decide").text
    finally:
        monkeypatch.delenv("SPECDEC_ALLOW_MEASURE")
        get_settings.cache_clear()
    assert 'id="measure-form"' in page
    for name in ("batches", "method"):  # a drafter such as ngram cannot be typed into a number box
        assert re.search(rf'<input type="text" id="measure-{name}"', page), name
    for name in ("n_predict", "repeats"):
        assert re.search(rf'<input type="number" id="measure-{name}"', page), name


def test_an_unknown_job_is_a_404(allowed: TestClient) -> None:
    assert allowed.get("/api/v1/measure/none").status_code == 404
    assert allowed.post("/api/v1/measure/none/cancel").status_code == 404


def test_the_decide_view_says_whether_this_server_measures_and_labels_the_inputs(client: TestClient) -> None:
    view = client.get("/api/v1/views/decide").json()["measure"]
    assert view["allowed"] is False and "specdec-lab measure" in view["command"]
    assert view["labels"] == {
        "servers": "Servers",
        "batches": "Batches",
        "n_predict": "Tokens per request",
        "repeats": "Rounds",
        "max_requests": "Most requests",
        "timeout": "Timeout (s)",
        "engine": "Engine",
        "method": "Drafter",
        "prompts": "Prompts",
    }
    page = client.get("/decide").text
    assert 'id="measure-off"' in page and 'id="measure-form"' not in page


def test_a_cells_time_per_token_is_one_sequences_and_its_rate_the_whole_batchs() -> None:
    from app.model.counters.counts import SpecCounts
    from app.service.clients.measure import Record, Server
    from app.service.measure_jobs import partial_cells

    # two requests decoded together, 10 tokens each, each taking 100 ms: 10 ms a token per sequence, 20 tokens
    # in 200 ms of wall clock
    record = Record(0, 0, 2, 20, 200.0, SpecCounts(5, 20, 8, ()), wall_ms=200.0)
    [cell] = partial_cells([Server("http://127.0.0.1:1", True, k=4)], [record])
    assert cell.ms_per_token == 10.0 and cell.tokens_per_s == 100.0 and cell.round == 1


def test_the_openapi_document_types_a_jobs_report_to_its_cells_and_config(client: TestClient) -> None:
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    report = schemas["MeasureJob"]["properties"]["report"]["anyOf"][0]["$ref"].rsplit("/", 1)[-1]
    fields = schemas[report]["properties"]
    assert {"cells", "crossover", "best_k_by_batch", "step_cost", "engine_config", "samples", "notes"} <= set(fields)
    cell = fields["cells"]["anyOf"][0]["items"]["$ref"].rsplit("/", 1)[-1]
    assert {"measured_speedup", "predicted_speedup_batch_holdout", "profile"} <= set(schemas[cell]["properties"])
    config = fields["engine_config"]["anyOf"][0]["$ref"].rsplit("/", 1)[-1]
    assert {"flags", "runs", "differs_at", "error"} <= set(schemas[config]["properties"])


def test_the_openapi_document_names_each_schema_once(client: TestClient) -> None:
    """Two response models of one name would be renamed by module in the document (a client's $ref would break)."""
    names = client.get("/openapi.json").json()["components"]["schemas"]
    assert not [name for name in names if "__" in name]
    assert "StepCostOut" in names and "BatchStepCostOut" in names
