"""The product's schedule written in SGLang's own configuration."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from app.model.engines import base
from app.model.engines.sglang.config_reader import graph_batches
from app.model.engines.sglang.methods import ADAPTIVE_ALGORITHMS, NEEDS_DRAFT, PLACEHOLDER_MODEL, algorithm_name
from app.model.engines.sglang.versions import ADAPTIVE_TIERS

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
            advice = f"launch SGLang without speculation ({why}: one draft length would run at every batch)"
            return base.off_at_user_batch(request, batch, advice)
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


def shell_line(flags: Sequence[str]) -> str:
    return LAUNCH + " " + " ".join(shlex.quote(flag) for flag in flags)
