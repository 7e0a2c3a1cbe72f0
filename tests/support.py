"""Helpers shared by the tests, the screenshot script and the benchmarks: a real server, a real browser, and a tiny
HTTP server that answers as a test says."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

ROOT = Path(__file__).resolve().parent.parent
START_SECONDS = 90  # a busy shared machine can take this long to import the app
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    executable = shutil.which("chromium")
    if executable is None:
        raise RuntimeError("Debian's chromium is required for browser tests: `make test` installs it")
    return executable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(port: int, extra_env: dict[str, str] | None = None, workers: int = 1) -> subprocess.Popen[bytes]:
    """uvicorn serving app.web.main:app on 127.0.0.1:port, waited for until /healthz answers."""
    env = {**os.environ, **(extra_env or {})}
    command = [sys.executable, "-m", "uvicorn", "app.web.main:app", "--host", "127.0.0.1", "--port", str(port)]
    if workers > 1:
        command += ["--workers", str(workers)]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            message = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"uvicorn exited: {message}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return process
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"uvicorn did not answer /healthz within {START_SECONDS} s")


def stop_server(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()  # a server slower than that to stop (a busy machine) is ended, and waited for
        process.wait()
    if process.stderr:
        process.stderr.close()


def wait_until(page: Any, expression: str, timeout: float = 15.0) -> Any:
    """Poll a JavaScript expression until it is truthy and return its value.

    Playwright's wait_for_function evaluates its predicate with eval inside the
    page, which the page's CSP (rightly) forbids; page.evaluate goes through the
    debugging protocol and is not subject to it.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = page.evaluate(expression)
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for: {expression}")
        time.sleep(0.05)


Answer = Callable[[str, dict[str, list[str]]], tuple[int, str, bytes]]  # (path, query) -> status, type, body


@contextlib.contextmanager
def answering(answer: Answer) -> Iterator[str]:
    """A tiny HTTP server on 127.0.0.1 whose every GET is ``answer`` of its path and query; yields host:port."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            status, content_type, body = answer(parts.path, parse_qs(parts.query))
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
