"""Sample step times for tests and demonstrations: a CSV of target passes priced by a roofline setup itself."""

from __future__ import annotations

import numpy as np

from app.model.cost.regimes import RooflineSetup, model_step


def example_step_times(setup: RooflineSetup, batches: list[int], tokens: list[int], noise: float, seed: int) -> str:
    """A CSV of target step times from ``setup`` itself, with multiplicative noise (for tests and examples)."""
    rng = np.random.default_rng(seed)
    lines = ["batch,tokens,ms"]
    for batch in batches:
        for n in tokens:
            step = model_step(setup, setup.target, setup.target_bytes_per_param, batch, n)
            ms = float(step.total_s) * 1e3 * float(np.exp(rng.normal(0.0, noise)))
            lines.append(f"{batch},{n},{ms:.6f}")
    return "\n".join(lines) + "\n"
