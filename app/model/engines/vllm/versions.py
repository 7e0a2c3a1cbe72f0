"""vLLM's versions: the sources each was read from and the capabilities it has, set once here."""

from __future__ import annotations

from app.model.engines import base
from app.model.engines.base import SCHEDULE_PER_BATCH

NAME = "vllm"


TITLE = "vLLM"


REPOSITORY = "vllm-project/vllm"


SPECULATIVE_PY_2025 = base.Source(
    REPOSITORY,
    "vllm/config/speculative.py",
    "f19b16d95e4395790661f4835e4436bc3dd5d9c7",
    "SpeculativeConfig with speculative_token_tree",
)


SPECULATIVE_PY = base.Source(
    REPOSITORY,
    "vllm/config/speculative.py",
    "002e77c1f0ef9b19cff8b9e21cfbd6feb3d6b443",
    "SpeculativeConfig: fields, SpeculativeMethod literal, method inference, model-free methods",
)


DYNAMIC_UTILS = base.Source(
    REPOSITORY,
    "vllm/v1/spec_decode/dynamic/utils.py",
    "a6f6bb1d3c1707ede85d03a7c7d47a105a1873fc",
    "validate_and_normalize_dynamic_sd_schedule, build_dynamic_sd_schedule_lookup",
)


METRICS_PY = base.Source(
    REPOSITORY,
    "vllm/v1/spec_decode/metrics.py",
    "ee4ceaae5953d367d8edd2132fd86d6c42506e1e",
    "spec_decode counters, per position from 0, labels model_name and engine",
)


PROTOCOL_PY = base.Source(
    REPOSITORY,
    "vllm/entrypoints/generate/base/protocol.py",
    "567b35aa7b691e82dd80bd41854f8499002d5c0f",
    "SpeculativeDecodingMetrics in the response's metrics.speculative_decoding",
)


VLLM_CONFIG_PY = base.Source(
    REPOSITORY,
    "vllm/config/vllm.py",
    "000fc94b754f66aeb60ef5acf1ea2e94cdc65164",
    "_maybe_disable_dynamic_sd_for_data_parallel: data_parallel_size > 1 drops num_speculative_tokens_per_batch_size",
)


# Capabilities, set once per version below.
PER_BATCH_SCHEDULE = "num_speculative_tokens_per_batch_size"  # PR #32374: a draft length per batch range


STATIC_TREES = "speculative_token_tree"  # static trees; gone with tree attention (PR #42121)


STRICT_KEYS = "unknown keys refused"  # PR #31541: SpeculativeConfig forbids extra fields


VERSIONS = (
    base.EngineVersion(
        "2025-10",
        "2025-10",
        "V1 engine counters; speculative_token_tree; one num_speculative_tokens for every batch",
        (SPECULATIVE_PY_2025, METRICS_PY),
        "one draft length for all batches; static trees",
        capabilities=frozenset({STATIC_TREES}),
    ),
    base.EngineVersion(
        "2026-06",
        "2026-06",
        "PR #32374 num_speculative_tokens_per_batch_size; PR #42121 tree attention removed; "
        "PR #31541 unknown keys refused",
        (SPECULATIVE_PY, DYNAMIC_UTILS, METRICS_PY, VLLM_CONFIG_PY),
        "per-batch draft length as inclusive [start, end, k] ranges; no static trees",
        capabilities=frozenset({PER_BATCH_SCHEDULE, SCHEDULE_PER_BATCH, STRICT_KEYS}),
    ),
    base.EngineVersion(
        "2026-08",
        "2026-08",
        "PR #48915 per-request acceptance (metrics.speculative_decoding), first in 0.29",
        (SPECULATIVE_PY, DYNAMIC_UTILS, METRICS_PY, PROTOCOL_PY, VLLM_CONFIG_PY),
        "as 2026-06, and per-request acceptance in each response",
        capabilities=frozenset({PER_BATCH_SCHEDULE, SCHEDULE_PER_BATCH, STRICT_KEYS}),
    ),
)


# 0.32 and 0.33 read as 2026-08: the sources read (speculative.py @ 002e77c1f0ef, dynamic/utils.py, vllm.py @
# 000fc94b754f) keep its fields and schedule format; PR #48944 (speculative_token_schedule) is not merged
ALIASES = {"0.29": "2026-08", "0.25": "2026-06", "0.32": "2026-08", "0.33": "2026-08"}


# Open changes that would change the format (none followed until merged).
WATCHED = (
    base.Watched(
        48944,
        "num_speculative_tokens_per_batch_size renamed speculative_token_schedule (the old name a deprecated alias), "
        "with 5-item (bs_lo, bs_hi, ctx_lo, ctx_hi, K) entries beside the 3-item ones",
        merged=False,
        checked="open in the PR thread; speculative.py @ 002e77c1f0ef (the newest stored SpeculativeConfig) declares "
        "only num_speculative_tokens_per_batch_size as 3-item tuples and dynamic/utils.py @ a6f6bb1d3c17 takes 3-item "
        "entries alone; a stored dynamic/utils.py @ 14b450ca590c validates speculative_token_schedule with 3- or "
        "5-item entries: the PR's branch (where SpeculativeConfig takes the old name as a validation alias)",
    ),
)
