"""The product's schedule written in TensorRT-LLM's own configuration."""

from __future__ import annotations

from typing import Any

import yaml

from app.model.engines import base
from app.model.engines.trtllm.methods import (
    DRAFTER_TYPES,
    NEEDS_MODEL,
    PLACEHOLDER_MODEL,
    STAGE_ONE_DRAFTER_TYPES,
    STATIC_TYPES,
    decoding_type,
)
from app.model.engines.trtllm.versions import (
    LATE_FIRST_KEY,
    ONE_MODEL_SCHEDULE,
    STATIC_TREES,
    TWO_MODEL,
    UPPER_BOUND_KEYS,
)

TREE = base.TreeFormat(STATIC_TREES, lambda paths: paths)  # eagle_choices: the paths as they are (a list of lists)


def write_config(request: base.ConfigRequest, version: base.EngineVersion) -> base.Exported:
    """extra_llm_api_options YAML: speculative_config with the schedule in this version's key meaning."""
    best = list(request.best_k)
    kind = decoding_type(request.method)
    limit = request.batch_limit
    if not best or max(best) == 0:
        return base.Exported(None, [], "", ["no k pays at any batch that fits: leave speculative_config out"])
    notes: list[str] = []
    placeholders: tuple[str, ...] = ()
    config: dict[str, Any] = {"decoding_type": kind}
    if request.draft_path:
        config["speculative_model"] = request.draft_path
    elif kind in NEEDS_MODEL:
        config["speculative_model"] = PLACEHOLDER_MODEL
        placeholders = (PLACEHOLDER_MODEL,)
        notes.append(f"fill in speculative_model: {kind} needs the draft model (TensorRT-LLM refuses it without)")
    if request.tree is not None:
        return _tree_config(request, version, config, notes, placeholders)
    if kind in STATIC_TYPES:
        why = f"{kind} ignores draft_len_schedule"
        return _static_config(request, config, notes, placeholders, why)
    if not version.can(ONE_MODEL_SCHEDULE) and kind not in STAGE_ONE_DRAFTER_TYPES:
        # versions.STAGE_ONE_EXECUTOR: before PR #10860 only a Drafter applies draft_len_schedule; the one-model path
        # (this type's default) has none, so a schedule written here would not run
        why = (
            f"TensorRT-LLM {version.name} runs {kind} on the one-model path, which applies no draft_len_schedule "
            "(only the Drafter of NGram, Draft_Target and the two-model path does; PR #10860 brought it to the "
            "one-model path)"
        )
        after: tuple[str, ...] = ()
        if version.can(TWO_MODEL) and kind in ("Eagle", "Eagle3", "MTP"):
            switch = "mtp_eagle_one_model" if kind == "MTP" else "eagle3_one_model"
            after = (
                f"{switch}: false would run the two-model Drafter, which applies a draft_len_schedule (each key the "
                "first batch of its range); it is not written here",
            )
        return _static_config(request, config, notes, placeholders, why, after)
    old_lookup = not version.can(UPPER_BOUND_KEYS) or kind in DRAFTER_TYPES
    if old_lookup and not version.can(LATE_FIRST_KEY) and best[0] == 0:
        schedule, runs, why = _upper_keys(best)  # key 1 is required before PR #10860: no later start either
    else:
        schedule, runs, why = (_from_keys if old_lookup else _upper_keys)(best)
    if not schedule:
        return base.Exported(
            None, [], "", [why], runs=tuple([0] * limit), differs_at=base.differences(best, [0] * limit)
        )
    config["max_draft_len"] = schedule[min(schedule)]
    config["draft_len_schedule"] = schedule
    if why:
        notes.append(why)
    meaning = (
        "a key is the first batch of its range (the Drafter lookup)"
        if old_lookup
        else "a key is the last batch of its range; batches above the last key run without speculation"
    )
    notes.append(f"draft_len_schedule for {version.name}: {meaning}")
    if not old_lookup and version.can(TWO_MODEL) and kind in ("Eagle", "Eagle3", "MTP"):
        # written for the one-model path (eagle3_one_model / mtp_eagle_one_model left at their default, true);
        # the two-model path runs the Drafter's lookup (versions.TWO_MODEL_DRAFTER), which reads these keys otherwise
        switch = "mtp_eagle_one_model" if kind == "MTP" else "eagle3_one_model"
        notes.append(
            f"written for the one-model path: keep {switch} true (its default); with {switch}: false "
            f"TensorRT-LLM {version.name} runs the two-model Drafter, which reads each key as the first batch of its "
            "range, so this schedule would not run"
        )
    return _document(request, config, notes, runs, placeholders)


def _static_config(
    request: base.ConfigRequest,
    config: dict[str, Any],
    notes: list[str],
    placeholders: tuple[str, ...],
    why: str,
    after: tuple[str, ...] = (),
) -> base.Exported:
    """One max_draft_len at every batch, where a draft_len_schedule would be ignored (interface.py @ 00b6d5a25c30:
    DSpark is not in support_dynamic_draft_len; before PR #10860, versions.STAGE_ONE_EXECUTOR: the one-model path):
    the schedule's k at the user's batch, or no speculation there."""
    batch, k = base.user_batch_k(request)
    kind = config["decoding_type"]
    if k == 0:
        advice = f"leave speculative_config out ({why}: {kind} runs one max_draft_len at every batch)"
        return base.off_at_user_batch(request, batch, advice)
    config["max_draft_len"] = k
    notes.append(f"{why}: one max_draft_len, k = {k}, the schedule's k at your batch {batch}")
    notes.extend(after)
    return _document(request, config, notes, [k] * request.batch_limit, placeholders)


def _document(
    request: base.ConfigRequest,
    config: dict[str, Any],
    notes: list[str],
    runs: list[int],
    placeholders: tuple[str, ...],
) -> base.Exported:
    """The YAML of max_batch_size and speculative_config, with the k TensorRT-LLM runs at each batch."""
    limit = request.batch_limit
    differ = base.differences(request.best_k, runs)
    if differ:
        notes.append(f"TensorRT-LLM runs another k than the schedule at batches {base.describe_batches(differ)}")
    document = {"max_batch_size": limit, "speculative_config": config}
    notes.append(f"max_batch_size {limit}: the largest batch whose weights and KV caches fit")
    return base.Exported(
        document, [], _yaml(document), notes, runs=tuple(runs), differs_at=differ, placeholders=placeholders
    )


def _upper_keys(best: list[int]) -> tuple[dict[int, int], list[int], str]:
    """PR #10860: {last batch of a range: k}; the smallest key's k is max_draft_len and no k may exceed it."""
    first = best[0]
    if first == 0:
        paying = [batch for batch, k in enumerate(best, start=1) if k > 0]
        return (
            {},
            [0] * len(best),
            "speculation loses at batch 1 and pays at batches "
            f"{base.describe_batches(paying)}; TensorRT-LLM's schedule must give its first range max_draft_len > 0, "
            "so it cannot turn speculation on above a batch where it is off: the closest config leaves it off",
        )
    clipped = [min(k, first) for k in best]
    schedule = {last: k for _first, last, k in base.runs_of(clipped)}
    why = ""
    if clipped != best:
        why = f"k above {first} at larger batches clipped: no value of draft_len_schedule may exceed max_draft_len"
    return schedule, clipped, why


def _from_keys(best: list[int]) -> tuple[dict[int, int], list[int], str]:
    """The Drafter lookup (NGram, and every Drafter before PR #10860): {first batch of a range: k}; below the first
    key, 0."""
    on = [batch for batch, k in enumerate(best, start=1) if k > 0]
    start = on[0]
    first = best[start - 1]
    clipped = [0 if batch < start else min(k, first) for batch, k in enumerate(best, start=1)]
    schedule = {first_batch: k for first_batch, _last, k in base.runs_of(clipped) if first_batch >= start}
    notes = []
    if clipped != best:
        notes.append(f"k above {first} clipped: no value of draft_len_schedule may exceed max_draft_len")
    return schedule, clipped, "; ".join(notes)


def _tree_config(
    request: base.ConfigRequest,
    version: base.EngineVersion,
    config: dict[str, Any],
    notes: list[str],
    placeholders: tuple[str, ...],
) -> base.Exported:
    tree = request.tree
    assert tree is not None
    kind = config["decoding_type"] if config["decoding_type"] in ("Eagle3", "MTP") else "Eagle3"
    if kind != config["decoding_type"]:
        notes.append(f"trees belong to Eagle3 and MTP: decoding_type {kind}")
    config["decoding_type"] = kind
    if kind == "Eagle3" and "speculative_model" not in config:
        config["speculative_model"] = PLACEHOLDER_MODEL
        placeholders = (PLACEHOLDER_MODEL,)
    paths = base.tree_paths(tree)
    width = max(tree.ranks)
    if not version.can(STATIC_TREES):
        config["max_draft_len"] = tree.depth
        config["use_dynamic_tree"] = True
        config["dynamic_tree_max_topK"] = width
        config["max_total_draft_tokens"] = min(max(len(paths), tree.depth), width * tree.depth)
        notes.append(
            "TensorRT-LLM removed static trees (eagle_choices, PR #18210): a dynamic tree of the same depth, width "
            "and node budget is written; it picks its nodes by the draft's scores at run time"
        )
    else:
        config["max_draft_len"] = tree.depth
        config["max_total_draft_tokens"] = len(paths)
        config[TREE.key] = TREE.write(paths)
        notes.append("eagle_choices: a static tree, each node the 0-based ranks of the choices from the root")
    document = {"max_batch_size": request.batch_limit, "speculative_config": config}
    return base.Exported(document, [], _yaml(document), notes, placeholders=placeholders)


def _yaml(document: dict[str, Any]) -> str:
    text: str = yaml.safe_dump(document, sort_keys=False, default_flow_style=None)
    return text
