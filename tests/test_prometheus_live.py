"""The generated rules in a real Prometheus (Debian's prometheus, started here on 127.0.0.1 with a temporary data
directory, scraping every second and evaluating every second):

- scraping the real llama-server under n-gram speculation, a workload that turns from text that repeats itself
  (COPY_PROMPT) to text that does not (COUNT_PROMPT) brings the speculation-not-paying or the acceptance alert
  to firing, and `specdec-lab watch --prometheus` against that Prometheus reports the same drop;
- scraping stand-in exporters that serve vLLM's, SGLang's and TensorRT-LLM's current metric formats (counters
  growing at known rates), the recording rules of all three, loaded side by side, hold the expected values,
  no alert fires, and the watch prints one line per instance and class.

Nothing skips: without prometheus (`make prometheus`) or the engine (`make engine`) these tests fail and say so.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import yaml

from app.cli import main
from app.model import rules
from app.model.arithmetic import closed_form
from app.model.live import engine_metrics
from app.service.regimes import SetupRequest, build_setup
from tests import live_engine
from tests.planned import planned_rules
from tests.support import answering

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "app.cli"]
WINDOW, HOLD = "15s", "5s"
# The user's setup for the live test: an 8B target with a 3B draft on one H100, where the cycle at k = 4 costs
# about 2.6 target passes at batch 1, so the repeating text (about 4.5 tokens per verification) pays and the
# counting text (about 1.5) does not.  The schedule is k = 4 at batch 1, the k the server runs.
LIVE_SETUP = ["--model", "dense-8b", "--draft", "dense-3b"]
LIVE_RULES = ["--engine", "llamacpp", "--method", "ngram-simple", "--p", "0.9", "--k-max", "4"]


def prometheus_binary() -> str:
    found = shutil.which("prometheus")
    if found is None:
        raise RuntimeError("Debian's prometheus is required for these tests: `make prometheus` installs it")
    return found


@contextlib.contextmanager
def prometheus(
    jobs: dict[str, list[str]], rule_texts: list[str], labels: dict[str, dict[str, str]] | None = None
) -> Iterator[str]:
    """A Prometheus on a free 127.0.0.1 port scraping ``jobs`` (name -> host:port targets) every second, with
    the rules loaded; its data in a temporary directory, removed with it.  ``labels`` (job -> label -> value)
    are added to a job's series through relabelling, as an operator names a class or a canary."""
    with tempfile.TemporaryDirectory(prefix="specdec-prometheus-") as directory:
        folder = Path(directory)
        names = []
        for index, text in enumerate(rule_texts):
            (folder / f"rules-{index}.yml").write_text(text)
            names.append(f"rules-{index}.yml")
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "900ms"},
            "rule_files": names,
            "scrape_configs": [
                {
                    "job_name": job,
                    "static_configs": [{"targets": targets}],
                    "relabel_configs": [
                        {"target_label": name, "replacement": value}
                        for name, value in (labels or {}).get(job, {}).items()
                    ],
                }
                for job, targets in jobs.items()
            ],
        }
        (folder / "prometheus.yml").write_text(yaml.safe_dump(config))
        for attempt in range(3):  # a free port can be taken by another process before Prometheus binds it
            port = live_engine.free_port()
            log_path = folder / f"prometheus-{attempt}.log"
            log = log_path.open("w")
            process = subprocess.Popen(
                [
                    prometheus_binary(),
                    f"--config.file={folder / 'prometheus.yml'}",
                    f"--storage.tsdb.path={folder / 'data'}",
                    f"--web.listen-address=127.0.0.1:{port}",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            url = f"http://127.0.0.1:{port}"
            try:
                ready = _ready(process, url, log_path)
                if ready:
                    _targets_found(url, sum(len(targets) for targets in jobs.values()), log_path)
                    yield url
                    return
            finally:
                _stop(process)
                log.close()
            if "address already in use" not in log_path.read_text():
                raise RuntimeError(f"prometheus exited: {log_path.read_text()[-2000:]}")
        raise RuntimeError("prometheus found no free port in three attempts")


def _ready(process: subprocess.Popen[bytes], url: str, log_path: Path) -> bool:
    """True once Prometheus answers /-/ready; False if it exited (its log says why)."""
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            return False
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/-/ready", timeout=1.0).status_code == 200:
                return True
        if time.monotonic() > deadline:
            raise RuntimeError(f"prometheus was not ready in 30 s: {log_path.read_text()[-2000:]}")
        time.sleep(0.2)


def _targets_found(url: str, count: int, log_path: Path) -> None:
    """Waits until Prometheus has taken up all ``count`` targets: its discovery hands new targets to the scrapers
    in batches a few seconds apart, so a test that scrapes right after start-up could find no series at all."""
    deadline = time.monotonic() + 30
    while True:
        with contextlib.suppress(httpx.HTTPError, ValueError, KeyError):
            body = httpx.get(f"{url}/api/v1/targets", timeout=1.0).json()
            if len(body["data"]["activeTargets"]) >= count:
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"prometheus took up no targets in 30 s: {log_path.read_text()[-2000:]}")
        time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


WATCH_INTERVAL_S = 5  # seconds per interval of `watch --prometheus` below


def instant(url: str, expr: str) -> list[dict[str, Any]]:
    body = httpx.get(f"{url}/api/v1/query", params={"query": expr}, timeout=5.0).json()
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def alerts(url: str) -> list[dict[str, Any]]:
    body = httpx.get(f"{url}/api/v1/alerts", timeout=5.0).json()
    assert body["status"] == "success", body
    found: list[dict[str, Any]] = body["data"]["alerts"]
    return found


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> float:
    start = time.monotonic()
    while not condition():
        if time.monotonic() - start > timeout:
            raise AssertionError(f"{what}: not within {timeout:.0f} s")
        time.sleep(0.5)
    return time.monotonic() - start


def generated_rules(arguments: list[str], tmp_path: Path, name: str) -> str:
    path = tmp_path / name
    assert main(["rules", *arguments, "--output", str(path)]) == 0
    text = path.read_text()
    check = subprocess.run([shutil.which("promtool") or "promtool", "check", "rules", str(path)], capture_output=True)
    assert check.returncode == 0, check.stdout + check.stderr
    return text


# ---------------------------------------------------------------------------
# The real llama-server


def _workload(
    server: live_engine.Server, switch: threading.Event, stop: threading.Event, log: dict[str, float], errors: list
) -> None:
    try:
        while not stop.is_set():
            if switch.is_set():
                log.setdefault("count_started", time.monotonic())
                server.complete(live_engine.COUNT_PROMPT, n_predict=48)
            else:
                server.complete(live_engine.COPY_PROMPT, n_predict=48)
    except BaseException as error:  # reported by the test
        errors.append(error)


def test_an_alert_fires_on_the_real_engine_when_acceptance_drops(tmp_path: Path) -> None:
    text = generated_rules([*LIVE_RULES, *LIVE_SETUP, "--window", WINDOW, "--hold", HOLD], tmp_path, "llama.yml")
    errors: list[BaseException] = []
    log: dict[str, float] = {}
    timeline: list[str] = []
    started = time.monotonic()

    def note(event: str) -> None:
        timeline.append(f"{time.monotonic() - started:6.1f} s  {event}")
        print(timeline[-1], flush=True)  # shown by pytest when the test fails

    with live_engine.llama_server(list(live_engine.NGRAM_FLAGS)) as server:
        target = server.url.removeprefix("http://")
        with prometheus({"llama": [target]}, [text]) as url:
            note("llama-server and Prometheus up")
            server.complete(live_engine.COPY_PROMPT, n_predict=8)
            switch, stop = threading.Event(), threading.Event()
            worker = threading.Thread(target=_workload, args=(server, switch, stop, log, errors), daemon=True)
            worker.start()
            workload_started = time.monotonic()
            try:
                paying = "specdec:implied_speedup > 1.2 and specdec:drafts >= 20"
                wait_for(lambda: bool(instant(url, paying)), 40, "speculation paying on the repeating text")
                note(f"repeating text: speculation pays ({_value(url, 'specdec:implied_speedup'):.2f}x)")
                assert not [a for a in alerts(url) if a["state"] == "firing"], alerts(url)
                # two of the watch's intervals more on the repeating text, so that one of them lies wholly in it
                # and calibrates the class (it paid at once: the first interval then saw it stop paying)
                time.sleep(2 * WATCH_INTERVAL_S)
                assert instant(url, paying), "speculation stopped paying on the repeating text"
                note(f"repeating text: still paying ({_value(url, 'specdec:implied_speedup'):.2f}x)")
                switch.set()
                note("workload switched to the counting text")
                seen: dict[tuple[str, str], float] = {}

                def firing() -> bool:
                    for alert in alerts(url):
                        key = (alert["labels"]["alertname"], alert["state"])
                        if key not in seen:
                            seen[key] = time.monotonic()
                            note(f"{key[0]} {key[1]} (value {float(alert['value']):g})")
                    return any(
                        name in (rules.NOT_PAYING, rules.ACCEPTANCE_LOW) and state == "firing" for name, state in seen
                    )

                wait_for(firing, 60, "the not-paying or the acceptance alert firing after the drop")
                both = {(rules.NOT_PAYING, "firing"), (rules.ACCEPTANCE_LOW, "firing")}
                with contextlib.suppress(AssertionError):  # for the timeline: the other one, if it follows soon
                    wait_for(lambda: firing() and both <= set(seen), 8, "both alerts firing")
                speedup, p = _value(url, rules.SPEEDUP), _value(url, rules.ACCEPTANCE)
                tokens, even = _value(url, rules.TOKENS), _value(url, rules.BREAK_EVEN)
                note(f"speedup {speedup:.2f}x, p {p:.2f}, tokens per verification {tokens:.2f} against {even:.2f}")
                fired = [a for a in alerts(url) if a["state"] == "firing"]
                summaries = " | ".join(a["annotations"]["summary"] for a in fired)
                assert "run k = " in summaries or "turn" in summaries, summaries
                watch = subprocess.run(
                    [
                        *CLI,
                        "watch",
                        "--prometheus",
                        url,
                        "--since",  # the whole workload, from Prometheus's history
                        str(int(time.monotonic() - workload_started) + 5),
                        "--interval",
                        str(WATCH_INTERVAL_S),
                        "--samples",
                        "1",
                        "--fail-on-regression",
                        *LIVE_SETUP,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=60,
                    cwd=ROOT,
                    env={**os.environ, "PYTHONPATH": str(ROOT)},
                )
                note("watch --prometheus: exit " + str(watch.returncode))
            finally:
                stop.set()
                worker.join(timeout=120)
    print(watch.stdout)
    assert not errors, errors
    assert watch.returncode == 1, watch.stdout + watch.stderr
    assert "stops paying" in watch.stdout or "acceptance dropped below its calibrated" in watch.stdout, watch.stdout
    assert "calibrated interval" in watch.stdout and "regressed" in watch.stdout
    # a fresh engine's counters, stretched each by its own extrapolation, still read as counts (not inconsistent)
    assert "do not calibrate" not in watch.stdout, watch.stdout
    # the rules are loaded: the watch reads what they record, not its own PromQL
    assert f"reading the series recorded by the specdec-lab rules ({rules.RULES_LABEL}=llamacpp)" in watch.stdout
    assert "Traceback" not in watch.stderr


def _value(url: str, expr: str) -> float:
    found = instant(url, expr)
    return float(found[0]["value"][1]) if found else math.nan


# ---------------------------------------------------------------------------
# Stand-in exporters in vLLM's, SGLang's and TensorRT-LLM's formats

P, K, BATCH = 0.8, 4, 4  # at batch 4 the schedule of the default setup runs k = 4 (the premise asserted below)
RATE = 200.0  # drafts per second per class
STANDIN_SETUP: list[str] = []  # the default setup: an 8B target, a 1B draft on one H100


def exposition(engine: str, seconds: float, classes: tuple[str, ...]) -> str:
    """The engine's /metrics after ``seconds`` of drafts at RATE per class with i.i.d. acceptance P at K."""
    drafts = RATE * seconds
    reached = [drafts * P ** (i + 1) for i in range(K)]
    tokens = closed_form.expected_tokens(P, K)
    lines: list[str] = []

    def family(name: str, kind: str, samples: list[tuple[str, float]]) -> None:
        lines.extend([f"# HELP {name} {name}", f"# TYPE {name} {kind}"])
        lines.extend(f"{name}{{{labels}}} {value!r}" for labels, value in samples)

    if engine == "vllm":  # vllm/v1/spec_decode/metrics.py: labels model_name and engine
        base = [f'model_name="{name}",engine="0"' for name in classes]
        family("vllm:num_requests_running", "gauge", [(b, float(BATCH)) for b in base])
        family("vllm:spec_decode_num_drafts_total", "counter", [(b, drafts) for b in base])
        family("vllm:spec_decode_num_draft_tokens_total", "counter", [(b, drafts * K) for b in base])
        family("vllm:spec_decode_num_accepted_tokens_total", "counter", [(b, sum(reached)) for b in base])
        family(
            "vllm:spec_decode_num_accepted_tokens_per_pos_total",
            "counter",
            [(f'{b},position="{i}"', reached[i]) for b in base for i in range(K)],
        )
    elif engine == "sglang":  # python/sglang/srt/observability/metrics_collector.py
        base = [f'model_name="{name}"' for name in classes]
        family("sglang:num_running_reqs", "gauge", [(b, float(BATCH)) for b in base])
        family("sglang:spec_accept_length", "gauge", [(b, tokens) for b in base])
        family("sglang:spec_accept_rate", "gauge", [(b, (tokens - 1) / K) for b in base])
        family("sglang:spec_num_steps", "gauge", [(b, float(K)) for b in base])
        family("sglang:spec_num_draft_tokens", "gauge", [(b, float(K + 1)) for b in base])
        family("sglang:spec_verify_calls_total", "counter", [(b, drafts) for b in base])
        family("sglang:generation_tokens_total", "counter", [(b, drafts * tokens) for b in base])
    else:  # tensorrt_llm/metrics/collector.py: labels model_name and engine_type, token_position per position
        base = [f'model_name="{name}",engine_type="trtllm"' for name in classes]
        family("trtllm_num_requests_running", "gauge", [(b, float(BATCH)) for b in base])
        family(
            "trtllm_spec_decode_drafted_tokens_total",
            "counter",
            [(f'{b},token_position="{i}"', drafts) for b in base for i in range(K)],
        )
        family(
            "trtllm_spec_decode_accepted_tokens_total",
            "counter",
            [(f'{b},token_position="{i}"', reached[i]) for b in base for i in range(K)],
        )
    return "\n".join(lines) + "\n"


def serving(render: Callable[[float], str]) -> contextlib.AbstractContextManager[str]:
    """A /metrics that is ``render`` of the seconds since it started; host:port."""
    started = time.monotonic()
    content_type = "text/plain; version=0.0.4; charset=utf-8"
    return answering(lambda path, query: (200, content_type, render(time.monotonic() - started).encode()))


def exporter(engine: str, classes: tuple[str, ...]) -> contextlib.AbstractContextManager[str]:
    """A stand-in whose /metrics grows as the engine's would."""
    return serving(lambda seconds: exposition(engine, seconds, classes))


def test_stand_in_exporters_speak_each_engines_format() -> None:
    """The adapters read what the stand-ins serve as the engine's own /metrics format."""
    for engine, name in (("vllm", "vllm-metrics"), ("sglang", "sglang-metrics"), ("trtllm", "trtllm-metrics")):
        text = exposition(engine, 10.0, ("m0", "m1"))
        found, measurements = engine_metrics.read_measurements(text)
        assert found == name and len(measurements) == 2
        calibrated = engine_metrics.calibrate_measurement(measurements[0], 0.0, 8)
        assert abs(calibrated.result.acceptance - P) < 1e-6 and calibrated.result.k == K


def test_rules_of_three_engines_side_by_side_record_the_expected_values(tmp_path: Path, capsys: Any) -> None:
    texts = [
        generated_rules(
            ["--engine", engine, "--window", "10s", "--hold", "5s", "--p", str(P), "--k-max", str(K)],
            tmp_path,
            f"{engine}.yml",
        )
        for engine in ("vllm", "sglang", "trtllm")
    ]
    setup = build_setup(SetupRequest()).setup
    made = planned_rules(rules.RulesRequest(engine="vllm", p=P, k_max=K), setup)
    assert made.decision.best_k[BATCH - 1] == K
    cost = float(rules.cycle_cost(setup, np.array([float(BATCH)]), np.array([float(made.engine_k[BATCH - 1])]))[0])
    tokens = closed_form.expected_tokens(P, K)
    classes = ("m0", "m1")
    with (
        exporter("vllm", classes) as vllm_a,
        exporter("vllm", classes) as vllm_b,
        exporter("sglang", classes) as sglang,
        exporter("trtllm", classes) as trtllm,
        prometheus({"vllm": [vllm_a, vllm_b], "sglang": [sglang], "trtllm": [trtllm]}, texts) as url,
    ):
        complete = 'count(specdec:implied_speedup) == 8 and count(specdec:acceptance_p{specdec_rules="sglang"}) == 2'
        wait_for(lambda: bool(instant(url, complete)), 45, "the recording rules of every engine and class")
        time.sleep(11)  # a full window of data
        for engine in ("vllm", "sglang", "trtllm"):
            scope = f'{{specdec_rules="{engine}"}}'
            values = {
                name: [float(item["value"][1]) for item in instant(url, f"{name}{scope}")]
                for name in (rules.TOKENS, rules.ACCEPTANCE, rules.BREAK_EVEN, rules.SPEEDUP, rules.RUNNING_BATCH)
            }
            count = 4 if engine == "vllm" else 2  # two vLLM instances, each with two classes
            assert all(len(found) == count for found in values.values()), (engine, values)
            assert all(abs(v - tokens) < 1e-6 for v in values[rules.TOKENS]), (engine, values)
            tolerance = 1e-6 if engine != "sglang" else rules.P_TOLERANCE  # SGLang: p read back from the mean
            assert all(abs(v - P) < tolerance for v in values[rules.ACCEPTANCE]), (engine, values)
            assert all(abs(v - cost) < cost * rules.COST_TOLERANCE for v in values[rules.BREAK_EVEN]), (engine, cost)
            assert all(abs(v - tokens / cost) < 0.01 for v in values[rules.SPEEDUP]), (engine, values)
            assert all(v == BATCH for v in values[rules.RUNNING_BATCH])
            schedule = [float(item["value"][1]) for item in instant(url, f"{rules.SCHEDULE_K}{scope}")]
            assert (
                schedule
                == [float(made.engine_k[BATCH - 1])] * count
                == [float(made.decision.best_k[BATCH - 1])] * count
            )
            if engine != "sglang":
                at = instant(url, f'{rules.AT_POSITION}{{specdec_rules="{engine}",position="1"}}')
                assert len(at) == count and all(abs(float(i["value"][1]) - P**2) < 1e-6 for i in at), at
        assert not [a for a in alerts(url) if a["state"] == "firing"], alerts(url)
        code = main(["watch", "--prometheus", url, "--engine", "vllm", "--interval", "2", "--samples", "2"])
        out = capsys.readouterr().out
        assert code == 0, out
        assert f"reading the series recorded by the specdec-lab rules ({rules.RULES_LABEL}=vllm)" in out, out
        lines = [line for line in out.splitlines() if line.startswith("interval")]
        assert len(lines) == 8, out  # two intervals x two instances x two classes
        for engine in ("sglang", "trtllm"):
            assert main(["watch", "--prometheus", url, "--engine", engine, "--interval", "2", "--samples", "1"]) == 0
            out = capsys.readouterr().out
            assert f"({rules.RULES_LABEL}={engine})" in out, out
            found = [line for line in out.splitlines() if line.startswith("interval")]
            assert len(found) == 2, found  # one instance x two classes
            lines += found
    _hold_the_watch_to_the_stand_ins(lines)


def _hold_the_watch_to_the_stand_ins(lines: list[str]) -> None:
    # an interval in which a loaded machine let a stand-in add no drafts says so; every other line has the values
    measured = [line for line in lines if "no drafts this interval" not in line]
    assert all(f"p {P:.3f}" in line and f"k {K}" in line and f"batch {BATCH}" in line for line in measured), lines
    assert {line.split()[3] for line in measured} == {"model_name=m0:", "model_name=m1:"}, lines


def test_without_the_rules_loaded_the_watch_evaluates_their_expressions(capsys: Any) -> None:
    """A Prometheus that scrapes the engines but holds no specdec-lab rules: the watch evaluates the expressions of
    the recording rules itself, over each interval, and reads the same values."""
    classes = ("m0", "m1")
    with (
        exporter("vllm", classes) as vllm,
        exporter("sglang", classes) as sglang,
        exporter("trtllm", classes) as trtllm,
        prometheus({"vllm": [vllm], "sglang": [sglang], "trtllm": [trtllm]}, []) as url,
    ):
        scraped = "count(count by (job) (up == 1)) == 3"
        wait_for(lambda: bool(instant(url, scraped)), 30, "the three stand-ins scraped")
        time.sleep(5)  # more than one interval of data
        lines: list[str] = []
        for engine in ("vllm", "sglang", "trtllm"):
            assert main(["watch", "--prometheus", url, "--engine", engine, "--interval", "2", "--samples", "2"]) == 0
            out = capsys.readouterr().out
            assert "rules are not loaded in this Prometheus (or not per instance and model_name)" in out, out
            assert "evaluating the expressions of their recording rules" in out, out
            found = [line for line in out.splitlines() if line.startswith("interval")]
            assert len(found) == 4, found  # two intervals x one instance x two classes
            lines += found
        assert not instant(url, '{__name__=~"specdec:.*"}')
    _hold_the_watch_to_the_stand_ins(lines)
