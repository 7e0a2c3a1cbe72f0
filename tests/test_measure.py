"""The sweep analysis on synthetic measurements whose costs and acceptance are known, and what it writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.cli import main
from app.model.counters.counts import SpecCounts
from app.model.live.measure import MeasureError, Sample, analyze, metrics_delta, step_times_csv
from app.model.live.step_fit import read_step_times
from app.service.clients.measure import Record, Server, parse_metrics, samples_from

T_PLAIN = 10.0  # ms per plain step
C = 0.3
V0, BETA = 1.2, 0.1
REQUESTS = 4
# verifications with at least i + 1 accepted, per k: drafts = 100 at every k
PER_POSITION = {1: (70,), 2: (70, 50), 4: (70, 50, 35, 25), 8: (70, 50, 35, 25, 18, 12, 8, 5)}


def _sample(k: int, plain_steps: int = 0, timed: bool = True, v: float | None = None) -> Sample:
    drafts = 100
    accepted = sum(PER_POSITION[k])
    tokens = drafts + accepted + plain_steps
    cycle = k * C + (V0 + BETA * k if v is None else v)
    return Sample(
        k=k,
        requests=REQUESTS,
        generated=tokens + REQUESTS,
        decode_ms=(drafts * cycle + plain_steps) * T_PLAIN,
        drafts=drafts,
        draft_tokens=k * drafts,
        accepted=accepted,
        accepted_per_position=PER_POSITION[k],
        draft_ms=C * T_PLAIN * k * drafts if timed else None,
    )


def _plain() -> Sample:
    return Sample(k=0, requests=REQUESTS, generated=400 + REQUESTS, decode_ms=400 * T_PLAIN)


def _sweep(timed: bool = True) -> list[Sample]:
    return [_plain(), *(_sample(k, timed=timed) for k in (1, 2, 4, 8))]


def test_a_sweep_that_follows_the_model_gives_back_its_costs_and_speedups() -> None:
    analysis = analyze(_sweep())
    assert analysis.plain_ms_per_token == pytest.approx(T_PLAIN)
    assert analysis.c == pytest.approx(C)
    assert (analysis.v0, analysis.beta) == (pytest.approx(V0), pytest.approx(BETA))
    for result in analysis.results[1:]:
        k = result.k
        assert result.profile == pytest.approx([count / 100 for count in PER_POSITION[k]])
        assert result.tokens_per_verification == 1 + sum(PER_POSITION[k]) / 100
        assert result.c == pytest.approx(C)
        assert result.v == pytest.approx(V0 + BETA * k)
        expected = (1 + sum(PER_POSITION[k]) / 100) / (k * C + V0 + BETA * k)
        assert result.measured_speedup == pytest.approx(expected)
        assert result.predicted_speedup == pytest.approx(expected)
        assert result.predicted_speedup_holdout == pytest.approx(expected)
    # E / cost: k=1 1.7/1.6, k=2 2.2/2.0, k=4 2.3/2.8, k=8 2.23/4.4
    assert analysis.best_k_measured == analysis.best_k_predicted == 2
    assert analysis.results[0].measured_speedup == 1.0


def test_steps_without_a_draft_are_taken_out_of_the_cycle_and_only_the_mixed_form_counts_them() -> None:
    analysis = analyze([_plain(), _sample(1, plain_steps=300), _sample(2, plain_steps=300)])
    two = analysis.results[2]
    assert two.plain_steps == 300
    assert two.draft_share == pytest.approx(100 / 400)
    cycle = 2 * C + V0 + BETA * 2
    assert two.cycle_cost == pytest.approx(cycle)
    expected = 1 + sum(PER_POSITION[2]) / 100
    mixed = (100 * expected + 300) / (100 * cycle + 300)
    assert two.measured_speedup == pytest.approx(mixed)
    assert two.predicted_speedup_mixed == pytest.approx(mixed)
    assert two.predicted_speedup == pytest.approx(expected / cycle)
    assert two.predicted_speedup > two.measured_speedup * 1.05  # the closed form assumes a draft at every step
    assert analysis.best_k_measured == analysis.best_k_predicted == analysis.best_k_predicted_mixed == 2


def test_without_the_engines_draft_time_c_is_unknown_but_the_cycle_still_predicts() -> None:
    analysis = analyze(_sweep(timed=False))
    assert analysis.c is None and analysis.v0 is None
    assert analysis.cycle_intercept == pytest.approx(V0)
    assert analysis.cycle_slope == pytest.approx(C + BETA)
    for result in analysis.results[1:]:
        assert result.c is None and result.v is None
        assert result.predicted_speedup == pytest.approx(result.measured_speedup)


def test_a_given_draft_cost_splits_the_cycle() -> None:
    analysis = analyze(_sweep(timed=False), draft_cost=0.5, draft_cost_source="given")
    assert analysis.c == 0.5 and analysis.c_source == "given"
    four = analysis.results[3]
    assert four.v == pytest.approx(4 * C + V0 + BETA * 4 - 4 * 0.5)


def test_a_k_off_the_linear_cost_is_missed_by_the_holdout_by_the_amount_it_is_off() -> None:
    bumped = V0 + BETA * 8 + 0.8  # v(8) 0.8 plain steps above the line through the other k
    samples = [_plain(), *(_sample(k) for k in (1, 2, 4)), _sample(8, v=bumped)]
    analysis = analyze(samples)
    eight = analysis.results[4]
    assert eight.v == pytest.approx(bumped)
    expected = 1 + sum(PER_POSITION[8]) / 100
    assert eight.measured_speedup == pytest.approx(expected / (8 * C + bumped))
    assert eight.predicted_speedup_holdout == pytest.approx(expected / (8 * C + V0 + 8 * BETA))
    assert eight.predicted_speedup_holdout / eight.measured_speedup == pytest.approx(1 + 0.8 / (8 * C + V0 + 8 * BETA))
    assert (
        1.0
        < eight.predicted_speedup / eight.measured_speedup
        < eight.predicted_speedup_holdout / eight.measured_speedup
    )


def test_one_speculative_k_assumes_v0_is_one_plain_step() -> None:
    analysis = analyze([_plain(), _sample(4)])
    assert analysis.v0 == 1.0
    assert analysis.beta == pytest.approx((V0 + 4 * BETA - 1.0) / 4)
    assert analysis.results[1].predicted_speedup_holdout is None
    assert any("one speculative draft length" in note for note in analysis.notes)


@pytest.mark.parametrize(
    ("samples", "message"),
    [
        ([_sample(1)], "k = 0"),
        ([_plain(), _plain()], "measured twice"),
        ([_plain(), Sample(k=2, requests=1, generated=50, decode_ms=10.0, drafts=10, draft_tokens=20, accepted=21)],
         "accepted"),
        ([_plain(), Sample(k=2, requests=1, generated=50, decode_ms=10.0, drafts=10, draft_tokens=20, accepted=5,
                           accepted_per_position=(2, 3))], "never grow"),
        ([_plain(), Sample(k=2, requests=1, generated=50, decode_ms=10.0, drafts=10, draft_tokens=30)], "at most k"),
        ([Sample(k=0, requests=1, generated=50, decode_ms=10.0, drafts=1, draft_tokens=1)], "no drafts"),
        ([_plain(), Sample(k=2, requests=2, generated=2, decode_ms=10.0)], "at least 2 tokens"),
    ],
)  # fmt: skip
def test_inconsistent_measurements_are_refused(samples: list[Sample], message: str) -> None:
    with pytest.raises(MeasureError, match=message):
        analyze(samples)


def test_the_metrics_delta_reads_back_and_calibrate_from_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sample = _sample(4)
    text = metrics_delta(sample)
    counters = parse_metrics(text)
    assert counters == SpecCounts(100, 400, sum(PER_POSITION[4]), PER_POSITION[4])
    path = tmp_path / "k4.prom"
    path.write_text(text)
    assert main(["calibrate", "--from", str(path), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["k"] == 4
    # per-position counts: successes over successes plus rejections (drafts that stopped short of k)
    successes = sum(PER_POSITION[4])
    assert report["p"] == pytest.approx(successes / (successes + 100 - PER_POSITION[4][-1]), rel=1e-6)


def test_the_step_times_are_a_plain_step_and_each_verification_pass() -> None:
    analysis = analyze(_sweep())
    name, rows = read_step_times(step_times_csv(analysis))
    assert name == "csv"
    assert [(row.batch, row.tokens) for row in rows] == [(1, 1), (1, 2), (1, 3), (1, 5), (1, 9)]
    assert rows[0].ms == pytest.approx(T_PLAIN)
    assert rows[3].ms == pytest.approx((V0 + BETA * 4) * T_PLAIN, rel=1e-6)
    with pytest.raises(MeasureError, match="c unknown"):
        step_times_csv(analyze(_sweep(timed=False)))


def test_each_prompt_counts_its_fastest_round_with_that_requests_counts() -> None:
    servers = [Server("http://a", False, "plain", 0), Server("http://b", True, "draft-simple", 2)]
    slow, fast = SpecCounts(10, 20, 9, (6, 3)), SpecCounts(10, 20, 9, (6, 3))
    records = [
        Record(0, 0, 1, 33, 400.0, SpecCounts(), prompt=0),
        Record(0, 1, 1, 33, 320.0, SpecCounts(), prompt=0),
        Record(1, 0, 1, 33, 250.0, slow, prompt=0),
        Record(1, 1, 1, 33, 900.0, fast, prompt=0),  # disturbed by someone else
        Record(0, 0, 1, 17, 160.0, SpecCounts(), prompt=1),
        Record(1, 0, 1, 17, 120.0, SpecCounts(5, 10, 2, (2, 0)), prompt=1),
    ]
    plain, speculative = samples_from(servers, records)
    assert (plain.requests, plain.generated, plain.decode_ms) == (2, 50, 480.0)
    assert (speculative.decode_ms, speculative.drafts, speculative.accepted) == (370.0, 15, 11)
    assert speculative.accepted_per_position == (8, 3)
    assert samples_from(servers, records, repeats=[1])[1].decode_ms == 900.0


def test_the_command_says_what_is_wrong(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["measure", "http://127.0.0.1:9", "--no-progress"]) == 2
    assert "http://127.0.0.1:9: no answer" in capsys.readouterr().err
    assert main(["measure", "ftp://example.org"]) == 2
    assert "http(s) address" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["measure", "http://127.0.0.1:9", "--k", "0,65"])
    assert "must be from 0 to 64" in capsys.readouterr().err


def test_a_given_step_cost_that_cannot_be_used_is_refused_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Read before the sweep starts: port 9 answers nothing, and the message names the file, not the server."""
    missing = tmp_path / "missing.json"
    not_a_report = tmp_path / "calibration.json"
    not_a_report.write_text(json.dumps({"p": 0.8}), encoding="utf-8")
    unknown_term = tmp_path / "unknown.json"
    unknown_term.write_text(json.dumps({"step_cost": {"fitted": ["launch_ms"], "launch_ms": 3.0}}), encoding="utf-8")
    negative = tmp_path / "negative.json"
    negative.write_text(json.dumps({"step_cost": {"fitted": ["fixed_ms"], "fixed_ms": -2.0}}), encoding="utf-8")
    for path, message in (
        (missing, "not a readable JSON file"),
        (not_a_report, 'no "step_cost" with its "fitted" terms'),
        (unknown_term, "step_cost.launch_ms: not a step-cost term"),
        (negative, "step_cost.fixed_ms must be a finite number of ms, 0 or above"),
    ):
        argv = ["measure", "http://127.0.0.1:9", "--batch", "1,2", "--given-step-cost", str(path), "--no-progress"]
        assert main(argv) == 2
        error = capsys.readouterr().err
        assert f"--given-step-cost {path}: {message}" in error and "no answer" not in error, error
    usable = tmp_path / "sweep.json"
    usable.write_text(json.dumps({"step_cost": {"fitted": ["multi_token_ms"], "multi_token_ms": 8.0}}), "utf-8")
    assert main(["measure", "http://127.0.0.1:9", "--given-step-cost", str(usable), "--no-progress"]) == 2
    assert "--given-step-cost needs --batch" in capsys.readouterr().err
    assert main(["measure", "http://127.0.0.1:9", "--method", "ngram", "--no-progress"]) == 2
    assert "--method needs --batch" in capsys.readouterr().err
    argv = ["measure", "http://127.0.0.1:9", "--batch", "1,2", "--engine", "vllm", "--method", "ngram-simple"]
    assert main(argv) == 2  # refused before any server is asked
    error = capsys.readouterr().err
    assert "--method ngram-simple: method: vLLM method must be one of" in error and "no answer" not in error, error
    assert main(["measure", "http://127.0.0.1:9", "--batch", "1,2", "--given-step-cost", str(usable)]) == 2
    assert "http://127.0.0.1:9: no answer" in capsys.readouterr().err  # read, then the sweep started
