"""The closed form's inputs (acceptance p, draft length k, draft cost c, the longest draft searched) and the
simulations' seed and correlation, declared once for the API, the demo page and the command line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from app.model import limits
from app.model.cost.regimes import REGIME_NAMES, RegimeName
from app.service.decision import CostRegime, cost_regime
from app.service.inputs import Input, checked

P = Input(
    "p", "Acceptance p", float, limits.DEFAULT_P, "Per-token acceptance probability p (Leviathan's alpha)", 0.0, 1.0
)
# The demo's sliders span what it explores; the API and the command line take the whole bounds.
K = Input(
    "k",
    "Draft length k",
    int,
    limits.DEFAULT_K,
    "Draft length k, 0 for plain decoding",
    0,
    limits.K_MAX_LIMIT,
    slider=(0, limits.DEMO_K_SLIDER_MAX),
)
C = Input(
    "c",
    "Draft cost c",
    float,
    limits.DEFAULT_C,
    "Cost of one draft step relative to one target pass",
    0.0,
    limits.MAX_DRAFT_COST,
    slider=(0.0, limits.DEMO_C_SLIDER_MAX),
)
K_MAX = Input(
    "k_max", "Largest k searched", int, limits.K_SEARCH_MAX, "Largest draft length searched", 1, limits.K_MAX_LIMIT
)
SEED = Input("seed", "Run seed", int, 0, "Random seed (same seed, same result)", 0, limits.MAX_SEED)
RHO = Input(
    "rho",
    "Correlation ρ",
    float,
    limits.DEFAULT_RHO,
    "Lag-1 correlation of acceptances (two-state Markov chain over verified drafts, carried across cycles), "
    "at least -min(p, 1-p)/max(p, 1-p) at the given p, 0 for i.i.d.",
    -1.0,
    1.0,
)

# /run and /simulate draw i.i.d. acceptances unless a correlation is given; /bursty opens on a correlated one.
IID_RHO = replace(RHO, default=0.0)
# The curve's x axis (best k is searched over 1..k_search_max whatever it shows).
CHART_K_MAX = replace(K_MAX, default=limits.DEMO_CHART_K_MIN, help="Last k of the curve")
# What an engine reports is measured at a draft length of at least 1.
MEASURED_K = replace(K, help="Draft length k", low=1, slider=None)
BAND = Input("band", "Band", float, limits.DEMO_BAND, "Half-width of the acceptance band", 0.0, 0.5)
C_OPS = Input(
    "c_ops",
    "Draft arithmetic c_ops",
    float,
    0.0,
    "Arithmetic of a draft step relative to a target step",
    0.0,
    limits.MAX_DRAFT_COST,
)
TOKENS = Input("tokens", "Tokens", int, limits.DEMO_RUN_TOKENS, "Tokens to generate", 1, limits.MAX_TOKENS)
CYCLES = Input("cycles", "Cycles", int, limits.DEMO_SIMULATED_CYCLES, "Cycles to simulate", 1, limits.MAX_CYCLES)

# The verification cost of a cycle, as the calibration, the draft sources and the trees price it.
REGIME_TITLES = {
    RegimeName.MEMORY_BOUND.value: "memory-bound: v = 1",
    RegimeName.LINEAR.value: "linear: v = 1 + β·k",
    RegimeName.COMPUTE_BOUND.value: "compute-bound: v = k + 1",
    RegimeName.ROOFLINE.value: "roofline of the default setup",
}
REGIME = Input(
    "regime",
    "Verification cost",
    str,
    RegimeName.MEMORY_BOUND.value,
    "Verification cost: memory-bound (v = 1), compute-bound (v = k + 1), linear (v = 1 + beta k) or roofline",
    choices=lambda: REGIME_NAMES,
    titles=REGIME_TITLES.__getitem__,
)
BETA = Input(
    "beta",
    "β (linear)",
    float,
    limits.DEFAULT_BETA,
    "Linear regime: verification cost v(k) = 1 + beta k, beta from 0 (free) to 1 (compute-bound)",
    0.0,
    1.0,
)
COST_BATCH = Input(
    "batch",
    "Batch size (roofline)",
    int,
    1,
    "Roofline regime: batch size (H100 SXM, dense 8B target, 1B draft)",
    1,
    limits.MAX_BATCH,
)
COST: tuple[Input, ...] = (C, REGIME, BETA, COST_BATCH)


@dataclass(frozen=True)
class CostChoice:
    """The cost of a cycle as a request asks for it, priced where it is used (in a worker process too: a
    CostRegime holds a cache that does not travel)."""

    regime: str
    c: float
    beta: float
    batch: int

    def priced(self) -> CostRegime:
        return cost_regime(self.regime, self.c, beta=self.beta, batch=self.batch)


def cost_choice(given: Mapping[str, Any]) -> CostChoice:
    """The cost of a cycle from the values of COST (each at its default when not given)."""
    values = checked(COST, given)
    return CostChoice(values["regime"], values["c"], values["beta"], values["batch"])
