"""vLLM's drafters and its config: which methods it takes and how a request names them, its config read back the way its
own code reads it, and written for a schedule.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from app.model.engines import base
from app.model.engines.base import ConfigRuleError
from app.model.engines.vllm.versions import DYNAMIC_UTILS, PER_BATCH_SCHEDULE, SPECULATIVE_PY, STATIC_TREES, STRICT_KEYS

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


# Drafting all k tokens in one pass (vllm/config/speculative.py @ 002e77c1f0ef, SpeculativeConfig): dflash and
# dspark always do (its post-init sets parallel_drafting for them); eagle, eagle3 (P-EAGLE) and draft_model (PARD)
# do with "parallel_drafting": true ("Only compatible with EAGLE and draft model methods", the field's own words;
# max_num_new_slots_for_drafting's table of P-EAGLE, DFlash, DSpark and PARD).
ONE_PASS_METHODS = ("dflash", "dspark")
PARALLEL_METHODS = ("eagle", "eagle3", "draft_model")


# How pydantic reads a bool field in its default (lax) mode, as SpeculativeConfig's @config dataclass does: a bool,
# 0 or 1, or one of these strings in any case; anything else is "Input should be a valid boolean".
_TRUE = ("1", "on", "t", "true", "y", "yes")
_FALSE = ("0", "off", "f", "false", "n", "no")


def _lax_bool(value: Any, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in (*_TRUE, *_FALSE):
        return value.strip().lower() in _TRUE
    raise ConfigRuleError(f"{what}: Input should be a valid boolean; got {value!r}", SPECULATIVE_PY.cite())


def drafts_in_one_pass(config: Mapping[str, Any]) -> bool:
    """Whether vLLM drafts all k tokens in one pass for this speculative_config, as SpeculativeConfig decides it:
    its method always does (ONE_PASS_METHODS), or parallel_drafting is true."""
    flag = _lax_bool(config.get("parallel_drafting", False), "parallel_drafting")
    return config.get("method") in ONE_PASS_METHODS or flag


# The drafter that runs each head the setup prices, where no method is given: SpeculativeMethod's own literals.
HEAD_METHODS = {"eagle": "eagle", "eagle3": "eagle3", "mtp": "mtp", "p-eagle": "eagle3"}  # P-EAGLE: with the flag


# Methods that need no `model`: vLLM fills it in itself (speculative.py, post-init).
MODEL_FREE = ("ngram", "ngram_gpu", "suffix", "extract_hidden_states", "mtp", "dspark")


PLACEHOLDER_MODEL = "<draft model: a path or hub name>"


def choose_method(given: str | None) -> str | None:
    """vLLM's literal for a method given in any case; a ValueError listing them for an unknown one."""
    if given is None or not given.strip():
        return None
    lowered = given.strip().lower()
    if lowered in METHODS or lowered.endswith("_mtp"):
        return lowered
    raise ValueError(f"vLLM method must be one of {', '.join(METHODS)} (or any *_mtp); got {given!r}")


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
        "draft_load_config",  # speculative.py @ 002e77c1f0ef: LoadConfig for the draft, else the target's
    }
)


_LOADABLE = re.compile(r"^(/|\./|\.\./|~/)?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*$")


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


def read_config(exported: base.Exported, version: base.EngineVersion, batch_limit: int) -> list[int]:
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
    unknown = sorted(set(config) - _fields(version))
    if unknown and version.can(STRICT_KEYS):
        raise ConfigRuleError(f"unknown keys {unknown}: SpeculativeConfig forbids extra fields", where)
    if config.get("tensor_parallel_size") is not None:
        raise ConfigRuleError("'tensor_parallel_size' is not a valid argument in the speculative_config", where)
    drafts_in_one_pass(config)  # parallel_drafting, where given, must read as a bool
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
    lookup = _schedule_lookup(schedule, k_max, max_num_seqs)
    if data_parallel_size(exported.flags) > 1:
        # vllm/config/vllm.py @ 000fc94b754f _maybe_disable_dynamic_sd_for_data_parallel: with data parallelism
        # above 1 the schedule is set to None and num_speculative_tokens runs at every batch
        return [k_max] * batch_limit
    return lookup[1 : batch_limit + 1]


def data_parallel_size(flags: Sequence[str]) -> int:
    """--data-parallel-size (or -dp) as vLLM's arg parser takes it; 1 when absent."""
    raw = _flag(flags, "--data-parallel-size") or _flag(flags, "-dp")
    if raw is None:
        return 1
    try:
        size = int(raw)
    except ValueError:
        raise ConfigRuleError(f"--data-parallel-size: invalid int value {raw!r}", "vllm/engine/arg_utils.py") from None
    if size < 1:
        raise ConfigRuleError("--data-parallel-size must be >= 1", "vllm/engine/arg_utils.py")
    return size


def _schedule_lookup(schedule: Any, k_max: int, max_num_seqs: int) -> list[int]:
    """validate_and_normalize_dynamic_sd_schedule, then build_dynamic_sd_schedule_lookup (index = batch)."""
    where = DYNAMIC_UTILS.cite()
    if not isinstance(schedule, list):
        raise ConfigRuleError("num_speculative_tokens_per_batch_size must be a non-empty list of entries", where)
    if not schedule:
        raise ConfigRuleError("num_speculative_tokens_per_batch_size must not be empty", where)
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


def _tree_literal(paths: list[list[int]]) -> str:
    """The tree as vLLM takes it: a Python literal of tuples, which it reads with ast.literal_eval."""
    return str([tuple(path) for path in paths])


TREE = base.TreeFormat(STATIC_TREES, _tree_literal)  # the key, speculative_token_tree, is the capability's name


def _fields(version: base.EngineVersion) -> frozenset[str]:
    """The SpeculativeConfig keys of its time."""
    return FIELDS_2025 if version.can(STATIC_TREES) else FIELDS


def write_config(request: base.ConfigRequest, version: base.EngineVersion) -> base.Exported:
    """speculative_config and --max-num-seqs for the schedule over batch 1..batch_limit."""
    best = list(request.best_k)
    if not best or max(best) == 0:
        return base.Exported(None, [], "", ["no k pays at any batch that fits: run vLLM without --speculative-config"])
    method = choose_method(request.method)
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
    drafter = config.get("method") or "draft_model"  # as the reader infers it where no method is named
    if request.parallel_draft and drafter in PARALLEL_METHODS and "parallel_drafting" in _fields(version):
        config["parallel_drafting"] = True
    elif request.parallel_draft and drafter not in ONE_PASS_METHODS:
        notes.append(
            f"the schedule is priced for a draft that proposes all k tokens in one pass, which vLLM's {drafter} "
            + ("does not run at this version" if drafter in PARALLEL_METHODS else "does not run")
            + f": price it with drafting=chain, or run {', '.join((*ONE_PASS_METHODS, *PARALLEL_METHODS))}"
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
    notes.append(f"--max-num-seqs {limit}: {request.limit_reason}")
    differ = base.differences(best, runs) if request.tree is None else ()
    if differ:
        notes.append(f"vLLM {version.name} runs another k than the schedule at batches {base.describe_batches(differ)}")
    shown = json.dumps({"speculative_config": config}, indent=2)
    shown = re.sub(r"\[\s+(\d+),\s+(\d+),\s+(\d+)\s+\]", r"[\1, \2, \3]", shown)  # one range per line
    text = shown + "\n\nvllm serve TARGET_MODEL " + " ".join(base.quoted(flags))
    return base.Exported(config, flags, text, notes, runs=tuple(runs), differs_at=differ, placeholders=placeholders)
