"""The real llama-server for the tests: found through the manifest `make engine` writes, started on 127.0.0.1
with the flags a test gives, and stopped when the test is done.

Nothing here skips: without the built engine the tests fail and say to run `make engine`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

DEFAULT_MANIFEST = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "specdec-lab" / "engine.json"
START_TIMEOUT = 120.0
# Repeating text: n-gram drafts from the context are right most of the time.
REPEATING_PROMPT = "Count with me: " + " ".join(["one two three four five six seven eight"] * 12)
# Text that does not repeat: n-gram drafts rarely find a match.
NOVEL_PROMPT = "Write a short story about a lighthouse keeper who finds a map in a bottle."
# For n-gram speculation with short n-grams (--spec-ngram-simple-size-n 2): copying a line drafts well; counting
# on drafts the previous numbers' n-grams, which the target rejects.
COPY_PROMPT = "Copy this line ten times:\n" + (
    "The quick brown fox jumps over the lazy dog near the river bank while the sun sets slowly.\n" * 6
)
COUNT_PROMPT = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,"
NGRAM_FLAGS = ("--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "2", "--spec-ngram-simple-size-m", "4")


@dataclass(frozen=True)
class Engine:
    llama_server: str
    llama_quantize: str
    target: str
    drafts: dict[str, str]
    version: str


def engine() -> Engine:
    path = Path(os.environ.get("SPECDEC_ENGINE_MANIFEST", DEFAULT_MANIFEST))
    if not path.exists():
        raise RuntimeError(f"no engine manifest at {path}: run `make engine` (the real llama-server the tests use)")
    data = json.loads(path.read_text())
    return Engine(
        llama_server=data["llama_server"],
        llama_quantize=data["llama_quantize"],
        target=data["target"],
        drafts=dict(data["drafts"]),
        version=data["llama_cpp_python_version"],
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def complete(self, prompt: str, n_predict: int = 48, **extra: object) -> dict[str, object]:
        body = {"prompt": prompt, "n_predict": n_predict, "temperature": 0.0, "cache_prompt": False, **extra}
        response = httpx.post(f"{self.url}/completion", json=body, timeout=120.0)
        response.raise_for_status()
        result: dict[str, object] = response.json()
        return result

    def metrics(self) -> str:
        response = httpx.get(f"{self.url}/metrics", timeout=10.0)
        response.raise_for_status()
        return response.text


def exits(arguments: Sequence[str], timeout: float = 60.0) -> tuple[int | None, str]:
    """Start llama-server with these arguments and return (exit code, output) if it exits on its own."""
    built = engine()
    command = [built.llama_server, "-m", built.target, "--host", "127.0.0.1", "--port", str(free_port()), *arguments]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as error:
        output = error.stdout if isinstance(error.stdout, str) else ""
        return None, output
    return done.returncode, done.stdout + done.stderr


@contextlib.contextmanager
def llama_server(arguments: Sequence[str], model: str | None = None) -> Iterator[Server]:
    """llama-server -m MODEL ARGUMENTS on a free 127.0.0.1 port; stopped (and its log kept) on exit."""
    built = engine()
    port = free_port()
    log_file = tempfile.NamedTemporaryFile(prefix="llama-server-", suffix=".log", delete=False)  # noqa: SIM115
    command = [
        built.llama_server,
        "-m",
        model or built.target,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--threads",
        "1",  # two threads spin-wait in this build: with anything else running, requests slow a hundredfold
        "--ctx-size",
        "2048",
        "--metrics",
        "--no-webui",
        *arguments,
    ]
    if "--parallel" not in arguments and "-np" not in arguments:
        command += ["--parallel", "1"]
    process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    server = Server(f"http://127.0.0.1:{port}", process, Path(log_file.name))
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"llama-server exited with {process.returncode}:\n{server.log()[-3000:]}")
            try:
                if httpx.get(f"{server.url}/health", timeout=2.0).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"llama-server did not answer /health in {START_TIMEOUT:.0f} s:\n{server.log()[-3000:]}"
                )
            time.sleep(0.2)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log_file.close()
