"""The canary check: its arithmetic (app.model.live.rollout), the engines' decode-time series, and `specdec-lab rollout
check` against canned Prometheus HTTP APIs (bad input, verdicts, exit codes, what --format json keeps)."""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from scipy import stats

from app.cli import main
from app.model import engines
from app.model.engines.reports import Measurement
from app.model.live import rollout
from app.service.clients import rollout as rollout_client
from tests.support import answering, free_port

# ---------------------------------------------------------------------------
# Arithmetic


def test_the_speedup_is_the_geometric_mean_of_per_interval_ratios_with_a_t_interval() -> None:
    control = [0.10, 0.12, 0.11, 0.09, 0.10]
    canary = [0.05, 0.05, 0.06, 0.05, 0.04]
    estimate = rollout.speedup_estimate(control, canary)
    logs = [math.log(a / b) for a, b in zip(control, canary, strict=True)]
    mean = sum(logs) / 5
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 4)
    half = stats.t.ppf(0.975, 4) * sd / math.sqrt(5)
    assert estimate.intervals == 5 and estimate.speedup == pytest.approx(math.exp(mean))
    assert estimate.low == pytest.approx(math.exp(mean - half)) and estimate.high == pytest.approx(
        math.exp(mean + half)
    )
    assert estimate.low < estimate.speedup < estimate.high


def test_intervals_without_tokens_on_either_side_are_left_out() -> None:
    estimate = rollout.speedup_estimate([0.1, None, 0.1, 0.1], [0.05, 0.05, None, 0.05])
    assert estimate.ratios == (2.0, 2.0) and estimate.low is None  # two intervals: no interval drawn yet
    assert rollout.per_token(None, 3.0) is None and rollout.per_token(1.0, 0.0) is None
    assert rollout.per_token(2.0, 4.0) == 0.5 and rollout.per_token(float("nan"), 4.0) is None


def test_counter_readings_become_deltas_and_a_restart_loses_only_its_own_interval() -> None:
    deltas = rollout.interval_deltas([0.0, 1.0, 3.0, 0.5, 1.5], [0.0, 10.0, 30.0, 5.0, 15.0])
    assert deltas == [(1.0, 10.0), (2.0, 20.0), None, (1.0, 10.0)]
    assert rollout.interval_deltas([0.0, None, 1.0], [0.0, 1.0, 2.0]) == [None, None]
    summed = rollout.class_deltas([[(1.0, 10.0), None], [(2.0, 10.0), (1.0, 5.0)]])
    assert summed == [(3.0, 20.0), (1.0, 5.0)]


def _estimate(ratios: list[float]) -> rollout.SpeedupEstimate:
    return rollout.speedup_estimate([r * 0.05 for r in ratios], [0.05] * len(ratios))


HOLDS = rollout.AcceptanceCheck("holds", 0.8, 0.75, 0.85, 4, 100.0, (0.7, 0.9), "given", "acceptance holds")
FELL = rollout.AcceptanceCheck("fell", 0.3, 0.25, 0.35, 4, 100.0, (0.7, 0.9), "given", "acceptance fell")


def test_spec_counts_come_from_the_same_two_scrapes_of_every_counter() -> None:
    """A counter born inside an interval (llama.cpp's per-position series appear once a drafted request has
    finished) leaves that interval of that replica out, rather than stretching one count against another."""
    assert rollout.counter_deltas([None, None, 5.0, 9.0, 2.0]) == [0.0, None, 4.0, None]
    drafts = [0.0, 3.0, 10.0, 20.0]
    accepted = [None, None, 6.0, 14.0]  # born between the second and the third reading
    counts = rollout.replica_counts({"drafts": drafts, "at 0": accepted}, 3)
    assert counts == [{"drafts": 3.0, "at 0": 0.0}, None, {"drafts": 10.0, "at 0": 8.0}]
    other = rollout.replica_counts({"drafts": [0.0, 1.0, 2.0, 3.0], "at 0": [0.0, 1.0, 1.0, 2.0]}, 3)
    per_class = rollout.class_counts([counts, other], 3)
    assert per_class == [
        {"drafts": 4.0, "at 0": 1.0},
        {"drafts": 1.0, "at 0": 0.0},  # the first replica's interval is left out, not counted half
        {"drafts": 11.0, "at 0": 9.0},
    ]
    assert rollout.summed(per_class[1:]) == {"drafts": 12.0, "at 0": 9.0}
    assert rollout.summed([None, None]) is None


def test_an_interval_whose_counts_contradict_each_other_is_left_out_with_the_one_before() -> None:
    """More tokens accepted at position 0 than drafts over an interval cannot be: the reading it shares with the
    interval before caught the counters disagreeing, so both go (seen once in CI: 130 against 125 drafts)."""
    chain = ["drafts", "at 0", "at 1"]
    rows = [
        {"drafts": 10.0, "at 0": 9.0, "at 1": 5.0},
        {"drafts": 10.0, "at 0": 6.0, "at 1": 4.0},  # ends at the reading that caught them
        {"drafts": 10.0, "at 0": 13.0, "at 1": 6.0},  # 13 accepted at position 0 out of 10 drafts
        None,
        {"drafts": 10.0, "at 0": 9.0, "at 1": 9.5},  # position 1 above position 0
    ]
    kept, left_out = rollout.without_contradictions(rows, chain)
    assert kept == [rows[0], None, None, None, None] and left_out == 3
    assert not rollout.contradicts({"drafts": 10.0, "at 0": 10.0, "at 1": 10.0}, chain)


def test_the_verdicts() -> None:
    faster, slower = _estimate([1.9, 2.1, 2.0, 2.05]), _estimate([0.7, 0.8, 0.75, 0.72])
    assert rollout.verdict(faster, HOLDS, 60).status == rollout.PROMOTE
    assert rollout.verdict(faster, FELL, 60).status == rollout.ROLL_BACK  # faster, but acceptance fell
    assert rollout.verdict(slower, HOLDS, 60).status == rollout.ROLL_BACK
    assert "slower than control" in rollout.verdict(slower, HOLDS, 60).reason
    assert rollout.verdict(faster, HOLDS, 60, speculating=False).status == rollout.NOT_SPECULATING
    unknown = rollout.AcceptanceCheck("unknown", message="no counts")
    promoted = rollout.verdict(faster, unknown, 60)
    assert promoted.status == rollout.PROMOTE and promoted.notes  # said, not hidden


def test_a_hold_says_how_much_more_data_would_decide() -> None:
    few = rollout.verdict(_estimate([2.0]), HOLDS, 30)
    assert few.status == rollout.HOLD and few.more_intervals == rollout.MIN_INTERVALS - 1 and few.more_seconds == 60
    assert "too little traffic" in few.reason
    close = _estimate([1.3, 0.85, 1.2, 0.9, 1.15])  # a small gain, a wide spread
    held = rollout.verdict(close, HOLDS, 60)
    assert held.status == rollout.HOLD and held.more_intervals is not None and held.more_intervals > 0
    # with that many intervals more at the same mean and spread, the interval would clear 1
    n = close.intervals + held.more_intervals
    assert close.log_mean is not None and close.log_sd is not None
    assert stats.t.ppf(0.975, n - 1) * close.log_sd / math.sqrt(n) < abs(close.log_mean)
    assert f"{held.more_intervals} more intervals ({held.more_intervals * 60:g} s)" in held.reason
    same = rollout.verdict(_estimate([1.25, 0.8, 1.25, 0.8]), HOLDS, 60)  # no difference at all
    assert same.status == rollout.HOLD and same.more_intervals is None and "no amount of data" in same.reason


def test_one_verdict_for_every_class() -> None:
    assert rollout.overall([rollout.PROMOTE, rollout.NOT_SPECULATING]) == rollout.PROMOTE
    assert rollout.overall([rollout.PROMOTE, rollout.HOLD]) == rollout.HOLD
    assert rollout.overall([rollout.HOLD, rollout.ROLL_BACK]) == rollout.ROLL_BACK
    assert rollout.overall([rollout.NOT_SPECULATING]) == rollout.HOLD
    assert rollout.EXIT_CODES == {rollout.PROMOTE: 0, rollout.ROLL_BACK: 1, rollout.HOLD: 3}


def _measurement(p: float, k: int, drafts: float) -> Measurement:
    per_position = tuple(drafts * p ** (i + 1) for i in range(k))
    return Measurement("vllm", "vllm-metrics", None, drafts, drafts * k, sum(per_position), per_position)


def test_acceptance_is_judged_against_its_calibrated_interval() -> None:
    held = rollout.judge_acceptance(_measurement(0.8, 4, 2000), (0.75, 0.85), "given")
    assert held.status == "holds" and held.p == pytest.approx(0.8, abs=0.01)
    fell = rollout.judge_acceptance(_measurement(0.5, 4, 2000), (0.75, 0.85), "given")
    assert fell.status == "fell" and "fell below its calibrated [0.750, 0.850] (given)" in fell.message
    assert rollout.judge_acceptance(None, (0.75, 0.85), "given").status == "unknown"
    assert rollout.judge_acceptance(_measurement(0.8, 4, 2000), None, "x").status == "unknown"


@pytest.mark.parametrize(
    ("text", "normal"),
    [('role="canary"', 'role="canary"'), ('{ role = "canary" , pool=~"a.*" }', 'role="canary",pool=~"a.*"')],
)
def test_matchers_are_read_and_normalised(text: str, normal: str) -> None:
    assert rollout.matcher("--canary", text) == normal


@pytest.mark.parametrize("text", ["canary", 'role="canary', "role=canary", "", 'a="b" b="c"', "x" * 600])
def test_a_matcher_that_is_not_one_names_the_option(text: str) -> None:
    with pytest.raises(rollout.RolloutInputError, match="--canary"):
        rollout.matcher("--canary", text)


def test_windows_durations_and_overlap() -> None:
    assert rollout.duration("--window", "5m", 1, 3600) == 300 and rollout.duration("--window", "90", 1, 3600) == 90
    with pytest.raises(rollout.RolloutInputError, match="--interval: must be a duration"):
        rollout.duration("--interval", "soon", 1, 60)
    with pytest.raises(rollout.RolloutInputError, match="from 1 s to 3600 s"):
        rollout.duration("--interval", "2h", 1, 3600)
    with pytest.raises(rollout.RolloutInputError, match="too short for --interval 60 s: it holds 2 intervals"):
        rollout.intervals_in(120, 60)
    assert rollout.intervals_in(180, 60) == 3
    with pytest.raises(rollout.RolloutInputError, match="selects what --canary selects"):
        rollout.distinct('role="a",pool="x"', 'pool="x",role="a"')


def test_every_engine_names_its_decode_time_series_with_sources() -> None:
    for name in engines.ENGINES:
        series = engines.adapter(name).DECODE_TIME
        assert series.seconds and series.tokens and series.note, name
        assert series.cite() and all("@" in cite or "as of" in cite for cite in series.cite()), name
    assert engines.adapter("llamacpp").DECODE_TIME.seconds == "llamacpp:tokens_predicted_seconds_total"
    assert engines.adapter("llamacpp").DECODE_TIME.tokens == "llamacpp:tokens_predicted_total"
    vllm = engines.adapter("vllm").DECODE_TIME  # one latency per step: tokens from the token counter
    assert vllm.seconds == "vllm:inter_token_latency_seconds_sum" and vllm.first_tokens
    assert engines.adapter("trtllm").DECODE_TIME.per_request  # one observation per request
    expr = rollout.decode_tokens(vllm, "model_name", 'role="canary"')
    assert expr == (
        'sum by (instance, model_name) (vllm:generation_tokens_total{role="canary"}) - '
        'sum by (instance, model_name) (vllm:time_to_first_token_seconds_count{role="canary"})'
    )


# ---------------------------------------------------------------------------
# The command against canned Prometheus HTTP APIs

SECONDS, TOKENS = "llamacpp:tokens_predicted_seconds_total", "llamacpp:tokens_predicted_total"
DRAFTS, PER_POSITION = "llamacpp:spec_decode_num_drafts_total", "llamacpp:spec_decode_num_accepted_tokens_per_pos_total"
DRAFTED = "llamacpp:spec_decode_num_draft_tokens_total"


def _series(role: str, name: str) -> dict[str, str]:
    return {"instance": f"{role}:8080", "role": role, "model_name": name}


class Fleet:
    """A Prometheus answering for llama-servers: per role and class, seconds per token (with a spread that
    alternates by interval) and whether the canary speculates, at acceptance p with k = 4.  A fleet of another
    engine names its decode-time series (``seconds``, ``tokens``) and answers for its spec-decode series
    (``spec_series``)."""

    seconds, tokens = SECONDS, TOKENS

    def __init__(self, per_token: dict[tuple[str, str], float], speculating: set[str], p: float = 0.8) -> None:
        self.per_token, self.speculating, self.p = per_token, speculating, p
        self.asked: list[str] = []

    def counter(self, role: str, name: str, which: str, at: float) -> float:
        tokens = 20.0 * at  # 20 tokens a second, each taking per_token seconds give or take 10% over a minute
        wobble = 6.0 * math.sin(at / 60.0 + (1.0 if role == "canary" else 0.0))
        return tokens if which == "tokens" else 20.0 * (at + wobble) * self.per_token[(role, name)]

    def answer(self, path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        expr = query["query"][0]
        self.asked.append(expr)
        role = next((r for r in ("canary", "control") if f'role="{r}"' in expr), "")
        names = sorted({name for _, name in self.per_token})
        if expr.startswith("count by (__name__)"):
            return _ok("vector", [{"metric": {"__name__": self.seconds}, "value": [0, "1"]}])
        if expr.startswith(f"{self.seconds}{{"):
            return _ok("vector", [{"metric": _series(role, n), "value": [0, "1"]} for n in names])
        if expr.startswith("count by (model_name)"):
            return _ok("vector", [{"metric": {"model_name": n}, "value": [0, "1"]} for n in sorted(self.speculating)])
        start, end, step = (float(query[key][0]) for key in ("start", "end", "step"))
        times = [start + step * i for i in range(round((end - start) / step) + 1)]
        result = []
        for name in names:
            if expr.startswith("sum by (instance, model_name)") and (self.seconds in expr or self.tokens in expr):
                which = "seconds" if self.seconds in expr else "tokens"
                values = [[at, repr(self.counter(role, name, which, at))] for at in times]
                result.append({"metric": _series(role, name), "values": values})
            elif name in self.speculating:
                result += self.spec_series(expr, name, start, end, times)
        return _ok("matrix", result)

    def spec_series(self, expr: str, name: str, start: float, end: float, times: list[float]) -> list[dict[str, Any]]:
        """The canary's spec-decode counters' raw values: a draft a second, each of 4 tokens."""
        if PER_POSITION in expr:
            return [
                {
                    "metric": {**_series("canary", name), "position": str(i)},
                    "values": [[at, repr(at * self.p ** (i + 1))] for at in times],
                }
                for i in range(4)
            ]
        if DRAFTS in expr or DRAFTED in expr:
            per = 1.0 if DRAFTS in expr else 4.0
            return [{"metric": _series("canary", name), "values": [[at, repr(at * per)] for at in times]}]
        return []


def _ok(kind: str, result: list[dict[str, Any]]) -> tuple[int, bytes]:
    return 200, json.dumps({"status": "success", "data": {"resultType": kind, "result": result}}).encode()


@contextlib.contextmanager
def serving(answer: Callable[[str, dict[str, list[str]]], tuple[int, bytes]]) -> Iterator[str]:
    def as_json(path: str, query: dict[str, list[str]]) -> tuple[int, str, bytes]:
        status, body = answer(path, query)
        return status, "application/json", body

    with answering(as_json) as host:
        yield f"http://{host}"


def _check(url: str, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(
        [
            *("rollout", "check", "--prometheus", url, "--canary", 'role="canary"', "--control", 'role="control"'),
            *("--window", "10m", "--interval", "1m", *extra),
        ]
    )
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return code, captured.out, captured.err


def test_a_faster_canary_is_promoted_and_a_class_without_drafts_is_not_speculating(
    capsys: pytest.CaptureFixture[str],
) -> None:
    fleet = Fleet(
        {("canary", "chat"): 0.02, ("control", "chat"): 0.04, ("canary", "code"): 0.04, ("control", "code"): 0.04},
        {"chat"},
    )
    with serving(fleet.answer) as url:
        code, out, err = _check(url, capsys)
        assert code == 0, out + err
        assert re.search(r"model_name=chat: promote: the canary is faster than control: speedup (1\.9\d|2\.0\d)x", out)
        assert "model_name=code: not speculating" in out and "verdict: promote (exit 0)" in out
        assert len(fleet.asked) <= rollout_client.QUERIES
        code, out, _ = _check(url, capsys, "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["verdict"] == "promote" and report["exit_code"] == 0
    chat = next(item for item in report["classes"] if item["class"] == "chat")
    assert chat["speedup"]["low"] < 2.0 < chat["speedup"]["high"] and chat["speedup"]["intervals"] == 10
    assert chat["acceptance"]["status"] == "holds" and chat["acceptance"]["p"] == pytest.approx(0.8, abs=0.01)
    # everything read is kept: each interval's seconds and tokens of both sides, the readings and the queries
    assert len(chat["intervals"]) == 10 and chat["intervals"][0]["control_tokens"] == pytest.approx(1200.0)
    assert len(report["readings"]["times"]) == 11 and report["queries"]
    assert report["decode_time"]["seconds"] == SECONDS and report["decode_time"]["sources"]


def test_a_slower_canary_is_rolled_back_and_fallen_acceptance_too(capsys: pytest.CaptureFixture[str]) -> None:
    slower = Fleet({("canary", "chat"): 0.05, ("control", "chat"): 0.04}, {"chat"})
    with serving(slower.answer) as url:
        code, out, _ = _check(url, capsys)
    assert code == 1 and "slower than control" in out and "verdict: roll back (exit 1)" in out
    faster = Fleet({("canary", "chat"): 0.02, ("control", "chat"): 0.04}, {"chat"}, p=0.5)
    with serving(faster.answer) as url:
        code, out, _ = _check(url, capsys, "--calibrated", "0.75,0.85")
    assert code == 1 and "fell below its calibrated [0.750, 0.850] (given)" in out


def test_too_little_traffic_holds(capsys: pytest.CaptureFixture[str]) -> None:
    fleet = Fleet({("canary", "chat"): 0.02, ("control", "chat"): 0.04}, {"chat"})
    quiet = fleet.answer

    def answer(path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        status, body = quiet(path, query)
        if "query_range" in path and "sum by (instance" in query["query"][0]:
            data = json.loads(body)
            for item in data["data"]["result"]:  # the counters move in one interval only
                item["values"] = [[at, "100" if i < 5 else "200"] for i, (at, _) in enumerate(item["values"])]
            body = json.dumps(data).encode()
        return status, body

    with serving(answer) as url:
        code, out, _ = _check(url, capsys)
    assert code == 3 and "too little traffic" in out and "2 more (about 120 s of traffic on both)" in out


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        (["--window", "2m"], "--window: 120 s is too short for --interval 60 s"),
        (["--canary", "canary"], "--canary: must be label matchers"),
        (["--control", 'role="canary"'], "--control: selects what --canary selects"),
        (["--interval", "0.1s"], "--interval: must be from 1 s"),
        (["--calibrated", "0.9,0.1"], "--calibrated: must be LOW,HIGH"),
        (["--engine-version", "2026-10"], "--engine-version: needs --engine"),
        (["--label", "1class"], "--label: must be a Prometheus label name"),  # the rules' own check
        (["--label", "__name__"], "--label: must be a Prometheus label name"),
    ],
)
def test_bad_input_is_refused_before_any_query(
    capsys: pytest.CaptureFixture[str], extra: list[str], words: str
) -> None:
    asked: list[str] = []

    def answer(path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        asked.append(path)
        return 500, b"{}"

    with serving(answer) as url:
        code, _, err = _check(url, capsys, *extra)
    assert code == 2 and words in err and not asked, err


def test_matchers_that_select_nothing_or_overlap_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    fleet = Fleet({("canary", "chat"): 0.02, ("control", "chat"): 0.04}, {"chat"})

    def nothing(path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        if query["query"][0].startswith(f'{SECONDS}{{role="canary"'):
            return _ok("vector", [])
        return fleet.answer(path, query)

    with serving(nothing) as url:
        code, out, err = _check(url, capsys, "--format", "json")
    assert code == 2 and '--canary: role="canary" selects no series of llamacpp:tokens_predicted_seconds_total' in err
    assert json.loads(out)["exit_code"] == 2  # --format json says so too

    def overlapping(path: str, query: dict[str, list[str]]) -> tuple[int, bytes]:
        if query["query"][0].startswith(f"{SECONDS}{{"):
            return _ok("vector", [{"metric": _series("canary", "chat"), "value": [0, "1"]}])
        return fleet.answer(path, query)

    with serving(overlapping) as url:
        code, _, err = _check(url, capsys)
    assert code == 2 and "both select 1 series (canary:8080)" in err


def test_a_prometheus_that_does_not_answer_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _check(f"http://127.0.0.1:{free_port()}", capsys)
    assert code == 2 and "does not answer" in err
    with serving(lambda path, query: _ok("vector", [])) as url:
        code, _, err = _check(url, capsys)
    assert code == 2 and re.search(r"holds none of the decode-time series \(.*llamacpp:tokens_predicted", err)


# ---------------------------------------------------------------------------
# SGLang: it counts verifications and generated tokens, with a gauge of the k running
# (python/sglang/srt/observability/metrics_collector.py @ 016d8605), and times tokens in its inter-token latency
# histogram

ITL_SUM, ITL_COUNT = "sglang:inter_token_latency_seconds_sum", "sglang:inter_token_latency_seconds_count"
VERIFY, GENERATED, STEPS = "sglang:spec_verify_calls_total", "sglang:generation_tokens_total", "sglang:spec_num_steps"


class SGLangFleet(Fleet):
    """A Prometheus answering for SGLang servers: the canary verifies 20 times a second at k = 4, each giving the
    tokens an i.i.d. acceptance p at 4 gives on average (p_late from the window's second half on); ``k_late``
    is the k its gauge shows in the second half."""

    seconds, tokens = ITL_SUM, ITL_COUNT

    def __init__(self, *args: Any, p_late: float | None = None, k_late: int = 4, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.p_late, self.k_late = p_late if p_late is not None else self.p, k_late
        self.middle = 0.0

    def spec_series(self, expr: str, name: str, start: float, end: float, times: list[float]) -> list[dict[str, Any]]:
        if VERIFY in expr or GENERATED in expr:  # raw counters
            self.middle = (start + end) / 2  # where the window's halves meet
            early, late = (sum(p**i for i in range(5)) if GENERATED in expr else 1.0 for p in (self.p, self.p_late))
            values = [
                [at, repr(20.0 * (early * min(at, self.middle) + late * max(0.0, at - self.middle)))] for at in times
            ]
            return [{"metric": _series("canary", name), "values": values}]
        if STEPS in expr:  # the gauge over the interval ending at each time
            gauge = []
            for at in times:
                k = self.k_late if at > self.middle else 4  # a k that changed within the half: low and high differ
                gauge.append([at, repr(float(min(k, 4) if "min_over_time" in expr else max(k, 4)))])
            return [{"metric": {"model_name": name}, "values": gauge}]
        return []


def test_an_sglang_canary_has_its_acceptance_judged(capsys: pytest.CaptureFixture[str]) -> None:
    faster = {("canary", "chat"): 0.02, ("control", "chat"): 0.04}
    fleet = SGLangFleet(faster, {"chat"}, p=0.8)
    with serving(fleet.answer) as url:
        code, out, err = _check(url, capsys, "--format", "json")
    assert code == 0, out + err
    chat = json.loads(out)["classes"][0]
    acceptance = chat["acceptance"]
    assert chat["verdict"] == "promote" and acceptance["status"] == "holds", chat
    # p from tokens per verification at the gauge's k, its interval from the verifications counted
    assert acceptance["p"] == pytest.approx(0.8, abs=0.005) and acceptance["k"] == 4
    assert acceptance["calibrated"][0] < 0.8 < acceptance["calibrated"][1]
    assert acceptance["counts"]["halves"][1]["drafts"] == pytest.approx(20.0 * 300)
    assert any(VERIFY in asked for asked in fleet.asked) and len(fleet.asked) <= rollout_client.QUERIES

    fallen = SGLangFleet(faster, {"chat"}, p=0.8, p_late=0.5)
    with serving(fallen.answer) as url:
        code, out, _ = _check(url, capsys)
    assert code == 1 and "fell below its calibrated" in out, out

    switched = SGLangFleet(faster, {"chat"}, p=0.8, k_late=2)  # the gauge shows another k: not judged
    with serving(switched.answer) as url:
        code, out, _ = _check(url, capsys, "--format", "json")
    acceptance = json.loads(out)["classes"][0]["acceptance"]
    assert acceptance["status"] == "unknown" and acceptance["p"] is None, acceptance
    assert "the k running changed over the window (2, 4)" in acceptance["message"]
