"""A decision written in each engine's own configuration, and read back the way that engine reads it.

What each engine takes lives in its package (``app/model/engines/<engine>/``): the versions it knows, the
writer, and a reader of its own config that follows the engine's code.  This module asks the adapter for
the config of the version the user names (the newest by default) and reads it back, so that the answer
says which k the engine will run at every batch, and where that differs from the schedule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from app.model import engines
from app.model.arithmetic.trees import TreeShape
from app.model.cost.regimes import ScheduleStep
from app.model.engines.base import (
    ConfigRequest,
    ConfigRuleError,
    EngineVersion,
    Exported,
    describe_batches,
    differences,
    tree_paths,
)

__all__ = ["ConfigRuleError", "Exported", "export", "tree_paths"]


@dataclass(frozen=True)
class EngineExport:
    exported: Exported
    version: EngineVersion


def export(
    engine: str,
    best_k: Sequence[int],
    steps: Sequence[ScheduleStep],
    batch_limit: int,
    *,
    batch: int = 1,
    tree: TreeShape | None = None,
    method: str | None = None,
    draft_path: str | None = None,
    version: str | None = None,
    data_parallel: int = 1,
    limit_reason: str | None = None,
    parallel_draft: bool = False,
) -> EngineExport:
    """The engine's config for the schedule (best k per batch 1..batch_limit), read back as the engine reads it.

    Raises UnknownVersionError for a version the adapter does not know, ValueError for a choice the engine
    does not take (a method, a tree it cannot hold).
    """
    chosen = engines.version(engine, version)
    module = engines.adapter(engine)
    request = ConfigRequest(
        best_k=tuple(best_k),
        steps=tuple(steps),
        batch_limit=batch_limit,
        batch=max(1, min(batch, batch_limit or 1)),
        tree=tree,
        method=method,
        draft_path=draft_path,
        data_parallel=max(1, data_parallel),
        parallel_draft=parallel_draft,
        **({"limit_reason": limit_reason} if limit_reason else {}),
    )
    exported: Exported = module.write_config(request, chosen)
    if exported.config is None or exported.placeholders or batch_limit < 1:
        return EngineExport(exported, chosen)
    runs = tuple(module.read_config(exported, chosen, batch_limit))
    differ = differences(best_k, runs) if tree is None else ()
    notes = list(exported.notes)
    if differ and differ != exported.differs_at:
        notes.append(f"read back, the engine runs another k than the schedule at batches {describe_batches(differ)}")
    return EngineExport(replace(exported, runs=runs, differs_at=differ, notes=notes), chosen)
