"""The inputs of cost regimes, batch size and the roofline (verification cost, speedup against batch, the schedule,
the p x k table of two regimes), declared once for the API, the /batch page and the command line.  The setup
itself (presets, formats, serving conditions) is declared in app.service.setup_inputs."""

from __future__ import annotations

from dataclasses import replace

from app.model import limits
from app.model.cost.regimes import RegimeName
from app.service import core_inputs, plan_inputs
from app.service.inputs import Input

MAX_POINTS = 1024

# The roofline's question opens on its own p and k (a batch of sequences at 70B scale).
P = replace(core_inputs.P, default=limits.ROOFLINE_DEFAULT_P)
# the /batch page's k slider drafts at least one token, up to its own span
K = replace(core_inputs.K, default=limits.ROOFLINE_DEFAULT_K, slider=(1, limits.BATCH_K_SLIDER_MAX))
K_MAX = replace(core_inputs.K_MAX, default=limits.ROOFLINE_DEFAULT_K_MAX)
C = replace(core_inputs.C, default=limits.ROOFLINE_TABLE_C)
REGIME = replace(core_inputs.REGIME, default=RegimeName.ROOFLINE.value, help="Cost regime")
BETA = replace(core_inputs.BETA, help="Linear regime: v(k) = 1 + beta k", default=limits.ROOFLINE_BETA)
BATCH = Input("batch", "Batch size B", int, 1, "Batch size (sequences per step)", 1, limits.MAX_BATCH)
BATCH_MAX = replace(plan_inputs.BATCH_MAX, label="Largest batch swept", help="Largest batch size swept")
POINTS = Input(
    "points",
    "Points",
    int,
    limits.ROOFLINE_POINTS,
    "Log-spaced batch sizes returned for plotting",
    2,
    MAX_POINTS,
)
FORMATS = ("json", "csv")
FORMAT = Input("format", "Format", str, FORMATS[0], "Response format", choices=lambda: FORMATS)

# --- the p x k table: two regimes side by side ----------------------------------------------------------------


def _side(side: str, name: str, regime: str, batch: int) -> tuple[Input, Input, Input]:
    return (
        replace(
            REGIME,
            name=f"regime_{side}",
            label=f"{name.title()} regime",
            default=regime,
            help=f"{name.title()}-hand regime",
        ),
        replace(BETA, name=f"beta_{side}", label=f"β ({name})"),
        replace(BATCH, name=f"batch_{side}", label=f"Batch ({name})", default=batch),
    )


(_LEFT, _RIGHT), (_LEFT_BATCH, _RIGHT_BATCH) = limits.ROOFLINE_TABLE_REGIMES, limits.ROOFLINE_TABLE_BATCHES
LEFT = _side("a", "left", _LEFT, _LEFT_BATCH)
RIGHT = _side("b", "right", _RIGHT, _RIGHT_BATCH)
P_MIN = Input("p_min", "First p", float, limits.DEFAULT_TABLE_P_MIN, "First row's p", 0.0, 1.0)
P_MAX = Input("p_max", "Last p", float, limits.DEFAULT_TABLE_P_MAX, "Last row's p", 0.0, 1.0)
P_STEP = Input(
    "p_step",
    "Row spacing",
    float,
    limits.DEFAULT_TABLE_P_STEP,
    f"Row spacing (at most {limits.MAX_TABLE_ROWS} rows)",
    limits.MIN_TABLE_P_STEP,
    1.0,
)
TABLE_K_MAX = Input("k_max", "Columns", int, limits.DEFAULT_TABLE_K_MAX, "Columns k = 1..k_max", 1, limits.MAX_TABLE_K)
ROWS = (P_MIN, P_MAX, P_STEP, TABLE_K_MAX)
