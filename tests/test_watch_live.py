"""`specdec-lab watch` against the real llama-server: under n-gram speculation, a workload that turns from text
that repeats itself to text that does not makes acceptance fall, and the watch says so (and fails with
--fail-on-regression); with the workload steady it stays quiet."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

from tests import live_engine

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "app.cli"]


def _workload(
    server: live_engine.Server, phases: list[tuple[str, int]], stop: threading.Event, errors: list[BaseException]
) -> None:
    """Each phase's prompt, that many times (the last phase until stopped)."""
    try:
        for index, (prompt, count) in enumerate(phases):
            done = 0
            while (done < count or index == len(phases) - 1) and not stop.is_set():
                server.complete(prompt, n_predict=48)
                done += 1
    except BaseException as error:  # reported by the test, not lost with the thread
        errors.append(error)


def _watch(url: str, samples: int, interval: float) -> subprocess.CompletedProcess[str]:
    command = [*CLI, "watch", f"{url}/metrics", "--interval", str(interval), "--samples", str(samples)]
    return subprocess.run(
        [*command, "--fail-on-regression"],
        capture_output=True,
        text=True,
        timeout=samples * interval + 60,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def _run(phases: list[tuple[str, int]], samples: int, interval: float) -> subprocess.CompletedProcess[str]:
    errors: list[BaseException] = []
    with live_engine.llama_server(list(live_engine.NGRAM_FLAGS)) as server:
        server.complete(live_engine.COPY_PROMPT, n_predict=8)  # warm up before the first scrape
        stop = threading.Event()
        worker = threading.Thread(target=_workload, args=(server, phases, stop, errors), daemon=True)
        worker.start()
        try:
            result = _watch(server.url, samples, interval)
        finally:
            stop.set()
            worker.join(timeout=120)
    assert not errors, errors
    return result


def test_the_watch_flags_a_drop_in_acceptance_and_fails() -> None:
    # Drift is judged on a 99.9% interval, so each interval must count enough drafts to show the drop: a slow
    # machine counted 10 to 20 drafts per 4 s (calibrated [0.722, 1]) and then 23 at p 0.522, too few to tell.
    # 8 s intervals count twice as many drafts on every machine.
    interval = 8.0
    result = _run([(live_engine.COPY_PROMPT, 12), (live_engine.COUNT_PROMPT, 0)], 10, interval)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "acceptance dropped below its calibrated" in result.stdout or "stops paying" in result.stdout
    assert "regressed" in result.stdout


def test_the_watch_stays_quiet_while_the_workload_is_steady() -> None:
    interval = 4.0
    result = _run([(live_engine.COPY_PROMPT, 0)], 5, interval)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "dropped" not in result.stdout and "stops paying" not in result.stdout
    assert result.stdout.count("interval") >= 5
