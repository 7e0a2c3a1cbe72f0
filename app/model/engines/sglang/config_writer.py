"""The product's schedule written in SGLang's own configuration."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from app.model.engines import base
from app.model.engines.sglang.config_reader import graph_batches
from app.model.engines.sglang.methods import (
    ADAPTIVE_ALGORITHMS,
    BLOCK_ALGORITHMS,
    NEEDS_DRAFT,
    PLACEHOLDER_LORA,
    PLACEHOLDER_MODEL,
    algorithm_name,
)
from app.model.engines.sglang.versions import ADAPTIVE_TIERS, BLOCK_DRAFTERS, SPEC_FIELDS

ADAPTIVE_FILE = "adaptive.json"


LAUNCH = "python -m sglang.launch_server --model-path TARGET_MODEL"


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
    notes.append(f"--max-running-requests {limit}: the largest batch whose weights and KV caches fit")
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
    notes.append(f"--max-running-requests {limit}: the largest batch whose weights and KV caches fit")
    runs = [k] * limit
    differ = base.differences(request.best_k, runs)
    notes.append(f"SGLang's {algorithm} has one block width: k = {k}, the schedule's k at your batch {batch}")
    if differ:
        notes.append(f"SGLang runs another k than the schedule at batches {base.describe_batches(differ)}")
    text = LAUNCH + " " + " ".join(base.quoted(flags))
    return base.Exported(config, flags, text, notes, {}, tuple(runs), differ, placeholders)


def shell_line(flags: Sequence[str]) -> str:
    return LAUNCH + " " + " ".join(shlex.quote(flag) for flag in flags)
