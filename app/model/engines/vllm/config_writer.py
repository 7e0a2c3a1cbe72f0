"""The product's schedule written in vLLM's own configuration."""

from __future__ import annotations

import json
import re
from typing import Any

from app.model.engines import base
from app.model.engines.vllm.methods import MODEL_FREE, PLACEHOLDER_MODEL, method_name
from app.model.engines.vllm.versions import PER_BATCH_SCHEDULE, STATIC_TREES


def _tree_literal(paths: list[list[int]]) -> str:
    """The tree as vLLM takes it: a Python literal of tuples, which it reads with ast.literal_eval."""
    return str([tuple(path) for path in paths])


TREE = base.TreeFormat(STATIC_TREES, _tree_literal)  # the key, speculative_token_tree, is the capability's name


def write_config(request: base.ConfigRequest, version: base.EngineVersion) -> base.Exported:
    """speculative_config and --max-num-seqs for the schedule over batch 1..batch_limit."""
    best = list(request.best_k)
    if not best or max(best) == 0:
        return base.Exported(None, [], "", ["no k pays at any batch that fits: run vLLM without --speculative-config"])
    method = method_name(request.method)
    config: dict[str, Any] = {}
    notes: list[str] = []
    placeholders: tuple[str, ...] = ()
    if method is not None:
        config["method"] = method
    if request.draft_path:
        config["model"] = request.draft_path
    elif method is None or (method not in MODEL_FREE and not method.endswith("_mtp")):
        config["method"] = method or "draft_model"
        config["model"] = PLACEHOLDER_MODEL
        placeholders = (PLACEHOLDER_MODEL,)
        notes.append(
            f"fill in model: {config['method']} needs the draft's path or hub name (vLLM refuses it without), or "
            "choose a method that needs none (ngram, suffix, mtp)"
        )
    limit = request.batch_limit
    runs: list[int]
    if request.tree is not None and version.can(STATIC_TREES):
        paths = base.tree_paths(request.tree)
        config["num_speculative_tokens"] = len(paths)
        config[TREE.key] = TREE.write(paths)
        notes.append("a static tree: vLLM verifies every node, so num_speculative_tokens is the node count")
        runs = [len(paths)] * limit
    elif version.can(PER_BATCH_SCHEDULE) and request.data_parallel <= 1:
        if request.tree is not None:
            notes.append(
                "vLLM removed tree attention and speculative_token_tree (PR #42121): the chain schedule is written"
            )
        config["num_speculative_tokens"] = max(best)
        config["num_speculative_tokens_per_batch_size"] = [[first, last, k] for first, last, k in base.runs_of(best)]
        runs = best
        if len(set(best)) > 1:
            batch, k = base.user_batch_k(request)
            notes.append(
                "with --data-parallel-size above 1, vLLM drops num_speculative_tokens_per_batch_size "
                f"(vllm/config/vllm.py _maybe_disable_dynamic_sd_for_data_parallel) and runs {max(best)} at every "
                f"batch; with data parallelism, set num_speculative_tokens to the k of your batch "
                f"({k} at batch {batch}) instead"
            )
    else:
        batch, k = base.user_batch_k(request)
        if version.can(PER_BATCH_SCHEDULE):
            # vllm/config/vllm.py @ 000fc94b754f _maybe_disable_dynamic_sd_for_data_parallel: above one data-parallel
            # rank the schedule is dropped and num_speculative_tokens runs at every batch, so it is the user's batch k
            why = (
                f"with --data-parallel-size {request.data_parallel} vLLM drops num_speculative_tokens_per_batch_size "
                "and runs one k at every batch"
            )
            note = (
                f"--data-parallel-size {request.data_parallel}: vLLM drops num_speculative_tokens_per_batch_size "
                "above one data-parallel rank (_maybe_disable_dynamic_sd_for_data_parallel) and runs "
                f"num_speculative_tokens at every batch: k = {k}, the schedule's at your batch {batch}"
            )
        else:
            why = f"vLLM {version.name} takes one draft length for every batch"
            note = f"{why}: k = {k}, the schedule's at batch {batch}"
        if k == 0:
            return base.off_at_user_batch(request, batch, f"run vLLM without --speculative-config ({why})")
        config["num_speculative_tokens"] = k
        runs = [k] * limit
        notes.append(note)
    flags = ["--speculative-config", json.dumps(config, separators=(",", ":")), "--max-num-seqs", str(limit)]
    if request.data_parallel > 1:
        flags += ["--data-parallel-size", str(request.data_parallel)]
    notes.append(f"--max-num-seqs {limit}: the largest batch whose weights and KV caches fit")
    differ = base.differences(best, runs) if request.tree is None else ()
    if differ:
        notes.append(f"vLLM {version.name} runs another k than the schedule at batches {base.describe_batches(differ)}")
    shown = json.dumps({"speculative_config": config}, indent=2)
    shown = re.sub(r"\[\s+(\d+),\s+(\d+),\s+(\d+)\s+\]", r"[\1, \2, \3]", shown)  # one range per line
    text = shown + "\n\nvllm serve TARGET_MODEL " + " ".join(base.quoted(flags))
    return base.Exported(config, flags, text, notes, runs=tuple(runs), differs_at=differ, placeholders=placeholders)
