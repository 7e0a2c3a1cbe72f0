"""`specdec-lab measure` against the real llama-server: a draft model and n-gram lookup, one server per k (the
n-gram sweep and the command once per llama.cpp build `make engine` makes).

Each test starts a server without speculation (k = 0) and one per draft length, all at -lv 4 so that the
engine logs its own draft time, runs the sweep and checks what it reports against the engine's counters.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import httpx
import pytest

from app.cli import main
from app.model.counters.counts import SpecCounts
from app.model.live.measure import Analysis, analyze
from app.model.live.step_fit import read_step_times
from app.service.clients.measure import Run, Sweep, parse_metrics
from tests.live_engine import NOVEL_PROMPT, REPEATING_PROMPT, Engine, Server, engine, llama_server

KS = (1, 2, 4)
N_PREDICT = 32
# -lv 4: the statistics line with dur(b,g,a) is a trace-level line.  One thread: this build's OpenMP threads
# spin at their barriers, so two threads on two shared cores slow down a hundredfold whenever anything else
# runs; one thread loses about a fifth of the speed and degrades in proportion.
FLAGS = ["-lv", "4", "--threads", "1"]


@contextlib.contextmanager
def _servers(per_k: dict[int, list[str]]) -> Iterator[dict[int, Server]]:
    with contextlib.ExitStack() as stack:
        yield {k: stack.enter_context(llama_server([*arguments, *FLAGS])) for k, arguments in per_k.items()}


def _measure(servers: dict[int, Server], prompts: Sequence[str]) -> tuple[Run, dict[int, SpecCounts]]:
    """The sweep, with each server's own counters scraped when the measured requests start and after they end."""
    started: dict[int, SpecCounts] = {}

    def on_progress(done: int, total: int, label: str) -> None:
        if not started:  # the first call comes after the warm-up requests, before the first measured one
            started.update({k: parse_metrics(server.metrics()) for k, server in servers.items()})

    with httpx.Client() as client:
        run = Sweep(
            client,
            [server.url for server in servers.values()],
            prompts,
            n_predict=N_PREDICT,
            repeats=1,
            max_requests=100,
            timeout=120.0,
            logs=[str(server.log_path) for server in servers.values()],
            expected_k=sorted(servers),
            progress=on_progress,
        ).run()
    deltas = {k: parse_metrics(server.metrics()).minus(started[k]) for k, server in servers.items()}
    return run, deltas


def _check(run: Run, deltas: dict[int, SpecCounts], analysis: Analysis, kind: str, prompts: int) -> None:
    assert {server.k: server.kind for server in run.servers} == {0: "plain", **{k: kind for k in KS}}
    plain = analysis.results[0]
    assert plain.k == 0 and plain.requests == prompts and plain.tokens == prompts * (N_PREDICT - 1)
    assert plain.ms_per_token > 0 and analysis.plain_ms_per_token == plain.ms_per_token
    assert deltas[0] == SpecCounts()
    for result in analysis.results[1:]:
        engine_counts = deltas[result.k]
        assert engine_counts.drafts > 0
        assert result.drafts == engine_counts.drafts and result.accepted == engine_counts.accepted
        assert result.tokens_per_verification == 1 + engine_counts.accepted / engine_counts.drafts
        assert len(result.profile) == result.k == len(engine_counts.per_position)
        assert result.profile == tuple(count / engine_counts.drafts for count in engine_counts.per_position)
        assert all(1 >= a >= b >= 0 for a, b in zip(result.profile, (*result.profile[1:], 0.0), strict=True))
        assert result.mean_draft_length is not None and 0 < result.mean_draft_length <= result.k
        assert result.c is not None and result.c >= 0
        assert result.v is not None and result.v > 0
        assert result.cycle_cost == pytest.approx(result.mean_draft_length * result.c + result.v)
        assert result.measured_speedup > 0 and result.predicted_speedup is not None


def test_a_draft_model_sweep_reports_profile_costs_and_speedup_per_k() -> None:
    built = engine()
    draft = ["--spec-type", "draft-simple", "-md", built.drafts["requantized"], "--spec-draft-p-min", "0"]
    prompts = [NOVEL_PROMPT, "Explain in plain words why the sky is blue."]
    with _servers({0: [], **{k: [*draft, "--spec-draft-n-max", str(k)] for k in KS}}) as servers:
        run, deltas = _measure(servers, prompts)
    analysis = analyze(run.samples)
    _check(run, deltas, analysis, "draft-simple", len(prompts))
    assert analysis.c is not None and 0.02 < analysis.c < 5.0  # a draft model pass costs something
    for result in analysis.results[1:]:
        assert result.c is not None and result.c > 0.02
        assert result.draft_share is not None and result.draft_share > 0.9  # a draft at nearly every step


def test_an_ngram_sweep_on_repeating_text_and_the_files_it_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], llama_build: Engine
) -> None:
    """On each llama.cpp build `make engine` makes: `measure` reads both the same way."""
    ngram = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1"]
    with _servers({0: [], **{k: [*ngram, "--spec-ngram-simple-size-m", str(k)] for k in KS}}) as servers:
        run, deltas = _measure(servers, [REPEATING_PROMPT])
        analysis = analyze(run.samples)
        _check(run, deltas, analysis, "ngram-simple", 1)
        assert analysis.c is not None and analysis.c < 0.05  # a lookup in the context: next to nothing
        four = analysis.results[3]
        assert four.tokens_per_verification is not None and four.tokens_per_verification > 2.5
        assert four.profile[0] > 0.8

        prompts = tmp_path / "prompts.txt"
        prompts.write_text(REPEATING_PROMPT + "\n")
        calibration, steps = tmp_path / "k4.prom", tmp_path / "steps.csv"
        logs = [argument for server in servers.values() for argument in ("--server-log", str(server.log_path))]
        arguments = [
            "measure",
            *(server.url for server in servers.values()),
            *("--prompts", str(prompts), "--k", "0,1,2,4", "--repeats", "1", "--n-predict", "24"),
            *("--format", "json", "--no-progress", *logs),
            *("--write-calibration", str(calibration), "--calibration-k", "4", "--write-step-fit", str(steps)),
        ]
        status = main(arguments)
    report = json.loads(capsys.readouterr().out)
    assert status == 0
    assert [item["k"] for item in report["results"]] == [0, 1, 2, 4]
    assert report["results"][0]["measured_speedup"] == 1.0
    assert parse_metrics(calibration.read_text()).per_position == tuple(report["samples"][3]["accepted_per_position"])
    assert main(["calibrate", "--from", str(calibration), "--format", "json"]) == 0
    calibrated = json.loads(capsys.readouterr().out)
    assert calibrated["k"] == 4 and 0.5 < calibrated["p"] <= 1.0
    name, rows = read_step_times(steps.read_text())
    assert name == "csv" and [row.tokens for row in rows] == [1, 2, 3, 5]


BATCHES = (1, 2, 4)
BATCH_K = 8
SLOTS = ["--parallel", "4"]


def test_a_batch_sweep_measures_every_cell_and_predicts_each_one_out_of_sample(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ngram = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1"]
    per_k = {0: SLOTS, BATCH_K: [*SLOTS, *ngram, "--spec-ngram-simple-size-m", str(BATCH_K)]}
    prompts = tmp_path / "prompts.txt"
    prompts.write_text(REPEATING_PROMPT + "\n")
    calibration, steps = tmp_path / "k8.prom", tmp_path / "steps.csv"
    with contextlib.ExitStack() as stack:
        servers = {k: stack.enter_context(llama_server(arguments)) for k, arguments in per_k.items()}
        before = {k: parse_metrics(server.metrics()) for k, server in servers.items()}
        arguments = [
            "measure",
            *(server.url for server in servers.values()),
            *("--batch", ",".join(map(str, BATCHES)), "--k", f"0,{BATCH_K}", "--prompts", str(prompts)),
            *("--repeats", "1", "--n-predict", "24", "--format", "json", "--no-progress"),
            *("--write-calibration", str(calibration), "--write-step-fit", str(steps)),
        ]
        status = main(arguments)
        after = {k: parse_metrics(server.metrics()) for k, server in servers.items()}
    report = json.loads(capsys.readouterr().out)
    assert status == 0, report["stopped"]
    cells = {(cell["k"], cell["batch"]): cell for cell in report["cells"]}
    assert set(cells) == {(k, batch) for k in (0, BATCH_K) for batch in BATCHES}
    # the cells' counts are the engine's own: what its counters moved by over the sweep, less the warm-up
    measured = [sample for sample in report["samples"] if sample["k"] == BATCH_K]
    engine_drafts = after[BATCH_K].minus(before[BATCH_K]).drafts
    assert 0 < sum(sample["drafts"] for sample in measured) <= engine_drafts
    for (k, batch), cell in cells.items():
        assert cell["requests"] == batch and cell["tokens"] == batch * (24 - 1)
        assert cell["step_ms"] > 0 and cell["throughput_tokens_s"] > 0
        assert (cell["measured_speedup_end_to_end"] or 0) > 0  # end to end, beside the decoding phase's
        if k == 0:
            assert cell["measured_speedup"] == 1.0 == cell["measured_speedup_end_to_end"] and cell["drafts"] == 0
            continue
        assert cell["drafts"] > 0 and len(cell["profile"]) == BATCH_K and cell["profile"][0] > 0.8
        assert cell["tokens_per_step"] > 2.5  # repeating text: most drafts accepted
        holdout, batch_holdout = cell["predicted_speedup_holdout"], cell["predicted_speedup_batch_holdout"]
        assert holdout is not None and 0.5 < holdout / cell["measured_speedup"] < 2.0, cell
        assert batch_holdout is not None and batch_holdout / cell["measured_speedup"] > 0.5, cell
        if batch == 1:  # the only one-token pass (plain decoding at batch 1) is left out with it: said, and priced
            # as a pass over several tokens, dearer than it is, which can only raise the predicted speedup
            assert list(cell["batch_holdout_kept"]) == ["multi_token_ms"], cell
        else:
            assert cell["batch_holdout_kept"] == {} and batch_holdout / cell["measured_speedup"] < 2.0, cell
    (crossover,) = report["crossover"]
    assert crossover["k"] == BATCH_K and set(crossover) >= {"crossover_batch_measured", "crossover_batch_predicted"}
    assert [row["batch"] for row in report["best_k_by_batch"]] == list(BATCHES)
    assert {error["kind"] for error in report["holdout_errors"]} == {"leave-one-out", "leave-one-batch-out"}
    assert report["step_cost"]["fitted"] == ["fixed_ms", "multi_token_ms", "per_sequence_ms", "per_extra_token_ms"]

    # the config for the measured schedule, for the measured server's drafter: the real llama-server takes it, with
    # the drafter's match length the server does not report (the note says so), and runs what it says (its slots,
    # the types it drafts with and the k its per-position counters show)
    config = report["engine_config"]
    assert config["engine"] == "llamacpp" and config["method"] == "ngram-simple", config
    paying = [row["batch"] for row in report["best_k_by_batch"] if row["measured"] == BATCH_K]
    assert config["batch"] == (paying[-1] if paying else BATCHES[-1]), config
    if paying:
        assert config["flags"][:2] == ["--spec-type", "ngram-simple"] and config["runs"][0] == BATCH_K, config
        parallel = int(config["flags"][config["flags"].index("--parallel") + 1])
        assert any("settings other than k" in note for note in config["notes"]), config
        with llama_server([*config["flags"], *ngram[2:]]) as written:
            answer = written.complete(REPEATING_PROMPT, 32)
            slots = httpx.get(f"{written.url}/slots", timeout=10.0).json()
            counted = parse_metrics(written.metrics())
        assert "ngram-simple" in str(answer["generation_settings"]["speculative.types"])  # type: ignore[index]
        assert len(slots) == parallel == config["batch"]
        assert len(counted.per_position) == BATCH_K and counted.drafts > 0
    else:  # n-gram lost at every batch here: no config, and the note says to run without speculation
        assert config["flags"] == [] and any("without speculation" in note for note in config["notes"]), config

    # what it wrote is read back by step-fit and calibrate
    name, rows = read_step_times(steps.read_text())
    assert name == "csv" and sorted(row.batch for row in rows) == sorted(BATCHES * 2)
    assert main(["step-fit", str(steps), "--format", "json"]) == 0
    fitted = json.loads(capsys.readouterr().out)
    assert fitted["step_cost"]["per_extra_token_ms"] > 0
    assert main(["calibrate", "--from", str(calibration), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["k"] == BATCH_K


def test_a_batch_larger_than_the_slots_is_refused_naming_the_server_and_the_batch(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with llama_server(["--parallel", "2", "--threads", "1"]) as server:
        status = main(["measure", server.url, "--batch", "1,4", "--no-progress"])
    error = capsys.readouterr().err
    assert status == 2
    assert f"{server.url} has 2 slots, fewer than batch 4" in error and "--parallel 4" in error


def test_a_batch_sweep_cut_short_writes_what_it_measured_and_says_where_it_stopped(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ngram = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1", "--spec-ngram-simple-size-m", "4"]
    with llama_server(SLOTS) as plain, llama_server([*SLOTS, *ngram]) as speculative:
        # the warm-up takes 2 + 2 x 4 requests and each round 2 x (1 + 2 + 4): the second round cannot finish
        status = main(
            [
                "measure",
                plain.url,
                speculative.url,
                *("--batch", "1,2,4", "--repeats", "2", "--max-requests", "30", "--n-predict", "8"),
                *("--format", "json", "--no-progress"),
            ]
        )
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert status == 1
    assert report["stopped"].startswith("--max-requests 30 reached before http://127.0.0.1:")
    assert "at batch" in report["stopped"] and "incomplete" in captured.err
    assert {(sample["k"], sample["batch"]) for sample in report["samples"]} >= {(0, 1), (0, 2), (0, 4)}
    assert len(report["cells"]) == 6  # the first round measured every cell; the second stopped part way


def test_this_llama_server_takes_no_per_request_draft_length(llama_build: Engine) -> None:
    """Why measure needs one server per k: a request's "speculative.n_max" is not honoured by either build (the
    drafts still reach the server's own length), so a sweep cannot change k per request.  Should a build honour
    it, this fails, and measure should set k per request on one server."""
    ngram = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1", "--spec-ngram-simple-size-m", "8"]
    with llama_server([*ngram, "--threads", "1"]) as server:
        before = parse_metrics(server.metrics())
        server.complete(REPEATING_PROMPT, 48, **{"speculative.n_max": 2})
        delta = parse_metrics(server.metrics()).minus(before)
    assert delta.drafts > 0 and len(delta.per_position) == 8
    assert max(position for position, count in enumerate(delta.per_position) if count) >= 2  # past n_max = 2
