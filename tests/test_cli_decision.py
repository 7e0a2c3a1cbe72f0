"""`specdec-lab calibrate`, `sources` and `trees`: the decision tables in a terminal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from app.model.arithmetic import closed_form, draft_sources, trees
from app.model.counters import calibration


def test_calibrate_from_a_rate(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["calibrate", "--rate", "0.55", "--k", "5", "--c", "0.1"]) == 0
    out = capsys.readouterr().out
    p = closed_form.acceptance_from_draft_rate(0.55, 5)
    best, speed = closed_form.best_k(p, 0.1, 16)
    assert f"p = {p:.4f}" in out
    assert f"recommended k = {best}: speedup {speed:.3f}x" in out


def test_calibrate_from_a_scrape_file_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scrape = tmp_path / "metrics.txt"
    scrape.write_text(calibration.example_exposition(0.7, 4, drafts=100_000))
    assert main(["calibrate", "--metrics", str(scrape), "--regime", "linear", "--beta", "0.1", "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["acceptance"] == pytest.approx(0.7, abs=1e-4)
    assert body["regime"]["name"] == "linear" and len(body["positions"]) == 4


def test_calibrate_text_shows_positions_and_the_iid_verdict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scrape = tmp_path / "metrics.txt"
    scrape.write_text(calibration.example_exposition(0.7, 4, drafts=100_000, seed=3))
    assert main(["calibrate", "--metrics", str(scrape)]) == 0
    out = capsys.readouterr().out
    assert "position  accepted/draft" in out
    assert "consistent with i.i.d." in out


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        (["calibrate", "--rate", "0.5"], "--k is required"),
        (["calibrate", "--metrics", "/no/such/file"], "cannot read"),
        (["calibrate", "--length", "7", "--k", "5"], "mean acceptance length must lie in [1, k + 1]"),
        (["sources", "--override", "gpt:0.5:0.1"], "unknown draft source gpt"),
        (["trees", "--acceptance", "0.2,0.5"], "must not increase"),
        (["trees", "--widths", "1"], "--widths: each width must be an integer from 2 to 16; got 1"),  # as the API
        (["trees", "--widths", "2,3,4,5,6"], "--widths: takes at most 4 numbers; got 5"),
        (["trees", "--acceptance", "0.6,x"], "--acceptance: must be comma-separated numbers; got 'x'"),
    ],
)
def test_errors_exit_2_with_a_message(arguments: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(arguments) == 2
    assert fragment in capsys.readouterr().err


def test_bad_scrape_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scrape = tmp_path / "metrics.txt"
    scrape.write_text("process_cpu_seconds_total 3\n")
    assert main(["calibrate", "--metrics", str(scrape)]) == 2
    assert "no vLLM spec-decode counters" in capsys.readouterr().err


def test_sources(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sources", "--override", "eagle:0.9:0.05"]) == 0
    out = capsys.readouterr().out
    for source in draft_sources.DEFAULT_SOURCES:
        assert source.id in out
    assert "(edited)" in out and "arXiv:2401.07851" in out


def test_trees(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["trees", "--acceptance", "0.6,0.2", "--budget", "32", "--format", "json"]) == 0
    body = json.loads(capsys.readouterr().out)
    assert body["optimal_values"] == pytest.approx(list(trees.optimal_tree_values((0.6, 0.2), 32)))
    assert body["most_tokens_values"] == body["optimal_values"]
    assert main(["trees", "--budget", "16", "--every", "4"]) == 0
    out = capsys.readouterr().out
    assert "chain 1/(1-P1) = 2.500" in out and f"{trees.MOST_TOKENS_TREE} (any depth)" in out
    assert trees.BEST_SPEEDUP_TREE in out and "verification: Roofline" in out
