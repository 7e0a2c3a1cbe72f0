"""SGLang's versions: the sources each was read from and the capabilities it has, set once here."""

from __future__ import annotations

from app.model.engines import base
from app.model.engines.base import SCHEDULE_PER_BATCH

NAME = "sglang"


TITLE = "SGLang"


REPOSITORY = "sgl-project/sglang"


SPEC_FIELDS = base.Source(
    REPOSITORY,
    "python/sglang/srt/arg_groups/fields/spec.py",
    "015c872628e328b530880bcf95ae91222604b225",
    "--speculative-* flags",
)


SPEC_HOOK = base.Source(
    REPOSITORY,
    "python/sglang/srt/arg_groups/speculative_hook.py",
    "004c82e07d876f6e4a0ad6e15325706b0f478f1a",
    "handle_speculative_decoding: algorithms, steps/topk/draft tokens rules",
)


SPEC_HOOK_BLOCKS_SOURCE = base.Source(
    REPOSITORY,
    "python/sglang/srt/arg_groups/speculative_hook.py",
    "004c82e07d876f6e4a0ad6e15325706b0f478f1a",
    "_handle_dflash, _handle_dspark: steps and topk 1, the verify window = the draft + 1; _handle_uno "
    "(--uno-lora-path, Q) read in a later stored version whose commit the store does not name",
)


SPEC_HOOK_BLOCKS = SPEC_HOOK_BLOCKS_SOURCE.cite()


ADAPTIVE_PARAMS = base.Source(
    REPOSITORY,
    "python/sglang/srt/speculative/adaptive_spec_params.py",
    "015c872628e328b530880bcf95ae91222604b225",
    "adaptive config: digit keys, candidate_steps, support gate",
)


ADAPTIVE_ROUTER = base.Source(
    REPOSITORY,
    "python/sglang/srt/speculative/adaptive_step_router.py",
    "a12239f6ac74d804d169ee5d3cfed3c49fa7162c",
    "batch_size_key_for_batch: pad to a CUDA-graph batch, then the largest key <= it",
)


METRICS = base.Source(
    REPOSITORY,
    "python/sglang/srt/observability/metrics_collector.py",
    "016d8605e45876180312e29d6988e1de06562472",
    "spec gauges and sglang:spec_verify_calls_total",
)


SERVER_ARGS_2026_03 = base.Source(
    REPOSITORY, "python/sglang/srt/server_args.py", "PR #21599", "flags; flat adaptive config (superseded)"
)


# Capabilities, set once per version below.
BLOCK_DRAFTERS = "DFLASH, DSPARK and UNO"  # builtins in arg_groups/fields/spec.py @ 015c872628e3


ADAPTIVE_TIERS = "adaptive per-batch tiers"  # PR #24055: --speculative-adaptive-config per batch-size tier


VERSIONS = (
    base.EngineVersion(
        "2026-03",
        "2026-03",
        "static --speculative-* flags; accept rate = length / draft tokens",
        (SERVER_ARGS_2026_03, SPEC_HOOK),
        "one draft length for every batch",
    ),
    base.EngineVersion(
        "2026-05",
        "2026-05",
        "PR #24055 adaptive config per batch-size tier; PR #23530 drafts-only accept rate; PR #25689 "
        "spec_verify_calls_total; PR #25940 spec_num_steps and spec_num_draft_tokens gauges",
        (SPEC_FIELDS, SPEC_HOOK, SPEC_HOOK_BLOCKS_SOURCE, ADAPTIVE_PARAMS, ADAPTIVE_ROUTER, METRICS),
        "a per-batch schedule through the adaptive config (EAGLE, EAGLE3)",
        capabilities=frozenset({ADAPTIVE_TIERS, SCHEDULE_PER_BATCH, BLOCK_DRAFTERS}),
    ),
)


ALIASES: dict[str, str] = {}


# Open changes that would change the format (none followed until merged).
WATCHED = (
    base.Watched(
        34814,
        "--speculative-decoding-stats {none,summary,detailed}: exact per-request counts in meta_info and sglext",
        merged=False,
        checked="open in the PR thread; arg_groups/fields/spec.py @ 015c872628e3 (the Spec namespace, every "
        "--speculative-* flag) has no speculative_decoding_stats, so SGLang's parser refuses the flag; nor has the "
        "sglang 0.5.23 package (the newest release in the registry, 2026-10)",
    ),
)
