"""One adapter per serving engine, each a module of this package holding all the product knows of it.

``ADAPTERS`` maps the engine's name to its module; :func:`version` resolves a version a user names (or the
newest when none is named); :func:`formats` lists every report format in the order detection tries them.
Adding an engine means adding a module that satisfies :class:`app.model.engines.base.EngineAdapter` and one
line in ``REGISTRY``, and its tests.
"""

from __future__ import annotations

from app.model.engines import llamacpp, sglang, trtllm, vllm
from app.model.engines.base import EngineAdapter, EngineVersion, UnknownVersionError
from app.model.engines.reports import ReportFormat


# The registry: one line per engine.  mypy checks each module against EngineAdapter here.
def _checked(module: EngineAdapter) -> EngineAdapter:
    return module


REGISTRY: tuple[EngineAdapter, ...] = (_checked(vllm), _checked(sglang), _checked(trtllm), _checked(llamacpp))
ADAPTERS: dict[str, EngineAdapter] = {module.NAME: module for module in REGISTRY}
ENGINES: tuple[str, ...] = tuple(ADAPTERS)


def adapter(engine: str) -> EngineAdapter:
    try:
        return ADAPTERS[engine]
    except KeyError:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}") from None


def versions(engine: str) -> tuple[EngineVersion, ...]:
    known: tuple[EngineVersion, ...] = adapter(engine).VERSIONS
    return known


def version(engine: str, name: str | None = None) -> EngineVersion:
    """The version ``name`` of ``engine`` (an alias such as a build tag also works); the newest when None."""
    module = adapter(engine)
    known: tuple[EngineVersion, ...] = module.VERSIONS
    if name is None or not name.strip():
        return known[-1]
    wanted = module.ALIASES.get(name.strip(), name.strip())
    for candidate in known:
        if candidate.name == wanted:
            return candidate
    raise UnknownVersionError(engine, name, [v.name for v in known] + list(module.ALIASES))


def formats() -> list[ReportFormat]:
    """Every report format, JSON formats and the more specific ones first."""
    found: list[ReportFormat] = []
    for module in ADAPTERS.values():
        found.extend(module.REPORTS)
    return found


__all__ = [
    "ADAPTERS",
    "ENGINES",
    "REGISTRY",
    "EngineAdapter",
    "EngineVersion",
    "UnknownVersionError",
    "adapter",
    "formats",
    "version",
    "versions",
]
