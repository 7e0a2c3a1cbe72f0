"""The conformance suite every engine runs, for every version and drafter in the registry
(``tests/engines/test_conformance.py`` parametrizes it from the registry; nothing is listed by hand).

- The oracle is the engine: :mod:`tests.engines.oracles` holds configs as each engine's own examples,
  validators and tests (or the live llama-server) give them, with the k the engine runs; the adapter's reader
  must agree with each, and a registered version with no oracle entry fails (:func:`uncovered`).
- A grid of setups, each exported and read back: the engine accepts the config (no rule broken), and the k it
  runs at each batch from 1 to the largest that fits equals the product's schedule, except at the batches the
  answer names (where the engine cannot express the schedule, it says so, and gives what it can).
- Requirement gates, in the SQLAlchemy style: a test that holds only where a version can do something says so
  with :func:`requires` (a :class:`Requirement` read from the version's named capabilities or the adapter's
  own declarations), and runs for exactly the versions that meet it; ``~requirement`` selects the others.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import pytest

from app.model import engines
from app.model.arithmetic import trees
from app.model.cost.capacity import decide
from app.model.engines.base import SCHEDULE_PER_BATCH, EngineVersion
from app.service.regimes import SetupRequest, build_setup
from tests.engines.oracles import ORACLES, Oracle

F = TypeVar("F", bound=Callable[..., object])

P_VALUES = (0.3, 0.5, 0.65, 0.8, 0.9, 0.95)
SETUPS = (
    # (target, draft, accelerator, devices, batch_max, context)
    ("dense-8b", "dense-1b", "h100-sxm", 1, 1024, 4096),
    ("dense-70b", "dense-1b", "h100-sxm", 2, 1024, 8192),
    ("dense-70b", "dense-8b", "h200", 4, 256, 4096),
    ("mixtral-8x7b", "dense-1b", "h100-sxm", 2, 512, 4096),
    ("dense-8b", "dense-1b", "a100-80gb-sxm", 1, 64, 2048),
    ("dense-405b", "dense-8b", "b200", 8, 128, 8192),
    ("deepseek-v3", "dense-1b", "h200", 8, 64, 4096),
    ("dense-3b", "dense-1b", "mi300x", 1, 16, 2048),
)
TREE_ACCEPTANCE = (0.6, 0.2, 0.1, 0.05)


@dataclass(frozen=True)
class Case:
    target: str
    draft: str
    accelerator: str
    devices: int
    batch_max: int
    context: int
    p: float
    k_max: int = 8

    def describe(self) -> str:
        return (
            f"{self.target}+{self.draft} on {self.devices}x{self.accelerator}, p={self.p}, "
            f"batch<= {self.batch_max}, context {self.context}"
        )


def cases() -> Iterator[Case]:
    for (target, draft, accelerator, devices, batch_max, context), p in itertools.product(SETUPS, P_VALUES):
        yield Case(target, draft, accelerator, devices, batch_max, context, p)


@functools.cache
def schedule_of(case: Case) -> tuple[list[int], list[object], int]:
    built = build_setup(
        SetupRequest(
            hw=case.accelerator, model=case.target, draft=case.draft, devices=case.devices, context=case.context
        )
    )
    decision = decide(case.p, built.setup, case.k_max, case.batch_max)
    return decision.best_k, list(decision.steps), decision.batch_limit


def check_export(engine: str, case: Case, *, version: str | None = None, method: str | None = None) -> dict[str, int]:
    """Export, read back, compare; returns counts of what was checked (setups, batches, differing batches)."""
    from app.model.live import engine_config

    best, steps, limit = schedule_of(case)
    result = engine_config.export(
        engine, best, steps, limit, batch=1, method=method, draft_path="models/draft", version=version
    )
    exported, chosen = result.exported, result.version
    module = engines.adapter(engine)
    if exported.config is None:
        # speculation left off: either nothing pays, or the engine cannot express where it pays (and says so)
        assert max(best, default=0) == 0 or exported.notes, case.describe()
        if max(best, default=0) > 0:
            assert any("batch" in note for note in exported.notes), (case.describe(), exported.notes)
        return {"setups": 1, "batches": limit, "differ": sum(1 for k in best if k > 0)}
    runs = module.read_config(exported, chosen, limit)
    assert len(runs) == limit
    differing = [batch for batch, (a, b) in enumerate(zip(best, runs, strict=True), start=1) if a != b]
    assert tuple(differing) == exported.differs_at, (case.describe(), differing, exported.differs_at)
    if differing:
        assert any("batch" in note for note in exported.notes), (case.describe(), exported.notes)
    return {"setups": 1, "batches": limit, "differ": len(differing)}


def check_tree(engine: str, budget: int, *, version: str | None = None, method: str | None = None) -> list[int]:
    from app.model.live import engine_config

    tree = trees.best_first_tree(TREE_ACCEPTANCE, budget)
    best = [4] * 16
    result = engine_config.export(
        engine, best, [], 16, tree=tree, method=method, draft_path="models/draft", version=version
    )
    module = engines.adapter(engine)
    runs: list[int] = module.read_config(result.exported, result.version, 16)
    return runs


# ---------------------------------------------------------------------------
# The registry, as the suite walks it


def registered_versions() -> list[tuple[str, EngineVersion]]:
    """Every (engine, version) in the registry as it is now (an engine registered at run time included)."""
    return [(name, version) for name, module in engines.ADAPTERS.items() for version in module.VERSIONS]


def registered_methods() -> list[tuple[str, EngineVersion, str]]:
    """Every (engine, version, drafter) in the registry."""
    return [
        (name, version, method) for name, version in registered_versions() for method in engines.adapter(name).METHODS
    ]


def oracles_for(engine: str, version: str) -> list[Oracle]:
    return [oracle for oracle in ORACLES if oracle.engine == engine and version in oracle.versions]


def uncovered() -> list[tuple[str, str]]:
    """The registered versions the engine's own word does not cover: each one fails the suite."""
    return [(name, version.name) for name, version in registered_versions() if not oracles_for(name, version.name)]


# ---------------------------------------------------------------------------
# Requirement gates


@dataclass(frozen=True)
class Requirement:
    """What a version must be able to do for a test to hold of it, read from what the registry declares."""

    name: str
    holds: Callable[[str, EngineVersion], bool]

    def __invert__(self) -> Requirement:
        return Requirement(f"not {self.name}", lambda engine, version: not self.holds(engine, version))


def _static_tree(engine: str, version: EngineVersion) -> bool:
    tree = engines.adapter(engine).TREE
    return tree is not None and version.can(tree.key)


class Requirements:
    """The gates, one property each (``requires(Requirements.static_tree)``)."""

    schedule_per_batch = Requirement(SCHEDULE_PER_BATCH, lambda engine, version: version.can(SCHEDULE_PER_BATCH))
    static_tree = Requirement("a static tree in its config", _static_tree)
    takes_trees = Requirement(
        "a static tree in some version", lambda engine, _: engines.adapter(engine).TREE is not None
    )


def requires(*needs: Requirement) -> Callable[[F], F]:
    """Run the test for each registered (engine, version) that meets every requirement, and for no other."""
    chosen = [
        pytest.param(engine, version, id=f"{engine}-{version.name}")
        for engine, version in registered_versions()
        if all(need.holds(engine, version) for need in needs)
    ]
    assert chosen, f"no registered version meets {', '.join(need.name for need in needs)}: the gate tests nothing"

    def mark(test: F) -> F:
        marked: F = pytest.mark.parametrize(("engine", "version"), chosen)(test)
        return marked

    return mark
