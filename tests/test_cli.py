from __future__ import annotations

import csv
import io
import json
import pathlib
import re
import subprocess
import sys

import pytest

from app.cli import main
from app.model.arithmetic import closed_form as cf
from app.model.counters import calibration
from tests.support import ROOT

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_table_text_is_aligned_and_plain_off_a_tty(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "table", "--k-max", "4", "--p-min", "0.6", "--p-max", "0.9", "--p-step", "0.1")
    assert code == 0
    assert "\x1b[" not in out  # captured output is not a terminal
    lines = out.splitlines()
    assert lines[0] == "memory-bound (v = 1), c = 0.15"
    rows = [line for line in lines if re.match(r"^\s+0\.\d\d ", line)]
    assert len(rows) == 8 and len({len(line) for line in rows}) == 1  # aligned
    assert f"{cf.speedup(0.6, 1, 0.15):.2f}x" in rows[0]
    assert re.search(r"win to loss: at p = 0\.9, k = 4: \d\.\d\dx under memory-bound becomes 0\.\d\dx", out)


def test_table_colours_wins_and_losses(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "table", "--color", "always", "--k-max", "2", "--p-min", "0.8", "--p-max", "0.8")
    assert code == 0
    assert "\x1b[32m" in out and "\x1b[31m" in out  # green wins, red losses
    assert "\x1b[1m" in out
    plain = ANSI.sub("", out)
    assert f"{cf.speedup(0.8, 2, 0.15, lambda k: k + 1.0):.2f}x" in plain


def test_table_csv_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("table", "--k-max", "3", "--p-min", "0.5", "--p-max", "0.7", "--p-step", "0.1")
    _, csv_out, _ = run(capsys, *args, "--format", "csv")
    rows = list(csv.reader(io.StringIO(csv_out)))
    assert rows[0] == ["regime", "label", "p", "k=1", "k=2", "k=3"]
    assert len(rows) == 7
    _, json_out, _ = run(capsys, *args, "--format", "json")
    body = json.loads(json_out)
    assert body["p_values"] == [0.5, 0.6, 0.7]
    assert body["speedup_a"][0][0] == pytest.approx(cf.speedup(0.5, 1, 0.15))
    assert float(rows[1][3]) == pytest.approx(body["speedup_a"][0][0], abs=1e-6)


def test_table_with_roofline_regimes_and_overrides(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "table",
        "--regime-a", "roofline", "--batch-a", "1",
        "--regime-b", "roofline", "--batch-b", "1024",
        "--hw", "b200", "--model", "dense-70b", "--context", "0",
        "--set", "hw_bandwidth_tb_s=7.7",
        "--format", "json",
    )  # fmt: skip
    assert code == 0
    body = json.loads(out)
    assert body["setup"]["accelerator"]["bandwidth_tb_s"] == 7.7
    assert body["regime_a"]["label"].startswith("roofline: your accelerator (7.7 TB/s")  # edited: the user's own
    assert body["highlight"]["speedup_a"] > 1 > body["highlight"]["speedup_b"]


def test_schedule_text_csv_json(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("schedule", "--p", "0.8", "--context", "0", "--model", "dense-70b")
    code, text, _ = run(capsys, *args)
    assert code == 0
    assert text.startswith("Best draft length by batch size at p = 0.8")
    assert "off" in text and re.search(r"speculation off from batch \d+", text)
    _, json_out, _ = run(capsys, *args, "--format", "json")
    body = json.loads(json_out)
    _, csv_out, _ = run(capsys, *args, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(csv_out)))
    assert [(int(row["batch_from"]), int(row["k"])) for row in rows] == [
        (step["batch_from"], step["k"]) for step in body["steps"]
    ]
    assert f"speculation off from batch {body['off_from_batch']}" in text
    interval = (
        f"between batch {body['off_range_low']} and batch {body['off_range_high']}"
        if body["off_range_high"]
        else f"from batch {body['off_range_low']} on"
    )
    assert f"(within the stated error it {'stops' if body['off_range_high'] else 'may stop'} paying {interval})" in text
    assert body["off_range_pays_past"] is not True
    assert body["accuracy"]["summary"] in text  # how good the schedule is, and the plain roofline to compare
    assert "the plain roofline, to compare: --bandwidth-efficiency" in text
    plain = text.split("the plain roofline, to compare: ", 1)[1].split()
    code, again, _ = run(capsys, *args, *plain)
    assert code == 0 and "given here" in again and "the plain roofline, to compare:" not in again
    assert "within the stated error" not in again  # the user's own terms: no published error to state


def test_schedule_says_where_a_rising_speedup_may_not_pay(capsys: pytest.CaptureFixture[str]) -> None:
    """A mixture of experts at a long context (Qwen3.5-397B-A17B, 4 x RTX PRO 6000, 65,536 tokens) whose speedup
    dips and rises again: the range is where it may not pay, and it pays past it, as the JSON says."""
    args = ("schedule", "--model", "qwen3.5-397b-a17b", "--hw", "rtx-pro-6000-blackwell", "--devices", "4")
    args += ("--weights", "int4", "--draft", "mtp", "--context", "65536", "--batch-max", "128", "--color", "never")
    _, text, _ = run(capsys, *args)
    _, json_out, _ = run(capsys, *args, "--format", "json")
    body = json.loads(json_out)
    low, high = body["off_range_low"], body["off_range_high"]
    assert body["off_range_pays_past"] is True
    assert f"(within the stated error it may not pay at batches {low} to {high}, and pays past batch {high})" in text
    assert "stops paying between" not in text


def test_schedule_names_each_run_where_paying_is_within_the_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Mixtral 8x7B in FP8 on an H100: the speedup is lowest at batch 1 (verifying reads more experts), surely pays
    from batch 2, and comes within the error again at large batches: two runs, each said, not one from batch 1."""
    args = ("schedule", "--model", "mixtral-8x7b", "--weights", "fp8", "--p", "0.8", "--color", "never")
    _, text, _ = run(capsys, *args)
    _, json_out, _ = run(capsys, *args, "--format", "json")
    runs = json.loads(json_out)["off_ranges"]
    assert len(runs) == 2 and runs[0]["pays_past"] is True and runs[1]["pays_before"] is True, runs
    first, second = runs
    where = f"batch {first['low']}" if first["low"] == first["high"] else f"batches {first['low']} to {first['high']}"
    assert f"may not pay at {where}, and pays past batch {first['high']}; it may stop paying" in text
    assert f"from batch {second['low']} on" in text and "may stop paying from batch 1 on" not in text


def test_schedule_takes_a_measured_sweep_and_says_measured(
    capsys: pytest.CaptureFixture[str], tmp_path: pytest.TempPathFactory
) -> None:
    from fastapi.testclient import TestClient

    from app.web.main import create_app
    from tests.samples.step_times import slower_server_steps

    steps = slower_server_steps()
    path = tmp_path / "steps.csv"  # type: ignore[operator]
    path.write_text(steps, encoding="utf-8")
    _, defaults, _ = run(capsys, "schedule", "--format", "json")
    code, measured, _ = run(capsys, "schedule", "--format", "json", "--step-fit", str(path))
    assert code == 0
    body, before = json.loads(measured), json.loads(defaults)
    assert body["accuracy"]["source"] == "measured" and body["accuracy"]["measured_steps"] == 24
    assert body["off_from_batch"] != before["off_from_batch"]
    # the same as the API answers with the step fit's query
    with TestClient(create_app()) as client:
        fit = client.post("/api/v1/step-fit", content=steps, headers={"content-type": "text/plain"}).json()
        api = client.get(f"/api/v1/regimes/schedule?{fit['query']}").json()
    # (the query writes each term to 4 significant figures: the same schedule, speedups within 0.1%)
    assert [(step["batch_from"], step["k"]) for step in api["steps"]] == [
        (step["batch_from"], step["k"]) for step in body["steps"]
    ]
    assert [step["speedup_at_to"] for step in api["steps"]] == pytest.approx(
        [step["speedup_at_to"] for step in body["steps"]], rel=1e-3
    )
    assert api["accuracy"]["summary"] == body["accuracy"]["summary"]
    _, text, _ = run(capsys, "schedule", "--step-fit", str(path))
    assert "measured: fitted to 24 steps, out-of-sample error" in text
    code, _, error = run(capsys, "schedule", "--step-fit", str(tmp_path / "missing.csv"))  # type: ignore[operator]
    assert code == 2 and "--step-fit" in error and "missing.csv" in error
    path.write_text("batch,tokens,ms\n1,1,2\n", encoding="utf-8")
    code, _, error = run(capsys, "schedule", "--step-fit", str(path))
    assert code == 2 and "at least 3 are needed" in error


def test_schedule_takes_the_acceptance_as_the_api_does(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, error = run(capsys, "schedule", "--mean-length", "3")
    assert code == 2 and "--k: is required with mean_length" in error
    code, _, error = run(capsys, "schedule", "--p", "0.8", "--mean-length", "3", "--k", "4")
    assert code == 2 and "give exactly one of p" in error
    code, _, error = run(capsys, "schedule", "--profile", "0.5,0.9")
    assert code == 2 and "--profile" in error
    with pytest.raises(SystemExit):
        main(["schedule", "--mean-length", "0.5", "--k", "4"])  # below its bound: argparse names it
    assert "--mean-length" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["schedule", "--model", "mixtral-8x7b", "--set", "model_experts_per_token=4"], "model_experts_per_token"),
        (["calibrate", "--from", "/nonexistent/report.prom"], "cannot read /nonexistent/report.prom: No such file"),
        (["table", "--p-min", "0.9", "--p-max", "0.2"], "p_max: must be at least p_min"),
    ],
)
def test_bad_setups_exit_2_with_a_message(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert message in err


def test_a_k_the_report_contradicts_is_refused_by_its_option(
    capsys: pytest.CaptureFixture[str], tmp_path: pathlib.Path
) -> None:
    report = tmp_path / "metrics.prom"
    report.write_text(calibration.example_exposition(0.7, 5, drafts=10_000), encoding="utf-8")
    for source in ("--metrics", "--from"):
        code, out, err = run(capsys, "calibrate", source, str(report), "--k", "6")
        assert code == 2 and out == ""
        assert "--k: k = 6 was given but the exposition has per-position counters for k = 5" in err
        assert run(capsys, "calibrate", source, str(report), "--k", "5")[0] == 0


def test_an_integer_field_takes_an_integral_number_as_json_writes_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "schedule", "--set", "model_layers=40.0", "--format", "json")
    assert code == 0 and json.loads(out)["setup"]["target"]["layers"] == 40


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["schedule", "--set", "model_layers=0"], "model_layers: must be from 1 to 10,000; got 0"),
        (["schedule", "--set", "wings=2"], "wings: is not a preset field; one of hw_bandwidth_tb_s"),
        (["schedule", "--set", "model_layers"], "expected FIELD=VALUE"),
        (["schedule", "--set", "hw_memory_gb=lots"], "hw_memory_gb: 'lots' is not a number"),
        (["schedule", "--set", "model_layers=40.5"], "model_layers: '40.5' is not an integer"),
        (["watch", "http://127.0.0.1:9/metrics", "--calibrated", "0.9,0.2"], "--calibrated: must be LOW,HIGH"),
    ],
)
def test_set_and_calibrated_are_bounded_when_the_command_line_is_read(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    """--set FIELD=VALUE and --calibrated LOW,HIGH are read by the fields' declarations with the other options:
    a refusal is argparse's (exit 2, the option and the bounds named) before any setup is built."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    captured = capsys.readouterr()
    assert exited.value.code == 2 and captured.out == "" and message in captured.err


@pytest.mark.parametrize(
    "argv",
    [
        ["schedule", "--p", "1.5"],
        ["schedule", "--p", "nan"],
        ["schedule", "--batch-max", "5000"],
        ["schedule", "--hw", "tpu"],
        ["table", "--k-max", "0"],
        ["table", "--regime-a", "free"],
        ["table", "--format", "xml"],
    ],
)
def test_out_of_range_arguments_are_usage_errors(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "error" in capsys.readouterr().err


def test_installed_entry_point_runs() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "app.cli", "schedule", "--format", "csv", "--batch-max", "16"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert result.stdout.startswith("batch_from,batch_to,k,speedup_at_from,speedup_at_to\n")


def test_the_command_list_says_what_watch_and_calibrate_read(capsys: pytest.CaptureFixture[str]) -> None:
    """The summaries said "vLLM" alone, where watch reads llama-server's /metrics (tests/test_watch_live.py) and
    calibrate --from reads every engine's report."""
    with pytest.raises(SystemExit):
        main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    watch = text.split("watch ", 1)[1].split(" rules ", 1)[0]
    assert "llama.cpp" in watch and "TensorRT-LLM" in watch and "Prometheus" in watch, watch
    calibrate = text.split("calibrate ", 1)[1].split(" sources ", 1)[0]
    assert "any engine's report" in calibrate, calibrate
