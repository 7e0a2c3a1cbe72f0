"""TensorRT-LLM's versions: the sources each was read from and the capabilities it has, set once here."""

from __future__ import annotations

from app.model.engines import base
from app.model.engines.base import SCHEDULE_PER_BATCH

NAME = "trtllm"


TITLE = "TensorRT-LLM"


REPOSITORY = "NVIDIA/TensorRT-LLM"


LLM_ARGS = base.Source(
    REPOSITORY,
    "tensorrt_llm/llmapi/llm_args.py",
    "0004396720054fd8e205cbf616f21f0b57c6b412",
    "DecodingBaseConfig and subclasses, draft_len_schedule validator, max_concurrency exclusion",
)


LLM_ARGS_2025 = base.Source(
    REPOSITORY,
    "tensorrt_llm/llmapi/llm_args.py",
    "PR #8194",
    "draft_len_schedule: key 1 required, from-this-batch keys",
)


SPEC_UTILS = base.Source(
    REPOSITORY,
    "tensorrt_llm/_torch/speculative/utils.py",
    "PR #10860",
    "get_draft_len_for_batch_size: first key >= batch (bisect_left), 0 above the last key",
)


DRAFTER = base.Source(
    REPOSITORY,
    "tensorrt_llm/_torch/speculative/drafter.py",
    "PR #8194",
    "Drafter.get_draft_len_for_batch_size: last key <= batch (bisect_right), NGram and the two-model path",
)


COLLECTOR = base.Source(
    REPOSITORY,
    "tensorrt_llm/metrics/collector.py",
    "050f80de",
    "trtllm_spec_decode_* counters (PR #12545), per token_position (PR #12636)",
)


# The two-model path (eagle3_one_model: false, or mtp_eagle_one_model: false on a one-layer MTP checkpoint):
# interface.py @ 00b6d5a25c30 support_dynamic_draft_len leaves EAGLE3 and MTP_EAGLE out, but that gates only the
# one-model path's runtime draft length and CUDA graphs.  The two-model modes get a ModelDrafter (utils.py
# get_spec_drafter: is_draft_target, is_eagle3, is_mtp_eagle), a Drafter built with the config's draft_len_schedule
# (model_drafter.py), and the executor applies every Drafter's schedule through Drafter.get_draft_len_for_batch_size
# (py_executor.py, the stored version with that branch; PR #8194 "stage 1" brought it for this path): the last key
# <= batch, as for NGram.
TWO_MODEL_DRAFTER = base.Source(
    REPOSITORY,
    "tensorrt_llm/_torch/speculative/utils.py",
    "011d0933dcb5e592f5fa2626beaf42a96324c578",
    "get_spec_drafter: a ModelDrafter for Draft_Target, Eagle3 and MTP-Eagle on the two-model path; with "
    "model_drafter.py @ 029c15cbff10 (ModelDrafter passes draft_len_schedule to its Drafter), the schedule runs by the "
    "Drafter's lookup, not support_dynamic_draft_len's",
)


# llm_args.py @ 0004396720054f EagleDecodingConfig.validate_eagle_config and MTPDecodingConfig
# log_two_model_deprecation_warning: eagle3_one_model / mtp_eagle_one_model false "is deprecated and ignored;
# falling back to" true (PR #18721): the one-model path and its lookup
TWO_MODEL_IGNORED = base.Source(
    REPOSITORY,
    "tensorrt_llm/llmapi/llm_args.py",
    "0004396720054fd8e205cbf616f21f0b57c6b412",
    "eagle3_one_model and mtp_eagle_one_model false are ignored, set back to true: the one-model path",
)


# Before PR #10860 only a Drafter runs the schedule.  py_executor.py _prepare_and_schedule_batch (the stored version
# with PR #8194's branch, which sets the draft length from draft_len_schedule only `if self.drafter is not None`;
# commit not named by the store) and utils.py get_spec_drafter of the same era (a ModelDrafter for Draft_Target and
# the two-model Eagle3 / MTP-Eagle, an NGramDrafter for NGram, None for every one-model mode; commit not named by
# the store).  PR #8194's own test says so: test_draft_len_schedule.py "Stage 1 covers: NGramDrafter ...,
# ModelDrafter (2-model) ...; Not covered in Stage 1: ChainDrafter/Eagle3 static loops" (the stored version with
# that docstring; commit not named by the store), and PR #10860's description: it "adds support for dynamic draft
# length ... in the one-model speculative decoding path".
STAGE_ONE_EXECUTOR = base.Source(
    REPOSITORY,
    "tensorrt_llm/_torch/pyexecutor/py_executor.py",
    "PR #8194",
    "draft_len_schedule applied only through the Drafter (NGram, Draft_Target, the two-model path); the one-model "
    "path has none and runs max_draft_len at every batch (PR #10860 brought the schedule to it)",
)


STAGE_ONE_TEST = base.Source(
    REPOSITORY,
    "tests/unittest/_torch/speculative/test_draft_len_schedule.py",
    "PR #8194",
    'Stage 1 covers NGramDrafter and ModelDrafter (2-model); "Not covered in Stage 1: ChainDrafter/Eagle3 static '
    'loops"',
)


EAGLE_CHOICES_REMOVED = base.Source(
    REPOSITORY, "tensorrt_llm/llmapi/llm_args.py", "PR #18210", "eagle_choices removed; dynamic tree only"
)


# Capabilities, set once per version below.
UPPER_BOUND_KEYS = "schedule keys are upper bounds"  # PR #10860: a key holds up to its batch (one-model path)


LATE_FIRST_KEY = "schedule may start above batch 1"  # PR #10860: key 1 no longer required


STATIC_TREES = "eagle_choices"  # static trees; removed by PR #18210 (dynamic trees only)


TWO_MODEL = "two-model path"  # eagle3_one_model / mtp_eagle_one_model false run it; PR #18721 made them ignored


ONE_MODEL_SCHEDULE = "one-model path runs draft_len_schedule"  # PR #10860; before it the one-model path ignores it


VERSIONS = (
    base.EngineVersion(
        "2025-10",
        "2025-10",
        "PR #8194 draft_len_schedule (a key holds from that batch on; key 1 required) for the Drafter path only; "
        "eagle_choices",
        (LLM_ARGS_2025, DRAFTER, TWO_MODEL_DRAFTER, STAGE_ONE_EXECUTOR, STAGE_ONE_TEST),
        "schedule keys are the first batch of each range (NGram, Draft_Target, the two-model path); the one-model "
        "path (Eagle3, MTP, ...) runs one max_draft_len",
        capabilities=frozenset({SCHEDULE_PER_BATCH, STATIC_TREES, TWO_MODEL}),
    ),
    base.EngineVersion(
        "2026-03",
        "2026-03",
        "PR #10860 keys are inclusive upper bounds on the one-model path, 0 above the last; max_concurrency "
        "exclusive; PR #12545 / #12636 Prometheus counters",
        (LLM_ARGS, SPEC_UTILS, DRAFTER, TWO_MODEL_DRAFTER, COLLECTOR),
        "schedule keys are the last batch of each range (the first, on the two-model path)",
        capabilities=frozenset(
            {ONE_MODEL_SCHEDULE, UPPER_BOUND_KEYS, LATE_FIRST_KEY, SCHEDULE_PER_BATCH, STATIC_TREES, TWO_MODEL}
        ),
    ),
    base.EngineVersion(
        "2026-09",
        "2026-09",
        "PR #18210 eagle_choices removed (dynamic trees only); PR #18721 two-model path removed",
        (LLM_ARGS, SPEC_UTILS, DRAFTER, COLLECTOR, EAGLE_CHOICES_REMOVED, TWO_MODEL_IGNORED),
        "as 2026-03, without static trees",
        capabilities=frozenset({ONE_MODEL_SCHEDULE, UPPER_BOUND_KEYS, LATE_FIRST_KEY, SCHEDULE_PER_BATCH}),
    ),
)


ALIASES: dict[str, str] = {}


# Open changes that would change the format (none followed until merged).
WATCHED = (
    base.Watched(
        16888,
        "the draft length above the last draft_len_schedule key (and every scheduled one) floored at "
        "min_runtime_draft_len instead of 0; and vanilla MTP (use_mtp_vanilla, or a checkpoint of more than one MTP "
        "layer) taken out of support_dynamic_draft_len, so it would run its static max_draft_len at every batch",
        merged=False,
        checked="open in the PR thread; the adapter's get_draft_len_for_batch_size (PR #10860) returns 0 above the "
        "last key; a stored _torch/speculative/utils.py @ 011d0933dcb5 takes min_draft_len and floors every tier "
        "with it (the PR's branch), and llm_args.py @ 000439672005 is the DecodingBaseConfig read.  The same "
        "branch's interface.py @ 011d0933dcb5 support_dynamic_draft_len leaves vanilla MTP out (\"Vanilla MTP is "
        'deliberately excluded") and its tests/unittest/_torch/speculative/hw_agnostic/test_min_runtime_draft_len.py '
        "@ 011d0933dcb5 test_vanilla_mtp_opts_out_of_dynamic_draft_len asserts `not "
        "SpeculativeDecodingMode.MTP.support_dynamic_draft_len()`; the merged interface.py @ 00b6d5a25c30 (the "
        "version the adapter reads) keeps it in (is_mtp_one_model covers MTP and MTP_EAGLE_ONE_MODEL), so vanilla MTP "
        "runs its schedule wherever the one-model path runs one (2026-03 on)",
    ),
)
