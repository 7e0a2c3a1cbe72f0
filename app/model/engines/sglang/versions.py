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


# meta_info's per-request counts under the names PR #24081 gave them (spec_num_correct_drafts, spec_num_proposed_drafts,
# spec_correct_drafts_histogram; the older spec_accepted_drafts, spec_proposed_drafts and spec_accept_histogram kept as
# aliases for a release): TokenizerManager._calculate_spec_decoding_metrics, read in the sglang 0.5.23 package
# (PyPI, 2026-10) and in a stored tokenizer_manager_components/spec_decoding_meta.py whose commit the store does not
# name (the stored one it names, @ 9155cf0e6eff, still has the older names only)
REQUEST_META = base.Source(
    REPOSITORY,
    "python/sglang/srt/managers/tokenizer_manager.py",
    "PR #24081",
    "/generate meta_info: spec_verify_ct, spec_num_correct_drafts, spec_num_proposed_drafts = spec_verify_ct * "
    "(speculative_num_draft_tokens - 1), spec_correct_drafts_histogram[j] = verifications accepting exactly j",
)


# meta_info under its older names, as the releases before PR #24081 wrote it: TokenizerManager.
# _calculate_spec_decoding_metrics of the sglang 0.5.10 package (PyPI; tokenizer_manager.py built 2026-04-05)
# writes spec_accept_token_num, spec_draft_token_num, spec_verify_ct and spec_accept_histogram (as does a stored
# tokenizer_manager.py whose commit the store does not name); that of 0.5.11 (built 2026-05-07) spec_accepted_drafts,
# spec_proposed_drafts, spec_verify_ct and spec_accept_histogram, the names the stored
# tokenizer_manager_components/spec_decoding_meta.py @ 9155cf0e6eff fill_spec_decoding_meta writes; 0.5.12 (built
# 2026-05-16) writes PR #24081's names and keeps 0.5.11's beside them.  The counts are the same in all three: the
# scheduler adds accept_lens - 1 accepted draft tokens a verification (scheduler_output_processor_mixin.py), the
# proposed are spec_verify_ct * (speculative_num_draft_tokens - 1).  Those releases have no per-tier adaptive config
# (PR #24055 is in 0.5.13): SGLang 2026-03.
REQUEST_META_OLDER = base.Source(
    REPOSITORY,
    "python/sglang/srt/managers/tokenizer_manager_components/spec_decoding_meta.py",
    "9155cf0e6effbca15e163d04907ff1933b684b3a",
    "meta_info before PR #24081: spec_accepted_drafts, spec_proposed_drafts, spec_accept_histogram (sglang 0.5.11); "
    "tokenizer_manager.py of sglang 0.5.10: spec_accept_token_num, spec_draft_token_num, spec_accept_histogram",
)


# PR #33518 (opened 2026-08-04, merged): a request that sends return_spec_tokens_details gets the same counts on the
# OpenAI endpoints; read in the sglang 0.5.23 package (PyPI, 2026-10) and in stored versions of these files whose
# commit the store does not name
SPEC_TOKENS_DETAILS = base.Source(
    REPOSITORY,
    "python/sglang/srt/entrypoints/openai/utils.py",
    "PR #33518",
    "return_spec_tokens_details -> sglext.spec_tokens_details (spec_tokens_details_from_meta_info copies meta_info's "
    "counts, 0 or [] where absent); serving_chat.py and serving_completions.py put it at the response level, one "
    "object for n = 1 and a list in choice order for n > 1; without the request field there is no sglext",
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
        "static --speculative-* flags; accept rate = length / draft tokens; meta_info's counts under their older names",
        (SERVER_ARGS_2026_03, SPEC_HOOK, REQUEST_META_OLDER),
        "one draft length for every batch",
    ),
    base.EngineVersion(
        "2026-05",
        "2026-05",
        "PR #24055 adaptive config per batch-size tier; PR #23530 drafts-only accept rate; PR #25689 "
        "spec_verify_calls_total; PR #25940 spec_num_steps and spec_num_draft_tokens gauges",
        (SPEC_FIELDS, SPEC_HOOK, SPEC_HOOK_BLOCKS_SOURCE, ADAPTIVE_PARAMS, ADAPTIVE_ROUTER, METRICS, REQUEST_META),
        "a per-batch schedule through the adaptive config (EAGLE, EAGLE3)",
        capabilities=frozenset({ADAPTIVE_TIERS, SCHEDULE_PER_BATCH, BLOCK_DRAFTERS}),
    ),
    base.EngineVersion(
        "2026-08",
        "2026-08",
        "PR #33518 per-request counts on the OpenAI endpoints: sglext.spec_tokens_details for a request that sends "
        "return_spec_tokens_details; flags and the adaptive config as 2026-05",
        (
            SPEC_FIELDS,
            SPEC_HOOK,
            SPEC_HOOK_BLOCKS_SOURCE,
            ADAPTIVE_PARAMS,
            ADAPTIVE_ROUTER,
            METRICS,
            REQUEST_META,
            SPEC_TOKENS_DETAILS,
        ),
        "as 2026-05; the OpenAI endpoints can return each request's counts",
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
