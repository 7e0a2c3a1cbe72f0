"""The rules file (app.model.rules.file), `specdec-lab rules` and GET /api/v1/rules: the series it reads are the
adapters', and how bad input is answered."""

from __future__ import annotations

import json

import pytest
import yaml
from fastapi.testclient import TestClient

from app.cli import main
from app.model import engines, rules

QUERY = "engine=llamacpp&model=dense-8b&draft=dense-3b&p=0.9&k_max=4&method=ngram-simple&window=15s&hold=5s"


def test_names_in_the_rules_are_the_adapters_names() -> None:
    """Every series the rules read is one the adapter's report reader knows for that engine."""
    for engine in engines.ENGINES:
        module = engines.adapter(engine)
        for version, metrics in module.RULES_METRICS.items():
            assert version in {v.name for v in module.VERSIONS}
            names = [
                metrics.drafts,
                metrics.draft_tokens,
                metrics.accepted,
                metrics.per_position,
                metrics.drafted_per_position,
                metrics.verify_calls,
            ]
            prefix = module.PROMETHEUS.prefix
            for name in filter(None, names):
                stem = name.split(":", 1)[-1] if ":" in name else name.removeprefix(f"{prefix}_")
                stem = stem.removesuffix("_total")
                assert name.startswith(prefix) and (
                    stem in module.PROMETHEUS.counters or stem.startswith("spec_decode_")
                ), name
            assert metrics.running.endswith(module.PROMETHEUS.running)


# ---------------------------------------------------------------------------
# API and command line


def test_the_api_answers_the_rules_as_json_and_as_the_file(client: TestClient) -> None:
    body = client.get(f"/api/v1/rules?{QUERY}").json()
    assert body["engine"] == "llamacpp" and body["engine_version"] == "b11434" and body["window"] == "15s"
    assert body["records"][0] == rules.RUNNING_BATCH and len(body["alerts"]) == 3
    assert "llamacpp:spec_decode_num_drafts_total" in body["series"]
    assert yaml.safe_load(body["yaml"]) == {"groups": body["groups"]}
    assert body["schedule_k_by_batch"][0] == 4 and body["engine_k_by_batch"][0] == 4
    file = client.get(f"/api/v1/rules?{QUERY}&format=yaml")
    assert file.status_code == 200 and file.headers["content-type"].startswith("application/yaml")
    assert file.text == body["yaml"]


@pytest.mark.parametrize(
    ("query", "name", "words"),
    [
        ("engine=vllm&engine_version=0.1", "engine_version", "known: 2025-10"),
        ("engine=trtllm&engine_version=2025-10", "engine_version", "trtllm_spec_decode_drafted_tokens_total"),
        ("engine=llamacpp&engine_version=2026-03", "engine_version", "llamacpp:spec_decode_num_drafts_total"),
        ("engine=vllm&window=5x", "window", "Prometheus duration"),
        ("engine=vllm&window=0s", "window", "1s to 7d"),
        ("engine=vllm&hold=8d", "hold", "at most 7d"),
        ("engine=vllm&label=__name__", "label", "label name"),
        ("engine=vllm&match=job", "match", "label matchers"),
        ("engine=vllm&p=0.5&p_low=0.7", "p_low", "from 0 to p"),
        ("engine=tgi", "engine", "one of"),
        ("engine=vllm&format=xml", "format", "json or yaml"),
        ("engine=llamacpp&method=eagle", "method", "spec-type"),
    ],
)
def test_bad_input_gets_a_422_naming_what_is_wrong(client: TestClient, query: str, name: str, words: str) -> None:
    response = client.get(f"/api/v1/rules?{query}")
    assert response.status_code == 422, response.text
    detail = response.json()["detail"][0]
    assert detail["loc"][-1] == name and words in detail["msg"], detail


def test_the_command_line_writes_what_the_api_answers(client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    arguments = ["--engine", "llamacpp", "--model", "dense-8b", "--draft", "dense-3b", "--p", "0.9", "--k-max", "4"]
    arguments += ["--method", "ngram-simple", "--window", "15s", "--hold", "5s"]
    assert main(["rules", *arguments]) == 0
    assert capsys.readouterr().out == client.get(f"/api/v1/rules?{QUERY}&format=yaml").text
    assert main(["rules", *arguments, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == client.get(f"/api/v1/rules?{QUERY}").json()
    assert main(["dashboard", *arguments]) == 0
    assert json.loads(capsys.readouterr().out) == client.get(f"/api/v1/dashboard?{QUERY}").json()
    assert main(["rules", "--engine", "trtllm", "--engine-version", "2025-10"]) == 2
    error = capsys.readouterr().err
    assert "--engine-version" in error and "PR #12545" in error and "Traceback" not in error
