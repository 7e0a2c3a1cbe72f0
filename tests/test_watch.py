"""`specdec-lab watch` against a real HTTP server: prometheus_client's own, serving vLLM-format counters."""

from __future__ import annotations

import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from app.cli import main
from app.model.counters.calibration import ErrorKind
from app.model.counters.counts import Measurement
from app.model.engines.reports import EngineFormatError
from app.model.live.watch import (
    IntervalReport,
    ScrapeFailed,
    WatchState,
    draft_lengths,
    interval_report,
    read_scrape,
    watch_scrapes,
    went_down,
)
from app.model.rules.alerts import MIN_DRAFTS
from app.service.regimes import SetupRequest, build_setup
from tests.samples.engine_reports import sample_accepted

K = 4


def _scrape(
    drafts: float, draft_tokens: float, accepted: float, per_position: tuple[float, ...], running: float
) -> Measurement:
    """One scrape's totals, as read_scrape reads them from vLLM's /metrics."""
    return Measurement("vllm", "vllm-metrics", None, drafts, draft_tokens, accepted, per_position, batch=running)


@dataclass(eq=False)
class FakeVllm:
    """vLLM V1 spec-decode counters that advance by one batch of drafts at every scrape.

    Acceptance is ``high`` for the first ``drop_after`` scrapes and ``low`` after; at scrape ``restart_at``
    every counter starts again from zero, as after a server restart.
    """

    high: float = 0.85
    low: float = 0.3
    drop_after: int = 4
    restart_at: int | None = None
    drafts_per_scrape: int = 4000
    running: float = 8.0
    scrapes: int = 0
    totals: dict[str, float] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def _advance(self) -> None:
        self.scrapes += 1
        if self.restart_at is not None and self.scrapes == self.restart_at:
            self.totals = {}
        p = self.high if self.scrapes <= self.drop_after else self.low
        draws = sample_accepted(p, K, self.drafts_per_scrape, seed=self.scrapes)
        add = {"drafts": self.drafts_per_scrape, "draft_tokens": self.drafts_per_scrape * K, "accepted": draws.sum()}
        for i in range(K):
            add[f"pos{i}"] = float(np.sum(draws > i))
        for name, value in add.items():
            self.totals[name] = self.totals.get(name, 0.0) + float(value)

    def collect(self) -> Iterator[object]:
        with self.lock:
            self._advance()
            totals = dict(self.totals)
        labels = ["engine", "model_name"]
        for name, key in (
            ("vllm:spec_decode_num_drafts", "drafts"),
            ("vllm:spec_decode_num_draft_tokens", "draft_tokens"),
            ("vllm:spec_decode_num_accepted_tokens", "accepted"),
        ):
            family = CounterMetricFamily(name, name, labels=labels)
            family.add_metric(["0", "target"], totals[key])
            yield family
        per_position = CounterMetricFamily(
            "vllm:spec_decode_num_accepted_tokens_per_pos", "per position", labels=[*labels, "position"]
        )
        for i in range(K):
            per_position.add_metric(["0", "target", str(i)], totals[f"pos{i}"])
        yield per_position
        running = GaugeMetricFamily("vllm:num_requests_running", "running", labels=labels)
        running.add_metric(["0", "target"], self.running)
        yield running


@pytest.fixture
def serve() -> Iterator[object]:
    servers = []

    def start(fake: FakeVllm) -> str:
        registry = CollectorRegistry()
        registry.register(fake)  # type: ignore[arg-type]
        server, thread = start_http_server(0, addr="127.0.0.1", registry=registry)
        servers.append((server, thread))
        return f"http://127.0.0.1:{server.server_address[1]}/metrics"

    yield start
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_watch_reports_each_interval_and_fails_when_acceptance_drops(
    serve: object, capsys: pytest.CaptureFixture[str]
) -> None:
    fake = FakeVllm()
    url = serve(fake)  # type: ignore[operator]
    started = time.monotonic()
    code = main(["watch", url, "--interval", "0.05", "--samples", "7", "--fail-on-regression"])
    assert time.monotonic() - started < 20
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("interval")]
    assert len(lines) == 7
    assert "calibrated interval" in lines[0] and lines[1].endswith("ok")
    assert any("acceptance dropped below its calibrated" in line for line in lines[4:])
    assert any("speculation stops paying" in line or "dropped" in line for line in lines[4:])
    assert "batch 8" in lines[0]
    assert code == 1


def test_without_fail_on_regression_the_exit_code_is_zero(serve: object, capsys: pytest.CaptureFixture[str]) -> None:
    url = serve(FakeVllm(drop_after=2))  # type: ignore[operator]
    assert main(["watch", url, "--interval", "0.05", "--samples", "4"]) == 0
    assert "regressed" in capsys.readouterr().out


def test_a_restart_is_a_reset_not_a_crash_nor_a_regression(serve: object, capsys: pytest.CaptureFixture[str]) -> None:
    url = serve(FakeVllm(drop_after=100, restart_at=4))  # type: ignore[operator]
    code = main(["watch", url, "--interval", "0.05", "--samples", "5", "--fail-on-regression"])
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("interval")]
    assert "counters reset" in lines[2] and lines[3].endswith("ok") and code == 0


def test_watch_serves_its_own_gauges(serve: object, capsys: pytest.CaptureFixture[str]) -> None:
    url = serve(FakeVllm(drop_after=100))  # type: ignore[operator]
    seen: dict[str, str] = {}

    def scrape_own() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and "text" not in seen:
            port = seen.get("port")
            if port:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
                        text = response.read().decode()
                    if "specdec_lab_expected_speedup " in text and "specdec_lab_expected_speedup 0.0" not in text:
                        seen["text"] = text
                except OSError:
                    pass
            time.sleep(0.05)

    from tests.support import free_port

    port = free_port()
    seen["port"] = str(port)
    reader = threading.Thread(target=scrape_own)
    reader.start()
    code = main(["watch", url, "--interval", "0.2", "--samples", "8", "--serve-port", str(port)])
    reader.join()
    assert code == 0
    text = seen.get("text", "")
    speedup = float(
        next(line.split()[1] for line in text.splitlines() if line.startswith("specdec_lab_expected_speedup "))
    )
    assert speedup > 1.0 and "specdec_lab_speculation_pays 1.0" in text


def test_unreachable_server_and_bad_scheme(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.support import free_port

    closed = f"http://127.0.0.1:{free_port()}/metrics"
    assert main(["watch", closed, "--interval", "0.05", "--samples", "2"]) == 0
    assert capsys.readouterr().out.count("scrape failed") == 2
    assert main(["watch", "ftp://127.0.0.1/metrics", "--samples", "1"]) == 2


def test_interval_arithmetic_without_a_server() -> None:
    setup = build_setup(SetupRequest()).setup
    before = _scrape(1000, 4000, 2000, (800, 600, 400, 200), 4)
    after = _scrape(3000, 12000, 6000, (2400, 1800, 1200, 600), 4)
    report = interval_report(before, after, setup, None)
    assert report.status == "ok" and report.k == 4 and report.batch == 4
    assert report.p is not None and report.p_low is not None and report.p_low < report.p < (report.p_high or 0)
    assert went_down(after, before) == "the drafts counter"
    assert interval_report(after, after, setup, None).status == "idle"


def test_an_interval_with_fewer_drafts_than_the_alerts_need_is_not_judged() -> None:
    """Three drafts that all missed are p = 0 on a [0, 0.57] interval: the alerts wait for MIN_DRAFTS before they
    judge, and the watch waits as long, so that such an interval neither regresses nor calibrates a class."""
    setup = build_setup(SetupRequest()).setup
    before = _scrape(1000, 4000, 2000, (800, 600, 400, 200), 4)
    few = _scrape(1000 + MIN_DRAFTS - 1, 4000 + 4 * (MIN_DRAFTS - 1), 2000, (800, 600, 400, 200), 4)
    report = interval_report(before, few, setup, (0.6, 0.9))
    assert report.status == "idle" and not report.regression and report.p is None
    assert f"{MIN_DRAFTS - 1} drafts this interval" in report.message
    enough = _scrape(1000 + MIN_DRAFTS, 4000 + 4 * MIN_DRAFTS, 2000, (800, 600, 400, 200), 4)
    judged = interval_report(before, enough, setup, (0.6, 0.9))
    assert judged.status != "idle" and judged.regression  # every draft missed: now it is judged, and it regressed


def test_hundreds_of_intervals_at_an_unchanged_p_raise_no_false_alarm() -> None:
    setup = build_setup(SetupRequest()).setup
    totals = np.zeros(2 + K)
    previous = _scrape(0, 0, 0, (0.0,) * K, 8)
    calibrated = None
    alarms = 0
    for seed in range(300):
        draws = sample_accepted(0.8, K, 2000, seed=seed)
        totals += [2000, draws.sum(), *(np.sum(draws > i) for i in range(K))]
        current = _scrape(totals[0], totals[0] * K, totals[1], tuple(totals[2:]), 8)
        report = interval_report(previous, current, setup, calibrated)
        if calibrated is None:
            calibrated = (report.p_low or 0.0, report.p_high or 1.0)
        alarms += report.status != "ok"
        previous = current
    assert alarms <= 1


def _trtllm_scrape(scale: float) -> str:
    """TensorRT-LLM's counters per token_position after ``scale`` times 8,000 drafts of 4 tokens and 12,000 of 2,
    at i.i.d. acceptance 0.7."""
    rng = np.random.default_rng(7)
    drafted, accepted = [0.0] * 4, [0.0] * 4
    for length, count in ((4, round(8000 * scale)), (2, round(12000 * scale))):
        draws = np.minimum(rng.geometric(0.3, size=count) - 1, length)
        for i in range(length):
            drafted[i] += count
            accepted[i] += float((draws > i).sum())
    lines = ['trtllm_num_requests_running{model_name="m"} 4']
    for name, counts in (("drafted", drafted), ("accepted", accepted)):
        lines += [
            f'trtllm_spec_decode_{name}_tokens_total{{model_name="m",token_position="{i}"}} {v}'
            for i, v in enumerate(counts)
        ]
    return "\n".join(lines) + "\n"


def test_drafts_of_several_lengths_are_read_from_the_drafts_reaching_each_position() -> None:
    """An engine counting drafts per position (TensorRT-LLM): the interval's drafts that ended at each length give
    the mix of lengths, read by the adapter's series names."""
    before, after = read_scrape(_trtllm_scrape(1.0)), read_scrape(_trtllm_scrape(3.0))
    assert after.engine == "trtllm" and after.drafts == 60000 and after.draft_tokens == 4 * 24000 + 2 * 36000
    assert after.drafted_per_position == (60000, 60000, 24000, 24000) and after.batch == 4
    delta = tuple(b - a for a, b in zip(before.drafted_per_position, after.drafted_per_position, strict=True))
    assert draft_lengths(delta) == (2, 4) and draft_lengths((5.0, 5.0, 5.0)) == () and draft_lengths(()) == ()
    report = interval_report(before, after, build_setup(SetupRequest()).setup, None)
    assert report.status == "ok" and report.k == 4, report
    assert report.p_low is not None and report.p_high is not None and report.p_low <= 0.7 <= report.p_high


def test_a_scrape_without_counters_of_drafts_or_of_the_class_asked_says_so() -> None:
    with pytest.raises(EngineFormatError) as caught:
        read_scrape("process_cpu_seconds_total 3.5\n")
    assert caught.value.kind == ErrorKind.UNRELATED and "vllm:spec_decode_num_drafts_total" in caught.value.message
    with pytest.raises(EngineFormatError) as caught:
        read_scrape(_trtllm_scrape(1.0), value="another")
    assert caught.value.kind == ErrorKind.AMBIGUOUS_MODEL and "model_name='another'" in caught.value.message


def test_one_evaluator_calibrates_each_class_once_and_counts_regressions() -> None:
    """The evaluator both watches share: a class given no interval is calibrated by its first measured interval,
    and later intervals are judged against that one; a class given one keeps it."""
    state = WatchState(None)
    state.index = 1
    first = IntervalReport("ok", p=0.8, p_low=0.75, p_high=0.85, k=4, batch=2, speedup=1.5, drafts=100, message="ok")
    seen: list[tuple[float, float] | None] = []

    def report(given: tuple[float, float] | None, out: IntervalReport = first) -> IntervalReport:
        seen.append(given)
        return out

    _, text = state.judge(("a", ""), report, who="a")
    assert text.startswith("interval    1 a: p 0.800") and text.endswith("; calibrated interval [0.750, 0.850]")
    dropped = IntervalReport("acceptance-dropped", p=0.5, p_low=0.45, p_high=0.55, k=4, batch=2, speedup=1.1)
    _, text = state.judge(("a", ""), lambda given: report(given, dropped), who="a")
    _, other = state.judge(("b", ""), report)
    assert seen == [None, (0.75, 0.85), None] and "calibrated interval" not in text
    assert other.startswith("interval    1: ") and state.regressions == 1
    given = WatchState((0.1, 0.2))
    given.judge(("a", ""), report)
    assert seen[-1] == (0.1, 0.2) and given.per_class == {}


def test_the_metrics_watch_judges_consecutive_scrapes_and_says_which_failed() -> None:
    setup = build_setup(SetupRequest()).setup
    scrapes: list[Measurement | None] = [
        _scrape(1000, 4000, 3000, (900, 800, 700, 600), 4),
        None,
        _scrape(3000, 12000, 9000, (2700, 2400, 2100, 1800), 4),
        _scrape(5000, 20000, 11000, (3500, 3000, 2500, 2000), 4),
    ]

    def read() -> Measurement:
        scrape = scrapes.pop(0)
        if scrape is None:
            raise ScrapeFailed("connection refused")
        return scrape

    lines: list[str] = []
    reports: list[IntervalReport] = []
    state = watch_scrapes(
        read,
        setup,
        interval=0.0,
        samples=3,
        calibrated=None,
        emit=lines.append,
        on_reports=lambda given, _state: reports.extend(given),
        sleep=lambda seconds: None,
    )
    assert lines[0] == "interval    1: scrape failed: connection refused"
    assert "calibrated interval" in lines[1] and "acceptance dropped below its calibrated" in lines[2]
    assert reports[0].status == "ok" and state.regressions == 1 and state.index == 3
