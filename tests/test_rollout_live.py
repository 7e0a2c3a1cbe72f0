"""`specdec-lab rollout check` against a real Prometheus scraping two real llama-servers on 127.0.0.1: control
(plain decoding) and canary (n-gram speculation), both of class ``chat``, told apart by a ``role`` label that
the scrape configs add through relabelling.

One workload, three checks: right after the start, too little traffic (hold); after text that repeats itself,
the canary is faster and its speedup interval holds the speedup measured directly from the servers' own
timings (promote); after text that does not repeat, its acceptance falls below the interval calibrated on the
repeating text (roll back).

Nothing skips: without prometheus (`make prometheus`) or the engine (`make engine`) this fails and says so.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from app.cli import main
from app.model.live import rollout_plan
from tests import live_engine
from tests.test_prometheus_live import prometheus

INTERVAL = 4  # seconds: the rate interval of the check (four scrapes)
WINDOW = 7 * INTERVAL  # the window each judged phase fills
TOKENS = 24  # per request: a few completions per interval on each server
HOLD_WAIT = 30.0  # at most this much more traffic, where a busy machine leaves a hold after the first window
CANARY, CONTROL = 'role="canary"', 'role="control"'


class Workload:
    """One thread per server sending completions of the current prompt; every completion's own timings kept."""

    def __init__(self, servers: dict[str, live_engine.Server]) -> None:
        self.servers = servers
        self.prompt = live_engine.COPY_PROMPT
        self.done: list[dict[str, Any]] = []
        self.errors: list[BaseException] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def _loop(self, role: str) -> None:
        try:
            while not self.stop.is_set():
                prompt = self.prompt
                result = self.servers[role].complete(prompt, n_predict=TOKENS)
                timings: dict[str, float] = result["timings"]  # type: ignore[assignment]
                with self.lock:
                    self.done.append(
                        {
                            "role": role,
                            "prompt": prompt,
                            "end": time.time(),
                            "ms": float(timings["predicted_ms"]),
                            "n": float(timings["predicted_n"]),
                        }
                    )
        except BaseException as error:  # reported by the test
            self.errors.append(error)

    @contextlib.contextmanager
    def running(self) -> Iterator[Workload]:
        threads = [threading.Thread(target=self._loop, args=(role,), daemon=True) for role in self.servers]
        for thread in threads:
            thread.start()
        try:
            yield self
        finally:
            self.stop.set()
            for thread in threads:
                thread.join(timeout=120)

    def direct_speedup(self, start: float, end: float, prompt: str) -> float:
        """Control's per-token time over the canary's, from the servers' own timings of the completions that
        ended in [start, end] with ``prompt``."""
        per_token = {}
        for role in ("control", "canary"):
            found = [d for d in self.done if d["role"] == role and d["prompt"] == prompt and start <= d["end"] <= end]
            assert found, (role, start, end)
            per_token[role] = sum(d["ms"] for d in found) / sum(d["n"] for d in found)
        return per_token["control"] / per_token["canary"]


def check(url: str, capsys: pytest.CaptureFixture[str], window: int, *extra: str) -> tuple[int, dict[str, Any]]:
    code = main(
        [
            "rollout",
            "check",
            "--prometheus",
            url,
            "--canary",
            CANARY,
            "--control",
            CONTROL,
            "--label",
            "class",
            "--window",
            f"{window}s",
            "--interval",
            f"{INTERVAL}s",
            "--format",
            "json",
            *extra,
        ]
    )
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    report: dict[str, Any] = json.loads(captured.out)
    with capsys.disabled():  # shown by pytest -s, and kept out of the next check's output
        print(
            json.dumps(
                [report["verdict"], *({k: v for k, v in c.items() if k != "intervals"} for c in report["classes"])]
            )
        )
    return code, report


def test_the_canary_check_holds_promotes_and_rolls_back_on_real_servers(capsys: pytest.CaptureFixture[str]) -> None:
    started = time.monotonic()
    with (
        live_engine.llama_server([]) as control,
        live_engine.llama_server(list(live_engine.NGRAM_FLAGS)) as canary,
    ):
        servers = {"control": control, "canary": canary}
        jobs = {role: [server.url.removeprefix("http://")] for role, server in servers.items()}
        labels = {role: {"role": role, "class": "chat"} for role in servers}
        with prometheus(jobs, [], labels) as url:
            for server in servers.values():  # one completion each: counters exist, and little else
                server.complete(live_engine.COPY_PROMPT, n_predict=4)
            time.sleep(2.5)  # scraped
            code, held = check(url, capsys, 3 * INTERVAL)
            assert code == 3 and held["verdict"] == "hold", held
            chat = held["classes"][0]
            assert chat["class"] == "chat" and "too little traffic" in chat["reason"], chat
            assert chat["more_intervals"] >= 1 and chat["more_seconds"] >= INTERVAL

            workload = Workload(servers)
            with workload.running():
                time.sleep(WINDOW + 2)
                code, promoted = check(url, capsys, WINDOW)
                waited = 0.0
                while promoted["verdict"] == "hold" and waited < HOLD_WAIT:  # a loaded machine: as the hold says
                    more = promoted["classes"][0]["more_seconds"] or INTERVAL
                    time.sleep(min(more, HOLD_WAIT - waited))
                    waited += more
                    code, promoted = check(url, capsys, WINDOW)
                end = promoted["end"]
                direct = workload.direct_speedup(end - WINDOW, end, live_engine.COPY_PROMPT)
                planned = main(
                    [
                        *("rollout", "plan", "--prometheus", url, "--label", "class", "--window", f"{WINDOW}s"),
                        *("--interval", f"{INTERVAL}s", "--format", "json"),
                    ]
                )
                plan = json.loads(capsys.readouterr().out)
                workload.prompt = live_engine.COUNT_PROMPT
                switched = time.time()
                time.sleep(5 * INTERVAL + 2)  # four intervals and the one left out at the switch
                chat = promoted["classes"][0]
                acceptance = chat["acceptance"]
                calibrated = f"{acceptance['low']:.4f},{acceptance['high']:.4f}"
                code_back, rolled = check(
                    url, capsys, int(time.time() - switched) - INTERVAL, "--calibrated", calibrated
                )
            assert not workload.errors, workload.errors

    assert code == 0 and promoted["verdict"] == "promote", promoted
    speedup = chat["speedup"]
    with capsys.disabled():
        print(
            f"promote: speedup {speedup['point']:.3f} [{speedup['low']:.3f}, {speedup['high']:.3f}] over "
            f"{speedup['intervals']} intervals; direct {direct:.3f}; acceptance {acceptance['p']:.3f} "
            f"[{acceptance['low']:.3f}, {acceptance['high']:.3f}]; live test {time.monotonic() - started:.0f} s",
        )
    chat_plan = plan["classes"][0]
    with capsys.disabled():
        print(
            f"plan: {chat_plan['class']}: {chat_plan['verdict']}: {chat_plan['reason']}; {chat_plan['acceptance']}; "
            f"intervals left out as contradicting: {chat_plan['contradicting_intervals']}"
        )
    # the plan reads the same class: its acceptance, and its verdict by the drafts the window counted (a CPU
    # server drafts some 150 to 250 in it, by the machine's speed): too few to judge, or turned on, as it pays
    assert planned == 0 and chat_plan["class"] == "chat" and chat_plan["acceptance"]["p"] > 0.5, chat_plan
    if chat_plan["drafts"] < rollout_plan.MIN_DRAFTS:
        assert chat_plan["verdict"] == rollout_plan.MEASURE_FIRST, chat_plan
        assert f"at least {rollout_plan.MIN_DRAFTS} before judging" in chat_plan["reason"], chat_plan
    else:
        assert chat_plan["verdict"] == rollout_plan.TURN_ON and chat_plan["gain"]["low"] > 1.0, chat_plan
    assert code == 0 and promoted["verdict"] == "promote", promoted
    assert speedup["low"] > 1.0 and speedup["intervals"] >= 3
    assert speedup["low"] <= direct <= speedup["high"], (direct, speedup)
    assert acceptance["status"] in ("holds", "rose") and acceptance["p"] > 0.5, acceptance
    back = rolled["classes"][0]
    with capsys.disabled():
        print(f"roll back: {back['reason']}")
    assert code_back == 1 and rolled["verdict"] == "roll back", rolled
    assert back["acceptance"]["status"] == "fell" or back["speedup"]["high"] < 1.0, back
    # nothing measured is lost: every interval's seconds and tokens of both sides, and every query asked
    assert len(back["intervals"]) == rolled["window_s"] // INTERVAL
    assert all("canary_seconds" in row and "control_tokens" in row for row in back["intervals"])
    assert 0 < len(rolled["queries"]) <= 12
