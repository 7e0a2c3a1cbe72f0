"""What the engines' packages own beyond their configs and reports: how each writes a static tree (the plan's
``tree`` answer is written from them) and which files of step times each reads (step-fit asks the registry)."""

from __future__ import annotations

import ast
import json
from types import SimpleNamespace
from typing import Any

import pytest

from app.model import engines
from app.model.arithmetic import trees
from app.model.engines.step_times import StepRow, StepTimeFormat, step_row
from app.model.live import engine_config, step_fit
from app.service import plan
from app.service.regimes import SetupRequest, build_setup

TREE_ACCEPTANCE = (0.6, 0.2, 0.1, 0.05)


def test_the_plans_tree_keys_are_the_engines_own() -> None:
    made = plan.build(
        plan.PlanRequest(engine="vllm", p=0.8, tree_acceptance=TREE_ACCEPTANCE, tree_budget=6),
        build_setup(SetupRequest()),
    )
    tree = made.config_out().tree
    assert tree is not None
    paths = engine_config.tree_paths(trees.best_first_tree(TREE_ACCEPTANCE, 6))
    # the response's fields as they were: vLLM's a Python literal of tuples, TensorRT-LLM's the lists themselves
    assert tree["vllm_speculative_token_tree"] == str([tuple(path) for path in paths])
    assert [list(node) for node in ast.literal_eval(tree["vllm_speculative_token_tree"])] == paths
    assert tree["trtllm_eagle_choices"] == paths
    assert tree["nodes"] == len(paths)
    written = {f"{module.NAME}_{module.TREE.key}" for module in engines.ADAPTERS.values() if module.TREE is not None}
    assert written == {"vllm_speculative_token_tree", "trtllm_eagle_choices"}
    assert set(tree) == {"nodes", "depth", "expected_tokens"} | written


@pytest.mark.parametrize(("engine", "version"), [("vllm", "2025-10"), ("trtllm", "2025-10")])
def test_the_tree_an_engine_is_given_is_the_one_its_writer_puts_in_its_config(engine: str, version: str) -> None:
    module = engines.adapter(engine)
    assert module.TREE is not None
    shape = trees.best_first_tree(TREE_ACCEPTANCE, 6)
    exported = engine_config.export(
        engine, [4] * 16, [], 16, tree=shape, method=None, draft_path="models/draft", version=version
    ).exported
    assert exported.config is not None
    config = exported.config.get("speculative_config", exported.config)
    assert config[module.TREE.key] == module.TREE.write(engine_config.tree_paths(shape))


def test_engines_without_static_trees_say_so() -> None:
    assert engines.adapter("sglang").TREE is None and engines.adapter("llamacpp").TREE is None


def test_every_step_time_format_belongs_to_a_registered_engine() -> None:
    found = engines.step_time_formats()
    assert len({item.name for item in found}) == len(found)
    assert {item.engine for item in found} <= set(engines.ENGINES)
    assert {item.name for item in found} >= {
        "vllm-dynamic-config",
        "sglang-bench-speculative",
        "trtllm-iteration-stats",
    }


def test_a_list_of_objects_goes_to_the_fallback_only_when_no_engine_names_it() -> None:
    iterations = [
        {"iterLatencyMS": 10.0 + batch, "inflightBatchingStats": {"numGenRequests": batch, "numContextRequests": 0}}
        for batch in (1, 2, 4)
    ]
    name, rows = step_fit.read_step_times(json.dumps(iterations))
    assert name == "trtllm-iteration-stats" and [row.batch for row in rows] == [1, 2, 4]
    bench = [{"batch_size": batch, "steps": 0, "step_time": 0.01 * batch} for batch in (1, 2, 4)]
    assert step_fit.read_step_times(json.dumps(bench))[0] == "sglang-bench-speculative"
    with pytest.raises(step_fit.StepFitError, match="neither"):
        step_fit.read_step_times('{"nothing": 1}')


def _toy_rows(payload: Any) -> list[StepRow]:
    return [step_row(item["b"], 1, item["ms"], f"toy {index}") for index, item in enumerate(payload["toy"])]


def test_step_fit_reads_the_files_of_an_engine_registered_later(monkeypatch: pytest.MonkeyPatch) -> None:
    toy = SimpleNamespace(
        NAME="toyserve",
        STEP_TIMES=(
            StepTimeFormat(
                "toyserve-steps", "toyserve", "ToyServe", lambda p: isinstance(p, dict) and "toy" in p, _toy_rows
            ),
        ),
    )
    body = json.dumps({"toy": [{"b": 1, "ms": 5.0}, {"b": 2, "ms": 6.0}, {"b": 4, "ms": 8.0}]})
    with pytest.raises(step_fit.StepFitError, match="neither"):
        step_fit.read_step_times(body)
    monkeypatch.setitem(engines.ADAPTERS, "toyserve", toy)
    name, rows = step_fit.read_step_times(body)
    assert name == "toyserve-steps" and [(row.batch, row.ms) for row in rows] == [(1, 5.0), (2, 6.0), (4, 8.0)]


def test_a_baseline_is_subtracted_only_from_the_formats_whose_package_can() -> None:
    from app.model.live import engine_metrics
    from tests.samples import engine_reports

    takers = sorted(name for name, report in engine_metrics.REPORT_FORMATS.items() if report.subtract_baseline)
    assert takers == ["vllm-metrics", "vllm-metrics-v0"]
    warm = engine_reports.example_report("vllm-metrics", 0.3, 4, 2000, 30)
    later = engine_reports.example_report("vllm-metrics", 0.8, 4, 6000, 31)
    _, (since,) = engine_metrics.read_with_baseline(later, warm)
    assert since.drafts == 4000 and "counts since the baseline scrape" in since.notes
    sglang = engine_reports.example_report("sglang-metrics", 0.8, 4, 3000, 4)
    with pytest.raises(engine_metrics.EngineFormatError, match="from vLLM counters only; this is sglang-metrics"):
        engine_metrics.read_with_baseline(sglang, sglang)
