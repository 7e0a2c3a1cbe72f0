"""When verification stops being free: linear and roofline cost regimes.

The closed form prices one cycle at ``k * c + v(k)`` target passes.  Here
``v`` and ``c`` come from a regime:

- memory-bound: ``v(k) = 1`` (batch one, dense model);
- linear: ``v(k) = 1 + beta * k``, ``beta = 1`` being fully compute-bound;
- roofline: a step over ``n`` tokens per sequence at batch ``B`` takes
  ``max(bytes_read / bandwidth, flops / compute) + overhead``, for the target
  and for the draft model on the same hardware, so that
  ``v(k) = t(B, k + 1) / t(B, 1)`` and ``c = t_draft(B, 1) / t(B, 1)``.

Roofline details.  Bytes read are the weights (for a mixture of experts, the
shared parameters plus the fraction ``1 - (1 - a/E)^(B n)`` of routed experts
that B n tokens touch) plus the KV cache of B sequences at the context length.
FLOPs are ``2 * active_params`` per token plus the attention over the cached
context, ``4 * layers * query_heads * head_dim * context`` per token (zero at
context 0, where the formula is exactly ``2 * active_params * B * n``).
Bandwidth and compute are the vendor peaks times ``devices`` times an
efficiency factor.  Functions taking ``batch`` and ``tokens`` accept arrays
and broadcast them.

By default the efficiencies, the overheads (per pass, per draft step, per
cycle and per sequence of a cycle) and the all-reduce latency are those
fitted to published measurements (``limits.FITTED_TERMS``);
``plain_roofline`` prices a setup without them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from app.model import limits
from app.model.arithmetic import acceptance, closed_form
from app.model.arithmetic.acceptance import Acceptance
from app.model.arithmetic.closed_form import VerifyCost
from app.model.cost.presets import ACCELERATORS, MODELS, Accelerator, ModelSpec

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def linear_verification(beta: float) -> VerifyCost:
    """v(k) = 1 + beta k, beta in [0, 1]; beta = 0 is free and beta = 1 fully compute-bound."""
    if not 0.0 <= beta <= 1.0:
        raise ValueError("beta must lie in [0, 1]")

    def verify(k: int) -> float:
        return 1.0 + beta * k

    return verify


def compute_bound_verification(k: int) -> float:
    """Every verified token costs a full pass: v(k) = k + 1."""
    return float(k + 1)


# ---------------------------------------------------------------------------
# Mixture-of-experts coverage


def expert_coverage(experts: int, experts_per_token: int, tokens: ArrayLike) -> FloatArray:
    """Expected fraction of routed experts read by ``tokens`` tokens: 1 - (1 - a/E)^tokens.

    Exact when each token picks its a experts uniformly and independently of the others.
    """
    counts = np.asarray(tokens, dtype=np.float64)
    if experts_per_token >= experts:
        return np.ones_like(counts)
    return -np.expm1(counts * math.log1p(-experts_per_token / experts))


# ---------------------------------------------------------------------------
# Roofline


@dataclass(frozen=True)
class RooflineSetup:
    """Hardware, target and draft model, number formats and serving conditions."""

    accelerator: Accelerator
    target: ModelSpec
    draft: ModelSpec
    devices: int = 1
    target_bytes_per_param: float = 2.0
    draft_bytes_per_param: float = 2.0
    kv_bytes_per_value: float = 2.0
    context_tokens: int = limits.DEFAULT_CONTEXT
    # whether the target's (the draft's) weights multiply in FP8, at the accelerator's FP8 rate where it has one
    # (presets.WeightFormat.fp8); attention multiplies at the BF16 rate either way
    target_fp8: bool = False
    draft_fp8: bool = False
    # whether the draft proposes all k tokens in one pass over k positions (parallel drafting: P-EAGLE, PARD, and
    # block drafters such as DFlash), rather than one token per pass, k passes a cycle
    parallel_draft: bool = False
    bandwidth_efficiency: float = limits.DEFAULT_BANDWIDTH_EFFICIENCY
    compute_efficiency: float = limits.DEFAULT_COMPUTE_EFFICIENCY
    # Launch, synchronisation and sampling per forward pass, fitted to published measurements (limits.FITTED_TERMS).
    step_overhead_us: float = limits.DEFAULT_OVERHEAD_US
    # What the passes leave out (limits.COST_TERMS): per sequence of every pass (the draft's too), per draft step, per
    # speculative cycle (fixed and per sequence), and per all-reduce across the devices; fitted like the rest.
    overhead_per_sequence_us: float = limits.FITTED_TERMS["overhead_per_sequence_us"]
    overhead_per_draft_step_us: float | None = limits.FITTED_TERMS["overhead_per_draft_step_us"]  # None: as a pass
    cycle_overhead_us: float = limits.FITTED_TERMS["cycle_overhead_us"]
    cycle_overhead_per_sequence_us: float = limits.FITTED_TERMS["cycle_overhead_per_sequence_us"]
    allreduce_us: float = limits.FITTED_TERMS["allreduce_us"]

    def __post_init__(self) -> None:
        if self.devices < 1:
            raise limits.FieldError("devices", "{0} must be at least 1")
        for name in ("target_bytes_per_param", "draft_bytes_per_param", "kv_bytes_per_value"):
            if not getattr(self, name) > 0:
                raise limits.FieldError(name, "{0} must be positive")
        if self.context_tokens < 0:
            raise limits.FieldError("context_tokens", "{0} must be at least 0")
        for name in ("bandwidth_efficiency", "compute_efficiency"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise limits.FieldError(name, "{0} must lie in (0, 1]")
        if self.step_overhead_us < 0:
            raise limits.FieldError("step_overhead_us", "{0} must be at least 0")
        for term in limits.COST_TERMS:
            value = getattr(self, term.name)
            if value is not None and not 0 <= value <= term.high:
                raise limits.FieldError(term.name, f"{{0}} must be from 0 to {term.high:g}")

    @property
    def draft_step_overhead_us(self) -> float:
        return self.step_overhead_us if self.overhead_per_draft_step_us is None else self.overhead_per_draft_step_us

    @property
    def bandwidth_bytes_s(self) -> float:
        return self.accelerator.bandwidth_tb_s * 1e12 * self.devices * self.bandwidth_efficiency

    @property
    def compute_flops_s(self) -> float:
        return self.accelerator.bf16_tflops * 1e12 * self.devices * self.compute_efficiency

    def matmul_speed(self, fp8: bool) -> float:
        """How much faster than at the BF16 rate the weights multiply: the FP8 rate over the BF16 one where they
        multiply in FP8 and the accelerator gives an FP8 rate, else 1."""
        fp8_tflops = self.accelerator.fp8_tflops
        return fp8_tflops / self.accelerator.bf16_tflops if fp8 and fp8_tflops is not None else 1.0


def default_setup() -> RooflineSetup:
    """H100 SXM, dense 8B target, dense 1B draft, bf16 weights and cache, 1,024 tokens of context, the fitted terms."""
    return RooflineSetup(ACCELERATORS[limits.DEFAULT_HW], MODELS[limits.DEFAULT_MODEL], MODELS[limits.DEFAULT_DRAFT])


def priced(setup: RooflineSetup, terms: Mapping[str, float | None]) -> RooflineSetup:
    """``setup`` with the cost terms in ``terms``, keyed by their fitted names (``overhead_us`` is the pass's
    ``step_overhead_us``; the others are the setup's own fields)."""
    fields: dict[str, Any] = {
        "step_overhead_us" if name == "overhead_us" else name: value for name, value in terms.items()
    }
    return replace(setup, **fields)


def plain_roofline(setup: RooflineSetup) -> RooflineSetup:
    """``setup`` priced by the plain roofline (limits.PLAIN_ROOFLINE_TERMS): fixed efficiencies, one overhead per
    pass for target and draft alike (the draft's follows the pass's), no cycle time or all-reduce latency (what the
    all-reduces carry over the link, :func:`payload_s`, is the accelerator's and stays)."""
    return priced(setup, {**limits.PLAIN_ROOFLINE_TERMS, "overhead_per_draft_step_us": None})


@dataclass(frozen=True)
class StepTime:
    """One forward pass; arrays broadcast over batch and tokens per sequence."""

    bytes_read: FloatArray
    flops: FloatArray
    memory_s: FloatArray
    compute_s: FloatArray
    overhead_s: FloatArray | float

    @property
    def total_s(self) -> FloatArray:
        return np.maximum(self.memory_s, self.compute_s) + self.overhead_s

    @property
    def compute_bound(self) -> NDArray[np.bool_]:
        return self.compute_s > self.memory_s


def kv_cache_bytes(model: ModelSpec, setup: RooflineSetup, batch: ArrayLike) -> FloatArray:
    """KV cache of ``batch`` sequences at the setup's context length."""
    per_sequence = setup.context_tokens * model.kv_values_per_token * setup.kv_bytes_per_value
    return np.asarray(batch, dtype=np.float64) * per_sequence


def weight_bytes_read(model: ModelSpec, bytes_per_param: float, tokens_in_step: ArrayLike) -> FloatArray:
    """Weights read by one step over ``tokens_in_step`` tokens (all sequences together)."""
    coverage = expert_coverage(model.experts, model.experts_per_token, tokens_in_step)
    return (model.shared_params_b + model.routed_params_b * coverage) * 1e9 * bytes_per_param


def flops_per_token(model: ModelSpec, context_tokens: int, matmul_speed: float = 1.0) -> float:
    """2 x active parameters plus attention scores and values over the cached context; with ``matmul_speed`` (the
    weights' multiply rate over the BF16 rate, RooflineSetup.matmul_speed) the weights' share counted as the FLOPs
    that take as long at the BF16 rate."""
    weights, attention = token_flops(model, context_tokens)
    return weights / matmul_speed + attention


def token_flops(model: ModelSpec, context_tokens: int) -> tuple[float, float]:
    """One token's FLOPs: (through the weights, 2 x active parameters; through attention over the cached context)."""
    return 2.0 * model.active_params_b * 1e9, 4.0 * model.layers * model.query_heads * model.head_dim * context_tokens


def model_step(
    setup: RooflineSetup,
    model: ModelSpec,
    bytes_per_param: float,
    batch: ArrayLike,
    tokens: ArrayLike,
    overhead_us: float | None = None,
    per_sequence_us: float = 0.0,
    fp8: bool = False,
) -> StepTime:
    """Roofline time of one step of ``model`` over ``tokens`` tokens for each of ``batch`` sequences.

    ``overhead_us`` is the pass's fixed time (default: the setup's per-pass overhead), ``per_sequence_us`` its
    time per sequence of the batch; with more than one device each layer adds two all-reduces of
    ``setup.allreduce_us`` and their payload over the link (:func:`payload_s`).  ``fp8``: its weights multiply in
    FP8 (RooflineSetup.matmul_speed)."""
    batch_array = np.asarray(batch, dtype=np.float64)
    tokens_array = np.asarray(tokens, dtype=np.float64)
    token_count = batch_array * tokens_array
    bytes_read = weight_bytes_read(model, bytes_per_param, token_count) + kv_cache_bytes(model, setup, batch_array)
    weights, attention = token_flops(model, setup.context_tokens)
    at_bf16 = token_count * (weights / setup.matmul_speed(fp8) + attention)
    return StepTime(
        bytes_read=bytes_read,
        flops=token_count * (weights + attention),
        memory_s=bytes_read / setup.bandwidth_bytes_s,
        compute_s=at_bf16 / setup.compute_flops_s,
        overhead_s=(
            (setup.step_overhead_us if overhead_us is None else overhead_us)
            + communication_us(setup, model)
            + per_sequence_us * batch_array
        )
        * 1e-6
        + payload_s(setup, model, token_count),
    )


def communication_us(setup: RooflineSetup, model: ModelSpec) -> float:
    """Two all-reduces per layer per pass across the devices (none on one device)."""
    return 2.0 * model.layers * setup.allreduce_us if setup.devices > 1 else 0.0


ACTIVATION_BYTES = 2.0  # a hidden state's bytes per value (bf16) as the all-reduces carry it


def payload_s(setup: RooflineSetup, model: ModelSpec, token_count: ArrayLike) -> FloatArray:
    """What the all-reduces carry, in seconds: two per layer, each the hidden state of every token in the pass, in
    a ring where each device sends 2 (n - 1) / n of it over its link one way (half the both-ways figure).  A mesh
    (``links``, AMD Infinity Fabric's 7) reaches each peer over a link of its own, so n devices use n - 1 of them
    and the others stand idle: 4 MI300X send at 3/7 of the figure (more devices than a mesh joins are another node,
    priced as one: a known limit).  Nothing on one device, or where the accelerator gives no link."""
    tokens = np.asarray(token_count, dtype=np.float64)
    link = setup.accelerator.link_gb_s
    if setup.devices == 1 or link is None:
        return np.zeros_like(tokens)
    ring = 2.0 * (setup.devices - 1) / setup.devices
    links = setup.accelerator.links
    # a mesh reaches each peer over one link of its own: with fewer peers than links, the rest stand idle
    share = 1.0 if links is None else min(setup.devices - 1, links) / links
    result: FloatArray = (
        tokens * 2.0 * model.layers * ring * model.width * ACTIVATION_BYTES / (share * link * 1e9 / 2.0)
    )
    return result


def cycle_overhead_s(setup: RooflineSetup, batch: ArrayLike) -> FloatArray:
    """What a speculative cycle adds beyond its passes at ``batch`` sequences, seconds."""
    batch_array = np.asarray(batch, dtype=np.float64)
    return (setup.cycle_overhead_us + setup.cycle_overhead_per_sequence_us * batch_array) * 1e-6


def target_step(setup: RooflineSetup, batch: ArrayLike, tokens: ArrayLike) -> StepTime:
    """One pass of the target, plain or verifying: its fixed time and its time per sequence beside the roofline."""
    return model_step(
        setup,
        setup.target,
        setup.target_bytes_per_param,
        batch,
        tokens,
        per_sequence_us=setup.overhead_per_sequence_us,
        fp8=setup.target_fp8,
    )


def draft_step(setup: RooflineSetup, batch: ArrayLike, tokens: ArrayLike = 1) -> StepTime:
    """One draft step proposes ``tokens`` tokens per sequence (one in a chain, k in a parallel draft); like every
    pass it pays its time per sequence."""
    return model_step(
        setup,
        setup.draft,
        setup.draft_bytes_per_param,
        batch,
        tokens,
        setup.draft_step_overhead_us,
        per_sequence_us=setup.overhead_per_sequence_us,
        fp8=setup.draft_fp8,
    )


def roofline_draft_cost(setup: RooflineSetup, batch: ArrayLike) -> FloatArray:
    """c(B) = t_draft(B, 1) / t(B, 1)."""
    return draft_step(setup, batch).total_s / target_step(setup, batch, 1).total_s


def draft_steps(setup: RooflineSetup, k_values: ArrayLike) -> FloatArray:
    """Draft passes per cycle: k in a chain, one for a parallel draft (none at k = 0)."""
    k_array = np.asarray(k_values, dtype=np.float64)
    return np.minimum(k_array, 1.0) if setup.parallel_draft else k_array


def draft_tokens(setup: RooflineSetup, k_values: ArrayLike) -> FloatArray:
    """Tokens per sequence of one draft pass: one in a chain (a scalar, so that a chain's pass is priced once per
    batch, not once per k), all k (at least one) for a parallel draft."""
    if not setup.parallel_draft:
        return np.asarray(1.0)
    return np.maximum(np.asarray(k_values, dtype=np.float64), 1.0)


def draft_costs(setup: RooflineSetup, batch: ArrayLike, k_values: ArrayLike) -> FloatArray:
    """What a cycle's drafting costs in plain target passes, broadcast over batch and k: its draft passes, each
    over its tokens, t_draft(B, n) / t(B, 1) (k c(B) in a chain, t_draft(B, k) / t(B, 1) for a parallel draft)."""
    batch_array = np.asarray(batch, dtype=np.float64)
    step = draft_step(setup, batch_array, draft_tokens(setup, k_values)).total_s
    result: FloatArray = draft_steps(setup, k_values) * step / target_step(setup, batch_array, 1).total_s
    return result


def verification_costs(setup: RooflineSetup, batch: ArrayLike, k_values: ArrayLike) -> FloatArray:
    """v(k) = (t(B, k + 1) + the cycle's own overhead) / t(B, 1) for k >= 1 (1 at k = 0), broadcast."""
    batch_array = np.asarray(batch, dtype=np.float64)
    k_array = np.asarray(k_values, dtype=np.float64)
    plain = target_step(setup, batch_array, 1).total_s
    cycle = np.where(k_array > 0, cycle_overhead_s(setup, batch_array), 0.0)
    result: FloatArray = (target_step(setup, batch_array, k_array + 1.0).total_s + cycle) / plain
    return result


def roofline_verification(setup: RooflineSetup, batch: int) -> VerifyCost:
    """The roofline at one batch size as a closed-form VerifyCost."""

    def verify(k: int) -> float:
        return float(verification_costs(setup, batch, k))

    return verify


def roofline_speedup(p: Acceptance, k: int, setup: RooflineSetup, batch: ArrayLike) -> FloatArray:
    """S(B) = E[T] t(B, 1) / (k t_draft(B, 1) + t(B, k + 1)), computed as E[T] / (k c + v); a parallel draft's one
    pass over k positions in place of k c (:func:`draft_costs`).

    ``p`` is the i.i.d. acceptance or a measured profile (:mod:`app.model.arithmetic.acceptance`)."""
    batch_array = np.asarray(batch, dtype=np.float64)
    if k == 0:
        return np.ones_like(batch_array)
    cost = draft_costs(setup, batch_array, k) + verification_costs(setup, batch_array, k)
    return acceptance.expected_tokens(p, k) / cost


def operations_ratio(setup: RooflineSetup) -> float:
    """Draft FLOPs per token over target FLOPs per token: Leviathan's c in the compute-bound limit where both
    models multiply at the same rate (with FP8 weights on one side only, that side's weights multiply faster)."""
    return flops_per_token(setup.draft, setup.context_tokens) / flops_per_token(setup.target, setup.context_tokens)


def memory_needed_gb(setup: RooflineSetup, batch: ArrayLike) -> FloatArray:
    """Weights of both models plus both KV caches for ``batch`` sequences, in GB."""
    weights = (
        setup.target.total_params_b * setup.target_bytes_per_param
        + setup.draft.total_params_b * setup.draft_bytes_per_param
    ) * 1e9
    caches = kv_cache_bytes(setup.target, setup, batch) + kv_cache_bytes(setup.draft, setup, batch)
    return (weights + caches) / 1e9


def memory_capacity_gb(setup: RooflineSetup) -> float:
    return setup.accelerator.memory_gb * setup.devices


def devices_to_fit(setup: RooflineSetup, batch: int = 1, max_devices: int = limits.MAX_DEVICES) -> int | None:
    """Smallest power of two of devices whose memory holds both models at ``batch``; None if > max."""
    devices = 1
    needed = float(memory_needed_gb(setup, batch))
    while devices <= max_devices:
        if needed <= setup.accelerator.memory_gb * devices:
            return devices
        devices *= 2
    return None


# ---------------------------------------------------------------------------
# Speedup against batch size, crossover and schedule


def crossover_batch(batches: IntArray, speedups: FloatArray) -> int | None:
    """The batch size from which speculation stops paying for good: S <= 1 from there to the end.

    None when it still pays at the largest batch.  For a mixture of experts the speedup
    can dip below 1 at small batches and recover (see ``first_loss_batch``).
    """
    winning = np.flatnonzero(speedups > 1.0)
    if winning.size == 0:
        return int(batches[0])
    last_win = winning[-1]
    return int(batches[last_win + 1]) if last_win + 1 < len(batches) else None


def first_loss_batch(batches: IntArray, speedups: FloatArray) -> int | None:
    """The first batch size at which speedup is at most 1."""
    losing = np.flatnonzero(speedups <= 1.0)
    return int(batches[losing[0]]) if losing.size else None


@dataclass(frozen=True)
class BatchSweep:
    """Everything about one (p, k) across batch sizes 1..batch_max."""

    batches: IntArray
    speedup: FloatArray
    draft_cost: FloatArray  # one draft step's, c; a parallel draft's one step drafts all k
    verification_cost: FloatArray
    target_step_ms: FloatArray
    verify_step_ms: FloatArray
    draft_step_ms: FloatArray
    verify_compute_bound: NDArray[np.bool_]
    best_k: IntArray
    best_speedup: FloatArray
    memory_needed_gb: FloatArray
    crossover_batch: int | None
    first_loss_batch: int | None
    best_crossover_batch: int | None


def speedup_grid(p: Acceptance, setup: RooflineSetup, batches: ArrayLike, k_max: int) -> FloatArray:
    """Speedup for every batch (rows) and every k = 0..k_max (columns); column 0 is exactly 1."""
    batch_column = np.asarray(batches, dtype=np.float64)[:, None]
    k_row = np.arange(k_max + 1, dtype=np.float64)[None, :]
    cost = draft_costs(setup, batch_column, k_row) + verification_costs(setup, batch_column, k_row)
    tokens = np.array([acceptance.expected_tokens(p, k) for k in range(k_max + 1)])[None, :]
    grid = tokens / cost
    grid[:, 0] = 1.0
    return grid


def best_k_by_batch(p: Acceptance, setup: RooflineSetup, batches: ArrayLike, k_max: int) -> tuple[IntArray, FloatArray]:
    """argmax over k = 0..k_max of speedup per batch, ties to the smaller k, 0 when none beats 1."""
    grid = speedup_grid(p, setup, batches, k_max)
    best = np.argmax(grid, axis=1)
    return best.astype(np.int64), grid[np.arange(grid.shape[0]), best]


def sweep_batches(p: Acceptance, k: int, setup: RooflineSetup, batch_max: int, k_max: int) -> BatchSweep:
    batches = np.arange(1, batch_max + 1, dtype=np.int64)
    plain = target_step(setup, batches, 1)
    verify = target_step(setup, batches, k + 1)
    # one draft step: one token per sequence in a chain, all k for a parallel draft (draft_steps a cycle)
    draft = draft_step(setup, batches, draft_tokens(setup, k))
    draft_cost = draft.total_s / plain.total_s
    verification_cost = verification_costs(setup, batches, k)
    cost = draft_steps(setup, k) * draft_cost + verification_cost
    speedup = acceptance.expected_tokens(p, k) / cost if k else np.ones(batch_max)
    best_k, best_speedup = best_k_by_batch(p, setup, batches, k_max)
    return BatchSweep(
        batches=batches,
        speedup=speedup,
        draft_cost=draft_cost,
        verification_cost=verification_cost,
        target_step_ms=plain.total_s * 1e3,
        verify_step_ms=verify.total_s * 1e3,
        draft_step_ms=draft.total_s * 1e3,
        verify_compute_bound=verify.compute_bound,
        best_k=best_k,
        best_speedup=best_speedup,
        memory_needed_gb=memory_needed_gb(setup, batches),
        crossover_batch=crossover_batch(batches, speedup),
        first_loss_batch=first_loss_batch(batches, speedup),
        best_crossover_batch=crossover_batch(batches, best_speedup),
    )


@dataclass(frozen=True)
class ScheduleStep:
    """Run draft length ``k`` (0 = speculation off) for batch sizes batch_from..batch_to."""

    batch_from: int
    batch_to: int
    k: int
    speedup_at_from: float
    speedup_at_to: float


def schedule_from(batches: IntArray, best_k: IntArray, best_speedup: FloatArray) -> list[ScheduleStep]:
    """Compress a per-batch best k into runs: thresholds of batch size to k."""
    starts = np.concatenate(([0], np.flatnonzero(np.diff(best_k)) + 1))
    ends = np.concatenate((starts[1:] - 1, [len(batches) - 1]))
    return [
        ScheduleStep(
            batch_from=int(batches[start]),
            batch_to=int(batches[end]),
            k=int(best_k[start]),
            speedup_at_from=float(best_speedup[start]),
            speedup_at_to=float(best_speedup[end]),
        )
        for start, end in zip(starts, ends, strict=True)
    ]


# ---------------------------------------------------------------------------
# Named regimes and the p x k table


class RegimeName(StrEnum):
    MEMORY_BOUND = "memory-bound"
    COMPUTE_BOUND = "compute-bound"
    LINEAR = "linear"
    ROOFLINE = "roofline"


REGIME_NAMES: tuple[str, ...] = tuple(name.value for name in RegimeName)


@dataclass(frozen=True)
class Regime:
    """A named way of pricing a cycle: draft cost c and verification cost v(k)."""

    name: RegimeName
    label: str
    draft_cost: float
    verify: VerifyCost
    beta: float | None = None
    batch: int | None = None


def make_regime(
    name: RegimeName,
    *,
    draft_cost: float,
    beta: float = limits.DEFAULT_BETA,
    setup: RooflineSetup | None = None,
    batch: int = 1,
) -> Regime:
    """Build a named regime; ``draft_cost`` is ignored by the roofline, which derives c from B."""
    name = RegimeName(name)
    if name is RegimeName.MEMORY_BOUND:
        return Regime(name, "memory-bound (v = 1)", draft_cost, closed_form.free_verification)
    if name is RegimeName.COMPUTE_BOUND:
        return Regime(name, "compute-bound (v = k + 1)", draft_cost, compute_bound_verification)
    if name is RegimeName.LINEAR:
        return Regime(name, f"linear (v = 1 + {beta:g} k)", draft_cost, linear_verification(beta), beta=beta)
    setup = setup or default_setup()
    label = f"roofline: {setup.accelerator.name}, {setup.target.name}, batch {batch}"
    if setup.parallel_draft:
        # one draft pass a cycle whose cost grows with k: no cost per draft step, the pass counted with v(k)
        def verify_and_draft(k: int) -> float:
            return float(verification_costs(setup, batch, k) + draft_costs(setup, batch, k))

        return Regime(name, f"{label}, parallel draft (its pass counted in v)", 0.0, verify_and_draft, batch=batch)
    return Regime(
        name,
        label,
        float(roofline_draft_cost(setup, batch)),
        roofline_verification(setup, batch),
        batch=batch,
    )


def acceptance_grid(p_min: float, p_max: float, p_step: float) -> FloatArray:
    """p_min, p_min + step, ... up to p_max (inclusive within rounding), rounded to 6 places."""
    if not (0.0 <= p_min <= p_max <= 1.0 and p_step > 0):
        raise ValueError("need 0 <= p_min <= p_max <= 1 and p_step > 0")
    count = math.floor((p_max - p_min) / p_step + 1e-9) + 1
    return np.round(p_min + p_step * np.arange(count), 6)


def speedup_table(p_values: ArrayLike, k_values: ArrayLike, regime: Regime) -> FloatArray:
    """S over p (rows) x k (columns): closed-form E[T] over the regime's k c + v(k)."""
    ps = np.asarray(p_values, dtype=np.float64)
    ks = [int(k) for k in np.asarray(k_values)]
    costs = np.array([closed_form.cost_per_cycle(k, regime.draft_cost, regime.verify) for k in ks])
    tokens = np.array([[closed_form.expected_tokens(float(p), k) for k in ks] for p in ps])
    table: FloatArray = tokens / costs[None, :]
    return table


@dataclass(frozen=True)
class WinToLoss:
    """The cell that wins most under the first regime while losing under the second."""

    p: float
    k: int
    speedup_a: float
    speedup_b: float


@dataclass(frozen=True)
class TableComparison:
    p_values: FloatArray
    k_values: IntArray
    regime_a: Regime
    regime_b: Regime
    speedup_a: FloatArray
    speedup_b: FloatArray
    win_to_loss_cells: int
    highlight: WinToLoss | None


def compare_regimes(p_values: ArrayLike, k_values: ArrayLike, regime_a: Regime, regime_b: Regime) -> TableComparison:
    ps = np.asarray(p_values, dtype=np.float64)
    ks = np.asarray(k_values, dtype=np.int64)
    table_a = speedup_table(ps, ks, regime_a)
    table_b = speedup_table(ps, ks, regime_b)
    flips = (table_a > 1.0) & (table_b < 1.0)
    highlight = None
    if flips.any():
        row, column = np.unravel_index(np.argmax(np.where(flips, table_a, -np.inf)), table_a.shape)
        highlight = WinToLoss(
            p=float(ps[row]),
            k=int(ks[column]),
            speedup_a=float(table_a[row, column]),
            speedup_b=float(table_b[row, column]),
        )
    return TableComparison(
        p_values=ps,
        k_values=ks,
        regime_a=regime_a,
        regime_b=regime_b,
        speedup_a=table_a,
        speedup_b=table_b,
        win_to_loss_cells=int(flips.sum()),
        highlight=highlight,
    )
