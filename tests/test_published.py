"""The published measurements: each point cited and well formed, and the cost model's pricing of them."""

from __future__ import annotations

import json
import math
from urllib.parse import urlsplit

import pytest

from app.model import published
from app.model.presets import ACCELERATORS, MODELS, draft_head

POINTS = published.load()
METHODS = {
    "eagle", "eagle2", "eagle3", "mtp", "mtp-relaxed", "ngram", "draft-model", "draft-model-sparse-kv",
    "self-speculation-sparse-kv",
}  # fmt: skip


def test_the_data_set_holds_at_least_twenty_cited_points_with_unique_ids() -> None:
    assert len(POINTS) >= 20
    assert len({point.id for point in POINTS}) == len(POINTS)
    raw = json.loads(published.DATA.read_text())["points"]
    assert {frozenset(item) for item in raw} == {frozenset(raw[0])}, "every point has the same fields"


@pytest.mark.parametrize("point", POINTS, ids=lambda point: point.id)
def test_each_point_names_its_source_and_its_setup(point: published.PublishedPoint) -> None:
    address = urlsplit(point.url)
    assert address.scheme == "https" and address.hostname, point.url
    if address.hostname == "github.com" and "/blob/" in address.path:
        commit = address.path.split("/blob/", 1)[1].split("/", 1)[0]
        assert len(commit) == 40 and int(commit, 16) >= 0, "a repository file is cited at its commit"
    assert point.citation and point.location
    assert point.engine and point.draft_method in METHODS
    assert point.target or point.notes, "a point whose source names no target says so"
    assert point.batch_kind in {"batch", "concurrency", "qps"}
    assert point.batch is None or point.batch >= 1
    assert point.k is None or 1 <= point.k <= 64
    assert point.accelerator is None or point.accelerator in ACCELERATORS
    assert point.target_preset is None or point.target_preset in MODELS
    assert point.draft_preset is None or point.draft_preset in MODELS
    assert point.weights in (None, *published.WEIGHT_BYTES)
    if point.speedup is None:
        assert point.notes, "a point without a figure says why"
    else:
        assert 0.1 < point.speedup < 10
    if point.baseline_value and point.spec_value and point.value_unit == "tokens/s" and point.speedup:
        assert point.speedup == pytest.approx(point.spec_value / point.baseline_value, rel=0.01)
    if point.acceptance_length is not None:
        assert point.acceptance_length >= 1
        if point.k is not None and not point.tree:
            assert point.acceptance_length <= point.k + 1


def test_batch_sweeps_with_a_crossover_are_in_it() -> None:
    crossing = [
        name
        for name, group in published.sweeps(POINTS).items()
        if len({point.batch for point in group}) >= 3
        and any((point.speedup or 0) > 1 for point in group)
        and any(point.speedup is not None and point.speedup <= 1 for point in group)
    ]
    assert len(crossing) >= 2, crossing


def test_a_head_is_priced_from_the_targets_shape() -> None:
    target = MODELS["dense-8b"]
    eagle3 = draft_head(target, "eagle3", "dense-8b")
    eagle = draft_head(target, "eagle", "dense-8b")
    layer = target.active_params_b / target.layers
    assert eagle3.layers == 1 and eagle3.kv_heads == target.kv_heads
    assert eagle3.active_params_b == pytest.approx(layer + (3 * 4096**2 + 32_000 * 4096) / 1e9)
    assert eagle.active_params_b == pytest.approx(layer + (2 * 4096**2 + 128_256 * 4096) / 1e9)


def test_the_price_follows_the_acceptance_and_falls_with_the_batch() -> None:
    point = next(point for point in POINTS if point.sweep == "eagle3_paper_tab3_sglang_h100_eagle")
    costs = published.SpecCosts(cycle_overhead_us=500.0, cycle_overhead_per_sequence_us=20.0)
    one = published.predicted_speedup(point, costs, 1.0)
    assert published.predicted_speedup(point, costs, 2.5) == pytest.approx(2.5 * one)
    curve = [published.predicted_speedup(point, costs, 2.5, batch=batch) for batch in (1, 8, 64, 512)]
    assert curve == sorted(curve, reverse=True)
    assert all(math.isfinite(value) and value > 0 for value in curve)
    unpriced = next(point for point in POINTS if not point.priced)
    with pytest.raises(ValueError, match="cannot price"):
        published.predicted_speedup(unpriced, costs, 2.0)


def test_the_split_holds_out_points_of_every_source_and_no_source_as_the_majority() -> None:
    train = published.split(POINTS)
    groups = published.sweeps([point for point in POINTS if point.priced])
    held: dict[str, list[str]] = {}
    offered: dict[str, int] = {}
    for group in groups.values():
        predicted = group[1:] if group[0].acceptance_length is None else group
        if group[0].acceptance_length is None:
            assert group[0].id not in train  # the calibrating point is neither fitted nor held out
        fitting = [point for point in predicted if point.id in train]
        assert len(fitting) >= math.ceil(len(predicted) / 2)  # at least half of each sweep fits
        name = published.source(group[0])
        held.setdefault(name, []).extend(point.id for point in predicted if point.id not in train)
        offered[name] = offered.get(name, 0) + len(predicted) // 2
    total = sum(map(len, held.values()))
    assert total >= 8
    for name, ids in held.items():
        assert len(ids) <= total - len(ids), f"{name} holds out more points than every other source together"
        assert (len(ids) > 0) == (offered[name] > 0), name  # every source with a point to spare is held out
    sweeps_of = {point.id: point.sweep for point in POINTS}
    paper = max(held.values(), key=len)
    assert len({sweeps_of[item] for item in paper}) > 1  # a capped source's points are spread over its sweeps


def test_an_mtp_head_on_deepseek_uses_its_hidden_width_not_its_latent() -> None:
    target = MODELS["deepseek-v3"]
    head = draft_head(target, "mtp", "deepseek-v3")
    assert head.active_params_b == pytest.approx(37.0 / 61 + (2 * 7168**2 + 129_280 * 7168) / 1e9)
    assert head.kv_tensors == 1 and head.head_dim == 576


def test_the_committed_fit_is_what_fitting_half_of_the_points_gives() -> None:
    committed = published.published_fit()
    assert committed == json.loads(json.dumps(published.fit_published())), "run scripts/fit_published.py"
    train = set(committed["fitted_on"])
    assert train == published.split(POINTS)
    held = committed["held_out"]
    assert held["points"] >= 8 and 0 < held["median_error"] <= held["worst_error"]
    for name, value in committed["terms"].items():
        low, high = published.BOUNDS[name]
        assert low <= value <= high, name


def test_the_fitted_terms_move_the_crossover_towards_the_published_one() -> None:
    import dataclasses

    group = published.sweeps([point for point in POINTS if point.priced])["eagle3_paper_tab3_sglang_h100_eagle"]
    plain = published.PLAIN_ROOFLINE
    fitted = dataclasses.replace(plain, **published.published_fit()["terms"])
    assert fitted == published.SpecCosts(), "the shipped defaults are the fitted terms"
    crossings = {}
    for name, costs in (("plain", plain), ("fitted", fitted)):
        length, _where, _used = published.acceptance_for(group, costs)
        crossings[name] = published.crossover(group, costs, length)
    measured = crossings["plain"][0]
    assert measured == 24
    assert crossings["plain"][1] > 8 * measured  # the plain roofline: an order of magnitude late
    fitted_crossover = crossings["fitted"][1]
    assert fitted_crossover is not None and measured / 2 <= fitted_crossover <= 2 * measured


def test_the_defaults_accuracy_is_the_fits_held_out_error() -> None:
    """Every answer from the defaults quotes their error on the published points their fit never saw."""
    accuracy = published.shipped_accuracy()
    held = published.published_fit()["held_out"]
    assert accuracy.points == held["points"]
    assert accuracy.median_error == pytest.approx(held["median_error"], abs=1e-6)
    assert accuracy.worst_error == pytest.approx(held["worst_error"], abs=1e-6)
    assert accuracy.sentence == (
        f"defaults: fitted to published measurements, median error {held['median_error']:.0%} / worst "
        f"{held['worst_error']:.0%} on {held['points']} held-out published points"
    )
    assert accuracy.crossover_measured == 24
    predicted = accuracy.crossover_predicted
    assert predicted is not None and 12 <= predicted <= 48  # the EAGLE / SGLang / H100 sweep, within a factor of 2
    assert set(accuracy.measured_hardware) == {point.accelerator for point in POINTS if point.priced}
