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
    "Drafter.get_draft_len_for_batch_size: last key <= batch (bisect_right), NGram",
)


COLLECTOR = base.Source(
    REPOSITORY,
    "tensorrt_llm/metrics/collector.py",
    "050f80de",
    "trtllm_spec_decode_* counters (PR #12545), per token_position (PR #12636)",
)


EAGLE_CHOICES_REMOVED = base.Source(
    REPOSITORY, "tensorrt_llm/llmapi/llm_args.py", "PR #18210", "eagle_choices removed; dynamic tree only"
)


# Capabilities, set once per version below.
UPPER_BOUND_KEYS = "schedule keys are upper bounds"  # PR #10860: a key holds up to its batch (one-model path)


LATE_FIRST_KEY = "schedule may start above batch 1"  # PR #10860: key 1 no longer required


STATIC_TREES = "eagle_choices"  # static trees; removed by PR #18210 (dynamic trees only)


VERSIONS = (
    base.EngineVersion(
        "2025-10",
        "2025-10",
        "PR #8194 draft_len_schedule (a key holds from that batch on; key 1 required); eagle_choices",
        (LLM_ARGS_2025, DRAFTER),
        "schedule keys are the first batch of each range",
        capabilities=frozenset({SCHEDULE_PER_BATCH, STATIC_TREES}),
    ),
    base.EngineVersion(
        "2026-03",
        "2026-03",
        "PR #10860 keys are inclusive upper bounds on the one-model path, 0 above the last; max_concurrency "
        "exclusive; PR #12545 / #12636 Prometheus counters",
        (LLM_ARGS, SPEC_UTILS, DRAFTER, COLLECTOR),
        "schedule keys are the last batch of each range",
        capabilities=frozenset({UPPER_BOUND_KEYS, LATE_FIRST_KEY, SCHEDULE_PER_BATCH, STATIC_TREES}),
    ),
    base.EngineVersion(
        "2026-09",
        "2026-09",
        "PR #18210 eagle_choices removed (dynamic trees only); PR #18721 two-model path removed",
        (LLM_ARGS, SPEC_UTILS, DRAFTER, COLLECTOR, EAGLE_CHOICES_REMOVED),
        "as 2026-03, without static trees",
        capabilities=frozenset({UPPER_BOUND_KEYS, LATE_FIRST_KEY, SCHEDULE_PER_BATCH}),
    ),
)


ALIASES: dict[str, str] = {}


# Open changes that would change the format (none followed until merged).
WATCHED = (
    base.Watched(
        16888,
        "the draft length above the last draft_len_schedule key (and every scheduled one) floored at "
        "min_runtime_draft_len instead of 0",
        merged=False,
        checked="open in the PR thread; the adapter's get_draft_len_for_batch_size (PR #10860) returns 0 above the "
        "last key; a stored _torch/speculative/utils.py @ 011d0933dcb5 takes min_draft_len and floors every tier "
        "with it (the PR's branch), and llm_args.py @ 000439672005 is the DecodingBaseConfig read",
    ),
)
