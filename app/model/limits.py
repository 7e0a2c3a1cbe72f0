"""Defaults and caps written once: the API, the pages and the command line all read them here."""

from __future__ import annotations

# The seed demo's question (DESIGN.md section 1): its defaults are the API's defaults too.
DEFAULT_P = 0.75
DEFAULT_K = 6
DEFAULT_C = 0.15

# Draft lengths: best k is searched over 1..K_MAX_LIMIT wherever it is answered.
K_MAX_LIMIT = 64
# The demo's k slider and the least extent of its chart's x axis.
DEMO_K_SLIDER_MAX = 16
DEMO_CHART_K_MIN = 12
DEMO_BAND = 0.10
DEMO_RUN_TOKENS = 60
DEMO_SIMULATED_CYCLES = 100_000

MAX_CYCLES = 2_000_000
MAX_TOKENS = 5_000
MAX_SEED = 2**32 - 1
