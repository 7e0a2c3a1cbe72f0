"""A measurement as a job, against the real llama-server: 5 batches x 2 servers, 64 tokens per request, started
through POST /api/v1/measure on the real app (uvicorn, SPECDEC_ALLOW_MEASURE) and watched as the page watches it.

Setup (tests/live_engine.py's engine: SmolLM2-135M F16 target, this machine's CPU, one thread): a server without
speculation and one with n-gram lookup at k = 8 (ngram-simple, lookup of 1 token), both --parallel 16; batches 1,
2, 4, 8, 16; ROUNDS rounds; the job polled every POLL_S seconds.

RATIO measure_job_seconds      the job's wall-clock seconds over the 600 s budget (the target: at most 1)
RATIO measure_job_progress_gap the longest time the shown progress stood still over the job's own length divided
                               by its cells (below 1: progress moved at least once per cell's worth of time)
"""

from __future__ import annotations

import contextlib
import itertools
import time

import httpx

from tests.live_engine import llama_server
from tests.support import free_port, start_server, stop_server

BATCHES = "1,2,4,8,16"
ROUNDS = 2
N_PREDICT = 64
POLL_S = 0.5
BUDGET_S = 600.0
NGRAM = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1", "--spec-ngram-simple-size-m", "8"]
SLOTS = ["--parallel", "16", "--ctx-size", "8192"]


def main() -> None:
    port = free_port()
    app = start_server(port, {"SPECDEC_ALLOW_MEASURE": "true"})
    base = f"http://127.0.0.1:{port}"
    try:
        with contextlib.ExitStack() as stack, httpx.Client() as client:
            plain = stack.enter_context(llama_server(SLOTS))
            ngram = stack.enter_context(llama_server([*SLOTS, *NGRAM]))
            started = time.monotonic()
            job = client.post(
                f"{base}/api/v1/measure",
                params={
                    "servers": f"{plain.url} {ngram.url}",
                    "batches": BATCHES,
                    "n_predict": N_PREDICT,
                    "repeats": ROUNDS,
                    "timeout": BUDGET_S * 2,
                },
                timeout=60.0,
            ).json()
            changes = [started]
            last = (-1, "")
            view = job
            while view["state"] == "running" and time.monotonic() - started < BUDGET_S * 2:
                time.sleep(POLL_S)
                view = client.get(f"{base}/api/v1/measure/{job['id']}", timeout=30.0).json()
                shown = (view["done"], view["label"])
                if shown != last:
                    changes.append(time.monotonic())
                    last = shown
            elapsed = time.monotonic() - started
    finally:
        stop_server(app)
    cells = len(view["cells"])
    gaps = [after - before for before, after in itertools.pairwise(changes)] or [elapsed]
    per_cell = elapsed / max(cells, 1)
    print(f"   state {view['state']}, {cells} cells, {view['done']} of {view['planned']} requests in {elapsed:.0f} s")
    print(f"   progress changed {len(changes) - 1} times; longest still {max(gaps):.1f} s; per cell {per_cell:.1f} s")
    crossover = [(item["k"], item["crossover_batch_measured"]) for item in (view["report"] or {}).get("crossover", [])]
    print(f"   crossover (k, batch): {crossover}")
    print(f"RATIO measure_job_seconds {elapsed:.1f} {BUDGET_S:.1f} {elapsed / BUDGET_S:.4f}")
    print(f"RATIO measure_job_progress_gap {max(gaps):.2f} {per_cell:.2f} {max(gaps) / per_cell:.4f}")
    print(f"measure_job: {view['state']}, {cells} cells in {elapsed:.0f} s (budget {BUDGET_S:.0f} s)")


if __name__ == "__main__":
    main()
