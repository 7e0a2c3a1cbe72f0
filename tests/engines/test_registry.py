"""The registry of adapters: every engine module has what the product asks of it, and docs/engines.md says
what the adapters say."""

from __future__ import annotations

import importlib

import pytest

from app.model import engines
from app.model.engines import doc
from app.model.engines.base import EngineAdapter
from app.model.live import engine_metrics
from tests.samples import engine_reports

REQUIRED = (
    "NAME",
    "TITLE",
    "VERSIONS",
    "ALIASES",
    "REPORTS",
    "METHODS",
    "write_config",
    "read_config",
    "choose_method",
)


@pytest.mark.parametrize("engine", engines.ENGINES)
def test_each_adapter_has_what_the_product_asks_of_it(engine: str) -> None:
    module = engines.adapter(engine)
    assert all(hasattr(module, name) for name in REQUIRED)
    assert isinstance(module, EngineAdapter)  # the typed base: every member, HOW_TO_APPLY and RULES_METRICS too
    names = [version.name for version in module.VERSIONS]
    assert module.HOW_TO_APPLY and set(module.RULES_METRICS) <= set(names)
    for metrics in module.RULES_METRICS.values():  # the format each version's /metrics is read as is its own
        assert engine_metrics.FORMAT_ENGINE[metrics.scrape_format] == engine
    assert names == sorted(names) and len(set(names)) == len(names)  # oldest first, named by month
    for version in module.VERSIONS:
        assert version.sources and all(source.repository and source.path for source in version.sources)
    for report in module.REPORTS:
        assert report.engine == engine and set(report.versions) <= set(names)
        assert (
            engine_metrics.detect_format(engine_reports.example_report(report.name, 0.7, 3, 300, 1, 1)) == report.name
        )
    assert set(module.ALIASES.values()) <= set(names)
    assert engine == module.NAME and module.PLACEHOLDER_MODEL and module.PROMETHEUS is not None


@pytest.mark.parametrize("engine", engines.ENGINES)
def test_each_package_holds_one_record_and_no_list_of_re_exports(engine: str) -> None:
    package = importlib.import_module(f"app.model.engines.{engine}")
    public = {name for name in vars(package) if not name.startswith("_")}
    assert public == {"ADAPTER", "EngineAdapter", "annotations", "config", "reports", "versions"}
    assert package.ADAPTER is engines.adapter(engine)


def test_the_doc_is_written_from_the_adapters() -> None:
    text = doc.DOC.read_text()
    assert doc.updated(text) == text, "run: python -m app.model.engines.doc --write"


def test_an_unknown_engine_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match="vllm, sglang, trtllm, llamacpp"):
        engines.adapter("tgi")


@pytest.mark.parametrize("engine", engines.ENGINES)
def test_versions_gate_by_named_capability_not_by_month(engine: str) -> None:
    """Writers and readers ask a version what it can do (EngineVersion.can); none compares version names."""
    import importlib
    import inspect
    import pkgutil
    import re

    module = engines.adapter(engine)
    package = importlib.import_module(f"app.model.engines.{engine}")
    parts = [
        importlib.import_module(f"{package.__name__}.{info.name}") for info in pkgutil.iter_modules(package.__path__)
    ]
    assert parts, "an engine is a package of modules"
    for part in (package, *parts):
        source = inspect.getsource(part)
        assert not re.search(r"version\.name\s*(==|!=|<|>)|_at_least\(|\.index\(version\.name\)", source), part
    declared = {value for value in vars(package.versions).values() if isinstance(value, str)}
    for version in module.VERSIONS:
        assert version.capabilities <= declared, (version.name, version.capabilities - declared)


def test_a_package_without_a_required_part_is_refused_by_name() -> None:
    from app.model.engines.vllm import config, reports, versions

    with pytest.raises(AttributeError, match="names TITLE"):
        EngineAdapter.of(config, reports)  # versions holds NAME, TITLE, VERSIONS, ALIASES
    assert EngineAdapter.of(versions, config, reports) == engines.adapter("vllm")
