"""`specdec-lab calibrate --from`, `config`: the same numbers as the API, from a file or a URL on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli import main
from tests.samples import engine_reports


@pytest.fixture
def report_url() -> Iterator[str]:
    text = engine_reports.example_report("llamacpp-log", 0.7, 5, 5000, 3).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/log"
    server.shutdown()
    server.server_close()


def test_calibrate_from_a_file_matches_the_api(
    tmp_path: Path, client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    text = engine_reports.example_report("vllm-metrics", 0.8, 4, 5000, 2, classes=2)
    path = tmp_path / "metrics.txt"
    path.write_text(text)
    assert main(["calibrate", "--from", str(path), "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    api = client.post("/api/v1/calibrate", content=text).json()
    assert body["p"] == api["p"] and body["p_low"] == api["p_low"] and len(body["classes"]) == 2
    assert main(["calibrate", "--from", str(path)]) == 0
    out = capsys.readouterr().out
    assert "model_name=model-0" in out and "[0." in out and "vLLM" in out


def test_calibrate_from_a_url_fetched_by_the_cli(report_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--from", report_url, "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["engine"] == "llamacpp" and body["p_low"] <= 0.7 <= body["p_high"]


def test_calibrate_from_reports_bad_input_plainly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("nothing to see\n")
    assert main(["calibrate", "--from", str(path)]) == 2
    assert "unknown format" in capsys.readouterr().err
    assert main(["calibrate", "--from", str(tmp_path / "missing.txt")]) == 2
    assert main(["calibrate", "--rate", "0.5", "--k", "4"]) == 0  # the old way still works


def test_draft_lengths_out_of_range_are_refused_by_name_in_the_cli_and_the_api(
    tmp_path: Path, client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    text = engine_reports.example_report("vllm-metrics", 0.8, 4, 5000, 2)
    path = tmp_path / "metrics.txt"
    path.write_text(text)
    assert main(["calibrate", "--from", str(path), "--draft-lengths", "4,65"]) == 2
    assert "--draft-lengths: each must be 1 to 64; got '4,65'" in capsys.readouterr().err
    response = client.post("/api/v1/calibrate", content=text, params={"draft_lengths": "4,65"})
    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"][-1] == "draft_lengths"
    assert "each must be 1 to 64" in response.json()["detail"][0]["msg"]
    assert main(["calibrate", "--from", str(path), "--draft-lengths", "4,2", "--format", "json"]) == 0


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm", "llamacpp"])
def test_config_command_matches_the_api(engine: str, client: TestClient, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--engine", engine, "--model", "dense-70b", "--p", "0.75", "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    api = client.get("/api/v1/engine-config", params={"engine": engine, "model": "dense-70b", "p": 0.75}).json()
    assert body["config"] == api["config"] and body["max_batch_that_fits"] == 44
    assert main(["config", "--engine", engine, "--model", "dense-70b", "--p", "0.75"]) == 0
    assert "44 sequences fit" in capsys.readouterr().out


def test_config_command_takes_data_parallel_ranks_as_the_api_does(
    client: TestClient, capsys: pytest.CaptureFixture[str]
) -> None:
    # vllm/config/vllm.py @ 000fc94b754f _maybe_disable_dynamic_sd_for_data_parallel: above one rank vLLM drops
    # num_speculative_tokens_per_batch_size, so the config holds the k of the operating batch alone
    given = {"engine": "vllm", "model": "dense-70b", "p": 0.75, "draft_path": "org/d", "batch": 8}
    argv = ["config", "--engine", "vllm", "--model", "dense-70b", "--p", "0.75", "--draft-path", "org/d"]
    argv += ["--batch", "8", "--data-parallel", "2", "--format", "json"]
    assert main(argv) == 0
    body = json.loads(capsys.readouterr().out)
    api = client.get("/api/v1/engine-config", params={**given, "data_parallel": 2}).json()
    assert body["config"] == api["config"] and body["flags"] == api["flags"]
    assert "num_speculative_tokens_per_batch_size" not in body["config"]
    assert body["flags"][body["flags"].index("--data-parallel-size") + 1] == "2"
    single = client.get("/api/v1/engine-config", params=given).json()
    assert "num_speculative_tokens_per_batch_size" in single["config"]
    with pytest.raises(SystemExit) as refused:
        main([*argv[:-4], "--data-parallel", "0"])
    assert refused.value.code == 2
    error = capsys.readouterr().err
    assert "--data-parallel" in error and "1 to 64" in error


def test_config_from_a_report_calibrates_and_configures_in_one_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "metrics.txt"
    report.write_text(engine_reports.example_report("vllm-metrics", 0.75, 4, 4000, 5))
    arguments = ["config", "--engine", "vllm", "--from", str(report), "--draft-path", "org/draft", "--format", "json"]
    assert main(arguments) == 0
    written = capsys.readouterr()
    body = json.loads(written.out)
    assert 0.72 < body["p"] < 0.78 and "measured profile up to k = 4" in body["acceptance_model"]
    assert written.err.startswith("p = 0.7") and "profile measured up to k = 4" in written.err  # where p came from
    assert main([*arguments[:-2], "--from", str(tmp_path / "missing.txt")]) == 2
    assert "config: error: cannot read" in capsys.readouterr().err
    assert body["config"]["model"] == "org/draft"
