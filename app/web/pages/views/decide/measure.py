"""Step 6: measure the user's own servers instead of predicting, as a job the page starts, watches and cancels.

The page only describes the form (its inputs as the API declares them) and whether this deployment drives servers
at all (SPECDEC_ALLOW_MEASURE); static/js/measure.js starts POST /api/v1/measure and shows the job's progress,
its cells as they are measured and, at the end, the measured speedups and crossover.
"""

from __future__ import annotations

from typing import Any

from app.service import live_inputs
from app.web.core.config import get_settings

INPUTS = (
    live_inputs.SERVERS,
    live_inputs.BATCHES,
    live_inputs.N_PREDICT,
    live_inputs.REPEATS,
    live_inputs.MEASURE_ENGINE,
    live_inputs.MEASURE_METHOD,
    live_inputs.PROMPTS,
)


def measure_part() -> dict[str, Any]:
    """Whether this server measures, and the form's inputs (name, label, help, default, bounds)."""
    inputs = [
        {
            "name": item.name,
            "label": item.label,
            "help": item.help,
            "default": "" if item.default is None else str(item.default),
            "low": item.low,
            "high": item.high,
            "max_length": item.max_length,
            "text": item.kind is str,  # a text box; numbers get a number box with their bounds
            "choices": (
                [{"value": "", "title": "told by the server"}]
                + [{"value": name, "title": item.titles(name) if item.titles else name} for name in item.choices()]
                if item.choices is not None
                else None
            ),
        }
        for item in INPUTS
    ]
    return {
        "allowed": get_settings().allow_measure,
        "inputs": inputs,
        "labels": {item.name: item.label for item in (*live_inputs.MEASURE_JOB, live_inputs.PROMPTS)},
        "command": "specdec-lab measure http://127.0.0.1:8080 http://127.0.0.1:8081 --batch 1,2,4,8",
    }
