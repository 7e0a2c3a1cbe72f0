"""Token trees: chains, fixed-width trees and the optimal tree under positional acceptance.

Model (Sequoia, Chen et al. 2024, arXiv:2402.12374, "positional acceptance
assumption"): at any node of the draft tree whose token was accepted, the
candidate ranked i-th among its children is the one the target accepts with
probability P_i, whatever the rest of the tree.  P_1 >= P_2 >= ... and
sum P_i <= 1 (at most one child is accepted).  A node's chance of being reached
is the product of P over the ranks on its path, and the expected number of
tokens a verification yields is the sum of those products over the tree plus
one for the root (the token the target always adds: correction or bonus).

A chain of k drafts is the tree with a single child per node: its value
1 + P_1 + ... + P_1^k is the closed form's E[T] with p = P_1, and it is
bounded by 1 / (1 - P_1).  A tree where every node has w children (level by
level) is bounded by 1 / (1 - (P_1 + ... + P_w)); for w = 2 that is the
binary-tree bound 1 / (1 - (P_1 + P_2)), which is 1 / (1 - P_2) when P_2 is
read cumulatively (the chance that one of the top two candidates is accepted).
The optimal tree for a budget of n drafted tokens is found by dynamic
programming over (nodes, children), as in Sequoia's tree search, and is never
worse than any chain or fixed-width tree of the same budget.

Costs.  Budgets count drafted tokens n (the root is the last accepted token,
already paid for), so a tree of n nodes is verified at ``verify(n)`` in the
closed form's convention (``verify(k)`` verifies k drafts plus one).  Drafting
a tree with a draft model costs one draft step per level (siblings are batched),
so a tree of depth d costs ``d * c + verify(n)`` target passes; a chain of k
costs ``k * c + verify(k)`` as in the closed form.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from app.model.arithmetic import closed_form
from app.model.arithmetic.closed_form import VerifyCost, free_verification

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

MAX_TREE_BUDGET = 256  # drafted tokens per verification
MAX_WIDTH = 16  # ranked candidates per node in the positional acceptance vector
MAX_SEARCH_DEPTH = 32  # depth limits tried when the tree's depth enters the cost
# Two trees are optimal in different senses: the one with the most tokens per verification at a budget (any
# depth, draft cost ignored) and the one with the best speedup once its depth and verification are priced.
MOST_TOKENS_TREE = "most-tokens tree"
BEST_SPEEDUP_TREE = "best-speedup tree"
SUM_TOLERANCE = 1e-9


def positional_acceptance(values: Sequence[float]) -> tuple[float, ...]:
    """Validate P_1 >= P_2 >= ... >= 0 with sum <= 1; return them as a tuple."""
    probabilities = tuple(float(value) for value in values)
    if not 1 <= len(probabilities) <= MAX_WIDTH:
        raise ValueError(f"give from 1 to {MAX_WIDTH} positional acceptance probabilities; got {len(probabilities)}")
    for index, value in enumerate(probabilities, start=1):
        if not (math.isfinite(value) and 0.0 <= value <= 1.0):
            raise ValueError(f"P{index} must be a number from 0 to 1; got {value}")
    for index in range(1, len(probabilities)):
        if probabilities[index] > probabilities[index - 1]:
            raise ValueError(
                f"must not increase with rank (P{index + 1} = {probabilities[index]} "
                f"> P{index} = {probabilities[index - 1]})"
            )
    total = sum(probabilities)
    if total > 1.0 + SUM_TOLERANCE:
        raise ValueError(
            f"the P_i are exclusive (one child at most is accepted), so they must sum to at most 1; got {total:.6g}"
        )
    return probabilities


def _check_budget(max_budget: int) -> None:
    if not 0 <= max_budget <= MAX_TREE_BUDGET:
        raise ValueError(f"the budget must be from 0 to {MAX_TREE_BUDGET} drafted tokens; got {max_budget}")


def _padded(acceptance: Sequence[float], width: int) -> FloatArray:
    values = np.zeros(width, dtype=np.float64)
    count = min(width, len(acceptance))
    values[:count] = acceptance[:count]
    return values


# ---------------------------------------------------------------------------
# Optimal trees by dynamic programming


def _max_plus(previous: FloatArray, child: FloatArray, offsets: IntArray, valid: NDArray[np.bool_]) -> FloatArray:
    """out[s] = max over a <= s of previous[s - a] + child[a] (one more child sharing s nodes)."""
    candidates = np.where(valid, previous[offsets] + child[np.newaxis, :], -np.inf)
    result: FloatArray = candidates.max(axis=1)
    return result


def _optimal_unbounded(acceptance: tuple[float, ...], max_budget: int) -> FloatArray:
    """values[m] = best value of a tree of at most m nodes, root included (values[0] = 0)."""
    nodes = max_budget + 1
    values = np.zeros(nodes + 1)
    values[1] = 1.0
    # best[j][s]: best sum of P_i * value(subtree_i) over children 1..j sharing at most s nodes.
    best = np.zeros((len(acceptance) + 1, nodes))
    for shared in range(nodes):
        for rank, probability in enumerate(acceptance, start=1):
            previous = best[rank - 1, shared::-1]  # best[j-1][s - a] for a = 0..s
            best[rank, shared] = np.max(previous + probability * values[: shared + 1])
        values[shared + 1] = 1.0 + best[len(acceptance), shared]
    return values


def _optimal_by_depth(acceptance: tuple[float, ...], max_budget: int, max_depth: int) -> FloatArray:
    """values[d][m] for depth limits d = 0..max_depth and m = 0..max_budget + 1 nodes (root included)."""
    nodes = max_budget + 2  # m = 0..max_budget + 1
    indices = np.arange(nodes)
    differences = indices[:, np.newaxis] - indices[np.newaxis, :]
    valid = differences >= 0
    offsets = np.where(valid, differences, 0)
    values = np.zeros((max_depth + 1, nodes))
    values[0, 1:] = 1.0  # depth 0: the root alone
    for depth in range(1, max_depth + 1):
        shared = np.zeros(nodes)  # children of the root sharing at most s nodes
        for probability in acceptance:
            if probability == 0.0:
                break
            shared = _max_plus(shared, probability * values[depth - 1], offsets, valid)
        values[depth, 1:] = 1.0 + shared[:-1]
    return values


def optimal_tree_values(acceptance: Sequence[float], max_budget: int, max_depth: int | None = None) -> FloatArray:
    """Best expected tokens per verification for n = 0..max_budget drafted tokens (bonus token included).

    With ``max_depth`` the tree has at most that many levels of drafts below the root.
    """
    probabilities = positional_acceptance(acceptance)
    _check_budget(max_budget)
    if max_depth is None or max_depth >= max_budget:
        return _optimal_unbounded(probabilities, max_budget)[1:]
    if max_depth < 0 or max_depth > MAX_SEARCH_DEPTH:
        raise ValueError(f"max_depth must be from 0 to {MAX_SEARCH_DEPTH}; got {max_depth}")
    return _optimal_by_depth(probabilities, max_budget, max_depth)[max_depth, 1:]


@dataclass(frozen=True)
class TreeShape:
    """Nodes in the order they were added; parent -1 is the root, rank 1 is the draft's top candidate."""

    parents: tuple[int, ...]
    ranks: tuple[int, ...]
    depths: tuple[int, ...]
    reach: tuple[float, ...]  # probability that the node's token is accepted
    value: float
    depth: int


def best_first_tree(acceptance: Sequence[float], budget: int, max_depth: int | None = None) -> TreeShape:
    """The n nodes most likely to be reached: an optimal tree, since reach falls along paths and ranks.

    Reach never increases from a node to its child (times P_i <= 1) or to its next sibling
    (P_(i+1) <= P_i), so the top-n set is itself a tree and no other tree of n nodes does better.
    Used to show the optimal tree and to check the dynamic programme.
    """
    probabilities = positional_acceptance(acceptance)
    _check_budget(budget)
    limit = budget if max_depth is None else max_depth
    parents: list[int] = []
    ranks: list[int] = []
    depths: list[int] = []
    reach: list[float] = []
    # (-reach, depth, path, parent index, rank, parent reach); the path breaks ties so parents come first.
    frontier: list[tuple[float, int, tuple[int, ...], int, int, float]] = [(-probabilities[0], 1, (1,), -1, 1, 1.0)]
    while frontier and len(parents) < budget:
        negative_reach, depth, path, parent, rank, parent_reach = heapq.heappop(frontier)
        if depth > limit:
            continue
        index = len(parents)
        node_reach = -negative_reach
        parents.append(parent)
        ranks.append(rank)
        depths.append(depth)
        reach.append(node_reach)
        heapq.heappush(frontier, (-node_reach * probabilities[0], depth + 1, (*path, 1), index, 1, node_reach))
        if rank < len(probabilities):
            sibling = -parent_reach * probabilities[rank]
            heapq.heappush(frontier, (sibling, depth, (*path[:-1], rank + 1), parent, rank + 1, parent_reach))
    return TreeShape(
        parents=tuple(parents),
        ranks=tuple(ranks),
        depths=tuple(depths),
        reach=tuple(reach),
        value=1.0 + math.fsum(reach),
        depth=max(depths, default=0),
    )


# ---------------------------------------------------------------------------
# Chains and fixed-width trees


def chain_values(acceptance: Sequence[float], max_budget: int) -> FloatArray:
    """A chain of n drafts: the closed form's E[T] with p = P_1."""
    probabilities = positional_acceptance(acceptance)
    _check_budget(max_budget)
    return np.array([closed_form.expected_tokens(probabilities[0], n) for n in range(max_budget + 1)])


def _width_start(
    acceptance: Sequence[float], width: int, max_budget: int
) -> tuple[tuple[float, ...], FloatArray, FloatArray, IntArray]:
    """Checked inputs of a family of width ``width``: the positional acceptances, their first ``width``, and
    values and depths to fill for n = 0..max_budget.
    """
    probabilities = positional_acceptance(acceptance)
    _check_budget(max_budget)
    if not 1 <= width <= MAX_WIDTH:
        raise ValueError(f"width must be from 1 to {MAX_WIDTH}; got {width}")
    return (
        probabilities,
        _padded(probabilities, width),
        np.ones(max_budget + 1),
        np.zeros(max_budget + 1, dtype=np.int64),
    )


def level_filled_values(acceptance: Sequence[float], width: int, max_budget: int) -> tuple[FloatArray, IntArray]:
    """Trees where every node has ``width`` children, filled level by level (most likely nodes first).

    Returns value and depth for n = 0..max_budget drafted tokens; width 1 is the chain, 2 the binary tree.
    """
    _, children, values, depths = _width_start(acceptance, width, max_budget)
    level = np.ones(1)
    added, total, depth = 0, 1.0, 0
    while added < max_budget:
        depth += 1
        level = np.sort(np.outer(level, children).ravel())[::-1][: max_budget - added]
        for node_reach in level:
            added += 1
            total += float(node_reach)
            values[added] = total
            depths[added] = depth
    return values, depths


def independent_sequences_values(
    acceptance: Sequence[float], width: int, max_budget: int
) -> tuple[FloatArray, IntArray]:
    """``width`` chains from the root (its top-``width`` candidates, each continued by rank-1 drafts).

    The budget is split as evenly as possible, longer chains on better-ranked roots (SpecInfer-style).
    """
    probabilities, first, values, depths = _width_start(acceptance, width, max_budget)
    for budget in range(1, max_budget + 1):
        chains = min(width, budget)
        share, extra = divmod(budget, chains)
        lengths = [share + (1 if index < extra else 0) for index in range(chains)]
        values[budget] = 1.0 + math.fsum(
            first[index] * closed_form.expected_tokens(probabilities[0], length - 1)
            for index, length in enumerate(lengths)
        )
        depths[budget] = max(lengths)
    return values, depths


# ---------------------------------------------------------------------------
# Bounds


def width_bound(acceptance: Sequence[float], width: int) -> float | None:
    """1 / (1 - (P_1 + ... + P_width)): the limit for trees with ``width`` children per node; None if unbounded."""
    probabilities = positional_acceptance(acceptance)
    total = math.fsum(probabilities[:width])
    return None if total >= 1.0 else 1.0 / (1.0 - total)


def chain_bound(acceptance: Sequence[float]) -> float | None:
    """1 / (1 - P_1)."""
    return width_bound(acceptance, 1)


def binary_tree_bound(acceptance: Sequence[float]) -> float | None:
    """1 / (1 - (P_1 + P_2)); with a single probability given, P_2 = 0."""
    return width_bound(acceptance, 2)


def independent_sequences_bound(acceptance: Sequence[float], width: int) -> float | None:
    """1 + (P_1 + ... + P_width) / (1 - P_1)."""
    probabilities = positional_acceptance(acceptance)
    if probabilities[0] >= 1.0:
        return None
    return 1.0 + math.fsum(probabilities[:width]) / (1.0 - probabilities[0])


# ---------------------------------------------------------------------------
# Speedup once the tree enters the cost


def tree_cost(nodes: int, depth: int, c: float, verify: VerifyCost = free_verification) -> float:
    """Target passes per cycle: one draft step per level plus verifying ``nodes`` drafted tokens."""
    if nodes == 0:
        return 1.0
    return depth * c + verify(nodes)


def tree_speedups(values: FloatArray, depths: IntArray, c: float, verify: VerifyCost = free_verification) -> FloatArray:
    return np.array(
        [
            value / tree_cost(nodes, int(depth), c, verify)
            for nodes, (value, depth) in enumerate(zip(values, depths, strict=True))
        ]
    )


@dataclass(frozen=True)
class TreeFamily:
    name: str
    kind: str  # "chain", "level_filled", "independent_sequences", "best_speedup"
    width: int | None
    values: list[float]
    depths: list[int]
    speedups: list[float]
    bound: float | None
    best_budget: int
    best_speedup: float


@dataclass(frozen=True)
class TreeComparison:
    acceptance: tuple[float, ...]
    max_budget: int
    c: float
    families: list[TreeFamily]
    chain_bound: float | None
    binary_tree_bound: float | None
    full_bound: float | None
    best_family: str
    best_budget: int
    best_speedup: float
    optimal_shape: TreeShape  # the best-speedup tree at its best budget and depth
    optimal_values: list[float]  # the most-tokens tree: most tokens per verification at each budget, any depth


def _family(
    name: str,
    kind: str,
    width: int | None,
    values: FloatArray,
    depths: IntArray,
    speedups: FloatArray,
    bound: float | None,
) -> TreeFamily:
    best = int(np.argmax(speedups))  # first maximum: ties go to the smaller tree
    return TreeFamily(
        name=name,
        kind=kind,
        width=width,
        values=[float(value) for value in values],
        depths=[int(depth) for depth in depths],
        speedups=[float(value) for value in speedups],
        bound=bound,
        best_budget=best,
        best_speedup=float(speedups[best]),
    )


def depth_limited_values(acceptance: Sequence[float], max_budget: int) -> FloatArray:
    """table[d, n]: best value with n drafted tokens and at most d levels, for d, n = 0..max_budget.

    Level by level, only the ``max_budget`` most likely nodes of a level can belong to an optimal tree
    (any other node is beaten by that many nodes of the same level, and so are its children), so each
    level keeps at most ``max_budget`` nodes and the whole table costs O(max_budget^2 * width).
    The best tree within d levels is the set of the n most likely nodes of depth <= d.
    """
    probabilities = np.array(positional_acceptance(acceptance))
    _check_budget(max_budget)
    size = max_budget
    table = np.ones((size + 1, size + 1))
    level = np.ones(1)
    pool = np.empty(0)
    for depth in range(1, size + 1):
        level = np.outer(level, probabilities).ravel()
        level = level[level > 0.0]
        if level.size > size:
            level = np.partition(level, level.size - size)[level.size - size :]
        pool = np.concatenate([pool, level])
        if pool.size > size:
            pool = np.partition(pool, pool.size - size)[pool.size - size :]
        totals = np.concatenate([[0.0], np.cumsum(np.sort(pool)[::-1])])
        counts = np.minimum(np.arange(size + 1), pool.size)
        table[depth] = 1.0 + totals[counts]
        if level.size == 0:
            table[depth + 1 :] = table[depth]
            break
    return table


def hardware_aware_optimal(
    acceptance: Sequence[float], max_budget: int, c: float, verify: VerifyCost = free_verification
) -> tuple[FloatArray, IntArray, FloatArray]:
    """Per budget n, the tree maximising speedup over every depth limit: value, depth and speedup.

    Deeper trees accept more but cost one draft step per level, so the best depth depends on c and
    on the verification regime (Sequoia's hardware-aware choice of size and depth).
    """
    table = depth_limited_values(acceptance, max_budget)
    budgets = np.arange(max_budget + 1)
    depth_column = np.arange(max_budget + 1)[:, np.newaxis]
    verify_costs = np.array([1.0] + [verify(int(nodes)) for nodes in budgets[1:]])
    speedups = table / (depth_column * c + verify_costs[np.newaxis, :])
    speedups[0, 1:] = -np.inf  # n >= 1 drafted tokens need at least one level
    best_depths = np.argmax(speedups, axis=0)  # first maximum: the shallower tree on ties
    best_depths[0] = 0
    values = table[best_depths, budgets]
    best_speedups = speedups[best_depths, budgets]
    best_speedups[0] = 1.0
    values[0] = 1.0
    return values, best_depths.astype(np.int64), best_speedups


def compare_trees(
    acceptance: Sequence[float],
    max_budget: int,
    c: float,
    verify: VerifyCost = free_verification,
    widths: Sequence[int] = (2, 4),
) -> TreeComparison:
    """Chain, level-filled and independent-sequence trees of each width, and the optimal tree, per budget."""
    probabilities = positional_acceptance(acceptance)
    _check_budget(max_budget)
    if not (math.isfinite(c) and c >= 0.0):
        raise ValueError("c must be a finite number >= 0")
    families: list[TreeFamily] = []
    chain = chain_values(probabilities, max_budget)
    chain_depths = np.arange(max_budget + 1, dtype=np.int64)
    families.append(
        _family(
            "chain",
            "chain",
            1,
            chain,
            chain_depths,
            tree_speedups(chain, chain_depths, c, verify),
            chain_bound(probabilities),
        )
    )
    for width in widths:
        values, depths = level_filled_values(probabilities, width, max_budget)
        families.append(
            _family(
                f"{width}-ary tree",
                "level_filled",
                width,
                values,
                depths,
                tree_speedups(values, depths, c, verify),
                width_bound(probabilities, width),
            )
        )
        values, depths = independent_sequences_values(probabilities, width, max_budget)
        families.append(
            _family(
                f"{width} independent sequences",
                "independent_sequences",
                width,
                values,
                depths,
                tree_speedups(values, depths, c, verify),
                independent_sequences_bound(probabilities, width),
            )
        )
    best_values, best_depths, best_speedups = hardware_aware_optimal(probabilities, max_budget, c, verify)
    families.append(
        _family(
            BEST_SPEEDUP_TREE,
            "best_speedup",
            None,
            best_values,
            best_depths,
            best_speedups,
            width_bound(probabilities, len(probabilities)),
        )
    )
    winner = max(families, key=lambda family: family.best_speedup)
    optimal = families[-1]
    optimal_shape = best_first_tree(probabilities, optimal.best_budget, optimal.depths[optimal.best_budget] or None)
    return TreeComparison(
        acceptance=probabilities,
        max_budget=max_budget,
        c=c,
        families=families,
        chain_bound=chain_bound(probabilities),
        binary_tree_bound=binary_tree_bound(probabilities),
        full_bound=width_bound(probabilities, len(probabilities)),
        best_family=winner.name,
        best_budget=winner.best_budget,
        best_speedup=winner.best_speedup,
        optimal_shape=optimal_shape,
        optimal_values=[float(value) for value in optimal_tree_values(probabilities, max_budget)],
    )
