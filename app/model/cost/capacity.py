"""What fits in memory, and a decision per batch size that never goes past it.

The roofline prices a step at any batch size, but a server holds only as many
sequences as its memory leaves room for once both models' weights are loaded:
each sequence keeps a KV cache of the context length for the target and for
the draft.  Everything that names a batch here (the crossover, the first batch
where speculation loses, the schedule) is computed over 1 .. the largest batch
that fits, so that no answer recommends a k at a batch the server cannot run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from app.model.arithmetic.acceptance import Acceptance, iid_p
from app.model.cost.regimes import (
    RooflineSetup,
    ScheduleStep,
    crossover_batch,
    first_loss_batch,
    kv_cache_bytes,
    memory_capacity_gb,
    memory_needed_gb,
    schedule_from,
    speedup_grid,
)


def weights_gb(setup: RooflineSetup) -> float:
    """Both models' weights, GB."""
    return float(memory_needed_gb(setup, 0))


def kv_gb_per_sequence(setup: RooflineSetup) -> float:
    """KV caches (target and draft) of one sequence at the setup's context, GB."""
    return float((kv_cache_bytes(setup.target, setup, 1) + kv_cache_bytes(setup.draft, setup, 1)) / 1e9)


def max_batch_that_fits(setup: RooflineSetup, limit: int) -> int:
    """Largest batch in 0..limit whose weights and KV caches fit in the devices' memory (0: not even one)."""
    free = memory_capacity_gb(setup) - weights_gb(setup)
    if free < 0:
        return 0
    per_sequence = kv_gb_per_sequence(setup)
    if per_sequence <= 0:
        return limit
    batch = min(limit, math.floor(free / per_sequence))
    # Guard the rounding of the division against the product's own count.
    while batch > 0 and float(memory_needed_gb(setup, batch)) > memory_capacity_gb(setup):
        batch -= 1
    return max(batch, 0)


def fewest_devices(setup: RooflineSetup, batch: int, max_devices: int) -> int | None:
    """Fewest devices (a power of two) whose memory holds both models and ``batch`` sequences; None if none."""
    devices = 1
    while devices <= max_devices:
        if max_batch_that_fits(replace(setup, devices=devices), batch) >= batch:
            return devices
        devices *= 2
    return None


@dataclass(frozen=True)
class Decision:
    """Best k per batch over the batches that fit, and what to say about it."""

    p: float
    k_max: int
    batch_max: int  # asked for
    max_batch_that_fits: int
    batch_limit: int  # min(batch_max, max_batch_that_fits): the last batch decided
    steps: list[ScheduleStep]
    best_k: list[int]  # per batch 1..batch_limit
    best_speedup: list[float]
    off_from_batch: int | None  # within 1..batch_limit; None if speculation pays at batch_limit
    loses_at_batch_one: bool
    needed_gb_at_one: float
    capacity_gb: float
    headline: str
    # per batch 1..batch_limit, the best speedup of any k >= 1: where its interval holds 1, stopping is uncertain
    speculating_speedup: list[float] = field(default_factory=list)


def _times(value: float) -> str:
    return f"{value:.2f}×"


def decide(p: Acceptance, setup: RooflineSetup, k_max: int, batch_max: int, devices_note: str = "") -> Decision:
    """The schedule over batch 1..min(batch_max, largest that fits), with a plain headline.

    ``p`` is the i.i.d. acceptance, or a measured profile whose tokens per verification it uses."""
    acceptance = p
    p = iid_p(p)
    max_fit = max_batch_that_fits(setup, batch_max)
    limit = min(batch_max, max_fit)
    capacity = memory_capacity_gb(setup)
    needed_one = float(memory_needed_gb(setup, 1))
    where = f"{setup.devices} × {setup.accelerator.name}{devices_note}"
    if limit < 1:
        headline = (
            f"Nothing fits: both models and one sequence need {needed_one:.1f} GB, {where} holds {capacity:.0f} GB. "
            "Add devices or choose smaller weight or KV-cache formats."
        )
        return Decision(p, k_max, batch_max, max_fit, 0, [], [], [], None, False, needed_one, capacity, headline)
    batches = np.arange(1, limit + 1, dtype=np.int64)
    grid = speedup_grid(acceptance, setup, batches, k_max)  # k = 0..k_max per batch
    best_k = np.argmax(grid, axis=1)  # ties to the smaller k, 0 when none beats 1
    best_speedup = grid[np.arange(grid.shape[0]), best_k]
    speculating = grid[:, 1:].max(axis=1) if grid.shape[1] > 1 else np.ones(len(batches))
    steps = schedule_from(batches, best_k, best_speedup)
    off_from = crossover_batch(batches, np.where(best_k > 0, best_speedup, 1.0))
    loses_at_one = bool(best_k[0] == 0)
    fit_text = (
        f"at most {max_fit} sequences fit in {capacity:.0f} GB on {where}"
        if max_fit < batch_max
        else f"all {batch_max} batches asked for fit on {where}"
    )
    if loses_at_one:
        paying = np.flatnonzero(best_k > 0)
        reason = " (verifying k + 1 tokens reads more experts than one token does)" if setup.target.experts > 1 else ""
        if paying.size:
            headline = (
                f"Speculation loses already at batch 1{reason}: no k up to {k_max} beats plain decoding there. "
                f"It pays from batch {int(batches[paying[0]])} to {int(batches[paying[-1]])}; {fit_text}."
            )
        else:
            headline = (
                f"Speculation loses already at batch 1{reason} and at every batch that fits: do not speculate "
                f"on this setup ({fit_text})."
            )
    else:
        start = f"Speculate with k = {int(best_k[0])} at batch 1 ({_times(float(best_speedup[0]))})"
        if off_from is not None:
            headline = f"{start}; turn speculation off from batch {off_from}; {fit_text}."
        else:
            headline = f"{start}; it still pays at batch {limit}, the last batch decided; {fit_text}."
    return Decision(
        p=p,
        k_max=k_max,
        batch_max=batch_max,
        max_batch_that_fits=max_fit,
        batch_limit=limit,
        steps=steps,
        best_k=[int(value) for value in best_k],
        best_speedup=[float(value) for value in best_speedup],
        off_from_batch=off_from,
        loses_at_batch_one=loses_at_one,
        needed_gb_at_one=needed_one,
        capacity_gb=capacity,
        headline=headline,
        speculating_speedup=[float(value) for value in speculating],
    )


@dataclass(frozen=True)
class FittingMarks:
    """Crossover and first loss of one k, over the batches that fit only."""

    max_batch_that_fits: int
    crossover_batch: int | None
    first_loss_batch: int | None
    best_crossover_batch: int | None
    headline: str


def fitting_marks(
    setup: RooflineSetup,
    k: int,
    batches: np.ndarray,
    speedup: np.ndarray,
    best_speedup: np.ndarray,
    best_k: np.ndarray,
    batch_max: int,
) -> FittingMarks:
    """The sweep's marks restricted to batch <= largest that fits, and a headline saying so."""
    max_fit = max_batch_that_fits(setup, batch_max)
    inside = batches <= max_fit
    if not inside.any():
        needed = float(memory_needed_gb(setup, 1))
        headline = (
            f"Nothing fits: both models and one sequence need {needed:.1f} GB; "
            f"{setup.devices} × {setup.accelerator.name} holds {memory_capacity_gb(setup):.0f} GB."
        )
        return FittingMarks(0, None, None, None, headline)
    b, s = batches[inside], speedup[inside]
    best = np.where(best_k[inside] > 0, best_speedup[inside], 1.0)
    crossover = crossover_batch(b, s)
    first_loss = first_loss_batch(b, s)
    best_crossover = crossover_batch(b, best)
    last = int(b[-1])
    fit_text = f"the largest batch that fits is {max_fit}" if max_fit < batch_max else f"every batch to {last} fits"
    if first_loss == 1:
        reason = " (verification reads more experts)" if setup.target.experts > 1 else ""
        later = np.flatnonzero(s > 1.0)
        tail = (
            f"; it pays from batch {int(b[later[0]])}"
            + (f" until batch {crossover}" if crossover is not None else f" to {last}")
            if later.size
            else "; it never pays at this k"
        )
        headline = f"At k = {k} speculation loses already at batch 1 ({_times(float(s[0]))}){reason}{tail}; {fit_text}."
    elif crossover is not None:
        headline = (
            f"At k = {k} speculation pays ({_times(float(s[0]))} at batch 1) until batch {crossover}; {fit_text}."
        )
    else:
        headline = f"At k = {k} speculation still pays at batch {last}; {fit_text}."
    return FittingMarks(max_fit, crossover, first_loss, best_crossover, headline)
