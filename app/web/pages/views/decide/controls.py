"""The controls of the decide page, their defaults and bounds, and the cost they set."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from app.model import engines
from app.model.cost import regimes
from app.model.cost.regimes import RegimeName
from app.service import core_inputs, plan_inputs
from app.service import decision_inputs as inputs
from app.service.decision import (
    CostRegime,
    cost_regime,
)
from app.web.pages.controls import Control, Reading, Value
from app.web.pages.inputs import control
from app.web.pages.views import batch as batch_view

# The example scrape the page opens with: vLLM's counters after EXAMPLE_DRAFTS drafts of i.i.d. acceptance.
EXAMPLE_P = 0.8
EXAMPLE_K = 5
EXAMPLE_DRAFTS = 20_000
EXAMPLE_SEED = 7
# What the page asks for first in the rate and length modes (any typical engine reading).
DEFAULT_RATE = 0.55
DEFAULT_LENGTH = 3.2
DEFAULT_MEASURED_K = 5

SETUP = regimes.default_setup()
SETUP_TEXT = f"{SETUP.accelerator.name}, target {SETUP.target.name}, draft {SETUP.draft.name}"
SCHEDULE_POINTS = 120  # batches drawn on the schedule's log axis, besides the ends of every step


@dataclass(frozen=True)
class SourceControl(Control):
    """p or c of one draft source; the one-page version carried every edit in one key, src_edit=id:p:c,..."""

    source: str = ""
    part: int = 1  # where the value sits in id:p:c

    def from_legacy(self, value: str) -> str | None:
        items = (item.split(":") for item in value.split(","))
        return next((item[self.part] for item in items if len(item) == 3 and item[0].strip() == self.source), None)

    def read(self, raw: str | None, strict: bool) -> tuple[Value | None, str | None]:
        return super().read(self.from_legacy(raw) if raw is not None and ":" in raw else raw, strict)


SOURCE_CONTROLS = {
    source: tuple(
        control(item, make=SourceControl, help="", source=source, part=part) for part, item in enumerate(pair, start=1)
    )
    for source, pair in inputs.SOURCES.items()
}

C = control(
    core_inputs.C,
    label="Draft cost c per draft step",  # the page's own words (its addresses and messages name it so)
    help="in target passes; the roofline derives it from the batch",
    legacy=("dec_c",),
)
# the page lists the regimes from the cheapest verification to the dearest, the roofline last
REGIME_OPTIONS = tuple(core_inputs.REGIME_TITLES.items())
REGIME = control(core_inputs.REGIME, options=REGIME_OPTIONS, legacy=("dec_regime",))
BETA = control(core_inputs.BETA, legacy=("dec_beta",))
BATCH = control(core_inputs.COST_BATCH, help=SETUP_TEXT, legacy=("dec_batch",))
K_MAX = control(inputs.K_MAX, legacy=("dec_kmax",))
MODE = control(inputs.MODE)
RATE = control(inputs.RATE, default=DEFAULT_RATE)
LENGTH = control(inputs.LENGTH, default=DEFAULT_LENGTH)
REPORT_K = control(inputs.REPORT_K, help="0: the report's own (--spec-draft-n-max, num_speculative_tokens)")
K = control(inputs.MEASURED_K, default=DEFAULT_MEASURED_K)
EXAMPLE = control(inputs.EXAMPLE_P, name="example_p", default=EXAMPLE_P)
ACCEPTANCE = control(inputs.TREE_ACCEPTANCE, help="comma-separated, sum at most 1")
BUDGET = control(inputs.TREE_BUDGET, kind="range")
METRICS = control(inputs.REPORT, help="pasted text")
BASELINE = control(inputs.BASELINE)
URL = control(inputs.URL, help="the engine's /metrics or /server_info")
# The user's own setup, as the batch page defines it (one definition of every bound); the address keys are its own.
SETUP_NAMES = ("hw", "devices", "model", "draft", "drafting", "weights", "kv_cache", "context")
SETUP_CONTROLS = tuple(replace(control, legacy=()) for control in batch_view.SETUP if control.name in SETUP_NAMES)
ENGINE = control(plan_inputs.ENGINE, default=engines.ENGINES[0])
DRAFT_PATH = control(plan_inputs.DRAFT_PATH, help="empty: the config shows what to fill in")
METHOD = control(plan_inputs.METHOD, help="as the engine names it (eagle3, ngram, ...); empty: a separate draft model")
ENGINE_VERSION = control(
    plan_inputs.ENGINE_VERSION,
    help="empty: the newest known; "
    + "; ".join(
        f"{plan_inputs.engine_title(name)} {', '.join(plan_inputs.engine_versions(name))}" for name in engines.ENGINES
    ),
)
DATA_PARALLEL = control(plan_inputs.DATA_PARALLEL, help="vLLM drops its per-batch schedule above 1")
TREE_REGIME = control(inputs.TREE_REGIME, name="tree_regime", options=REGIME_OPTIONS)

CONTROLS: tuple[Control, ...] = (
    C,
    REGIME,
    BETA,
    BATCH,
    K_MAX,
    MODE,
    RATE,
    LENGTH,
    K,
    REPORT_K,
    EXAMPLE,
    URL,
    *SETUP_CONTROLS,
    ENGINE,
    DRAFT_PATH,
    METHOD,
    ENGINE_VERSION,
    DATA_PARALLEL,
    TREE_REGIME,
    *(control for pair in SOURCE_CONTROLS.values() for control in pair),
    ACCEPTANCE,
    BUDGET,
)


def chosen_cost(reading: Reading, c: float, regime: str = "regime") -> CostRegime:
    """The verification cost the control ``regime`` chooses (the trees' is ``tree_regime``: by default the roofline
    of the default setup, so a tree's size costs)."""
    return cost_regime(reading.text(regime), c, beta=reading.number("beta"), batch=reading.integer("batch"))


def cost_query(reading: Reading, regime: str = "regime") -> dict[str, Any]:
    """The API parameters of the cost regime the control ``regime`` chooses, as the page's controls set them."""
    name = reading.text(regime)
    params: dict[str, Any] = {"regime": name}
    if name == RegimeName.LINEAR.value:
        params["beta"] = reading.number("beta")
    if name == RegimeName.ROOFLINE.value:
        params["batch"] = reading.integer("batch")
    return params
