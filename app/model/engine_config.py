"""A decision written in each engine's own configuration keys.

Keys and types as each engine defines them (the files are cited in ``docs/engines.md``):

- vLLM ``SpeculativeConfig`` (``vllm/config/speculative.py``): ``num_speculative_tokens: int`` (> 0),
  ``num_speculative_tokens_per_batch_size: list[tuple[int, int, int]] | None`` (inclusive
  ``[range_start, range_end, k]``, k = 0 turns speculation off), ``speculative_token_tree: str | None``
  (a Python literal of paths), ``method: str``, ``model: str``; ``--max-num-seqs`` caps the batch.
- TensorRT-LLM ``DecodingBaseConfig`` (``tensorrt_llm/llmapi/llm_args.py``): ``max_draft_len: int``,
  ``max_total_draft_tokens: int``, ``max_concurrency: int`` (speculation off above it),
  ``draft_len_schedule: dict[int, int]`` (batch size -> draft length, which must hold batch 1 with
  ``max_draft_len``); ``EagleDecodingConfig.eagle_choices: list[list[int]]``, ``decoding_type: "Eagle"``.
- SGLang ``ServerArgs`` (``python/sglang/srt/server_args.py``): ``--speculative-algorithm``,
  ``--speculative-num-steps``, ``--speculative-eagle-topk``, ``--speculative-num-draft-tokens``; a chain
  (topk 1) verifies steps + 1 tokens, a tree at most steps * topk + 1.
- llama.cpp (``common/arg.cpp``): ``--draft-max`` (alias ``--draft``, ``--draft-n``), ``--draft-min``
  (alias ``--draft-n-min``), ``--draft-p-min``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.model.regimes import ScheduleStep
from app.model.trees import TreeShape

LLAMACPP_DEFAULT_P_MIN = 0.75  # common_speculative_params.p_min in common/speculative.h (newer builds)
SGLANG_ALGORITHMS = ("EAGLE", "EAGLE3", "STANDALONE", "NEXTN")
# decoding_type literals of TensorRT-LLM's DraftTargetDecodingConfig, EagleDecodingConfig, Eagle3DecodingConfig,
# NGramDecodingConfig and MTPDecodingConfig.
TRTLLM_DECODING_TYPES = ("Draft_Target", "Eagle", "Eagle3", "NGram", "MTP")


@dataclass(frozen=True)
class Exported:
    config: dict[str, Any] | None
    flags: list[str]
    text: str
    notes: list[str] = field(default_factory=list)


def tree_paths(shape: TreeShape) -> list[list[int]]:
    """Each node as the 0-based ranks of the choices from the root to it, shortest paths first."""
    paths: list[list[int]] = []
    for parent, rank in zip(shape.parents, shape.ranks, strict=True):
        paths.append([*(paths[parent] if parent >= 0 else []), rank - 1])
    return sorted(paths, key=lambda path: (len(path), path))


def vllm_speculative_config(
    steps: Sequence[ScheduleStep],
    batch_limit: int,
    method: str | None = None,
    model: str | None = None,
    tree: TreeShape | None = None,
) -> Exported:
    """speculative_config with one [start, end, k] per schedule step, covering batch 1..batch_limit."""
    if not steps or max(step.k for step in steps) == 0:
        return Exported(None, [], "", ["no k pays at any batch that fits: run vLLM without --speculative-config"])
    config: dict[str, Any] = {}
    if method:
        config["method"] = method
    if model:
        config["model"] = model
    notes = []
    if tree is not None:
        paths = tree_paths(tree)
        config["num_speculative_tokens"] = len(paths)
        config["speculative_token_tree"] = str([tuple(path) for path in paths])
        notes.append("a static tree: vLLM verifies every node, so num_speculative_tokens is the node count")
    else:
        config["num_speculative_tokens"] = max(step.k for step in steps)
        config["num_speculative_tokens_per_batch_size"] = [[step.batch_from, step.batch_to, step.k] for step in steps]
    flags = ["--speculative-config", json.dumps(config, separators=(",", ":")), "--max-num-seqs", str(batch_limit)]
    notes.append(f"--max-num-seqs {batch_limit}: the largest batch whose weights and KV caches fit")
    return Exported(config, flags, "vllm serve MODEL " + " ".join(_quoted(flags)), notes)


def trtllm_speculative_config(
    steps: Sequence[ScheduleStep],
    batch_limit: int,
    tree: TreeShape | None = None,
    decoding_type: str = "Draft_Target",
    model: str | None = None,
) -> Exported:
    """speculative_config with draft_len_schedule (batch -> k) and max_concurrency, for extra_llm_api_options."""
    notes: list[str] = []
    if not steps:
        return Exported(None, [], "", ["nothing fits in memory"])
    first = steps[0].k
    if first == 0:
        return Exported(
            None,
            [],
            "",
            [
                "speculation loses at batch 1; TensorRT-LLM's draft_len_schedule must start at batch 1 with "
                "max_draft_len, so it cannot turn speculation on at larger batches: leave it off"
            ],
        )
    schedule: dict[int, int] = {}
    for step in steps:
        k = min(step.k, first)
        if schedule and list(schedule.values())[-1] == k:
            continue
        schedule[step.batch_from] = k
        if k == 0:
            break
    if any(step.k > first for step in steps):
        notes.append(f"k above {first} at larger batches clipped: the schedule's k may not exceed max_draft_len")
    off = next((batch for batch, k in schedule.items() if k == 0), None)
    max_concurrency = off - 1 if off is not None else batch_limit
    config: dict[str, Any] = {"decoding_type": decoding_type, "max_draft_len": first}
    if model:
        config["speculative_model"] = model
    elif decoding_type == "Draft_Target":
        notes.append("Draft_Target needs speculative_model: add your draft model's path")
    if tree is not None:
        paths = tree_paths(tree)
        config = {
            "decoding_type": decoding_type if decoding_type in ("Eagle", "Eagle3") else "Eagle",
            "max_draft_len": tree.depth,
            "max_total_draft_tokens": len(paths),
            "eagle_choices": paths,
        }
        if model:
            config["speculative_model"] = model
        notes.append("eagle_choices belongs to EagleDecodingConfig (decoding_type Eagle or Eagle3); no schedule")
    else:
        config["draft_len_schedule"] = schedule
    config["max_concurrency"] = max_concurrency
    return Exported({"speculative_config": config}, [], _yaml({"speculative_config": config}), notes)


def sglang_flags(
    k: int, algorithm: str = "EAGLE", tree: TreeShape | None = None, width: int = 1, draft_path: str | None = None
) -> Exported:
    """--speculative-* flags with steps, topk and draft tokens consistent with each other."""
    if k == 0 and tree is None:
        return Exported(None, [], "", ["k = 0 at this batch: launch SGLang without --speculative-algorithm"])
    if tree is not None:
        steps, topk, draft_tokens = tree.depth, max(width, 1), len(tree.parents) + 1
        if draft_tokens > steps * topk + 1:
            raise ValueError(
                f"a tree of {draft_tokens - 1} nodes and depth {steps} needs topk >= "
                f"{-(-(draft_tokens - 1) // steps)}; got {topk}"
            )
    else:
        steps, topk, draft_tokens = k, 1, k + 1
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
    if draft_path:
        flags += ["--speculative-draft-model-path", draft_path]
        config["speculative_draft_model_path"] = draft_path
    return Exported(config, flags, "python -m sglang.launch_server --model-path MODEL " + " ".join(_quoted(flags)))


def llamacpp_flags(k: int, draft_min: int = 0, p_min: float = LLAMACPP_DEFAULT_P_MIN) -> Exported:
    if k == 0:
        return Exported(None, [], "", ["k = 0 at this batch: run llama-server without a draft model"])
    config: dict[str, Any] = {"--draft-max": k, "--draft-min": min(draft_min, k), "--draft-p-min": p_min}
    flags = ["--draft-max", str(k), "--draft-min", str(min(draft_min, k)), "--draft-p-min", f"{p_min:g}"]
    notes = [
        f"--draft-p-min {p_min:g} is llama.cpp's own default: the i.i.d. model has no view on the draft's confidence"
    ]
    return Exported(config, flags, "llama-server -m MODEL -md DRAFT " + " ".join(flags), notes)


def _quoted(flags: list[str]) -> list[str]:
    return [f"'{flag}'" if any(ch in flag for ch in '{}[]" ,()') else flag for flag in flags]


def _yaml(value: Any, indent: int = 0) -> str:
    """A small YAML writer for nested dicts and lists of numbers (the shapes exported here)."""
    pad = "  " * indent
    lines = []
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict):
                lines.append(f"{pad}{key}:")
                lines.append(_yaml(item, indent + 1).rstrip("\n"))
            else:
                lines.append(f"{pad}{key}: {json.dumps(item)}")
    return "\n".join(lines) + "\n"
