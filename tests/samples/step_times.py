"""Sample step times for tests and demonstrations: a CSV of target passes priced by a roofline setup itself."""

from __future__ import annotations

import dataclasses

import numpy as np

from app.model.cost.regimes import RooflineSetup, default_setup, model_step


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


def slower_server_steps() -> str:
    """24 steps (batch 1 to 128, 1, 3 and 5 tokens each, 2% noise) measured on a server slower than the defaults:
    its bandwidth at half the peak and its arithmetic at a tenth, so that verifying drafts costs more there and
    speculation stops paying at a smaller batch than the defaults say."""
    server = dataclasses.replace(
        default_setup(), bandwidth_efficiency=0.5, compute_efficiency=0.1, step_overhead_us=40.0
    )
    return example_step_times(server, [1, 2, 4, 8, 16, 32, 64, 128], [1, 3, 5], noise=0.02, seed=3)
