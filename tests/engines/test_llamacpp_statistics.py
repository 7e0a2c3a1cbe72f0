"""The one reader of llama.cpp's statistics line (``common/speculative.cpp`` at -lv 4): the log report and
``measure`` read the same totals from it, the last line of each drafter."""

from __future__ import annotations

import itertools
import json
import re
import struct
from pathlib import Path

import pytest

from app.model import engines
from app.model.engines.base import Exported
from app.model.engines.llamacpp import ADAPTER as llamacpp
from app.model.engines.llamacpp.config import spec_types_from_gguf
from app.model.engines.llamacpp.reports import (
    last_statistics,
    unread_lines,
    unread_series,
    unread_statistics,
    unread_timings,
)
from app.model.live import engine_metrics
from app.service.clients.measure import draft_time
from tests import live_engine
from tests.engines import capture

# as build b11312 prints them (the second line with the fields that came later, between the counts and dur)
LOG = "\n".join(
    [
        "srv  llama_server: listening on http://127.0.0.1:8080",
        "spec common_specu: statistics     draft-simple: #calls(b,g,a) =    1     18     18, #gen drafts =     18, "
        "#acc drafts =    16, #gen tokens =     71, #acc tokens =    45, dur(b,g,a) = 0.001, 343.472, 0.004 ms",
        "spec common_specu: statistics     draft-simple: #calls(b,g,a) =    2     36     36, #gen drafts =     36, "
        "#acc drafts =    32, #gen tokens =    142, #acc tokens =    90, #mean acc len = 3.50, "
        "#acc rate/pos = (0.889, 0.667, 0.556, 0.389), dur(b,g,a) = 0.001, 717.664, 0.010 ms",
        "spec common_specu: statistics     ngram-simple: #calls(b,g,a) =    2     68     32, #gen drafts =     32, "
        "#acc drafts =    20, #gen tokens =    117, #acc tokens =    57, dur(b,g,a) = 0.000, 0.046, 0.013 ms",
    ]
)
OLDER = "statistics draft: #calls = 7, #gen drafts = 7, #acc drafts = 5, #gen tokens = 28, #acc tokens = 17"


def test_the_last_line_of_each_drafter_holds_its_totals() -> None:
    last = last_statistics(LOG)
    assert list(last) == ["draft-simple", "ngram-simple"]
    simple = last["draft-simple"]
    assert (simple.accept_calls, simple.drafts, simple.accepted_drafts) == (36, 36, 32)
    assert (simple.tokens, simple.accepted_tokens, simple.draft_ms) == (142, 90, pytest.approx(717.664))
    older = last_statistics(OLDER)["draft"]
    assert older.accept_calls is None and older.draft_ms is None and older.accepted_tokens == 17
    assert last_statistics(OLDER, timed=True) == {}


def test_the_report_and_measure_read_the_same_totals() -> None:
    _, (measurement,) = engine_metrics.read_measurements(LOG, k=4)
    assert measurement.format == "llamacpp-log"
    assert measurement.draft_tokens == 142 + 117 and measurement.accepted == 90 + 57
    assert measurement.drafts == 36 + 32
    timed = draft_time(LOG)
    assert timed is not None and timed[0] == measurement.draft_tokens


def test_the_draft_time_is_the_last_statistics_line_of_each_drafter() -> None:
    assert draft_time(LOG) == (142 + 117, pytest.approx(717.664 + 0.046))
    assert draft_time("no statistics here") is None


# common_speculative_print_stats, ggml-org/llama.cpp common/speculative.cpp @ 001d906a6d86 (the stored commit read):
# "#acc rate/pos" is n_acc_tokens_per_pos[i] / n_call_accept with three decimals, n_acc_tokens_per_pos[i] counting
# the verifications that accepted at least i + 1 tokens; the line below is as -lv 4 prints it (issue 23's rates)
RATES = (
    "spec common_specu: adding speculative implementation 'draft-simple'\n"
    "spec common_specu: - n_max=4, n_min=0, p_min=0.000000\n"
    "spec common_specu: statistics     draft-simple: #calls(b,g,a) =    9   1000   1000, #gen drafts =   1000, "
    "#acc drafts =   881, #gen tokens =   4000, #acc tokens =  3105, #mean acc len = 4.11, "
    "#acc rate/pos = (0.881, 0.772, 0.744, 0.708), dur(b,g,a) = 0.010, 4420.123, 0.051 ms\n"
)


def test_the_rates_per_position_give_counts_per_position_and_an_interval() -> None:
    line = last_statistics(RATES)["draft-simple"]
    assert line.rates == (0.881, 0.772, 0.744, 0.708)
    _, (measurement,) = engine_metrics.read_measurements(RATES)
    assert measurement.k == 4  # the n_max line
    assert measurement.per_position == pytest.approx((881, 772, 744, 708))
    calibrated = engine_metrics.calibrate_report(RATES, 0.1, 8).top
    p = calibrated.result.acceptance
    assert calibrated.interval.low is not None and calibrated.interval.high is not None
    assert calibrated.interval.low <= p <= calibrated.interval.high
    # accepted / (accepted + verifications ending in a rejection), from the engine's own counts
    assert p == pytest.approx(3105 / (3105 + 1000 - 708))
    assert "lower bound" not in calibrated.result.estimator


def test_drafts_shorter_than_k_use_the_first_position_and_are_never_called_a_lower_bound() -> None:
    short = RATES.replace("#gen tokens =   4000", "#gen tokens =   3300")
    calibrated = engine_metrics.calibrate_report(short, 0.1, 8).top
    text = calibrated.result.estimator + " ".join(calibrated.notes) + calibrated.interval.method
    assert "lower bound" not in text
    assert calibrated.result.acceptance == pytest.approx(0.881)  # the engine's first-position rate
    assert calibrated.interval.low is not None and calibrated.interval.low < 0.881 < (calibrated.interval.high or 0)


def test_a_drafter_without_rates_leaves_the_log_without_per_position_counts() -> None:
    _, (measurement,) = engine_metrics.read_measurements(LOG, k=4)
    assert measurement.per_position == ()  # ngram-simple's line has no rates


# tools/server/server-context.cpp print_timings: "draft acceptance = R (A accepted / G generated), mean len = L" then,
# at -lv 4, "acc per pos = (...)" (ggml-org/llama.cpp @ 001d906a6d86, the stored commit read); builds with PR #24536
# print "mean acceptance length = L, acceptance rate per position = (...)" on the one line (issue 23's capture).
# L = 1 + accepted / verification steps; each rate is n_accepted_per_pos[i] / verification steps.
NEWER = (
    "slot print_timing: id  0 | task 0 | draft acceptance = 0.66237 (  257 accepted /   388 generated), "
    "mean acceptance length =  3.65, acceptance rate per position = (0.804, 0.701, 0.629, 0.515)\n"
)
TRACE = (
    "slot print_timing: id  0 | task 0 | draft acceptance = 0.66237 (  257 accepted /   388 generated), "
    "mean len =  3.65\nslot print_timing: id  0 | task 0 |      acc per pos = (0.804, 0.701, 0.629, 0.515)\n"
)


@pytest.mark.parametrize("log", [NEWER, TRACE])
def test_the_newer_per_request_lines_are_read_with_their_rates(log: str) -> None:
    _, (measurement,) = engine_metrics.read_measurements(log, k=4)
    assert (measurement.accepted, measurement.draft_tokens) == (257, 388)
    assert measurement.drafts == 97  # 257 / (3.65 - 1), to the nearest whole number
    assert sum(measurement.per_position) == pytest.approx(257)
    assert measurement.per_position[0] == pytest.approx(0.804 * 97, abs=0.5)
    assert not any("no mean len" in note for note in measurement.notes)
    calibrated = engine_metrics.calibrate_measurement(measurement, 0.1, 8)
    assert calibrated.interval.low is not None and calibrated.interval.high is not None
    assert calibrated.interval.low <= calibrated.result.acceptance <= calibrated.interval.high


def test_the_statistics_line_of_a_newer_drafter_is_read() -> None:
    log = (
        "spec common_specu: statistics        draft-mtp: #calls(b,g,a) =    1    213    213, #gen drafts =    213, "
        "#acc drafts =   170, #gen tokens =    426, #acc tokens =   297, #mean acc len = 2.39, "
        "#acc rate/pos = (0.798, 0.596), dur(b,g,a) = 0.005, 1122.769, 0.517 ms\n"
    )
    _, (measurement,) = engine_metrics.read_measurements(log, k=2)
    assert measurement.per_position == pytest.approx((170, 127))
    assert measurement.drafts == 213


def test_an_interval_holds_its_own_estimate_when_every_draft_token_is_accepted() -> None:
    # all accepted: the Wilson upper end is 1 exactly (floating point gave 0.9999999999999999)
    scrape = (
        "llamacpp:spec_decode_num_drafts_total 50\nllamacpp:spec_decode_num_draft_tokens_total 150\n"
        "llamacpp:spec_decode_num_accepted_tokens_total 150\n"
        + "".join(f'llamacpp:spec_decode_num_accepted_tokens_per_pos{{position="{i}"}} 50\n' for i in range(3))
    )
    calibrated = engine_metrics.calibrate_report(scrape, 0.1, 8).top
    assert calibrated.result.acceptance == 1.0
    assert calibrated.interval.high == 1.0 and calibrated.interval.low is not None
    strict = engine_metrics.acceptance_interval(calibrated.measurement, 1.0, 3, 0.999)
    assert strict.high == 1.0


def _gguf(path: Path, arch: str, tensors: list[str], blocks: int = 2) -> str:
    """A GGUF header (no tensor data): general.architecture, <arch>.block_count and the tensor names."""

    def text(value: str) -> bytes:
        return struct.pack("<Q", len(value)) + value.encode()

    body = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), 2)
    body += text("general.architecture") + struct.pack("<I", 8) + text(arch)
    body += text(f"{arch}.block_count") + struct.pack("<I", 4) + struct.pack("<I", blocks)
    for name in tensors:
        body += text(name) + struct.pack("<I", 1) + struct.pack("<Q", 16) + struct.pack("<IQ", 0, 0)
    path.write_bytes(body)
    return str(path)


def test_a_draft_gguf_names_its_own_type_when_no_spec_type_is_given(tmp_path: Path) -> None:
    # common_speculative_types_from_gguf (PRs #26814, #27005) as b11312 vendors it (llama-cpp-python 0.3.36 sdist:
    # common/speculative.cpp line 2270, common/arg.cpp line 568): nextn.eh_proj in the last block is draft-mtp,
    # arch dflash with markov_w1 is draft-dspark, without it draft-dflash; a plain model infers nothing
    newest = engines.version("llamacpp")
    mtp = _gguf(tmp_path / "mtp.gguf", "qwen35", ["token_embd.weight", "blk.1.nextn.eh_proj.weight"])
    dspark = _gguf(tmp_path / "dspark.gguf", "dflash", ["markov_w1.weight"])
    dflash = _gguf(tmp_path / "dflash.gguf", "dflash", ["fc.weight"])
    plain = _gguf(tmp_path / "plain.gguf", "llama", ["token_embd.weight", "blk.1.attn_q.weight"])
    assert spec_types_from_gguf(mtp) == ["draft-mtp"]
    assert spec_types_from_gguf(dspark) == ["draft-dspark"] and spec_types_from_gguf(dflash) == ["draft-dflash"]
    assert spec_types_from_gguf(plain) == [] and spec_types_from_gguf(str(tmp_path / "absent.gguf")) == []
    assert llamacpp.read_config(Exported({}, ["-md", mtp], ""), newest, 2) == [3, 3]  # common.h n_max 3
    assert llamacpp.read_config(Exported({}, ["-md", mtp, "--spec-draft-n-max", "5"], ""), newest, 1) == [5]
    assert llamacpp.read_config(Exported({}, ["-md", plain], ""), newest, 2) == [0, 0]
    # an explicit --spec-type none is not the default: nothing is inferred
    assert llamacpp.read_config(Exported({}, ["-md", mtp, "--spec-type", "none"], ""), newest, 1) == [0]


CAPTURED = Path(__file__).parent / "captured"


def _captured(build: str, run: str = "") -> tuple[str, str, list[dict[str, object]]]:
    """The log, the /metrics scrape and the responses of one build's run (tests/engines/capture.py wrote them)."""
    name = capture.stem(build, run)
    log = (CAPTURED / f"{name}-lv4.log").read_text()
    scrape = (CAPTURED / f"{name}-metrics.prom").read_text()
    responses = json.loads((CAPTURED / f"{name}-responses.json").read_text())
    return log, scrape, responses


def _engine_counts(scrape: str) -> tuple[float, float, float, tuple[float, ...]]:
    """drafts, drafted, accepted and accepted per position as the server's own /metrics series say them."""
    totals = dict(re.findall(r"(?m)^llamacpp:spec_decode_(num_\w+?)_total (\S+)$", scrape))
    positions = re.findall(
        r'(?m)^llamacpp:spec_decode_num_accepted_tokens_per_pos_total\{position="(\d+)"\} (\S+)$', scrape
    )
    per_position = tuple(float(value) for _, value in sorted(positions, key=lambda item: int(item[0])))
    drafts, drafted, accepted = (
        float(totals[name]) for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens")
    )
    return drafts, drafted, accepted, per_position


@pytest.mark.parametrize("run", list(capture.RUNS))
@pytest.mark.parametrize("build", live_engine.BUILDS)
def test_a_real_log_scrape_and_responses_are_read_as_the_engine_counted_them(build: str, run: str) -> None:
    # captured from the real llama-server of each build (tests/engines/captured/README.md has the command): every
    # report reads back to the server's own counters: drafts (verifications), drafted and accepted tokens, the
    # count per position, and a p inside its own interval
    log, scrape, responses = _captured(build, run)
    drafts, drafted, accepted, per_position = _engine_counts(scrape)
    assert drafts > 0 and drafted > 0 and len(per_position) == 4 and sum(per_position) == accepted
    if run == "rejected":
        # drafts partly rejected: fewer accepted than drafted, fewer at each later position, and both requests draft
        assert 0 < accepted < drafted and per_position[0] < drafts
        assert all(a >= b for a, b in itertools.pairwise(per_position))
        assert per_position[-1] < per_position[0]
        assert all(response["timings"]["draft_n"] > 0 for response in responses)  # type: ignore[index]
    # nothing the build printed about its drafts goes unread
    assert unread_lines(log) == [] and unread_series(scrape) == []
    assert all(unread_timings(response["timings"]) == [] for response in responses)  # type: ignore[arg-type]
    _, (from_metrics,) = engine_metrics.read_measurements(scrape)
    _, (from_log,) = engine_metrics.read_measurements(log)
    lines = "\n".join(line for line in log.splitlines() if "draft acceptance" in line or "acc per pos" in line)
    _, (from_requests,) = engine_metrics.read_measurements(lines, k=4)
    for measurement in (from_metrics, from_log, from_requests):
        assert (measurement.drafts, measurement.draft_tokens, measurement.accepted, measurement.k) == (
            drafts,
            drafted,
            accepted,
            4,
        )
        assert measurement.per_position == per_position
        assert not any("not read" in note for note in measurement.notes)
    # the statistics line's own totals: #acc drafts is position 1, a of #calls(b,g,a) the verifications
    (statistics,) = last_statistics(log).values()
    assert (statistics.accept_calls, statistics.tokens, statistics.accepted_tokens) == (drafts, drafted, accepted)
    assert statistics.accepted_drafts == per_position[0]
    # the responses' timings: drafted and accepted tokens per response, summed
    _, (from_timings,) = engine_metrics.read_measurements(json.dumps(responses), k=4)
    assert (from_timings.draft_tokens, from_timings.accepted) == (drafted, accepted)
    for measurement in (from_metrics, from_log, from_requests, from_timings):
        calibrated = engine_metrics.calibrate_measurement(measurement, 0.1, 8)
        assert calibrated.interval.low is not None and calibrated.interval.high is not None
        assert calibrated.interval.low <= calibrated.result.acceptance <= calibrated.interval.high
        if run == "rejected":
            assert 0 < calibrated.result.acceptance < 1 and calibrated.interval.high < 1


def test_each_build_has_its_real_outputs_captured() -> None:
    for build in live_engine.BUILDS:
        for run in capture.RUNS:
            for suffix in ("lv4.log", "metrics.prom", "responses.json"):
                path = CAPTURED / f"{capture.stem(build, run)}-{suffix}"
                assert path.is_file(), f"python -m tests.engines.capture {build} {run}".strip()
    readme = (CAPTURED / "README.md").read_text()
    assert "python -m tests.engines.capture BUILD" in readme and all(build in readme for build in live_engine.BUILDS)
    assert "python -m tests.engines.capture BUILD rejected" in readme


# A statistics line as b11312 and b11434 print it, then the same line as a later build might print it
KNOWN_STATISTICS = (
    "spec common_specu: statistics     draft-simple: #calls(b,g,a) =    1      8      8, #gen drafts =      8, "
    "#acc drafts =     8, #gen tokens =     31, #acc tokens =    31, #mean acc len = 4.88, "
    "#acc rate/pos = (1.000, 1.000, 1.000, 0.875), dur(b,g,a) = 0.001, 764.060, 0.005 ms"
)


@pytest.mark.parametrize(
    "changed",
    [
        KNOWN_STATISTICS.replace("#acc tokens =    31,", "#acc tokens =    31, #skipped = 3,"),  # a new field
        KNOWN_STATISTICS.replace("#gen drafts", "#drafts"),  # a renamed field
        KNOWN_STATISTICS.replace(" ms", " ms, #acc len hist = (0, 1, 7)"),  # a field after dur
        "spec common_specu: statistics        draft-mtp: calls = 5, drafted = 20, accepted = 12",  # another form
    ],
)
def test_a_statistics_line_the_reader_does_not_know_is_named_not_passed_over(changed: str) -> None:
    assert unread_lines(KNOWN_STATISTICS) == [] and unread_statistics(KNOWN_STATISTICS) == []
    assert unread_lines(changed) == [changed.strip()]
    log = KNOWN_STATISTICS + "\n" + changed.replace("draft-simple", "ngram-simple") + "\n"
    if last_statistics(log).keys() == {"draft-simple"}:
        return  # not read at all: named by unread_lines above
    _, (measurement,) = engine_metrics.read_measurements(log, k=4)
    assert any("not read" in note for note in measurement.notes)


def test_draft_lines_and_series_the_reader_does_not_know_are_named() -> None:
    known = (
        "slot print_timing: id  0 | task 0 | draft acceptance = 0.66237 (  257 accepted /   388 generated), "
        "mean len =  3.65\nslot print_timing: id  0 | task 0 |      acc per pos = (0.804, 0.701, 0.629, 0.515)\n"
    )
    assert unread_lines(known) == [] and unread_lines(NEWER) == [] and unread_lines(RATES) == []
    extended = known.replace("mean len =  3.65", "mean len =  3.65, drafted per step = 3.9")
    assert unread_lines(extended) == [extended.splitlines()[0]]
    renamed = known.replace("acc per pos = (", "acc per position = (")
    assert unread_lines(renamed) == [renamed.splitlines()[1].strip()]
    scrape = "llamacpp:spec_decode_num_drafts_total 8\nllamacpp:spec_decode_num_draft_sampled_total 3\n"
    assert unread_series(scrape) == ["llamacpp:spec_decode_num_draft_sampled_total"]
    assert unread_timings({"draft_n": 4, "draft_n_accepted": 3, "draft_ms": 1.0}) == ["draft_ms"]
