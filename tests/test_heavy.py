"""The heavy-work pool: started with the worker at low priority, shut down clean with it, started afresh when broken."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient

from app.web.core.heavy import HEAVY_NICENESS, HeavyWorkPool, heavy_pool
from app.web.main import create_app
from tests.support import free_port, start_server

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads processes from /proc")

HEAVY_PATHS = [
    "/api/v1/simulate?cycles=200000&k=8&rho=0.5",
    "/api/v1/run?tokens=60&seed=3",
    "/api/v1/trees",
    "/api/v1/simulate?cycles=1000",
    "/api/v1/ngram?tokens=200",
]


def pool_processes(parent: int) -> list[int]:
    """The spawned processes (not the resource tracker) whose parent is `parent`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                parent_of_entry = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                command = cmdline.read()
        except OSError:
            continue  # ended meanwhile
        if parent_of_entry == parent and b"spawn_main" in command:
            found.append(int(entry))
    return found


def lowered(pid: int, below: int) -> bool:
    """Whether pid runs HEAVY_NICENESS below the priority of process `below` (or at the lowest, nice 19)."""
    return os.getpriority(os.PRIO_PROCESS, pid) >= min(os.getpriority(os.PRIO_PROCESS, below) + HEAVY_NICENESS, 19)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_until_gone(pids: list[int], timeout: float = 10.0) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.05)
    return [pid for pid in pids if alive(pid)]


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_server_stops_clean_after_heavy_requests(stop: signal.Signals) -> None:
    """No "leaked semaphore" from the resource tracker, no pool process left, a clean exit.

    uvicorn raises the signal it stopped on again once the app has shut down (and SIGINT then ends in exit 0):
    after SIGTERM the process ends by SIGTERM, which runs no exit handler, so the lifespan must have closed the pool.
    """
    port = free_port()
    server = start_server(port)
    try:
        workers = pool_processes(server.pid)
        assert workers, "the pool starts with the worker, before any heavy request"
        assert all(lowered(pid, server.pid) for pid in workers)
        with ThreadPoolExecutor(len(HEAVY_PATHS)) as requests:
            answers = list(
                requests.map(lambda path: httpx.get(f"http://127.0.0.1:{port}{path}", timeout=60), HEAVY_PATHS)
            )
        assert [answer.status_code for answer in answers] == [200] * len(HEAVY_PATHS)
        server.send_signal(stop)
        code = server.wait(timeout=30)
        assert server.stderr is not None
        errors = server.stderr.read().decode()  # until the resource tracker, which shares it, has ended too
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        if server.stderr:
            server.stderr.close()
    assert "Application shutdown complete" in errors
    assert "leaked" not in errors and "Traceback" not in errors, errors
    assert code == 0 or (stop == signal.SIGTERM and code == -signal.SIGTERM)
    assert wait_until_gone(workers) == []


def test_lifespan_starts_the_pool_and_shuts_it_down() -> None:
    app = create_app()
    others = set(pool_processes(os.getpid()))  # pools of other apps this test session started
    with TestClient(app) as client:
        workers = sorted(set(pool_processes(os.getpid())) - others)
        assert len(workers) == heavy_pool(app).processes
        assert all(lowered(pid, os.getpid()) for pid in workers)
        assert client.get("/api/v1/simulate", params={"cycles": 1000}).status_code == 200
        with TestClient(app) as second:  # a second lifespan of the same app shares the pool
            assert second.get("/api/v1/run").status_code == 200
        assert sorted(set(pool_processes(os.getpid())) - others) == workers
        assert client.get("/api/v1/simulate", params={"cycles": 1000}).status_code == 200
    assert wait_until_gone(workers) == []
    # Outside any lifespan a heavy request starts the pool again (shut down at exit).
    assert TestClient(app).get("/api/v1/simulate", params={"cycles": 1000}).status_code == 200
    heavy_pool(app).shutdown(wait=True)


def test_a_broken_pool_is_started_afresh() -> None:
    pool = HeavyWorkPool(1)
    others = set(pool_processes(os.getpid()))

    async def scenario() -> None:
        await pool.open()
        (worker,) = set(pool_processes(os.getpid())) - others
        os.kill(worker, signal.SIGKILL)
        with pytest.raises(BrokenProcessPool):
            for _ in range(50):  # until the pool has noticed
                await pool.run(os.getpid)
                await asyncio.sleep(0.1)
        assert await pool.run(os.getpid) not in (worker, os.getpid())

    try:
        # A thread of its own: the browser tests' sync Playwright keeps an event loop running in this one.
        with ThreadPoolExecutor(1) as thread:
            thread.submit(lambda: asyncio.run(scenario())).result()
    finally:
        pool.close()
    assert set(pool_processes(os.getpid())) - others == set()


def test_the_ngram_run_is_done_in_a_heavy_work_process() -> None:
    """Training two n-gram models and sampling hold the interpreter for a while: not in the worker's own."""
    from app.web.api.routes.sampling import ngram_answer

    app = create_app()
    with TestClient(app) as client:
        pool = heavy_pool(app)
        sent: list[Any] = []
        original = pool.run

        async def recording(call: Any) -> Any:
            sent.append(call)
            return await original(call)

        pool.run = recording  # type: ignore[method-assign]
        answer = client.get("/api/v1/ngram", params={"tokens": 120, "seed": 2})
        assert answer.status_code == 200, answer.text
        assert len(sent) == 1 and sent[0].func is ngram_answer
        assert answer.json()["tokens"] == 120
        refused = client.get("/api/v1/ngram", params={"draft_order": 6, "target_order": 5})
        assert refused.status_code == 422 and "draft_order" in refused.text
        assert len(sent) == 1, "a refused request never reaches the pool"
