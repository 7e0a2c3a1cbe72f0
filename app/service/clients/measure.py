"""Drive live llama-servers through a draft-length sweep and collect what :mod:`app.model.live.measure` analyses.

One server per draft length.  The llama-server this was written against (build b11312, vendored by
llama-cpp-python 0.3.36) compiles the per-request ``speculative.n_max`` out (``tools/server/server-schema.cpp``:
the speculative fields sit inside ``#if 0``; a request that sends one is decoded at the server's own length),
so k is what a server was started with: ``--spec-draft-n-max K`` for a draft model,
``--spec-ngram-simple-size-m K`` for n-gram lookup, and k = 0 is a server without speculation.

Each server's k is read from the engine, never guessed from a mean: ``/slots`` says whether it speculates
(``[i].speculative``) and with what (``[i].params["speculative.types"]``); ``/props`` holds no draft length in
this build, so the configured maximum comes from ``/metrics``, whose
``llamacpp:spec_decode_num_accepted_tokens_per_pos_total`` has one series per position up to it
(``n_accepted_per_pos.resize(common_speculative_n_max(spec))`` in ``tools/server/server-context.cpp``).

The workload runs at temperature 0 with ``ignore_eos`` (every request decodes ``n_predict`` tokens), one
request at a time: each prompt goes to every server in turn before the next prompt (the order rotated per
prompt), so slow spells of a shared machine fall on every k alike.  Around each request the client scrapes
``/metrics`` and keeps the counter deltas; with ``--server-log`` (a llama-server log at ``-lv 4``) it also
reads the engine's draft-generation time from the ``statistics`` line (``dur(b,g,a)``, cumulative).  With
several rounds (``--repeats``), each prompt counts once per k: its fastest round, with that request's own
counts (:func:`samples_from`).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from app.model import engines
from app.model.counters.counts import SpecCounts
from app.model.engines import streaming
from app.model.engines.base import LiveFormat
from app.model.engines.live import LiveReadError
from app.model.engines.llamacpp import reports as llamacpp_reports
from app.model.engines.llamacpp.reports import last_statistics
from app.model.live.measure import Sample

BUILTIN_PROMPTS = (
    "Write a short story about a lighthouse keeper who finds a map in a bottle.",
    "Explain in plain words why the sky is blue and why sunsets are red.",
    "The history of the printing press begins",
    "List the steps to bake a loaf of bread at home, with a sentence on each.",
)
MAX_PROMPTS = 1_000
MAX_PROMPT_CHARS = 20_000
WARMUP_TOKENS = 16
LOG_WAIT_S = 3.0
REQUEST_TIMEOUT_CAP_S = 300.0
PRIME_TOKENS = 2  # what each slot decodes when it is filled with its prompt before a sweep over batches
MAX_CACHED_PROMPT_TOKENS = 8  # a request whose prompt was cached evaluates about one token of it
LISTENING = re.compile(r"listening on (https?://\S+)")

Progress = Callable[[int, int, str], None]


class MeasureClientError(RuntimeError):
    """The servers cannot be measured, with the reason."""


def since(after: SpecCounts, before: SpecCounts) -> SpecCounts:
    try:
        return after.minus(before)
    except ValueError as error:
        raise MeasureClientError(str(error)) from None


def parse_metrics(text: str) -> SpecCounts:
    """llama.cpp's speculative counters from a /metrics scrape (all 0 where the engine has not drafted)."""
    try:
        return llamacpp_reports.spec_counts(text) or SpecCounts()
    except LiveReadError as error:
        raise MeasureClientError(str(error)) from None


def first_tokens_off(server: Server, delta: SpecCounts, requests: int) -> SpecCounts:
    """The window's counts with each request's first token taken off the accepted ones, where the engine counts
    them there (SGLang's accepted = generated - verifications; see LiveFormat.first_tokens_in_accepted)."""
    if not server.live_format.first_tokens_in_accepted or not delta.drafts:
        return delta
    return SpecCounts(delta.drafts, delta.draft_tokens, max(delta.accepted - requests, 0), delta.per_position)


def draft_time(text: str) -> tuple[int, float] | None:
    """(drafted tokens, draft-generation ms) since start-up: the last statistics line of each drafter, summed."""
    last = last_statistics(text, timed=True)
    if not last:
        return None
    return sum(line.tokens for line in last.values()), sum(line.draft_ms or 0.0 for line in last.values())


def base_url(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise MeasureClientError(f"{url!r}: give the server's http(s) address, e.g. http://127.0.0.1:8080")
    path = parts.path.rstrip("/")
    for suffix in ("/metrics", "/completion", "/slots", "/props", "/health"):
        if path.endswith(suffix):
            path = path[: -len(suffix)]
    return f"{parts.scheme}://{parts.netloc}{path}"


def read_prompts(path: str) -> list[str]:
    lines = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines()]
    prompts = [line for line in lines if line]
    if not prompts:
        raise MeasureClientError(f"{path}: no prompt (one per line)")
    if len(prompts) > MAX_PROMPTS:
        raise MeasureClientError(f"{path}: more than {MAX_PROMPTS:,} prompts")
    if max(len(prompt) for prompt in prompts) > MAX_PROMPT_CHARS:
        raise MeasureClientError(f"{path}: a prompt is longer than {MAX_PROMPT_CHARS:,} characters")
    return prompts


@dataclass
class _Log:
    path: Path
    offset: int = 0
    text: str = ""

    def read(self) -> str:
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            chunk = handle.read()
        self.offset += len(chunk)
        self.text = self.text[-4096:] + chunk.decode("utf-8", errors="replace")  # keep a partial last line
        return self.text


@dataclass
class Server:
    url: str
    speculative: bool
    kind: str = "none"
    k: int | None = None
    live_format: LiveFormat = llamacpp_reports.LIVE  # how the engine is driven and read (by default llama-server's)
    model: str | None = None  # the served model's id, for the OpenAI endpoints
    version: str | None = None  # the engine's own version (/version), where it reports one
    log: _Log | None = None
    counters: SpecCounts = field(default_factory=SpecCounts)  # cumulative, at the last scrape
    draft: tuple[int, float] | None = None  # cumulative (drafted tokens, draft ms) from the log
    requests: int = 0  # measured requests that count (every k ran that prompt in that round)
    mismatches: int = 0

    last_scrape: str = ""  # the text of the last /metrics scrape

    @property
    def engine(self) -> str:
        return self.live_format.engine

    @property
    def label(self) -> str:
        return f"k={self.k if self.k is not None else '?'} {self.kind}"


@dataclass(frozen=True)
class Record:
    """One measured cell on one server (index): the round, the batch (one request alone: 1), the prompt when each
    prompt is its own cell, the totals of its requests and the counter deltas around them."""

    server: int
    repeat: int
    batch: int
    generated: int
    decode_ms: float
    delta: SpecCounts
    prompt: int | None = None
    draft_ms: float = 0.0  # the engine's draft time from its log (one request at a time, with --server-log)
    wall_ms: float | None = None  # sending the cell's requests to the last answer


@dataclass(frozen=True)
class Run:
    servers: list[Server]
    records: list[Record]
    requests: int
    seconds: float
    stopped: str | None  # why it ended before every cell was measured, naming the server and the cell
    notes: list[str]

    @property
    def samples(self) -> list[Sample]:
        """Per server, per prompt the fastest round (see samples_from): the sweep of one request at a time."""
        return samples_from(self.servers, self.records)

    @property
    def rounds(self) -> list[list[Sample]]:
        """Per round, one Sample per (server, batch) measured in it: the sweep over batches."""
        return batch_rounds(self.servers, self.records)


def samples_from(
    servers: Sequence[Server], records: Sequence[Record], repeats: Sequence[int] | None = None
) -> list[Sample]:
    """One Sample per server: for each prompt, the fastest of its rounds (``repeats``: only those rounds).

    At temperature 0 every round of a prompt decodes the same tokens with the same drafts, so the rounds
    differ only in how much of the machine others took; the fastest is the least disturbed (as
    benchmarks/timing.py's best_time), and the counts of that same request go with it.
    """
    chosen: dict[tuple[int, int], Record] = {}
    for record in records:
        if repeats is not None and record.repeat not in repeats:
            continue
        key = (record.server, record.prompt or 0)
        if key not in chosen or record.decode_ms < chosen[key].decode_ms:
            chosen[key] = record
    samples = []
    for index, server in enumerate(servers):
        mine = [record for (owner, _prompt), record in sorted(chosen.items()) if owner == index]
        timed = server.log is not None and bool(server.k)
        samples.append(pooled(server.k or 0, mine, draft_ms=sum(r.draft_ms for r in mine) if timed else None))
    return samples


def pooled(k: int, records: Sequence[Record], **given: Any) -> Sample:
    """One Sample at draft length ``k`` of the records' totals: their requests, tokens and decode time, and their
    counts summed (to k positions); ``given`` sets the Sample's other fields."""
    total = SpecCounts()
    for record in records:
        total = total.plus(record.delta)
    return Sample(
        k=k,
        requests=sum(record.batch for record in records),
        generated=sum(record.generated for record in records),
        decode_ms=sum(record.decode_ms for record in records),
        drafts=total.drafts,
        draft_tokens=total.draft_tokens,
        accepted=total.accepted,
        accepted_per_position=total.per_position[:k],
        **given,
    )


def _json(response: httpx.Response, what: str) -> Any:
    if response.status_code != 200:
        raise MeasureClientError(f"{what}: HTTP {response.status_code}: {response.text[:200]}")
    try:
        return response.json()
    except ValueError:
        raise MeasureClientError(f"{what}: not JSON") from None


class Sweep:
    """The servers of one sweep, the workload and the bounds; :meth:`run` measures.

    Without ``batches``, one request at a time: each prompt is a cell, every request evaluates its prompt.
    With ``batches``, each batch size B is a cell: B requests sent at once to each server, the servers in turn.
    Every llama-server must then have at least B slots (``--parallel``).  Before the first measured batch each
    server decodes a short request in every slot it will use with ``cache_prompt``, so the measured requests
    find their prompt cached, evaluate about one token of it and decode in lockstep from the start: the cell's
    time is the time of B sequences decoded together.  Either way rounds interleave: each round runs every cell
    on every server, the order rotated, so slow spells of a shared machine fall on every cell alike.
    """

    def __init__(
        self,
        client: httpx.Client,
        urls: Sequence[str],
        prompts: Sequence[str],
        n_predict: int,
        repeats: int,
        max_requests: int,
        timeout: float,
        logs: Sequence[str] = (),
        expected_k: Sequence[int] | None = None,
        progress: Progress | None = None,
        cancel: threading.Event | None = None,
        engine: str | None = None,
        batches: Sequence[int] | None = None,
    ) -> None:
        self.client = client
        self.batches = sorted(set(batches)) if batches else None
        # over batches a batch's requests find their prompts in the slots and start decoding together
        self.cache_prompt = self.batches is not None
        self.prompt_misses = 0
        self.records: list[Record] = []  # grows as the cells are measured: a job reads it while it runs
        self.engine = engine  # named by the user: its format only, nothing detected
        self.urls = [base_url(url) for url in urls]
        if len(set(self.urls)) != len(self.urls):
            raise MeasureClientError("the same server is given twice")
        self.prompts = list(prompts)
        self.n_predict = n_predict
        self.repeats = repeats
        self.max_requests = max_requests
        self.timeout = timeout
        self.log_paths = [Path(path) for path in logs]
        self.expected_k = expected_k
        self.progress = progress
        self.cancel = cancel  # set from another thread: the sweep stops before its next cell
        self.probe_timeout = 10.0
        self.servers: list[Server] = []  # once probed
        self.started = time.monotonic()
        self.requests = 0
        self._lock = threading.Lock()
        self.notes: list[str] = []

    # -- the engine's own answers

    def _remaining(self) -> float:
        return self.timeout - (time.monotonic() - self.started)

    def _scrape(self, server: Server) -> SpecCounts:
        form = server.live_format
        response = self.client.get(f"{server.url}{form.metrics_path}", timeout=10.0)
        if response.status_code != 200:
            raise MeasureClientError(
                f"{server.url}{form.metrics_path}: HTTP {response.status_code} "
                f"({form.setup_hint or 'is this the engine?'})"
            )
        server.last_scrape = response.text
        try:
            counts = form.counts(response.text)
        except LiveReadError as error:
            raise MeasureClientError(f"{server.url}{form.metrics_path}: {error}") from None
        return counts or SpecCounts()

    def _slots(self, server: str) -> list[dict[str, Any]]:
        slots = _json(self.client.get(f"{server}/slots", timeout=10.0), f"{server}/slots (llama-server's slots)")
        if not isinstance(slots, list) or not slots or not all(isinstance(slot, dict) for slot in slots):
            raise MeasureClientError(f"{server}/slots: expected a list of slots (is this llama-server?)")
        return slots

    def _complete(
        self, server: Server, prompt: str, n_predict: int
    ) -> llamacpp_reports.Timings | streaming.StreamTimings:
        form = server.live_format
        body = form.body(prompt, n_predict, server.model, self.cache_prompt)
        if not form.native:
            return self._stream(server, body)
        budget = min(max(self._remaining(), 1.0), REQUEST_TIMEOUT_CAP_S)
        response = self.client.post(f"{server.url}{form.completion_path}", json=body, timeout=budget)
        with self._lock:  # requests of one batch run on several threads
            self.requests += 1
        result = _json(response, f"{server.url}")
        try:
            return llamacpp_reports.response_timings(result)
        except LiveReadError as error:
            raise MeasureClientError(f"{server.url}{form.completion_path}: {error}") from None

    def _stream(self, server: Server, body: dict[str, object]) -> streaming.StreamTimings:
        """One completion streamed from an OpenAI-compatible server (the engine's own request body)."""
        budget = min(max(self._remaining(), 1.0), REQUEST_TIMEOUT_CAP_S)
        sent = time.monotonic()
        events: list[tuple[float, str]] = []
        path = server.live_format.completion_path
        with self.client.stream("POST", f"{server.url}{path}", json=body, timeout=budget) as response:
            if response.status_code != 200:
                response.read()
                raise MeasureClientError(f"{server.url}{path}: HTTP {response.status_code}: {response.text[:200]}")
            for line in response.iter_lines():
                events.append((time.monotonic(), line))
        with self._lock:
            self.requests += 1
        try:
            return streaming.stream_timings(events, sent)
        except streaming.StreamReadError as error:
            raise MeasureClientError(f"{server.url}{path}: {error}") from None

    def _draft_time(self, server: Server, drafted_total: int) -> tuple[int, float] | None:
        """The log's cumulative draft time once it has caught up with /metrics (the logger is asynchronous)."""
        if server.log is None or not server.speculative:
            return None
        deadline = time.monotonic() + LOG_WAIT_S
        while True:
            found = draft_time(server.log.read())
            if found is not None and found[0] == drafted_total:
                return found
            if found is not None and found[0] > drafted_total:
                raise MeasureClientError(f"{server.log.path}: more drafted tokens than {server.url}/metrics reports")
            if time.monotonic() > deadline:
                if drafted_total == 0:
                    return (0, 0.0)
                raise MeasureClientError(
                    f"{server.log.path}: no statistics line with {drafted_total} drafted tokens: start llama-server "
                    "with -lv 4 (the statistics line, with dur(b,g,a), is a trace-level line)"
                )
            time.sleep(0.02)

    # -- set-up

    def _servers(self) -> list[Server]:
        servers = []
        for url in self.urls:
            try:
                health = self.client.get(f"{url}/health", timeout=self.probe_timeout)
            except httpx.HTTPError as error:
                raise MeasureClientError(f"{url}: no answer ({error})") from None
            if health.status_code != 200:
                raise MeasureClientError(f"{url}/health: HTTP {health.status_code} (still loading?)")
            if self.engine is not None and self.engine != llamacpp_reports.LIVE.engine:
                servers.append(self._openai_server(url, (engines.adapter(self.engine).LIVE,)))
                continue
            slots = self.client.get(f"{url}/slots", timeout=self.probe_timeout)
            if slots.status_code == 404:  # no llama-server: an OpenAI one
                servers.append(self._openai_server(url))
                continue
            slot = self._slots(url)[0]
            if "speculative" not in slot:
                raise MeasureClientError(f"{url}/slots: no 'speculative' field: not a llama-server this client knows")
            servers.append(Server(url, bool(slot["speculative"])))
        self._attach_logs(servers)
        self.servers = servers
        return servers

    def probe(self, timeout: float = 10.0) -> list[Server]:
        """Each server asked, within ``timeout`` seconds per call, whether it is an engine this client drives
        and whether it speculates (MeasureClientError naming the server when not); :meth:`run` reuses the answer."""
        self.probe_timeout = timeout
        try:
            return self._servers()
        finally:
            self.probe_timeout = 10.0

    def _openai_server(self, url: str, forms: Sequence[LiveFormat] | None = None) -> Server:
        """An OpenAI-compatible server, its engine told by the series of its Prometheus text (each engine's
        LIVE.marker at its LIVE.metrics_path): vLLM, SGLang or TensorRT-LLM (only ``forms``, where given)."""
        tried = []
        for form in forms if forms is not None else [adapter.LIVE for adapter in engines.ADAPTERS.values()]:
            if form.native:
                continue
            scrape = self.client.get(f"{url}{form.metrics_path}", timeout=self.probe_timeout)
            if scrape.status_code == 200 and any(
                line.startswith(form.marker) for line in scrape.text.splitlines() if not line.startswith("#")
            ):
                return self._named(url, form, scrape.text)
            tried.append(f"{form.marker}* at {form.metrics_path} ({form.title})")
        what = (
            "not the engine named"
            if forms is not None
            else "no llama-server (/slots) and no series of an engine measure drives"
        )
        raise MeasureClientError(f"{url}: {what}: looked for " + ", ".join(tried))

    def _named(self, url: str, form: LiveFormat, text: str) -> Server:
        try:
            counts = form.counts(text)
        except LiveReadError as error:
            raise MeasureClientError(f"{url}{form.metrics_path}: {error}") from None
        models = _json(self.client.get(f"{url}/v1/models", timeout=self.probe_timeout), f"{url}/v1/models")
        data = models.get("data") if isinstance(models, dict) else None
        if not isinstance(data, list) or not data or not isinstance(data[0], dict) or "id" not in data[0]:
            raise MeasureClientError(f"{url}/v1/models: no served model")
        server = Server(url, counts is not None, live_format=form, model=str(data[0]["id"]), last_scrape=text)
        if form.version_path is not None:
            version = self.client.get(f"{url}{form.version_path}", timeout=self.probe_timeout)
            body = version.json() if version.status_code == 200 else None
            named = body.get("version") if isinstance(body, dict) else None
            server.version = str(named) if named else None
        return server

    def _attach_logs(self, servers: list[Server]) -> None:
        by_address = {urlsplit(server.url).netloc: server for server in servers}
        for path in self.log_paths:
            try:
                text = path.read_text(encoding="utf-8", errors="replace")
            except OSError as error:
                raise MeasureClientError(f"{path}: {error.strerror}") from None
            addresses = [urlsplit(found).netloc for found in LISTENING.findall(text)]
            owner = next((by_address[address] for address in reversed(addresses) if address in by_address), None)
            if owner is None:
                raise MeasureClientError(
                    f"{path}: its 'listening on' line names none of the servers given ({', '.join(by_address)})"
                )
            if owner.log is not None:
                raise MeasureClientError(f"two logs for {owner.url}")
            owner.log = _Log(path)

    def _identify(self, server: Server) -> None:
        """k and the drafter from the engine: /slots' speculative types, /metrics' per-position series."""
        form = server.live_format
        if not form.native:  # an OpenAI-compatible engine: its counts appear with speculation (some once it drafts)
            counts = form.counts(server.last_scrape) if server.last_scrape else None
            server.speculative = server.speculative or counts is not None
            server.k = form.k_of(server.last_scrape, counts) if server.speculative else 0
            server.kind = "speculative" if server.speculative else "plain"
            return
        # the slot that ran a request holds its parameters; with several slots it need not be the first
        params: dict[str, Any] = next(
            (
                slot["params"]
                for slot in self._slots(server.url)
                if isinstance(slot.get("params"), dict) and "speculative.types" in slot["params"]
            ),
            {},
        )
        types = [name for name in str(params.get("speculative.types", "")).split(",") if name and name != "none"]
        if not server.speculative:
            server.k, server.kind = 0, "plain"
            return
        server.kind = ",".join(types) or "speculative"
        if server.counters.per_position:
            server.k = len(server.counters.per_position)

    def _warm_up(self, servers: list[Server], planned: int = 0) -> None:
        for server in servers:
            if self.progress is not None and planned:
                self.progress(0, planned, f"warming up {server.url}")
            self._complete(server, self.prompts[0], WARMUP_TOKENS)
            server.counters = self._scrape(server)
            server.draft = self._draft_time(server, server.counters.draft_tokens)
            if server.log is not None and server.speculative and server.draft is None:
                raise MeasureClientError(f"{server.log.path}: no statistics line: start llama-server with -lv 4")
            self._identify(server)

    def _check_ks(self, servers: list[Server]) -> None:
        known = [server.k for server in servers if server.k is not None]
        twice = sorted({k for k in known if known.count(k) > 1})
        if twice:
            raise MeasureClientError(f"two servers with the same k ({', '.join(map(str, twice))}): one server per k")
        if self.expected_k is not None and all(server.k is not None for server in servers):
            missing = sorted(set(self.expected_k) - set(known))
            extra = sorted(set(known) - set(self.expected_k))
            if missing or extra:
                served = ", ".join(f"{server.url} k={server.k}" for server in servers)
                raise MeasureClientError(
                    f"--k {','.join(map(str, self.expected_k))} does not match the servers ({served}): "
                    "this llama-server takes no per-request draft length, so each k needs a server started with it"
                )

    def _finish(self, servers: list[Server], done: int, planned: int) -> float:
        """The progress bar closed and every server's k read (of servers whose warm-up drafted nothing, from their
        counters once the sweep has run); the seconds the sweep took."""
        if self.progress is not None:
            self.progress(done, planned, "done")
        for server in servers:
            if server.k is None:
                server.counters = self._scrape(server)
                self._identify(server)
        unknown = [server.url for server in servers if server.k is None]
        if unknown:
            raise MeasureClientError(
                f"{', '.join(unknown)} drafted nothing, so /metrics has no per-position series to read its draft "
                "length from (an n-gram lookup on text that does not repeat?)"
            )
        self._check_ks(servers)
        return time.monotonic() - self.started

    # -- the sweep: one grid of cells (round, batch, prompt), every server measured in each, the order rotated

    def _cells(self) -> list[tuple[int, int, int | None]]:
        """Each cell a (round, batch, prompt): over batches, every batch once a round with the prompts shared out;
        one request at a time, every prompt once a round."""
        if self.batches is None:
            return [(repeat, 1, index) for repeat in range(self.repeats) for index in range(len(self.prompts))]
        return [(repeat, batch, None) for repeat in range(self.repeats) for batch in self.batches]

    def _prepare(self, servers: list[Server], cells: Sequence[tuple[int, int, int | None]]) -> None:
        """The checks before the first request, the warm-up and, over batches, every slot filled with its prompt."""
        if self.batches is None:
            if self.max_requests < 2 * len(servers):
                raise MeasureClientError(
                    f"--max-requests {self.max_requests} is too few for {len(servers)} servers: each needs a "
                    "warm-up request and one per prompt"
                )
            self._warm_up(servers)
            self._check_ks(servers)
            return
        largest = self.batches[-1]
        for server in servers:
            if server.live_format.batches_itself:  # the engine's scheduler batches what arrives (up to its limit)
                continue
            slots = len(self._slots(server.url))
            if slots < largest:
                raise MeasureClientError(
                    f"{server.url} has {slots} slot{'s' if slots != 1 else ''}, fewer than batch {largest}: start "
                    f"llama-server with --parallel {largest} (and a --ctx-size that leaves each slot the prompt and "
                    f"{self.n_predict} tokens)"
                )
        planned = sum(batch for _repeat, batch, _prompt in cells) * len(servers)
        one_round = len(servers) * (1 + largest) + sum(self.batches) * len(servers)
        if self.max_requests < one_round:
            listed = ", ".join(map(str, self.batches))
            raise MeasureClientError(
                f"--max-requests {self.max_requests} is too few: one round of batches {listed} on {len(servers)} "
                f"servers takes {one_round} requests with the warm-up"
            )
        self._warm_up(servers, planned)
        for server in servers:  # every slot the sweep uses holds its prompt (see the class)
            if self.progress is not None:
                self.progress(0, planned, f"filling {largest} slots of {server.url} with the prompts")
            self._together(server, self._prompts_of(largest, None), PRIME_TOKENS)
        self._check_ks(servers)

    def _prompts_of(self, batch: int, prompt: int | None) -> list[str]:
        if prompt is not None:
            return [self.prompts[prompt]] * batch
        return [self.prompts[index % len(self.prompts)] for index in range(batch)]

    def _together(
        self, server: Server, prompts: Sequence[str], n_predict: int, shown: tuple[int, int, str] | None = None
    ) -> list[llamacpp_reports.Timings | streaming.StreamTimings]:
        """The requests at once; with ``shown`` (done before, planned, label), the progress moves as each returns."""
        if len(prompts) == 1:
            return [self._complete(server, prompts[0], n_predict)]
        with ThreadPoolExecutor(max_workers=len(prompts)) as pool:
            futures = [pool.submit(self._complete, server, prompt, n_predict) for prompt in prompts]
            if shown is not None and self.progress is not None:
                for finished, _future in enumerate(as_completed(futures), start=1):
                    self.progress(shown[0] + finished, shown[1], shown[2])
            return [future.result() for future in futures]

    def _measure(self, server: Server, cell: Record, shown: tuple[int, int, str] | None = None) -> Record:
        """``cell`` (its server, round, batch and prompt) measured: its tokens, decode time, counter deltas, draft
        time (from the engine's log) and wall time."""
        batch, prompt = cell.batch, cell.prompt
        before = self._scrape(server)
        sent = time.monotonic()
        timings = self._together(server, self._prompts_of(batch, prompt), self.n_predict, shown)
        wall_ms = (time.monotonic() - sent) * 1e3
        after = self._scrape(server)
        delta = first_tokens_off(server, since(after, before), batch)
        cached = max(item.prompt_n for item in timings) if self.cache_prompt and server.live_format.native else 0
        if cached > MAX_CACHED_PROMPT_TOKENS:
            self.prompt_misses += 1
        told = timings[0].draft_n, timings[0].draft_n_accepted  # llama-server's own count of one request's drafts
        if prompt is not None and told[0] is not None and told != (delta.draft_tokens, delta.accepted):
            server.mismatches += 1
        if not server.speculative and delta.drafts:
            raise MeasureClientError(f"{server.url} drafted, but /slots says it does not speculate")
        draft_ms = 0.0
        if server.log is not None:
            now = self._draft_time(server, after.draft_tokens)
            if now is not None and server.draft is not None:
                draft_ms = now[1] - server.draft[1]
            server.draft = now
        server.counters = after
        return replace(
            cell,
            generated=sum(item.predicted_n for item in timings),
            decode_ms=sum(item.predicted_ms for item in timings),
            delta=delta,
            draft_ms=draft_ms,
            wall_ms=wall_ms,
        )

    def _stop_before(self, server: Server, batch: int, prompt: int | None, servers_left: int) -> str | None:
        where = f"{server.url} at batch {batch}" if prompt is None else f"{server.url}, prompt {prompt + 1}"
        if self.cancel is not None and self.cancel.is_set():
            return f"cancelled before {where}"
        if self.requests + batch * servers_left > self.max_requests:
            return f"--max-requests {self.max_requests} reached before {where}"
        if self._remaining() <= 0:
            return f"--timeout {self.timeout:g} s reached before {where}"
        return None

    def run(self) -> Run:
        """Every cell measured on every server in turn, until the cells, the requests or the time run out.

        One request at a time, a prompt counts once every server has run it (a round cut short drops that
        prompt); over batches, each server's cell counts as soon as it is measured, and a server that fails
        stops the sweep with the cells measured so far kept and the fault named.
        """
        servers = self.servers or self._servers()
        cells = self._cells()
        self._prepare(servers, cells)
        planned = sum(batch for _repeat, batch, _prompt in cells) * len(servers)
        records = self.records
        stopped = None
        done = 0
        for number, (repeat, batch, prompt) in enumerate(cells):
            order = servers[number % len(servers) :] + servers[: number % len(servers)]
            measured: list[Record] = []
            for position, server in enumerate(order):
                # one request at a time, the whole round of a prompt must fit; over batches, this server's cell
                stopped = self._stop_before(server, batch, prompt, len(order) - position if prompt is not None else 1)
                if stopped:
                    break
                label = f"{server.label} batch {batch}" if prompt is None else server.label
                if self.progress is not None:
                    self.progress(done, planned, label)
                cell = Record(servers.index(server), repeat, batch, 0, 0.0, SpecCounts(), prompt)
                try:
                    record = self._measure(server, cell, (done, planned, label))
                except httpx.TimeoutException:
                    stopped = (
                        f"--timeout {self.timeout:g} s reached during a request (that prompt's round dropped)"
                        if prompt is not None
                        else f"{server.url} at batch {batch}: the requests timed out (--timeout {self.timeout:g} s)"
                    )
                except (httpx.HTTPError, MeasureClientError) as error:
                    if prompt is not None:
                        raise
                    stopped = f"{server.url} at batch {batch}: {error}"
                if stopped:
                    break
                done += batch
                if prompt is None:
                    records.append(record)
                    server.requests += batch
                else:
                    measured.append(record)
            if not stopped:  # one request at a time: a prompt counts once every server has run it
                records.extend(measured)
                for record in measured:
                    servers[record.server].requests += 1
            if stopped:
                break
        elapsed = self._finish(servers, done, planned)
        return self._ended(servers, records, elapsed, stopped)

    def _ended(self, servers: list[Server], records: list[Record], elapsed: float, stopped: str | None) -> Run:
        if self.batches is None and not any(server.requests for server in servers):
            raise MeasureClientError(f"no prompt ran on every server within the bounds ({stopped})")
        if self.batches is not None and not any(server.k == 0 for server in servers):
            raise MeasureClientError("no server without speculation: k = 0 is the baseline of each batch's speedup")
        for server in servers:
            if server.mismatches:
                self.notes.append(
                    f"{server.url}: {server.mismatches} responses' timings.draft_n disagree with the /metrics delta "
                    "(other traffic on the server?); the /metrics deltas are used"
                )
        if self.prompt_misses:
            self.notes.append(
                f"{self.prompt_misses} measured batches evaluated more than {MAX_CACHED_PROMPT_TOKENS} prompt tokens: "
                "their requests did not find the prompt cached and may not have decoded together throughout"
            )
        return Run(servers, records, self.requests, elapsed, stopped, self.notes)


def batch_rounds(servers: Sequence[Server], records: Sequence[Record]) -> list[list[Sample]]:
    """The records as Samples, one list per round (a cell measured in a round by one record)."""
    rounds: dict[int, list[Sample]] = {}
    for record in records:
        k = servers[record.server].k or 0
        rounds.setdefault(record.repeat, []).append(pooled(k, [record], batch=record.batch, wall_ms=record.wall_ms))
    return [rounds[index] for index in sorted(rounds)]
