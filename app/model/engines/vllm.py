"""vLLM: everything specdec-lab knows of it.

Versions are named by the month of the change that set their format (a release from then on uses it):

- ``2025-10``: the V1 engine's spec-decode counters; ``speculative_config`` with ``num_speculative_tokens``,
  ``method``, ``model`` and ``speculative_token_tree``; no per-batch draft length; unknown keys ignored.
- ``2026-06``: unknown keys refused (``@config`` became a pydantic dataclass with extra="forbid", PR #31541);
  tree attention and ``speculative_token_tree`` removed (PR #42121); the per-batch schedule
  ``num_speculative_tokens_per_batch_size`` (PR #32374), checked when the scheduler starts
  (``validate_and_normalize_dynamic_sd_schedule``) and looked up per step by the number of scheduled requests.
- ``2026-08``: per-request acceptance in the response, ``metrics.speculative_decoding``, with
  ``--per-request-spec-decode-metrics summary|detailed`` (PR #48915, in 0.29).

The config reader below follows vLLM's own reading of each key; each rule names the file it comes from.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.model.engines.base import (
    ConfigRequest,
    ConfigRuleError,
    EngineVersion,
    Exported,
    RulesMetrics,
    Source,
    describe_batches,
    differences,
    quoted,
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
    number,
    positions_in_order,
)

NAME = "vllm"
TITLE = "vLLM"
REPOSITORY = "vllm-project/vllm"

SPECULATIVE_PY_2025 = Source(
    REPOSITORY,
    "vllm/config/speculative.py",
    "f19b16d95e4395790661f4835e4436bc3dd5d9c7",
    "SpeculativeConfig with speculative_token_tree",
)
SPECULATIVE_PY = Source(
    REPOSITORY,
    "vllm/config/speculative.py",
    "002e77c1f0ef9b19cff8b9e21cfbd6feb3d6b443",
    "SpeculativeConfig: fields, SpeculativeMethod literal, method inference, model-free methods",
)
DYNAMIC_UTILS = Source(
    REPOSITORY,
    "vllm/v1/spec_decode/dynamic/utils.py",
    "a6f6bb1d3c1707ede85d03a7c7d47a105a1873fc",
    "validate_and_normalize_dynamic_sd_schedule, build_dynamic_sd_schedule_lookup",
)
METRICS_PY = Source(
    REPOSITORY,
    "vllm/v1/spec_decode/metrics.py",
    "ee4ceaae5953d367d8edd2132fd86d6c42506e1e",
    "spec_decode counters, per position from 0, labels model_name and engine",
)
PROTOCOL_PY = Source(
    REPOSITORY,
    "vllm/entrypoints/generate/base/protocol.py",
    "567b35aa7b691e82dd80bd41854f8499002d5c0f",
    "SpeculativeDecodingMetrics in the response's metrics.speculative_decoding",
)

# Capabilities, set once per version below.
PER_BATCH_SCHEDULE = "num_speculative_tokens_per_batch_size"  # PR #32374: a draft length per batch range
STATIC_TREES = "speculative_token_tree"  # static trees; gone with tree attention (PR #42121)
STRICT_KEYS = "unknown keys refused"  # PR #31541: SpeculativeConfig forbids extra fields

VERSIONS = (
    EngineVersion(
        "2025-10",
        "2025-10",
        "V1 engine counters; speculative_token_tree; one num_speculative_tokens for every batch",
        (SPECULATIVE_PY_2025, METRICS_PY),
        "one draft length for all batches; static trees",
        capabilities=frozenset({STATIC_TREES}),
    ),
    EngineVersion(
        "2026-06",
        "2026-06",
        "PR #32374 num_speculative_tokens_per_batch_size; PR #42121 tree attention removed; "
        "PR #31541 unknown keys refused",
        (SPECULATIVE_PY, DYNAMIC_UTILS, METRICS_PY),
        "per-batch draft length as inclusive [start, end, k] ranges; no static trees",
        capabilities=frozenset({PER_BATCH_SCHEDULE, STRICT_KEYS}),
    ),
    EngineVersion(
        "2026-08",
        "2026-08",
        "PR #48915 per-request acceptance (metrics.speculative_decoding), first in 0.29",
        (SPECULATIVE_PY, DYNAMIC_UTILS, METRICS_PY, PROTOCOL_PY),
        "as 2026-06, and per-request acceptance in each response",
        capabilities=frozenset({PER_BATCH_SCHEDULE, STRICT_KEYS}),
    ),
)
ALIASES = {"0.29": "2026-08", "0.25": "2026-06"}

MTP_METHODS = (
    "deepseek_mtp",
    "mimo_mtp",
    "glm4_moe_mtp",
    "ernie_mtp",
    "qwen3_next_mtp",
    "longcat_flash_mtp",
    "mtp",
)
METHODS = (
    "ngram",
    "medusa",
    "mlp_speculator",
    "draft_model",
    "suffix",
    "custom_class",
    "eagle",
    "eagle3",
    "extract_hidden_states",
    "dflash",
    "ngram_gpu",
    "dspark",
    *MTP_METHODS,
)
# Methods that need no `model`: vLLM fills it in itself (speculative.py, post-init).
MODEL_FREE = ("ngram", "ngram_gpu", "suffix", "extract_hidden_states", "mtp", "dspark")
PLACEHOLDER_MODEL = "<draft model: a path or hub name>"
FIELDS_2025 = frozenset(
    {
        "num_speculative_tokens",
        "model",
        "method",
        "draft_tensor_parallel_size",
        "quantization",
        "max_model_len",
        "revision",
        "code_revision",
        "disable_by_batch_size",
        "prompt_lookup_max",
        "prompt_lookup_min",
        "speculative_token_tree",
        "enforce_eager",
    }
)
FIELDS = frozenset(
    {
        "enforce_eager",
        "num_speculative_tokens",
        "model",
        "method",
        "draft_tensor_parallel_size",
        "tensor_parallel_size",
        "quantization",
        "moe_backend",
        "attention_backend",
        "kv_cache_dtype",
        "max_model_len",
        "revision",
        "code_revision",
        "index_share_for_mtp_iteration",
        "disable_padded_drafter_batch",
        "disable_eagle_block_drop",
        "use_local_argmax_reduction",
        "use_heterogeneous_vocab",
        "prompt_lookup_max",
        "prompt_lookup_min",
        "parallel_drafting",
        "num_speculative_tokens_per_batch_size",
        "suffix_decoding_max_tree_depth",
        "suffix_decoding_max_cached_requests",
        "suffix_decoding_max_spec_factor",
        "suffix_decoding_min_token_prob",
        "rejection_sample_method",
        "synthetic_acceptance_rates",
        "synthetic_acceptance_length",
        "enable_adaptive_verification",
        "draft_sample_method",
        "dspark_draft_topk",
    }
)
_LOADABLE = re.compile(r"^(/|\./|\.\./|~/)?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")
HOW_TO_APPLY = (  # what the off-schedule alert tells an operator to do
    "set num_speculative_tokens_per_batch_size in --speculative-config to the schedule "
    "(specdec-lab config --engine vllm writes it)"
)


def method_name(given: str | None) -> str | None:
    """vLLM's literal for a method given in any case; a ValueError listing them for an unknown one."""
    if given is None or not given.strip():
        return None
    lowered = given.strip().lower()
    if lowered in METHODS or lowered.endswith("_mtp"):
        return lowered
    raise ValueError(f"vLLM method must be one of {', '.join(METHODS)} (or any *_mtp); got {given!r}")


# ---------------------------------------------------------------------------
# Config writer


def write_config(request: ConfigRequest, version: EngineVersion) -> Exported:
    """speculative_config and --max-num-seqs for the schedule over batch 1..batch_limit."""
    best = list(request.best_k)
    if not best or max(best) == 0:
        return Exported(None, [], "", ["no k pays at any batch that fits: run vLLM without --speculative-config"])
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
        paths = tree_paths(request.tree)
        config["num_speculative_tokens"] = len(paths)
        config["speculative_token_tree"] = str([tuple(path) for path in paths])
        notes.append("a static tree: vLLM verifies every node, so num_speculative_tokens is the node count")
        runs = [len(paths)] * limit
    elif version.can(PER_BATCH_SCHEDULE):
        if request.tree is not None:
            notes.append(
                "vLLM removed tree attention and speculative_token_tree (PR #42121): the chain schedule is written"
            )
        config["num_speculative_tokens"] = max(best)
        config["num_speculative_tokens_per_batch_size"] = [[first, last, k] for first, last, k in runs_of(best)]
        runs = best
    else:
        k = best[min(request.batch, limit) - 1] or max(best)
        config["num_speculative_tokens"] = k
        runs = [k] * limit
        notes.append(
            f"vLLM {version.name} takes one draft length for every batch: k = {k}, the schedule's at batch "
            f"{min(request.batch, limit)}"
        )
    flags = ["--speculative-config", json.dumps(config, separators=(",", ":")), "--max-num-seqs", str(limit)]
    notes.append(f"--max-num-seqs {limit}: the largest batch whose weights and KV caches fit")
    differ = differences(best, runs) if request.tree is None else ()
    if differ:
        notes.append(f"vLLM {version.name} runs another k than the schedule at batches {describe_batches(differ)}")
    shown = json.dumps({"speculative_config": config}, indent=2)
    shown = re.sub(r"\[\s+(\d+),\s+(\d+),\s+(\d+)\s+\]", r"[\1, \2, \3]", shown)  # one range per line
    text = shown + "\n\nvllm serve TARGET_MODEL " + " ".join(quoted(flags))
    return Exported(config, flags, text, notes, runs=tuple(runs), differs_at=differ, placeholders=placeholders)


# ---------------------------------------------------------------------------
# Config reader: the k vLLM runs at each batch, and every rule it applies


def _flag(flags: Sequence[str], name: str) -> str | None:
    for index, flag in enumerate(flags):
        if flag == name and index + 1 < len(flags):
            return flags[index + 1]
        if flag.startswith(name + "="):
            return flag.split("=", 1)[1]
    return None


def _int(value: Any, what: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigRuleError(f"{what} must be an integer; got {value!r}", where)
    return value


def read_config(exported: Exported, version: EngineVersion, batch_limit: int) -> list[int]:
    """Read the flags as vLLM does and return the k it drafts at batch 1..batch_limit."""
    raw = _flag(exported.flags, "--speculative-config")
    if raw is None:
        raise ConfigRuleError("no --speculative-config", "vllm/engine/arg_utils.py")
    config = json.loads(raw)
    if not isinstance(config, Mapping):
        raise ConfigRuleError("--speculative-config must be a JSON object", "vllm/engine/arg_utils.py")
    seqs = _flag(exported.flags, "--max-num-seqs")
    max_num_seqs = int(seqs) if seqs is not None else 256
    if max_num_seqs < batch_limit:
        raise ConfigRuleError(f"--max-num-seqs {max_num_seqs} is below the batch {batch_limit}", "SchedulerConfig")
    where = SPECULATIVE_PY.cite()
    fields = FIELDS_2025 if version.can(STATIC_TREES) else FIELDS  # the SpeculativeConfig of its time
    unknown = sorted(set(config) - fields)
    if unknown and version.can(STRICT_KEYS):
        raise ConfigRuleError(f"unknown keys {unknown}: SpeculativeConfig forbids extra fields", where)
    if config.get("tensor_parallel_size") is not None:
        raise ConfigRuleError("'tensor_parallel_size' is not a valid argument in the speculative_config", where)
    method = config.get("method")
    model = config.get("model")
    if method is not None:
        if method not in METHODS and not (isinstance(method, str) and method.endswith("_mtp")):
            raise ConfigRuleError(f"method {method!r} is not one of SpeculativeMethod's literals", where)
        if method.endswith("_mtp"):
            method = "mtp"
    elif isinstance(model, str) and model in ("ngram", "[ngram]"):
        method = "ngram"
    else:
        method = "draft_model"
    if model is None and method not in MODEL_FREE:
        raise ConfigRuleError(f"num_speculative_tokens was provided but without speculative model ({method})", where)
    if model is not None and (not isinstance(model, str) or not _LOADABLE.match(model)):
        raise ConfigRuleError(f"model {model!r} is not a path or hub name vLLM can load", where)
    if "num_speculative_tokens" not in config:
        raise ConfigRuleError("num_speculative_tokens must be provided (no draft checkpoint n_predict here)", where)
    k_max = _int(config["num_speculative_tokens"], "num_speculative_tokens", where)
    if k_max <= 0:
        raise ConfigRuleError(f"Expected num_speculative_tokens to be greater than zero ({k_max})", where)
    tree = config.get("speculative_token_tree")
    if tree is not None:
        if not version.can(STATIC_TREES):
            raise ConfigRuleError("speculative_token_tree was removed with tree attention (PR #42121)", where)
        nodes = len(ast.literal_eval(tree))  # vLLM reads the tree with ast.literal_eval
        if nodes != k_max:
            raise ConfigRuleError(f"the tree has {nodes} nodes but num_speculative_tokens is {k_max}", where)
    schedule = config.get("num_speculative_tokens_per_batch_size")
    if schedule is None or not version.can(PER_BATCH_SCHEDULE):
        return [k_max] * batch_limit
    return _schedule_lookup(schedule, k_max, max_num_seqs)[1 : batch_limit + 1]


def _schedule_lookup(schedule: Any, k_max: int, max_num_seqs: int) -> list[int]:
    """validate_and_normalize_dynamic_sd_schedule, then build_dynamic_sd_schedule_lookup (index = batch)."""
    where = DYNAMIC_UTILS.cite()
    if not isinstance(schedule, list) or not schedule:
        raise ConfigRuleError("num_speculative_tokens_per_batch_size must be a non-empty list of entries", where)
    entries = []
    for entry in schedule:
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise ConfigRuleError(f"each entry must be a 3-item sequence; got {entry!r}", where)
        start, end, k = (_int(value, "a schedule value", where) for value in entry)
        if start <= 0 or end <= 0:
            raise ConfigRuleError(f"batch-size range ({start}, {end}) must be positive", where)
        if start > end:
            raise ConfigRuleError(f"batch-size range start must be <= end for ({start}, {end}, {k})", where)
        if k < 0:
            raise ConfigRuleError("values must be >= 0", where)
        entries.append((start, end, k))
    entries.sort()
    for (_, previous_end, _), (start, _, _) in itertools.pairwise(entries):
        if start <= previous_end:
            raise ConfigRuleError("batch-size ranges must be non-overlapping and sorted", where)
    if entries[0][0] != 1:
        raise ConfigRuleError("the first batch-size range must start at 1", where)
    lookup = [0] * (max_num_seqs + 1)
    current = 0
    index = 0
    for batch in range(1, max_num_seqs + 1):
        while index < len(entries) and entries[index][0] <= batch:
            current = min(k_max, entries[index][2])
            index += 1
        lookup[batch] = current
    return lookup


# ---------------------------------------------------------------------------
# Reports

PROMETHEUS = PrometheusNames(
    prefix="vllm",
    running="num_requests_running",
    counters=(
        "spec_decode_num_drafts",
        "spec_decode_num_draft_tokens",
        "spec_decode_num_accepted_tokens",
        "spec_decode_num_emitted_tokens",
    ),
)


def _detect_metrics(text: str, payload: Any) -> bool:
    return payload is None and re.search(r"(?m)^vllm[:_]spec_decode_num_drafts", text) is not None


def _detect_metrics_v0(text: str, payload: Any) -> bool:
    return payload is None and re.search(r"(?m)^vllm[:_]spec_decode_", text) is not None


def _read_metrics(text: str, payload: Any, options: ReadOptions) -> list[Measurement]:
    found, running = groups(text, PROMETHEUS, options.label)
    if not found:
        raise fail(ErrorKind.UNRELATED, "vLLM: no vllm:spec_decode_* series: is speculative decoding enabled?")
    measurements = []
    for key, group in sorted(found.items()):
        sums = group.sums
        for needed in ("spec_decode_num_draft_tokens", "spec_decode_num_accepted_tokens"):
            if needed not in sums:
                present = ", ".join(sorted(f"vllm:{name}" for name in sums)) or "only gauges"
                raise fail(ErrorKind.MISSING_COUNTER, f"vLLM: missing counter vllm:{needed}_total; found {present}")
        drafts = sums.get("spec_decode_num_drafts")
        emitted = sums.get("spec_decode_num_emitted_tokens")
        if drafts is None and emitted is None:
            raise fail(
                ErrorKind.MISSING_COUNTER,
                "vLLM: missing vllm:spec_decode_num_drafts_total (V1) and vllm:spec_decode_num_emitted_tokens_total "
                "(V0)",
            )
        per_position = positions_in_order(
            group.positions.get("spec_decode_num_accepted_tokens_per_pos", {}), "vLLM per-position counters"
        )
        if drafts is not None:
            notes: tuple[str, ...] = ()
            if not per_position:
                notes = ("read as vLLM 2026-08 without per-position counters (some builds leave them out)",)
            measurements.append(
                counter_measurement(
                    NAME,
                    "vllm-metrics",
                    key or None,
                    drafts,
                    sums["spec_decode_num_draft_tokens"],
                    sums["spec_decode_num_accepted_tokens"],
                    per_position,
                    options,
                    batch=running,
                    series=len(group.series),
                    version=VERSIONS[-1].name,
                    notes=notes,
                )
            )
            continue
        efficiency = group.gauges.get("spec_decode_efficiency")
        measurements.append(
            Measurement(
                engine=NAME,
                format="vllm-metrics-v0",
                label=key or None,
                cycles=None,
                draft_tokens=sums["spec_decode_num_draft_tokens"],
                accepted=sums["spec_decode_num_accepted_tokens"],
                k=options.k,
                k_source="given" if options.k is not None else "counters",
                batch=running,
                schema="v0",
                emitted=emitted,
                efficiency=efficiency[0] if efficiency and len(efficiency) == 1 else None,
                series=len(group.series),
                version="V0 engine",
            )
        )
    return measurements


REQUEST_KEYS = ("acceptance_histogram", "num_spec_steps", "num_accepted_draft_tokens", "num_draft_tokens")


def _request_metrics(payload: Any) -> list[Mapping[str, Any]]:
    """Every metrics.speculative_decoding object in a response, a list of responses or JSON Lines."""
    items = payload if isinstance(payload, list) else [payload]
    found = []
    for item in items[:100_000]:
        if not isinstance(item, Mapping):
            continue
        metrics = item.get("metrics")
        spec = metrics.get("speculative_decoding") if isinstance(metrics, Mapping) else None
        if spec is None and "speculative_decoding" in item:
            spec = item["speculative_decoding"]
        if spec is None and all(key in item for key in ("num_spec_steps", "num_draft_tokens")):
            spec = item
        if isinstance(spec, Mapping):
            found.append(spec)
    return found


def _detect_request(text: str, payload: Any) -> bool:
    return payload is not None and has_key(payload, ("num_spec_steps", "acceptance_histogram"))


def _read_request(text: str, payload: Any, options: ReadOptions) -> list[Measurement]:
    found = _request_metrics(payload)
    if not found:
        raise fail(ErrorKind.MISSING_COUNTER, "vLLM: no metrics.speculative_decoding object in the JSON")
    steps = drafted = accepted = 0.0
    histogram: list[float] = []
    configured: set[int] = set()
    for index, spec in enumerate(found):
        missing = [key for key in REQUEST_KEYS if key not in spec]
        if missing:
            raise fail(
                ErrorKind.MISSING_COUNTER,
                f"vLLM: response {index}: metrics.speculative_decoding has no {', '.join(missing)}",
            )
        steps += number(spec["num_spec_steps"], f"response {index} num_spec_steps")
        drafted += number(spec["num_draft_tokens"], f"response {index} num_draft_tokens")
        accepted += number(spec["num_accepted_draft_tokens"], f"response {index} num_accepted_draft_tokens")
        counts = spec["acceptance_histogram"]
        if not isinstance(counts, list) or not counts:
            raise fail(ErrorKind.UNPARSEABLE, f"vLLM: response {index}: acceptance_histogram must be a list")
        if len(counts) > len(histogram):
            histogram += [0.0] * (len(counts) - len(histogram))
        for j, value in enumerate(counts):
            histogram[j] += number(value, f"response {index} acceptance_histogram[{j}]")
        if isinstance(spec.get("num_spec_tokens"), int):
            configured.add(int(spec["num_spec_tokens"]))
    k = len(histogram) - 1
    if k < 1:
        raise fail(ErrorKind.INCONSISTENT, "vLLM: acceptance_histogram has fewer than 2 entries")
    if abs(sum(histogram) - steps) > 1e-6 * max(steps, 1.0):
        raise fail(ErrorKind.INCONSISTENT, "vLLM: acceptance_histogram does not sum to num_spec_steps")
    per_position = tuple(float(sum(histogram[j + 1 :])) for j in range(k))
    notes = [f"{len(found)} per-request reports (metrics.speculative_decoding) summed"]
    if len(configured) > 1:
        notes.append(f"requests report several num_spec_tokens: {sorted(configured)}")
    return [
        counter_measurement(
            NAME,
            "vllm-request",
            None,
            steps,
            drafted,
            accepted,
            per_position,
            options,
            version="2026-08",
            notes=tuple(notes),
            k_source="acceptance_histogram length - 1 (num_spec_tokens)",
        )
    ]


REPORTS = (
    ReportFormat(
        "vllm-request",
        NAME,
        "vLLM per-request acceptance JSON (metrics.speculative_decoding, --per-request-spec-decode-metrics)",
        ("2026-08",),
        _detect_request,
        _read_request,
    ),
    ReportFormat(
        "vllm-metrics",
        NAME,
        "vLLM /metrics (Prometheus text): spec-decode counters of the V1 engine",
        ("2025-10", "2026-06", "2026-08"),
        _detect_metrics,
        _read_metrics,
    ),
    ReportFormat(
        "vllm-metrics-v0",
        NAME,
        "vLLM /metrics (Prometheus text): spec-decode counters of the older V0 engine",
        (),
        _detect_metrics_v0,
        _read_metrics,
    ),
)


def choose_method(given: str | None) -> str | None:
    """The method as vLLM spells it; a ValueError naming the choices."""
    return method_name(given)


# ---------------------------------------------------------------------------
# Prometheus rules: the series each version exports (vllm/v1/spec_decode/metrics.py, vllm/v1/metrics/loggers.py)

RULES_METRICS = {
    version.name: RulesMetrics(
        running="vllm:num_requests_running",
        scrape_format="vllm-metrics",
        drafts="vllm:spec_decode_num_drafts_total",
        draft_tokens="vllm:spec_decode_num_draft_tokens_total",
        accepted="vllm:spec_decode_num_accepted_tokens_total",
        per_position="vllm:spec_decode_num_accepted_tokens_per_pos_total",
        # 2025-10 runs one num_speculative_tokens at every batch: one series per position from 0 to it.  Later
        # versions look the k up per batch and export no gauge of it: the mean draft length bounds it from below.
        k_from="mean-draft-length" if version.can(PER_BATCH_SCHEDULE) else "positions",
        loses=()
        if not version.can(PER_BATCH_SCHEDULE)
        else (
            "the k vLLM runs at each batch is not exported: the schedule check compares the mean draft length "
            "(drafted / drafts), which is at most the k run, so it sees a server drafting longer than the schedule, "
            "not one drafting shorter",
        ),
    )
    for version in VERSIONS
}
