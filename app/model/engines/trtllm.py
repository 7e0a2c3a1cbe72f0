"""TensorRT-LLM: everything specdec-lab knows of it.

Versions, named by the month of the change that set their format:

- ``2025-10``: ``draft_len_schedule`` as added by PR #8194: a key is the batch from which its draft length
  holds; the schedule must hold batch 1 with ``max_draft_len``; static trees as ``eagle_choices``;
  reports as iteration statistics JSON only.
- ``2026-03``: PR #10860: on the one-model path (Draft_Target, Eagle3, MTP, PARD, DFlash, SA) a key is the
  *inclusive upper* batch of its range and batches above the last key get 0; the smallest key's value must be
  ``max_draft_len``; ``max_concurrency`` and ``draft_len_schedule`` are mutually exclusive.  NGram keeps the
  old "from this batch on" lookup (the Drafter path).  Prometheus counters ``trtllm_spec_decode_*``
  (PR #12545) and per token position (PR #12636).
- ``2026-09``: PR #18210 removed ``eagle_choices`` (no static tree); PR #18721 the two-model path.

Every config class is a StrictBaseModel: unknown keys are refused.
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import yaml

from app.model.engines.base import (
    ConfigRequest,
    ConfigRuleError,
    EngineVersion,
    Exported,
    RulesMetrics,
    Source,
    describe_batches,
    differences,
    runs_of,
    tree_paths,
)
from app.model.engines.reports import (
    ErrorKind,
    Measurement,
    PrometheusNames,
    ReadOptions,
    ReportFormat,
    counter_measurement,
    fail,
    groups,
    has_key,
    integral,
    number,
)

NAME = "trtllm"
TITLE = "TensorRT-LLM"
REPOSITORY = "NVIDIA/TensorRT-LLM"

LLM_ARGS = Source(
    REPOSITORY,
    "tensorrt_llm/llmapi/llm_args.py",
    "0004396720054fd8e205cbf616f21f0b57c6b412",
    "DecodingBaseConfig and subclasses, draft_len_schedule validator, max_concurrency exclusion",
)
LLM_ARGS_2025 = Source(
    REPOSITORY,
    "tensorrt_llm/llmapi/llm_args.py",
    "PR #8194",
    "draft_len_schedule: key 1 required, from-this-batch keys",
)
SPEC_UTILS = Source(
    REPOSITORY,
    "tensorrt_llm/_torch/speculative/utils.py",
    "PR #10860",
    "get_draft_len_for_batch_size: first key >= batch (bisect_left), 0 above the last key",
)
DRAFTER = Source(
    REPOSITORY,
    "tensorrt_llm/_torch/speculative/drafter.py",
    "PR #8194",
    "Drafter.get_draft_len_for_batch_size: last key <= batch (bisect_right), NGram",
)
COLLECTOR = Source(
    REPOSITORY,
    "tensorrt_llm/metrics/collector.py",
    "050f80de",
    "trtllm_spec_decode_* counters (PR #12545), per token_position (PR #12636)",
)
EAGLE_CHOICES_REMOVED = Source(
    REPOSITORY, "tensorrt_llm/llmapi/llm_args.py", "PR #18210", "eagle_choices removed; dynamic tree only"
)

# Capabilities, set once per version below.
UPPER_BOUND_KEYS = "schedule keys are upper bounds"  # PR #10860: a key holds up to its batch (one-model path)
LATE_FIRST_KEY = "schedule may start above batch 1"  # PR #10860: key 1 no longer required
STATIC_TREES = "eagle_choices"  # static trees; removed by PR #18210 (dynamic trees only)

VERSIONS = (
    EngineVersion(
        "2025-10",
        "2025-10",
        "PR #8194 draft_len_schedule (a key holds from that batch on; key 1 required); eagle_choices",
        (LLM_ARGS_2025, DRAFTER),
        "schedule keys are the first batch of each range",
        capabilities=frozenset({STATIC_TREES}),
    ),
    EngineVersion(
        "2026-03",
        "2026-03",
        "PR #10860 keys are inclusive upper bounds on the one-model path, 0 above the last; max_concurrency "
        "exclusive; PR #12545 / #12636 Prometheus counters",
        (LLM_ARGS, SPEC_UTILS, DRAFTER, COLLECTOR),
        "schedule keys are the last batch of each range",
        capabilities=frozenset({UPPER_BOUND_KEYS, LATE_FIRST_KEY, STATIC_TREES}),
    ),
    EngineVersion(
        "2026-09",
        "2026-09",
        "PR #18210 eagle_choices removed (dynamic trees only); PR #18721 two-model path removed",
        (LLM_ARGS, SPEC_UTILS, DRAFTER, COLLECTOR, EAGLE_CHOICES_REMOVED),
        "as 2026-03, without static trees",
        capabilities=frozenset({UPPER_BOUND_KEYS, LATE_FIRST_KEY}),
    ),
)
ALIASES: dict[str, str] = {}

DECODING_TYPES = ("Draft_Target", "Eagle3", "Eagle", "MTP", "NGram", "SA", "PARD", "DFlash", "DSpark")
NEEDS_MODEL = ("Draft_Target", "Eagle", "Eagle3")
# The Drafter path keeps the old lookup (last key <= batch) after PR #10860.
DRAFTER_TYPES = ("NGram",)
PLACEHOLDER_MODEL = "<draft model: a path or hub name>"
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
    }
)
CLASS_FIELDS: dict[str, frozenset[str]] = {
    "Draft_Target": frozenset(),
    "Eagle": EAGLE_FIELDS,
    "Eagle3": EAGLE_FIELDS,
    "MTP": frozenset(
        {"use_relaxed_acceptance_for_thinking", "relaxed_topk", "relaxed_delta", "use_mtp_vanilla"}
        | {"use_dynamic_tree", "dynamic_tree_max_topK", "sa_config"}
    ),
    "NGram": frozenset({"max_matching_ngram_size", "is_keep_all", "is_use_oldest", "is_public_pool"}),
    "SA": frozenset({"max_matching_ngram_size", "enable_global_pool", "global_pool_size"}),
    "PARD": frozenset({"mask_token_id", "sa_config"}),
    "DFlash": frozenset({"mask_token_id", "target_layer_ids", "attention_backend"}),
    "DSpark": frozenset({"mask_token_id", "target_layer_ids", "block_size", "markov_rank", "markov_head_type"}),
}
TOP_LEVEL = frozenset({"speculative_config", "max_batch_size"})


def decoding_type(given: str | None) -> str:
    if given is None or not given.strip():
        return "Draft_Target"
    for name in DECODING_TYPES:
        if given.strip().lower().replace("-", "_") in (name.lower(), name.lower().replace("_", "")):
            return name
    raise ValueError(f"TensorRT-LLM decoding_type must be one of {', '.join(DECODING_TYPES)}; got {given!r}")


# ---------------------------------------------------------------------------
# Config writer


def write_config(request: ConfigRequest, version: EngineVersion) -> Exported:
    """extra_llm_api_options YAML: speculative_config with the schedule in this version's key meaning."""
    best = list(request.best_k)
    kind = decoding_type(request.method)
    limit = request.batch_limit
    if not best or max(best) == 0:
        return Exported(None, [], "", ["no k pays at any batch that fits: leave speculative_config out"])
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
    old_lookup = not version.can(UPPER_BOUND_KEYS) or kind in DRAFTER_TYPES
    if old_lookup and not version.can(LATE_FIRST_KEY) and best[0] == 0:
        schedule, runs, why = _upper_keys(best)  # key 1 is required before PR #10860: no later start either
    else:
        schedule, runs, why = (_from_keys if old_lookup else _upper_keys)(best)
    if not schedule:
        return Exported(None, [], "", [why], runs=tuple([0] * limit), differs_at=differences(best, [0] * limit))
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
    differ = differences(best, runs)
    if differ:
        notes.append(f"TensorRT-LLM runs another k than the schedule at batches {describe_batches(differ)}")
    document = {"max_batch_size": limit, "speculative_config": config}
    notes.append(f"max_batch_size {limit}: the largest batch whose weights and KV caches fit")
    return Exported(
        document,
        [],
        _yaml(document),
        notes,
        runs=tuple(runs),
        differs_at=differ,
        placeholders=placeholders,
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
            f"{describe_batches(paying)}; TensorRT-LLM's schedule must give its first range max_draft_len > 0, "
            "so it cannot turn speculation on above a batch where it is off: the closest config leaves it off",
        )
    clipped = [min(k, first) for k in best]
    schedule = {last: k for _first, last, k in runs_of(clipped)}
    why = ""
    if clipped != best:
        why = f"k above {first} at larger batches clipped: no value of draft_len_schedule may exceed max_draft_len"
    return schedule, clipped, why


def _from_keys(best: list[int]) -> tuple[dict[int, int], list[int], str]:
    """The Drafter lookup (and all of 2025-10): {first batch of a range: k}; below the first key, 0."""
    on = [batch for batch, k in enumerate(best, start=1) if k > 0]
    start = on[0]
    first = best[start - 1]
    clipped = [0 if batch < start else min(k, first) for batch, k in enumerate(best, start=1)]
    schedule = {first_batch: k for first_batch, _last, k in runs_of(clipped) if first_batch >= start}
    notes = []
    if clipped != best:
        notes.append(f"k above {first} clipped: no value of draft_len_schedule may exceed max_draft_len")
    return schedule, clipped, "; ".join(notes)


def _tree_config(
    request: ConfigRequest,
    version: EngineVersion,
    config: dict[str, Any],
    notes: list[str],
    placeholders: tuple[str, ...],
) -> Exported:
    tree = request.tree
    assert tree is not None
    kind = config["decoding_type"] if config["decoding_type"] in ("Eagle3", "MTP") else "Eagle3"
    if kind != config["decoding_type"]:
        notes.append(f"trees belong to Eagle3 and MTP: decoding_type {kind}")
    config["decoding_type"] = kind
    if kind == "Eagle3" and "speculative_model" not in config:
        config["speculative_model"] = PLACEHOLDER_MODEL
        placeholders = (PLACEHOLDER_MODEL,)
    paths = tree_paths(tree)
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
        config["eagle_choices"] = paths
        notes.append("eagle_choices: a static tree, each node the 0-based ranks of the choices from the root")
    document = {"max_batch_size": request.batch_limit, "speculative_config": config}
    return Exported(document, [], _yaml(document), notes, placeholders=placeholders)


def _yaml(document: dict[str, Any]) -> str:
    text: str = yaml.safe_dump(document, sort_keys=False, default_flow_style=None)
    return text


# ---------------------------------------------------------------------------
# Config reader: the draft length TensorRT-LLM runs at each batch, and its rules


def read_config(exported: Exported, version: EngineVersion, batch_limit: int) -> list[int]:
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
    if schedule is None and concurrency is not None:
        schedule = {concurrency: max_draft}
    if schedule is None:
        return [max_draft] * batch_limit
    checked = _check_schedule(schedule, max_draft, version)
    old_lookup = not version.can(UPPER_BOUND_KEYS) or kind in DRAFTER_TYPES
    lookup = _from_key_lookup if old_lookup else _upper_key_lookup
    return [lookup(checked, batch) for batch in range(1, batch_limit + 1)]


def _check_schedule(schedule: Any, max_draft: int, version: EngineVersion) -> dict[int, int]:
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


def _check_tree(config: Mapping[str, Any], version: EngineVersion, where: str) -> None:
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


# ---------------------------------------------------------------------------
# Reports

PROMETHEUS = PrometheusNames(
    prefix="trtllm",
    running="num_requests_running",
    position_label="token_position",
    counters=("spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens"),
)
TRT_NAMES = {
    "drafted": ("numDraftTokens", "num_draft_tokens"),
    "accepted": ("numAcceptedTokens", "num_accepted_tokens"),
    "requests": ("numRequestsWithDraftTokens", "num_requests_with_draft_tokens"),
    "length": ("acceptanceLength", "acceptance_length"),
}


def _pick(mapping: Mapping[str, Any], names: tuple[str, ...]) -> Any:
    for name in names:
        if name in mapping:
            return mapping[name]
    return None


def _iterations(payload: Any) -> list[Mapping[str, Any]]:
    if isinstance(payload, Mapping):
        for key in ("stats", "iteration_stats", "iterations"):
            if isinstance(payload.get(key), list):
                return [item for item in payload[key] if isinstance(item, Mapping)]
        return [payload]
    if isinstance(payload, list):
        items = []
        for item in payload:
            if isinstance(item, str):  # LLM.get_stats() can hand out each iteration as a JSON string
                try:
                    item = json.loads(item)
                except json.JSONDecodeError:
                    continue
            if isinstance(item, Mapping):
                items.append(item)
        return items
    return []


def _detect_stats(text: str, payload: Any) -> bool:
    return payload is not None and has_key(payload, ("specDecodingStats", "spec_decoding_stats", "specdec_stats"))


def _read_stats(text: str, payload: Any, options: ReadOptions) -> list[Measurement]:
    drafted = accepted = requests = 0.0
    batches = []
    inconsistent = used = 0
    for index, iteration in enumerate(_iterations(payload)):
        spec = _pick(iteration, ("specDecodingStats", "spec_decoding_stats", "specdec_stats"))
        if not isinstance(spec, Mapping):
            continue
        values = {}
        for key, names in TRT_NAMES.items():
            raw = _pick(spec, names)
            if raw is None and key != "length":
                raise fail(
                    ErrorKind.MISSING_COUNTER, f"TensorRT-LLM: iteration {index}: specDecodingStats has no {names[0]}"
                )
            values[key] = None if raw is None else number(raw, f"iteration {index} {names[0]}")
        if not values["drafted"]:
            continue
        drafted_here, accepted_here, requests_here = values["drafted"], values["accepted"], values["requests"]
        assert accepted_here is not None and requests_here is not None
        if accepted_here > drafted_here:
            raise fail(
                ErrorKind.INCONSISTENT,
                f"iteration {index}: numAcceptedTokens ({accepted_here:g}) exceed numDraftTokens ({drafted_here:g})",
            )
        if requests_here <= 0:
            raise fail(ErrorKind.INCONSISTENT, f"iteration {index}: draft tokens but numRequestsWithDraftTokens is 0")
        length = values["length"]
        expected = 1.0 + accepted_here / requests_here
        if length is not None and length > 0 and abs(length - expected) > 1e-3 * expected:
            inconsistent += 1
        drafted += drafted_here
        accepted += accepted_here
        requests += requests_here
        used += 1
        inflight = _pick(iteration, ("inflightBatchingStats", "inflight_batching_stats"))
        generation = _pick(inflight, ("numGenRequests", "num_gen_requests")) if isinstance(inflight, Mapping) else None
        active = _pick(iteration, ("numActiveRequests", "num_active_requests"))
        batch = generation if generation is not None else active
        if isinstance(batch, int | float) and not isinstance(batch, bool) and math.isfinite(batch) and batch >= 0:
            batches.append(float(batch))
    if used == 0:
        raise fail(ErrorKind.ZERO_DRAFTS, "no iteration with draft tokens (numDraftTokens > 0): nothing was speculated")
    notes = [f"{used} iterations with draft tokens summed"]
    if inconsistent:
        notes.append(f"{inconsistent} iterations report an acceptanceLength other than 1 + accepted / requests")
    k, source = options.k, "given"
    if k is None:
        k = integral(drafted / requests, 1e-6)
        source = "numDraftTokens / numRequestsWithDraftTokens"
        if k is None:
            k = math.ceil(drafted / requests)
            source = "rounded up from numDraftTokens / numRequestsWithDraftTokens (drafts of varying length)"
    return [
        Measurement(
            engine=NAME,
            format="trtllm-iteration-stats",
            label=None,
            cycles=requests,
            draft_tokens=drafted,
            accepted=accepted,
            k=k,
            k_source=source,
            batch=float(np.mean(batches)) if batches else None,
            notes=tuple(notes),
            draft_lengths=options.draft_lengths,
            version="2026-03",
        )
    ]


def _detect_metrics(text: str, payload: Any) -> bool:
    return payload is None and re.search(r"(?m)^trtllm[:_]spec_decode_", text) is not None


def _read_metrics(text: str, payload: Any, options: ReadOptions) -> list[Measurement]:
    """Per token position: drafted_tokens{token_position} and accepted_tokens{token_position} (PR #12636).

    Position 0's drafted count is the number of drafts (every draft has a first token), so these give the
    drafts, the draft tokens, and accepted tokens per position; the iteration counters alone have no drafts.
    """
    found, running = groups(text, PROMETHEUS, options.label)
    if not found:
        raise fail(ErrorKind.UNRELATED, "TensorRT-LLM: no trtllm_spec_decode_* series")
    measurements = []
    for key, group in sorted(found.items()):
        drafted = group.positions.get("spec_decode_drafted_tokens", {})
        accepted = group.positions.get("spec_decode_accepted_tokens", {})
        if not drafted or not accepted:
            present = ", ".join(sorted({*group.sums, *group.gauges, *group.positions})) or "nothing"
            raise fail(
                ErrorKind.MISSING_COUNTER,
                "TensorRT-LLM: missing trtllm_spec_decode_drafted_tokens_total and "
                "trtllm_spec_decode_accepted_tokens_total per token_position (PR #12636; they need "
                f"return_perf_metrics: true); found {present}",
            )
        width = max(drafted) + 1
        drafted_at = [drafted.get(i, 0.0) for i in range(width)]
        accepted_at = [accepted.get(i, 0.0) for i in range(width)]
        drafts = drafted_at[0]
        notes = ("drafts = drafted tokens at position 0; k = the positions drafted",)
        lengths = options.draft_lengths
        if not lengths and any(abs(value - drafts) > 1e-9 * max(drafts, 1.0) for value in drafted_at):
            # drafted per position tells how many drafts reached each position: the mix of lengths is known
            reached = [*drafted_at, 0.0]
            lengths = tuple(i for i in range(1, width + 1) if reached[i - 1] - reached[i] > 0)
        measurements.append(
            counter_measurement(
                NAME,
                "trtllm-metrics",
                key or None,
                drafts,
                float(sum(drafted_at)),
                float(sum(accepted_at)),
                tuple(accepted_at),
                ReadOptions(options.k, options.label, options.cycles, lengths),
                batch=running,
                series=len(group.series),
                version="2026-03",
                notes=notes,
            )
        )
    return measurements


REPORTS = (
    ReportFormat(
        "trtllm-iteration-stats",
        NAME,
        "TensorRT-LLM iteration statistics JSON: specDecodingStats per iteration",
        ("2025-10", "2026-03", "2026-09"),
        _detect_stats,
        _read_stats,
    ),
    ReportFormat(
        "trtllm-metrics",
        NAME,
        "TensorRT-LLM /prometheus/metrics: trtllm_spec_decode_* counters per token_position",
        ("2026-03", "2026-09"),
        _detect_metrics,
        _read_metrics,
    ),
)


METHODS = DECODING_TYPES
METHOD_ALIAS = "trtllm_decoding_type"  # the older query parameter for method=, kept as an alias
HOW_TO_APPLY = (  # what the off-schedule alert tells an operator to do
    "set draft_len_schedule in speculative_config to the schedule (specdec-lab config --engine trtllm writes it)"
)


def choose_method(given: str | None) -> str | None:
    """The decoding_type as TensorRT-LLM spells it (None: Draft_Target)."""
    return decoding_type(given) if given else None


# ---------------------------------------------------------------------------
# Prometheus rules: the series each version exports (tensorrt_llm/metrics/collector.py)

RULES_METRICS = {
    "2025-10": RulesMetrics(
        running="trtllm_num_requests_running",
        scrape_format="trtllm-metrics",
        missing="TensorRT-LLM 2025-10 exports no spec-decode series to Prometheus: "
        "trtllm_spec_decode_drafted_tokens_total and trtllm_spec_decode_accepted_tokens_total per token_position "
        "came with PR #12545 and PR #12636 (2026-03); read its iteration statistics with calibrate instead",
    ),
    **{
        name: RulesMetrics(
            running="trtllm_num_requests_running",
            scrape_format="trtllm-metrics",
            per_position="trtllm_spec_decode_accepted_tokens_total",
            drafted_per_position="trtllm_spec_decode_drafted_tokens_total",
            position_label="token_position",
            k_from="longest-draft",
            loses=(
                "the counters need return_perf_metrics: true; without it they stay empty and no rule has data",
                "the k run at each batch is not exported: the schedule check takes the longest draft in the window "
                "(the last token_position drafted), which sees a server drafting longer than the schedule, not one "
                "drafting shorter",
            ),
        )
        for name in ("2026-03", "2026-09")
    },
}
