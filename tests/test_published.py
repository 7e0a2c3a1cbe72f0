"""The published measurements: each entry cited and well formed, the classes, the stated interval, and the error
on each source predicted by terms fitted on the others."""

from __future__ import annotations

import dataclasses
import json
import math
from urllib.parse import urlsplit

import numpy as np
import pytest

from app.model.cost import fitting, published

POINTS = published.load()
PROBLEM = fitting.problem(POINTS)


def test_the_data_set_holds_cited_points_with_unique_ids_and_the_same_fields() -> None:
    assert len(POINTS) >= 100
    assert len({point.id for point in POINTS}) == len(POINTS)
    raw = json.loads(published.DATA.read_text())["points"]
    assert {frozenset(item) for item in raw} == {frozenset(raw[0])}, "every point has the same fields"
    assert set(raw[0]) == {field.name for field in dataclasses.fields(published.PublishedPoint)}


@pytest.mark.parametrize("point", POINTS, ids=lambda point: point.id)
def test_each_entry_is_whole_and_consistent(point: published.PublishedPoint) -> None:
    found = published.problems(point)
    assert not found, "; ".join(f"{point.id}: field {name}: {why}" for name, why in found)
    address = urlsplit(published.source(point))
    assert address.scheme == "https" and address.hostname, point.url
    if address.hostname == "github.com" and "/blob/" in address.path:
        commit = address.path.split("/blob/", 1)[1].split("/", 1)[0]
        assert len(commit) == 40 and int(commit, 16) >= 0, "a repository file is cited at its commit"
    assert (published.exclusion(point) is None) == point.priced


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"k": 0}, "k"),
        ({"draft_method": "medusa"}, "draft_method"),
        ({"accelerator": "tpu-v9"}, "accelerator"),
        ({"acceptance_length": 9.0, "k": 3, "tree": False}, "acceptance_length"),
        ({"draft_preset": "dense-1b", "draft_method": "eagle3"}, "draft_preset"),
        ({"tensor_parallel": 8, "devices": 4}, "tensor_parallel"),
        ({"batch_kind": "batch", "qps": 2.0}, "qps"),
        ({"weights": " "}, "weights"),
        ({"accelerator": None, "hardware": "MI355X"}, "accelerator"),
        ({"accelerator": None, "hardware": "A100 40GB"}, "accelerator"),
        ({"prompt_len": 170, "output_len": None}, "prompt_len"),
        ({"prompt_len": 0, "output_len": 146}, "prompt_len"),
        ({"kv_cache_tokens": 14_864, "batch_kind": "batch"}, "kv_cache_tokens"),
        ({"baseline_kv_cache_tokens": 0, "batch_kind": "concurrency"}, "baseline_kv_cache_tokens"),
        ({"context": -1}, "context"),
        ({"replicas": 1, "devices": 4, "tensor_parallel": 4}, "replicas"),
        ({"replicas": 2, "devices": 4, "tensor_parallel": 4}, "replicas"),
        ({"replicas": 2, "devices": 8, "tensor_parallel": None}, "replicas"),
    ],
)
def test_a_missing_or_contradictory_field_is_named(change: dict[str, object], field: str) -> None:
    broken = dataclasses.replace(POINTS[0], **change)  # type: ignore[arg-type]
    assert field in {name for name, _why in published.problems(broken)}


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"weights": "Q4_K_M GGUF"}, "no byte count for its weight format (Q4_K_M GGUF)"),
        ({"tree": True, "topk": None}, "the source does not give its tree's top-k"),
        (
            {"draft_method": "block-diffusion"},
            "a block drafter drafts in one pass, as a parallel draft is priced, but the source does not give its "
            "drafter's shape",
        ),
        ({"draft_method": "mtp-relaxed"}, "its draft method (mtp-relaxed) has no cost model here"),
        ({"draft_weights": "Q4_K_M GGUF"}, "no byte count for its weight format (Q4_K_M GGUF)"),
    ],
)
def test_what_the_model_cannot_price_is_said_not_guessed(change: dict[str, object], reason: str) -> None:
    priced = next(point for point in POINTS if point.priced)
    changed = dataclasses.replace(priced, **change)  # type: ignore[arg-type]
    assert not published.problems(changed) and published.exclusion(changed) == reason


def test_a_point_that_cannot_be_priced_says_why_in_words() -> None:
    excluded = [point for point in POINTS if not point.priced]
    for point in excluded:
        reason = published.exclusion(point)
        assert reason and reason[0].islower() and "None" not in reason, (point.id, reason)
    relaxed = next(point for point in POINTS if not point.lossless)
    assert "relaxed acceptance" in (published.exclusion(relaxed) or "")


def test_a_class_without_a_published_point_says_so_and_quotes_no_other_class() -> None:
    nobody = published.PointClass("draft-model", "llama.cpp", "an accelerator of your own", "long")
    accuracy = published.accuracy_for(nobody)
    assert accuracy.class_points == 0 and accuracy.class_median_error is None
    assert "no published measurement of this class" in accuracy.sentence
    assert accuracy.spread_from == "every published point"
    measured = published.point_class(PROBLEM.points[int(np.flatnonzero(PROBLEM.scored)[0])])
    mine = published.accuracy_for(measured)
    assert mine.class_points >= 1 and "of this class" in mine.sentence


def test_the_crossover_range_is_where_the_interval_holds_one() -> None:
    batches = np.array([1.0, 2, 4, 8, 16, 32])
    speedup = np.array([1.6, 1.4, 1.2, 1.0, 0.85, 0.7])
    assert published.crossover_range(batches, speedup, math.log(1.2)) == (4, 16)
    assert published.crossover_range(batches, speedup, 0.0) == (8, 8)
    assert published.crossover_range(batches, speedup * 3, 0.1) == (None, None)
    assert published.crossover_range(batches, speedup / 1.2, math.log(2.0)) == (1, None)


def test_past_the_range_a_rising_speedup_pays_and_a_falling_one_does_not() -> None:
    """Past the last batch whose interval holds 1, the interval is wholly above 1 or wholly below: above where the
    speedup rises again with the batch (a mixture of experts, a long context), below where it keeps falling."""
    batches = np.array([1.0, 2, 4, 8, 16, 32])
    falling = np.array([1.6, 1.4, 1.2, 1.0, 0.85, 0.7])
    rising = np.array([1.3, 1.1, 1.0, 1.1, 1.5, 1.9])
    assert published.crossover_range(batches, falling, math.log(1.2)) == (4, 16)
    assert published.span(published.stretches(batches, falling, math.log(1.2)))[2] is False
    assert published.crossover_range(batches, rising, math.log(1.2)) == (2, 8)
    assert published.span(published.stretches(batches, rising, math.log(1.2)))[2] is True
    # a run to the last batch has nothing past it, and no run says nothing
    assert published.span(published.stretches(batches, rising / 1.9, math.log(2.0)))[1:] == (None, None)
    assert published.span(published.stretches(batches, rising * 3, 0.1)) == (None, None, None)


def test_each_run_where_the_interval_holds_one_is_its_own_stretch() -> None:
    """A speedup that dips at small batches, pays surely between, and falls at large ones holds 1 in two runs;
    crossover_range spans both, the stretches keep them apart with what lies either side."""
    batches = np.array([1.0, 2, 4, 8, 16, 32, 64])
    dipping = np.array([1.1, 1.6, 1.7, 1.6, 1.3, 1.0, 0.9])
    spread = math.log(1.2)
    assert published.crossover_range(batches, dipping, spread) == (1, None)
    assert published.stretches(batches, dipping, spread) == [
        published.Stretch(1, 1, None, True),
        published.Stretch(32, None, True, None),
    ]
    rising = np.array([0.5, 0.7, 1.0, 1.1, 1.5, 1.9, 2.0])
    assert published.stretches(batches, rising, spread) == [published.Stretch(4, 8, False, True)]
    assert published.stretches(batches, rising * 3, spread) == []


def test_the_interval_holds_ninety_percent_of_out_of_source_errors_by_their_order() -> None:
    """Split-conformal: of n errors, the ceil(0.9 (n + 1))-th smallest; too few for 90% gives none."""
    assert published.covering([0.1 * step for step in range(1, 10)]) == pytest.approx(0.9)  # rank 9 of 9
    assert published.covering([0.1 * step for step in range(1, 9)]) is None  # 8 cannot hold 90% of a ninth
    assert published.covering([-0.5, *[0.01 * step for step in range(1, 19)]]) == pytest.approx(0.18)  # rank 18
    assert published.covering([-0.5, *[0.01 * step for step in range(1, 20)]]) == pytest.approx(0.19)  # rank 19 of 20


def test_a_class_with_too_few_points_takes_every_points_interval_but_never_narrower_than_its_own_worst() -> None:
    every = [0.01 * step for step in range(1, 40)]
    assert published.interval_spread([0.05] * 12, every) == (pytest.approx(0.05), "this class")
    assert published.interval_spread([0.02, 0.03], every) == (pytest.approx(0.36), "every published point")
    assert published.interval_spread([0.02, 0.9], every) == (pytest.approx(0.9), "this class")
    assert published.interval_spread([], every)[1] == "every published point"


def test_the_stated_interval_holds_at_least_ninety_percent_of_the_published_points() -> None:
    rows = published._classes_in_fit()
    errors = [error for _kind, error in rows]
    shipped = published.shipped_accuracy()
    assert shipped.spread < max(errors)  # one source's worst miss no longer sets everyone's interval
    # the same bound as the fit file's, up to the file's rounding of each prediction to 4 decimals: half a unit in
    # the 4th decimal of the smallest prediction, as a ratio, scaled by the interval's factor
    fitted = published.published_fit()
    smallest = min(row["predicted"] for row in fitted["points"] if row["predicted"] is not None)
    rounding = 0.5e-4 / smallest * (1 + fitted["interval"]["spread"])
    assert math.expm1(shipped.spread) == pytest.approx(fitted["interval"]["spread"], abs=max(rounding, 1e-6) + 1e-6)
    assert sum(error <= shipped.spread + 1e-12 for error in errors) >= published.COVERAGE * len(errors)
    # out of source, counted here with whole numbers: each point against its answer class's interval made from
    # the other sources alone (9 of a class's points or more: the ceil(9 (n + 1) / 10)-th smallest error)
    holdout = fitting.leave_one_source_out(PROBLEM, published.published_fit()["protocol"]["chosen"])
    scored = [index for index in range(len(PROBLEM.points)) if PROBLEM.scored[index]]
    held = 0
    for index in scored:
        others = [j for j in scored if PROBLEM.sources[j] != PROBLEM.sources[index]]
        asked = published.point_class(PROBLEM.points[index])
        asked = published.PointClass(asked.method, None, asked.accelerator, asked.context)
        mine = sorted(
            abs(holdout.log_error[j]) for j in others if asked.holds(published.point_class(PROBLEM.points[j]))
        )
        every = sorted(abs(holdout.log_error[j]) for j in others)
        if len(mine) >= 9:
            bound = mine[-(-9 * (len(mine) + 1) // 10) - 1]
        else:
            bound = max([every[-(-9 * (len(every) + 1) // 10) - 1], *mine])
        held += abs(holdout.log_error[index]) <= bound
    assert published.published_fit()["interval"]["held_out_of_source"] == held
    assert held >= 0.85 * len(scored)  # what this dataset gives: 109 of 120


def test_an_error_that_is_not_a_number_neither_sets_nor_narrows_the_interval() -> None:
    nine = [0.1 * step for step in range(1, 10)]
    assert published.covering([math.nan, *nine]) == pytest.approx(0.9)
    assert published.interval_spread([math.nan, 0.2], [0.1] * 5) == (pytest.approx(0.2), "this class")
