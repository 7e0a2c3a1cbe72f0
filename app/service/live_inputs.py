"""The inputs of the commands that talk to live servers (watch and measure), declared once: their names, bounds,
defaults and help, as the command line offers them."""

from __future__ import annotations

from app.model import limits
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
