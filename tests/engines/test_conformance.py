"""The conformance suite, for every engine, version and drafter in the registry (see tests/engines/suite.py):
the engine's own word as the oracle, exports that read back to the schedule, and the gated behaviours."""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import replace

import pytest

from app.model import engines
from app.model.arithmetic import trees
from app.model.cost import presets
from app.model.engines.base import ConfigRuleError, EngineVersion, Exported
from app.model.engines.llamacpp.versions import LIVE_BUILDS
from app.model.live import engine_config
from tests import live_engine
from tests.engines import engine_reading, suite
from tests.engines.oracles import ORACLES, Oracle
from tests.engines.suite import Requirements, requires

FALLING = [4, 4, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1]


def test_every_registered_version_has_the_engines_own_word() -> None:
    assert suite.uncovered() == []


@pytest.mark.parametrize(("engine", "version"), [(e, v.name) for e, v in suite.registered_versions()])
def test_each_version_is_covered_by_an_oracle(engine: str, version: str) -> None:
    assert suite.oracles_for(engine, version), f"{engine} {version}: no oracle (tests/engines/oracles.py)"


def test_a_patch_release_reads_as_its_major_minor_where_only_that_is_named() -> None:
    """What a server reports (vLLM's /version says 0.32.0) is looked up as given, then as its major.minor; a
    pre-release or a release no registry names is refused with its name."""
    checked = 0
    for engine in sorted({e for e, _ in suite.registered_versions()}):
        for alias, name in engines.adapter(engine).ALIASES.items():
            if re.fullmatch(r"\d+\.\d+", alias):
                assert engines.version(engine, f"{alias}.7").name == engines.version(engine, name).name
                for loose in (f"{alias}.0rc1", f"{alias}.foo"):
                    with pytest.raises(engines.UnknownVersionError):
                        engines.version(engine, loose)
                checked += 1
        with pytest.raises(engines.UnknownVersionError) as refused:
            engines.version(engine, "9999.1.2")
        assert "9999.1.2" in str(refused.value)
    assert checked >= 1  # the registry names at least one release by its major.minor (vLLM's)


def test_every_oracle_names_a_registered_version_and_says_what_the_engine_does() -> None:
    known = {(engine, version.name) for engine, version in suite.registered_versions()}
    for oracle in ORACLES:
        assert {(oracle.engine, version) for version in oracle.versions} <= known, oracle.id
        assert (oracle.runs is None) != (oracle.refuses is None), oracle.id
        assert oracle.runs is None or len(oracle.runs) == oracle.batches, oracle.id
        # the stored commit read, or a cite that says the store names none for it
        assert re.search(r"@ [0-9a-f]{12,40}\b|@ b[0-9]{4,6}\b|commit not named by the store", oracle.cite), oracle.id


@pytest.mark.parametrize(
    ("oracle", "version"),
    [pytest.param(oracle, version, id=f"{oracle.id}@{version}") for oracle in ORACLES for version in oracle.versions],
)
def test_the_reader_does_what_the_engine_says(oracle: Oracle, version: str) -> None:
    module = engines.adapter(oracle.engine)
    chosen = engines.version(oracle.engine, version)
    if oracle.refuses is not None:
        with pytest.raises(ConfigRuleError, match=oracle.refuses):
            module.read_config(oracle.exported, chosen, oracle.batches)
    else:
        assert tuple(module.read_config(oracle.exported, chosen, oracle.batches)) == oracle.runs


@pytest.mark.parametrize(
    "oracle", [pytest.param(oracle, id=oracle.id) for oracle in ORACLES if oracle.engine in engine_reading.READERS]
)
def test_each_oracle_is_what_the_engines_own_code_gives(oracle: Oracle) -> None:
    """The k (or refusal) an oracle states, against the engine's reading written from its source, not the adapter."""
    read = engine_reading.READERS[oracle.engine]
    if oracle.refuses is not None:
        with pytest.raises(engine_reading.Refused, match=oracle.refuses):
            read(oracle.exported, oracle.batches, oracle.versions)
    else:
        assert read(oracle.exported, oracle.batches, oracle.versions) == oracle.runs


def test_every_engine_that_cannot_run_here_has_its_own_reading() -> None:
    """vLLM, SGLang and TensorRT-LLM are read by their own code's rules; llama.cpp runs live here."""
    assert set(engines.ENGINES) - set(engine_reading.READERS) == {"llamacpp"}
    assert {oracle.engine for oracle in ORACLES} - set(engine_reading.READERS) == {"llamacpp"}


@pytest.mark.parametrize(
    ("oracle", "version"),
    [
        pytest.param(oracle, version, id=f"{oracle.id}@{version}")
        for oracle in ORACLES
        if oracle.kind == "live llama-server"
        for version in oracle.versions
    ],
)
def test_the_real_llama_server_does_what_its_oracle_says(oracle: Oracle, version: str) -> None:
    """The oracle's flags on the llama-server build of its version (tests/live_engine.py), the draft file in for
    d.gguf."""
    assert version in LIVE_BUILDS, f"llama.cpp {version}: no build `make engine` makes runs as this version"
    built = live_engine.engine(LIVE_BUILDS[version])
    flags = [built.drafts["requantized"] if flag == "d.gguf" else flag for flag in oracle.exported.flags]
    if oracle.refuses is not None:
        code, output = live_engine.exits(flags, build=built.build)
        assert code not in (None, 0), output[-2000:]
        assert re.search(oracle.refuses, output), output[-2000:]
        return
    assert oracle.runs == (0,) * oracle.batches  # what a server that drafts nothing shows
    with live_engine.using(built.build), live_engine.llama_server(flags) as server:
        server.complete(live_engine.REPEATING_PROMPT, n_predict=16)
        text = server.metrics()
    assert re.search(r"llamacpp:spec_decode_num_draft_tokens_total 0\b", text), text


@pytest.mark.parametrize(
    ("engine", "version", "method"),
    [pytest.param(e, v, m, id=f"{e}-{v.name}-{m}") for e, v, m in suite.registered_methods()],
)
def test_every_drafter_of_every_version_reads_back_to_the_schedule(
    engine: str, version: EngineVersion, method: str
) -> None:
    """Each setup of the grid, or a refusal that names the version (a drafter the version does not have)."""
    checked = []
    for case in suite.cases():
        try:
            checked.append(suite.check_export(engine, case, version=version.name, method=method))
        except ValueError as error:
            assert version.name in str(error), (engine, version.name, method, error)
            return
    assert len(checked) == len(suite.SETUPS) * len(suite.P_VALUES)
    assert sum(item["batches"] for item in checked) > 1_000


@pytest.mark.parametrize("engine", sorted(engines.ENGINES))
def test_each_head_runs_as_one_of_the_engines_own_drafters_and_reads_back(engine: str) -> None:
    """The drafter an engine runs for a priced head is one of its own (so the grid above reads it back with a
    draft path), and without a draft path, as a setup priced with a head writes it, it reads back too."""
    module = engines.adapter(engine)
    assert set(module.HEAD_METHODS) <= set(presets.DRAFT_HEADS)
    for method in module.HEAD_METHODS.values():
        assert module.choose_method(method) == method and method in module.METHODS
        for case in itertools.islice(suite.cases(), 20):
            best, steps, limit = suite.schedule_of(case)
            result = engine_config.export(engine, best, steps, limit, method=method, version=module.VERSIONS[-1].name)
            if result.exported.config is not None:
                exported = _filled_in(result.exported, "models/target")  # as the user fills in what it names
                runs = module.read_config(exported, result.version, limit)
                assert len(runs) == limit
                if engine in engine_reading.READERS:  # and as the engine's own code reads it (its source, cited there)
                    assert engine_reading.READERS[engine](exported, limit) == result.exported.runs, (method, case)


def _filled_in(exported: Exported, value: str) -> Exported:
    """The config with each placeholder it names replaced by ``value``."""

    def fill(text: str) -> str:
        for placeholder in exported.placeholders:
            text = text.replace(placeholder, value)
        return text

    config = json.loads(fill(json.dumps(exported.config)))
    return replace(exported, config=config, flags=[fill(flag) for flag in exported.flags], text=fill(exported.text))


def _falling_exports(engine: str, version: EngineVersion) -> list[tuple[str, Exported]]:
    """The falling schedule written with each drafter the version takes (a drafter it refuses is left out)."""
    written = []
    for method in engines.adapter(engine).METHODS:
        try:
            result = engine_config.export(
                engine, FALLING, [], len(FALLING), method=method, draft_path="models/draft", version=version.name
            )
        except ValueError:
            continue
        written.append((method, result.exported))
    assert written, f"{engine} {version.name} takes none of its drafters"
    return written


@requires(Requirements.schedule_per_batch)
def test_a_version_with_a_schedule_per_batch_runs_another_k_at_another_batch(
    engine: str, version: EngineVersion
) -> None:
    distinct = [len(set(exported.runs)) for _, exported in _falling_exports(engine, version)]
    assert max(distinct) > 1, f"{engine} {version.name}: one k at every batch with every drafter"


@requires(~Requirements.schedule_per_batch)
def test_a_version_without_one_runs_one_k_at_every_batch_and_says_where_it_differs(
    engine: str, version: EngineVersion
) -> None:
    for method, exported in _falling_exports(engine, version):
        assert len(set(exported.runs)) == 1, (method, exported.runs)
        assert exported.differs_at and any("batch" in note for note in exported.notes)


@requires(Requirements.static_tree)
def test_a_static_tree_is_written_in_the_engines_key_and_read_back(engine: str, version: EngineVersion) -> None:
    module = engines.adapter(engine)
    assert module.TREE is not None
    shape = trees.best_first_tree(suite.TREE_ACCEPTANCE, 10)
    result = engine_config.export(engine, [4] * 16, [], 16, tree=shape, draft_path="models/draft", version=version.name)
    assert result.exported.config is not None
    config = result.exported.config.get("speculative_config", result.exported.config)
    assert config[module.TREE.key] == module.TREE.write(engine_config.tree_paths(shape))
    runs = module.read_config(result.exported, version, 16)
    assert len(set(runs)) == 1 and runs[0] > 0  # a static tree: one shape at every batch


@requires(Requirements.takes_trees, ~Requirements.static_tree)
def test_a_version_that_dropped_static_trees_writes_none_and_says_so(engine: str, version: EngineVersion) -> None:
    module = engines.adapter(engine)
    assert module.TREE is not None
    shape = trees.best_first_tree(suite.TREE_ACCEPTANCE, 10)
    result = engine_config.export(engine, [4] * 16, [], 16, tree=shape, draft_path="models/draft", version=version.name)
    config = (result.exported.config or {}).get("speculative_config", result.exported.config or {})
    assert module.TREE.key not in config
    assert any("tree" in note for note in result.exported.notes)


def test_a_registered_engine_without_the_engines_own_word_fails_the_suite(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.service.test_fifth_engine import TOYSERVE

    assert suite.uncovered() == []
    monkeypatch.setitem(engines.ADAPTERS, "toyserve", TOYSERVE)
    assert suite.uncovered() == [("toyserve", "2026-12")]
    with pytest.raises(AssertionError):
        test_every_registered_version_has_the_engines_own_word()


def test_a_version_added_to_a_registered_engine_without_an_oracle_fails_the_suite(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    vllm = engines.adapter("vllm")
    newer = EngineVersion("2099-01", "2099-01", "a stand-in", vllm.VERSIONS[-1].sources)
    monkeypatch.setitem(engines.ADAPTERS, "vllm", replace(vllm, VERSIONS=(*vllm.VERSIONS, newer)))
    assert suite.uncovered() == [("vllm", "2099-01")]
    with pytest.raises(AssertionError):
        test_every_registered_version_has_the_engines_own_word()


def test_the_engines_reading_tells_a_wrong_statement_from_the_engines_word() -> None:
    """An oracle that restated a wrong reader (the tail after vLLM's last range off, TensorRT-LLM's keys read as
    first batches, SGLang's draft tokens as the k) would fail against the engine's own reading."""
    by_cite = {oracle.cite: oracle for oracle in ORACLES}
    gap = next(oracle for cite, oracle in by_cite.items() if "gap comment" in cite)
    assert engine_reading.vllm(gap.exported, gap.batches) != (3,) * 16 + (0,) * 15 + (2,) * 129
    docstring = next(oracle for cite, oracle in by_cite.items() if "get_draft_len_for_batch_size docstring" in cite)
    assert engine_reading.trtllm(docstring.exported, docstring.batches)[4:8] == (2, 2, 2, 2)
    steps = next(
        oracle
        for oracle in ORACLES
        if oracle.engine == "sglang"
        and "--speculative-num-draft-tokens" in oracle.exported.flags
        and oracle.exported.flags[1] == "EAGLE3"
    )
    assert engine_reading.sglang(steps.exported, steps.batches) == (4, 4, 4)  # steps, not 9 - 1 draft tokens


@pytest.mark.parametrize("engine", sorted(engine_reading.READERS))
def test_every_export_of_the_newest_version_runs_by_the_engines_own_reading_what_the_adapter_says(engine: str) -> None:
    """The grid of setups written with each drafter of the newest version, read by the engine's reading (written
    from its source, not the adapter's reader): the k at every batch is the export's ``runs``."""
    module = engines.adapter(engine)
    newest = module.VERSIONS[-1].name
    agreed = 0
    for method in module.METHODS:
        for case in suite.cases():
            best, steps, limit = suite.schedule_of(case)
            result = engine_config.export(
                engine, best, steps, limit, method=method, draft_path="models/draft", version=newest
            )
            exported = result.exported
            if exported.config is None:
                continue
            assert engine_reading.READERS[engine](exported, limit) == exported.runs, (method, case.describe())
            agreed += 1
    assert agreed >= 300, agreed
