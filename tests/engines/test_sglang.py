"""SGLang's adapter: every export read back as SGLang's ServerArgs and adaptive router read it, its rules held
to hand-written flags, and its reports recovering a known p.

Rules cite sgl-project/sglang as the adapter names them (``app/model/engines/sglang/``):
arg_groups/speculative_hook.py @ 004c82e07d87, speculative/adaptive_spec_params.py @ 015c872628e3,
speculative/adaptive_step_router.py @ a12239f6ac74.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from app.model import engines
from app.model.arithmetic import trees
from app.model.engines.base import ConfigRuleError, Exported
from app.model.engines.sglang import ADAPTER as sglang
from app.model.engines.sglang import config as sglang_config
from app.model.engines.sglang import versions as sglang_versions
from app.model.live import engine_config, engine_metrics
from tests.engines import engine_reading, suite
from tests.samples import engine_reports

NEWEST = engines.version("sglang")
ADAPTIVE_TIERS = sglang_versions.ADAPTIVE_TIERS


@pytest.mark.parametrize("version", [version.name for version in engines.versions("sglang")])
@pytest.mark.parametrize("method", ["EAGLE", "EAGLE3", None])
def test_every_setup_reads_back_to_the_schedule_or_says_where_not(version: str, method: str | None) -> None:
    checked = [suite.check_export("sglang", case, version=version, method=method) for case in suite.cases()]
    assert len(checked) >= 48
    if engines.version("sglang", version).can(ADAPTIVE_TIERS) and method is not None:
        # the adaptive config, one candidate per tier and every tier's end a CUDA-graph batch, is exact
        assert sum(item["differ"] for item in checked) == 0


def test_a_separate_draft_model_is_standalone_with_one_k_at_the_batch_named() -> None:
    result = engine_config.export("sglang", [5, 5, 3, 3], [], 4, batch=3, draft_path="models/draft")
    flags = result.exported.flags
    assert flags[flags.index("--speculative-algorithm") + 1] == "STANDALONE"
    assert flags[flags.index("--speculative-num-steps") + 1] == "3"
    assert flags[flags.index("--speculative-draft-model-path") + 1] == "models/draft"
    assert result.exported.differs_at == (1, 2)


def test_the_adaptive_config_file_is_written_and_named() -> None:
    result = engine_config.export("sglang", [4] * 8 + [2] * 24 + [0] * 8, [], 40, method="EAGLE", draft_path="d")
    exported = result.exported
    assert json.loads(exported.files["adaptive.json"]) == {
        "1": {"candidate_steps": [4]},
        "9": {"candidate_steps": [2]},
        "33": {"candidate_steps": [0]},
    }
    assert "--speculative-adaptive" in exported.flags and list(exported.runs) == [4] * 8 + [2] * 24 + [0] * 8


def test_without_a_draft_path_the_flags_say_what_to_fill_in() -> None:
    result = engine_config.export("sglang", [3, 3], [], 2)
    assert result.exported.placeholders and any("fill in" in note for note in result.exported.notes)


# --- SGLang's rules on hand-written flags ----------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "files", "message"),
    [
        (["--speculative-algorithm", "MAGIC"], {}, "Unknown speculative algorithm"),
        # speculative_hook.py: topk or draft tokens without steps (a bare assert)
        (
            [
                "--speculative-algorithm",
                "EAGLE",
                "--speculative-eagle-topk",
                "1",
                "--speculative-draft-model-path",
                "d",
            ],
            {},
            "without steps",
        ),
        # steps without topk reaches `None > 1`
        (
            ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3", "--speculative-draft-model-path", "d"],
            {},
            "without topk",
        ),
        (
            ["--speculative-algorithm", "STANDALONE", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1"],
            {},
            "draft",
        ),
        # the draft pool: num_draft_tokens - 1 <= topk + (steps - 1) * topk^2
        (
            [
                "--speculative-algorithm",
                "EAGLE",
                "--speculative-num-steps",
                "2",
                "--speculative-eagle-topk",
                "2",
                "--speculative-num-draft-tokens",
                "8",
                "--speculative-draft-model-path",
                "d",
            ],
            {},
            "draft pool",
        ),
        # adaptive_spec_params.py: a JSON object with an integer-string key
        (
            [
                "--speculative-algorithm",
                "EAGLE",
                "--speculative-num-steps",
                "3",
                "--speculative-eagle-topk",
                "1",
                "--speculative-draft-model-path",
                "d",
                "--speculative-adaptive",
                "--speculative-adaptive-config",
                "a.json",
            ],
            {"a.json": json.dumps({"candidate_steps": [1, 3, 7]})},
            "integer-string BS key",
        ),
        (
            [
                "--speculative-algorithm",
                "EAGLE",
                "--speculative-num-steps",
                "3",
                "--speculative-eagle-topk",
                "1",
                "--speculative-draft-model-path",
                "d",
                "--speculative-adaptive",
                "--speculative-adaptive-config",
                "a.json",
            ],
            {"a.json": json.dumps({"1": {"candidate_steps": [1, -1]}})},
            "non-negative",
        ),
        (
            [
                "--speculative-algorithm",
                "EAGLE",
                "--speculative-num-steps",
                "2",
                "--speculative-eagle-topk",
                "1",
                "--speculative-draft-model-path",
                "d",
                "--speculative-adaptive",
                "--speculative-adaptive-config",
                "a.json",
            ],
            {"a.json": json.dumps({"1": {"candidate_steps": [1, 3]}})},
            "not in the adaptive config",
        ),
        (["--speculative-algorithm", "EAGLE", "--speculative-num-stepz", "3"], {}, "unrecognized"),
    ],
)
def test_sglang_refuses_what_its_source_refuses(flags: list[str], files: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigRuleError, match=message):
        sglang.read_config(Exported({}, flags, "", files=files), NEWEST, 4)


def test_the_router_pads_a_batch_to_a_captured_graph_before_choosing_its_tier() -> None:
    # adaptive_step_router.py: batch 5 pads to the graph batch 8, whose tier is "8"
    tiers = {1: [5], 8: [2]}
    assert sglang_config._tier_step(tiers, [1, 8], [1, 2, 4, 8, 16], 5, 5) == 2
    assert sglang_config._tier_step(tiers, [1, 8], [1, 2, 4, 5, 8, 16], 5, 5) == 5


def test_adaptive_is_ignored_for_standalone_so_one_k_runs() -> None:
    flags = [
        "--speculative-algorithm",
        "STANDALONE",
        "--speculative-num-steps",
        "3",
        "--speculative-eagle-topk",
        "1",
        "--speculative-draft-model-path",
        "d",
        "--speculative-adaptive",
    ]
    assert sglang.read_config(Exported({}, flags, ""), NEWEST, 3) == [3, 3, 3]


# --- Reports --------------------------------------------------------------------------------------


def test_the_current_gauges_and_verify_counter_recover_p() -> None:
    text = engine_reports.example_report("sglang-metrics", 0.8, 4, 5000, seed=2)
    _, (measurement,) = engine_metrics.read_measurements(text)
    assert measurement.k == 4 and measurement.version == "2026-05" and measurement.drafts == 5000
    calibrated = engine_metrics.calibrate_measurement(measurement, 0.1, 8)
    assert calibrated.interval.low is not None and calibrated.interval.high is not None
    assert calibrated.interval.low <= 0.8 <= calibrated.interval.high


def test_in_adaptive_mode_p_uses_the_steps_running_not_the_startup_width() -> None:
    # a tier at 2 steps runs while the server started at 5: the rate gauge divides by 5 - 1 + ... (startup);
    # spec_num_steps says 2, and the accept length is exact
    length = 1 + 0.6 + 0.36  # E[T] at p = 0.6, k = 2
    text = (
        f'sglang:spec_accept_length{{model_name="m"}} {length}\n'
        f'sglang:spec_accept_rate{{model_name="m"}} {(length - 1) / 5}\n'
        'sglang:spec_num_steps{model_name="m"} 2\n'
        'sglang:spec_num_draft_tokens{model_name="m"} 3\n'
    )
    _, (measurement,) = engine_metrics.read_measurements(text)
    assert measurement.k == 2
    calibrated = engine_metrics.calibrate_measurement(measurement, 0.1, 8)
    assert calibrated.result.acceptance == pytest.approx(0.6, abs=1e-9)
    assert any("startup draft width" in note for note in calibrated.notes)


def test_a_static_config_is_chosen_at_the_users_batch_and_left_off_where_it_does_not_pay() -> None:
    # speculative_hook.py @ 004c82e07d87: STANDALONE takes one --speculative-num-steps for every batch (no adaptive
    # tiers, adaptive_unsupported_reason); issue 23's Mixtral case: the schedule is off at batches 1 and 2
    best = [0, 0, 4, 4, 3, 3]
    off = engine_config.export("sglang", best, [], 6, batch=1, draft_path="models/draft").exported
    assert off.config is None and off.flags == []
    assert any("does not pay at your batch 1" in note for note in off.notes)
    assert any("3-6" in note for note in off.notes)
    on = engine_config.export("sglang", best, [], 6, batch=5, draft_path="models/draft").exported
    assert on.flags[on.flags.index("--speculative-num-steps") + 1] == "3"
    assert on.differs_at == (1, 2, 3, 4)
    assert any("batches 1-4" in note for note in on.notes)


def test_dflash_dspark_and_uno_are_sglang_builtins_but_not_in_the_older_version() -> None:
    flags = ["--speculative-algorithm", "DSPARK", "--speculative-dspark-block-size", "3"]
    flags += ["--speculative-draft-model-path", "d"]
    assert sglang.read_config(Exported({}, flags, ""), NEWEST, 2) == [3, 3]
    with pytest.raises(ConfigRuleError, match="Unknown speculative algorithm"):
        sglang.read_config(Exported({}, flags, ""), engines.version("sglang", "2026-03"), 2)
    with pytest.raises(ConfigRuleError, match="dflash-block-size"):
        dflash = ["--speculative-algorithm", "DFLASH", "--speculative-draft-model-path", "d"]
        sglang.read_config(Exported({}, dflash, ""), NEWEST, 2)


def test_per_request_counts_are_read_exactly_with_their_histogram() -> None:
    # TokenizerManager._calculate_spec_decoding_metrics under PR #24081's names (sglang 0.5.23; the stored
    # tokenizer_manager_components/spec_decoding_meta.py @ 9155cf0e6eff is older: spec_accepted_drafts,
    # spec_proposed_drafts, spec_accept_histogram): spec_num_proposed_drafts = spec_verify_ct *
    # (speculative_num_draft_tokens - 1) and spec_correct_drafts_histogram[j] counts the verifications that
    # accepted exactly j draft tokens
    meta = {
        "spec_verify_ct": 10,
        "spec_num_correct_drafts": 18,
        "spec_num_proposed_drafts": 30,
        "spec_accept_length": 2.8,
        "spec_accept_rate": 18 / 30,
        "spec_correct_drafts_histogram": [2, 1, 4, 3],
    }
    generate = json.dumps([{"text": "a", "meta_info": meta}, {"text": "b", "meta_info": meta}])
    name, (measurement,) = engine_metrics.read_measurements(generate)
    assert name == "sglang-request" and measurement.k == 3
    assert (measurement.drafts, measurement.accepted, measurement.draft_tokens) == (20, 36, 60)
    assert measurement.per_position == (16, 14, 6)  # verifications accepting more than 0, 1, 2 drafts
    openai = json.dumps({"id": "x", "choices": [], "sglext": {"spec_tokens_details": meta}})
    _, (details,) = engine_metrics.read_measurements(openai)
    assert details.per_position == (8, 7, 3)
    calibrated = engine_metrics.calibrate_measurement(measurement, 0.1, 8)
    assert calibrated.interval.low is not None and calibrated.interval.high is not None
    assert calibrated.interval.low <= calibrated.result.acceptance <= calibrated.interval.high
    broken = dict(meta, spec_correct_drafts_histogram=[2, 1, 4, 2])
    with pytest.raises(engine_metrics.EngineFormatError, match="histogram"):
        engine_metrics.read_measurements(json.dumps([{"meta_info": broken}]))


CAPTURED_OPENAI = Path(__file__).parent / "captured" / "sglang-0.5.23-openai.json"


def test_openai_responses_built_by_sglangs_own_code_are_read_as_it_counted() -> None:
    # tests/engines/capture_sglang.py builds them with the sglang 0.5.23 package's own protocol models and
    # utils.process_spec_tokens_details_from_ret (PR #33518), at the response level as serving_completions.py and
    # serving_chat.py put it: one object for n = 1, a list in choice order for n > 1; the first request's counts are
    # the real DSpark response of PR #33518's thread (block size 5)
    chat, completions, chunk, plain = json.loads(CAPTURED_OPENAI.read_text())
    real = chat["sglext"]["spec_tokens_details"]
    assert (real["spec_verify_ct"], real["spec_num_correct_drafts"], real["spec_num_proposed_drafts"]) == (43, 63, 215)
    assert isinstance(completions["sglext"]["spec_tokens_details"], list) and chunk["choices"] == []
    expected = [
        # (verifications, drafted, accepted, per position: verifications accepting more than 0..4 drafts)
        (43, 215, 63, (32, 18, 7, 3, 3)),
        (63, 315, 94, (46, 27, 12, 5, 4)),
        (20, 100, 31, (14, 9, 5, 2, 1)),
    ]
    for response, (cycles, drafted, accepted, per_position) in zip((chat, completions, chunk), expected, strict=True):
        name, (measurement,) = engine_metrics.read_measurements(json.dumps(response))
        assert name == "sglang-request" and measurement.version == "2026-08"
        assert (measurement.drafts, measurement.draft_tokens, measurement.accepted) == (cycles, drafted, accepted)
        assert measurement.k == 5 and measurement.per_position == per_position
        calibrated = engine_metrics.calibrate_measurement(measurement, 0.1, 8)
        assert calibrated.interval.low is not None and calibrated.interval.high is not None
        assert calibrated.interval.low <= calibrated.result.acceptance <= calibrated.interval.high
    # a streamed response: the sglext chunk among the others, as JSON lines
    lines = "\n".join(json.dumps(item) for item in (plain, chunk))
    _, (streamed,) = engine_metrics.read_measurements(lines)
    assert streamed.drafts == 20
    # without return_spec_tokens_details SGLang sends no sglext: there is nothing to read, and the format's own
    # description says what to send
    assert "sglext" not in plain
    with pytest.raises(engine_metrics.EngineFormatError):
        engine_metrics.read_measurements(json.dumps(plain))
    (described,) = [fmt for fmt in sglang.REPORTS if fmt.name == "sglang-request"]
    assert '"return_spec_tokens_details": true' in described.description and "2026-08" in described.versions


CAPTURED_META = Path(__file__).parent / "captured" / "sglang-0.5.10-0.5.12-meta-info.json"


@pytest.mark.parametrize(
    ("release", "names", "version"),
    [
        ("0.5.10", ("spec_accept_token_num", "spec_draft_token_num", "spec_accept_histogram"), "2026-03"),
        ("0.5.11", ("spec_accepted_drafts", "spec_proposed_drafts", "spec_accept_histogram"), "2026-03"),
        # 0.5.12's flags are still 2026-03's, but its meta_info is 2026-05's: the names cannot tell it from 0.5.13
        ("0.5.12", ("spec_num_correct_drafts", "spec_num_proposed_drafts", "spec_correct_drafts_histogram"), "2026-05"),
    ],
)
def test_meta_info_of_each_release_is_read_under_its_own_names(
    release: str, names: tuple[str, str, str], version: str
) -> None:
    # tests/engines/capture_sglang_meta.py filled these by TokenizerManager._calculate_spec_decoding_metrics as each
    # release's package has it (tokenizer_manager.py of sglang 0.5.10, 0.5.11, 0.5.12; 0.5.11's names are those of the
    # stored tokenizer_manager_components/spec_decoding_meta.py @ 9155cf0e6eff), on the same counts: k = 3, 10 and 25
    # verifications, 18 and 40 accepted draft tokens, histograms [2, 1, 4, 3] and [5, 6, 8, 6]
    responses = json.loads(CAPTURED_META.read_text())[release]
    assert all(name in response["meta_info"] for response in responses for name in names)
    name, (measurement,) = engine_metrics.read_measurements(json.dumps(responses))
    assert name == "sglang-request" and measurement.version == version and measurement.k == 3
    assert (measurement.drafts, measurement.draft_tokens, measurement.accepted) == (35, 105, 58)
    assert measurement.per_position == (28, 21, 9)  # verifications accepting more than 0, 1, 2 draft tokens
    assert any(names[0] in note for note in measurement.notes)
    calibrated = engine_metrics.calibrate_measurement(measurement, 0.1, 8)
    assert calibrated.interval.low is not None and calibrated.interval.high is not None
    assert calibrated.interval.low <= calibrated.result.acceptance <= calibrated.interval.high
    # each release's own consistency: its histogram sums to its verifications and its first moment to its accepted
    broken = [dict(responses[0], meta_info=dict(responses[0]["meta_info"], **{names[2]: [2, 1, 4, 2]}))]
    with pytest.raises(engine_metrics.EngineFormatError, match=names[2]):
        engine_metrics.read_measurements(json.dumps(broken))
    (described,) = [fmt for fmt in sglang.REPORTS if fmt.name == "sglang-request"]
    assert all(key in described.description for key in names) and version in described.versions


def test_meta_info_without_any_releases_counts_names_them_all() -> None:
    meta = {"spec_verify_ct": 10, "spec_accept_length": 2.8}
    with pytest.raises(engine_metrics.EngineFormatError) as error:
        engine_metrics.read_measurements(json.dumps([{"meta_info": meta}]))
    for name in ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num", "0.5.10", "0.5.11"):
        assert name in str(error.value)
    half = {"spec_verify_ct": 10, "spec_accept_token_num": 18}
    with pytest.raises(engine_metrics.EngineFormatError, match="spec_draft_token_num"):
        engine_metrics.read_measurements(json.dumps([{"meta_info": half}]))


def test_the_older_names_are_a_cited_source_of_the_older_version() -> None:
    older = engines.version("sglang", "2026-03")
    (cited,) = [source for source in older.sources if source is sglang_versions.REQUEST_META_OLDER]
    assert cited.commit.startswith("9155cf0e6eff") and "spec_accept_token_num" in cited.defines
    assert all(source is not sglang_versions.REQUEST_META_OLDER for source in NEWEST.sources)


def test_the_openai_counts_are_a_cited_source_of_their_own_version() -> None:
    newest = engines.version("sglang")
    cited = [source for source in newest.sources if source.commit == "PR #33518"]
    assert newest.name == "2026-08" and len(cited) == 1
    assert "return_spec_tokens_details" in cited[0].defines and "sglext.spec_tokens_details" in cited[0].defines
    assert all(source.commit != "PR #33518" for source in engines.version("sglang", "2026-05").sources)


def test_per_request_samples_recover_p() -> None:
    text = engine_reports.example_report("sglang-request", 0.7, 4, 4000, seed=5)
    _, (measurement,) = engine_metrics.read_measurements(text)
    calibrated = engine_metrics.calibrate_measurement(measurement, 0.1, 8)
    assert calibrated.interval.low is not None and calibrated.interval.high is not None
    assert calibrated.interval.low <= 0.7 <= calibrated.interval.high


# --- DFLASH, DSPARK and UNO written as SGLang takes them (speculative_hook.py @ 004c82e07d87: _handle_dflash,
# _handle_dspark; _handle_uno in the stored version that has it) and read back --------------------------------------


@pytest.mark.parametrize(
    ("method", "flag", "value"),
    [
        ("DFLASH", "--speculative-dflash-block-size", "4"),  # the verify window: the verified token and 3 drafts
        ("DSPARK", "--speculative-dspark-block-size", "3"),  # gamma: the drafts proposed
        ("UNO", "--speculative-num-draft-tokens", "4"),  # Q, the linear verify width
    ],
)
def test_a_block_drafter_is_written_in_its_own_flag_at_the_users_batch_and_read_back(
    method: str, flag: str, value: str
) -> None:
    result = engine_config.export("sglang", [5, 5, 3, 3, 2], [], 5, batch=3, method=method, draft_path="models/d")
    exported = result.exported
    assert exported.flags[exported.flags.index("--speculative-algorithm") + 1] == method
    assert exported.flags[exported.flags.index(flag) + 1] == value
    assert "--speculative-num-steps" not in exported.flags and "--speculative-eagle-topk" not in exported.flags
    assert sglang.read_config(exported, NEWEST, 5) == [3] * 5
    assert engine_reading.sglang(exported, 5) == (3,) * 5  # SGLang's own reading (speculative_hook.py)
    assert exported.runs == (3,) * 5 and exported.differs_at == (1, 2, 5)
    assert any("batches 1-2, 5" in note for note in exported.notes)


def test_uno_takes_the_draft_path_as_its_lora_and_never_a_draft_model() -> None:
    exported = engine_config.export("sglang", [3, 3], [], 2, method="uno", draft_path="lora/uno").exported
    assert exported.flags[exported.flags.index("--uno-lora-path") + 1] == "lora/uno"
    assert "--speculative-draft-model-path" not in exported.flags
    assert exported.flags[exported.flags.index("--attention-backend") + 1] == "fa3"
    with pytest.raises(ConfigRuleError, match="does not accept --speculative-draft-model-path"):
        sglang.read_config(replace(exported, flags=[*exported.flags, "--speculative-draft-model-path", "d"]), NEWEST, 2)
    with pytest.raises(ConfigRuleError, match="TP=PP=1"):
        sglang.read_config(replace(exported, flags=[*exported.flags, "--tp-size", "2"]), NEWEST, 2)
    unfilled = engine_config.export("sglang", [3, 3], [], 2, method="UNO").exported
    assert unfilled.placeholders and any("--uno-lora-path" in note for note in unfilled.notes)


def test_dflash_without_a_draft_path_says_what_to_fill_in_and_dspark_may_take_the_targets() -> None:
    dflash = engine_config.export("sglang", [3, 3], [], 2, method="DFLASH").exported
    assert dflash.placeholders and any("--speculative-draft-model-path" in note for note in dflash.notes)
    dspark = engine_config.export("sglang", [3, 3], [], 2, method="DSPARK").exported
    assert not dspark.placeholders and "--speculative-draft-model-path" not in dspark.flags
    assert sglang.read_config(dspark, NEWEST, 2) == [3, 3]


def test_a_block_drafter_where_speculation_does_not_pay_at_the_users_batch_writes_no_speculative_flags() -> None:
    exported = engine_config.export("sglang", [3, 0, 0], [], 3, batch=2, method="DFLASH", draft_path="d").exported
    assert exported.config is None and not exported.flags
    assert any("does not pay at your batch 2" in note for note in exported.notes)


def test_the_older_version_and_a_tree_refuse_block_drafters_and_auto_is_named_as_not_sglangs() -> None:
    with pytest.raises(ValueError, match="2026-03 has no DSPARK"):
        engine_config.export("sglang", [3, 3], [], 2, method="DSPARK", draft_path="d", version="2026-03")
    shape = trees.best_first_tree(suite.TREE_ACCEPTANCE, 6)
    with pytest.raises(ValueError, match="no static tree"):
        engine_config.export("sglang", [3, 3], [], 2, tree=shape, method="DFLASH", draft_path="d")
    with pytest.raises(ValueError, match="TensorRT-LLM's decoding type"):
        engine_config.export("sglang", [3, 3], [], 2, method="auto")


def test_the_watched_per_request_stats_flag_is_recorded_and_refused_as_sglang_refuses_it() -> None:
    # PR #34814 is open: arg_groups/fields/spec.py @ 015c872628e3 declares no --speculative-decoding-stats
    (watched,) = sglang_versions.WATCHED
    assert watched.pr == 34814 and not watched.merged and "015c872628e3" in watched.checked
    flags = ["--speculative-algorithm", "EAGLE", "--speculative-num-steps", "3", "--speculative-eagle-topk", "1"]
    flags += ["--speculative-draft-model-path", "d", "--speculative-decoding-stats", "summary"]
    with pytest.raises(ConfigRuleError, match="unrecognized argument --speculative-decoding-stats"):
        sglang.read_config(Exported({}, flags, ""), NEWEST, 2)
