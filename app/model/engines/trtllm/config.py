"""TensorRT-LLM's drafters and its config: which methods it takes and how a request names them, its config read back the
way its own code reads it, and written for a schedule.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Mapping
from typing import Any

import yaml

from app.model.engines import base
from app.model.engines.base import ConfigRuleError
from app.model.engines.trtllm.versions import (
    LATE_FIRST_KEY,
    LLM_ARGS,
    LLM_ARGS_2025,
    ONE_MODEL_SCHEDULE,
    STATIC_TREES,
    TWO_MODEL,
    TWO_MODEL_DRAFTER,
    UPPER_BOUND_KEYS,
)

DECODING_TYPES = ("Draft_Target", "Eagle3", "Eagle", "MTP", "NGram", "SA", "PARD", "DFlash", "DSpark", "AUTO")


# interface.py @ 00b6d5a25c30 support_dynamic_draft_len leaves DSpark out: one max_draft_len at every batch;
# AUTO (AutoDecodingConfig) chooses its own NGram setting (auto_heuristic.py), so no schedule is written for it
STATIC_TYPES = ("DSpark",)


CHOSEN_BY_ENGINE = ("AUTO",)


WRITTEN_TYPES = tuple(name for name in DECODING_TYPES if name not in CHOSEN_BY_ENGINE)


NEEDS_MODEL = ("Draft_Target", "Eagle", "Eagle3")


# The decoding_type that runs each head the setup prices, where no method is given.
HEAD_METHODS = {"eagle": "Eagle", "eagle3": "Eagle3", "mtp": "MTP"}


# The Drafter path keeps the old lookup (last key <= batch) after PR #10860: NGram, and the two-model path of Eagle3
# and MTP where the version has it (config_reader.two_model_path; the writer never writes that path).
DRAFTER_TYPES = ("NGram",)


# Where the one-model path runs no schedule (before PR #10860: versions without ONE_MODEL_SCHEDULE), a
# draft_len_schedule runs only through a Drafter: utils.py get_spec_drafter of that era gives NGram an NGramDrafter
# and Draft_Target a ModelDrafter (test_draft_len_schedule.py's Stage 1 drafts with both), and the two-model switches
# give Eagle3 / MTP-Eagle one (config_reader.two_model_path); every other type is one-model there and runs its
# max_draft_len at every batch (versions.STAGE_ONE_EXECUTOR).
STAGE_ONE_DRAFTER_TYPES = ("NGram", "Draft_Target")


PLACEHOLDER_MODEL = "<draft model: a path or hub name>"


def decoding_type(given: str | None) -> str:
    if given is None or not given.strip():
        return "Draft_Target"
    if given.strip().upper() in CHOSEN_BY_ENGINE:
        raise ValueError(
            "TensorRT-LLM decoding_type AUTO chooses its own drafter (auto_heuristic.py suggest_spec_config: NGram, "
            "max_draft_len 5 up to max_batch_size 4 else 3, none above 32 requests), so no schedule can be written "
            f"into it; pick one of {', '.join(WRITTEN_TYPES)} to run the schedule"
        )
    for name in WRITTEN_TYPES:
        if given.strip().lower().replace("-", "_") in (name.lower(), name.lower().replace("_", "")):
            return name
    raise ValueError(f"TensorRT-LLM decoding_type must be one of {', '.join(WRITTEN_TYPES)}; got {given!r}")


METHODS = WRITTEN_TYPES


METHOD_ALIAS = "trtllm_decoding_type"  # the older query parameter for method=, kept as an alias


def choose_method(given: str | None) -> str | None:
    """The decoding_type as TensorRT-LLM spells it (None: Draft_Target)."""
    return decoding_type(given) if given else None


BASE_FIELDS = frozenset(
    {
        "decoding_type",
        "max_draft_len",
        "max_total_draft_tokens",
        "speculative_model",
        "speculative_model_dir",
        "max_concurrency",
        "draft_len_schedule",
        "load_format",
        "acceptance_rate_window_size",
        "acceptance_rate_threshold",
        "use_rejection_sampling",
        "allow_advanced_sampling",
        "advanced_sampling_mode",
        "enable_penalty",
    }
)


EAGLE_FIELDS = frozenset(
    {
        "eagle_choices",
        "greedy_sampling",
        "posterior_threshold",
        "use_dynamic_tree",
        "dynamic_tree_max_topK",
        "num_eagle_layers",
        "max_non_leaves_per_layer",
        "eagle3_layers_to_capture",
        "eagle3_model_arch",
        "sa_config",
        # llm_args.py: one-model (draft as submodule) or two-model where the version has it (two_model_path);
        # @ 0004396720054f false is ignored and set back to true
        "eagle3_one_model",
    }
)


CLASS_FIELDS: dict[str, frozenset[str]] = {
    "Draft_Target": frozenset(),
    "Eagle": EAGLE_FIELDS,
    "Eagle3": EAGLE_FIELDS,
    "MTP": frozenset(
        {"use_relaxed_acceptance_for_thinking", "relaxed_topk", "relaxed_delta", "use_mtp_vanilla"}
        | {"use_dynamic_tree", "dynamic_tree_max_topK", "sa_config"}
        # llm_args.py @ 0004396720054f MTPDecodingConfig: mtp_eagle_one_model, the thinking-phase tokens, and the
        # deprecated num_nextn_predict_layers (remapped to max_draft_len when that is absent)
        | {"mtp_eagle_one_model", "begin_thinking_phase_token", "end_thinking_phase_token", "num_nextn_predict_layers"}
    ),
    "NGram": frozenset({"max_matching_ngram_size", "is_keep_all", "is_use_oldest", "is_public_pool"}),
    "SA": frozenset({"max_matching_ngram_size", "enable_global_pool", "global_pool_size"}),
    "PARD": frozenset({"mask_token_id", "sa_config"}),
    "DFlash": frozenset({"mask_token_id", "target_layer_ids", "attention_backend"}),
    "DSpark": frozenset(
        {"mask_token_id", "target_layer_ids", "block_size", "markov_rank", "markov_head_type", "attention_backend"}
    ),
    "AUTO": frozenset(),  # AutoDecodingConfig: the inherited fields are ignored
}


# _torch/speculative/interface.py @ 00b6d5a25c30 support_dynamic_draft_len: MTP and Eagle3 one-model, PARD, DFlash,
# Draft_Target one-model and SA; not DSpark, which therefore runs its static max_draft_len at every batch
STATIC_ONLY = ("DSpark",)


def _auto_runs(max_batch: int, batch_limit: int) -> list[int]:
    """_torch/speculative/auto_heuristic.py @ f00d21a3c099 suggest_spec_config: NGram with max_draft_len 5 where
    max_batch_size <= 4, else 3, and max_concurrency 32 (drafter.py: it drafts while the batch is <= 32)."""
    k = 5 if max_batch <= 4 else 3
    return [k if batch <= 32 else 0 for batch in range(1, batch_limit + 1)]


TOP_LEVEL = frozenset({"speculative_config", "max_batch_size"})


def read_config(exported: base.Exported, version: base.EngineVersion, batch_limit: int) -> list[int]:
    """Read the YAML as TensorRT-LLM's LLM API does; the k of each batch 1..batch_limit."""
    where = LLM_ARGS.cite()
    document = yaml.safe_load(exported.text)
    if not isinstance(document, Mapping):
        raise ConfigRuleError("extra_llm_api_options must be a mapping", where)
    unknown_top = sorted(set(document) - TOP_LEVEL)
    if unknown_top:
        raise ConfigRuleError(f"unexpected top-level keys {unknown_top}", where)
    max_batch = document.get("max_batch_size", 2048)
    if not isinstance(max_batch, int) or max_batch < batch_limit:
        raise ConfigRuleError(f"max_batch_size {max_batch!r} is below the batch {batch_limit}", where)
    config = document.get("speculative_config")
    if not isinstance(config, Mapping):
        raise ConfigRuleError("speculative_config must be a mapping", where)
    kind = config.get("decoding_type")
    if kind not in DECODING_TYPES:
        raise ConfigRuleError(f"decoding_type {kind!r} is not a member of the SpeculativeConfig union", where)
    allowed = BASE_FIELDS | CLASS_FIELDS[kind]
    if not version.can(STATIC_TREES):
        allowed = allowed - {"eagle_choices"}
    unknown = sorted(set(config) - allowed)
    if unknown:
        raise ConfigRuleError(f"unknown keys {unknown}: the decoding configs are StrictBaseModel", where)
    if kind == "AUTO":
        return _auto_runs(max_batch, batch_limit)
    if kind == "MTP" and "num_nextn_predict_layers" in config and config.get("max_draft_len") is None:
        config = {**config, "max_draft_len": config["num_nextn_predict_layers"]}
    model = config.get("speculative_model", config.get("speculative_model_dir"))
    if kind in NEEDS_MODEL and model is None:
        raise ConfigRuleError(f"speculative_model must be specified for {kind}", where)
    if model is not None and (not isinstance(model, str) or not re.match(r"^[~./A-Za-z0-9_\-]+$", model)):
        raise ConfigRuleError(f"speculative_model {model!r} is not a path or hub name", where)
    max_draft = config.get("max_draft_len")
    if max_draft is not None and (isinstance(max_draft, bool) or not isinstance(max_draft, int) or max_draft < 0):
        raise ConfigRuleError("max_draft_len must be a non-negative integer", where)
    if kind != "MTP" and not max_draft:
        raise ConfigRuleError(f"max_draft_len must be > 0 for {kind}", where)
    concurrency = config.get("max_concurrency")
    schedule = config.get("draft_len_schedule")
    if concurrency is not None and schedule is not None:
        raise ConfigRuleError("max_concurrency and draft_len_schedule are mutually exclusive", where)
    if concurrency is not None and (not isinstance(concurrency, int) or concurrency < 1):
        raise ConfigRuleError("max_concurrency must be a positive integer", where)
    _check_tree(config, version, where)
    assert isinstance(max_draft, int)
    if concurrency is not None:
        # drafter.py @ 83ab45a50d16 should_use_spec_decode: `num_effective_requests <= self.max_concurrency`, the
        # requests capped by max_batch_size (>= batch_limit, checked above) and max_num_tokens // (1 + k); the older
        # @ 1ff19bbc84ad `len(requests) <= self.max_concurrency`: k up to max_concurrency, none above
        return [max_draft if batch <= concurrency else 0 for batch in range(1, batch_limit + 1)]
    if schedule is None:
        return [max_draft] * batch_limit
    checked = _check_schedule(schedule, max_draft, version)
    if kind in STATIC_ONLY:
        return [max_draft] * batch_limit
    drafter = [_from_key_lookup(checked, batch) for batch in range(1, batch_limit + 1)]
    if kind in DRAFTER_TYPES or (not version.can(ONE_MODEL_SCHEDULE) and kind in STAGE_ONE_DRAFTER_TYPES):
        return drafter
    if not version.can(ONE_MODEL_SCHEDULE):
        # versions.STAGE_ONE_EXECUTOR: the schedule is validated (above) and applied only through a Drafter, which
        # the one-model path has none of: it runs max_draft_len at every batch
        one_model = [max_draft] * batch_limit
        one_model_reads = "max_draft_len at every batch, the schedule unapplied"
    elif version.can(UPPER_BOUND_KEYS):
        one_model = [_upper_key_lookup(checked, batch) for batch in range(1, batch_limit + 1)]
        one_model_reads = "the one-model lookup"
    else:
        one_model, one_model_reads = drafter, "the Drafter's lookup"
    path = two_model_path(kind, config, version)
    if path == "two-model":
        return drafter
    if path == "checkpoint" and drafter != one_model:
        differ = base.describe_batches(base.differences(drafter, one_model))
        raise ConfigRuleError(
            "mtp_eagle_one_model false: the k depends on the checkpoint's MTP layer count, which the config does not "
            "hold (one layer: two-model MTP-Eagle, the Drafter's lookup; more: vanilla MTP on the one-model path, "
            f"{one_model_reads}), and the two differ at batches {differ}; set use_mtp_vanilla, or leave "
            "mtp_eagle_one_model true",
            TWO_MODEL_DRAFTER.cite(),
        )
    return one_model


def two_model_path(kind: str, config: Mapping[str, Any], version: base.EngineVersion) -> str:
    """Which path the config runs: "one-model", "two-model", or "checkpoint" (MTP: it depends on the layers).

    eagle3_one_model / mtp_eagle_one_model false select the two-model path (EAGLE3, MTP_EAGLE) where the version has
    it; llm_args.py @ 0004396720054f (PR #18721) ignores them and sets them back to true.  MTPDecodingConfig
    .spec_dec_mode: MTP_EAGLE only where the checkpoint has one MTP layer and use_mtp_vanilla is off, else vanilla
    MTP (one-model)."""
    if not version.can(TWO_MODEL):
        return "one-model"
    if kind in ("Eagle", "Eagle3") and config.get("eagle3_one_model") is False:
        return "two-model"
    if kind == "MTP" and config.get("mtp_eagle_one_model") is False and not config.get("use_mtp_vanilla"):
        return "checkpoint"
    return "one-model"


def _check_schedule(schedule: Any, max_draft: int, version: base.EngineVersion) -> dict[int, int]:
    where = (LLM_ARGS if version.can(UPPER_BOUND_KEYS) else LLM_ARGS_2025).cite()
    if not isinstance(schedule, Mapping) or not schedule:
        raise ConfigRuleError("draft_len_schedule must be a non-empty mapping", where)
    checked: dict[int, int] = {}
    for key, value in schedule.items():
        if isinstance(key, bool) or not isinstance(key, int) or key < 1:
            raise ConfigRuleError(f"draft_len_schedule: batch size threshold must be >= 1, got {key!r}", where)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigRuleError(f"draft_len_schedule[{key}]: draft length must be >= 0", where)
        if value > max_draft:
            raise ConfigRuleError(
                f"draft_len_schedule[{key}] = {value}: all draft lengths must be <= max_draft_len", where
            )
        checked[key] = value
    smallest = min(checked)
    if not version.can(LATE_FIRST_KEY) and smallest != 1:
        raise ConfigRuleError("draft_len_schedule must include batch_size=1", where)
    if checked[smallest] != max_draft:
        raise ConfigRuleError(f"draft_len_schedule[{smallest}] must equal max_draft_len ({max_draft})", where)
    return dict(sorted(checked.items()))


def _upper_key_lookup(schedule: dict[int, int], batch: int) -> int:
    """get_draft_len_for_batch_size (one-model path): the first key >= batch; 0 above the last key."""
    keys = list(schedule)
    index = bisect.bisect_left(keys, batch)
    return schedule[keys[index]] if index < len(keys) else 0


def _from_key_lookup(schedule: dict[int, int], batch: int) -> int:
    """Drafter.get_draft_len_for_batch_size: the last key <= batch; 0 below the first key."""
    keys = list(schedule)
    index = bisect.bisect_right(keys, batch) - 1
    return schedule[keys[index]] if index >= 0 else 0


def _check_tree(config: Mapping[str, Any], version: base.EngineVersion, where: str) -> None:
    choices = config.get("eagle_choices")
    dynamic = config.get("use_dynamic_tree", False)
    max_draft = config.get("max_draft_len")
    if choices is not None:
        if dynamic:
            raise ConfigRuleError("If eagle_choices is provided, use_dynamic_tree should be False", where)
        if not isinstance(choices, list) or not all(isinstance(path, list) for path in choices):
            raise ConfigRuleError("eagle_choices must be a list of lists of ints", where)
        known = {()}
        for path in sorted(choices, key=len):
            if tuple(path[:-1]) not in known:
                raise ConfigRuleError(f"eagle_choices node {path} is not connected to its parent", where)
            known.add(tuple(path))
        depth = max(len(path) for path in choices)
        if max_draft != depth or config.get("max_total_draft_tokens", len(choices)) != len(choices):
            raise ConfigRuleError(
                "with eagle_choices, max_draft_len is the depth and max_total_draft_tokens the count", where
            )
    if dynamic:
        top_k = config.get("dynamic_tree_max_topK")
        if not isinstance(top_k, int) or top_k <= 0:
            raise ConfigRuleError("dynamic_tree_max_topK should be provided and > 0 with use_dynamic_tree", where)
        assert isinstance(max_draft, int)
        total = config.get("max_total_draft_tokens", top_k * max_draft)
        if not max_draft <= total <= top_k * max_draft:
            raise ConfigRuleError(
                f"max_total_draft_tokens ({total}) must be in [max_draft_len ({max_draft}), "
                f"dynamic_tree_max_topK * max_draft_len ({top_k * max_draft})]",
                where,
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
    notes.append(f"max_batch_size {limit}: {request.limit_reason}")
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
