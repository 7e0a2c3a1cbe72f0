"""SGLang's drafters and its config: which methods it takes and how a request names them, its config read back the way
its own code reads it, and written for a schedule.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.model.engines import base
from app.model.engines.base import ConfigRuleError
from app.model.engines.sglang.versions import (
    ADAPTIVE_PARAMS,
    ADAPTIVE_TIERS,
    BLOCK_DRAFTERS,
    SPEC_FIELDS,
    SPEC_HOOK,
    SPEC_HOOK_BLOCKS,
)

# arg_groups/fields/spec.py @ 015c872628e3 (speculative_algorithm's help): the builtins are EAGLE, EAGLE3, NEXTN,
# STANDALONE, NGRAM, DFLASH, DSPARK and UNO.  The first five take --speculative-num-steps; the last three draft a
# block whose width has a flag of its own (speculative_hook.py, _handle_dflash, _handle_dspark, _handle_uno).
STEP_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")


BLOCK_ALGORITHMS = ("DFLASH", "DSPARK", "UNO")


ALGORITHMS = STEP_ALGORITHMS + BLOCK_ALGORITHMS


# A block drafter proposes its whole block in one pass (the adapter's ONE_PASS_METHODS); the others one per step.
ONE_PASS_METHODS = BLOCK_ALGORITHMS


ADAPTIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN")


# The algorithm that runs each head the setup prices, where no method is given: an MTP head is NEXTN (the
# target's own next-token layers, no draft path).
HEAD_METHODS = {"eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN"}


NEEDS_DRAFT = ("EAGLE", "EAGLE3", "STANDALONE", "DFLASH")


PLACEHOLDER_MODEL = "<draft model: a path or hub name>"


PLACEHOLDER_LORA = "<UNO draft LoRA: a path>"


# Names users bring from other engines, and why SGLang has no such builtin (fields/spec.py @ 015c872628e3).
NOT_SGLANG = {
    "AUTO": "AUTO is TensorRT-LLM's decoding type that picks its own drafter; SGLang has no AUTO builtin and "
    "chooses steps, topk and draft tokens itself only when none of them is given (speculative_hook.py, "
    "_auto_choose_speculative_params), which leaves no schedule to write: pick a builtin",
}


def algorithm_name(given: str | None, draft_path: str | None) -> str:
    """SGLang's algorithm: as given (any case), else STANDALONE for a separate draft model."""
    if given is None or not given.strip():
        return "STANDALONE"
    upper = given.strip().upper()
    if upper in NOT_SGLANG:
        raise ValueError(f"SGLang --speculative-algorithm {upper}: {NOT_SGLANG[upper]} ({', '.join(ALGORITHMS)})")
    if upper not in ALGORITHMS:
        raise ValueError(f"SGLang --speculative-algorithm must be one of {', '.join(ALGORITHMS)}; got {given!r}")
    return upper


METHODS = ALGORITHMS


METHOD_ALIAS = "sglang_algorithm"  # the older query parameter for method=, kept as an alias


def choose_method(given: str | None) -> str | None:
    """The --speculative-algorithm as SGLang spells it (None: STANDALONE, or as the draft type says)."""
    return algorithm_name(given, None) if given else None


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


ADAPTIVE_FILE = "adaptive.json"


TARGET = "TARGET_MODEL"  # the target's path, as the launch line names it


LAUNCH = f"python -m sglang.launch_server --model-path {TARGET}"


TREE = None  # SGLang builds its trees at run time (--speculative-eagle-topk): no static tree


def write_config(request: base.ConfigRequest, version: base.EngineVersion) -> base.Exported:
    best = list(request.best_k)
    limit = request.batch_limit
    algorithm = algorithm_name(request.method, request.draft_path)
    notes: list[str] = []
    placeholders: tuple[str, ...] = ()
    if not best or max(best) == 0:
        return base.Exported(None, [], "", ["no k pays at any batch that fits: launch SGLang without speculation"])
    if algorithm in BLOCK_ALGORITHMS:
        return _block_config(request, version, algorithm)
    draft = request.draft_path
    if draft is None and algorithm in NEEDS_DRAFT:
        draft, placeholders = PLACEHOLDER_MODEL, (PLACEHOLDER_MODEL,)
        notes.append(f"fill in --speculative-draft-model-path: {algorithm} needs the draft model")
    elif draft is None and algorithm == "NEXTN":
        # NEXTN runs as EAGLE, whose draft path SGLang fills in itself only for the architectures it lists
        # (speculative_hook.py @ 004c82e07d87 _handle_eagle_family: DeepSeek-V3/V3.2/V4, GLM-4 MoE, Bailing MoE and
        # a few more); the target's own path serves every target
        draft = TARGET
        notes.append(
            f"--speculative-draft-model-path {TARGET}: NEXTN drafts with the target's own MTP layers (SGLang fills "
            "the path in itself for the architectures it lists, DeepSeek-V3 and GLM-4 MoE among them, and warns "
            "that it is not needed there)"
        )
    files: dict[str, str] = {}
    if request.tree is not None:
        tree = request.tree
        steps, topk, draft_tokens = tree.depth, max(max(tree.ranks), 1), len(tree.parents) + 1
        if draft_tokens - 1 > topk + (steps - 1) * topk * topk:
            raise ValueError(
                f"a tree of {draft_tokens - 1} nodes, depth {steps} and width {topk} is more than SGLang's draft "
                f"pool of topk + (steps - 1) * topk^2 = {topk + (steps - 1) * topk * topk} candidates"
            )
        runs = [draft_tokens - 1] * limit
        adaptive = None
    elif version.can(ADAPTIVE_TIERS) and algorithm in ADAPTIVE_ALGORITHMS and len(set(best)) > 1:
        tiers = base.runs_of(best)
        adaptive = {str(first): {"candidate_steps": [k]} for first, _last, k in tiers}
        steps, topk, draft_tokens = max(best), 1, max(best) + 1  # a slot starts at its own single candidate
        runs = best
        files[ADAPTIVE_FILE] = (
            "{\n" + ",\n".join(f"  {json.dumps(key)}: {json.dumps(entry)}" for key, entry in adaptive.items()) + "\n}\n"
        )
        notes.append(
            "the schedule as SGLang's adaptive config: each tier's lowest batch with its one candidate k "
            "(0 = no drafting); --cuda-graph-bs holds every tier's last batch so that padding a batch up to a "
            "captured size never crosses into the next tier"
        )
    else:
        # one draft length for every batch (speculative_hook.py: --speculative-num-steps is one number), chosen at
        # the user's batch; where speculation does not pay there, SGLang is launched without it
        batch, k = base.user_batch_k(request)
        why = (
            f"SGLang {version.name} has no per-batch schedule"
            if not version.can(ADAPTIVE_TIERS)
            else f"SGLang's adaptive schedule runs only for {', '.join(ADAPTIVE_ALGORITHMS)}"
            if algorithm not in ADAPTIVE_ALGORITHMS
            else "one k pays at every batch"
        )
        if k == 0:
            return base.off_at_user_batch(request, batch, _without_speculation(why))
        steps, topk, draft_tokens = k, 1, k + 1
        runs = [k] * limit
        adaptive = None
        notes.append(f"{why}: one draft length, k = {k}, the schedule's k at your batch {batch}")
    config: dict[str, Any] = {
        "speculative_algorithm": algorithm,
        "speculative_num_steps": steps,
        "speculative_eagle_topk": topk,
        "speculative_num_draft_tokens": draft_tokens,
    }
    flags = [
        "--speculative-algorithm",
        algorithm,
        "--speculative-num-steps",
        str(steps),
        "--speculative-eagle-topk",
        str(topk),
        "--speculative-num-draft-tokens",
        str(draft_tokens),
    ]
    if draft is not None and algorithm != "NGRAM":
        flags += ["--speculative-draft-model-path", draft]
        config["speculative_draft_model_path"] = draft
    if adaptive is not None:
        tier_ends = [last for _first, last, _k in base.runs_of(best)]
        graphs = graph_batches(limit, tier_ends)
        flags += ["--speculative-adaptive", "--speculative-adaptive-config", ADAPTIVE_FILE]
        flags += ["--cuda-graph-bs", *map(str, graphs)]
        config["speculative_adaptive"] = True
        config["speculative_adaptive_config"] = adaptive
        config["cuda_graph_bs"] = graphs
    flags += ["--max-running-requests", str(limit)]
    config["max_running_requests"] = limit
    notes.append(f"--max-running-requests {limit}: {request.limit_reason}")
    differ = base.differences(best, runs) if request.tree is None else ()
    if differ:
        notes.append(f"SGLang runs another k than the schedule at batches {base.describe_batches(differ)}")
    text = LAUNCH + " " + " ".join(base.quoted(flags))
    if files:
        text = f"# {ADAPTIVE_FILE}\n{files[ADAPTIVE_FILE]}\n{text}"
    return base.Exported(config, flags, text, notes, files, tuple(runs), differ, placeholders)


def _without_speculation(why: str) -> str:
    """How to run SGLang where one draft length runs at every batch and speculation does not pay at the user's."""
    return f"launch SGLang without speculation ({why}: one draft length would run at every batch)"


def _block_config(request: base.ConfigRequest, version: base.EngineVersion, algorithm: str) -> base.Exported:
    """DFLASH, DSPARK or UNO: one block width at every batch, in the flag each one takes
    (versions.SPEC_HOOK_BLOCKS_SOURCE).

    - DFLASH: --speculative-dflash-block-size is the verify window, the verified token and k drafts: k + 1; it needs
      --speculative-draft-model-path.
    - DSPARK: --speculative-dspark-block-size is gamma, the drafts proposed: k (the window is gamma + 1).
    - UNO: no draft model (the target with a LoRA, --uno-lora-path); --speculative-num-draft-tokens is the linear
      verify width Q: k + 1; it needs TP = PP = 1 and FA3 attention.
    """
    if not version.can(BLOCK_DRAFTERS):
        raise ValueError(
            f"SGLang {version.name} has no {algorithm}: it is a builtin from the 2026-05 format on "
            f"({SPEC_FIELDS.cite()})"
        )
    if request.tree is not None:
        raise ValueError(f"SGLang's {algorithm} drafts one linear block: it takes no static tree")
    limit = request.batch_limit
    batch, k = base.user_batch_k(request)
    if k == 0:
        why = f"SGLang's {algorithm} has one block width"
        return base.off_at_user_batch(request, batch, _without_speculation(why))
    notes: list[str] = []
    placeholders: tuple[str, ...] = ()
    flags = ["--speculative-algorithm", algorithm]
    config: dict[str, Any] = {"speculative_algorithm": algorithm}
    draft = request.draft_path
    if algorithm == "DFLASH":
        flags += ["--speculative-dflash-block-size", str(k + 1)]
        config["speculative_dflash_block_size"] = k + 1
        notes.append(
            f"--speculative-dflash-block-size {k + 1}: DFLASH's verify window, the verified token and k = {k} drafts; "
            "given, it is used over the draft checkpoint's own block_size"
        )
    elif algorithm == "DSPARK":
        flags += ["--speculative-dspark-block-size", str(k)]
        config["speculative_dspark_block_size"] = k
        notes.append(
            f"--speculative-dspark-block-size {k}: DSpark's gamma, the drafts proposed (the window is {k + 1})"
        )
    else:
        flags += ["--speculative-num-draft-tokens", str(k + 1), "--attention-backend", "fa3"]
        config["speculative_num_draft_tokens"] = k + 1
        config["attention_backend"] = "fa3"
        lora = draft if draft is not None else PLACEHOLDER_LORA
        if draft is None:
            placeholders = (PLACEHOLDER_LORA,)
            notes.append("fill in --uno-lora-path: UNO drafts with a LoRA on the target model")
        flags += ["--uno-lora-path", lora]
        config["uno_lora_path"] = lora
        draft = None  # UNO refuses --speculative-draft-model-path
        notes.append(
            f"--speculative-num-draft-tokens {k + 1}: UNO's linear verify width Q, the verified token and k = {k} "
            "drafts; UNO runs at TP = PP = 1 with FA3 attention"
        )
    if algorithm in ("DFLASH", "DSPARK"):
        if draft is None:
            if algorithm == "DFLASH":
                draft, placeholders = PLACEHOLDER_MODEL, (PLACEHOLDER_MODEL,)
                notes.append("fill in --speculative-draft-model-path: DFLASH needs the draft model")
            else:
                notes.append(
                    "no --speculative-draft-model-path: SGLang takes the DSpark draft bundled in the target checkpoint "
                    "and refuses a target without one"
                )
        if draft is not None:
            flags += ["--speculative-draft-model-path", draft]
            config["speculative_draft_model_path"] = draft
    flags += ["--max-running-requests", str(limit)]
    config["max_running_requests"] = limit
    notes.append(f"--max-running-requests {limit}: {request.limit_reason}")
    runs = [k] * limit
    differ = base.differences(request.best_k, runs)
    notes.append(f"SGLang's {algorithm} has one block width: k = {k}, the schedule's k at your batch {batch}")
    if differ:
        notes.append(f"SGLang runs another k than the schedule at batches {base.describe_batches(differ)}")
    text = LAUNCH + " " + " ".join(base.quoted(flags))
    return base.Exported(config, flags, text, notes, {}, tuple(runs), differ, placeholders)
