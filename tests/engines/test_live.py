"""Every engine's LIVE format, as measure reads a live server of it: the counters of each engine's Prometheus text
read back to the counts that wrote them, and the whole batch sweep against a server that writes its counters,
streams and version the way each engine's source does (SGLang and TensorRT-LLM need GPUs: their formats are
cited beside each rule in their live.py; vLLM and llama.cpp also run live in tests/test_measure_*live.py)."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import numpy as np
import pytest

from app.model import engines
from app.model.engines.base import LiveFormat
from app.model.engines.live import LiveReadError
from app.service.clients.measure import Sweep
from app.service.measure_jobs import batch_report
from tests.samples import engine_reports

REGISTRY = {adapter.NAME: adapter.LIVE for adapter in engines.REGISTRY}
SAMPLES = {
    "vllm": engine_reports.vllm_metrics,
    "sglang": engine_reports.sglang_metrics,
    "trtllm": engine_reports.trtllm_metrics,
    "llamacpp": engine_reports.llamacpp_metrics,
}


@pytest.mark.parametrize("engine", sorted(REGISTRY))
def test_each_engine_says_how_it_is_measured_and_cites_where(engine: str) -> None:
    form = REGISTRY[engine]
    assert form.engine == engine and engines.adapter(engine).LIVE is form
    assert form.metrics_path.startswith("/") and form.marker and form.cite()
    assert all(" @ " in line or " as of " in line for line in form.cite())


@pytest.mark.parametrize("engine", sorted(SAMPLES))
def test_the_counters_read_back_to_the_drafts_that_wrote_them(engine: str) -> None:
    p, k, cycles, seed = 0.7, 3, 4_000, 11
    draws = engine_reports.sample_accepted(p, k, cycles, seed)
    counts = REGISTRY[engine].counts(SAMPLES[engine](p, k, cycles, seed, 1))
    assert counts is not None and counts.drafts == cycles and counts.draft_tokens == cycles * k
    assert counts.accepted == int(draws.sum())
    if engine != "sglang":  # SGLang counts no positions
        assert counts.per_position == tuple(int(np.sum(draws > position)) for position in range(k))
    assert REGISTRY[engine].k_of(SAMPLES[engine](p, k, cycles, seed, 1), counts) == k


@pytest.mark.parametrize(("engine", "other"), [("vllm", "sglang"), ("sglang", "trtllm"), ("trtllm", "vllm")])
def test_another_engines_scrape_is_not_read_as_this_ones(engine: str, other: str) -> None:
    with pytest.raises(LiveReadError, match=f"no {REGISTRY[engine].marker}"):
        REGISTRY[engine].counts(SAMPLES[other](0.7, 3, 10, 1, 1))


def test_tensorrt_llm_says_it_speculates_and_its_k_before_it_has_drafted() -> None:
    info = (
        'trtllm_speculative_config_info{model_name="m",engine_type="trtllm",spec_enabled="true",'
        'spec_method="Eagle3",spec_num_tokens="4",spec_draft_model="d"} 1.0\n'
    )
    form = REGISTRY["trtllm"]
    counts = form.counts(info)
    assert counts is not None and (counts.drafts, counts.per_position) == (0, ()) and form.k_of(info, counts) == 4
    plain = 'trtllm_model_config_info{model_name="m",engine_type="trtllm"} 1.0\n'
    assert form.counts(plain) is None


# ---------------------------------------------------------------------------------------------------------------
# A server that answers as each engine's source says: its Prometheus text, its OpenAI stream, its version


PATTERN = (1, 2)  # accepted draft tokens of successive verifications
# a plain step's seconds (a verification takes 1.5 times as long): long beside a busy machine's scheduling jitter,
# which at 2 ms a step once read a 1.67x engine as 0.81x
STEP_S = 0.02
K = 3


@dataclass
class Engine:
    """One fake server's state: what it counted, as its engine counts it."""

    form: LiveFormat
    speculative: bool
    drafts: int = 0
    accepted_at: list[int] = field(default_factory=lambda: [0] * K)
    generated: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def exposition(self) -> str:
        name = self.form.engine
        lines = []
        if name == "vllm":
            lines.append('vllm:num_requests_running{model_name="m",engine="0"} 0')
            if self.speculative:  # from start-up, one per-position series per position up to k
                base = 'model_name="m",engine="0"'
                lines += [
                    f"vllm:spec_decode_num_drafts_total{{{base}}} {self.drafts}",
                    f"vllm:spec_decode_num_draft_tokens_total{{{base}}} {self.drafts * K}",
                    f"vllm:spec_decode_num_accepted_tokens_total{{{base}}} {sum(self.accepted_at)}",
                ]
                lines += [
                    f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{base},position="{i}"}} {value}'
                    for i, value in enumerate(self.accepted_at)
                ]
        elif name == "sglang":
            lines.append('sglang:num_running_reqs{model_name="m"} 0')
            if self.generated:  # a labelled counter appears with its first increment, when a request finishes
                lines.append(f'sglang:generation_tokens_total{{model_name="m",is_streaming="true"}} {self.generated}')
            if self.speculative:
                lines.append(f'sglang:spec_num_steps{{model_name="m"}} {K}')
                if self.drafts:
                    lines.append(f'sglang:spec_verify_calls_total{{model_name="m"}} {self.drafts}')
        elif name == "trtllm":
            base = 'model_name="m",engine_type="trtllm"'
            lines.append(f"trtllm_model_config_info{{{base}}} 1.0")
            if self.speculative:
                lines.append(
                    f'trtllm_speculative_config_info{{{base},spec_enabled="true",spec_method="Eagle3",'
                    f'spec_num_tokens="{K}",spec_draft_model="d"}} 1.0'
                )
                if self.drafts:  # request-level, once a drafted request has finished
                    for i, accepted in enumerate(self.accepted_at):
                        where = f'{base},token_position="{i}"'
                        lines.append(f"trtllm_spec_decode_drafted_tokens_total{{{where}}} {self.drafts}")
                        lines.append(f"trtllm_spec_decode_accepted_tokens_total{{{where}}} {accepted}")
        return "\n".join(lines) + "\n"

    def decode(self, tokens: int) -> Iterator[tuple[int, float]]:
        """(tokens in the chunk, seconds before it): the first from the prompt's pass, then one chunk per step."""
        yield 1, STEP_S
        left, index, drafts, accepted = tokens - 1, 0, 0, [0] * K
        while left > 0:
            if self.speculative:
                taken = min(PATTERN[index % len(PATTERN)], left - 1)
                index += 1
                drafts += 1
                for position in range(taken):
                    accepted[position] += 1
                step = taken + 1
            else:
                step = 1
            left -= step
            yield step, STEP_S * 1.5 if self.speculative else STEP_S
        with self.lock:  # counted when the request finishes, as SGLang and TensorRT-LLM do
            self.drafts += drafts
            self.accepted_at = [a + b for a, b in zip(self.accepted_at, accepted, strict=True)]
            self.generated += tokens


def cycles_and_accepted(tokens: int) -> tuple[int, int]:
    left, index, drafts, accepted = tokens - 1, 0, 0, 0
    while left > 0:
        taken = min(PATTERN[index % len(PATTERN)], left - 1)
        index, drafts, accepted, left = index + 1, drafts + 1, accepted + taken, left - taken - 1
    return drafts, accepted


@contextlib.contextmanager
def serving(engine: Engine) -> Iterator[str]:
    form = engine.form

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, b"")
            elif self.path == form.metrics_path:
                self._send(200, engine.exposition().encode(), "text/plain; version=0.0.4")
            elif self.path == "/v1/models":
                self._send(200, json.dumps({"object": "list", "data": [{"id": "m", "object": "model"}]}).encode())
            elif form.version_path is not None and self.path == form.version_path:
                self._send(200, json.dumps({"version": f"{form.engine}-9.9"}).encode())
            else:
                self._send(404, b'{"detail":"Not Found"}')

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            # trtllm-serve's CompletionRequest forbids fields it does not declare (tensorrt_llm/serve/
            # openai_protocol.py @ 050f80def8df); these are some it declares
            declared = {"model", "prompt", "max_tokens", "temperature", "ignore_eos", "stream", "stream_options"}
            if form.engine == "trtllm" and set(body) - declared:
                self._send(400, json.dumps({"error": f"extra fields not permitted: {set(body) - declared}"}).encode())
                return
            if self.path != "/v1/completions" or not body.get("stream") or body.get("model") != "m":
                self._send(400, b'{"error":"unexpected request"}')
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()

            def chunk(data: str) -> None:
                payload = f"data: {data}\n\n".encode()
                self.wfile.write(f"{len(payload):x}\r\n".encode() + payload + b"\r\n")
                self.wfile.flush()

            tokens = int(body["max_tokens"])
            for count, wait in engine.decode(tokens):
                time.sleep(wait)
                chunk(json.dumps({"choices": [{"index": 0, "text": " a" * count}]}))
            chunk(json.dumps({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": tokens}}))
            chunk("[DONE]")
            self.wfile.write(b"0\r\n\r\n")

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("engine", sorted(name for name, form in REGISTRY.items() if not form.native))
def test_a_batch_sweep_reads_each_engine_as_it_writes(engine: str) -> None:
    form = REGISTRY[engine]
    plain, spec = Engine(form, speculative=False), Engine(form, speculative=True)
    n_predict, batches = 16, (1, 2)
    with serving(plain) as plain_url, serving(spec) as spec_url, httpx.Client() as client:
        run = Sweep(client, [plain_url, spec_url], ["a prompt"], n_predict, 1, 1_000, 60.0, batches=batches).run()
    report, analysis, failure = batch_report(run, batches, {"prompts": 1, "n_predict": n_predict, "repeats": 1})
    assert failure is None and analysis is not None, failure
    servers = {server.url: server for server in report.servers}
    assert servers[spec_url].engine == servers[plain_url].engine == engine
    assert (servers[plain_url].k, servers[spec_url].k) == (0, K)
    if form.version_path is not None:
        assert servers[spec_url].version == f"{engine}-9.9"
    drafts, accepted = cycles_and_accepted(n_predict)
    for cell in analysis.cells:
        if cell.k == K:  # the window's counts are exactly what the engine counted for the cell's requests
            assert (cell.drafts, cell.accepted) == (cell.batch * drafts, cell.batch * accepted), cell
            assert cell.measured_speedup is not None and cell.measured_speedup > 1.0
        else:
            assert cell.drafts == 0
    named = [note for note in report.notes if "do not name the drafter" in note]
    assert bool(named) == (not form.drafter_named)


def test_a_server_of_no_engine_measure_drives_is_named_with_what_was_looked_for() -> None:
    class Nothing(Engine):
        def exposition(self) -> str:
            return "process_cpu_seconds_total 1\n"

    with serving(Nothing(REGISTRY["vllm"], False)) as url, httpx.Client() as client:
        sweep = Sweep(client, [url, url + "/x"], ["a"], 8, 1, 100, 30.0, batches=(1,))
        with pytest.raises(Exception, match="no llama-server") as raised:
            sweep.probe(timeout=3.0)
    message = str(raised.value)
    for form in REGISTRY.values():
        if not form.native:
            assert f"{form.marker}* at {form.metrics_path}" in message


def test_an_engine_named_is_the_only_one_looked_for() -> None:
    sglang = REGISTRY["sglang"]
    with serving(Engine(sglang, False)) as plain, serving(Engine(sglang, True)) as spec, httpx.Client() as client:
        named = Sweep(client, [plain, spec], ["a"], 8, 1, 100, 30.0, engine="sglang", batches=(1,)).probe(3.0)
        assert [server.engine for server in named] == ["sglang", "sglang"]
        wrong = Sweep(client, [plain, spec], ["a"], 8, 1, 100, 30.0, engine="trtllm", batches=(1,))
        with pytest.raises(Exception, match=r"not the engine named: looked for trtllm_\* at /prometheus/metrics"):
            wrong.probe(3.0)
