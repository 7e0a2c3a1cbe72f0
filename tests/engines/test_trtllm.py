"""TensorRT-LLM's adapter: every export read back as TensorRT-LLM reads it, its rules held to hand-written
configs, and its reports recovering a known p.

Rules cite NVIDIA/TensorRT-LLM as the adapter names them (``app/model/engines/trtllm/``):
tensorrt_llm/llmapi/llm_args.py @ 0004396720054f (validators), _torch/speculative/utils.py
get_draft_len_for_batch_size (PR #10860), the Drafter's lookup (PR #8194), PR #18210 (eagle_choices removed).
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from app.model import engines
from app.model.engines.base import ConfigRuleError, Exported
from app.model.engines.trtllm import ADAPTER as trtllm
from app.model.engines.trtllm import versions as trtllm_versions
from app.model.live import engine_config, engine_metrics
from tests.engines import suite
from tests.samples import engine_reports

NEWEST = engines.version("trtllm")
OLDEST = engines.version("trtllm", "2025-10")


def _yaml(config: dict[str, Any], max_batch_size: int = 64) -> Exported:
    document = {"max_batch_size": max_batch_size, "speculative_config": config}
    return Exported(document, [], yaml.safe_dump(document))


@pytest.mark.parametrize("version", [version.name for version in engines.versions("trtllm")])
@pytest.mark.parametrize("method", [None, "Eagle3", "NGram"])
def test_every_setup_reads_back_to_the_schedule_or_says_where_not(version: str, method: str | None) -> None:
    checked = [suite.check_export("trtllm", case, version=version, method=method) for case in suite.cases()]
    assert len(checked) >= 48
    assert sum(item["batches"] for item in checked) > 1_000


def test_the_new_key_meaning_expresses_a_falling_schedule_exactly() -> None:
    best = [4] * 10 + [3] * 20 + [2] * 30 + [1] * 4
    result = engine_config.export("trtllm", best, [], len(best), draft_path="d")
    schedule = result.exported.config["speculative_config"]["draft_len_schedule"]  # type: ignore[index]
    assert schedule == {10: 4, 30: 3, 60: 2, 64: 1}
    assert list(result.exported.runs) == best and result.exported.differs_at == ()
    assert "max_concurrency" not in result.exported.config["speculative_config"]  # type: ignore[index]
    old = engine_config.export("trtllm", best, [], len(best), draft_path="d", version="2025-10")
    assert old.exported.config["speculative_config"]["draft_len_schedule"] == {1: 4, 11: 3, 31: 2, 61: 1}  # type: ignore[index]
    assert list(old.exported.runs) == best


def test_speculation_that_starts_after_batch_one_cannot_be_expressed_so_it_is_left_off_and_said() -> None:
    best = [0, 0, 3, 3, 2]
    result = engine_config.export("trtllm", best, [], 5, draft_path="d")
    assert result.exported.config is None
    assert any("cannot turn speculation on above a batch where it is off" in note for note in result.exported.notes)
    # NGram's Drafter lookup (last key <= batch, 0 below the first) can: it starts at batch 3
    ngram = engine_config.export("trtllm", best, [], 5, method="NGram")
    assert ngram.exported.config["speculative_config"]["draft_len_schedule"] == {3: 3, 5: 2}  # type: ignore[index]
    assert list(ngram.exported.runs) == best


def test_k_that_rises_above_the_first_range_is_clipped_and_said() -> None:
    result = engine_config.export("trtllm", [2, 2, 4, 4], [], 4, draft_path="d")
    assert list(result.exported.runs) == [2, 2, 2, 2] and result.exported.differs_at == (3, 4)


def test_trees_static_before_pr_18210_dynamic_after() -> None:
    # a static tree (eagle_choices) drafts to the tree's depth at every batch: one k, whatever the schedule said
    depth = _tree().depth
    assert suite.check_tree("trtllm", 10, version="2026-03", method="Eagle3") == [depth] * 16
    static = engine_config.export(
        "trtllm", [3] * 8, [], 8, tree=_tree(), method="Eagle3", draft_path="d", version="2026-03"
    )
    assert "eagle_choices" in static.exported.config["speculative_config"]  # type: ignore[index]
    dynamic = engine_config.export("trtllm", [3] * 8, [], 8, tree=_tree(), method="Eagle3", draft_path="d")
    config = dynamic.exported.config["speculative_config"]  # type: ignore[index]
    assert "eagle_choices" not in config and config["use_dynamic_tree"] is True
    trtllm.read_config(dynamic.exported, NEWEST, 8)


def _tree() -> Any:
    from app.model.arithmetic import trees

    return trees.best_first_tree(suite.TREE_ACCEPTANCE, 10)


# --- TensorRT-LLM's rules on hand-written configs --------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message", "version"),
    [
        # llm_args.py: DecodingBaseConfig model_validator
        (
            {
                "decoding_type": "Draft_Target",
                "speculative_model": "d",
                "max_draft_len": 4,
                "max_concurrency": 8,
                "draft_len_schedule": {8: 4},
            },
            "mutually exclusive",
            "2026-09",
        ),
        # draft_len_schedule validator: the smallest key's value is max_draft_len, no value above it
        (
            {
                "decoding_type": "Draft_Target",
                "speculative_model": "d",
                "max_draft_len": 4,
                "draft_len_schedule": {4: 3},
            },
            "must equal max_draft_len",
            "2026-09",
        ),
        (
            {
                "decoding_type": "Draft_Target",
                "speculative_model": "d",
                "max_draft_len": 4,
                "draft_len_schedule": {4: 4, 8: 5},
            },
            "<= max_draft_len",
            "2026-09",
        ),
        (
            {
                "decoding_type": "Draft_Target",
                "speculative_model": "d",
                "max_draft_len": 4,
                "draft_len_schedule": {0: 4},
            },
            ">= 1",
            "2026-09",
        ),
        # before PR #10860: key 1 required
        (
            {
                "decoding_type": "Draft_Target",
                "speculative_model": "d",
                "max_draft_len": 4,
                "draft_len_schedule": {4: 4},
            },
            "include batch_size=1",
            "2025-10",
        ),
        # DraftTargetDecodingConfig validators
        ({"decoding_type": "Draft_Target", "max_draft_len": 4}, "speculative_model must be specified", "2026-09"),
        ({"decoding_type": "Draft_Target", "speculative_model": "d", "max_draft_len": 0}, "must be > 0", "2026-09"),
        # StrictBaseModel
        (
            {"decoding_type": "Draft_Target", "speculative_model": "d", "max_draft_len": 4, "draft_max": 4},
            "unknown keys",
            "2026-09",
        ),
        # PR #18210: eagle_choices removed
        (
            {"decoding_type": "Eagle3", "speculative_model": "d", "max_draft_len": 1, "eagle_choices": [[0]]},
            "unknown keys",
            "2026-09",
        ),
        ({"decoding_type": "DraftTarget", "speculative_model": "d", "max_draft_len": 4}, "decoding_type", "2026-09"),
        (
            {"decoding_type": "Eagle3", "speculative_model": "d", "max_draft_len": 2, "use_dynamic_tree": True},
            "dynamic_tree_max_topK",
            "2026-09",
        ),
        (
            {
                "decoding_type": "Eagle3",
                "speculative_model": "d",
                "max_draft_len": 2,
                "use_dynamic_tree": True,
                "dynamic_tree_max_topK": 2,
                "max_total_draft_tokens": 9,
            },
            "max_total_draft_tokens",
            "2026-09",
        ),
    ],
)
def test_trtllm_refuses_what_its_source_refuses(config: dict[str, Any], message: str, version: str) -> None:
    with pytest.raises(ConfigRuleError, match=message):
        trtllm.read_config(_yaml(config), engines.version("trtllm", version), 16)


def test_the_one_model_lookup_is_the_docstring_example() -> None:
    # _torch/speculative/utils.py docstring: {4:4, 8:2, 32:1} -> 1-4: 4, 5-8: 2, 9-32: 1, 33+: 0
    config = {
        "decoding_type": "Eagle3",
        "speculative_model": "d",
        "max_draft_len": 4,
        "draft_len_schedule": {4: 4, 8: 2, 32: 1},
    }
    runs = trtllm.read_config(_yaml(config), NEWEST, 40)
    assert runs[:4] == [4] * 4 and runs[4:8] == [2] * 4 and runs[8:32] == [1] * 24 and runs[32:] == [0] * 8


def test_the_drafter_lookup_is_its_own_test() -> None:
    # tests test_draft_len_schedule.py (NGram): {1:5, 4:4, 5:3, 6:2, 7:1} -> 5,5,5,4,3,2,1
    config = {"decoding_type": "NGram", "max_draft_len": 5, "draft_len_schedule": {1: 5, 4: 4, 5: 3, 6: 2, 7: 1}}
    assert trtllm.read_config(_yaml(config), NEWEST, 9) == [5, 5, 5, 4, 3, 2, 1, 1, 1]


def test_max_concurrency_alone_is_a_schedule_of_one_key() -> None:
    config = {"decoding_type": "Eagle3", "speculative_model": "d", "max_draft_len": 3, "max_concurrency": 4}
    assert trtllm.read_config(_yaml(config), NEWEST, 6) == [3, 3, 3, 3, 0, 0]


# --- Reports --------------------------------------------------------------------------------------


@pytest.mark.parametrize("format_name", ["trtllm-metrics", "trtllm-iteration-stats"])
def test_reports_recover_p(format_name: str) -> None:
    text = engine_reports.example_report(format_name, 0.65, 3, 5000, seed=7)
    _, measurements = engine_metrics.read_measurements(text)
    calibrated = engine_metrics.calibrate_measurement(measurements[0], 0.1, 8)
    assert calibrated.interval.low is not None and calibrated.interval.high is not None
    assert calibrated.interval.low <= 0.65 <= calibrated.interval.high


def test_per_position_counters_of_drafts_of_several_lengths_give_the_mix_and_recover_p() -> None:
    import numpy as np

    rng = np.random.default_rng(3)
    drafted = [0.0] * 4
    accepted = [0.0] * 4
    for length, count in ((4, 8000), (2, 12000)):
        draws = np.minimum(rng.geometric(0.3, size=count) - 1, length)
        for i in range(length):
            drafted[i] += count
            accepted[i] += float((draws > i).sum())
    lines = [
        f'trtllm_spec_decode_drafted_tokens_total{{model_name="m",token_position="{i}"}} {v}'
        for i, v in enumerate(drafted)
    ]
    lines += [
        f'trtllm_spec_decode_accepted_tokens_total{{model_name="m",token_position="{i}"}} {v}'
        for i, v in enumerate(accepted)
    ]
    _, (measurement,) = engine_metrics.read_measurements("\n".join(lines) + "\n")
    assert measurement.draft_lengths == (2, 4)
    calibrated = engine_metrics.calibrate_measurement(measurement, 0.1, 8)
    assert calibrated.interval.low is not None and calibrated.interval.high is not None
    assert calibrated.interval.low <= 0.7 <= calibrated.interval.high


def test_a_scrape_with_only_the_iteration_counters_names_what_is_missing() -> None:
    text = 'trtllm_spec_decode_num_draft_tokens_total{model_name="m"} 100\n'
    with pytest.raises(engine_metrics.EngineFormatError, match=r"TensorRT-LLM: missing .*token_position"):
        engine_metrics.read_measurements(text)


def _schedule_stats(iterations: list[tuple[int, int]], p: float, seed: int) -> str:
    """Iteration stats as py_executor.py counts them (NVIDIA/TensorRT-LLM @ 9521caf4696c, the stored commit read):
    numDraftTokens sums each request's draft length, numRequestsWithDraftTokens counts the requests that drafted."""
    import json

    import numpy as np

    rng = np.random.default_rng(seed)
    items = []
    for index, (batch, length) in enumerate(iterations):
        draws = np.minimum(rng.geometric(1.0 - p, size=batch) - 1, length)
        spec = {
            "numDraftTokens": batch * length,
            "numAcceptedTokens": int(draws.sum()),
            "numRequestsWithDraftTokens": batch,
        }
        items.append({"iter": index, "numActiveRequests": batch, "specDecodingStats": spec})
    return json.dumps(items)


def test_iteration_stats_under_a_schedule_read_k_per_iteration_and_never_round_a_mean() -> None:
    # a schedule running k = 3 at batch 2 and k = 2 at batch 8 (true p = 0.65): the mean draft length is 2.2, which
    # rounded up gave k = 3 by luck and k = 2 on other mixes; each iteration's whole draft length is read instead
    text = _schedule_stats([(2, 3)] * 1500 + [(8, 2)] * 1500, 0.65, 11)
    _, (measurement,) = engine_metrics.read_measurements(text)
    assert measurement.k == 3 and measurement.draft_lengths == (2, 3)
    calibrated = engine_metrics.calibrate_measurement(measurement, 0.1, 8)
    assert calibrated.interval.low is not None and calibrated.interval.high is not None
    assert calibrated.interval.low <= 0.65 <= calibrated.interval.high


def test_iteration_stats_whose_requests_drafted_different_lengths_ask_for_k() -> None:
    import json

    text = json.dumps(
        [{"specDecodingStats": {"numDraftTokens": 5, "numAcceptedTokens": 3, "numRequestsWithDraftTokens": 2}}] * 40
    )
    with pytest.raises(engine_metrics.EngineFormatError, match="never guessed from a mean"):
        engine_metrics.read_measurements(text)
    _, (given,) = engine_metrics.read_measurements(text, k=3, draft_lengths=(2, 3))
    assert given.k == 3


def test_ngram_max_concurrency_drafts_up_to_it_and_not_above() -> None:
    # drafter.py @ 83ab45a50d16 should_use_spec_decode: num_effective_requests (the requests, capped by
    # max_batch_size and the token cap) <= self.max_concurrency; @ 1ff19bbc84ad, older: len(requests) <= it
    config = {"decoding_type": "NGram", "max_draft_len": 5, "max_concurrency": 3}
    assert trtllm.read_config(_yaml(config), NEWEST, 5) == [5, 5, 5, 0, 0]
    assert trtllm.read_config(_yaml(config), OLDEST, 5) == [5, 5, 5, 0, 0]


def test_dspark_runs_one_draft_length_and_its_export_says_so() -> None:
    # interface.py @ 00b6d5a25c30: DSpark is not in support_dynamic_draft_len, so no schedule is applied
    result = engine_config.export("trtllm", [4, 4, 2, 2, 0, 0], [], 6, batch=3, method="DSpark", draft_path="d")
    config = result.exported.config
    assert config is not None and "draft_len_schedule" not in config["speculative_config"]
    assert config["speculative_config"]["max_draft_len"] == 2
    assert result.exported.differs_at == (1, 2, 5, 6)
    off = engine_config.export("trtllm", [4, 4, 2, 2, 0, 0], [], 6, batch=6, method="DSpark", draft_path="d")
    assert off.exported.config is None and any("does not pay at your batch 6" in n for n in off.exported.notes)


@pytest.mark.parametrize(
    "extra",
    [
        {"decoding_type": "Eagle3", "speculative_model": "d", "eagle3_one_model": True},
        {"decoding_type": "MTP", "mtp_eagle_one_model": False, "begin_thinking_phase_token": 1},
        {"decoding_type": "MTP", "end_thinking_phase_token": 2},
        {"decoding_type": "DSpark", "speculative_model": "d", "attention_backend": "VANILLA"},
    ],
)
def test_valid_keys_of_llm_args_are_taken(extra: dict[str, Any]) -> None:
    # llm_args.py @ 0004396720054f: EagleDecodingConfig.eagle3_one_model, MTPDecodingConfig.mtp_eagle_one_model,
    # begin/end_thinking_phase_token, DSparkDecodingConfig.attention_backend
    assert trtllm.read_config(_yaml({"max_draft_len": 3, **extra}), NEWEST, 2) == [3, 3]


# The two-model path: utils.py @ 011d0933dcb5 get_spec_drafter gives EAGLE3 and MTP_EAGLE a ModelDrafter, built with the
# config's draft_len_schedule (model_drafter.py @ 029c15cbff10), whose lookup (drafter.py: the largest key <= batch)
# the executor applies; interface.py @ 00b6d5a25c30 support_dynamic_draft_len leaving them out keeps them off the
# one-model lookup only.  llm_args.py @ 0004396720054f (2026-09) ignores the switches and sets them back to true.
TWO_MODEL_SCHEDULE = {1: 3, 3: 2, 5: 0}
MIDDLE = engines.version("trtllm", "2026-03")


def test_two_model_eagle3_runs_the_drafters_lookup_where_the_path_exists() -> None:
    config = {"decoding_type": "Eagle3", "speculative_model": "d", "max_draft_len": 3}
    scheduled = {**config, "draft_len_schedule": TWO_MODEL_SCHEDULE}
    two_model = _yaml({**scheduled, "eagle3_one_model": False})
    assert trtllm.read_config(two_model, MIDDLE, 6) == [3, 3, 2, 2, 0, 0]
    assert trtllm.read_config(_yaml(scheduled), MIDDLE, 6) == [3, 2, 2, 0, 0, 0]  # the one-model path
    assert trtllm.read_config(two_model, NEWEST, 6) == [3, 2, 2, 0, 0, 0]  # false ignored: one-model
    assert trtllm.read_config(two_model, OLDEST, 6) == [3, 3, 2, 2, 0, 0]  # 2025-10: the Drafter's lookup throughout
    # max_concurrency alone: both paths draft up to it and not above
    capped = _yaml({**config, "eagle3_one_model": False, "max_concurrency": 2})
    assert trtllm.read_config(capped, MIDDLE, 4) == [3, 3, 0, 0]


def test_two_model_mtp_depends_on_the_checkpoint_and_says_so() -> None:
    # MTPDecodingConfig.spec_dec_mode: MTP_EAGLE (two-model) only for a one-layer checkpoint without use_mtp_vanilla
    config = {"decoding_type": "MTP", "max_draft_len": 3, "draft_len_schedule": TWO_MODEL_SCHEDULE}
    with pytest.raises(ConfigRuleError, match=r"checkpoint's MTP layer count.*differ at batches 2, 4"):
        trtllm.read_config(_yaml({**config, "mtp_eagle_one_model": False}), MIDDLE, 6)
    vanilla = _yaml({**config, "mtp_eagle_one_model": False, "use_mtp_vanilla": True})
    assert trtllm.read_config(vanilla, MIDDLE, 6) == [3, 2, 2, 0, 0, 0]
    assert trtllm.read_config(_yaml({**config, "mtp_eagle_one_model": False}), NEWEST, 6) == [3, 2, 2, 0, 0, 0]
    # without a schedule both paths run max_draft_len: nothing depends on the checkpoint
    plain = {"decoding_type": "MTP", "max_draft_len": 3, "mtp_eagle_one_model": False}
    assert trtllm.read_config(_yaml(plain), MIDDLE, 3) == [3, 3, 3]


@pytest.mark.parametrize("method", ["Eagle3", "MTP"])
def test_the_writer_writes_the_one_model_path_and_says_what_the_two_model_switch_would_do(method: str) -> None:
    # 2025-10's one-model path runs no schedule at all: test_the_one_model_path_before_pr_10860_runs_max_draft_len
    for version, warned in (("2026-03", True), ("2026-09", False)):
        result = engine_config.export(
            "trtllm", [3, 3, 2, 2, 0, 0], [], 6, method=method, draft_path="d", version=version
        ).exported
        assert result.config is not None
        spec = result.config["speculative_config"]
        assert "eagle3_one_model" not in spec and "mtp_eagle_one_model" not in spec
        assert any("two-model Drafter" in note for note in result.notes) == warned, version
        # read back as TensorRT-LLM reads it (the one-model path, the switch at its default)
        assert trtllm.read_config(result, engines.version("trtllm", version), 6) == [3, 3, 2, 2, 0, 0]


# Before PR #10860 only a Drafter runs draft_len_schedule: py_executor.py _prepare_and_schedule_batch (PR #8194's
# branch; the stored version's commit is not named by the store) sets the draft length from it only `if self.drafter
# is not None`, and get_spec_drafter gives a Drafter to NGram, Draft_Target and the two-model path only.  PR #8194's
# test_draft_len_schedule.py: "Stage 1 covers: NGramDrafter ..., ModelDrafter (2-model) ...; Not covered in Stage 1:
# ChainDrafter/Eagle3 static loops".
ONE_MODEL_SCHEDULE = {1: 3, 3: 2, 5: 0}


@pytest.mark.parametrize("method", ["Eagle3", "MTP", "PARD"])
def test_the_one_model_path_before_pr_10860_runs_max_draft_len(method: str) -> None:
    config = {"decoding_type": method, "max_draft_len": 3, "draft_len_schedule": ONE_MODEL_SCHEDULE}
    if method != "MTP":
        config["speculative_model"] = "d"
    assert trtllm.read_config(_yaml(config), OLDEST, 6) == [3] * 6  # the schedule validated, then unapplied
    assert trtllm.read_config(_yaml(config), MIDDLE, 6) == [3, 2, 2, 0, 0, 0]  # PR #10860: the one-model lookup
    with pytest.raises(ConfigRuleError, match="include batch_size=1"):  # still validated as PR #8194 validates it
        trtllm.read_config(_yaml({**config, "draft_len_schedule": {3: 3}}), OLDEST, 6)
    # the writer promises no schedule there: one max_draft_len, the schedule's k at the user's batch, and says why
    for batch, k in ((1, 3), (4, 2)):
        result = engine_config.export(
            "trtllm", [3, 3, 2, 2, 0, 0], [], 6, batch=batch, method=method, draft_path="d", version="2025-10"
        ).exported
        assert result.config is not None
        spec = result.config["speculative_config"]
        assert "draft_len_schedule" not in spec and spec["max_draft_len"] == k
        assert list(result.runs) == [k] * 6 and trtllm.read_config(result, OLDEST, 6) == [k] * 6
        assert result.differs_at == tuple(b for b, best in enumerate([3, 3, 2, 2, 0, 0], start=1) if best != k)
        assert any("one-model path, which applies no draft_len_schedule" in note for note in result.notes)
        assert any("two-model Drafter" in note for note in result.notes) == (method != "PARD")
    off = engine_config.export(
        "trtllm", [3, 3, 2, 2, 0, 0], [], 6, batch=6, method=method, draft_path="d", version="2025-10"
    )
    assert off.exported.config is None and any("does not pay at your batch 6" in n for n in off.exported.notes)


def test_the_drafter_path_before_pr_10860_runs_the_schedule() -> None:
    # NGram's NGramDrafter and Draft_Target's ModelDrafter: the Stage 1 test's expected_mapping {1: 5, 2: 5, 3: 5,
    # 4: 4, 5: 3, 6: 2, 7: 1} for both drafter types (a key holds from its batch on)
    schedule = {1: 5, 4: 4, 5: 3, 6: 2, 7: 1}
    for config in (
        {"decoding_type": "NGram", "max_draft_len": 5, "draft_len_schedule": schedule},
        {"decoding_type": "Draft_Target", "speculative_model": "d", "max_draft_len": 5, "draft_len_schedule": schedule},
    ):
        assert trtllm.read_config(_yaml(config), OLDEST, 7) == [5, 5, 5, 4, 3, 2, 1]
    written = engine_config.export("trtllm", [3, 3, 2, 2, 0, 0], [], 6, draft_path="d", version="2025-10").exported
    assert written.config["speculative_config"]["draft_len_schedule"] == {1: 3, 3: 2, 5: 0}  # type: ignore[index]
    assert list(written.runs) == [3, 3, 2, 2, 0, 0] and written.differs_at == ()


def test_a_two_model_mtp_switch_before_pr_10860_depends_on_the_checkpoint_and_says_so() -> None:
    # one MTP layer: MTP_EAGLE, a ModelDrafter running the schedule; more: vanilla MTP, one-model, no schedule
    config = {"decoding_type": "MTP", "max_draft_len": 3, "draft_len_schedule": ONE_MODEL_SCHEDULE}
    with pytest.raises(ConfigRuleError, match=r"max_draft_len at every batch.*differ at batches 3-6"):
        trtllm.read_config(_yaml({**config, "mtp_eagle_one_model": False}), OLDEST, 6)
    vanilla = _yaml({**config, "mtp_eagle_one_model": False, "use_mtp_vanilla": True})
    assert trtllm.read_config(vanilla, OLDEST, 6) == [3] * 6


def test_vanilla_mtp_runs_the_schedule_until_the_watched_opt_out_merges() -> None:
    # interface.py @ 00b6d5a25c30 support_dynamic_draft_len: is_mtp_one_model() covers vanilla MTP, so it runs the
    # one-model lookup; PR #16888's branch (interface.py and test_min_runtime_draft_len.py @ 011d0933dcb5,
    # test_vanilla_mtp_opts_out_of_dynamic_draft_len) takes it out, and is open: recorded, not followed
    config = {"decoding_type": "MTP", "max_draft_len": 3, "use_mtp_vanilla": True, "draft_len_schedule": {2: 3, 4: 1}}
    assert trtllm.read_config(_yaml(config), NEWEST, 6) == [3, 3, 1, 1, 0, 0]
    (watched,) = trtllm_versions.WATCHED
    assert not watched.merged and "vanilla MTP" in watched.change
    assert "test_vanilla_mtp_opts_out_of_dynamic_draft_len" in watched.checked and "00b6d5a25c30" in watched.checked
    written = engine_config.export("trtllm", [3, 3, 1, 1, 0, 0], [], 6, method="MTP").exported
    assert written.config["speculative_config"]["draft_len_schedule"] == {2: 3, 4: 1, 6: 0}  # type: ignore[index]
    assert trtllm.read_config(written, NEWEST, 6) == [3, 3, 1, 1, 0, 0]


def test_auto_runs_the_engines_own_ngram_choice() -> None:
    # AutoDecodingConfig -> auto_heuristic.py @ f00d21a3c099 suggest_spec_config(max_batch_size)
    assert trtllm.read_config(_yaml({"decoding_type": "AUTO"}, max_batch_size=4), NEWEST, 4) == [5, 5, 5, 5]
    assert trtllm.read_config(_yaml({"decoding_type": "AUTO"}, max_batch_size=40), NEWEST, 34)[-3:] == [3, 0, 0]


def test_the_watched_floor_above_the_last_key_is_recorded_and_not_followed() -> None:
    # PR #16888 is open: get_draft_len_for_batch_size (PR #10860) gives 0 above the last key and keeps a 0 tier at 0
    (watched,) = trtllm_versions.WATCHED
    assert watched.pr == 16888 and not watched.merged and "011d0933dcb5" in watched.checked
    for method, model in (("Eagle3", "d"), ("MTP", None)):
        written = engine_config.export("trtllm", [3, 3, 0, 0], [], 4, method=method, draft_path=model).exported
        assert written.config is not None
        assert written.config["speculative_config"]["draft_len_schedule"] == {2: 3, 4: 0}
        assert trtllm.read_config(written, NEWEST, 4) == [3, 3, 0, 0]
    beyond = {"decoding_type": "Eagle3", "speculative_model": "d", "max_draft_len": 3, "draft_len_schedule": {2: 3}}
    document = {"max_batch_size": 4, "speculative_config": beyond}
    assert trtllm.read_config(Exported(document, [], yaml.safe_dump(document)), NEWEST, 4) == [3, 3, 0, 0]


def test_choosing_auto_is_refused_naming_why_and_what_to_pick() -> None:
    # AUTO is read (it runs suggest_spec_config's NGram), but the product cannot write its schedule into it
    with pytest.raises(ValueError, match=r"AUTO chooses its own drafter.*pick one of Draft_Target"):
        engine_config.export("trtllm", [3, 3], [], 2, method="auto")
