"""Closed form and Monte Carlo endpoints (DESIGN.md section 3).

The closed-form handlers are coroutines with nothing to await: their work is bounded arithmetic (microseconds, a
few hundred of k at most), cheaper than the hand-over to a thread and back that a plain function costs.  On the
event loop they answer without that wait; under a flood of heavy requests, when the cores are busy, each
hand-over waits for the scheduler, and the thread pool doubled the cheap requests' latency.  Run and simulate
stay in the heavy-work processes.
"""

from __future__ import annotations

from fastapi import APIRouter

from app.model.arithmetic import closed_form, monte_carlo
from app.service.core import build_curve, build_optimal_k, build_speedup
from app.service.core_inputs import BAND, C_OPS, CHART_K_MAX, CYCLES, IID_RHO, K_MAX, MEASURED_K, SEED, TOKENS, C, K, P
from app.service.schemas.core import (
    BreakEven,
    Cost,
    Curve,
    ExpectedTokens,
    Operations,
    OptimalK,
    Run,
    RunCycle,
    ServingMetrics,
    Simulation,
    Speedup,
)
from app.service.schemas.fill import filled
from app.web.api.inputs import takes
from app.web.api.params import RHO_RULES, check_rho
from app.web.core.errors import with_rules
from app.web.core.heavy import HEAVY, in_worker_process

router = APIRouter(prefix="/api/v1", tags=["closed form"])


@router.get("/expected-tokens", summary="Expected tokens per cycle", response_model=ExpectedTokens)
@takes(P, K)
async def get_expected_tokens(p: float, k: int) -> ExpectedTokens:
    """Expected tokens per cycle and the distribution of accepted drafts."""
    return ExpectedTokens(
        p=p,
        k=k,
        expected_tokens=closed_form.expected_tokens(p, k),
        accepted_distribution=closed_form.accepted_distribution(p, k),
    )


@router.get("/cost", summary="Cost of one cycle", response_model=Cost)
@takes(K, C)
async def get_cost(k: int, c: float) -> Cost:
    """Cost of one cycle in target passes."""
    return Cost(k=k, c=c, cost_per_cycle=closed_form.cost_per_cycle(k, c))


@router.get("/speedup", summary="Speedup over plain decoding", response_model=Speedup)
@takes(P, K, C)
async def get_speedup(p: float, k: int, c: float) -> Speedup:
    """Speedup of speculative decoding over plain decoding."""
    return build_speedup(p, k, c)


@router.get("/optimal-k", summary="Best draft length k", response_model=OptimalK)
@takes(P, C, K_MAX)
async def get_optimal_k(p: float, c: float, k_max: int) -> OptimalK:
    """Draft length with the highest speedup over 1..k_max, or 0 when speculation never pays.

    limit_reached says when best_k is k_max, the longest draft searched."""
    return build_optimal_k(p, c, k_max)


@router.get("/break-even", summary="Break-even acceptance and largest useful draft cost", response_model=BreakEven)
@takes(P, K, C)
async def get_break_even(p: float, k: int, c: float) -> BreakEven:
    """Break-even acceptance, largest useful draft cost and Leviathan's guarantee."""
    return BreakEven(
        p=p,
        k=k,
        c=c,
        break_even_acceptance=closed_form.break_even_acceptance(k, c),
        max_draft_cost=closed_form.max_draft_cost(p, k),
        leviathan_guarantee=closed_form.leviathan_guarantee(p, c),
    )


@router.get("/serving-metrics", summary="What an engine reports at p and k", response_model=ServingMetrics)
@takes(P, MEASURED_K)
async def get_serving_metrics(p: float, k: int) -> ServingMetrics:
    """What a serving engine would report at acceptance p and draft length k."""
    return ServingMetrics(
        p=p,
        k=k,
        draft_acceptance_rate=closed_form.draft_acceptance_rate(p, k),
        mean_acceptance_length=closed_form.mean_acceptance_length(p, k),
    )


@router.get("/operations", summary="Extra arithmetic of speculation", response_model=Operations)
@takes(P, K, C_OPS)
async def get_operations(p: float, k: int, c_ops: float) -> Operations:
    """Increase in arithmetic operations (Leviathan Thm 3.11)."""
    return Operations(p=p, k=k, c_ops=c_ops, operations_increase=closed_form.operations_increase(p, k, c_ops))


@router.get("/curve", summary="Speedup for every k, with the band and every readout", response_model=Curve)
@takes(P, K, C, CHART_K_MAX, BAND, C_OPS)
async def get_curve(p: float, k: int, c: float, k_max: int, band: float, c_ops: float) -> Curve:
    """Speedup over k = 0..max(k_max, k) with the p +/- band envelope, and every readout.

    Best k is searched over 1..k_search_max, whatever k_max (the chart's x axis) is; operations_increase is
    taken at c_ops.
    """
    return build_curve(p, k, c, k_max, band, c_ops)


@router.get("/run", summary="One seeded run, cycle by cycle", response_model=Run, dependencies=HEAVY)
@in_worker_process
@with_rules(RHO_RULES)
@takes(P, K, C, TOKENS, SEED, IID_RHO)
def get_run(p: float, k: int, c: float, tokens: int, seed: int, rho: float) -> Run:
    """A seeded token-by-token run: per cycle the drafts, the first rejection and the target's token."""
    check_rho(p, rho)
    trace = monte_carlo.run_trace(p, k, c, tokens, seed, rho)
    cycles = [RunCycle(**vars(cycle)) for cycle in trace.cycles]
    return filled(Run, trace, p=p, k=k, c=c, seed=seed, rho=rho, cycles=cycles)


@router.get(
    "/simulate", summary="Many simulated cycles against the closed form", response_model=Simulation, dependencies=HEAVY
)
@in_worker_process
@with_rules(RHO_RULES)
@takes(P, K, C, CYCLES, SEED, IID_RHO)
def get_simulation(p: float, k: int, c: float, cycles: int, seed: int, rho: float) -> Simulation:
    """Monte Carlo aggregate of many cycles held against the closed form."""
    check_rho(p, rho)
    result = monte_carlo.simulate(p, k, c, cycles, seed, rho)
    interval = (result.interval_low, result.interval_high)
    return filled(Simulation, result, p=p, k=k, c=c, seed=seed, rho=rho, interval_95=interval)
