"""The batch sweep's analysis on cells whose step costs and acceptance are known."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from app.model.live.measure import MeasureError, Sample
from app.model.live.measure_batches import analyze_batches
from app.service.schemas.measure import BatchReport

FIXED, PER_SEQUENCE, PER_TOKEN = 20.0, 3.0, 1.5  # ms
P = 0.7
STEPS = 10_000  # decoding steps per sequence: STEPS P^i is a whole number for i <= 4
BATCHES = (1, 2, 4, 8, 16, 32, 64)


def _report(analysed: dict[str, object], notes: list[str]) -> BatchReport:
    """A sweep's report around its analysis, as measure --batch prints it."""
    fields = {"servers": [], "batches": BATCHES, "workload": {}, "requests": 254, "seconds": 12.0, "stopped": None}
    return BatchReport.model_validate({**fields, "samples": [], **analysed, "notes": notes})


def _step_ms(batch: int, tokens: float) -> float:
    return FIXED + PER_SEQUENCE * batch + PER_TOKEN * batch * (tokens - 1)


def _cell(k: int, batch: int, slower: float = 1.0) -> Sample:
    """B requests of STEPS steps each; every step verifies k drafted tokens, position i accepted with P^i."""
    drafts = batch * STEPS if k else 0
    per_position = tuple(round(drafts * P**i) for i in range(1, k + 1))
    accepted = sum(per_position)
    tokens = batch * STEPS + accepted
    return Sample(
        k=k,
        requests=batch,
        generated=tokens + batch,
        decode_ms=batch * STEPS * _step_ms(batch, 1 + k) * slower,
        drafts=drafts,
        draft_tokens=k * drafts,
        accepted=accepted,
        accepted_per_position=per_position,
        batch=batch,
    )


def _speedup(k: int, batch: int) -> float:
    tokens = 1 + sum(round(batch * STEPS * P**i) for i in range(1, k + 1)) / (batch * STEPS)
    return tokens * _step_ms(batch, 1) / _step_ms(batch, 1 + k)


def test_cells_that_follow_the_cost_model_are_predicted_out_of_sample() -> None:
    analysis = analyze_batches([[_cell(k, batch) for k in (0, 2, 4) for batch in BATCHES]], draft_model=False)
    assert analysis.batches == list(BATCHES) and analysis.ks == [0, 2, 4]
    assert {(cell.k, cell.batch) for cell in analysis.cells} == {(k, b) for k in (0, 2, 4) for b in BATCHES}
    cost = analysis.step_cost
    assert [cost.fixed_ms, cost.per_sequence_ms, cost.per_extra_token_ms] == pytest.approx(
        [FIXED, PER_SEQUENCE, PER_TOKEN]
    )
    for cell in analysis.cells:
        assert cell.step_ms == pytest.approx(_step_ms(cell.batch, 1 + cell.k))
        assert cell.tokens_verified_per_step == 1 + cell.k
        assert cell.measured_speedup == pytest.approx(_speedup(cell.k, cell.batch))
        assert cell.throughput_tokens_s == pytest.approx(cell.batch * 1e3 * cell.tokens_per_step / cell.step_ms)
        for predicted in (cell.predicted_speedup, cell.predicted_speedup_holdout, cell.predicted_speedup_batch_holdout):
            assert predicted == pytest.approx(cell.measured_speedup)
        if cell.k:
            assert cell.profile == pytest.approx([P**i for i in range(1, cell.k + 1)], rel=1e-3)
    assert all(error.median_abs_error == pytest.approx(0.0, abs=1e-9) for error in analysis.holdout_errors)
    assert [error.cells for error in analysis.holdout_errors] == [14, 14]


def test_the_crossover_is_predicted_from_the_batches_below_it() -> None:
    analysis = analyze_batches([[_cell(k, batch) for k in (0, 4) for batch in BATCHES]], draft_model=False)
    (four,) = analysis.crossovers
    # S(B) = y (20 + 3B) / (20 + 9B) falls through 1 between B = 52 and 53
    exact = next(b for b in range(1, 200) if _speedup(4, b) <= 1.0)
    assert four.measured == 64 and four.fitted_on == (1, 2, 4, 8, 16, 32)
    assert four.predicted == exact == 53 and four.in_measured_interval is True
    assert analysis.best_k_measured == {**{b: 4 for b in BATCHES[:-1]}, 64: 0}
    assert analysis.best_k_predicted == analysis.best_k_measured


def test_a_prediction_that_misses_the_interval_says_so() -> None:
    # speculation at batch 32 ran 1.6 times slower than the model: S(32) = 0.65, so the measured crossover
    # moves to 32 while the batches below it (1 to 16) still predict 53
    rounds = [[_cell(k, b, slower=1.6 if (k, b) == (4, 32) else 1.0) for k in (0, 4) for b in BATCHES]]
    (four,) = analyze_batches(rounds, draft_model=False).crossovers
    assert (four.measured, four.fitted_on, four.predicted) == (32, (1, 2, 4, 8, 16), 53)
    assert four.in_measured_interval is False


def test_each_round_keeps_its_own_speedup_and_the_fastest_round_counts() -> None:
    fast = [_cell(k, b) for k in (0, 4) for b in (1, 2, 4)]
    slow = [_cell(k, b, slower=1.5 if k else 1.0) for k in (0, 4) for b in (1, 2, 4)]
    analysis = analyze_batches([slow, fast], draft_model=False)
    one = next(cell for cell in analysis.cells if (cell.k, cell.batch) == (4, 1))
    assert one.speedup_rounds == pytest.approx((_speedup(4, 1) / 1.5, _speedup(4, 1)))
    assert one.measured_speedup == pytest.approx(_speedup(4, 1))
    # the interval over the rounds: Student t with one degree of freedom on the two log ratios
    half = 12.7062 * abs(math.log(1.5)) / 2
    centre = math.log(_speedup(4, 1)) - math.log(1.5) / 2
    assert one.measured_speedup_low == pytest.approx(math.exp(centre - half), rel=1e-4)
    assert one.measured_speedup_high == pytest.approx(math.exp(centre + half), rel=1e-4)
    single = analyze_batches([fast], draft_model=False).cells
    assert all(cell.measured_speedup_low is None and cell.measured_speedup_high is None for cell in single)


def test_the_end_to_end_speedup_takes_each_cells_own_least_disturbed_wall_clock() -> None:
    """A round can decode fastest and still have waited before its first token: the end-to-end figure takes each
    cell's fastest wall clock per token, whichever round that was, not the wall clock of its fastest decoding."""

    def timed(k: int, slower: float, wall_ms: float) -> Sample:
        return replace(_cell(k, 2, slower=slower), wall_ms=wall_ms)

    plain_tokens, spec_tokens = _cell(0, 2).generated, _cell(4, 2).generated
    first = [timed(0, 1.0, 9_000.0), timed(4, 1.0, 2_000.0)]  # plain's fastest decoding, after a slow start
    second = [timed(0, 1.2, 3_000.0), timed(4, 1.1, 2_400.0)]
    (_plain, four) = analyze_batches([first, second], draft_model=False).cells
    assert four.measured_speedup == pytest.approx(_speedup(4, 2))  # the decoding phase: the fastest rounds
    assert four.measured_speedup_end_to_end == pytest.approx((3_000.0 / plain_tokens) / (2_000.0 / spec_tokens))


def test_a_crossover_below_two_fitted_batches_is_not_predicted_and_says_why() -> None:
    rounds = [[_cell(0, b) for b in (1, 2)] + [_cell(4, b, slower=3.0) for b in (1, 2)]]
    (four,) = analyze_batches(rounds, draft_model=False).crossovers
    assert four.measured == 1 and four.predicted is None
    assert four.note == "no batch below the smallest measured (1) to fit on"
    assert not math.isnan(analyze_batches(rounds, draft_model=False).cells[0].step_ms)


@pytest.mark.parametrize(
    ("rounds", "message"),
    [
        ([[_cell(4, 1), _cell(4, 2)]], "k = 0"),
        ([[_cell(0, 1), _cell(0, 1)]], "measured twice"),
        ([[]], "no measurements"),
    ],
)
def test_sweeps_that_cannot_be_analysed_are_refused(rounds: list[list[Sample]], message: str) -> None:
    with pytest.raises(MeasureError, match=message):
        analyze_batches(rounds, draft_model=False)


def test_the_table_names_each_crossover_and_the_out_of_sample_error() -> None:
    from app.cli.render import render_batches
    from app.service.measure_jobs import analysis_report

    analysis = analyze_batches([[_cell(k, batch) for k in (0, 4) for batch in BATCHES]], draft_model=False)
    text = render_batches(_report(analysis_report(analysis), analysis.notes))
    assert (
        "k = 4: measured: stops paying at batch 64; predicted to stop at batch 53 (fitted on batches 1,2,4,8,16,32)"
        in text
    )
    assert "leave-one-batch-out: median error 0.0%" in text
    assert "best k per batch, measured (predicted with that batch left out): 1: 4 (4)" in text


def test_the_sweeps_step_fit_input_is_what_the_schedule_takes_as_measured(
    tmp_path: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """measure --batch --write-step-fit's file, given to schedule --step-fit: its steps fit the terms, and the
    schedule says measured, with the fit's out-of-sample error."""
    import json

    from app.cli import main
    from app.model.live.measure_batches import batch_step_times_csv

    analysis = analyze_batches([[_cell(k, batch) for k in (0, 2, 4) for batch in BATCHES]], draft_model=False)
    path = tmp_path / "steps.csv"  # type: ignore[operator]
    path.write_text(batch_step_times_csv(analysis), encoding="utf-8")
    assert main(["schedule", "--format", "json", "--model", "dense-1b", "--step-fit", str(path)]) == 0
    accuracy = json.loads(capsys.readouterr().out)["accuracy"]
    assert accuracy["source"] == "measured" and accuracy["measured_steps"] == len(analysis.cells) == 21
    assert accuracy["measured_error"] is not None and accuracy["summary"].startswith("measured: fitted to 21 steps")


def test_a_batch_whose_prediction_lacks_a_term_says_which() -> None:
    """Plain decoding at batch 1 is the only one-token pass (cheaper: vector kernels): with batch 1 left out no
    cell measures one, so that batch's predictions price it as a pass over several tokens, and say so."""
    from dataclasses import replace

    from app.cli.render import render_batches
    from app.service.measure_jobs import analysis_report

    jump = 8.0  # ms a pass over several tokens costs more than the one-token pass
    rounds = [
        replace(sample, decode_ms=sample.decode_ms - sample.requests * STEPS * jump)
        if sample.k == 0 and sample.batch == 1
        else sample
        for sample in (_cell(k, batch) for k in (0, 4) for batch in BATCHES)
    ]
    analysis = analyze_batches([rounds], draft_model=False)
    assert analysis.step_cost.multi_token_ms == pytest.approx(jump)
    for cell in analysis.cells:
        if cell.batch == 1:
            assert "no one-token pass" in cell.batch_holdout_kept["multi_token_ms"], cell
        else:
            assert cell.batch_holdout_kept == {}, cell
            assert cell.predicted_speedup_batch_holdout == pytest.approx(cell.measured_speedup)
    (one,) = [cell for cell in analysis.cells if cell.batch == 1 and cell.k == 4]
    assert one.predicted_speedup_holdout == pytest.approx(one.measured_speedup)  # the plain cell was in that fit
    assert (one.predicted_speedup_batch_holdout or 0) > one.measured_speedup  # plain priced dearer than it is
    text = render_batches(_report(analysis_report(analysis), analysis.notes))
    assert "* predicted without a term the other batches cannot identify: no one-token pass" in text
    assert "+ predicted with given terms" not in text


def test_a_term_given_from_an_earlier_sweep_is_held_where_these_batches_cannot_identify_it() -> None:
    """The one-token pass of an earlier sweep on the same engine and hardware, given: batch 1 left out is then
    predicted with it, and says so; a fit that identifies the term keeps its own value."""
    from dataclasses import replace

    from app.cli.render import render_batches
    from app.service.measure_jobs import analysis_report

    jump = 8.0
    rounds = [
        replace(sample, decode_ms=sample.decode_ms - sample.requests * STEPS * jump)
        if sample.k == 0 and sample.batch == 1
        else sample
        for sample in (_cell(k, batch) for k in (0, 4) for batch in BATCHES)
    ]
    analysis = analyze_batches([rounds], draft_model=False, given={"multi_token_ms": jump, "fixed_ms": 999.0})
    assert analysis.step_cost.multi_token_ms == pytest.approx(jump) and analysis.step_cost.given == {}
    assert analysis.step_cost.fixed_ms == pytest.approx(FIXED - jump)  # identified here: the given 999 is not used
    for cell in analysis.cells:
        assert cell.batch_holdout_kept == {}, cell
        assert cell.predicted_speedup_batch_holdout == pytest.approx(cell.measured_speedup), cell
        if cell.batch == 1:
            assert "no one-token pass" in cell.batch_holdout_given["multi_token_ms"], cell
        else:
            assert cell.batch_holdout_given == {}, cell
    wrong = analyze_batches([rounds], draft_model=False, given={"multi_token_ms": 2 * jump})
    (one,) = [cell for cell in wrong.cells if cell.batch == 1 and cell.k == 4]
    assert (one.predicted_speedup_batch_holdout or 0) < one.measured_speedup  # the one-token pass given too cheap
    text = render_batches(_report(analysis_report(analysis), analysis.notes))
    assert "+ predicted with given terms the other batches cannot identify: multi_token_ms" in text
    rows = [line.split() for line in text.splitlines() if line.split()[:2] in (["4", "1"], ["4", "2"])]
    header = next(line.split() for line in text.splitlines() if line.split()[:2] == ["k", "batch"])
    column = header.index("batch-out") - 1  # the header's "step ms" is two words
    assert [row[1] for row in rows if row[column].endswith("+")] == ["1"], rows  # the batch-out column
    without_one = analyze_batches(
        [[sample for sample in rounds if sample.batch > 1]], draft_model=False, given={"multi_token_ms": jump}
    )
    assert list(without_one.step_cost.given) == ["multi_token_ms"]
    assert without_one.step_cost.multi_token_ms == jump
    assert any("held at the given 8 ms" in note for note in without_one.notes)


def test_a_crossover_that_cannot_be_predicted_says_why_in_words() -> None:
    """Each line says what was measured and what was predicted, or why nothing was, where a k that never paid
    read 'stops paying at batch 1 measured, - predicted from batches -'."""
    from app.cli.render import render_batches
    from app.service.measure_jobs import analysis_report

    def line(rounds: list[list[Sample]], batches: tuple[int, ...] = BATCHES) -> str:
        report = _report(analysis_report(analyze_batches(rounds, draft_model=False)), [])
        text = render_batches(report.model_copy(update={"batches": list(batches)}))
        return next(line for line in text.splitlines() if line.startswith("k = 4:"))

    slow = [[_cell(k, batch, slower=3.0 if k else 1.0) for k in (0, 4) for batch in BATCHES]]
    assert line(slow) == (
        "k = 4: measured: does not pay at any measured batch; not predicted: no batch below the smallest measured "
        "(1) to fit on"
    )
    paying = [[_cell(k, batch) for k in (0, 4) for batch in (1, 2, 4)]]
    assert line(paying, (1, 2, 4)) == (
        "k = 4: measured: pays at every measured batch; predicted to stop at batch 53 (fitted on batches 1,2,4)"
    )
    one = [[_cell(k, 1) for k in (0, 4)]]
    assert line(one, (1,)) == (
        "k = 4: measured: pays at every measured batch; not predicted: one batch measured (1): too few to fit how "
        "the cost grows"
    )


def test_a_sweep_where_speculation_never_paid_says_to_run_without_it() -> None:
    """The measured config read 'none written', with a note for the largest batch alone."""
    from app.service.clients.measure import Server
    from app.service.measure_jobs import measured_config

    servers = [Server("http://a", False), Server("http://b", True, "speculative,ngram-simple", 4)]
    slow = analyze_batches([[_cell(k, b, slower=3.0 if k else 1.0) for k in (0, 4) for b in (1, 2, 4)]], False)
    config = measured_config(servers, slow)
    assert config is not None and config.text == ""
    assert config.notes[0] == (
        "speculation paid at none of the batches measured (1, 2, 4): run llama.cpp without it; there is no "
        "speculation config to write"
    )
    paying = analyze_batches([[_cell(k, b) for k in (0, 4) for b in (1, 2, 4)]], False)
    config = measured_config(servers, paying)
    assert config is not None and "--spec-type ngram-simple" in config.text
    assert not any("paid at none" in note for note in config.notes)
