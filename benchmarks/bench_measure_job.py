"""A measurement as a job, against the real llama-server: 5 batches x 2 servers, 64 tokens per request, started
through POST /api/v1/measure on the real app (uvicorn, SPECDEC_ALLOW_MEASURE) and watched as the page watches it;
then the same sweep by the command line (`specdec-lab measure --batch`) and by a second job, on the same servers.

Setup (tests/live_engine.py's engine: SmolLM2-135M F16 target, this machine's CPU, one thread): a server without
speculation and one with n-gram lookup at k = 8 (ngram-simple, lookup of 1 token), both --parallel 16; batches 1,
2, 4, 8, 16; ROUNDS rounds; the job polled every POLL_S seconds.  The workload is PROMPTS, text that repeats (where
n-gram lookup pays), given to the jobs as their body and to the command line as --prompts.

RATIO measure_job_seconds      the job's wall-clock seconds over the 600 s budget (the target: at most 1)
RATIO measure_job_progress_gap the longest time the shown progress stood still over the job's own length divided
                               by its cells (below 1: progress moved at least once per cell's worth of time)
RATIO measure_cli_vs_job_b<B>  the command line's measured speedup at batch B over the first job's (1 = the same)
RATIO measure_rerun_b<B>       the second job's measured speedup over the first job's (1 = the same)
RATIO measure_rounds_b<B>      the first job's second round over its first: the run's own repeatability, against
                               which the two ratios above are read
The last line names each sweep's crossover batch (the first batch from which speculation stops paying).
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from app.cli import main as cli
from tests.live_engine import REPEATING_PROMPT, llama_server
from tests.support import free_port, start_server, stop_server

BATCHES = "1,2,4,8,16"
ROUNDS = 2
N_PREDICT = 64
K = 8
POLL_S = 0.5
BUDGET_S = 600.0
NGRAM = ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", "1", "--spec-ngram-simple-size-m", str(K)]
SLOTS = ["--parallel", "16", "--ctx-size", "8192"]
PROMPTS = (REPEATING_PROMPT,)  # one line: counting that repeats, which n-gram lookup drafts (bench batch_crossover's)


def _job(client: httpx.Client, base: str, servers: str) -> tuple[dict[str, Any], float, list[float]]:
    """One job to its end: its last view, its seconds and the times its shown progress changed."""
    started = time.monotonic()
    job = client.post(
        f"{base}/api/v1/measure",
        params={
            "servers": servers,
            "batches": BATCHES,
            "n_predict": N_PREDICT,
            "repeats": ROUNDS,
            "timeout": BUDGET_S * 2,
        },
        content="\n".join(PROMPTS).encode(),
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
    return view, time.monotonic() - started, changes


def _command_line(servers: str, prompts: Path) -> dict[str, Any]:
    out = io.StringIO()
    arguments = [
        "measure",
        *servers.split(),
        "--batch",
        BATCHES,
        "--n-predict",
        str(N_PREDICT),
        "--prompts",
        str(prompts),
    ]
    with contextlib.redirect_stdout(out):
        cli([*arguments, "--repeats", str(ROUNDS), "--timeout", str(BUDGET_S * 2), "--format", "json", "--no-progress"])
    report: dict[str, Any] = json.loads(out.getvalue())
    return report


def _speedups(report: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {cell["batch"]: cell for cell in report.get("cells", []) if cell["k"] == K}


def _crossover(report: dict[str, Any]) -> int | None:
    return next((item["crossover_batch_measured"] for item in report.get("crossover", []) if item["k"] == K), None)


def main() -> None:
    port = free_port()
    app = start_server(port, {"SPECDEC_ALLOW_MEASURE": "true"})
    base = f"http://127.0.0.1:{port}"
    try:
        with contextlib.ExitStack() as stack, httpx.Client() as client:
            plain = stack.enter_context(llama_server(SLOTS))
            ngram = stack.enter_context(llama_server([*SLOTS, *NGRAM]))
            servers = f"{plain.url} {ngram.url}"
            view, elapsed, changes = _job(client, base, servers)
            prompts = stack.enter_context(tempfile.TemporaryDirectory())
            written = Path(prompts) / "prompts.txt"
            written.write_text("\n".join(PROMPTS) + "\n", encoding="utf-8")
            by_cli = _command_line(servers, written)
            again, _seconds, _changes = _job(client, base, servers)
    finally:
        stop_server(app)
    cells = len(view["cells"])
    gaps = [after - before for before, after in itertools.pairwise(changes)] or [elapsed]
    per_cell = elapsed / max(cells, 1)
    print(f"   state {view['state']}, {cells} cells, {view['done']} of {view['planned']} requests in {elapsed:.0f} s")
    print(f"   progress changed {len(changes) - 1} times; longest still {max(gaps):.1f} s; per cell {per_cell:.1f} s")
    print(f"RATIO measure_job_seconds {elapsed:.1f} {BUDGET_S:.1f} {elapsed / BUDGET_S:.4f}")
    print(f"RATIO measure_job_progress_gap {max(gaps):.2f} {per_cell:.2f} {max(gaps) / per_cell:.4f}")
    first, line, second = (_speedups(report or {}) for report in (view["report"], by_cli, again["report"]))
    print(f"   {'batch':>5} {'job':>7} {'cli':>7} {'job 2':>7} {'rounds of job':>15}")
    for batch in sorted(first):
        one, rounds = first[batch]["measured_speedup"], first[batch]["speedup_rounds"]
        cli_value = line.get(batch, {}).get("measured_speedup")
        two = second.get(batch, {}).get("measured_speedup")
        spread = " ".join(f"{value:.3f}" for value in rounds)
        print(f"   {batch:>5} {one:>7.3f} {cli_value or 0:>7.3f} {two or 0:>7.3f} {spread:>15}")
        if cli_value:
            print(f"RATIO measure_cli_vs_job_b{batch} {cli_value:.4f} {one:.4f} {cli_value / one:.4f}")
        if two:
            print(f"RATIO measure_rerun_b{batch} {two:.4f} {one:.4f} {two / one:.4f}")
        if len(rounds) >= 2:
            print(f"RATIO measure_rounds_b{batch} {rounds[1]:.4f} {rounds[0]:.4f} {rounds[1] / rounds[0]:.4f}")
    crossovers = [_crossover(report or {}) for report in (view["report"], by_cli, again["report"])]
    said = ", ".join(str(value) if value is not None else "none" for value in crossovers)
    print(
        f"measure_job: {view['state']}, {cells} cells in {elapsed:.0f} s (budget {BUDGET_S:.0f} s); "
        f"crossover at k = {K} (job, command line, second job): {said}"
    )


if __name__ == "__main__":
    main()
