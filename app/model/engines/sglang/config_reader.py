"""SGLang's config read back the way SGLang's own code reads it: the k it runs at each batch, and
every rule it applies, each naming the file it comes from."""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.model.engines import base
from app.model.engines.base import ConfigRuleError
from app.model.engines.sglang.methods import BLOCK_ALGORITHMS, NEEDS_DRAFT, STEP_ALGORITHMS
from app.model.engines.sglang.versions import (
    ADAPTIVE_PARAMS,
    ADAPTIVE_TIERS,
    BLOCK_DRAFTERS,
    SPEC_FIELDS,
    SPEC_HOOK,
    SPEC_HOOK_BLOCKS,
)


def graph_batches(limit: int, tier_ends: Sequence[int]) -> list[int]:
    """CUDA-graph batch sizes that hold every tier's last batch, so that padding never crosses a tier."""
    sizes = {1, 2, 4, 8, *range(16, limit + 1, 8), *tier_ends}
    return sorted(size for size in sizes if size <= limit)


def _parse(flags: Sequence[str]) -> dict[str, Any]:
    where = SPEC_FIELDS.cite()
    valued = {
        "--speculative-algorithm": str,
        "--speculative-num-steps": int,
        "--speculative-eagle-topk": int,
        "--speculative-num-draft-tokens": int,
        "--speculative-draft-model-path": str,
        "--speculative-adaptive-config": str,
        "--max-running-requests": int,
        "--speculative-dflash-block-size": int,
        "--speculative-dspark-block-size": int,
        "--uno-lora-path": str,
        "--attention-backend": str,
        "--tp-size": int,
        "--tensor-parallel-size": int,
    }
    switches = {"--speculative-adaptive"}
    lists = {"--cuda-graph-bs"}
    parsed: dict[str, Any] = {}
    index = 0
    while index < len(flags):
        flag = flags[index]
        if flag in switches:
            parsed[flag] = True
            index += 1
        elif flag in lists:
            values = []
            index += 1
            while index < len(flags) and not flags[index].startswith("--"):
                values.append(int(flags[index]))
                index += 1
            parsed[flag] = values
        elif flag in valued:
            if index + 1 >= len(flags):
                raise ConfigRuleError(f"{flag} expects a value", where)
            try:
                parsed[flag] = valued[flag](flags[index + 1])
            except ValueError:
                raise ConfigRuleError(f"{flag}: invalid value {flags[index + 1]!r}", where) from None
            index += 2
        else:
            raise ConfigRuleError(f"unrecognized argument {flag}", where)
    return parsed


# arg_groups/fields/spec.py @ 015c872628e3 lists DFLASH, DSPARK and UNO among the builtins; speculative_hook.py
# (_handle_dflash, _handle_dspark @ 004c82e07d87; _handle_uno in the stored version that has it, whose commit the
# store does not name) forces steps and topk to 1 for them and reads the verify window, which holds the verified
# token and the draft: k = num_draft_tokens - 1.


def _block_draft_length(algorithm: str, flags: Mapping[str, Any], batch_limit: int) -> int:
    """The one draft length DFLASH, DSPARK or UNO runs at every batch, as speculative_hook.py resolves it."""
    where = SPEC_HOOK_BLOCKS
    draft = flags.get("--speculative-draft-model-path")
    window = flags.get("--speculative-num-draft-tokens")
    running = flags.get("--max-running-requests", 48)
    if running < batch_limit:
        raise ConfigRuleError(f"--max-running-requests {running} is below the batch {batch_limit}", where)
    if algorithm == "DFLASH":
        if draft is None:
            raise ConfigRuleError("DFLASH speculative decoding requires setting --speculative-draft-model-path", where)
        block = flags.get("--speculative-dflash-block-size")
        if block is not None:
            if block <= 0:
                raise ConfigRuleError("DFLASH requires --speculative-dflash-block-size to be positive", where)
            if window is not None and window != block:
                raise ConfigRuleError(
                    "Both --speculative-num-draft-tokens and --speculative-dflash-block-size are set but they differ",
                    where,
                )
            window = block
        if window is None:
            raise ConfigRuleError(
                "DFLASH takes its block size from the draft checkpoint (16 where it has none), which this reader "
                "cannot see: give --speculative-dflash-block-size",
                where,
            )
    elif algorithm == "DSPARK":
        gamma = flags.get("--speculative-dspark-block-size")
        if gamma is not None:
            if gamma <= 0:
                raise ConfigRuleError("DSpark requires --speculative-dspark-block-size to be positive", where)
            if window is not None and window != gamma + 1:
                raise ConfigRuleError("DSpark speculative_num_draft_tokens must equal gamma + 1", where)
            window = gamma + 1
        if window is None:
            raise ConfigRuleError(
                "DSpark takes gamma from the draft checkpoint, which this reader cannot see: give "
                "--speculative-dspark-block-size (= gamma)",
                where,
            )
        if window < 2:
            raise ConfigRuleError("DSpark speculative_num_draft_tokens must be >= 2 (= gamma + 1)", where)
    else:
        if draft is not None:
            raise ConfigRuleError(
                "UNO reuses the target model and does not accept --speculative-draft-model-path", where
            )
        if flags.get("--uno-lora-path") is None:
            raise ConfigRuleError("UNO requires --uno-lora-path", where)
        if flags.get("--tp-size", flags.get("--tensor-parallel-size", 1)) != 1:
            raise ConfigRuleError("UNO requires TP=PP=1", where)
        backend = flags.get("--attention-backend")
        if backend is not None and backend != "fa3":
            raise ConfigRuleError(f"UNO requires FA3 for both prefill and decode attention; got {backend!r}", where)
        if window is None or window < 1:
            raise ConfigRuleError(
                "UNO requires --speculative-num-draft-tokens to be a positive integer denoting the linear width or "
                "tree verify width Q",
                where,
            )
    if window < 2:
        raise ConfigRuleError(f"{algorithm}: a verify window of {window} holds no draft token", where)
    return int(window) - 1


def read_config(exported: base.Exported, version: base.EngineVersion, batch_limit: int) -> list[int]:
    """Read the flags (and the adaptive file) as SGLang's ServerArgs does; the steps run at each batch."""
    where = SPEC_HOOK.cite()
    flags = _parse(exported.flags)
    algorithm = str(flags.get("--speculative-algorithm", "")).upper()
    if algorithm in BLOCK_ALGORITHMS and version.can(BLOCK_DRAFTERS):
        return [_block_draft_length(algorithm, flags, batch_limit)] * batch_limit
    if algorithm not in STEP_ALGORITHMS:
        raise ConfigRuleError(f"Unknown speculative algorithm name: {algorithm} (SGLang {version.name})", where)
    if algorithm == "NEXTN":
        algorithm = "EAGLE"
    steps = flags.get("--speculative-num-steps")
    topk = flags.get("--speculative-eagle-topk")
    draft_tokens = flags.get("--speculative-num-draft-tokens")
    adaptive = bool(flags.get("--speculative-adaptive"))
    if steps is None and (topk is not None or draft_tokens is not None):
        raise ConfigRuleError("topk or draft tokens without steps: all three are given or all chosen", where)
    if steps is not None and topk is None and algorithm != "NGRAM":
        raise ConfigRuleError("steps without topk (speculative_eagle_topk > 1 compares None)", where)
    draft = flags.get("--speculative-draft-model-path")
    if algorithm in NEEDS_DRAFT and draft is None:
        raise ConfigRuleError(f"{algorithm} loads a draft model: --speculative-draft-model-path", where)
    if draft is not None and not re.match(r"^[~./A-Za-z0-9_\-]+$", draft):
        raise ConfigRuleError(f"draft model path {draft!r} is not a path or hub name", where)
    running = flags.get("--max-running-requests", 48)
    if running < batch_limit:
        raise ConfigRuleError(f"--max-running-requests {running} is below the batch {batch_limit}", where)
    assert isinstance(steps, int) and isinstance(topk, int)
    if topk == 1:
        draft_tokens = steps + 1  # SGLang overwrites it with a warning
    else:
        assert isinstance(draft_tokens, int)
        if not 1 <= draft_tokens - 1 <= topk + (steps - 1) * topk * topk:
            raise ConfigRuleError("num_draft_tokens - 1 exceeds the draft pool topk + (steps - 1) topk^2", where)
    if not adaptive:
        return [draft_tokens - 1 if topk > 1 else steps] * batch_limit
    if not version.can(ADAPTIVE_TIERS):
        raise ConfigRuleError(f"--speculative-adaptive per-batch tiers are not in SGLang {version.name}", where)
    if algorithm not in ("EAGLE", "EAGLE3") or topk != 1:
        return [steps] * batch_limit  # adaptive_unsupported_reason: SGLang warns and runs static
    name = flags.get("--speculative-adaptive-config")
    if name is None or name not in exported.files:
        raise ConfigRuleError("--speculative-adaptive-config names no file that was written", where)
    tiers = _adaptive_tiers(json.loads(exported.files[name]))
    union = sorted({k for candidates in tiers.values() for k in candidates})
    if steps not in union:
        raise ConfigRuleError(f"--speculative-num-steps={steps} is not in the adaptive config candidate_steps", where)
    graphs = sorted(flags.get("--cuda-graph-bs", [1, 2, 4, 8, *range(16, 257, 8)]))
    keys = sorted(tiers)
    runs = []
    for batch in range(1, batch_limit + 1):
        runs.append(_tier_step(tiers, keys, graphs, batch, steps))
    return runs


def _adaptive_tiers(config: Any) -> dict[int, list[int]]:
    where = ADAPTIVE_PARAMS.cite()
    if not isinstance(config, Mapping):
        raise ConfigRuleError("speculative adaptive config must be a JSON object", where)
    strategy = config.get("strategy", "ema")
    if strategy not in ("ema", "throughput_aware"):
        raise ConfigRuleError(f"unknown adaptive strategy {strategy!r}", where)
    tiers: dict[int, list[int]] = {}
    for key, entry in config.items():
        if not isinstance(key, str) or not key.isdigit():
            continue
        candidates = entry.get("candidate_steps") if isinstance(entry, Mapping) else None
        floor = 1 if strategy == "throughput_aware" else 0
        if (
            not isinstance(candidates, list)
            or not candidates
            or not all(isinstance(k, int) and not isinstance(k, bool) and k >= floor for k in candidates)
        ):
            raise ConfigRuleError(f"BS {key}: candidate_steps must be a list of non-negative ints", where)
        tiers[int(key)] = sorted(candidates)
    if not tiers:
        raise ConfigRuleError("the adaptive config must contain at least one integer-string BS key", where)
    return tiers


def _tier_step(tiers: dict[int, list[int]], keys: list[int], graphs: list[int], batch: int, steps: int) -> int:
    """batch_size_key_for_batch: pad up to a captured graph batch, then the largest key <= it (else the smallest)."""
    index = bisect.bisect_left(graphs, batch)
    padded = graphs[index] if index < len(graphs) else batch
    position = bisect.bisect_right(keys, padded) - 1
    candidates = tiers[keys[max(position, 0)]]
    # a slot starts at the global steps when it is among its candidates, else at the median candidate
    return steps if steps in candidates else candidates[len(candidates) // 2]
