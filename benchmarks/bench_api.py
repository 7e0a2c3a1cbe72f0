"""API endpoint throughput against a bare FastAPI endpoint that returns a constant, side by side.

Bound: /api/v1/speedup costs what the framework costs plus a little arithmetic.  Both apps run
the same FastAPI with a sync endpoint; ours adds the security middleware, CORS, bounded validated query
parameters, the closed form and a pydantic response model.

Measured two ways in one run:
- in process: the ASGI app called directly, no network and no client, so the figure is the server's own
  cost per request (alternating blocks of requests, best block of each);
- over HTTP: each app under its own single-worker uvicorn on 127.0.0.1, driven by the same pool of
  concurrent httpx clients for the same time, alternating.  The Python client shares the machine, so
  this ratio is compressed toward 1 by the client's own cost.
The figures are seconds per request; ratio = ours / bare.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from typing import Any

import httpx
from fastapi import FastAPI

from app.web.main import app as project_app
from tests.support import ROOT, free_port, start_server, stop_server

API_PATH = "/api/v1/speedup"
API_QUERY = b"p=0.8&k=5&c=0.1"
BLOCK_REQUESTS = 2_000
BLOCKS = 5
HTTP_SECONDS = 3.0
HTTP_ROUNDS = 2
HTTP_CONNECTIONS = 16

BARE_APP = FastAPI()


@BARE_APP.get("/constant")
def get_constant() -> dict[str, float]:
    return {"speedup": 1.8}


@BARE_APP.get("/healthz")
def get_health() -> dict[str, str]:
    return {"status": "ok"}


async def call(asgi_app: Any, path: str, query: bytes) -> int:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": query,
        "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"accept", b"application/json")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    status = 0

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    await asgi_app(scope, receive, send)
    return status


async def block(asgi_app: Any, path: str, query: bytes) -> float:
    start = time.perf_counter()
    for _ in range(BLOCK_REQUESTS):
        if await call(asgi_app, path, query) != 200:
            raise RuntimeError(f"{path}?{query.decode()} did not answer 200")
    return (time.perf_counter() - start) / BLOCK_REQUESTS


async def in_process() -> tuple[float, float]:
    ours, bare = [], []
    for _ in range(BLOCKS):
        bare.append(await block(BARE_APP, "/constant", b""))
        ours.append(await block(project_app, API_PATH, API_QUERY))
    return min(ours), min(bare)


async def drive(url: str, seconds: float) -> float:
    """Seconds per request with HTTP_CONNECTIONS clients looping on one URL for `seconds`."""
    deadline = time.perf_counter() + seconds
    counts = [0] * HTTP_CONNECTIONS

    async def worker(index: int) -> None:
        async with httpx.AsyncClient(timeout=10) as client:
            while time.perf_counter() < deadline:
                response = await client.get(url)
                if response.status_code != 200:
                    raise RuntimeError(f"{url}: {response.status_code}")
                counts[index] += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker(index) for index in range(HTTP_CONNECTIONS)))
    return (time.perf_counter() - start) / sum(counts)


def start_bare(port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "uvicorn", "benchmarks.bench_api:BARE_APP", "--port", str(port)]
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--log-level", "warning"],
        cwd=ROOT,
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("bare uvicorn did not start")


async def over_http(ours_url: str, bare_url: str) -> tuple[float, float]:
    ours, bare = [], []
    for _ in range(HTTP_ROUNDS):
        bare.append(await drive(bare_url, HTTP_SECONDS))
        ours.append(await drive(ours_url, HTTP_SECONDS))
    return min(ours), min(bare)


def main() -> None:
    ours, bare = asyncio.run(in_process())
    print(
        f"in process: {API_PATH} {ours * 1e6:.0f} us/request ({1 / ours:,.0f}/s), "
        f"bare constant endpoint {bare * 1e6:.0f} us/request ({1 / bare:,.0f}/s)"
    )
    print(f"RATIO api_speedup_in_process {ours:.6f} {bare:.6f} {ours / bare:.3f}")

    ours_port, bare_port = free_port(), free_port()
    ours_server = start_server(ours_port)
    bare_server = start_bare(bare_port)
    try:
        ours_url = f"http://127.0.0.1:{ours_port}{API_PATH}?{API_QUERY.decode()}"
        bare_url = f"http://127.0.0.1:{bare_port}/constant"
        ours_http, bare_http = asyncio.run(over_http(ours_url, bare_url))
    finally:
        stop_server(ours_server)
        stop_server(bare_server)
    print(
        f"over HTTP, {HTTP_CONNECTIONS} connections, 1 worker each: {API_PATH} {1 / ours_http:,.0f} requests/s, "
        f"bare {1 / bare_http:,.0f} requests/s"
    )
    print(f"RATIO api_speedup_http {ours_http:.6f} {bare_http:.6f} {ours_http / bare_http:.3f}")


if __name__ == "__main__":
    main()
