"""Each engine's own reading of a config, written from its stored source one rule at a time (each rule cites the
file and commit it was read at), and independent of the adapters in app/model/engines.

The conformance suite holds every oracle of tests/engines/oracles.py to this reading: the k an oracle states at
each batch, or the refusal it states, must be what the engine's code gives for that config.  An oracle is then
the engine's own word twice over (the example, test or message it quotes, and the code that produces it), and
the adapter's reader is held to it separately.  Where a config needs something this reading does not model, it
raises :class:`NotModelled` and the suite says so rather than passing.
"""

from __future__ import annotations

import ast
import bisect
import json
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from app.model.engines.base import Exported

VLLM_UTILS = "vllm/v1/spec_decode/dynamic/utils.py @ a6f6bb1d3c17"
VLLM_SPECULATIVE = "vllm/config/speculative.py @ 002e77c1f0ef"
VLLM_SPECULATIVE_2025 = "vllm/config/speculative.py @ f19b16d95e43"
VLLM_DP = "vllm/config/vllm.py @ 000fc94b754f"
TRTLLM_UTILS = "tensorrt_llm/_torch/speculative/utils.py (PR #10860; the stored version with its docstring example)"
TRTLLM_ARGS = "tensorrt_llm/llmapi/llm_args.py @ 0004396720054f"
TRTLLM_DRAFTER = "tensorrt_llm/_torch/speculative/drafter.py @ 83ab45a50d16"
TRTLLM_INTERFACE = "tensorrt_llm/_torch/speculative/interface.py @ 00b6d5a25c30"
TRTLLM_AUTO = "tensorrt_llm/_torch/speculative/auto_heuristic.py @ f00d21a3c099"
# the two-model path: utils.py @ 011d0933dcb5 get_spec_drafter gives EAGLE3 and MTP_EAGLE a ModelDrafter, which
# model_drafter.py @ 029c15cbff10 builds with the config's draft_len_schedule; the executor (py_executor.py, the stored
# version with the branch; commit not named by the store) sets each step's draft length from
# drafter.get_draft_len_for_batch_size, the Drafter's lookup (TRTLLM_DRAFTER_SCHEDULE)
TRTLLM_TWO_MODEL = "tensorrt_llm/_torch/speculative/utils.py @ 011d0933dcb5 (get_spec_drafter)"
TRTLLM_DRAFTER_SCHEDULE = "tensorrt_llm/_torch/speculative/drafter.py (PR #8194; every stored version with a schedule)"
# where eagle3_one_model false is honoured: llm_args.py's Field "Whether to use the faster one-model implementation
# (draft as submodule) or the two-model implementation" (stored versions up to PR #18721; commit not named by the
# store); TRTLLM_ARGS (@ 0004396720054f) has validate_eagle_config set it back to true, "deprecated and ignored"
TRTLLM_TWO_MODEL_VERSIONS = ("2025-10", "2026-03")
# before PR #10860 the schedule runs only through a Drafter: py_executor.py _prepare_and_schedule_batch sets the draft
# length from draft_len_schedule only `if self.drafter is not None` (the stored version with PR #8194's branch; commit
# not named by the store), and utils.py get_spec_drafter of that era gives a Drafter to NGram, Draft_Target and the
# two-model Eagle3 / MTP-Eagle only (commit not named by the store); PR #8194's test_draft_len_schedule.py: "Not
# covered in Stage 1: ChainDrafter/Eagle3 static loops"
TRTLLM_STAGE_ONE = "tensorrt_llm/_torch/pyexecutor/py_executor.py (PR #8194's _prepare_and_schedule_batch)"
TRTLLM_STAGE_ONE_VERSIONS = ("2025-10",)
SGLANG_FIELDS = "python/sglang/srt/arg_groups/fields/spec.py @ 015c872628e3"
SGLANG_HOOK = "python/sglang/srt/arg_groups/speculative_hook.py @ 004c82e07d87"
SGLANG_ROUTER = "python/sglang/srt/speculative/adaptive_step_router.py @ a12239f6ac74"


class Refused(ValueError):
    """What the engine answers a config with, in its own words, and where it says so."""

    def __init__(self, words: str, where: str) -> None:
        super().__init__(f"{words} ({where})")


class NotModelled(LookupError):
    """A config this reading does not model: the suite fails on it rather than guessing."""


def _flag(flags: Sequence[str], name: str) -> str | None:
    for index, flag in enumerate(flags):
        if flag == name and index + 1 < len(flags):
            return flags[index + 1]
    return None


# ---------------------------------------------------------------------------
# vLLM


def _vllm_dense(schedule: Any, max_batch: int, runtime_k: int) -> list[int]:
    """The dense batch -> K table as dynamic/utils.py builds it (index 0 unused)."""
    # validate_and_normalize_dynamic_sd_schedule (VLLM_UTILS)
    if not isinstance(schedule, list):
        raise Refused(
            "must be a non-empty list of (range_start, range_end, num_speculative_tokens) entries", VLLM_UTILS
        )
    if not schedule:
        raise Refused("num_speculative_tokens_per_batch_size must not be empty", VLLM_UTILS)
    ranges = []
    for entry in schedule:
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise Refused("each entry must be a 3-item sequence", VLLM_UTILS)
        start, end, k = (int(value) for value in entry)
        if start <= 0 or end <= 0:
            raise Refused(f"Batch-size range ({start}, {end}) must be positive", VLLM_UTILS)
        if start > end:
            raise Refused("Batch-size range start must be <= end", VLLM_UTILS)
        if k < 0:
            raise Refused("num_speculative_tokens_per_batch_size values must be >= 0", VLLM_UTILS)
        ranges.append((start, end, k))
    ranges.sort(key=lambda item: item[0])
    end_so_far = 0
    for start, end, _ in ranges:
        if start <= end_so_far:
            raise Refused("Batch-size ranges must be non-overlapping and sorted", VLLM_UTILS)
        end_so_far = end
    if ranges[0][0] != 1:
        raise Refused("The first batch-size range must start at 1", VLLM_UTILS)
    # build_dynamic_sd_schedule_lookup (VLLM_UTILS): a gap carries the K before it forward, so does the tail after
    # the last range, and every K is capped at num_speculative_tokens
    table = [0] * (max_batch + 1)
    for batch in range(1, max_batch + 1):
        covering = [k for start, _, k in ranges if start <= batch]
        table[batch] = min(runtime_k, covering[-1])
    return table


# the methods whose model SpeculativeConfig fills in itself (VLLM_SPECULATIVE, __post_init__): the target's for mtp
# and dspark, a marker for the model-free ones
_VLLM_MODEL_FREE = ("mtp", "dspark", "ngram", "ngram_gpu", "suffix", "extract_hidden_states")


def vllm(exported: Exported, batches: int, versions: Sequence[str] = ()) -> tuple[int, ...]:
    raw = _flag(exported.flags, "--speculative-config")
    if raw is None:
        raise NotModelled("no --speculative-config")
    config: Mapping[str, Any] = json.loads(raw)
    max_batch = int(_flag(exported.flags, "--max-num-seqs") or 0)
    if max_batch < batches:
        raise NotModelled("give --max-num-seqs at least the batches read")
    # SpeculativeConfig (VLLM_SPECULATIVE): num_speculative_tokens is a field with gt=0, and _verify_args refuses
    # a config without it
    if config.get("tensor_parallel_size") is not None:
        # _verify_args (VLLM_SPECULATIVE)
        raise Refused("'tensor_parallel_size' is not a valid argument in the speculative_config", VLLM_SPECULATIVE)
    method = config.get("method")
    if method is None:
        method = "ngram" if config.get("model") in ("ngram", "[ngram]") else "draft_model"
    if config.get("model") is None and not (method in _VLLM_MODEL_FREE or str(method).endswith("_mtp")):
        # __post_init__ (VLLM_SPECULATIVE): only these methods fill the model in themselves
        raise Refused("num_speculative_tokens was provided but without speculative model", VLLM_SPECULATIVE)
    k = config.get("num_speculative_tokens")
    if not isinstance(k, int) or k <= 0:
        raise Refused("Expected num_speculative_tokens to be greater than zero", VLLM_SPECULATIVE)
    tree = config.get("speculative_token_tree")
    if tree is not None:
        # VLLM_SPECULATIVE_2025: the tree is a literal of paths, one per node, and its node count must be k
        if len(ast.literal_eval(tree)) != k:
            raise Refused("the tree's nodes must number num_speculative_tokens", VLLM_SPECULATIVE_2025)
        return (k,) * batches
    schedule = config.get("num_speculative_tokens_per_batch_size")
    table = None if schedule is None else _vllm_dense(schedule, max_batch, k)
    # _maybe_disable_dynamic_sd_for_data_parallel (VLLM_DP): above one data-parallel rank the schedule is set to
    # None and num_speculative_tokens runs at every batch
    if int(_flag(exported.flags, "--data-parallel-size") or 1) > 1:
        table = None
    if table is None:
        return (k,) * batches
    return tuple(table[1 : batches + 1])


# ---------------------------------------------------------------------------
# TensorRT-LLM


def _one_model_length(schedule: Mapping[int, int], batch: int) -> int:
    """get_draft_len_for_batch_size (TRTLLM_UTILS): the first key >= batch; 0 above the last key."""
    keys = sorted(schedule)
    index = bisect.bisect_left(keys, batch)
    return schedule[keys[index]] if index < len(keys) else 0


def _drafter_length(schedule: Mapping[int, int], batch: int) -> int:
    """The Drafter's get_draft_len_for_batch_size (PR #8194, NGram): the largest key <= batch."""
    keys = sorted(schedule)
    index = bisect.bisect_right(keys, batch)
    return schedule[keys[index - 1]] if index else 0


def _trtllm_two_model(spec: Mapping[str, Any], versions: Sequence[str]) -> bool:
    """Whether the config runs the two-model path (a ModelDrafter) at every one of these versions."""
    kind = spec["decoding_type"]
    if not spec.get("draft_len_schedule"):
        return False  # without a schedule both paths run max_draft_len (up to max_concurrency)
    asked = kind in ("Eagle", "Eagle3") and spec.get("eagle3_one_model") is False
    if kind == "MTP" and spec.get("mtp_eagle_one_model") is False and not spec.get("use_mtp_vanilla"):
        # MTPDecodingConfig.spec_dec_mode: MTP_EAGLE only where the checkpoint has one MTP layer
        raise NotModelled("mtp_eagle_one_model false: the path depends on the checkpoint's MTP layer count")
    if not asked:
        return False
    honoured = {version in TRTLLM_TWO_MODEL_VERSIONS for version in versions}
    if len(honoured) != 1:
        raise NotModelled("eagle3_one_model false read at versions that do and do not honour it, or at none")
    return honoured == {True}


def trtllm(exported: Exported, batches: int, versions: Sequence[str] = ()) -> tuple[int, ...]:
    document = yaml.safe_load(exported.text)
    spec = dict(document["speculative_config"])
    kind = spec["decoding_type"]
    two_model = kind != "AUTO" and _trtllm_two_model(spec, versions)
    if kind == "AUTO":
        # AutoDecodingConfig becomes suggest_spec_config(max_batch_size) (TRTLLM_AUTO): NGram with max_concurrency
        # 32, max_draft_len 5 where max_batch_size is at most 4, else 3
        if "max_batch_size" not in document:
            raise NotModelled("AUTO without max_batch_size")
        small = int(document["max_batch_size"]) <= 4
        spec = {"decoding_type": "NGram", "max_draft_len": 5 if small else 3, "max_concurrency": 32}
        kind = "NGram"
    k = int(spec["max_draft_len"])
    schedule = {int(key): int(value) for key, value in (spec.get("draft_len_schedule") or {}).items()}
    if schedule:
        # DecodingBaseConfig's draft_len_schedule validator (TRTLLM_ARGS): the smallest key's length is
        # max_draft_len, and no length is above it
        smallest = min(schedule)
        if schedule[smallest] != k:
            raise Refused(f"draft_len_schedule[{smallest}] must equal max_draft_len", TRTLLM_ARGS)
        if max(schedule.values()) > k:
            raise Refused("draft_len_schedule: all draft lengths must be <= max_draft_len", TRTLLM_ARGS)
    stage_one = {version in TRTLLM_STAGE_ONE_VERSIONS for version in versions} or {False}  # none named: the newest
    if schedule and kind not in ("NGram", "DSpark") and not two_model and len(stage_one) != 1:
        raise NotModelled("a one-model or Draft_Target schedule read at versions before and after PR #10860 together")
    drafter_only = stage_one == {True}  # TRTLLM_STAGE_ONE: the one-model path runs no schedule
    runs = []
    for batch in range(1, batches + 1):
        if kind == "NGram" or two_model or (drafter_only and kind == "Draft_Target"):
            # the Drafter (NGram's, or the two-model ModelDrafter: TRTLLM_TWO_MODEL): should_use_spec_decode
            # (TRTLLM_DRAFTER) drafts while num_effective_requests = min(len(requests), max_batch_size, token_cap)
            # is at most max_concurrency; token_cap =
            # max_num_tokens // (1 + max_total_draft_tokens) is not modelled (these configs name no max_num_tokens;
            # the reading holds while batch * (1 + k) fits in it); the schedule, where given, by the Drafter's lookup
            concurrency = spec.get("max_concurrency")
            effective = min(batch, int(document.get("max_batch_size", batch)))
            if concurrency is not None and effective > int(concurrency):
                runs.append(0)
            elif schedule:
                runs.append(_drafter_length(schedule, batch))  # TRTLLM_DRAFTER_SCHEDULE
            else:
                runs.append(k)
        elif kind == "DSpark" or not schedule or drafter_only:
            # support_dynamic_draft_len (TRTLLM_INTERFACE) leaves DSpark out: its static max_draft_len runs; before
            # PR #10860 (TRTLLM_STAGE_ONE) so does every one-model type
            runs.append(k)
        else:
            runs.append(_one_model_length(schedule, batch))
    return tuple(runs)


# ---------------------------------------------------------------------------
# SGLang

# the flags of the Spec namespace these oracles use (SGLANG_FIELDS), each with how its value is read
_SGLANG_FLAGS = {
    "--speculative-algorithm": str,
    "--speculative-num-steps": int,
    "--speculative-eagle-topk": int,
    "--speculative-num-draft-tokens": int,
    "--speculative-draft-model-path": str,
    "--speculative-dflash-block-size": int,
    "--speculative-dspark-block-size": int,
    "--uno-lora-path": str,
    "--speculative-adaptive-config": str,
    # and two of ServerArgs' other namespaces that the written configs carry
    "--max-running-requests": int,
    "--attention-backend": str,
}
_SGLANG_SWITCHES = {"--speculative-adaptive"}
# CUDA-graph batch sizes captured when --cuda-graph-bs is not given, as the router pads to them (SGLANG_ROUTER)
_SGLANG_GRAPHS = (1, 2, 4, 8, *range(16, 257, 8))


def _sglang_args(flags: Sequence[str]) -> dict[str, Any]:
    args: dict[str, Any] = {}
    index = 0
    while index < len(flags):
        flag = flags[index]
        if flag in _SGLANG_SWITCHES:
            args[flag] = True
            index += 1
        elif flag == "--cuda-graph-bs":  # ServerArgs' list of CUDA-graph batch sizes to capture (nargs="+")
            values = []
            index += 1
            while index < len(flags) and not flags[index].startswith("--"):
                values.append(int(flags[index]))
                index += 1
            args[flag] = tuple(sorted(values))
        elif flag in _SGLANG_FLAGS:
            args[flag] = _SGLANG_FLAGS[flag](flags[index + 1])
            index += 2
        else:
            # argparse, as ServerArgs builds it from the Spec namespace (SGLANG_FIELDS)
            raise Refused(f"unrecognized arguments: {flag}", SGLANG_FIELDS)
    return args


def _sglang_block(algorithm: str, args: Mapping[str, Any]) -> int:
    window = args.get("--speculative-num-draft-tokens")
    if algorithm == "DFLASH":
        # _handle_dflash (SGLANG_HOOK): a draft model is required; the block size is the verify window and must
        # match --speculative-num-draft-tokens where both are given; steps and topk are 1
        if args.get("--speculative-draft-model-path") is None:
            raise Refused("DFLASH speculative decoding requires setting --speculative-draft-model-path", SGLANG_HOOK)
        block = args.get("--speculative-dflash-block-size")
        if block is not None and window is not None and window != block:
            raise Refused(
                "--speculative-num-draft-tokens and --speculative-dflash-block-size: they differ", SGLANG_HOOK
            )
        window = block if block is not None else window
    elif algorithm == "DSPARK":
        # _handle_dspark (SGLANG_HOOK): gamma is the number of proposed draft tokens, the verify window gamma + 1
        gamma = args.get("--speculative-dspark-block-size")
        if gamma is None:
            raise NotModelled("DSpark's gamma from the draft checkpoint")
        if window is not None and window != gamma + 1:
            raise Refused("DSpark speculative_num_draft_tokens must equal gamma + 1", SGLANG_HOOK)
        window = gamma + 1
    else:
        # _handle_uno (the stored speculative_hook.py that has it; the store names no commit): no draft model, a
        # LoRA, and Q the linear verify width with topk 1
        if args.get("--speculative-draft-model-path") is not None:
            raise Refused(
                "UNO reuses the target model and does not accept --speculative-draft-model-path", "_handle_uno"
            )
        if args.get("--uno-lora-path") is None:
            raise Refused("UNO requires --uno-lora-path", "_handle_uno")
        if args.get("--attention-backend", "fa3") != "fa3":  # absent: the hardware's default, not modelled
            raise Refused("UNO requires FA3 for both prefill and decode attention", "_handle_uno")
    if window is None:
        raise NotModelled(f"{algorithm}'s window from the draft checkpoint")
    return int(window) - 1


def sglang(exported: Exported, batches: int, versions: Sequence[str] = ()) -> tuple[int, ...]:
    args = _sglang_args(exported.flags)
    algorithm = str(args["--speculative-algorithm"]).upper()
    if algorithm in ("DFLASH", "DSPARK", "UNO"):
        return (_sglang_block(algorithm, args),) * batches
    steps = args["--speculative-num-steps"]
    topk = args.get("--speculative-eagle-topk")
    if topk != 1:
        raise NotModelled("a tree (topk above 1)")
    # _handle_eagle_family (SGLANG_HOOK): with topk 1 the draft tokens are set to steps + 1, so steps are drafted
    if not args.get("--speculative-adaptive"):
        return (steps,) * batches
    # the adaptive config's digit keys hold candidate_steps; batch_size_key_for_batch (SGLANG_ROUTER) pads the
    # batch up to a captured CUDA-graph size and takes the largest key at or below it; a slot starts at the
    # global steps where they are a candidate, else at the median candidate
    tiers = {
        int(key): list(entry["candidate_steps"])
        for key, entry in json.loads(exported.files[args["--speculative-adaptive-config"]]).items()
        if key.isdigit()
    }
    keys = sorted(tiers)
    runs = []
    for batch in range(1, batches + 1):
        graphs = args.get("--cuda-graph-bs", _SGLANG_GRAPHS)
        padded = next((size for size in graphs if size >= batch), batch)  # above the largest: not padded
        at_or_below = [key for key in keys if key <= padded]
        candidates = sorted(tiers[at_or_below[-1] if at_or_below else keys[0]])
        runs.append(steps if steps in candidates else candidates[len(candidates) // 2])
    return tuple(runs)


READERS = {"vllm": vllm, "trtllm": trtllm, "sglang": sglang}
