"""`specdec-lab watch --prometheus` (app.service.clients.prometheus) against Prometheus HTTP APIs that misbehave,
and a canned one."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from app.cli import main
from app.model import engines, rules
from app.service.clients import prometheus as prometheus_watch
from app.service.regimes import SetupRequest, build_setup
from tests.planned import planned_rules
from tests.support import answering

SETUP = build_setup(SetupRequest()).setup


@pytest.fixture
def http_server() -> Iterator[Callable[[Callable[[str, dict[str, list[str]]], tuple[int, bytes]]], str]]:
    """Starts canned Prometheus HTTP APIs answering JSON as a test says; stops them after the test."""
    with contextlib.ExitStack() as servers:

        def start(answer: Callable[[str, dict[str, list[str]]], tuple[int, bytes]]) -> str:
            def as_json(path: str, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
                status, body = answer(path, query)
                return status, "application/json", body

            return f"http://{servers.enter_context(answering(as_json))}"

        yield start


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


def _recorded(p: float, k: int, drafts: float, classes: list[dict[str, str]]) -> dict[str, bytes]:
    """What a Prometheus with the vLLM rules loaded answers for each record the watch reads."""
    reached = [p ** (i + 1) for i in range(k)]
    return {
        rules.RUNNING_BATCH: _vector([(c, 8.0) for c in classes]),
        rules.DRAFTS: _vector([(c, drafts) for c in classes]),
        rules.COUNTER_RESETS: _vector([(c, 1.0 if c["instance"] == "r2:8000" else 0.0) for c in classes]),
        rules.TOKENS: _vector([(c, 1.0 + sum(reached)) for c in classes]),
        rules.AT_POSITION: _vector([({**c, "position": str(i)}, reached[i]) for c in classes for i in range(k)]),
        rules.DRAFT_LENGTH: _vector([(c, float(k)) for c in classes]),
    }


def _detection(expr: str, files: list[dict[str, str]]) -> bytes | None:
    """What a Prometheus scraping vLLM answers to the watch's questions before it starts: vLLM's counters are
    there, labelled by model_name, and these rules files record series; None for any other question."""
    if expr.startswith("count by (__name__)"):
        return _vector([({"__name__": "vllm:spec_decode_num_drafts_total"}, 2.0)])
    if expr.startswith(f"count by ({rules.RULES_LABEL}, model_name)"):
        return _vector([(labels, 1.0) for labels in files])
    if expr.startswith("count by (model_name)"):  # the engine's own series carry the class label
        return _vector([({"model_name": name}, 1.0) for name in ("a", "b")])
    return None


def test_the_watch_prints_one_line_per_class_and_says_when_counters_reset(
    http_server: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """With the rules loaded, the watch reads their recorded series, limited to that file's own."""
    asked: list[str] = []
    classes = [{"instance": f"r{i}:8000", "model_name": name} for i in (1, 2) for name in ("a", "b")]
    p, k, drafts = 0.8, 4, 500.0
    recorded = _recorded(p, k, drafts, classes)

    def answer(path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        expr = query["query"][0]
        asked.append(expr)
        detected = _detection(expr, [{rules.RULES_LABEL: "vllm", "model_name": name} for name in ("a", "b")])
        if detected is not None:
            return 200, detected
        name, selector = expr.split("{", 1)
        assert selector == f'{rules.RULES_LABEL}="vllm"}}', expr
        return 200, recorded[name]

    url = http_server(answer)
    code, out, err = _watch(url, capsys)
    assert code == 0, err
    assert f"reading the series recorded by the specdec-lab rules ({rules.RULES_LABEL}=vllm)" in out
    lines = [line for line in out.splitlines() if line.startswith("interval")]
    assert len(lines) == 8 and all("p 0.800" in line and "k 4" in line and "batch 8" in line for line in lines)
    assert sum("counters reset" in line for line in lines) == 4
    per_interval = (len(asked) - 3) / 2  # after the three of detection
    assert per_interval <= prometheus_watch.QUERIES_PER_EVALUATION


@pytest.mark.parametrize(
    "files",
    [[], [{rules.RULES_LABEL: "vllm"}]],  # no rules loaded; rules loaded per instance only, not per model_name
    ids=["not-loaded", "per-another-label"],
)
def test_without_the_rules_the_watch_evaluates_their_own_expressions(
    http_server: Any, capsys: pytest.CaptureFixture[str], files: list[dict[str, str]]
) -> None:
    """Without the rules loaded (per instance and the class label), each query is the expression of a recording
    rule with its references to other records written out: the engine's own series, no recorded one."""
    asked: list[str] = []

    def answer(path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        expr = query["query"][0]
        asked.append(expr)
        return 200, _detection(expr, files) or _vector([])

    url = http_server(answer)
    code, out, err = _watch(url, capsys, "--label-value", "m")
    assert code == 0, err
    assert "rules are not loaded in this Prometheus (or not per instance and model_name)" in out
    assert "evaluating the expressions of their recording rules" in out
    evaluated = [expr for expr in asked if not expr.startswith("count by (")]
    assert 0 < len(evaluated) / 2 <= prometheus_watch.QUERIES_PER_EVALUATION
    assert all("specdec:" not in expr and 'model_name="m"' in expr for expr in evaluated), evaluated
    assert any("increase(vllm:spec_decode_num_accepted_tokens_per_pos_total{" in expr for expr in evaluated)
    metrics = engines.adapter("vllm").RULES_METRICS[engines.versions("vllm")[-1].name]
    series = rules.promql.Series(metrics, "model_name", "1s", 'model_name="m"')  # 0.05 s intervals: 1 s windows
    measured = series.measured()
    assert evaluated[0] == rules.promql.inlined(measured, rules.RUNNING_BATCH)
    assert "no spec-decode series in Prometheus this interval" in out


def test_every_engine_is_watched_in_a_bounded_number_of_queries_that_the_rules_record() -> None:
    """For every engine version with counters: at most QUERIES_PER_EVALUATION records read, each one the rules
    file records (so that with the rules loaded every query is a recorded series)."""
    for engine in engines.ENGINES:
        for version, metrics in engines.adapter(engine).RULES_METRICS.items():
            series = rules.promql.Series(metrics, "model_name", "1m")
            if metrics.missing or not series.counted:
                continue
            target = prometheus_watch.Target(engine, version, metrics, "model_name", "", ("x",))
            read = target.read()
            assert rules.TOKENS in read and rules.DRAFTS in read, (engine, version, read)
            assert len(read) <= prometheus_watch.QUERIES_PER_EVALUATION, (engine, version, read)
            made = planned_rules(rules.RulesRequest(engine=engine, version=version), SETUP)
            assert set(read) <= set(made.records), (engine, version, read)
            assert set(target.queries(60.0)) == set(read)


def test_a_range_querys_samples_are_aligned_to_the_times_asked(
    http_server: Callable[[Callable[[str, dict[str, list[str]]], tuple[int, bytes]]], str],
) -> None:
    """The one range reader the watch, the rollout check and the spec counts share: Prometheus's JSON read into
    typed series once, each series's samples at the times asked, None where Prometheus has none or answers no
    finite number."""
    asked: list[tuple[str, float, float, float]] = []
    result = [
        {"metric": {"instance": "a:1", "class": "chat"}, "values": [[100.0, "1.5"], [120.0, "NaN"], [130.0, "4"]]},
        {"metric": {"instance": "b:1"}, "values": [[110.0000001, "+Inf"], [115.0, "7"], [120, "2"]]},
        {"values": [[100.0, "x"]]},
    ]

    def answer(path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        asked.append((query["query"][0], float(query["start"][0]), float(query["end"][0]), float(query["step"][0])))
        return 200, json.dumps({"status": "success", "data": {"resultType": "matrix", "result": result}}).encode()

    prometheus = prometheus_watch.Prometheus(http_server(answer))
    found = prometheus_watch.range_series(prometheus.query_range, "up", [100.0, 110.0, 120.0], 10.0)
    assert asked == [("up", 100.0, 120.0, 10.0)]
    assert [(series.labels, series.values) for series in found] == [
        ({"instance": "a:1", "class": "chat"}, [1.5, None, None]),  # 130 was not asked; NaN is no number
        ({"instance": "b:1"}, [None, None, 2.0]),  # 115 is between the times; +Inf is no number
        ({}, [None, None, None]),
    ]
    result.append({"metric": {}, "values": [["soon", "1"]]})
    with pytest.raises(prometheus_watch.PrometheusError, match=r"a sample that is not \[time, value\]: \['soon'"):
        prometheus.query_range("up", 100.0, 120.0, 10.0)


def test_an_instant_querys_samples_are_typed(
    http_server: Callable[[Callable[[str, dict[str, list[str]]], tuple[int, bytes]]], str],
) -> None:
    result = [
        {"metric": {"instance": "a:1"}, "value": [100.0, "2.5"]},
        {"metric": {"job": "x"}, "value": [100.0, "NaN"]},
    ]

    def answer(path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        return 200, json.dumps({"status": "success", "data": {"resultType": "vector", "result": result}}).encode()

    found = prometheus_watch.Prometheus(http_server(answer)).query("up", 100.0)
    assert found == [
        prometheus_watch.Sample({"instance": "a:1"}, 2.5),
        prometheus_watch.Sample({"job": "x"}, None),  # NaN is no number
    ]


def test_shares_that_a_fresh_counters_extrapolation_pushes_past_their_bounds_are_read_at_the_bound() -> None:
    """increase() stretches a counter that began inside its window less far than the others: the shares read
    a little above 1 or above the one before; within the slack they are the bound, beyond it they stand."""
    held = prometheus_watch.settled([1.004, 1.01, 0.99, 0.995], 3.96, 0.0)
    assert held.shares == (1.0, 1.0, 0.99, 0.99) and held.moved == pytest.approx(0.01)
    assert held.accepted == pytest.approx(3.98) and held.mean_length == pytest.approx(3.98)
    assert prometheus_watch.settled([1.0, 1.0], 2.03, 0.0).mean_length == 2.0  # at most k tokens per draft
    assert prometheus_watch.settled([], 0.97, 0.2) == prometheus_watch.Settled(
        (), 1.0, 0.2, pytest.approx(0.0309, abs=1e-4)
    )
    assert prometheus_watch.settled([], 2.0, 2.04).mean_length == 2.04
    far = 1.0 + 2 * prometheus_watch.EXTRAPOLATION_SLACK
    assert prometheus_watch.settled([far, 0.5], 2.0, 0.0).shares == (far, 0.5)
    assert prometheus_watch.settled([0.9, 0.5], 1.0, 0.0).mean_length == 1.0  # below the accepted 1.4 by far: stands
    assert prometheus_watch.settled([0.9, 0.5], 1.5, 0.0).moved == 0.0  # nothing to hold


def _llamacpp_interval(shares: list[float], length: float) -> tuple[prometheus_watch.Interval, Any]:
    version = engines.versions("llamacpp")[-1].name
    metrics = engines.adapter("llamacpp").RULES_METRICS[version]
    target = prometheus_watch.Target("llamacpp", version, metrics, "instance", "")
    key = prometheus_watch.replica_key({"instance": "a:8080"}, "instance")
    interval = prometheus_watch.Interval(
        values={
            rules.DRAFTS: {key: 200.0},
            rules.TOKENS: {key: 1.0 + sum(shares)},
            rules.DRAFT_LENGTH: {key: length},
            rules.RUNNING_BATCH: {key: 1.0},
        },
        positions={key: dict(enumerate(shares))},
    )
    return interval, (key, target)


def test_a_fresh_engine_that_accepts_every_token_is_measured_not_called_inconsistent() -> None:
    """Seen on a real llama-server and Prometheus: accepted tokens (200.73) above drafted (198.8) in the first
    intervals, from the ratios of extrapolated increases; the class reads p near 1 instead."""
    interval, (key, target) = _llamacpp_interval([1.004, 1.009, 1.003, 1.0], 3.98)
    report = prometheus_watch.class_report(interval, key, target, SETUP, None)
    assert report.status == "ok", report.message
    assert report.p is not None and report.p > 0.95 and report.k == 4
    assert report.message == "ok; " + prometheus_watch.HELD.format(0.009)  # said, so that a fault that lasts shows
    broken, (key, target) = _llamacpp_interval([1.5, 1.4, 1.3, 1.2], 3.0)
    report = prometheus_watch.class_report(broken, key, target, SETUP, None)
    assert report.status == "idle" and "exceed" in report.message, report.message
