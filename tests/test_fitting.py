"""The published points priced by the cost model (app.model.cost.fitting), and the protocol that fits its terms:
each source predicted by terms fitted on the others, each term let in only where that error falls."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
import pytest

from app.model import limits
from app.model.arithmetic.acceptance import expected_tokens
from app.model.cost import fitting, published
from app.model.cost.presets import MODELS, draft_head
from app.model.cost.regimes import roofline_speedup

POINTS = published.load()
PROBLEM = fitting.problem(POINTS)


def test_a_head_is_priced_from_the_targets_shape() -> None:
    target = MODELS["dense-8b"]
    eagle3 = draft_head(target, "eagle3", "dense-8b")
    eagle = draft_head(target, "eagle", "dense-8b")
    layer = target.active_params_b / target.layers
    assert eagle3.layers == 1 and eagle3.kv_heads == target.kv_heads
    assert eagle3.active_params_b == pytest.approx(layer + (3 * 4096**2 + 32_000 * 4096) / 1e9)
    assert eagle.active_params_b == pytest.approx(layer + (2 * 4096**2 + 128_256 * 4096) / 1e9)
    # P-EAGLE: EAGLE-3's inputs and vocabulary over four layers (Amazon's model cards: "a 4-layer P-EAGLE")
    p_eagle = draft_head(target, "p-eagle", "dense-8b")
    assert p_eagle.layers == 4 and p_eagle.kv_heads == target.kv_heads
    assert p_eagle.active_params_b == pytest.approx(4 * layer + (3 * 4096**2 + 32_000 * 4096) / 1e9)


def test_an_mtp_head_on_deepseek_uses_its_hidden_width_not_its_latent() -> None:
    head = draft_head(MODELS["deepseek-v3"], "mtp", "deepseek-v3")
    assert head.active_params_b == pytest.approx(37.0 / 61 + (2 * 7168**2 + 129_280 * 7168) / 1e9)
    assert head.kv_tensors == 1 and head.head_dim == 576


@pytest.mark.parametrize("point", PROBLEM.points, ids=lambda point: point.id)
def test_the_published_pricing_is_the_products_roofline(point: published.PublishedPoint) -> None:
    """The vectorised pricing of the dataset agrees with the roofline every batch answer uses (regimes), where the
    roofline can express the point: a chain or a parallel draft, by a head or a model reading the whole cache."""
    if point.tree or point.draft_method in (*published.SPARSE_METHODS, "ngram"):
        return  # no counterpart among the product's roofline setups
    costs = fitting.SpecCosts(cycle_overhead_us=300.0, cycle_overhead_per_sequence_us=7.0, allreduce_us=5.0)
    p, k = 0.7, point.k or 1
    length = expected_tokens(p, k)
    ours = fitting.predicted_speedup(point, costs, length)
    batch = float(fitting.engine_batch(point, [point.batch or 1])[0])  # the product's setup is one engine
    product = float(roofline_speedup(p, k, fitting.setup_of(point, costs), batch))
    assert ours == pytest.approx(product, rel=1e-9)


def test_the_price_follows_the_acceptance_and_falls_with_the_batch() -> None:
    point = next(point for point in POINTS if point.sweep == "eagle3_paper_tab3_sglang_h100_eagle")
    costs = fitting.SpecCosts(
        overhead_per_sequence_us=0.0, cycle_overhead_us=500.0, cycle_overhead_per_sequence_us=20.0
    )
    one = fitting.predicted_speedup(point, costs, 1.0)
    assert fitting.predicted_speedup(point, costs, 2.5) == pytest.approx(2.5 * one)
    curve = [fitting.predicted_speedup(point, costs, 2.5, batch=batch) for batch in (16, 64, 512, 4096)]
    assert curve == sorted(curve, reverse=True)
    assert all(math.isfinite(value) and value > 0 for value in curve)
    unpriced = next(point for point in POINTS if not point.priced)
    with pytest.raises(ValueError, match="cannot price"):
        fitting.predicted_speedup(unpriced, costs, 2.0)


def test_a_parallel_draft_is_one_draft_step_k_wide() -> None:
    """P-EAGLE proposes its k tokens in one pass of its four-layer head: priced as one draft step over k tokens per
    sequence, cheaper than the k steps of a one-layer EAGLE-3 head (the chain EAGLE-3 drafts)."""
    point = next(point for point in POINTS if point.draft_method == "parallel-draft" and point.priced)
    costs = fitting.PLAIN_ROOFLINE
    parallel = fitting.predicted_speedup(point, costs, 2.0)
    chain = fitting.predicted_speedup(dataclasses.replace(point, draft_method="eagle3"), costs, 2.0)
    work = fitting.work(point)
    assert work.draft_steps[0] == 1.0 and parallel > chain
    assert fitting.setup_of(point, costs).draft.layers == 4 and fitting.setup_of(point, costs).parallel_draft
    assert fitting.work(dataclasses.replace(point, draft_method="eagle3")).draft_steps[0] == point.k


def test_fp8_weights_are_priced_at_the_fp8_rate_where_the_device_has_one() -> None:
    """An FP8 checkpoint multiplies its weights in FP8 (W8A8): on the RTX PRO 6000 (1,000 dense FP8 TFLOPS against
    500 at BF16) a verification's weight FLOPs take half the time they would at BF16; on an A100 (no FP8 rate) the
    same point's take the whole time."""
    point = next(point for point in POINTS if point.weights == "fp8" and point.accelerator == "rtx-pro-6000-blackwell")
    model = MODELS[point.target_preset or ""]
    batch, tokens, context = 128.0, (point.k or 0) + 1.0, point.context or 1024
    weights = 2.0 * model.active_params_b * 1e9 * batch * tokens
    attention = 4.0 * model.layers * model.query_heads * model.head_dim * context * batch * tokens
    assert fitting.work(point, [batch]).verify_flops[0] == pytest.approx(weights / 2.0 + attention, rel=1e-12)
    ampere = dataclasses.replace(point, accelerator="a100-80gb-sxm")
    assert fitting.work(ampere, [batch]).verify_flops[0] == pytest.approx(weights + attention, rel=1e-12)
    plain = dataclasses.replace(point, weights=None)  # the same checkpoint in BF16
    assert fitting.work(plain, [batch]).verify_flops[0] == pytest.approx(weights + attention, rel=1e-12)


def test_engines_behind_a_balancer_each_run_their_share_of_the_batch() -> None:
    """Two engines of 4 devices each serving 64 concurrent requests: each prices as one engine of 4 devices at 32
    (at one request, one engine runs it and the other idles), and the speedup is that engine's."""
    point = next(point for point in POINTS if point.replicas == 2 and point.priced)
    one = dataclasses.replace(point, replicas=None, devices=point.tensor_parallel)
    shared, alone = fitting.work(point, [1.0, 8.0, 64.0]), fitting.work(one, [1.0, 4.0, 32.0])
    assert list(shared.batch) == list(fitting.engine_batch(point, [1.0, 8.0, 64.0])) == [1.0, 4.0, 32.0]
    for name in ("bandwidth", "compute", "plain_bytes", "verify_flops", "draft_bytes", "target_allreduces"):
        assert list(getattr(shared, name)) == list(getattr(alone, name)), name
    costs = fitting.PLAIN_ROOFLINE
    assert fitting.predicted_speedup(point, costs, 2.0, 64) == fitting.predicted_speedup(one, costs, 2.0, 32)
    assert fitting.setup_of(point, costs).devices == point.tensor_parallel == 4


def test_a_context_of_zero_reads_no_cache_and_an_unstated_one_the_default() -> None:
    """A source's context of 0 (nothing before the output) is priced as 0 tokens of cache, not as the default it
    takes where the source states none."""
    point = next(point for point in POINTS if point.priced and point.context is None and point.draft_method == "mtp")
    model = MODELS[point.target_preset or ""]
    bytes_per_value = fitting.setup_of(point, fitting.PLAIN_ROOFLINE).kv_bytes_per_value
    cache = model.kv_values_per_token * bytes_per_value * 16.0  # per token of context at batch 16
    unstated = fitting.work(point, [16.0]).plain_bytes[0]
    empty = fitting.work(dataclasses.replace(point, context=0), [16.0]).plain_bytes[0]
    assert unstated - empty == pytest.approx(cache * limits.DEFAULT_CONTEXT, rel=1e-9)


def test_a_long_context_makes_speculation_pay_more_as_the_batch_grows() -> None:
    """The KV read of every sequence grows with context x batch and verification reads it once for k + 1 tokens:
    at 32k tokens of context a draft reading a sparse cache gains more at batch 64 than at batch 8."""
    point = next(
        point for point in POINTS if point.draft_method == "self-speculation-sparse-kv" and point.target_preset
    )
    long = dataclasses.replace(point, context=32_000, draft_kv_budget=512)
    costs = fitting.PLAIN_ROOFLINE
    assert fitting.predicted_speedup(long, costs, 2.0, batch=64) > fitting.predicted_speedup(long, costs, 2.0, 8)


@pytest.mark.parametrize(("first", "length"), [(0.05, 1.0), (9.0, 4.0)])
def test_the_length_a_calibrating_point_implies_is_held_to_one_to_k_plus_one(first: float, length: float) -> None:
    """A verification keeps at least its own token and at most k + 1 (k = 3 here): a first point far below or far
    above what those allow sets the bound, not a length no engine can have."""
    sweep = [point for point in POINTS if point.sweep == "eagle3_paper_tab3_sglang_h100_eagle"]
    assert sweep[0].k == 3 and all(point.acceptance_length is None for point in sweep)
    changed = [dataclasses.replace(sweep[0], speedup=first), *sweep[1:]]
    single = fitting.problem(changed)
    unit = single.work.unit_speedup(fitting.PLAIN_ROOFLINE)
    assert single.lengths(unit) == pytest.approx([length] * len(changed))
    assert single.predict(fitting.PLAIN_ROOFLINE) == pytest.approx(length * unit)


def test_a_tree_of_another_depth_than_its_calibrating_point_keeps_the_tokens_of_its_own_depth() -> None:
    """GPUStack's Qwen3-8B trees: the depth-2 tree sets the per-token p, and the trees of depth 4 and 8 keep what
    that p gives at their own depth (more than the depth-2 tree keeps); the depth-2 chain keeps the same as it."""
    sweep = [point for point in POINTS if point.sweep == "gpustack-qwen3-8b-fp8-h100-sglang-eagle3" and point.priced]
    single = fitting.problem(sweep)
    own = single.calibrator[0]
    assert single.points[own].tree and single.ks[own] == 2 and not single.scored[own]
    unit = single.work.unit_speedup(fitting.PLAIN_ROOFLINE)
    lengths = single.lengths(unit)
    p = fitting.acceptance_of_length(lengths[own], 2)
    for index, point in enumerate(single.points):
        assert lengths[index] == pytest.approx(fitting.acceptance_length(p, point.k or 0))
    depth = {point.k: lengths[index] for index, point in enumerate(single.points)}
    assert depth[2] < depth[4] < depth[8] <= 9.0


def test_a_sweep_without_an_acceptance_takes_it_from_its_smallest_batch_which_then_tests_nothing() -> None:
    scored = PROBLEM.scored
    for index, (point, own) in enumerate(zip(PROBLEM.points, PROBLEM.calibrator, strict=True)):
        if point.acceptance_length is None:
            assert PROBLEM.points[own].sweep == point.sweep
            assert bool(scored[index]) == (own != index)
        else:
            assert scored[index]
    unit = PROBLEM.work.unit_speedup(fitting.PLAIN_ROOFLINE)
    predicted = PROBLEM.lengths(unit) * unit
    setting = [index for index in range(len(PROBLEM.points)) if not scored[index]]
    implied = PROBLEM.measured[setting] / unit[setting]
    top = np.array([PROBLEM.ks[index] + 1.0 for index in setting])
    inside = (implied >= 1.0) & (implied <= top)
    assert inside.any()
    # it matches itself by construction where the length it implies is one a verification can keep; else the bound
    assert np.allclose(predicted[setting][inside], PROBLEM.measured[setting][inside])
    assert np.allclose(predicted[setting][~inside], (np.clip(implied, 1.0, top) * unit[setting])[~inside])


def test_a_prediction_does_not_see_its_own_source() -> None:
    """Doubling every scored measurement of one source leaves that source's predictions as they were (only the
    point that sets a sweep's acceptance is read, and it is not scored); the fit on every source moves."""
    chosen = published.published_fit()["protocol"]["chosen"]
    before = fitting.leave_one_source_out(PROBLEM, chosen)
    name = max(set(PROBLEM.sources), key=PROBLEM.sources.count)
    sources = np.array(PROBLEM.sources)
    moved = PROBLEM.measured.copy()
    changed = (sources == name) & PROBLEM.scored
    moved[changed] *= 2.0
    after = fitting.leave_one_source_out(dataclasses.replace(PROBLEM, measured=moved), chosen)
    assert np.allclose(before.predicted[changed], after.predicted[changed])
    assert not np.allclose(before.predicted[~changed & PROBLEM.scored], after.predicted[~changed & PROBLEM.scored])
    # nor do its baseline's step times: a source whose steps grow faster keeps its predictions, the others move
    timed = {PROBLEM.sources[index] for pair in PROBLEM.growth_pairs for index in pair}
    name = max(timed, key=PROBLEM.sources.count)
    own = sources == name
    steeper = PROBLEM.step_s * np.where(own, 1 + 0.05 * PROBLEM.work.batch, 1.0)
    after = fitting.leave_one_source_out(dataclasses.replace(PROBLEM, step_s=steeper), chosen)
    assert np.allclose(before.predicted[own & PROBLEM.scored], after.predicted[own & PROBLEM.scored])
    assert not np.allclose(before.predicted[~own & PROBLEM.scored], after.predicted[~own & PROBLEM.scored])


def test_the_committed_fit_is_what_the_protocol_gives() -> None:
    committed = published.published_fit()
    chosen = committed["protocol"]["chosen"]
    holdout = fitting.leave_one_source_out(PROBLEM, chosen)
    assert committed["protocol"]["loss"] == pytest.approx(fitting.loss(holdout), abs=1e-6)
    for name, value in fitting.effects(PROBLEM, chosen).items():  # each kept term lowers the error
        assert value > fitting.loss(holdout), name
        assert committed["protocol"]["without"][name] == pytest.approx(value, abs=1e-6)
    rows = {row["id"]: row for row in committed["points"]}
    for index, point in enumerate(PROBLEM.points):
        expected = None if math.isnan(holdout.predicted[index]) else round(float(holdout.predicted[index]), 4)
        assert rows[point.id]["predicted"] == expected, "run scripts/fit_published.py"
    terms = fitting.rounded(fitting.fit(PROBLEM, chosen, PROBLEM.scored))
    for name, value in terms.items():
        base, scope = fitting.split_term(name)
        assert (committed["scoped_terms"][name] if scope else committed["terms"][base]) == value
        if scope is None:
            low, high = fitting.BOUNDS[base]
            assert low <= value <= high, name
    out_of_source = fitting.out_of_source_terms(PROBLEM, holdout, terms)
    assert committed["step_times"] == fitting.step_time_check(PROBLEM, out_of_source)
    assert committed["interval"] == fitting.interval_check(PROBLEM, holdout)
    loso = committed["leave_one_source_out"]
    assert loso["points"] == int(PROBLEM.scored.sum())
    assert 0 < loso["median_error"] <= loso["worst_error"]


def step_check_with(**terms: float) -> dict[str, Any]:
    return fitting.step_time_check(PROBLEM, dataclasses.replace(fitting.SpecCosts(), **terms))


def test_the_baseline_figure_reads_as_one_plain_steps_time() -> None:
    """The check the fit never sees: a source's baseline rate (or time per output token) as one plain step."""
    point = next(point for point in PROBLEM.points if point.batch)

    def read(unit: str, value: float, batch: int, devices: int = 1) -> float | None:
        changed = dataclasses.replace(point, value_unit=unit, baseline_value=value, batch=batch, devices=devices)
        return fitting.measured_step_s(changed)

    assert read("TPOT ms", 20.0, 8) == pytest.approx(0.020)
    assert read("tok/s/user", 50.0, 8) == pytest.approx(0.020)
    assert read("output tok/s", 400.0, 8) == pytest.approx(0.020)
    assert read("tok/s/GPU", 100.0, 8, devices=4) == pytest.approx(0.020)
    assert read("ms E2E latency per request", 900.0, 8) is None  # a request's latency needs its output length
    # every unit the dataset may name reads through one of the kinds of figure
    assert set(fitting.STEP_TIME_UNITS.values()) == set(fitting.STEP_SECONDS)
    # each sweep's growth is measured from its smallest timed batch to its largest
    anchors = {anchor for _, anchor in PROBLEM.growth_pairs}
    assert all(PROBLEM.work.batch[anchor] < PROBLEM.work.batch[index] for index, anchor in PROBLEM.growth_pairs)
    assert len(anchors) == len({PROBLEM.points[anchor].sweep for anchor in anchors})
    check = fitting.step_time_check(PROBLEM, fitting.SpecCosts())
    assert check["points"] >= 40 and check["sources"] >= 8 and check["large_batch"]["points"] >= 8
    slower = step_check_with(overhead_us=fitting.SpecCosts().overhead_us + 1000.0)  # above the fitted one
    assert slower["median_error"] > check["median_error"]
    assert slower["large_batch"]["median_error"] > check["large_batch"]["median_error"]
    # a fixed time per step flattens each sweep's growth; a time per sequence steepens it
    assert check["growth"] and all(slower["growth"][name] < value for name, value in check["growth"].items())
    steeper = step_check_with(overhead_per_sequence_us=200.0)
    assert all(steeper["growth"][name] > value for name, value in check["growth"].items())


def test_each_sweeps_step_growth_is_fitted_beside_the_speedups() -> None:
    """The baseline's own step, where a sweep gives it at two batches or more, is fitted as its growth with the
    batch; a point left out of training leaves its growth out too (no source's step times predict it)."""
    assert len(PROBLEM.growth_pairs) >= 20
    # every sweep with a step time at two batches is fitted, those whose smallest batch sets the acceptance too
    growing = {PROBLEM.points[index].sweep for pair in PROBLEM.growth_pairs for index in pair}
    calibrated = {PROBLEM.points[index].sweep for index in PROBLEM.calibrator if not PROBLEM.scored[index]}
    assert growing & calibrated, "a sweep whose smallest batch sets its acceptance gives its growth too"
    term = ["overhead_per_sequence_us"]
    base = fitting.fit(PROBLEM, term, PROBLEM.scored)
    steeper = dataclasses.replace(PROBLEM, step_s=PROBLEM.step_s * (1 + 0.02 * PROBLEM.work.batch))
    assert fitting.fit(steeper, term, PROBLEM.scored)[term[0]] > base[term[0]] + 1.0
    timed = {PROBLEM.sources[index] for pair in PROBLEM.growth_pairs for index in pair}
    without = PROBLEM.scored & ~np.isin(np.array(PROBLEM.sources), sorted(timed))
    assert fitting.fit(steeper, term, without) == pytest.approx(fitting.fit(PROBLEM, term, without))
    # a calibrating point's step counts: steepen only the growth anchored on those points' sweeps and the fit moves
    calibrating_sweeps = growing & calibrated
    only = np.array([point.sweep in calibrating_sweeps for point in PROBLEM.points])
    partly = dataclasses.replace(PROBLEM, step_s=PROBLEM.step_s * np.where(only, 1 + 0.05 * PROBLEM.work.batch, 1.0))
    assert fitting.fit(partly, term, PROBLEM.scored)[term[0]] > base[term[0]] + 1.0


def test_the_protocols_error_scores_each_sweeps_growth_where_its_source_was_left_out() -> None:
    """What the fit trains on, the protocol scores out of source: the speedups and the plain step's growth, each
    growth by the terms fitted without its source, weighed as the fit weighs it."""
    chosen = published.published_fit()["protocol"]["chosen"]
    holdout = fitting.leave_one_source_out(PROBLEM, chosen)
    assert len(holdout.growth_error) == len(PROBLEM.growth_pairs) == len(holdout.growth_sources)
    timed = ~np.isnan(holdout.growth_error)
    assert timed.sum() >= 20
    pairs = np.array(PROBLEM.growth_pairs)
    for position in np.flatnonzero(timed)[:: max(1, int(timed.sum()) // 12)]:
        index, anchor = pairs[position]
        where = PROBLEM.sources[index]
        assert holdout.growth_sources[position] == where
        step = PROBLEM.work.pass_times(fitting.resolved(PROBLEM, holdout.terms[where]))[0]
        measured = PROBLEM.step_s[index] / PROBLEM.step_s[anchor]
        assert holdout.growth_error[position] == pytest.approx(math.log(step[index] / step[anchor] / measured))
    # steps that grow faster than the terms can follow raise the error
    steeper = dataclasses.replace(PROBLEM, step_s=PROBLEM.step_s * (1 + 0.05 * PROBLEM.work.batch))
    after = fitting.leave_one_source_out(steeper, chosen)
    assert fitting.loss(after) > fitting.loss(holdout)
    # the mean over both kinds, each source weighing as one within its kind
    made = fitting.Holdout(
        np.ones(3), np.log([1.1, 1.1, 2.0]), {}, ("a", "a", "b"), np.log([1.5, 1.5, 1.2]), ("a", "b", "b")
    )
    speedups = [math.log(1.1), math.log(1.1), math.log(2.0)] * np.array([0.75, 0.75, 1.5])
    growths = fitting.GROWTH_WEIGHT * np.array([math.log(1.5), math.log(1.5), math.log(1.2)]) * [1.5, 0.75, 0.75]
    assert fitting.loss(made) == pytest.approx(float(np.concatenate([speedups, growths]).mean()))


def test_the_fit_does_not_turn_on_the_last_bits_of_the_floating_point() -> None:
    """Another CPU's arithmetic differs in the last bits: measurements moved by a part in 1e12 give the same
    rounded terms on every source left out, so the stated error and the committed fit are what any machine
    recomputes."""
    chosen = published.published_fit()["protocol"]["chosen"]
    # every global candidate at once is where the terms are least determined (the backward search starts there)
    for terms in (chosen, [name for name in fitting.candidate_terms(PROBLEM) if "@" not in name]):
        before = fitting.leave_one_source_out(PROBLEM, terms)
        for seed in range(3):
            noise = np.random.default_rng(seed).standard_normal(len(PROBLEM.measured))
            moved = dataclasses.replace(PROBLEM, measured=PROBLEM.measured * (1 + 1e-12 * noise))
            after = fitting.leave_one_source_out(moved, terms)
            assert after.terms == before.terms, (terms, seed)
            assert fitting.loss(after) == pytest.approx(fitting.loss(before), abs=1e-9)


def test_the_defaults_are_the_terms_fitted_on_every_source() -> None:
    fit = published.published_fit()
    assert fitting.SpecCosts().terms() == fit["terms"]


def test_a_crossover_is_judged_against_every_batch_its_grid_leaves_open() -> None:
    """Measured at 64 (still paying) and 128 (not), a sweep stops paying somewhere from 65 to 128: 40 is within a
    factor of 2 of 80, 30 is not within 2x of any batch there, and an interval meets the range or misses it."""
    grid = [1, 8, 64, 128, 256]
    assert fitting.crossover_verdict(grid, 128, 40, (30, 70)) == (64, True, True)
    assert fitting.crossover_verdict(grid, 128, 30, (10, 60)) == (64, False, False)
    assert fitting.crossover_verdict(grid, 128, 257, (129, None)) == (64, False, False)
    assert fitting.crossover_verdict(grid, 128, 256, (100, None)) == (64, True, True)
    assert fitting.crossover_verdict(grid, 1, 1, (1, 3)) == (0, True, True)  # it never paid: from 1 on
    assert fitting.crossover_verdict(grid, None, 50, (30, 70)) == (None, None, None)
    assert fitting.crossover_verdict(grid, 128, None, (None, None)) == (64, False, False)
    rows = published.published_fit()["crossovers"]
    for row in rows:  # the committed rows carry the batch before, one of the sweep's own
        if row["measured"] is not None:
            assert row["measured_after"] in [0, *row["batches"]] and row["measured_after"] < row["measured"]


def test_the_backward_search_wins_only_where_each_extra_term_earns_the_forward_steps_gain(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Forward stops at {a} (b and c gain less than MIN_GAIN beside it); backward keeps {a, b, c}, lower by a
    hair: the two extra terms must each earn MIN_GAIN before that set is chosen."""
    errors = {"": 1.0, "a": 0.5, "b": 0.9, "c": 0.9, "ab": 0.4995, "ac": 0.4995, "bc": 0.9}

    def run(every: float) -> list[str]:
        table = {**errors, "abc": every}
        monkeypatch.setattr(fitting, "leave_one_source_out", lambda _problem, terms: "".join(sorted(terms)))
        monkeypatch.setattr(fitting, "loss", lambda holdout: table[holdout])
        return fitting.select_terms(PROBLEM, ["a", "b", "c"])[0]

    assert run(0.499) == ["a"]  # 0.001 lower with two more terms: not enough
    assert sorted(run(0.5 - 2 * fitting.MIN_GAIN - 1e-6)) == ["a", "b", "c"]  # each extra term earned it


def test_a_scoped_term_enters_only_where_it_lowers_the_mean_and_leaves_the_worst_point_no_worse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """After the global terms, a term for one method or context: x lowers the mean most but raises the worst
    point, so it is refused; y lowers the mean by MIN_GAIN and holds the worst, so it enters; z then gains too
    little beside y."""
    gain = fitting.MIN_GAIN
    means = {"a": 0.5, "ax": 0.3, "ay": 0.5 - gain, "az": 0.5 - gain / 2, "axy": 0.29, "ayz": 0.5 - 1.5 * gain}
    worsts = {"a": 1.0, "ax": 1.2, "ay": 0.9, "az": 1.0, "axy": 1.3, "ayz": 0.9}
    means |= {"": 1.0}
    name = {"a": "a", "x": "x@method=head", "y": "y@context=long", "z": "z@method=ngram"}
    letter = {full: short for short, full in name.items()}
    monkeypatch.setattr(
        fitting, "leave_one_source_out", lambda _problem, terms: "".join(sorted(letter[t] for t in terms))
    )
    monkeypatch.setattr(fitting, "loss", lambda holdout: means[holdout])
    monkeypatch.setattr(fitting, "worst", lambda holdout: worsts[holdout])
    tried: dict[str, tuple[float, float]] = {}
    chosen, steps = fitting.select_terms(PROBLEM, list(name.values()), tried)
    assert chosen == ["a", "y@context=long"]
    # what the last round tried beside a and y, each refused: x raises the worst, z gains too little
    assert tried == {"x@method=head": (means["axy"], 1.3), "z@method=ngram": (means["ayz"], 0.9)}
    assert [step.term for step in steps] == ["a", "y@context=long"]
    # without the worst point's guard x would have entered first
    worsts.update(ax=1.0, axy=1.0, axz=1.0, axyz=1.0)
    means.update(axz=0.3, axyz=0.29)
    assert fitting.select_terms(PROBLEM, list(name.values()))[0][:2] == ["a", "x@method=head"]


def test_the_protocol_offers_method_and_context_terms_and_the_product_holds_none_it_cannot_apply() -> None:
    """Terms for a method or a context regime are candidates (every request names both), terms for an engine are
    not (the batch answers name none).  The product prices a request by the global terms alone, so a committed
    scoped term would be one no answer applies: this fails until the product applies it to requests of its
    scope."""
    candidates = fitting.candidate_terms(PROBLEM)
    scoped = {fitting.split_term(name)[1] for name in candidates if "@" in name}
    assert {"method=head", "method=draft-model", "context=long"} <= scoped
    assert not any(scope.startswith("engine=") for scope in scoped if scope)
    committed = published.published_fit()
    assert committed["protocol"]["candidates"] == candidates
    assert committed["scoped_terms"] == {} and not any("@" in name for name in committed["protocol"]["chosen"])


def test_every_source_weighs_as_one_in_the_protocol_and_the_fit() -> None:
    weights = fitting.source_weights(["a", "a", "a", "b"])
    assert weights.mean() == pytest.approx(1.0) and weights[:3].sum() == pytest.approx(weights[3])
    assert fitting.source_weights([]).size == 0
    # the loss is the mean over sources of each source's mean error: three copies of a source's point do not
    # outvote another source
    holdout = fitting.Holdout(np.array([1.0, 1.0, 1.0, 1.0]), np.log([1.1, 1.1, 1.1, 2.0]), {}, ("a", "a", "a", "b"))
    assert fitting.loss(holdout) == pytest.approx((math.log(1.1) + math.log(2.0)) / 2)
    # and the fit: repeating the largest source's points leaves the terms within 2% of where they were (the weak
    # prior's pull stays while the points' total weight grows; weighted by point, a draft step's time moves 20%)
    chosen = published.published_fit()["protocol"]["chosen"]
    name = max(set(PROBLEM.sources), key=PROBLEM.sources.count)
    own = np.array([where == name for where in PROBLEM.sources])
    once = fitting.fit(PROBLEM, chosen, PROBLEM.scored)
    doubled = fitting.problem(POINTS + tuple(point for point in POINTS if point.priced and point.source == name))
    twice = fitting.fit(doubled, chosen, doubled.scored)
    assert own.any()
    for term, value in once.items():
        assert twice[term] == pytest.approx(value, rel=0.02, abs=1e-3), term
