"""The inputs from serving metrics to a decision (a calibration from a rate, a mean length or an engine's report,
the draft sources, the trees), declared once for the API, the /decide page and the command line.

The lists (a tree's positional acceptance, the widths, the sources' edits) are documented with the pattern
their values follow; the endpoint checks each value and says which rule failed.
"""

from __future__ import annotations

from dataclasses import replace

from app.model import limits, rules
from app.model.arithmetic import draft_sources, trees
from app.model.counters import calibration
from app.model.limits import InputError
from app.service import core_inputs, plan_inputs
from app.service.inputs import Input

MAX_TEXT = plan_inputs.MAX_TEXT  # characters of a list
MAX_URL = 2_000
MAX_MODEL_NAME = 200
MAX_CYCLES = calibration.MAX_COUNTER


def list_pattern(item: str, most: int, least: int = 0) -> str:
    """A comma-separated list of ``least`` to ``most`` items matching ``item``, spaces allowed around them."""
    items = f"{item} *(?:, *{item} *){{0,{most - 1}}}"
    return f"^ *{items}$" if least else f"^ *(?:{items})?$"


# Numbers as the lists write them: [0, 1], [0, 10], and counts below 1e15 (no exponents).
UNIT_NUMBER = r"(?:0*1(?:\.0*)?|0*\.[0-9]+|0+(?:\.[0-9]*)?)"
COST_NUMBER = r"(?:0*10(?:\.0*)?|0*[0-9](?:\.[0-9]*)?|0*\.[0-9]+)"
COUNT_NUMBER = r"(?:[0-9]{1,15}(?:\.[0-9]*)?|\.[0-9]+)"
WIDTH_NUMBER = "(?:" + "|".join(str(width) for width in range(trees.MAX_WIDTH, 1, -1)) + ")"
SOURCE_OVERRIDE = f"(?:{'|'.join(draft_sources.SOURCE_IDS)}) *: *{UNIT_NUMBER} *: *{COST_NUMBER}"
OVERRIDES_PATTERN = list_pattern(SOURCE_OVERRIDE, len(draft_sources.SOURCE_IDS))
ACCEPTANCE_PATTERN = list_pattern(UNIT_NUMBER, trees.MAX_WIDTH, least=1)
WIDTHS_PATTERN = list_pattern(WIDTH_NUMBER, limits.MAX_TREE_WIDTHS)
MAX_COUNT = calibration.MAX_COUNTER  # any counter value
PER_POSITION_PATTERN = list_pattern(COUNT_NUMBER, calibration.MAX_POSITIONS)
DRAFT_LENGTHS_PATTERN = r"^\s*(\d{1,2}\s*(,\s*\d{1,2}\s*)*)?$"

# --- calibration ---------------------------------------------------------------------------------------------

K_MAX = replace(core_inputs.K_MAX, default=limits.DEFAULT_DECISION_K_MAX)
RATE = Input(
    "rate",
    "Draft acceptance rate",
    float,
    None,
    "Draft acceptance rate, accepted / drafted",
    0.0,
    1.0,
    required=True,
    legacy=("cal_rate",),
)
LENGTH = Input(
    "length",
    "Mean acceptance length",
    float,
    None,
    "Mean acceptance length: tokens per verification, bonus included, at most k + 1",
    1.0,
    limits.K_MAX_LIMIT + 1,
    required=True,
    legacy=("cal_length",),
)
MEASURED_K = Input(
    "k",
    "Draft length k it was measured at",
    int,
    None,
    "Draft length the measurement was taken at",
    1,
    limits.K_MAX_LIMIT,
    required=True,
    legacy=("cal_k",),
)
# vLLM's spec-decode counters, as read off a scrape (that drafts is at least 1 is checked by the endpoint).
COUNTERS = (
    Input(
        "drafts",
        "Drafts",
        float,
        None,
        "Drafts proposed (vLLM's num_drafts counter)",
        0.0,
        MAX_COUNT,
        required=True,
        rule_low=1,
    ),
    Input("draft_tokens", "Draft tokens", float, None, "Counter value", 0.0, MAX_COUNT, required=True),
    Input("accepted", "Accepted tokens", float, None, "Counter value", 0.0, MAX_COUNT, required=True),
)
PER_POSITION = Input(
    "per_position",
    "Accepted per position",
    str,
    "",
    f"Accepted tokens per draft position 0..k-1, comma-separated (at most {calibration.MAX_POSITIONS} numbers from 0 "
    f"to {MAX_COUNT:.0e}, no exponents)",
    max_length=MAX_TEXT,
    pattern=PER_POSITION_PATTERN,
    pattern_rule=True,
)
# What the report's counters imply when it is left out; the page writes 0 for that.
COUNTED_K = Input(
    "k",
    "Draft length k",
    int,
    None,
    "Draft length (num_speculative_tokens); inferred from the counters if omitted",
    1,
    limits.K_MAX_LIMIT,
)
REPORT_K = Input(
    "report_k",
    "Draft length k, if the report does not say it",
    int,
    0,
    "Draft length k when the report does not say it; 0: the report's own (--spec-draft-n-max, num_speculative_tokens)",
    0,
    limits.K_MAX_LIMIT,
)
MODES = {
    "metrics": "an engine's report (vLLM, SGLang, TensorRT-LLM, llama.cpp)",
    "rate": "a draft acceptance rate (accepted / drafted)",
    "length": "a mean acceptance length (tokens per step)",
}
MODE = Input(
    "mode",
    "I have",
    str,
    "metrics",
    "What the acceptance is read from",
    choices=lambda: tuple(MODES),
    titles=MODES.__getitem__,
    legacy=("cal_mode",),
)
# A pasted report (the page's body: it never goes into an address) and an earlier one to subtract.
REPORT = Input(
    "metrics", "Engine report", str, "", "An engine's report, pasted", max_length=calibration.MAX_EXPOSITION_BYTES
)
BASELINE = Input(
    "baseline",
    "Earlier report",
    str,
    "",
    "An earlier scrape of the same counters, to subtract",
    max_length=calibration.MAX_EXPOSITION_BYTES,
)
URL = Input(
    "url",
    "Report URL",
    str,
    None,
    "Fetch the report from this http(s) URL (only if the server allows)",
    max_length=MAX_URL,
)
MODEL_NAME = Input(
    "model_name",
    "Model name",
    str,
    None,
    f"model_name label to pick when the exposition covers several models (at most {MAX_MODEL_NAME} characters)",
    max_length=MAX_MODEL_NAME,
)
CLASS_LABEL = Input(
    "label",
    "Class label",
    str,
    rules.DEFAULT_LABEL,
    "Label whose values split a Prometheus scrape into classes (model_name, engine, ...)",
    max_length=plan_inputs.MAX_LABEL,
)
CYCLES = Input(
    "cycles",
    "Verifications",
    float,
    None,
    "Verifications behind a reported mean (SGLang): gives the interval of p",
    0.0,
    MAX_CYCLES,
    above=True,
)
DRAFT_LENGTHS = Input(
    "draft_lengths",
    "Draft lengths run",
    str,
    "",
    "The draft lengths the engine ran, comma-separated (a per-batch schedule's k values, e.g. 4,2): p from drafts "
    "of several lengths without bias",
    max_length=plan_inputs.MAX_LABEL,
    pattern=DRAFT_LENGTHS_PATTERN,
)


def draft_lengths(text: str | None) -> tuple[int, ...]:
    """The draft lengths of ``DRAFT_LENGTHS`` (none when empty), each from 1 to the longest draft searched."""
    lengths = tuple(int(item) for item in (text or "").split(",") if item.strip())
    if any(not 1 <= length <= limits.K_MAX_LIMIT for length in lengths):
        raise InputError("draft_lengths", f"each must be 1 to {limits.K_MAX_LIMIT}; got {text!r}", text)
    return lengths


# --- draft sources and trees ---------------------------------------------------------------------------------

SOURCE_OVERRIDES = Input(
    "overrides",
    "Edited sources",
    str,
    "",
    "Edited sources as id:acceptance:draft_cost, comma-separated, e.g. eagle:0.8:0.1. "
    f"Ids: {', '.join(draft_sources.SOURCE_IDS)}; acceptance 0 to 1, draft cost 0 to {limits.MAX_DRAFT_COST:g}",
    max_length=MAX_TEXT,
    pattern=OVERRIDES_PATTERN,
    pattern_rule=True,
)
TREE_ACCEPTANCE = Input(
    "acceptance",
    "Positional acceptance P1 ≥ P2 ≥ …",
    str,
    ",".join(f"{value:g}" for value in limits.DEFAULT_TREE_ACCEPTANCE),
    f"Positional acceptance P_1 >= P_2 >= ... comma-separated, 1 to {trees.MAX_WIDTH} values, each from 0 to 1, "
    "sum at most 1",
    max_length=MAX_TEXT,
    pattern=ACCEPTANCE_PATTERN,
    pattern_rule=True,
    legacy=("tree_p",),
)
TREE_BUDGET = Input(
    "budget",
    "Tokens verified per step (budget)",
    int,
    limits.DEFAULT_TREE_BUDGET,
    "Largest tree, in drafted tokens",
    0,
    trees.MAX_TREE_BUDGET,
    legacy=("tree_budget",),
)
TREE_WIDTHS = Input(
    "widths",
    "Tree widths",
    str,
    ",".join(str(width) for width in limits.DEFAULT_TREE_WIDTHS),
    f"Widths of the fixed-width trees to compare, comma-separated, each 2 to {trees.MAX_WIDTH}, at most "
    f"{limits.MAX_TREE_WIDTHS}",
    max_length=limits.MAX_WIDTHS_TEXT,
    pattern=WIDTHS_PATTERN,
    pattern_rule=True,
)
# The trees as a table in a terminal: every n-th budget.
TREE_EVERY = Input("every", "Every n-th budget", int, 8, "Print every n-th budget", 1, trees.MAX_TREE_BUDGET)
TREES_TEXT = (TREE_ACCEPTANCE, TREE_BUDGET, TREE_WIDTHS, TREE_EVERY)
# Trees are priced by the roofline of the default setup unless asked: verifying a tree grows with its nodes.
TREE_REGIME = replace(
    core_inputs.REGIME,
    label="Verification cost of a tree",
    default=limits.DEFAULT_TREE_REGIME,
    legacy=("dec_regime",),  # the one-page version priced trees with the cost of every step
)

# --- an example scrape to try the calibration on ---------------------------------------------------------------

MAX_EXAMPLE_DRAFTS = 10_000_000
MAX_EXAMPLE_ENGINES = 8
EXAMPLE_SCHEMAS = ("v1", "v0")
EXAMPLE = (
    Input("p", "Example scrape with p =", float, 0.75, "Acceptance p", 0.0, 1.0),
    replace(MEASURED_K, default=5, required=False, legacy=()),
    Input("drafts", "Drafts", int, 10_000, "Drafts", 0, MAX_EXAMPLE_DRAFTS),
    Input("seed", "Seed", int, None, "Seed: sample the counts; omit for expected counts", 0, limits.MAX_SEED),
    Input("engines", "Engines", int, 1, "Engines (label sets)", 1, MAX_EXAMPLE_ENGINES),
    Input(
        "schema",
        "Counter schema",
        str,
        EXAMPLE_SCHEMAS[0],
        "v1 (current vLLM counters) or v0 (older vLLM)",
        choices=lambda: EXAMPLE_SCHEMAS,
    ),
)
EXAMPLE_P = EXAMPLE[0]

# --- step times fitted (the fit's own k_max: the drafts a measured step sweep covers) -------------------------

STEP_FIT_K_MAX = 8
STEP_FIT = (
    Input("p", "Acceptance p", float, None, "Acceptance p: also return the schedule", 0.0, 1.0),
    replace(core_inputs.K_MAX, default=STEP_FIT_K_MAX),
    plan_inputs.BATCH_MAX,
)

# --- the draft sources' p and c, each editable (the defaults are the cited values, derived from Spec-Bench) -----

SOURCE_DIGITS = 4


def _source_inputs(source: draft_sources.DraftSource) -> tuple[Input, Input]:
    """p and c of one source; the one-page version carried every edit in one key, src_edit=id:p:c,..."""
    p_label, c_label = f"Acceptance p of {source.name}", f"Draft cost c of {source.name}"
    return (
        Input(
            f"{source.id}_p",
            p_label,
            float,
            round(source.acceptance, SOURCE_DIGITS),
            p_label,
            0.0,
            1.0,
            legacy=("src_edit",),
        ),
        Input(
            f"{source.id}_c",
            c_label,
            float,
            round(source.draft_cost, SOURCE_DIGITS),
            f"{c_label}, in target passes",
            0.0,
            limits.MAX_DRAFT_COST,
            legacy=("src_edit",),
        ),
    )


SOURCES = {source.id: _source_inputs(source) for source in draft_sources.DEFAULT_SOURCES}
