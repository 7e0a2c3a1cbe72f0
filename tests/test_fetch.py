"""Fetching a report: http(s) only, a timeout, a size cap and no redirects; only 127.0.0.1 is contacted."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from app.service.fetch import FetchError, fetch_text


@pytest.fixture
def local() -> Iterator[str]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/slow":
                time.sleep(1.0)
            if self.path == "/moved":
                self.send_response(302)
                self.send_header("location", "http://127.0.0.1:9/elsewhere")
                self.end_headers()
                return
            if self.path == "/missing":
                self.send_response(404)
                self.end_headers()
                return
            body = b"x" * (2000 if self.path == "/big" else 10)
            self.send_response(200)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            with contextlib.suppress(OSError):
                self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_fetch_reads_small_bodies(local: str) -> None:
    assert fetch_text(f"{local}/ok") == "x" * 10


@pytest.mark.parametrize(
    ("path", "kwargs", "words"),
    [
        ("/big", {"max_bytes": 1000}, "more than 1,000 bytes"),
        ("/slow", {"timeout": 0.2}, "cannot read"),
        ("/moved", {}, "redirects are not followed"),
        ("/missing", {}, "HTTP 404"),
    ],
)
def test_fetch_refuses(local: str, path: str, kwargs: dict[str, float], words: str) -> None:
    with pytest.raises(FetchError, match=words):
        fetch_text(f"{local}{path}", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("url", ["file:///etc/hostname", "ftp://127.0.0.1/x", "gopher://127.0.0.1", "http://"])
def test_only_http_urls_with_a_host(url: str) -> None:
    with pytest.raises(FetchError):
        fetch_text(url)
