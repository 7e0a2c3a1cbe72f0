"""Flood: 32 clients repeat the most expensive /simulate against ONE worker; cheap requests must stay fast.

Bound: the 99th percentile of /healthz and of /api/v1/speedup, each probed by its own client, against 50 ms while
the flood runs, and against the same probes' 99th percentile on the same server with no flood, measured in the
same run.  Quiet and flooded windows alternate (ROUNDS of each, quiet first), so that a machine that gets busier
or quieter with other work moves both figures alike; each round's ratio is printed, and the pooled ratio is
reported with the lowest and highest round's.

The heavy-work bound (SPECDEC_HEAVY_CONCURRENCY) answers the excess of the flood at once with 503 and Retry-After;
any other answer (or a 503 without Retry-After, or a transport error) fails the benchmark.  Traffic goes only to
127.0.0.1 and is bounded in time and in requests per client.

The flood comes from a process of its own, as it would from other machines: run on the probes' event loop, its
32 clients kept that loop busy with their own answers, and the probes measured that queue as much as the server.
A flooded window ends when every flood client has its last answer (heavy work queued in the pool is done), so
the quiet window after it starts on an idle server.

Three floods: the goal's (the bound as configured, the clients repeat at once after each 503), one whose clients
wait Retry-After, and one with the bound lifted (SPECDEC_HEAVY_CONCURRENCY=1024: the excess queues for the
heavy-work processes instead of being refused; cheap requests stay fast, heavy ones wait).
"""

from __future__ import annotations

import asyncio
import functools
import multiprocessing
import ssl
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field

import httpx

from tests.support import free_port, start_server, stop_server

FLOOD_CLIENTS = 32
FLOOD_PATH = "/api/v1/simulate?cycles=2000000&k=64&rho=0.5"
PROBES = {"healthz": "/healthz", "speedup": "/api/v1/speedup?p=0.8&k=4&c=0.1"}
ROUNDS = 4
QUIET_SECONDS = 3.0
FLOOD_SECONDS = 5.0
SETTLE_SECONDS = 0.5  # probes of a flooded window start once the flood is on
PROBE_INTERVAL_SECONDS = 0.01
MAX_REQUESTS_PER_CLIENT = 20_000
TIMEOUT_SECONDS = 60.0
P99_BOUND_SECONDS = 0.050
UNBOUNDED = "1024"
# One TLS context for every client (the traffic is plain HTTP): each httpx client builds its own otherwise, loading
# the CA bundle, some 20 ms of CPU each, and the flood's 32 clients then started one after another over 2 to 3 s.


@functools.cache
def tls() -> ssl.SSLContext:
    return ssl.create_default_context()


@dataclass
class Tally:
    statuses: Counter[str] = field(default_factory=Counter)
    unexpected: list[str] = field(default_factory=list)
    # probe name -> one list of latencies per round
    quiet: dict[str, list[list[float]]] = field(default_factory=dict)
    flooded: dict[str, list[list[float]]] = field(default_factory=dict)


async def flood_client(base: str, deadline: float, tally: Tally, honour_retry_after: bool) -> None:
    """One client of the flood, until deadline (time.time(), shared by the flood's process and the probes')."""
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    async with httpx.AsyncClient(base_url=base, timeout=TIMEOUT_SECONDS, limits=limits, verify=tls()) as client:
        for _ in range(MAX_REQUESTS_PER_CLIENT):
            if time.time() >= deadline:
                return
            try:
                response = await client.get(FLOOD_PATH)
            except httpx.HTTPError as error:
                tally.unexpected.append(f"flood: {type(error).__name__}")
                continue
            if response.status_code == 503 and response.headers.get("retry-after"):
                tally.statuses["503 with Retry-After"] += 1
                wait = float(response.headers["retry-after"]) if honour_retry_after else 0.0
                await asyncio.sleep(min(wait, max(deadline - time.time(), 0.0)))
            elif response.status_code == 200:
                tally.statuses["200"] += 1
            else:
                tally.statuses[str(response.status_code)] += 1
                tally.unexpected.append(f"flood: status {response.status_code}")


def flood(base: str, start: float, deadline: float, honour_retry_after: bool) -> Tally:
    """In the flood's own process: FLOOD_CLIENTS clients from start to deadline (time.time()); their answers."""
    tally = Tally()

    async def clients() -> None:
        await asyncio.sleep(max(start - time.time(), 0.0))
        await asyncio.gather(*(flood_client(base, deadline, tally, honour_retry_after) for _ in range(FLOOD_CLIENTS)))

    asyncio.run(clients())
    return tally


def flood_ready() -> float:
    """Run once in the flood's process before the flood: its interpreter, httpx, this module and the TLS context
    are loaded."""
    tls()
    return time.time()


async def probe_client(base: str, name: str, path: str, start: float, deadline: float, into: list[float]) -> list[str]:
    """Repeats path from start to deadline (time.time()), one request at a time; latencies into `into`."""
    unexpected = []
    async with httpx.AsyncClient(base_url=base, timeout=TIMEOUT_SECONDS, verify=tls()) as client:
        await client.get(path)  # the connection is open before the window starts
        await asyncio.sleep(max(start - time.time(), 0.0))
        for _ in range(MAX_REQUESTS_PER_CLIENT):
            if time.time() >= deadline:
                break
            began = time.perf_counter()
            try:
                response = await client.get(path)
            except httpx.HTTPError as error:
                unexpected.append(f"{name}: {type(error).__name__}")
                continue
            into.append(time.perf_counter() - began)
            if response.status_code != 200:
                unexpected.append(f"{name}: status {response.status_code}")
            await asyncio.sleep(PROBE_INTERVAL_SECONDS)
    return unexpected


async def probe_window(base: str, start: float, deadline: float, tally: Tally, flooded: bool) -> None:
    into = tally.flooded if flooded else tally.quiet
    lists = {name: [] for name in PROBES}
    for name in PROBES:
        into.setdefault(name, []).append(lists[name])
    found = await asyncio.gather(
        *(probe_client(base, name, path, start, deadline, lists[name]) for name, path in PROBES.items())
    )
    tally.unexpected += [problem for problems in found for problem in problems]


async def warm_up(base: str) -> None:
    """Two small simulations at once before measuring: the worker's heavy-work processes (started with it) answer."""
    async with httpx.AsyncClient(base_url=base, timeout=TIMEOUT_SECONDS) as client:
        await asyncio.gather(*(client.get("/api/v1/simulate?cycles=1000") for _ in range(2)))


async def run_rounds(base: str, honour_retry_after: bool) -> Tally:
    await warm_up(base)
    tally = Tally()
    loop = asyncio.get_running_loop()
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as flooder:
        await loop.run_in_executor(flooder, flood_ready)
        for _ in range(ROUNDS):
            now = time.time()
            await probe_window(base, now + 0.1, now + 0.1 + QUIET_SECONDS, tally, flooded=False)
            start = time.time() + 0.2
            deadline = start + FLOOD_SECONDS
            flooding = loop.run_in_executor(flooder, flood, base, start, deadline, honour_retry_after)
            await probe_window(base, start + SETTLE_SECONDS, deadline, tally, flooded=True)
            flooded = await flooding  # every flood client has its last answer: the server is idle again
            tally.statuses.update(flooded.statuses)
            tally.unexpected += flooded.unexpected
    return tally


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def measure(heavy_concurrency: str | None, honour_retry_after: bool = False) -> Tally:
    port = free_port()
    env = {} if heavy_concurrency is None else {"SPECDEC_HEAVY_CONCURRENCY": heavy_concurrency}
    server = start_server(port, extra_env=env, workers=1)
    try:
        return asyncio.run(run_rounds(f"http://127.0.0.1:{port}", honour_retry_after))
    finally:
        stop_server(server)


@dataclass(frozen=True)
class Figures:
    quiet_p99: float
    flooded_p99: float
    round_ratios: list[float]


def describe(label: str, tally: Tally) -> dict[str, Figures]:
    figures = {}
    print(f"{label}: flood answers " + ", ".join(f"{status}: {n}" for status, n in sorted(tally.statuses.items())))
    for name in PROBES:
        quiet_rounds, flooded_rounds = tally.quiet[name], tally.flooded[name]
        quiet = [value for values in quiet_rounds for value in values]
        flooded = [value for values in flooded_rounds for value in values]
        ratios = [percentile(f, 0.99) / percentile(q, 0.99) for q, f in zip(quiet_rounds, flooded_rounds, strict=True)]
        figures[name] = Figures(percentile(quiet, 0.99), percentile(flooded, 0.99), ratios)
        print(
            f"  {name}: quiet {len(quiet)} probes, p50 {percentile(quiet, 0.5) * 1e3:.1f} ms, "
            f"p99 {figures[name].quiet_p99 * 1e3:.1f} ms | flooded {len(flooded)} probes, "
            f"p50 {percentile(flooded, 0.5) * 1e3:.1f} ms, p99 {figures[name].flooded_p99 * 1e3:.1f} ms, "
            f"max {max(flooded) * 1e3:.1f} ms"
        )
        print(
            f"    p99 flooded / quiet by round: {', '.join(f'{ratio:.2f}' for ratio in ratios)} "
            f"(median {statistics.median(ratios):.2f}, from {min(ratios):.2f} to {max(ratios):.2f}); "
            f"pooled {figures[name].flooded_p99 / figures[name].quiet_p99:.2f}"
        )
    return figures


def main() -> None:
    print(
        f"{FLOOD_CLIENTS} clients repeating {FLOOD_PATH} against one worker; {ROUNDS} rounds of "
        f"{QUIET_SECONDS:.0f} s quiet then {FLOOD_SECONDS:.0f} s flooded"
    )
    problems: list[str] = []
    failed = False
    for concurrency, honour, label, suffix in (
        (None, False, "bounded; the flood repeats at once after each 503", ""),
        (None, True, "bounded; the flood waits Retry-After after a 503", "_retry_after"),
        (UNBOUNDED, False, f"excess queued, not refused (SPECDEC_HEAVY_CONCURRENCY={UNBOUNDED})", "_queued"),
    ):
        tally = measure(concurrency, honour)
        for name, figures in describe(f"heavy work {label}", tally).items():
            p99 = figures.flooded_p99
            print(f"RATIO flood{suffix}_{name}_p99_1w {p99:.6f} {P99_BOUND_SECONDS:.6f} {p99 / P99_BOUND_SECONDS:.3f}")
            print(
                f"RATIO flood{suffix}_{name}_p99_vs_quiet {p99:.6f} {figures.quiet_p99:.6f} "
                f"{p99 / figures.quiet_p99:.3f}"
            )
            failed = failed or (not suffix and p99 >= P99_BOUND_SECONDS)
        problems += tally.unexpected
    for problem in problems[:10]:
        print(f"ERROR {problem}")
    if problems or failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
