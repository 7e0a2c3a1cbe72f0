"""vLLM's adapter: every export read back as vLLM reads it, vLLM's rules held to hand-written configs, and
its reports recovering a known p.

Rules cite vllm-project/vllm at the commits the adapter names (``app/model/engines/vllm/``):
speculative.py @ 002e77c1f0ef (SpeculativeConfig), dynamic/utils.py @ a6f6bb1d3c17 (the schedule).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from app.model import engines
from app.model.engines.base import SCHEDULE_PER_BATCH, ConfigRuleError, Exported
from app.model.engines.vllm import ADAPTER as vllm
from app.model.engines.vllm import config as vllm_config
from app.model.engines.vllm import versions as vllm_versions
from app.model.live import engine_config, engine_metrics
from tests.engines import suite
from tests.samples import engine_reports

NEWEST = engines.version("vllm")
# the registry's versions, by whether one config holds a draft length per batch size
PER_BATCH = [version.name for version in engines.versions("vllm") if version.can(SCHEDULE_PER_BATCH)]
ONE_K = [version.name for version in engines.versions("vllm") if not version.can(SCHEDULE_PER_BATCH)]


def _flags(config: dict[str, object], max_num_seqs: int = 64) -> Exported:
    return Exported(config, ["--speculative-config", json.dumps(config), "--max-num-seqs", str(max_num_seqs)], "")


@pytest.mark.parametrize("version", PER_BATCH)
@pytest.mark.parametrize("method", [None, "draft_model", "EAGLE3", "ngram"])
def test_every_setup_reads_back_to_the_schedule(version: str, method: str | None) -> None:
    checked = [suite.check_export("vllm", case, version=version, method=method) for case in suite.cases()]
    assert len(checked) >= 48
    # vLLM's list of inclusive ranges expresses any schedule: no batch differs
    assert sum(item["differ"] for item in checked) == 0
    assert sum(item["batches"] for item in checked) > 1_000


@pytest.mark.parametrize("version", ONE_K)
def test_a_version_without_a_k_per_batch_runs_one_k_and_says_where_it_differs(version: str) -> None:
    totals = [suite.check_export("vllm", case, version=version) for case in suite.cases()]
    assert any(item["differ"] for item in totals)


def test_a_tree_is_a_static_tree_only_before_tree_attention_was_removed() -> None:
    assert set(suite.check_tree("vllm", 10, version="2025-10")) == {10}
    chain = engine_config.export("vllm", [4] * 8, [], 8, tree=None, draft_path="d", version="2026-08")
    assert "speculative_token_tree" not in (chain.exported.config or {})


def test_without_a_model_or_a_model_free_method_the_config_says_what_to_fill_in() -> None:
    result = engine_config.export("vllm", [3] * 4, [], 4)
    assert result.exported.placeholders == (vllm.PLACEHOLDER_MODEL,)
    assert any("fill in model" in note for note in result.exported.notes)
    with pytest.raises(ConfigRuleError, match="not a path or hub name"):
        vllm.read_config(result.exported, NEWEST, 4)
    ngram = engine_config.export("vllm", [3] * 4, [], 4, method="ngram")
    assert ngram.exported.placeholders == () and "model" not in (ngram.exported.config or {})
    assert ngram.exported.runs == (3, 3, 3, 3)


def test_method_is_written_in_vllms_literal_spelling() -> None:
    result = engine_config.export("vllm", [3] * 4, [], 4, method="EAGLE", draft_path="org/eagle-head")
    assert (result.exported.config or {})["method"] == "eagle"
    with pytest.raises(ValueError, match="method must be one of"):
        engine_config.export("vllm", [3] * 4, [], 4, method="tree-magic")


# --- vLLM's rules, each on a config written by hand -----------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        # speculative.py: @config is a pydantic dataclass with extra="forbid" (PR #31541)
        ({"model": "d", "num_speculative_tokens": 3, "draft_max": 3}, "unknown keys"),
        # PR #42121 removed speculative_token_tree
        ({"model": "d", "num_speculative_tokens": 2, "speculative_token_tree": "[(0,), (0, 0)]"}, "unknown keys"),
        # SpeculativeMethod is a Literal of lower-case names
        ({"model": "d", "method": "EAGLE", "num_speculative_tokens": 3}, "literals"),
        # post-init: draft_model, eagle, ... without model
        ({"method": "eagle", "num_speculative_tokens": 3}, "without speculative model"),
        ({"num_speculative_tokens": 3}, "without speculative model"),
        # Field(gt=0)
        ({"model": "d", "num_speculative_tokens": 0}, "greater than zero"),
        ({"model": "d"}, "must be provided"),
        # dynamic/utils.py validate_and_normalize_dynamic_sd_schedule
        ({"model": "d", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": []}, "must not be empty"),
        (
            {"model": "d", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": {"1": 3}},
            "non-empty list",
        ),
        (
            {"model": "d", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[2, 8, 3]]},
            "must start at 1",
        ),
        (
            {
                "model": "d",
                "num_speculative_tokens": 3,
                "num_speculative_tokens_per_batch_size": [[1, 8, 3], [8, 16, 2]],
            },
            "non-overlapping",
        ),
        (
            {"model": "d", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[1, 8, -1]]},
            ">= 0",
        ),
        (
            {"model": "d", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[4, 2, 1]]},
            "start must be <= end",
        ),
        ({"model": "d", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": {"1-8": 3}}, "list"),
        ({"model": "d", "num_speculative_tokens": 3, "tensor_parallel_size": 2}, "unknown keys|tensor_parallel"),
        # parallel_drafting: bool, read by pydantic's lax bool
        ({"model": "d", "num_speculative_tokens": 3, "parallel_drafting": "maybe"}, "valid boolean"),
        ({"model": "d", "num_speculative_tokens": 3, "parallel_drafting": 2}, "valid boolean"),
    ],
)
def test_vllm_refuses_what_its_source_refuses(config: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigRuleError, match=message):
        vllm.read_config(_flags(config), NEWEST, 16)


def test_the_schedule_lookup_fills_gaps_and_the_tail_from_the_range_before() -> None:
    # dynamic/utils.py build_dynamic_sd_schedule_lookup: [(1,16,3),(32,128,2)] maps 17-31 to 3 (its own comment)
    config = {
        "model": "d",
        "num_speculative_tokens": 3,
        "num_speculative_tokens_per_batch_size": [[1, 16, 3], [32, 128, 2]],
    }
    runs = vllm.read_config(_flags(config, 256), NEWEST, 200)
    assert runs[16] == 3 and runs[30] == 3 and runs[31] == 2 and runs[199] == 2
    # k above num_speculative_tokens is clamped to it
    clamped = {
        "model": "d",
        "num_speculative_tokens": 2,
        "num_speculative_tokens_per_batch_size": [[1, 4, 5], [5, 8, 0]],
    }
    assert vllm.read_config(_flags(clamped), NEWEST, 8) == [2, 2, 2, 2, 0, 0, 0, 0]


def test_model_free_methods_need_no_model() -> None:
    for method in ("ngram", "suffix", "mtp", "deepseek_mtp"):
        config = {"method": method, "num_speculative_tokens": 2}
        assert vllm.read_config(_flags(config), NEWEST, 4) == [2, 2, 2, 2]


def test_an_unknown_version_is_refused_with_the_known_ones() -> None:
    with pytest.raises(engines.UnknownVersionError) as error:
        engines.version("vllm", "0.1")
    assert "2026-08" in str(error.value) and "2025-10" in str(error.value)
    assert engines.version("vllm", "0.29").name == "2026-08"


# --- Reports --------------------------------------------------------------------------------------


def _mixed_scrape(p: float, lengths: dict[int, int], k_max: int, seed: int) -> str:
    """/metrics after drafts of several lengths, counted as vllm/v1/spec_decode/metrics.py counts them:
    one draft per request per step, draft tokens += that draft's length, per_pos[i] += 1 for i < accepted,
    per-position series for 0..num_speculative_tokens - 1."""
    rng = np.random.default_rng(seed)
    drafts = tokens = accepted = 0
    per_position = [0] * k_max
    for length, count in lengths.items():
        draws = np.minimum(rng.geometric(1 - p, size=count) - 1, length)
        drafts += count
        tokens += count * length
        accepted += int(draws.sum())
        for i in range(length):
            per_position[i] += int((draws > i).sum())
    base = 'engine="0",model_name="m"'
    lines = [
        f"vllm:spec_decode_num_drafts_total{{{base}}} {drafts}",
        f"vllm:spec_decode_num_draft_tokens_total{{{base}}} {tokens}",
        f"vllm:spec_decode_num_accepted_tokens_total{{{base}}} {accepted}",
    ]
    lines += [
        f'vllm:spec_decode_num_accepted_tokens_per_pos_total{{{base},position="{i}"}} {count}'
        for i, count in enumerate(per_position)
    ]
    return "\n".join(lines) + "\n"


def _calibrate(text: str, **options: object) -> engine_metrics.EngineCalibration:
    _, measurements = engine_metrics.read_measurements(text, **options)  # type: ignore[arg-type]
    return engine_metrics.calibrate_measurement(measurements[0], 0.1, 8)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_scrape_from_a_schedule_of_k_4_and_2_recovers_p(seed: int) -> None:
    text = _mixed_scrape(0.7, {4: 20_000, 2: 30_000}, 4, seed)
    known = _calibrate(text, draft_lengths=(4, 2))
    assert known.interval.low is not None and known.interval.high is not None
    assert known.interval.low <= 0.7 <= known.interval.high
    unknown = _calibrate(text)
    assert unknown.interval.low is not None and unknown.interval.high is not None
    assert unknown.interval.low <= 0.7 <= unknown.interval.high
    assert unknown.interval.high - unknown.interval.low > known.interval.high - known.interval.low
    # taking every draft as 4 long (the estimator before) lands well below 0.7, outside the interval
    _, (measurement,) = engine_metrics.read_measurements(text)
    positions, drafts = measurement.per_position, measurement.drafts or 0.0
    every_draft_full = sum(positions) / (sum(positions) + drafts - positions[-1])
    assert every_draft_full < 0.66 < known.interval.low


def test_the_per_request_report_recovers_p_and_names_its_version() -> None:
    text = engine_reports.example_report("vllm-request", 0.75, 5, 4000, seed=4)
    assert engine_metrics.detect_format(text) == "vllm-request"
    calibrated = _calibrate(text)
    assert calibrated.measurement.version == "2026-08" and calibrated.measurement.k == 5
    assert calibrated.interval.low is not None and calibrated.interval.high is not None
    assert calibrated.interval.low <= 0.75 <= calibrated.interval.high


def test_a_per_request_report_without_its_histogram_names_what_is_missing() -> None:
    body = json.dumps({"metrics": {"speculative_decoding": {"num_spec_steps": 3, "num_draft_tokens": 9}}})
    with pytest.raises(engine_metrics.EngineFormatError, match=r"vLLM: .*acceptance_histogram"):
        engine_metrics.read_measurements(body)


def test_data_parallel_above_one_gets_the_k_for_the_users_batch() -> None:
    # vllm/config/vllm.py @ 000fc94b754f _maybe_disable_dynamic_sd_for_data_parallel drops the schedule at DP > 1
    best = [4, 4, 2, 2, 0, 0]
    one = engine_config.export("vllm", best, [], 6, batch=3, draft_path="d").exported
    assert one.config is not None and "num_speculative_tokens_per_batch_size" in one.config
    assert any("_maybe_disable_dynamic_sd_for_data_parallel" in note for note in one.notes)
    two = engine_config.export("vllm", best, [], 6, batch=3, draft_path="d", data_parallel=2).exported
    assert two.config is not None and "num_speculative_tokens_per_batch_size" not in two.config
    assert two.config["num_speculative_tokens"] == 2 and "--data-parallel-size" in two.flags
    assert vllm.read_config(two, engines.version("vllm"), 6) == [2] * 6
    assert two.differs_at == (1, 2, 5, 6)
    off = engine_config.export("vllm", best, [], 6, batch=5, draft_path="d", data_parallel=2).exported
    assert off.config is None and any("does not pay at your batch 5" in note for note in off.notes)


def test_releases_032_and_033_have_an_alias() -> None:
    assert engines.version("vllm", "0.32").name == "2026-08"
    assert engines.version("vllm", "0.33").name == "2026-08"


def test_a_version_with_one_draft_length_writes_none_where_it_does_not_pay_at_the_users_batch() -> None:
    # SpeculativeConfig before PR #32374 (speculative.py @ f19b16d95e43): one num_speculative_tokens for every batch
    best = [0, 0, 3, 3]
    off = engine_config.export("vllm", best, [], 4, batch=1, draft_path="d", version="2025-10").exported
    assert off.config is None and any("does not pay at your batch 1" in note for note in off.notes)
    on = engine_config.export("vllm", best, [], 4, batch=3, draft_path="d", version="2025-10").exported
    assert on.config is not None and on.config["num_speculative_tokens"] == 3 and on.differs_at == (1, 2)


def test_the_watched_rename_to_speculative_token_schedule_is_recorded_and_not_followed() -> None:
    # PR #48944 is open: SpeculativeConfig (speculative.py @ 002e77c1f0ef) forbids a key it does not declare, and
    # validate_and_normalize_dynamic_sd_schedule (dynamic/utils.py @ a6f6bb1d3c17) takes 3-item entries alone
    (watched,) = vllm_versions.WATCHED
    assert watched.pr == 48944 and not watched.merged and "002e77c1f0ef" in watched.checked

    def flags(config: dict[str, object]) -> Exported:
        return Exported(config, ["--speculative-config", json.dumps(config), "--max-num-seqs", "4"], "")

    renamed = {"model": "d", "num_speculative_tokens": 3, "speculative_token_schedule": [[1, 4, 3]]}
    with pytest.raises(ConfigRuleError, match="unknown keys"):
        vllm.read_config(flags(renamed), NEWEST, 4)
    five = {"model": "d", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[1, 4, 1, 4096, 3]]}
    with pytest.raises(ConfigRuleError, match="3-item"):
        vllm.read_config(flags(five), NEWEST, 4)
    written = engine_config.export("vllm", [3, 3, 2, 2], [], 4, draft_path="d").exported
    assert written.config is not None and "speculative_token_schedule" not in written.config
    assert written.config["num_speculative_tokens_per_batch_size"] == [[1, 2, 3], [3, 4, 2]]


# --- drafting all k in one pass (speculative.py @ 002e77c1f0ef: parallel_drafting; dflash and dspark set it) -------


@pytest.mark.parametrize("method", ["eagle", "eagle3", "draft_model", None])
def test_a_parallel_draft_asks_for_parallel_drafting_where_vllm_takes_it(method: str | None) -> None:
    result = engine_config.export(
        "vllm", [6, 6, 5, 4], [], 4, method=method, draft_path="org/p-eagle", parallel_draft=True
    )
    config = result.exported.config or {}
    assert config["parallel_drafting"] is True
    assert result.exported.runs == (6, 6, 5, 4)  # read back as vLLM reads it
    assert vllm_config.drafts_in_one_pass(config)
    chain = engine_config.export("vllm", [6, 6, 5, 4], [], 4, method=method, draft_path="org/eagle")
    assert "parallel_drafting" not in (chain.exported.config or {})
    assert not vllm_config.drafts_in_one_pass(chain.exported.config or {})


@pytest.mark.parametrize("method", ["dflash", "dspark"])
def test_a_block_drafter_drafts_in_one_pass_without_the_flag(method: str) -> None:
    result = engine_config.export("vllm", [7] * 4, [], 4, method=method, draft_path="org/block", parallel_draft=True)
    config = result.exported.config or {}
    assert "parallel_drafting" not in config and vllm_config.drafts_in_one_pass(config)
    assert not any("one pass" in note for note in result.exported.notes)


def test_a_parallel_draft_vllm_cannot_run_is_said() -> None:
    ngram = engine_config.export("vllm", [3] * 4, [], 4, method="ngram", parallel_draft=True)
    assert "parallel_drafting" not in (ngram.exported.config or {})
    assert any("one pass, which vLLM's ngram does not run" in note for note in ngram.exported.notes)
    # before 2026-06 SpeculativeConfig had no such field (and ignored unknown keys): not written, and said
    older = engine_config.export("vllm", [3] * 4, [], 4, method="eagle3", draft_path="d", version="2025-10",
                                 parallel_draft=True)  # fmt: skip
    assert "parallel_drafting" not in (older.exported.config or {})
    assert any("does not run at this version" in note for note in older.exported.notes)


@pytest.mark.parametrize(("flag", "expected"), [(True, True), ("yes", True), (1, True), ("off", False), (0, False)])
def test_parallel_drafting_reads_as_pydantic_reads_a_bool(flag: object, expected: bool) -> None:
    config = {"model": "d", "method": "eagle3", "num_speculative_tokens": 3, "parallel_drafting": flag}
    assert vllm.read_config(_flags(config), NEWEST, 4) == [3] * 4
    assert vllm_config.drafts_in_one_pass(config) is expected
