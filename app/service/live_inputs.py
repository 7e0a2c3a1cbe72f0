"""The inputs of the commands that talk to live servers (watch and measure), declared once: their names, bounds,
defaults and help, as the command line offers them."""

from __future__ import annotations

from urllib.parse import urlsplit

from app.model import engines, limits
from app.model.limits import InputError
from app.service.inputs import Input

DAY_S = 86_400.0
MAX_SAMPLES = 100_000
MAX_SWEEP_K = 64
MAX_SWEEP_BATCH = 256
MAX_REQUESTS = 100_000

# --- watch -----------------------------------------------------------------------------------------------------

SINCE = Input(
    "since",
    "History (s)",
    float,
    0.0,
    "With --prometheus: first report the intervals of the last SINCE seconds from its history",
    0.0,
    30 * DAY_S,
)
INTERVAL = Input("interval", "Interval (s)", float, 10.0, "Seconds between scrapes", 0.05, 3_600.0)
SAMPLES = Input("samples", "Samples", int, 60, "Intervals to report", 1, MAX_SAMPLES)
SERVE_PORT = Input("serve_port", "Gauges port", int, None, "Serve specdec_lab_* gauges on 127.0.0.1", 0, 65_535)
WATCH = (SINCE, INTERVAL, SAMPLES)

# --- measure ---------------------------------------------------------------------------------------------------

N_PREDICT = Input("n_predict", "Tokens per request", int, 64, "Tokens decoded per request", 2, 4_096)
REPEATS = Input("repeats", "Rounds", int, 2, "Rounds over the workload", 1, 1_000)
REQUESTS = Input("max_requests", "Most requests", int, 200, "Most requests in all, warm-up included", 1, MAX_REQUESTS)
TIMEOUT = Input("timeout", "Timeout (s)", float, 600.0, "Most seconds in all", 1.0, DAY_S)
WORKLOAD = (N_PREDICT, REPEATS, REQUESTS, TIMEOUT)
MEASURED_C = Input(
    "c",
    "Draft cost c",
    float,
    None,
    "Draft cost per drafted token in plain steps when no --server-log gives the engine's draft time "
    "(default: 0 for n-gram lookup, unknown for a draft model)",
    0.0,
    limits.MAX_DRAFT_COST,
)
CALIBRATION_K = Input(
    "calibration_k",
    "k written",
    int,
    None,
    "The k --write-calibration writes (default: the largest measured)",
    1,
    MAX_SWEEP_K,
)

# --- measure as a job (the API and the /decide page) -----------------------------------------------------------

MAX_JOB_SERVERS = 8
MAX_JOB_BATCHES = 12
SERVERS = Input(
    "servers",
    "Servers",
    str,
    None,
    "The servers to measure, separated by commas or spaces: one per k, each with its own speculation, and one "
    "without (k = 0, the baseline): llama-server (started with --metrics and --parallel of the largest batch), "
    "vLLM, SGLang (--enable-metrics) or TensorRT-LLM (return_perf_metrics)",
    max_length=1_000,  # eight addresses of up to 120 characters; the whole query stays under its limit
    min_length=1,
    required=True,
)
BATCHES = Input(
    "batches",
    "Batches",
    str,
    "1,2,4,8",
    f"Batch sizes, separated by commas: B requests at once on each server (each from 1 to {MAX_SWEEP_BATCH})",
    max_length=200,
    min_length=1,
)
JOB_TIMEOUT = Input("timeout", "Timeout (s)", float, 600.0, "Most seconds the measurement runs", 1.0, 3_600.0)
JOB_REQUESTS = Input("max_requests", "Most requests", int, 2_000, "Most requests in all, warm-up included", 1, 20_000)
MEASURE_ENGINE = Input(
    "engine",
    "Engine",
    str,
    None,
    "The engine the servers run, where its series do not tell it (default: told by /slots and the series of its "
    "Prometheus text)",
    choices=lambda: engines.ENGINES,
    titles=lambda name: engines.adapter(name).TITLE,
)
MEASURE_METHOD = Input(
    "method",
    "Drafter",
    str,
    None,
    "The drafter the speculative servers run, as their engine names it (vLLM's method, SGLang's algorithm, "
    "TensorRT-LLM's decoding type, llama.cpp's --spec-type), for the config of the measured schedule (default: "
    "llama-server's own, read from /slots; for the others, the config's default drafter)",
    max_length=40,
)
MEASURE_JOB = (SERVERS, BATCHES, N_PREDICT, REPEATS, JOB_REQUESTS, JOB_TIMEOUT, MEASURE_ENGINE, MEASURE_METHOD)


def drafter_for(engine: str | None, method: str | None) -> str | None:
    """The drafter as given, checked against the engine where one is named (an InputError naming the Drafter
    and the engine's choices where it does not take it)."""
    if method is None or not method.strip():
        return None
    if engine:
        try:
            engines.adapter(engine).choose_method(method)
        except ValueError as error:
            raise InputError(MEASURE_METHOD.name, str(error), method) from None
    return method.strip()


# The workload of a job: the request body, one prompt per line (as `measure --prompts FILE` reads a file)
MAX_JOB_PROMPT_BYTES = 65_536
MAX_JOB_PROMPTS = 64
MAX_JOB_PROMPT_CHARS = 8_000
PROMPTS = Input(
    "prompts",
    "Prompts",
    str,
    None,
    f"The workload, one prompt per line (at most {MAX_JOB_PROMPTS} of {MAX_JOB_PROMPT_CHARS:,} characters each); "
    "empty: four built-in prompts. Acceptance depends on the text: measure with prompts like your traffic",
    max_length=MAX_JOB_PROMPT_BYTES,
)


def prompt_list(text: str) -> tuple[str, ...] | None:
    """A job's prompts, one per non-empty line; None (the built-in prompts) when there are none."""
    prompts = [line.strip() for line in text.splitlines() if line.strip()]
    if not prompts:
        return None
    if len(prompts) > MAX_JOB_PROMPTS:
        raise InputError(PROMPTS.name, f"at most {MAX_JOB_PROMPTS} prompts, one per line; got {len(prompts)}")
    longest = max(prompts, key=len)
    if len(longest) > MAX_JOB_PROMPT_CHARS:
        raise InputError(
            PROMPTS.name,
            f"each prompt at most {MAX_JOB_PROMPT_CHARS:,} characters; line {prompts.index(longest) + 1} has "
            f"{len(longest):,}",
        )
    return tuple(prompts)


def server_list(text: str) -> tuple[str, ...]:
    """The servers of a job: http(s) URLs separated by commas or spaces, each once, two to MAX_JOB_SERVERS."""
    urls = [item.rstrip("/") for item in text.replace(",", " ").split()]
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InputError(SERVERS.name, f"{url!r} is not an http(s) URL with a host, such as http://127.0.0.1:8080")
    if len(set(urls)) != len(urls):
        raise InputError(SERVERS.name, "the same server is given twice: one server per k")
    if not 2 <= len(urls) <= MAX_JOB_SERVERS:
        raise InputError(
            SERVERS.name,
            f"from 2 to {MAX_JOB_SERVERS} servers: one without speculation (the baseline) and one per k; "
            f"got {len(urls)}",
        )
    return tuple(urls)


def batch_list(text: str) -> tuple[int, ...]:
    """Batch sizes separated by commas, each from 1 to MAX_SWEEP_BATCH, at most MAX_JOB_BATCHES, sorted, once each."""
    values: set[int] = set()
    for item in text.replace(" ", ",").split(","):
        if not item.strip():
            continue
        try:
            value = int(item)
        except ValueError:
            raise InputError(BATCHES.name, f"{item.strip()!r} is not a whole number; give e.g. 1,2,4,8") from None
        if not 1 <= value <= MAX_SWEEP_BATCH:
            raise InputError(BATCHES.name, f"each batch from 1 to {MAX_SWEEP_BATCH}; got {value}")
        values.add(value)
    if not 1 <= len(values) <= MAX_JOB_BATCHES:
        raise InputError(BATCHES.name, f"from 1 to {MAX_JOB_BATCHES} batch sizes; got {len(values)}")
    return tuple(sorted(values))
