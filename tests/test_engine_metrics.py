"""Every engine's report, made from seeded i.i.d. acceptance, recovers p within its interval; bad reports get a 422."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.model.counters.calibration import CalibrationError
from app.model.live import engine_metrics as em
from app.web.core.config import Settings
from app.web.main import create_app
from tests.samples import engine_reports

CALIBRATE = "/api/v1/calibrate"
ALL_FORMATS = sorted(em.FORMATS)


@pytest.mark.parametrize("format_name", ALL_FORMATS)
@pytest.mark.parametrize(("p", "k", "seed"), [(0.55, 3, 1), (0.8, 5, 2), (0.9, 7, 3)])
def test_each_format_recovers_a_known_p_within_its_interval(
    client: TestClient, format_name: str, p: float, k: int, seed: int
) -> None:
    cycles = 6000
    text = engine_reports.example_report(format_name, p, k, cycles, seed)
    params: dict[str, float | int] = {}
    if format_name in ("vllm-metrics-v0", "llamacpp-timings"):
        params["k"] = k  # the V0 counters hold no drafts counter
    if format_name.startswith("sglang"):
        params["cycles"] = cycles  # a mean alone has no sample size
    response = client.post(CALIBRATE, content=text, params=params)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["format"] == format_name and body["engine"] == em.FORMAT_ENGINE[format_name]
    assert body["k"] == k
    assert body["p_low"] <= p <= body["p_high"], (body["p_low"], body["p"], body["p_high"])
    assert body["p_high"] - body["p_low"] < 0.06
    assert abs(body["p"] - p) < 0.03


@pytest.mark.parametrize("format_name", ["trtllm-iteration-stats", "vllm-metrics", "llamacpp-log"])
def test_intervals_cover_the_truth_about_95_percent_of_the_time(format_name: str) -> None:
    covered = 0
    runs = 200
    for seed in range(runs):
        text = engine_reports.example_report(format_name, 0.7, 4, 400, 1000 + seed)
        _, measurements = em.read_measurements(text)
        item = em.calibrate_measurement(measurements[0], 0.1, 8)
        assert item.interval.low is not None and item.interval.high is not None
        covered += item.interval.low <= 0.7 <= item.interval.high
    assert 0.90 * runs <= covered <= 0.99 * runs


def test_vllm_per_position_counts_give_the_independence_test(client: TestClient) -> None:
    body = client.post(CALIBRATE, content=engine_reports.example_report("vllm-metrics", 0.75, 4, 20_000, 9)).json()
    departure = body["calibration"]["departure"]
    assert departure["degrees_of_freedom"] == 3 and departure["consistent_with_iid"] is True
    assert [row["position"] for row in body["calibration"]["positions"]] == [1, 2, 3, 4]
    assert body["batch"] == 8.0  # vllm:num_requests_running


def test_several_model_names_are_calibrated_each_on_its_own(client: TestClient) -> None:
    first = engine_reports.example_report("vllm-metrics", 0.6, 4, 8000, 13)
    second = engine_reports.example_report("vllm-metrics", 0.9, 4, 8000, 12).replace("model-0", "model-9")
    body = client.post(CALIBRATE, content=first + second).json()
    by_label = {item["label"]: item for item in body["classes"]}
    assert set(by_label) == {"model-0", "model-9"}
    assert by_label["model-0"]["p_low"] <= 0.6 <= by_label["model-0"]["p_high"]
    assert by_label["model-9"]["p_low"] <= 0.9 <= by_label["model-9"]["p_high"]
    assert body["label"] is None and by_label["model-0"]["p"] < body["p"] < by_label["model-9"]["p"]


def test_a_label_the_user_names_splits_the_classes(client: TestClient) -> None:
    text = engine_reports.example_report("vllm-metrics", 0.7, 3, 4000, 5)
    other = engine_reports.example_report("vllm-metrics", 0.4, 3, 4000, 6).replace('engine="0"', 'engine="1"')
    body = client.post(CALIBRATE, content=text + other, params={"label": "engine"}).json()
    assert [item["label"] for item in body["classes"]] == ["0", "1"]
    assert body["classes"][1]["p_low"] <= 0.4 <= body["classes"][1]["p_high"]


def test_sglang_k_is_read_from_rate_and_length_or_from_server_args(client: TestClient) -> None:
    current = engine_reports.example_report("sglang-metrics", 0.8, 6, 3000, 4)
    older = "\n".join(line for line in current.splitlines() if "spec_accept_" in line) + "\n"
    body = client.post(CALIBRATE, content=older).json()
    assert body["k"] == 6 and body["p_low"] is None and "cycles" in body["interval_method"]
    body = client.post(CALIBRATE, content=current).json()  # spec_num_steps and spec_verify_calls_total (2026-05)
    assert body["k"] == 6 and body["p_low"] is not None and body["engine_version"] == "2026-05"
    info = engine_reports.example_report("sglang-server-info", 0.8, 6, 3000, 4)
    body = client.post(CALIBRATE, content=info, headers={"content-type": "application/json"}).json()
    assert body["k"] == 6 and body["k_source"] == "speculative_num_steps"


def test_trtllm_python_binding_names_and_json_lines_are_read() -> None:
    iterations = json.loads(engine_reports.example_report("trtllm-iteration-stats", 0.7, 4, 800, 8))
    renamed = []
    for item in iterations:
        spec = item["specDecodingStats"]
        renamed.append(
            {
                "spec_decoding_stats": {
                    "num_draft_tokens": spec["numDraftTokens"],
                    "num_accepted_tokens": spec["numAcceptedTokens"],
                    "num_requests_with_draft_tokens": spec["numRequestsWithDraftTokens"],
                    "acceptance_length": spec["acceptanceLength"],
                }
            }
        )
    lines = "\n".join(json.dumps(item) for item in renamed)
    format_name, measurements = em.read_measurements(lines)
    assert format_name == "trtllm-iteration-stats" and measurements[0].k == 4
    assert measurements[0].drafts == 800


@pytest.mark.parametrize(
    ("body", "params", "words"),
    [
        ("", {}, "empty"),
        ("just some words", {}, "unknown format"),
        ("# TYPE up gauge\nup 1\n", {}, "without speculative-decoding series"),
        ('{"hello": 1}', {}, "none of"),
        ("vllm:spec_decode_num_drafts_total 10\nvllm:spec_decode_num_draft_tokens_total 40\n", {}, "missing counter"),
        (
            "vllm:spec_decode_num_drafts_total 10\nvllm:spec_decode_num_draft_tokens_total 40\n"
            "vllm:spec_decode_num_accepted_tokens_total 50\n",
            {},
            "exceed",
        ),
        (
            "vllm:spec_decode_num_drafts_total 10\nvllm:spec_decode_num_draft_tokens_total 20\n"
            "vllm:spec_decode_num_accepted_tokens_total 9\n"
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 3\n'
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 6\n',
            {},
            "position 1",
        ),
        (
            "vllm:spec_decode_num_drafts_total 10\nvllm:spec_decode_num_draft_tokens_total 20\n"
            "vllm:spec_decode_num_accepted_tokens_total 9\n"
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 6\n'
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 3\n',
            {"k": 3},
            "k = 3 was given",
        ),
        ("vllm:spec_decode_num_drafts_total -4\n", {}, "negative"),
        (
            '[{"specDecodingStats": {"numDraftTokens": 8, "numAcceptedTokens": 9, "numRequestsWithDraftTokens": 2}}]',
            {},
            "exceed",
        ),
        ("draft acceptance rate = 0.5 (  10 accepted /   20 generated)\n", {}, "give k"),
        ('sglang:spec_accept_length{model_name="m"} 0.5\n', {"k": 3}, ">= 1"),
        ("n_draft   = 99999999\nn_drafted = 10\nn_accept  = 5\n", {}, "outside 1..64"),
        (
            '[{"specDecodingStats": {"numDraftTokens": 1e12, "numAcceptedTokens": 9, '
            '"numRequestsWithDraftTokens": 1}}]',
            {},
            "outside 1..64",
        ),
        (
            "vllm:spec_decode_num_drafts_total 1\nvllm:spec_decode_num_draft_tokens_total 1e9\n"
            "vllm:spec_decode_num_accepted_tokens_total 9\n",
            {},
            "more than 64",
        ),
        (
            "vllm:spec_decode_num_drafts_total 0\nvllm:spec_decode_num_draft_tokens_total 0\n"
            "vllm:spec_decode_num_accepted_tokens_total 0\n",
            {},
            "has not speculated",
        ),
    ],
)
def test_malformed_reports_get_a_422_saying_what_is_wrong(
    client: TestClient, body: str, params: dict[str, int], words: str
) -> None:
    response = client.post(CALIBRATE, content=body, params=params)
    assert response.status_code == 422, response.text
    assert words in response.json()["detail"][0]["msg"]


def test_oversized_and_non_utf8_bodies_are_refused(client: TestClient) -> None:
    assert client.post(CALIBRATE, content=b"\xff\xfe").status_code == 422
    big = client.post(CALIBRATE, content="#" * (em.MAX_EXPOSITION_BYTES + 10))
    assert big.status_code == 422 and "at most" in big.json()["detail"][0]["msg"]


def test_the_model_layer_raises_a_calibration_error_not_a_crash() -> None:
    with pytest.raises(CalibrationError, match="unknown format"):
        em.read_measurements("\x00\x01 binary?")


@pytest.fixture
def local_report() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 serving a vLLM scrape."""
    text = engine_reports.example_report("vllm-metrics", 0.65, 4, 5000, 21).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/plain")
            self.send_header("content-length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/metrics"
    server.shutdown()
    server.server_close()


def test_the_server_fetches_no_url_unless_allowed(client: TestClient, local_report: str) -> None:
    refused = client.post(CALIBRATE, params={"url": local_report})
    assert refused.status_code == 422 and "SPECDEC_ALLOW_FETCH" in refused.json()["detail"][0]["msg"]
    with TestClient(create_app(Settings(allow_fetch=True))) as allowed:
        body = allowed.post(CALIBRATE, params={"url": local_report}).json()
        assert body["p_low"] <= 0.65 <= body["p_high"]
        scheme = allowed.post(CALIBRATE, params={"url": "file:///etc/passwd"})
        assert scheme.status_code == 422 and "http and https" in scheme.json()["detail"][0]["msg"]
        both = allowed.post(CALIBRATE, params={"url": local_report}, content="vllm:x 1\n")
        assert both.status_code == 422 and "not both" in both.json()["detail"][0]["msg"]


def test_a_baseline_scrape_is_subtracted_and_a_restart_is_a_422(client: TestClient) -> None:
    warm = engine_reports.example_report("vllm-metrics", 0.3, 4, 2000, 30)
    later_draws = engine_reports.example_report("vllm-metrics", 0.8, 4, 6000, 31)
    # the later scrape holds the warm-up counts plus 6000 drafts at p = 0.8
    _, before = em.read_measurements(warm)
    _, extra = em.read_measurements(later_draws)
    lines = []
    for name, value in (
        ("num_drafts", before[0].drafts + extra[0].drafts),
        ("num_draft_tokens", before[0].draft_tokens + extra[0].draft_tokens),
        ("num_accepted_tokens", before[0].accepted + extra[0].accepted),
    ):
        lines.append(f'vllm:spec_decode_{name}_total{{model_name="model-0"}} {value}')
    for i in range(4):
        total = before[0].per_position[i] + extra[0].per_position[i]
        lines.append(
            f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{model_name="model-0",position="{i}"}} {total}'
        )
    later = "\n".join(lines) + "\n"
    body = client.post(CALIBRATE, json={"report": later, "baseline": warm}).json()
    assert body["cycles"] == 6000 and body["p_low"] <= 0.8 <= body["p_high"]
    restarted = client.post(CALIBRATE, json={"report": warm, "baseline": later})
    assert restarted.status_code == 422 and "went down" in restarted.json()["detail"][0]["msg"]
    assert restarted.json()["detail"][0]["kind"] == "counter_reset"


def test_series_of_several_engines_are_summed_per_model(client: TestClient) -> None:
    from app.model.counters import calibration

    text = calibration.example_exposition(0.72, 5, drafts=12_000, seed=20, engines=4)
    body = client.post(CALIBRATE, content=text).json()
    assert body["calibration"]["counters"]["series"] == 4 and body["cycles"] == 12_000
    assert body["p_low"] <= 0.72 <= body["p_high"] and body["label"] == "target-model"


CAPTURED_REJECTED = Path(__file__).parent / "engines" / "captured" / "llamacpp-b11312-rejected-lv4.log"


def _at_lv3(text: str) -> str:
    """The real -lv 4 log as -lv 3 prints it: the per-request 'draft acceptance' lines, no per-position lines."""
    return "\n".join(line for line in text.splitlines() if "acc per pos" not in line and "statistics" not in line)


def test_a_log_of_mixed_draft_lengths_without_positions_gets_an_interval_over_requests() -> None:
    """A real b11312 log whose drafts have several lengths, read at -lv 3: p comes with an interval over its
    requests, which narrows as the requests grow and always holds p."""
    lines = _at_lv3(CAPTURED_REJECTED.read_text()).splitlines()
    acceptance = [line for line in lines if "draft acceptance" in line]
    assert len(acceptance) == 2
    widths = []
    for copies in (1, 4):
        requests = [line.replace("| task ", f"| task {copy}0") for copy in range(copies) for line in acceptance]
        text = "\n".join([line for line in lines if "draft acceptance" not in line] + requests)
        top = em.calibrate_report(text, 0.05, 8, k=4).top
        low, high = top.interval.low, top.interval.high
        assert low is not None and high is not None, top.interval.method
        assert low <= top.result.acceptance <= high and top.interval.method.startswith(f"over the {2 * copies}")
        widths.append(high - low)
    assert widths[1] < widths[0]


@pytest.mark.parametrize(
    ("scrape", "name"),
    [
        (
            "llamacpp:spec_decode_num_drafts_total 0\nllamacpp:spec_decode_num_draft_tokens_total 0\n"
            "llamacpp:spec_decode_num_accepted_tokens_total 0\n"
            'llamacpp:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 0\n',
            "llamacpp:spec_decode_num_drafts_total",
        ),
        (
            "sglang:spec_verify_calls_total 0\nsglang:spec_num_steps 3\nsglang:spec_accept_length 0\n"
            "sglang:generation_tokens_total 0\n",
            "sglang:spec_accept_length",
        ),
        (
            'vllm:spec_decode_num_drafts_total{model_name="m"} 0\n'
            'vllm:spec_decode_num_draft_tokens_total{model_name="m"} 0\n'
            'vllm:spec_decode_num_accepted_tokens_total{model_name="m"} 0\n',
            "vllm:spec_decode_num_drafts_total",
        ),
    ],
)
def test_a_scrape_with_no_drafts_names_the_engines_own_series(scrape: str, name: str) -> None:
    with pytest.raises(Exception, match="not speculated yet") as raised:
        em.calibrate_report(scrape, 0.05, 8, k=3)
    assert str(raised.value).startswith(name) or f" {name} " in str(raised.value)
    assert "vllm" not in str(raised.value) or name.startswith("vllm")


def test_a_best_k_that_p_s_interval_does_not_support_says_so(client: TestClient) -> None:
    """Three drafts: p's interval reaches low enough that the best k at p gives far less than the k best there;
    POST /api/v1/calibrate (and `calibrate --from`, which prints its notes) says so. Thousands of drafts do not."""
    few = engine_reports.example_report("vllm-metrics", 0.95, 4, 3, 5)
    body = client.post(CALIBRATE, content=few, params={"c": 0.15}).json()
    spread = [note for note in body["notes"] if note.startswith("p's 95% interval is too wide to choose k by")]
    assert len(spread) == 1 and f"before acting on k = {body['calibration']['best_k']}" in spread[0], body["notes"]
    assert "(3 so far)" in spread[0]
    many = engine_reports.example_report("vllm-metrics", 0.95, 4, 20_000, 5)
    body = client.post(CALIBRATE, content=many, params={"c": 0.15}).json()
    assert not [note for note in body["notes"] if "too wide to choose k" in note], body["notes"]


def test_the_note_on_a_wide_interval_names_speculation_off_in_words() -> None:
    """At p = 0.4 and c = 0.5 the best k is off; the interval's high end would speculate."""
    from app.model.arithmetic.closed_form import free_verification
    from app.model.counters import calibration

    result = calibration.calibrate_from_length(1.4, 1, 0.5, 8)  # p = 0.4
    assert result.best_k == 0
    note = em.best_k_spread(result, em.Interval(0.3, 0.95, 0.95, "given"), 8, free_verification)
    assert "k = 0" not in note.replace("(k = 0)", "") and "before acting on speculation off (k = 0)" in note, note
    assert em.best_k_spread(result, em.Interval(None, None, 0.95, "none"), 8, free_verification) == ""
