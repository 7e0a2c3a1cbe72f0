"""What each engine itself says it does with a config: the conformance suite's oracle, never the adapter.

Each entry is a config as an engine's own source, docstring, test or validator gives it (or as the real
llama-server was seen to take it), the k that engine runs at each batch by that same source, or the refusal
it answers with, cited by repository, file and commit (or the change that set it).  Every registered engine
version needs at least one entry: the suite fails for one without (:func:`tests.engines.suite.uncovered`).
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


def _flags(*flags: str) -> Exported:
    return Exported({}, list(flags), "")


VLLM_UTILS = "vllm-project/vllm vllm/v1/spec_decode/dynamic/utils.py @ a6f6bb1d3c17"
TRTLLM_UTILS = "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/utils.py (PR #10860)"

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
    # the drafter's own test (tests/.../test_draft_len_schedule.py, NGram): a key holds from its batch on
    Oracle(
        "trtllm",
        ("2025-10", "2026-03", "2026-09"),
        "engine's test",
        "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/drafter.py (PR #8194, bisect_right) and its "
        "test_draft_len_schedule.py",
        _trtllm({"decoding_type": "NGram", "max_draft_len": 5, "draft_len_schedule": {1: 5, 4: 4, 5: 3, 6: 2, 7: 1}}),
        9,
        runs=(5, 5, 5, 4, 3, 2, 1, 1, 1),
    ),
    # drafter.py should_use_spec_decode (@ 83ab45a50d16, the stored commit read; 1ff19bbc per issue 23):
    # "return num_effective_requests <= self.max_concurrency": NGram drafts up to max_concurrency, none above
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
    # speculative_hook.py: with topk 1, num_draft_tokens is forced to steps + 1, so the k run is the steps
    Oracle(
        "sglang",
        ("2026-03", "2026-05"),
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
        ("2026-05",),
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
        ("2026-05",),
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
        ("2026-05",),
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
        ("2026-05",),
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
        ("2026-05",),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/speculative_hook.py (_handle_uno, the stored version; "
        "fields/spec.py @ 015c872628e3 lists UNO)",
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
        ("2026-05",),
        "validator",
        "sgl-project/sglang python/sglang/srt/arg_groups/speculative_hook.py (_handle_uno, the stored version; "
        "fields/spec.py @ 015c872628e3 lists UNO)",
        _flags("--speculative-algorithm", "UNO", "--uno-lora-path", "a", "--speculative-num-draft-tokens", "5"),
        2,
        runs=(4, 4),
    ),
    # server_args' argument parser refuses an unknown flag
    Oracle(
        "sglang",
        ("2026-03", "2026-05"),
        "validator",
        "sgl-project/sglang python/sglang/srt/server_args.py (argparse)",
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
        "ggml-org/llama.cpp common/arg.cpp as of b11434 (PR #27694: --spec-draft-sampling), run live",
        _flags("-md", "d.gguf", "--spec-draft-sampling", "probabilistic"),
        2,
        runs=(0, 0),
    ),
    Oracle(
        "llamacpp",
        ("b11434",),
        "live llama-server",
        "ggml-org/llama.cpp common/arg.cpp as of b11434 (PR #27694: --spec-draft-sampling), run live",
        _flags("-md", "d.gguf", "--spec-draft-sampling", "sampled"),
        1,
        refuses="must be one of: greedy, probabilistic",
    ),
)
