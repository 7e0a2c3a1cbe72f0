"""`specdec-lab rules`, GET /api/v1/rules and `watch --prometheus`: what the rules hold, how bad input is
answered, and the watch against Prometheus HTTP APIs that misbehave.

The piecewise expressions are evaluated here in Python at every batch (the PromQL turned into arithmetic), so
that the break-even, the schedule's k and the best k the rules record are held to the roofline itself."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import numpy as np
import pytest
import yaml
from fastapi.testclient import TestClient

from app.cli import main
from app.model import engines, rules
from app.model.capacity import decide
from app.service.clients import prometheus as prometheus_watch
from app.service.regimes import SetupRequest, build_setup
from tests.planned import planned_rules

SETUP = build_setup(SetupRequest(model="dense-70b", draft="dense-3b", devices=8)).setup
QUERY = "engine=llamacpp&model=dense-8b&draft=dense-3b&p=0.9&k_max=4&method=ngram-simple&window=15s&hold=5s"


def rules_for(engine: str = "vllm", **extra: Any) -> rules.RulesFile:
    return planned_rules(rules.RulesRequest(engine=engine, p=0.9, k_max=4, **extra), SETUP)


def expression(made: rules.RulesFile, record: str) -> str:
    return next(rule["expr"] for rule in made.document["groups"][0]["rules"] if rule.get("record") == record)


def evaluate(expr: str, values: dict[str, float]) -> float:
    """A piecewise PromQL expression over recorded series, at given values of those series, as Python."""
    text = re.sub(r'\{specdec_rules="[^"]*"\}', "", expr)
    text = text.replace(">= bool", ">=").replace("< bool", "<").replace("== bool", "==")
    for name in sorted(values, key=len, reverse=True):
        text = text.replace(name, repr(values[name]))
    assert "specdec:" not in text, text
    return float(eval(f"({text})", {"__builtins__": {"round": round}}, {}))


@pytest.mark.parametrize("engine", ["vllm", "trtllm", "llamacpp", "sglang"])
def test_the_break_even_and_the_schedule_follow_the_roofline_at_every_batch(engine: str) -> None:
    made = rules_for(engine)
    limit = made.decision.batch_limit
    batches = np.arange(1, limit + 1, dtype=np.float64)
    priced = [k or max(made.engine_k) or max(made.decision.best_k) for k in made.engine_k]
    cost = rules.cycle_cost(SETUP, batches, np.asarray(priced, dtype=np.float64))
    even, schedule = expression(made, rules.BREAK_EVEN), expression(made, rules.SCHEDULE_K)
    for batch in range(1, limit + 1):
        values = {rules.SCHEDULE_BATCH: float(batch)}
        assert abs(evaluate(even, values) - cost[batch - 1]) <= cost[batch - 1] * rules.COST_TOLERANCE * 1.001
        assert evaluate(schedule, values) == made.engine_k[batch - 1]  # the k the config runs there
        halfway = {rules.SCHEDULE_BATCH: batch + 0.5}  # an average batch between two integers is priced too
        assert evaluate(even, halfway) > 1.0 and evaluate(schedule, halfway) in made.engine_k
    assert made.cost_pieces <= 16


def test_the_best_k_recorded_is_the_roofline_best_at_the_bin_of_the_measured_p() -> None:
    made = rules_for("vllm")
    best = expression(made, rules.RECOMMENDED_K)
    for p in (0.03, 0.12, 0.33, 0.58, 0.77, 0.93, 1.0):
        low = min(int(p / rules.P_STEP + 1e-9), round(1 / rules.P_STEP) - 1) * rules.P_STEP
        decided = decide(low, SETUP, 4, 1024)
        for batch in (1, 8, 60, 200, 400, 1024):
            values = {rules.ACCEPTANCE: p, rules.SCHEDULE_BATCH: float(batch)}
            assert evaluate(best, values) == decided.best_k[batch - 1], (p, batch)


def test_sglang_p_is_read_back_from_tokens_per_verification_at_the_running_k() -> None:
    from app.model import closed_form

    made = rules_for("sglang")
    read_back = expression(made, rules.ACCEPTANCE)
    assert read_back.startswith("clamp(\n  (") and "\n  and on (instance, model_name)" in read_back
    inner = read_back[len("clamp(\n  ") : read_back.index("\n  and on")]
    for k in (1, 2, 4):
        for p in (0.0, 0.2, 0.5, 0.8, 0.95, 1.0):
            values = {rules.TOKENS: closed_form.expected_tokens(p, k), rules.RUNNING_K: float(k)}
            found = min(max(evaluate(inner, values), 0.0), 1.0)
            assert abs(found - p) <= rules.P_TOLERANCE * 1.01, (k, p, found)


def test_every_alert_says_what_to_do_and_every_template_renders() -> None:
    for engine in engines.ENGINES:
        made = rules_for(engine)
        for alert in made.alerts:
            labels = {"instance": "a:1", "model_name": "m"}
            off, on = alert.summary.render(labels, 0.0), alert.summary.render(labels, 3.0)
            assert "off" in off and ("k = 3" in on), (alert.name, off, on)
            assert "a:1" in on and "model_name=m" in on
            assert "{{" not in alert.description.render(labels, 2.0)
            rule = next(r for r in made.document["groups"][0]["rules"] if r.get("alert") == alert.name)
            assert rule["for"] == "10m" and rule["labels"]["severity"] == rules.SEVERITY
            assert rule["annotations"]["summary"] == alert.summary.go()
    assert "cannot be checked" in " ".join(rules_for("sglang", version="2026-03").unchecked)


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
    assert body["engine"] == "llamacpp" and body["engine_version"] == "2026-10" and body["window"] == "15s"
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


# ---------------------------------------------------------------------------
# watch --prometheus against HTTP APIs that misbehave, and a canned one


@pytest.fixture
def http_server() -> Iterator[Callable[[Callable[[str, dict[str, list[str]]], tuple[int, bytes]]], str]]:
    servers: list[ThreadingHTTPServer] = []

    def start(answer: Callable[[str, dict[str, list[str]]], tuple[int, bytes]]) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                status, body = answer(parts.path, parse_qs(parts.query))
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _watch(url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["watch", "--prometheus", url, "--interval", "0.05", "--samples", "2", *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_prometheus_that_does_not_answer_is_a_plain_error(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support import free_port

    code, _, err = _watch(f"http://127.0.0.1:{free_port()}", capsys)
    assert code == 2 and "does not answer" in err and "Traceback" not in err
    code, _, err = _watch("ftp://example.org", capsys)
    assert code == 2 and "http(s) URL" in err
    assert main(["watch", "http://127.0.0.1:1/metrics", "--prometheus", "http://127.0.0.1:1"]) == 2
    assert main(["watch"]) == 2
    assert "not both" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("status", "body", "words"),
    [
        (503, b'{"status":"error","errorType":"unavailable","error":"TSDB not ready"}', "HTTP 503, unavailable"),
        (400, b'{"status":"error","errorType":"bad_data","error":"parse error"}', "bad_data: parse error"),
        (200, b"<html>a login page</html>", "is this a Prometheus?"),
        (200, b'{"status":"success","data":{"resultType":"vector","result":[]}}', "holds no spec-decode counters"),
    ],
)
def test_a_prometheus_that_answers_an_error_is_a_plain_error(
    http_server: Any, capsys: pytest.CaptureFixture[str], status: int, body: bytes, words: str
) -> None:
    url = http_server(lambda path, query: (status, body))
    code, _, err = _watch(url, capsys)
    assert code == 2 and words in err and "Traceback" not in err, err


def _vector(samples: list[tuple[dict[str, str], float]]) -> bytes:
    result = [{"metric": metric, "value": [0, repr(value)]} for metric, value in samples]
    return json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()


def test_the_watch_prints_one_line_per_class_and_says_when_counters_reset(
    http_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    asked: list[str] = []
    classes = [{"instance": f"r{i}:8000", "model_name": name} for i in (1, 2) for name in ("a", "b")]
    p, k, drafts = 0.8, 4, 500.0

    def answer(path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        expr = query["query"][0]
        asked.append(expr)
        if expr.startswith("count by (__name__)"):
            return 200, _vector([({"__name__": "vllm:spec_decode_num_drafts_total"}, 2.0)])
        if "per_pos" in expr:
            return 200, _vector([({**c, "position": str(i)}, drafts * p ** (i + 1)) for c in classes for i in range(k)])
        if "resets(" in expr:
            return 200, _vector([(c, 1.0 if c["instance"] == "r2:8000" else 0.0) for c in classes])
        value = {"drafts_total": drafts, "draft_tokens": drafts * k, "running": 8.0}
        chosen = next(v for key, v in value.items() if key in expr)
        return 200, _vector([(c, chosen) for c in classes])

    url = http_server(answer)
    code, out, err = _watch(url, capsys)
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("interval")]
    assert len(lines) == 8 and all("p 0.800" in line and "k 4" in line and "batch 8" in line for line in lines)
    assert sum("counters reset" in line for line in lines) == 4
    per_interval = (len(asked) - 1) / 2
    assert per_interval <= prometheus_watch.QUERIES_PER_EVALUATION


def test_an_alert_described_for_any_value_names_the_k_and_both_actions() -> None:
    template = rules.Template(
        ("On ", rules.Field("label", "instance"), ": ", rules.Field("action", "turn it off|run k = "), ".")
    )
    assert template.described({"instance": "an instance"}) == "On an instance: run k = k (or turn it off)."
    assert template.render({"instance": "a:1"}, 3.0) == "On a:1: run k = 3."
    assert template.render({"instance": "a:1"}, 0.0) == "On a:1: turn it off."
