"""One adapter per serving engine, each a package of this package holding all the product knows of it.

``ADAPTERS`` maps the engine's name to its package; :func:`version` resolves a version a user names (or the
newest when none is named); :func:`formats` lists every report format in the order detection tries them.
Adding an engine means adding a package whose ``ADAPTER`` is an :class:`app.model.engines.base.EngineAdapter`
record, one line in ``ENGINES``, and its tests.

Each engine's package holds three modules: ``versions`` (with the capabilities each has and the sources that set
each format), ``config`` (the drafters, the config written for a schedule and read back as the engine's own code
reads it) and ``reports`` (what it reports: the series the rules, the watch and the canary read, its report and
step-time formats, and LIVE, how measure drives a live server of it); the package's ``__init__`` holds only
``ADAPTER``, the record that names those parts.
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING, Any

from app.model.engines.base import EngineAdapter, EngineVersion, UnknownVersionError

if TYPE_CHECKING:
    from app.model.engines.reports import ReportFormat
    from app.model.engines.step_times import StepTimeFormat

# The registry: one line per engine, a package of this package named by the engine.  The names load without the
# adapters (so that the command line lists them at start-up); the adapters load on first use.
ENGINES: tuple[str, ...] = ("vllm", "sglang", "trtllm", "llamacpp")

ADAPTERS: dict[str, EngineAdapter]
REGISTRY: tuple[EngineAdapter, ...]


def __getattr__(name: str) -> Any:
    """ADAPTERS and REGISTRY, loaded once on first use."""
    if name not in ("ADAPTERS", "REGISTRY"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    loaded: tuple[EngineAdapter, ...] = tuple(
        importlib.import_module(f"{__name__}.{engine}").ADAPTER for engine in ENGINES
    )
    globals()["REGISTRY"] = loaded
    globals()["ADAPTERS"] = {module.NAME: module for module in loaded}
    return globals()[name]


def _adapters() -> dict[str, EngineAdapter]:
    found: dict[str, EngineAdapter] = globals()["ADAPTERS"] if "ADAPTERS" in globals() else __getattr__("ADAPTERS")
    return found


def adapter(engine: str) -> EngineAdapter:
    try:
        return _adapters()[engine]
    except KeyError:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {engine!r}") from None


def versions(engine: str) -> tuple[EngineVersion, ...]:
    return adapter(engine).VERSIONS


def version(engine: str, name: str | None = None) -> EngineVersion:
    """The version ``name`` of ``engine`` (an alias such as a build tag also works, and a patch release such as
    vLLM's 0.32.0 is read as its major.minor where only that is known); the newest when None."""
    module = adapter(engine)
    known = module.VERSIONS
    if name is None or not name.strip():
        return known[-1]
    given = name.strip()
    release = re.fullmatch(r"(\d+\.\d+)\.\d+", given)
    for wanted in (given, *([release.group(1)] if release else [])):
        wanted = module.ALIASES.get(wanted, wanted)
        for candidate in known:
            if candidate.name == wanted:
                return candidate
    raise UnknownVersionError(engine, name, [v.name for v in known] + list(module.ALIASES))


def formats() -> list[ReportFormat]:
    """Every report format, JSON formats and the more specific ones first."""
    found: list[ReportFormat] = []
    for module in _adapters().values():
        found.extend(module.REPORTS)
    return found


def step_time_formats() -> list[StepTimeFormat]:
    """Every engine's files of step times, in the registry's order."""
    found: list[StepTimeFormat] = []
    for module in _adapters().values():
        found.extend(module.STEP_TIMES)
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
    "step_time_formats",
    "version",
    "versions",
]
