"""Fitting efficiencies and overhead to measured step times recovers them, in every format read."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.cli import main
from app.model.cost.regimes import draft_step, target_step
from app.model.live.step_fit import fit_step_times, read_step_times
from app.service.regimes import SetupRequest, build_setup
from tests.samples.step_times import example_step_times

FIT = "/api/v1/step-fit"
# the terms a step fit recovers (the others 0: the fit's own family)
TRUE = {
    "bandwidth_efficiency": 0.55,
    "compute_efficiency": 0.4,
    "step_overhead_us": 120.0,
    "overhead_per_sequence_us": 0.0,
    "overhead_per_draft_step_us": None,  # a draft pass costs the same overhead as a target pass
}
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]


SETUP = build_setup(SetupRequest()).setup


def _truth() -> object:
    return replace(build_setup(SetupRequest()).setup, **TRUE)


def test_a_noiseless_csv_gives_back_its_parameters() -> None:
    setup = _truth()
    text = example_step_times(setup, BATCHES, [1, 2, 4, 8], noise=0.0, seed=0)  # type: ignore[arg-type]
    name, rows = read_step_times(text)
    fit = fit_step_times(build_setup(SetupRequest()).setup, name, rows)
    assert name == "csv" and len(rows) == 40
    assert fit.bandwidth_efficiency == pytest.approx(0.55, rel=0.02)
    assert fit.compute_efficiency == pytest.approx(0.4, rel=0.02)
    assert fit.overhead_us == pytest.approx(120.0, rel=0.05)
    assert fit.rms_relative_error < 0.01


def test_on_two_devices_what_the_all_reduces_carry_is_known_not_fitted() -> None:
    """Over a link (an H100 PCIe pair, 70B) the steps hold the all-reduces' payload: the fit takes it as known, so
    it gives back the same efficiencies and overhead, and the fitted setup, which prices the payload itself, gives
    back the measured steps instead of adding it twice."""
    pair = SetupRequest(hw="h100-pcie", model="dense-70b", devices=2)
    setup = replace(build_setup(pair).setup, **TRUE, allreduce_us=0.0, cycle_overhead_us=0.0)
    text = example_step_times(setup, BATCHES, [1, 2, 4, 8], noise=0.0, seed=0)  # type: ignore[arg-type]
    name, rows = read_step_times(text)
    fit = fit_step_times(build_setup(pair).setup, name, rows)
    assert fit.bandwidth_efficiency == pytest.approx(0.55, rel=0.02)
    assert fit.compute_efficiency == pytest.approx(0.4, rel=0.02)
    assert fit.overhead_us == pytest.approx(120.0, rel=0.05)
    for row in rows:
        again = float(target_step(fit.setup, row.batch, row.tokens).total_s) * 1e3
        assert again == pytest.approx(row.ms, rel=0.02)
    # the payload is a share of the step worth counting: at batch 512 and 8 tokens more than a tenth of it
    unlinked = replace(fit.setup, accelerator=replace(fit.setup.accelerator, link_gb_s=None))
    assert float(target_step(unlinked, 512, 8).total_s) < 0.9 * float(target_step(fit.setup, 512, 8).total_s)


def test_the_endpoint_reports_the_fit_error_and_the_fitted_schedule(client: TestClient) -> None:
    text = example_step_times(_truth(), BATCHES, [1, 3, 5], noise=0.03, seed=4)  # type: ignore[arg-type]
    body = client.post(FIT, content=text, params={"p": 0.8}).json()
    assert body["rows"] == 30 and 0.01 < body["rms_relative_error"] < 0.06
    assert body["bandwidth_efficiency"] == pytest.approx(0.55, rel=0.1)
    assert body["schedule"]["setup"]["bandwidth_efficiency"] == body["bandwidth_efficiency"]
    # the measured steps carry every fixed time: none of the defaults' other terms is added on top
    terms = ("overhead_per_sequence_us", "cycle_overhead_us", "cycle_overhead_per_sequence_us", "allreduce_us")
    assert [body["schedule"]["setup"][name] for name in terms] == [0.0, 0.0, 0.0, 0.0]
    assert body["schedule"]["setup"]["draft_step_overhead_us"] == body["overhead_us"]
    assert body["schedule"]["steps"] and len(body["points"]) == 30


def test_vllm_dynamic_config_and_sglang_bench_jsonl() -> None:
    setup = _truth()
    stats: dict[str, dict[str, float]] = {}
    records = []
    for batch in BATCHES:
        stats[str(batch)] = {}
        for k in (0, 1, 3, 5):
            seconds = float(target_step(setup, batch, k + 1).total_s) + k * float(draft_step(setup, batch).total_s)  # type: ignore[arg-type]
            stats[str(batch)][str(k)] = seconds * 1e3
            records.append(
                {
                    "batch_size": batch,
                    "steps": k,
                    "topk": 1 if k else 0,
                    "num_draft_tokens": k + 1 if k else 0,
                    "step_time": seconds,
                    "acc_length": 2.0,
                }
            )
    vllm = json.dumps(
        {
            "is_online": False,
            "max_num_speculative_tokens": 5,
            "acceptance_rate_per_pos": [0.8, 0.6],
            "batch_stats": stats,
        }
    )
    for text, expected in (
        (vllm, "vllm-dynamic-config"),
        ("\n".join(json.dumps(r) for r in records), "sglang-bench-speculative"),
    ):
        name, rows = read_step_times(text)
        fit = fit_step_times(build_setup(SetupRequest()).setup, name, rows)
        assert name == expected and fit.rms_relative_error < 0.01
        assert fit.compute_efficiency == pytest.approx(0.4, rel=0.03)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ("", "no step times"),
        ("batch,ms\n1,2\n", "tokens column"),
        ("batch,tokens,ms\n1,1,2\n2,1,3\n", "at least 3"),
        ("batch,tokens,ms\n1,1,-2\n2,1,3\n4,1,3\n", "above 0"),
        ("batch,tokens,ms\n1.5,1,2\n2,1,3\n4,1,3\n", "whole number"),
        ("batch,tokens,ms\nx,1,2\n", "numbers"),
        ('{"batch_stats": {"1": {"0": "fast"}}}', "must be a number"),
        ('{"nothing": 1}', "neither"),
    ],
)
def test_bad_step_times_get_a_422(client: TestClient, body: str, words: str) -> None:
    response = client.post(FIT, content=body)
    assert response.status_code == 422 and words in response.json()["detail"][0]["msg"], response.text


def test_cli_step_fit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "steps.csv"
    path.write_text(example_step_times(_truth(), BATCHES, [1, 4], noise=0.0, seed=1))  # type: ignore[arg-type]
    assert main(["step-fit", str(path), "--p", "0.8"]) == 0
    out = capsys.readouterr().out
    assert "bandwidth efficiency 0.55" in out and "fit error" in out
    named = next(line for line in out.splitlines() if line.startswith("named terms: "))
    assert "ms (fixed time per step)" in named and "ms (time per further verified token of a sequence)" in named
    assert main(["step-fit", str(path), "--p", "0.8", "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["format"] == "csv" and round(body["bandwidth_efficiency"], 2) == 0.55
    assert main(["step-fit", str(tmp_path / "missing.csv")]) == 2
    assert "step-fit: error: cannot read" in capsys.readouterr().err
    path.write_text("batch,tokens,ms\nx,1,2\n")
    assert main(["step-fit", str(path)]) == 2
    assert "numbers" in capsys.readouterr().err


def test_trtllm_iteration_stats_decode_iterations_are_step_times() -> None:
    setup = _truth()
    iterations = []
    for index, batch in enumerate(BATCHES):
        for k in (0, 2, 4):
            seconds = float(target_step(setup, batch, k + 1).total_s) + k * float(draft_step(setup, batch).total_s)  # type: ignore[arg-type]
            iterations.append(
                {
                    "iter": index,
                    "iterLatencyMS": seconds * 1e3,
                    "inflightBatchingStats": {"numGenRequests": batch, "numContextRequests": 0},
                    "specDecodingStats": {
                        "numDraftTokens": batch * k,
                        "numAcceptedTokens": 0,
                        "numRequestsWithDraftTokens": batch if k else 0,
                    },
                }
            )
    iterations.append({"iterLatencyMS": 99.0, "inflightBatchingStats": {"numGenRequests": 4, "numContextRequests": 2}})
    name, rows = read_step_times(json.dumps(iterations))
    assert name == "trtllm-iteration-stats" and len(rows) == 3 * len(BATCHES)  # the prefill iteration is left out
    fit = fit_step_times(build_setup(SetupRequest()).setup, name, rows)
    assert fit.rms_relative_error < 0.01 and fit.bandwidth_efficiency == pytest.approx(0.55, rel=0.03)


def test_the_out_of_sample_error_predicts_each_batch_from_the_others() -> None:
    from app.model.live import step_fit

    truth = replace(SETUP, bandwidth_efficiency=0.6, compute_efficiency=0.35, step_overhead_us=25.0)
    exact = example_step_times(truth, [1, 2, 4, 8, 16, 32, 64], [1, 3], noise=0.0, seed=0)
    fit = fit_step_times(SETUP, *read_step_times(exact))
    assert fit.holdout_folds == 7 and fit.holdout_error is not None and fit.holdout_error < 0.01
    noisy = example_step_times(truth, [1, 2, 4, 8, 16, 32, 64], [1, 3], noise=0.05, seed=1)
    noisy_fit = fit_step_times(SETUP, *read_step_times(noisy))
    assert noisy_fit.holdout_error is not None and 0.005 < noisy_fit.holdout_error < 0.2
    assert noisy_fit.holdout_error >= noisy_fit.rms_relative_error / 4  # out of sample is no better than the fit
    # one batch size: nothing to hold out
    single = example_step_times(truth, [8], [1, 2, 3, 4], noise=0.0, seed=0)
    assert fit_step_times(SETUP, *read_step_times(single)).holdout_error is None
    # bounded work: at most HOLDOUT_FOLDS batches left out in turn, over at most HOLDOUT_ROWS rows
    many = [2**index for index in range(11)]
    wide = fit_step_times(SETUP, *read_step_times(example_step_times(truth, many, [1, 2], noise=0.0, seed=0)))
    assert wide.holdout_folds == step_fit.HOLDOUT_FOLDS < len(many)


def test_the_answer_gives_the_fitted_terms_as_a_query_that_says_measured(client: TestClient) -> None:
    truth = replace(SETUP, bandwidth_efficiency=0.6, compute_efficiency=0.35, step_overhead_us=25.0)
    body = example_step_times(truth, [1, 2, 4, 8, 16], [1, 3], noise=0.01, seed=2)
    answer = client.post("/api/v1/step-fit", content=body, headers={"content-type": "text/plain"}).json()
    assert answer["holdout_batches"] == 5 and answer["accuracy"]["source"] == "measured"
    pairs = dict(item.split("=") for item in answer["query"].split("&"))
    assert float(pairs["bandwidth_efficiency"]) == pytest.approx(answer["bandwidth_efficiency"], rel=1e-3)
    assert pairs["overhead_per_draft_step_us"] == pairs["overhead_us"]
    assert pairs["cycle_overhead_us"] == pairs["cycle_overhead_per_sequence_us"] == pairs["allreduce_us"] == "0"
    assert pairs["fit_steps"] == "10" and float(pairs["fit_error"]) == pytest.approx(
        100 * answer["holdout_error"], rel=1e-3
    )
    single = example_step_times(truth, [8], [1, 2, 3], noise=0.0, seed=0)
    one = client.post("/api/v1/step-fit", content=single, headers={"content-type": "text/plain"}).json()
    assert one["holdout_error"] is None and "fit_steps" not in one["query"]
    assert one["accuracy"]["source"] == "given" and any("one batch size" in note for note in one["notes"])
