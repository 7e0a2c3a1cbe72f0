"""Trees under positional acceptance: chain as a special case, optimality, bounds, speedup."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.model.arithmetic import closed_form, trees
from app.model.cost.regimes import linear_verification


@st.composite
def positional_vectors(draw: st.DrawFn, max_width: int = 6) -> tuple[float, ...]:
    """P_1 >= P_2 >= ... >= 0 with sum <= 1."""
    raw = draw(st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=1, max_size=max_width))
    values = sorted(raw, reverse=True)
    total = sum(values)
    scale = draw(st.floats(min_value=0.05, max_value=1.0))
    if total > 1.0:
        values = [value / total for value in values]
    values = [value * scale for value in values]
    return tuple(min(value, 1.0) for value in values)


BUDGETS = st.integers(min_value=0, max_value=40)


# ---------------------------------------------------------------------------
# The chain is the special case


@settings(deadline=None)
@given(st.floats(min_value=0.0, max_value=1.0), st.integers(min_value=0, max_value=trees.MAX_TREE_BUDGET))
def test_single_candidate_tree_is_the_closed_form_chain(p: float, budget: int) -> None:
    expected = closed_form.expected_tokens(p, budget)
    assert trees.chain_values([p], budget)[budget] == expected
    assert trees.optimal_tree_values([p], budget)[budget] == pytest.approx(expected, rel=1e-12)
    assert trees.best_first_tree([p], budget).value == pytest.approx(expected, rel=1e-12)


@settings(max_examples=50, deadline=None)
@given(positional_vectors(), BUDGETS)
def test_width_one_families_are_the_chain(acceptance: tuple[float, ...], budget: int) -> None:
    chain = trees.chain_values(acceptance, budget)
    level, level_depths = trees.level_filled_values(acceptance, 1, budget)
    sequences, sequence_depths = trees.independent_sequences_values(acceptance, 1, budget)
    np.testing.assert_allclose(level, chain, rtol=1e-12)
    np.testing.assert_allclose(sequences, chain, rtol=1e-12)
    assert list(level_depths) == list(range(budget + 1)) == list(sequence_depths)


@settings(deadline=None)
@given(
    st.floats(min_value=0.0, max_value=1.0),
    st.integers(min_value=1, max_value=40),
    st.floats(min_value=0.0, max_value=2.0),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_chain_speedup_is_the_closed_form(p: float, k: int, c: float, beta: float) -> None:
    verify = linear_verification(beta)
    comparison = trees.compare_trees([p], k, c, verify, widths=())
    chain = comparison.families[0]
    assert chain.name == "chain"
    assert chain.speedups[k] == pytest.approx(closed_form.speedup(p, k, c, verify), rel=1e-12)


# ---------------------------------------------------------------------------
# Optimality


@settings(max_examples=60, deadline=None)
@given(positional_vectors(), BUDGETS)
def test_optimal_tree_is_never_worse(acceptance: tuple[float, ...], budget: int) -> None:
    optimal = trees.optimal_tree_values(acceptance, budget)
    tolerance = 1e-12 * optimal
    assert np.all(optimal >= trees.chain_values(acceptance, budget) - tolerance)
    for width in range(1, 6):
        level, _ = trees.level_filled_values(acceptance, width, budget)
        sequences, _ = trees.independent_sequences_values(acceptance, width, budget)
        assert np.all(optimal >= level - tolerance)
        assert np.all(optimal >= sequences - tolerance)
    assert np.all(np.diff(optimal) >= -1e-12)


@settings(max_examples=60, deadline=None)
@given(positional_vectors(), BUDGETS)
def test_dynamic_programme_matches_the_best_first_tree(acceptance: tuple[float, ...], budget: int) -> None:
    optimal = trees.optimal_tree_values(acceptance, budget)
    shape = trees.best_first_tree(acceptance, budget)
    assert shape.value == pytest.approx(optimal[budget], rel=1e-12)
    table = trees.depth_limited_values(acceptance, budget)
    np.testing.assert_allclose(table[budget], optimal, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(positional_vectors(max_width=4), st.integers(min_value=0, max_value=24), st.integers(min_value=0, max_value=6))
def test_depth_limited_programme_matches_the_table(acceptance: tuple[float, ...], budget: int, depth: int) -> None:
    by_dp = trees.optimal_tree_values(acceptance, budget, max_depth=depth)
    table = trees.depth_limited_values(acceptance, budget)
    np.testing.assert_allclose(by_dp, table[min(depth, budget)], rtol=1e-12)
    assert trees.best_first_tree(acceptance, budget, max_depth=depth).value == pytest.approx(by_dp[budget], rel=1e-12)


@settings(max_examples=40, deadline=None)
@given(positional_vectors(), st.integers(min_value=1, max_value=60))
def test_best_first_tree_is_a_tree(acceptance: tuple[float, ...], budget: int) -> None:
    shape = trees.best_first_tree(acceptance, budget)
    children: dict[int, list[int]] = {}
    for index, (parent, rank, depth, reach) in enumerate(
        zip(shape.parents, shape.ranks, shape.depths, shape.reach, strict=True)
    ):
        assert parent < index
        parent_reach = 1.0 if parent == -1 else shape.reach[parent]
        parent_depth = 0 if parent == -1 else shape.depths[parent]
        assert depth == parent_depth + 1
        assert reach == pytest.approx(parent_reach * acceptance[rank - 1], rel=1e-12)
        children.setdefault(parent, []).append(rank)
    for ranks in children.values():
        assert sorted(ranks) == list(range(1, len(ranks) + 1))
    assert shape.value == pytest.approx(1.0 + math.fsum(shape.reach))


def test_sequoia_style_example() -> None:
    acceptance = (0.6, 0.2, 0.1, 0.05)
    optimal = trees.optimal_tree_values(acceptance, 64)
    chain = trees.chain_values(acceptance, 64)
    binary, _ = trees.level_filled_values(acceptance, 2, 64)
    assert optimal[64] > binary[64] > chain[64]
    assert chain[64] == pytest.approx(2.5, abs=1e-9)  # 1 / (1 - 0.6), reached


# ---------------------------------------------------------------------------
# Bounds


@settings(max_examples=60, deadline=None)
@given(positional_vectors(), st.integers(min_value=0, max_value=trees.MAX_TREE_BUDGET))
def test_bounds_hold(acceptance: tuple[float, ...], budget: int) -> None:
    chain_bound = trees.chain_bound(acceptance)
    binary_bound = trees.binary_tree_bound(acceptance)
    chain = trees.chain_values(acceptance, budget)
    binary, _ = trees.level_filled_values(acceptance, 2, budget)
    sequences, _ = trees.independent_sequences_values(acceptance, 3, budget)
    optimal = trees.optimal_tree_values(acceptance, budget)
    if chain_bound is not None:
        assert np.all(chain <= chain_bound * (1 + 1e-12))
    if binary_bound is not None:
        assert np.all(binary <= binary_bound * (1 + 1e-12))
    sequences_bound = trees.independent_sequences_bound(acceptance, 3)
    if sequences_bound is not None:
        assert np.all(sequences <= sequences_bound * (1 + 1e-12))
    full = trees.width_bound(acceptance, len(acceptance))
    if full is not None:
        assert np.all(optimal <= full * (1 + 1e-12))


@pytest.mark.parametrize("p1", [0.3, 0.6, 0.8, 0.9])
def test_chain_bound_is_approached(p1: float) -> None:
    values = trees.chain_values((p1,), trees.MAX_TREE_BUDGET)
    bound = 1.0 / (1.0 - p1)
    gaps = bound - values
    assert np.all(np.diff(gaps) <= 0)
    positive = gaps > 1e-12 * bound
    assert np.all(np.diff(gaps)[positive[1:]] < 0)  # strictly closer with every token until it is reached
    assert gaps[-1] < 1e-9 * bound


@pytest.mark.parametrize(("p1", "p2"), [(0.3, 0.2), (0.45, 0.15), (0.5, 0.3), (0.7, 0.25)])
def test_binary_tree_bound_is_approached(p1: float, p2: float) -> None:
    acceptance = (p1, p2)
    values, depths = trees.level_filled_values(acceptance, 2, trees.MAX_TREE_BUDGET)
    bound = trees.binary_tree_bound(acceptance)
    assert bound == pytest.approx(1.0 / (1.0 - p1 - p2))
    gaps = bound - values
    assert np.all(np.diff(gaps) < 0)
    # Complete levels 1..L leave exactly the levels below: gap <= (p1 + p2)^(L+1) / (1 - p1 - p2).
    for budget in (2, 6, 14, 30, 62, 126, 254):
        complete_levels = int(depths[budget])
        assert gaps[budget] == pytest.approx((p1 + p2) ** (complete_levels + 1) * bound, rel=1e-9)
    assert gaps[-1] <= (p1 + p2) ** 8 * bound


def test_bounds_of_a_full_acceptance_vector_are_unbounded() -> None:
    assert trees.width_bound((0.5, 0.5), 2) is None
    assert trees.binary_tree_bound((0.5, 0.5)) is None
    assert trees.chain_bound((0.5, 0.5)) == pytest.approx(2.0)
    assert trees.chain_bound((1.0,)) is None


# ---------------------------------------------------------------------------
# Speedup with the tree in the cost


@settings(max_examples=40, deadline=None)
@given(
    positional_vectors(),
    st.integers(min_value=1, max_value=64),
    st.floats(min_value=0.0, max_value=0.5),
    st.floats(min_value=0.0, max_value=0.2),
)
def test_hardware_aware_optimum_beats_every_family(
    acceptance: tuple[float, ...], budget: int, c: float, beta: float
) -> None:
    comparison = trees.compare_trees(acceptance, budget, c, linear_verification(beta), widths=(2, 3))
    optimal = comparison.families[-1]
    assert optimal.kind == "best_speedup" and optimal.name == trees.BEST_SPEEDUP_TREE
    for family in comparison.families[:-1]:
        for n in range(budget + 1):
            assert optimal.speedups[n] >= family.speedups[n] * (1 - 1e-12), (family.name, n)
    assert comparison.best_speedup == pytest.approx(optimal.best_speedup)
    assert comparison.optimal_shape.value == pytest.approx(optimal.values[optimal.best_budget], rel=1e-12)
    assert comparison.optimal_shape.depth <= optimal.depths[optimal.best_budget]


def test_tree_size_in_the_cost_turns_the_curve_over() -> None:
    acceptance = (0.7, 0.15, 0.05)
    free = trees.compare_trees(acceptance, 128, 0.0)
    linear = trees.compare_trees(acceptance, 128, 0.0, linear_verification(0.05))
    assert free.families[-1].best_budget == 128  # free verification: bigger is never worse
    assert linear.families[-1].best_budget < 40  # each verified token costs: a finite best size
    assert linear.best_speedup < free.best_speedup


def test_tree_cost() -> None:
    assert trees.tree_cost(0, 0, 0.3) == 1.0
    assert trees.tree_cost(10, 3, 0.1, linear_verification(0.5)) == pytest.approx(0.3 + 1 + 5)


# ---------------------------------------------------------------------------
# Validation


@pytest.mark.parametrize(
    ("acceptance", "fragment"),
    [
        ((), "from 1 to"),
        ((0.1,) * (trees.MAX_WIDTH + 1), "from 1 to"),
        ((0.2, 0.3), "must not increase"),
        ((0.7, 0.6), "sum to at most 1"),
        ((-0.1,), "from 0 to 1"),
        ((float("nan"),), "from 0 to 1"),
        ((1.5,), "from 0 to 1"),
    ],
)
def test_bad_positional_acceptance(acceptance: tuple[float, ...], fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        trees.positional_acceptance(acceptance)


def test_budget_is_capped() -> None:
    with pytest.raises(ValueError, match="budget"):
        trees.optimal_tree_values((0.5,), trees.MAX_TREE_BUDGET + 1)
    with pytest.raises(ValueError, match="max_depth"):
        trees.optimal_tree_values((0.5,), 100, max_depth=trees.MAX_SEARCH_DEPTH + 1)
    with pytest.raises(ValueError, match="width"):
        trees.level_filled_values((0.5,), 0, 10)


def test_largest_allowed_problem_agrees_across_methods() -> None:
    acceptance = tuple(0.5 / 2**i for i in range(trees.MAX_WIDTH))
    acceptance = tuple(value / sum(acceptance) * 0.9 for value in acceptance)
    optimal = trees.optimal_tree_values(acceptance, trees.MAX_TREE_BUDGET)
    table = trees.depth_limited_values(acceptance, trees.MAX_TREE_BUDGET)
    np.testing.assert_allclose(table[-1], optimal, rtol=1e-12)
