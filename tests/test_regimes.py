import dataclasses
import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.model.arithmetic import closed_form
from app.model.cost import published
from app.model.cost.presets import ACCELERATORS, MODELS, Accelerator
from app.model.cost.regimes import (
    RegimeName,
    RooflineSetup,
    acceptance_grid,
    best_k_by_batch,
    compare_regimes,
    crossover_batch,
    default_setup,
    devices_to_fit,
    draft_costs,
    draft_step,
    expert_coverage,
    first_loss_batch,
    kv_cache_bytes,
    linear_verification,
    make_regime,
    memory_capacity_gb,
    memory_needed_gb,
    operations_ratio,
    plain_roofline,
    roofline_draft_cost,
    roofline_speedup,
    roofline_verification,
    schedule_from,
    speedup_grid,
    speedup_table,
    sweep_batches,
    target_step,
    verification_costs,
)

DENSE_TARGETS = ("dense-8b", "dense-70b", "dense-405b")
ACCEPTANCES = (0.0, 0.3, 0.6, 0.8, 0.95, 1.0 - 1e-9, 1.0)


def plain_setup_for(accelerator: str, target: str, **changes: float) -> RooflineSetup:
    """The plain roofline (fixed efficiencies, one overhead per pass, no cycle or all-reduce time): the setup of
    the roofline's own physics, which the fitted defaults' extra terms would blur (a cycle's time makes v > 1 at
    batch one), nor the all-reduces' payload over the link (k + 1 tokens would carry k + 1 times one's)."""
    unlinked = dataclasses.replace(ACCELERATORS[accelerator], link_gb_s=None)
    setup = plain_roofline(RooflineSetup(unlinked, MODELS[target], MODELS["dense-1b"]))
    setup = dataclasses.replace(setup, devices=devices_to_fit(setup) or 1)
    return dataclasses.replace(setup, **changes)


def as_crossover(value: int | None) -> float:
    return math.inf if value is None else float(value)


# ---------------------------------------------------------------- linear regime


def test_linear_verification_spans_free_to_compute_bound() -> None:
    assert linear_verification(0.0)(7) == closed_form.free_verification(7) == 1.0
    assert linear_verification(1.0)(7) == 8.0
    assert linear_verification(0.25)(4) == 2.0
    for beta in (-0.1, 1.1, math.nan):
        with pytest.raises(ValueError, match="beta must lie in"):
            linear_verification(beta)


def test_closed_form_takes_the_linear_regime() -> None:
    verify = linear_verification(0.5)
    assert closed_form.speedup(0.8, 4, 0.1, verify) == pytest.approx(3.3616 / (0.4 + 3.0))
    best, _ = closed_form.best_k(0.8, 0.1, 16, verify)
    assert best < closed_form.best_k(0.8, 0.1, 16)[0]
    free_break_even = closed_form.break_even_acceptance(4, 0.1)
    linear_break_even = closed_form.break_even_acceptance(4, 0.1, verify)
    assert free_break_even is not None and linear_break_even is not None
    assert linear_break_even > free_break_even


# ---------------------------------------------------------------- roofline at batch one


@pytest.mark.parametrize("accelerator", sorted(ACCELERATORS))
@pytest.mark.parametrize("target", DENSE_TARGETS)
def test_roofline_at_batch_one_reduces_to_closed_form(accelerator: str, target: str) -> None:
    setup = plain_setup_for(accelerator, target)
    c = float(roofline_draft_cost(setup, 1))
    assert 0 < c < 1
    verify = roofline_verification(setup, 1)
    for k in range(1, 9):
        assert verify(k) == 1.0  # memory-bound: k + 1 tokens cost one pass
        for p in ACCEPTANCES:
            assert float(roofline_speedup(p, k, setup, 1)) == pytest.approx(closed_form.speedup(p, k, c), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    p=st.floats(0.0, 1.0),
    k=st.integers(1, 16),
    bandwidth=st.floats(0.5, 10.0),
    overhead=st.floats(0.0, 500.0),
    context=st.integers(0, 8192),
)
def test_memory_bound_roofline_is_the_free_closed_form(
    p: float, k: int, bandwidth: float, overhead: float, context: int
) -> None:
    accelerator = dataclasses.replace(ACCELERATORS["h100-sxm"], bandwidth_tb_s=bandwidth, bf16_tflops=1e9)
    setup = dataclasses.replace(
        plain_roofline(default_setup()), accelerator=accelerator, step_overhead_us=overhead, context_tokens=context
    )
    c = float(roofline_draft_cost(setup, 1))
    assert float(verification_costs(setup, 1, k)) == 1.0
    assert float(roofline_speedup(p, k, setup, 1)) == pytest.approx(closed_form.speedup(p, k, c), rel=1e-12)


def test_moe_verification_is_not_free_at_batch_one() -> None:
    for target in ("mixtral-8x7b", "deepseek-v3"):
        setup = plain_setup_for("h100-sxm", target)
        costs = verification_costs(setup, 1, np.arange(0, 9))
        assert costs[0] == 1.0
        assert np.all(np.diff(costs) > 0)
        assert costs[4] > 2.0  # five tokens touch far more experts than one


# ---------------------------------------------------------------- compute-bound limit


@pytest.mark.parametrize("context", [0, 4096])
def test_fp8_weights_multiply_at_the_fp8_rate_and_attention_at_bf16(context: int) -> None:
    """An FP8 checkpoint runs W8A8: its weights' multiplies at the device's FP8 rate, attention at BF16's; a device
    without an FP8 rate (Ampere) multiplies them at BF16's."""
    setup = plain_setup_for("h100-sxm", "dense-70b", context_tokens=context, target_bytes_per_param=1.0)
    model, tokens = setup.target, 4096.0
    weights = 2.0 * model.active_params_b * 1e9 * tokens
    attention = 4.0 * model.layers * model.query_heads * model.head_dim * context * tokens
    rate = setup.accelerator.bf16_tflops * 1e12 * setup.devices * setup.compute_efficiency
    fp8 = dataclasses.replace(setup, target_fp8=True)
    assert float(target_step(setup, 1, tokens).compute_s) == pytest.approx((weights + attention) / rate, rel=1e-12)
    speed = 1978.9 / 989.4  # the H100 SXM data sheet's dense FP8 and BF16 rates
    assert float(target_step(fp8, 1, tokens).compute_s) == pytest.approx(
        (weights / speed + attention) / rate, rel=1e-12
    )
    assert float(target_step(fp8, 1, tokens).flops) == pytest.approx(weights + attention, rel=1e-12)  # the count
    ampere = dataclasses.replace(fp8, accelerator=ACCELERATORS["a100-80gb-sxm"])
    assert ampere.accelerator.fp8_tflops is None
    at_bf16 = dataclasses.replace(ampere, target_fp8=False)
    assert float(target_step(ampere, 1, tokens).compute_s) == float(target_step(at_bf16, 1, tokens).compute_s)


def test_fp8_weights_move_the_crossover_to_a_larger_batch() -> None:
    """Where verification turns compute-bound, a faster multiply keeps speculation paying to a larger batch."""
    bf16 = plain_setup_for("h100-sxm", "dense-8b", target_bytes_per_param=1.0, draft_bytes_per_param=1.0)
    fp8 = dataclasses.replace(bf16, target_fp8=True, draft_fp8=True)
    batches = np.arange(1, 4097)
    before, after = (crossover_batch(batches, roofline_speedup(0.7, 4, setup, batches)) for setup in (bf16, fp8))
    assert before is not None and (after is None or after > before)
    assert float(roofline_speedup(0.7, 4, fp8, before)) > 1.0


@pytest.mark.parametrize("target", DENSE_TARGETS)
@pytest.mark.parametrize("context", [0, 4096])
def test_compute_bound_limit_is_one_over_operations_increase(target: str, context: int) -> None:
    accelerator = dataclasses.replace(ACCELERATORS["h100-sxm"], bandwidth_tb_s=1e12, link_gb_s=None)
    setup = dataclasses.replace(
        plain_setup_for("h100-sxm", target), accelerator=accelerator, step_overhead_us=0.0, context_tokens=context
    )
    c_ops = operations_ratio(setup)
    for k in (1, 3, 8):
        assert float(verification_costs(setup, 4, k)) == pytest.approx(k + 1, rel=1e-9)
        for p in (0.0, 0.5, 0.8, 0.99):
            value = float(roofline_speedup(p, k, setup, 4))
            assert value == pytest.approx(1 / closed_form.operations_increase(p, k, c_ops), rel=1e-9)
            assert value < 1.0


@pytest.mark.parametrize("target", DENSE_TARGETS)
def test_speedup_tends_to_compute_bound_limit_as_batch_grows(target: str) -> None:
    setup = dataclasses.replace(plain_setup_for("b200", target), context_tokens=0)
    c_ops = operations_ratio(setup)
    p, k = 0.8, 4
    limit = 1 / closed_form.operations_increase(p, k, c_ops)
    speedups = roofline_speedup(p, k, setup, np.array([1e6, 1e8, 1e10]))
    assert np.all(speedups < 1.0)
    assert abs(speedups[-1] - limit) < abs(speedups[0] - limit)
    assert speedups[-1] == pytest.approx(limit, rel=1e-4)


def test_compute_bound_regime_never_pays() -> None:
    table = speedup_table(
        np.linspace(0, 0.999, 30), np.arange(1, 17), make_regime(RegimeName.COMPUTE_BOUND, draft_cost=0.0)
    )
    assert np.all(table < 1.0)


# ---------------------------------------------------------------- crossover


def test_crossover_definitions() -> None:
    batches = np.arange(1, 9)
    assert crossover_batch(batches, np.array([2, 1.5, 1.1, 1.0, 0.9, 0.8, 0.7, 0.6])) == 4
    assert crossover_batch(batches, np.full(8, 1.2)) is None
    assert crossover_batch(batches, np.full(8, 0.9)) == 1
    dip_and_recover = np.array([1.1, 0.9, 0.95, 1.2, 1.5, 1.1, 0.99, 0.9])
    assert first_loss_batch(batches, dip_and_recover) == 2
    assert crossover_batch(batches, dip_and_recover) == 7


@pytest.mark.parametrize("accelerator", ["a100-80gb-sxm", "h100-sxm", "mi300x"])
@pytest.mark.parametrize("target", DENSE_TARGETS)
@pytest.mark.parametrize("context", [0, 1024])
def test_crossover_falls_with_k_and_rises_with_p(accelerator: str, target: str, context: int) -> None:
    setup = plain_setup_for(accelerator, target, context_tokens=context)
    ps = (0.6, 0.7, 0.8, 0.9)
    grid = np.array(
        [[as_crossover(sweep_batches(p, k, setup, 1024, 8).crossover_batch) for k in range(1, 9)] for p in ps]
    )
    assert np.all(grid[:, 1:] <= grid[:, :-1])  # falls as k rises
    assert np.all(grid[1:, :] >= grid[:-1, :])  # rises with p
    assert np.isfinite(grid).any()  # something crosses within 1..1024
    assert (grid[:, 1:] < grid[:, :-1]).any()
    assert (grid[1:, :] > grid[:-1, :]).any()


def test_known_crossover_h100_8b_without_context_on_the_plain_roofline() -> None:
    setup = dataclasses.replace(plain_roofline(default_setup()), context_tokens=0)
    sweep = sweep_batches(0.8, 4, setup, 1024, 8)
    assert sweep.crossover_batch is not None and 100 < sweep.crossover_batch < 200
    assert sweep.speedup[sweep.crossover_batch - 2] > 1.0 >= sweep.speedup[sweep.crossover_batch - 1]
    assert sweep.speedup[0] > 1.5


def test_the_defaults_crossover_h100_8b_without_context_priced_by_hand() -> None:
    """The shipped defaults are the terms fitted to published measurements: price their step times by hand from
    the presets and the fit file (at context 0 a pass reads the weights once and does 2 FLOPs per parameter per
    token) and find where speculation stops paying."""
    terms = json.loads(published.FIT.read_text())["terms"]
    hw, target, draft = ACCELERATORS["h100-sxm"], MODELS["dense-8b"], MODELS["dense-1b"]
    bandwidth = hw.bandwidth_tb_s * 1e12 * terms["bandwidth_efficiency"]
    flops = hw.bf16_tflops * 1e12 * terms["compute_efficiency"]

    def step(params_b: float, tokens: int, overhead_us: float) -> float:
        return max(params_b * 1e9 * 2 / bandwidth, 2 * params_b * 1e9 * tokens / flops) + overhead_us * 1e-6

    p, k = 0.8, 4
    tokens = sum(p**i for i in range(k + 1))

    def by_hand(batch: int) -> float:
        per_sequence = terms["overhead_per_sequence_us"] * batch  # every pass, the draft's steps included
        target_overhead = terms["overhead_us"] + per_sequence
        plain = step(target.total_params_b, batch, target_overhead)
        cycle = (
            k * step(draft.total_params_b, batch, terms["overhead_per_draft_step_us"] + per_sequence)
            + step(target.total_params_b, batch * (k + 1), target_overhead)
            + (terms["cycle_overhead_us"] + terms["cycle_overhead_per_sequence_us"] * batch) * 1e-6
        )
        return tokens * plain / cycle

    curve = [by_hand(batch) for batch in range(1, 1025)]
    crossover = next(batch for batch in range(1, 1025) if max(curve[batch - 1 :]) <= 1.0)
    sweep = sweep_batches(p, k, dataclasses.replace(default_setup(), context_tokens=0), 1024, 8)
    assert sweep.crossover_batch == crossover
    for batch in (1, 8, 32):
        assert float(sweep.speedup[batch - 1]) == pytest.approx(curve[batch - 1], rel=1e-9)
    plain = sweep_batches(p, k, dataclasses.replace(plain_roofline(default_setup()), context_tokens=0), 1024, 8)
    assert plain.crossover_batch is not None and crossover < plain.crossover_batch


# ---------------------------------------------------------------- mixture of experts


@pytest.mark.parametrize(("experts", "per_token"), [(8, 2), (256, 8), (64, 6), (16, 1)])
def test_expert_coverage_matches_formula(experts: int, per_token: int) -> None:
    tokens = np.array([0, 1, 2, 5, 40, 1000])
    expected = 1 - (1 - per_token / experts) ** tokens
    assert np.allclose(expert_coverage(experts, per_token, tokens), expected, rtol=1e-12, atol=0)
    assert expert_coverage(experts, per_token, 1) == pytest.approx(per_token / experts)
    assert expert_coverage(experts, experts, 3) == 1.0


MAX_SIMULATED_ROUTINGS = 20_000_000  # tokens x experts x trials drawn by one simulation


def simulate_expert_coverage(
    experts: int, experts_per_token: int, tokens: int, trials: int, rng: np.random.Generator
) -> np.ndarray:
    """Fraction of experts touched in each of ``trials`` seeded routings of ``tokens`` tokens.

    Each token picks ``experts_per_token`` distinct experts uniformly at random.
    """
    if trials * tokens * experts > MAX_SIMULATED_ROUTINGS:
        raise ValueError(f"trials * tokens * experts must be at most {MAX_SIMULATED_ROUTINGS:,}")
    keys = rng.random((trials, tokens, experts))
    chosen = np.argpartition(keys, experts_per_token - 1, axis=-1)[..., :experts_per_token]
    touched = np.zeros((trials, experts), dtype=bool)
    touched[np.arange(trials)[:, None, None], chosen] = True
    fractions: np.ndarray = touched.mean(axis=1)
    return fractions


@pytest.mark.parametrize(
    ("experts", "per_token", "tokens"), [(8, 2, 1), (8, 2, 5), (256, 8, 6), (256, 8, 64), (64, 6, 20)]
)
def test_expert_coverage_matches_seeded_routing_simulation(experts: int, per_token: int, tokens: int) -> None:
    trials = min(4000, MAX_SIMULATED_ROUTINGS // (tokens * experts))
    fractions = simulate_expert_coverage(experts, per_token, tokens, trials, np.random.default_rng(1234))
    standard_error = fractions.std(ddof=1) / math.sqrt(fractions.size) if fractions.std() > 0 else 1e-12
    expected = float(expert_coverage(experts, per_token, tokens))
    assert abs(fractions.mean() - expected) < 4 * standard_error + 1e-12
    again = simulate_expert_coverage(experts, per_token, tokens, trials, np.random.default_rng(1234))
    assert np.array_equal(fractions, again)


def test_routing_simulation_is_bounded() -> None:
    with pytest.raises(ValueError, match="at most"):
        simulate_expert_coverage(256, 8, 10_000, trials=10_000, rng=np.random.default_rng(0))


@settings(max_examples=80, deadline=None)
@given(experts=st.integers(1, 512), data=st.data())
def test_expert_coverage_is_a_fraction_growing_with_tokens(experts: int, data: st.DataObject) -> None:
    per_token = data.draw(st.integers(1, experts))
    coverage = expert_coverage(experts, per_token, np.arange(0, 200))
    assert coverage[0] == 0.0 or per_token == experts
    assert np.all((coverage >= 0) & (coverage <= 1))
    assert np.all(np.diff(coverage) >= 0)


def test_moe_step_reads_active_weights_for_one_token() -> None:
    setup = dataclasses.replace(plain_setup_for("h200", "mixtral-8x7b"), context_tokens=0)
    step = target_step(setup, 1, 1)
    assert float(step.bytes_read) == pytest.approx(12.9e9 * 2)
    saturated = target_step(setup, 1024, 1)
    assert float(saturated.bytes_read) == pytest.approx(46.7e9 * 2, rel=1e-6)


# ---------------------------------------------------------------- schedule


def test_speedup_grid_and_best_k_agree_with_closed_form() -> None:
    setup = default_setup()
    batches = np.array([1, 3, 17, 64, 200, 512, 1024])
    grid = speedup_grid(0.75, setup, batches, 10)
    best, best_speedup = best_k_by_batch(0.75, setup, batches, 10)
    for row, batch in enumerate(batches):
        c = float(roofline_draft_cost(setup, batch))
        verify = roofline_verification(setup, int(batch))
        assert grid[row, 0] == 1.0
        for k in range(1, 11):
            assert grid[row, k] == pytest.approx(closed_form.speedup(0.75, k, c, verify), rel=1e-12)
        expected_k, expected_speedup = closed_form.best_k(0.75, c, 10, verify)
        assert best[row] == expected_k
        assert best_speedup[row] == pytest.approx(expected_speedup, rel=1e-12)


def test_schedule_covers_every_batch_and_switches_off() -> None:
    # the plain roofline: without a cycle's own time to spread, a longer draft never pays more at a larger batch
    setup = dataclasses.replace(plain_roofline(default_setup()), context_tokens=0)
    batches = np.arange(1, 1025)
    schedule = schedule_from(batches, *best_k_by_batch(0.8, setup, batches, 8))
    assert schedule[0].batch_from == 1 and schedule[-1].batch_to == 1024
    for before, after in itertools.pairwise(schedule):
        assert after.batch_from == before.batch_to + 1
        assert after.k != before.k
    assert schedule[0].k > 0 and schedule[0].speedup_at_from > 1
    assert schedule[-1].k == 0 and schedule[-1].speedup_at_to == 1.0
    ks = [step.k for step in schedule]
    assert ks == sorted(ks, reverse=True)  # dense model: shorter drafts as the batch grows
    sweep = sweep_batches(0.8, 4, setup, 1024, 8)
    assert sweep.best_crossover_batch == schedule[-1].batch_from


# ---------------------------------------------------------------- table


def test_memory_bound_vs_compute_bound_table_shows_win_turning_into_loss() -> None:
    ps = acceptance_grid(0.5, 0.95, 0.05)
    ks = np.arange(1, 9)
    comparison = compare_regimes(
        ps,
        ks,
        make_regime(RegimeName.MEMORY_BOUND, draft_cost=0.05),
        make_regime(RegimeName.COMPUTE_BOUND, draft_cost=0.05),
    )
    assert comparison.speedup_a.shape == comparison.speedup_b.shape == (10, 8)
    highlight = comparison.highlight
    assert highlight is not None
    assert highlight.speedup_a > 2.0 and highlight.speedup_b < 1.0
    assert comparison.win_to_loss_cells > 40
    # the seed's example: a 2.35x win becoming a 0.75x loss at the same p and k
    seed = compare_regimes(
        [0.873], [3], make_regime("memory-bound", draft_cost=0.135), make_regime("compute-bound", draft_cost=0.135)
    )
    assert seed.speedup_a[0, 0] == pytest.approx(2.35, abs=0.01)
    assert seed.speedup_b[0, 0] == pytest.approx(0.75, abs=0.01)


def test_table_cells_are_closed_form_speedups() -> None:
    regimes = [
        make_regime(RegimeName.MEMORY_BOUND, draft_cost=0.15),
        make_regime(RegimeName.COMPUTE_BOUND, draft_cost=0.15),
        make_regime(RegimeName.LINEAR, draft_cost=0.15, beta=0.3),
        make_regime(RegimeName.ROOFLINE, draft_cost=0.15, setup=default_setup(), batch=256),
    ]
    ps, ks = [0.0, 0.5, 0.9, 1.0], [1, 2, 5, 12]
    for regime in regimes:
        table = speedup_table(ps, ks, regime)
        for row, p in enumerate(ps):
            for column, k in enumerate(ks):
                assert table[row, column] == pytest.approx(
                    closed_form.speedup(p, k, regime.draft_cost, regime.verify), rel=1e-12
                )
    roofline = regimes[3]
    assert roofline.batch == 256
    assert roofline.draft_cost == pytest.approx(float(roofline_draft_cost(default_setup(), 256)))
    assert "batch 256" in roofline.label and regimes[2].label == "linear (v = 1 + 0.3 k)"


def test_roofline_batch_one_vs_large_batch_table_crosses() -> None:
    setup = dataclasses.replace(default_setup(), context_tokens=0)
    comparison = compare_regimes(
        acceptance_grid(0.5, 0.95, 0.05),
        np.arange(1, 9),
        make_regime(RegimeName.ROOFLINE, draft_cost=0.0, setup=setup, batch=1),
        make_regime(RegimeName.ROOFLINE, draft_cost=0.0, setup=setup, batch=1024),
    )
    assert comparison.highlight is not None and comparison.highlight.speedup_a > 2.0


def test_acceptance_grid() -> None:
    assert acceptance_grid(0.5, 0.95, 0.05).tolist() == [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
    assert acceptance_grid(0.3, 0.3, 0.1).tolist() == [0.3]
    with pytest.raises(ValueError):
        acceptance_grid(0.9, 0.5, 0.1)


# ---------------------------------------------------------------- memory


def test_memory_needed_and_devices() -> None:
    setup = default_setup()
    weights = (8.03 + 1.24) * 2
    per_sequence = 1024 * (MODELS["dense-8b"].kv_values_per_token + MODELS["dense-1b"].kv_values_per_token) * 2 / 1e9
    assert float(memory_needed_gb(setup, 10)) == pytest.approx(weights + 10 * per_sequence)
    assert float(kv_cache_bytes(setup.target, setup, 2)) == pytest.approx(2 * 1024 * 131072)
    assert memory_capacity_gb(setup) == 80.0
    assert devices_to_fit(setup) == 1
    assert devices_to_fit(dataclasses.replace(setup, target=MODELS["dense-70b"])) == 2
    assert devices_to_fit(dataclasses.replace(setup, target=MODELS["dense-405b"])) == 16
    assert devices_to_fit(dataclasses.replace(setup, target=MODELS["dense-405b"]), max_devices=8) is None


def test_setup_validation() -> None:
    with pytest.raises(ValueError, match="bandwidth_efficiency must lie in"):
        dataclasses.replace(default_setup(), bandwidth_efficiency=0.0)
    with pytest.raises(ValueError, match="devices must be at least 1"):
        dataclasses.replace(default_setup(), devices=0)
    with pytest.raises(ValueError, match="context_tokens"):
        dataclasses.replace(default_setup(), context_tokens=-1)


# ---------------------------------------------------------------- what the passes leave out


def test_the_cycle_draft_and_all_reduce_terms_enter_each_cost_once() -> None:
    from app.model.cost.regimes import draft_step, roofline_draft_cost, target_step

    base = plain_setup_for("h100-sxm", "dense-70b")
    two = dataclasses.replace(base, devices=2)
    terms = dataclasses.replace(
        two,
        cycle_overhead_us=400.0,
        cycle_overhead_per_sequence_us=30.0,
        allreduce_us=8.0,
        overhead_per_draft_step_us=120.0,
    )
    batch, k = 16, 4
    layers_target, layers_draft = base.target.layers, base.draft.layers
    plain = float(target_step(two, batch, 1).total_s) + 2 * layers_target * 8e-6
    assert float(target_step(terms, batch, 1).total_s) == pytest.approx(plain)
    draft = float(draft_step(two, batch).total_s) - two.step_overhead_us * 1e-6 + 120e-6 + 2 * layers_draft * 8e-6
    assert float(draft_step(terms, batch).total_s) == pytest.approx(draft)
    verify = float(target_step(terms, batch, k + 1).total_s) + (400 + 30 * batch) * 1e-6
    assert float(verification_costs(terms, batch, k)) == pytest.approx(verify / plain)
    assert float(verification_costs(terms, batch, 0)) == pytest.approx(1.0)  # no cycle without a draft
    assert float(roofline_draft_cost(terms, batch)) == pytest.approx(draft / plain)
    one_device = dataclasses.replace(terms, devices=1)
    alone = dataclasses.replace(base, devices=1)
    assert float(target_step(one_device, batch, 1).total_s) == pytest.approx(
        float(target_step(alone, batch, 1).total_s)
    )
    assert float(roofline_speedup(0.8, k, terms, batch)) < float(roofline_speedup(0.8, k, two, batch))


def test_the_all_reduces_carry_each_tokens_hidden_state_over_the_link() -> None:
    from app.model.cost.regimes import target_step

    base = plain_setup_for("h100-sxm", "dense-70b")
    unlinked = dataclasses.replace(base.accelerator, link_gb_s=None)

    def carried(devices: int, batch: int, tokens: int, link: float | None = 900.0) -> float:
        setup = dataclasses.replace(base, devices=devices)
        alone = dataclasses.replace(setup, accelerator=unlinked)
        if link is not None:
            setup = dataclasses.replace(setup, accelerator=dataclasses.replace(unlinked, link_gb_s=link))
        return float(target_step(setup, batch, tokens).total_s - target_step(alone, batch, tokens).total_s)

    # Llama 3.1 70B: 80 layers, hidden 8192 (config.json); two all-reduces per layer of 8192 bf16 values per token;
    # a ring over 2 devices sends 2 (2 - 1) / 2 = 1 of it each way, at half the datasheet's 900 GB/s both ways.
    per_token = 2 * 80 * 8192 * 2 / 450e9
    assert carried(1, 64, 5) == 0.0
    assert carried(2, 64, 5) == pytest.approx(320 * per_token)
    assert carried(2, 64, 5, link=450.0) == pytest.approx(2 * 320 * per_token)
    assert carried(8, 64, 5) == pytest.approx(320 * per_token * 2 * 7 / 8)
    assert carried(2, 64, 1) == pytest.approx(carried(2, 64, 5) / 5)
    assert carried(2, 64, 5, link=None) == 0.0


def test_a_mesh_of_links_sends_over_one_link_per_peer() -> None:
    """AMD Instinct's seven Infinity Fabric links join each of 8 devices to every other: a ring over 8 sends as
    fast as over a switch of the same total, but 4 devices reach their 3 peers over 3 of the 7 links."""
    from app.model.cost.regimes import payload_s

    mesh = ACCELERATORS["mi300x"]
    assert mesh.links == 7 and mesh.link_gb_s == 896.0  # AMD's data sheet: 7 links, 896 GB/s together
    switch = dataclasses.replace(mesh, links=None)
    model = MODELS["dense-70b"]

    def sent(accelerator: Accelerator, devices: int) -> float:
        setup = dataclasses.replace(plain_setup_for("mi300x", "dense-70b"), accelerator=accelerator, devices=devices)
        return float(payload_s(setup, model, 64.0))

    assert sent(mesh, 8) == pytest.approx(sent(switch, 8))
    assert sent(mesh, 4) == pytest.approx(sent(switch, 4) * 7 / 3)
    assert sent(mesh, 2) == pytest.approx(sent(switch, 2) * 7)
    # one link of 128 GB/s both ways (64 each way) carries all of it between a pair: 2 x 80 layers x 8192 x 2 B
    assert sent(mesh, 2) == pytest.approx(64 * 2 * 80 * 8192 * 2 / 64e9)


def test_the_draft_step_is_priced_with_the_pass_overhead_unless_given() -> None:
    from app.model.cost.regimes import draft_step

    base = dataclasses.replace(
        plain_setup_for("h100-sxm", "dense-8b"), step_overhead_us=0.0, overhead_per_draft_step_us=None
    )
    assert base.draft_step_overhead_us == 0.0
    assert float(draft_step(base, 1).overhead_s) == 0.0
    given = dataclasses.replace(base, overhead_per_draft_step_us=75.0)
    assert float(draft_step(given, 1).overhead_s) == pytest.approx(75e-6)
    with pytest.raises(ValueError, match="cycle_overhead_us"):
        dataclasses.replace(base, cycle_overhead_us=-1.0)


# --- a parallel draft: all k tokens in one pass ---------------------------------------------------------------


def _parallel_pair(draft: str = "dense-1b") -> tuple[RooflineSetup, RooflineSetup]:
    chain = RooflineSetup(ACCELERATORS["h100-sxm"], MODELS["dense-8b"], MODELS[draft])
    return chain, dataclasses.replace(chain, parallel_draft=True)


def test_a_parallel_draft_pays_one_pass_over_k_positions_where_a_chain_pays_k_passes() -> None:
    chain, parallel = _parallel_pair()
    batches = np.array([1, 8, 64, 512], dtype=np.float64)
    plain = target_step(chain, batches, 1).total_s
    for k in (1, 2, 4, 8):
        # by hand: a chain's k passes of one token, a parallel draft's one pass of k tokens, each over a plain step
        assert draft_costs(chain, batches, k) == pytest.approx(k * draft_step(chain, batches, 1).total_s / plain)
        assert draft_costs(parallel, batches, k) == pytest.approx(draft_step(chain, batches, k).total_s / plain)
    # one token: the same pass either way; more: one pass of k tokens costs less than k passes of one
    assert draft_costs(parallel, batches, 1) == pytest.approx(draft_costs(chain, batches, 1))
    assert np.all(draft_costs(parallel, batches, 4) < draft_costs(chain, batches, 4))
    assert float(draft_costs(parallel, 8, 0)) == 0.0
    assert float(roofline_speedup(0.8, 0, parallel, 8)) == 1.0


def test_a_parallel_draft_runs_longer_drafts_and_crosses_later() -> None:
    chain, parallel = _parallel_pair()
    batches = np.arange(1, 513)
    chain_k, chain_best = best_k_by_batch(0.8, chain, batches, 16)
    parallel_k, parallel_best = best_k_by_batch(0.8, parallel, batches, 16)
    assert np.all(parallel_k >= chain_k) and parallel_k[0] > chain_k[0]
    assert np.all(parallel_best >= chain_best - 1e-12)
    crossing = [sweep_batches(0.8, 4, setup, 512, 16).crossover_batch for setup in (chain, parallel)]
    assert as_crossover(crossing[1]) > as_crossover(crossing[0])


@pytest.mark.parametrize("k", [1, 3, 7])
def test_every_path_prices_a_parallel_draft_alike(k: int) -> None:
    """The sweep, the grid, the speedup and the named roofline regime (whose v counts the draft's one pass) give one
    answer for a parallel draft."""
    _, parallel = _parallel_pair("dense-3b")
    batches = np.array([1, 16, 128])
    sweep = sweep_batches(0.7, k, parallel, 128, 8)
    direct = roofline_speedup(0.7, k, parallel, batches)
    assert sweep.speedup[batches - 1] == pytest.approx(direct, rel=1e-12)
    assert speedup_grid(0.7, parallel, batches, 8)[:, k] == pytest.approx(direct, rel=1e-12)
    for batch, expected in zip(batches, direct, strict=True):
        regime = make_regime(RegimeName.ROOFLINE, draft_cost=0.5, setup=parallel, batch=int(batch))
        assert "parallel draft" in regime.label
        assert closed_form.speedup(0.7, k, regime.draft_cost, regime.verify) == pytest.approx(expected, rel=1e-12)
