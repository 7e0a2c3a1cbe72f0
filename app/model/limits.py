"""Defaults and caps written once: the API, the pages and the command line all read them here."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


class FieldError(ValueError):
    """A value that breaks a bound or a rule, naming the field it is about (``field``) and every field the rule
    ties to it (``fields``, ``field`` first), so that the layers above can blame the parameter or on-screen label
    and word the rule in their own labels (:meth:`worded`) without reading the message.

    ``rule`` is the message with those fields written ``{0}``, ``{1}``, ... in the order of ``fields``."""

    def __init__(self, field: str, rule: str, *tied: str) -> None:
        self.field = field
        self.fields = (field, *tied)
        self.rule = rule
        super().__init__(self.worded({}))

    def worded(self, labels: Mapping[str, str]) -> str:
        """The rule with each field it names as ``labels`` calls it (its own name where ``labels`` has none).
        Only the placeholders are replaced: a value written into the rule may hold any character."""
        text = self.rule
        for index, name in enumerate(self.fields):
            text = text.replace(f"{{{index}}}", labels.get(name, name))
        return text

    def __reduce__(self) -> tuple[type[FieldError], tuple[str, ...]]:
        # Raised in a heavy-work process and pickled back to the worker: rebuilt from its parts, not its message.
        return type(self), (self.field, self.rule, *self.fields[1:])


class InputError(ValueError):
    """A value one input, or a rule between inputs, refuses: the input's name and why.  Every refusal of a request's
    input is one (the rules' and a measuring job's too), so that the API answers each with a 422 naming the input
    and the command line with its option, by the name, never by the message."""

    def __init__(self, name: str, message: str, value: object = None) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message
        self.value = value

    def __reduce__(self) -> tuple[type[InputError], tuple[str, str, object]]:
        # Raised in a heavy-work process and pickled back to the worker: rebuilt from all three fields.
        return type(self), (self.name, self.message, self.value)


# The seed demo's question (DESIGN.md section 1): its defaults are the API's defaults too.
DEFAULT_P = 0.75
DEFAULT_K = 6
DEFAULT_C = 0.15

# Draft lengths: best k is searched over 1..K_MAX_LIMIT wherever it is answered.
K_MAX_LIMIT = 64
# The demo's k and c sliders (the API and the command line take up to K_MAX_LIMIT and MAX_DRAFT_COST), and the
# least extent of its chart's x axis.
DEMO_K_SLIDER_MAX = 16
DEMO_C_SLIDER_MAX = 1.0
DEMO_CHART_K_MIN = 12
DEMO_BAND = 0.10
DEMO_RUN_TOKENS = 60
DEMO_SIMULATED_CYCLES = 100_000

MAX_CYCLES = 2_000_000
MAX_TOKENS = 5_000
MAX_SEED = 2**32 - 1

# The exact rule, chains with rollback, the n-gram pair and bursty acceptance: what /exact-rule, /chain,
# /ngram and /bursty accept and default to, and what the /exact page offers.
MAX_VOCAB = 2_000
VOCAB_CHOICES = (2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000)
DEFAULT_VOCAB = 50
MIN_TRIALS = 1_000
MAX_TRIALS = 500_000
TRIAL_CHOICES = (10_000, 100_000, 500_000)
DEFAULT_TRIALS = 100_000
TEMPERATURE_MIN = 0.05
TEMPERATURE_MAX = 5.0
DEFAULT_TEMPERATURE = 1.0
MAX_DRAFT_DISTANCE = 5.0
DEFAULT_DRAFT_DISTANCE = 1.0
GOODNESS_OF_FIT_ALPHA = 0.001  # a rule whose chi-square p-value is below this fails
HISTOGRAM_TOKENS = 30  # most likely tokens the exact rule's histogram shows one by one
MAX_HISTOGRAM_TOKENS = 200

MAX_CHAIN_VOCAB = 200
DEFAULT_CHAIN_VOCAB = 20
MAX_CHAIN_K = 12
DEFAULT_CHAIN_K = 4
MAX_CHAIN_TOKENS = 200
DEFAULT_CHAIN_TOKENS = 40

MAX_NGRAM_K = 8
DEFAULT_NGRAM_K = 4
MAX_NGRAM_TOKENS = 1_000
DEFAULT_NGRAM_TEMPERATURE = 0.5
DRAFT_ORDER_RANGE = (1, 6)  # the draft's order stays below the target's
TARGET_ORDER_RANGE = (2, 7)
DEFAULT_DRAFT_ORDER = 3
DEFAULT_TARGET_ORDER = 6
MAX_PROMPT = 200

DEFAULT_RHO = 0.5
MIN_BURSTY_CYCLES = 100
MAX_BURSTY_CYCLES = 1_000_000
DEFAULT_BURSTY_CYCLES = 200_000
BURSTY_CURVE_POINTS = 41
# Batch size and hardware (the roofline): the API's defaults and caps, and the /batch page's.
ROOFLINE_DEFAULT_P = 0.8
ROOFLINE_DEFAULT_K = 4
ROOFLINE_DEFAULT_K_MAX = 8  # best k searched by the API's sweeps, schedules and tables unless told
ROOFLINE_TABLE_C = 0.15  # the draft cost the fixed-cost regimes of the p x k table share
ROOFLINE_TABLE_P = (0.5, 0.95, 0.05)  # rows of the p x k table: first, last, step
ROOFLINE_TABLE_REGIMES = ("memory-bound", "compute-bound")  # its left and right regimes
ROOFLINE_TABLE_BATCHES = (1, 256)  # the batch of each side when it is the roofline
ROOFLINE_BETA = 0.5  # the linear regime's v(k) = 1 + beta k
ROOFLINE_POINTS = 161  # log-spaced batch sizes a sweep returns for plotting

# Best k is searched over 1..K_SEARCH_MAX wherever it is answered, whatever a chart's x axis shows; answers say
# when the best k is this limit (``limit_reached``).
K_SEARCH_MAX = K_MAX_LIMIT

# The roofline's default setup (DESIGN.md section 1) and the bounds of its serving conditions.
DEFAULT_HW = "h100-sxm"
DEFAULT_MODEL = "dense-8b"
DEFAULT_DRAFT = "dense-1b"
DEFAULT_WEIGHTS = "bf16"
DEFAULT_KV_CACHE = "bf16"
DEFAULT_CONTEXT = 1024
# The cost model's terms (efficiencies and overheads) are by default those fitted to the published measurements
# not held out (split by source; data/published_fit.json, written by scripts/fit_published.py), keyed by their API
# names, so that a refit moves every default.  Hardware nobody has published a measurement of gets the same terms.
PUBLISHED_FIT = Path(__file__).with_name("data") / "published_fit.json"
FITTED_TERMS: dict[str, float] = json.loads(PUBLISHED_FIT.read_text(encoding="utf-8"))["terms"]
DEFAULT_BANDWIDTH_EFFICIENCY = FITTED_TERMS["bandwidth_efficiency"]
DEFAULT_COMPUTE_EFFICIENCY = FITTED_TERMS["compute_efficiency"]
DEFAULT_OVERHEAD_US = FITTED_TERMS["overhead_us"]
# The plain roofline: vendor peaks at fixed efficiencies, one overhead per pass (a draft's as a target's) and
# nothing else.  The defaults before the fit, where the fit starts from, and the setup of what is said about the
# roofline's own physics.
PLAIN_ROOFLINE_TERMS: dict[str, float] = {
    "bandwidth_efficiency": 0.8,
    "compute_efficiency": 0.6,
    "overhead_us": 50.0,
    "overhead_per_sequence_us": 0.0,
    "cycle_overhead_us": 0.0,
    "cycle_overhead_per_sequence_us": 0.0,
    "allreduce_us": 0.0,
}
MAX_BATCH = 1024
MAX_DEVICES = 64
MAX_CONTEXT = 1_048_576
MAX_OVERHEAD_US = 100_000.0
MIN_EFFICIENCY = 0.01  # achieved share of peak bandwidth or FLOPS, up to 1


@dataclass(frozen=True)
class CostTerm:
    """A time the roofline's passes leave out, in microseconds: one declaration for the API, the pages and the CLI."""

    name: str
    label: str  # on screen
    default: float | None  # None: as the overhead per pass
    high: float
    description: str


# Each defaults to its value fitted to published measurements (FITTED_TERMS).
COST_TERMS: tuple[CostTerm, ...] = (
    CostTerm(
        "overhead_per_sequence_us",
        "Pass overhead per sequence (µs)",
        FITTED_TERMS["overhead_per_sequence_us"],
        10_000.0,
        "Time every target pass spends per sequence of the batch beyond its reads and arithmetic (the engine's "
        "scheduling, sampling and output handling of each sequence), microseconds",
    ),
    CostTerm(
        "overhead_per_draft_step_us",
        "Overhead per draft step (µs)",
        FITTED_TERMS["overhead_per_draft_step_us"],
        MAX_OVERHEAD_US,
        "Fixed time per draft step (its launches and sampling), microseconds",
    ),
    CostTerm(
        "cycle_overhead_us",
        "Overhead per speculative cycle (µs)",
        FITTED_TERMS["cycle_overhead_us"],
        MAX_OVERHEAD_US,
        "Fixed time a speculative cycle adds beyond its passes (the draft's pass over accepted tokens, building "
        "the verification batch, rejection sampling), microseconds",
    ),
    CostTerm(
        "cycle_overhead_per_sequence_us",
        "Cycle overhead per sequence (µs)",
        FITTED_TERMS["cycle_overhead_per_sequence_us"],
        10_000.0,
        "The same per sequence of the batch, microseconds",
    ),
    CostTerm(
        "allreduce_us",
        "All-reduce latency (µs)",
        FITTED_TERMS["allreduce_us"],
        1_000.0,
        "Latency of one all-reduce over the devices, two per layer per pass when there is more than one, microseconds",
    ),
)
MAX_DRAFT_COST = 10.0
MAX_TABLE_ROWS = 101
MAX_TABLE_K = 32
# The /batch page: its k slider, the best k it searches (sweep and schedule alike), the columns of its tables,
# and its log-scale batch slider (positions per doubling, from batch 1 to MAX_BATCH).
BATCH_K_SLIDER_MAX = 16
BATCH_TABLE_K_MAX = 8
BATCH_SLIDER_STEPS_PER_DOUBLING = 10

# Bounds of every editable preset field: (type, lower bound, inclusive?, upper bound, description).
PRESET_FIELD_BOUNDS: dict[str, tuple[type, float, bool, float, str]] = {
    "bandwidth_tb_s": (float, 0.001, True, 1000.0, "peak memory bandwidth per device, TB/s"),
    "bf16_tflops": (float, 0.001, True, 1_000_000.0, "peak dense BF16 TFLOPS per device"),
    "memory_gb": (float, 0.001, True, 1_000_000.0, "memory per device, GB"),
    "link_gb_s": (float, 0.001, True, 1_000_000.0, "interconnect bandwidth per device, both directions, GB/s"),
    "links": (int, 1, True, 64, "point-to-point links the link's bandwidth is split over (a mesh)"),
    "fp8_tflops": (float, 0.001, True, 1_000_000.0, "peak dense FP8 TFLOPS per device (FP8 weights multiply at it)"),
    "total_params_b": (float, 0.000001, True, 100_000.0, "total parameters, billions"),
    "active_params_b": (float, 0.000001, True, 100_000.0, "parameters used per token, billions"),
    "layers": (int, 1, True, 10_000, "transformer layers"),
    "query_heads": (int, 1, True, 4096, "attention query heads"),
    "kv_heads": (int, 1, True, 4096, "cached key/value heads"),
    "head_dim": (int, 1, True, 16_384, "width of a cached head"),
    "kv_tensors": (int, 1, True, 2, "2 = keys and values, 1 = shared latent"),
    "experts": (int, 1, True, 4096, "routed experts per layer (1 = dense)"),
    "experts_per_token": (int, 1, True, 4096, "experts each token uses"),
    "hidden": (int, 1, True, 1_000_000, "width of the hidden state"),
}

# The p x k table of two regimes and the k schedule.
DEFAULT_REGIMES_P = ROOFLINE_DEFAULT_P
DEFAULT_REGIMES_K = ROOFLINE_DEFAULT_K
DEFAULT_TABLE_K_MAX = ROOFLINE_DEFAULT_K_MAX

# Token trees: by default verification is priced by the roofline of the default setup at batch one, so a
# tree's verification grows with its nodes once they make the target's step compute-bound.
DEFAULT_TREE_REGIME = "roofline"
DEFAULT_TREE_ACCEPTANCE = (0.6, 0.2, 0.1, 0.05)
DEFAULT_TREE_BUDGET = 64
DEFAULT_TREE_WIDTHS = (2, 4)
MAX_TREE_WIDTHS = 4
MAX_WIDTHS_TEXT = 100  # characters of the widths list
DEFAULT_TABLE_P_MIN, DEFAULT_TABLE_P_MAX, DEFAULT_TABLE_P_STEP = ROOFLINE_TABLE_P
MIN_TABLE_P_STEP = 0.001

# Calibration and draft sources: predictions and best k over k = 0..DEFAULT_DECISION_K_MAX unless asked.
DEFAULT_DECISION_K_MAX = 16
DEFAULT_BETA = ROOFLINE_BETA  # linear regime: v(k) = 1 + beta k
