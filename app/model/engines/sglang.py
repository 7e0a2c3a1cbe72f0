"""SGLang: everything specdec-lab knows of it.

Versions, named by the month of the change that set their format:

- ``2026-03``: launch flags ``--speculative-algorithm``, ``--speculative-num-steps``,
  ``--speculative-eagle-topk``, ``--speculative-num-draft-tokens``; one draft length for every batch;
  gauges ``sglang:spec_accept_length`` and ``sglang:spec_accept_rate`` (rate = length / draft tokens).
- ``2026-05``: the adaptive schedule per batch-size tier, ``--speculative-adaptive`` with
  ``--speculative-adaptive-config FILE`` (PR #24055: digit keys are the lowest batch of a tier, each with
  ``candidate_steps``, 0 = no drafting); the rate counts drafts only, (length - 1) / (draft tokens - 1)
  (PR #23530); the counter ``sglang:spec_verify_calls_total`` (PR #25689) and the gauges
  ``sglang:spec_num_steps`` and ``sglang:spec_num_draft_tokens`` (PR #25940).

The adaptive schedule runs only for EAGLE, EAGLE3 and NEXTN with topk 1; for a separate draft model
(STANDALONE) SGLang falls back to one draft length, so that is what is written for it.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

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
)
from app.model.engines.reports import (
    ErrorKind,
    Measurement,
    PrometheusNames,
    ReadOptions,
    ReportFormat,
    fail,
    groups,
    integral,
    mean_only,
    samples,
    stem_of,
)

NAME = "sglang"
TITLE = "SGLang"
REPOSITORY = "sgl-project/sglang"

SPEC_FIELDS = Source(
    REPOSITORY,
    "python/sglang/srt/arg_groups/fields/spec.py",
    "015c872628e328b530880bcf95ae91222604b225",
    "--speculative-* flags",
)
SPEC_HOOK = Source(
    REPOSITORY,
    "python/sglang/srt/arg_groups/speculative_hook.py",
    "004c82e07d876f6e4a0ad6e15325706b0f478f1a",
    "handle_speculative_decoding: algorithms, steps/topk/draft tokens rules",
)
ADAPTIVE_PARAMS = Source(
    REPOSITORY,
    "python/sglang/srt/speculative/adaptive_spec_params.py",
    "015c872628e328b530880bcf95ae91222604b225",
    "adaptive config: digit keys, candidate_steps, support gate",
)
ADAPTIVE_ROUTER = Source(
    REPOSITORY,
    "python/sglang/srt/speculative/adaptive_step_router.py",
    "a12239f6ac74d804d169ee5d3cfed3c49fa7162c",
    "batch_size_key_for_batch: pad to a CUDA-graph batch, then the largest key <= it",
)
METRICS = Source(
    REPOSITORY,
    "python/sglang/srt/observability/metrics_collector.py",
    "016d8605e45876180312e29d6988e1de06562472",
    "spec gauges and sglang:spec_verify_calls_total",
)
SERVER_ARGS_2026_03 = Source(
    REPOSITORY, "python/sglang/srt/server_args.py", "PR #21599", "flags; flat adaptive config (superseded)"
)

# Capabilities, set once per version below.
ADAPTIVE_TIERS = "adaptive per-batch tiers"  # PR #24055: --speculative-adaptive-config per batch-size tier

VERSIONS = (
    EngineVersion(
        "2026-03",
        "2026-03",
        "static --speculative-* flags; accept rate = length / draft tokens",
        (SERVER_ARGS_2026_03, SPEC_HOOK),
        "one draft length for every batch",
    ),
    EngineVersion(
        "2026-05",
        "2026-05",
        "PR #24055 adaptive config per batch-size tier; PR #23530 drafts-only accept rate; PR #25689 "
        "spec_verify_calls_total; PR #25940 spec_num_steps and spec_num_draft_tokens gauges",
        (SPEC_FIELDS, SPEC_HOOK, ADAPTIVE_PARAMS, ADAPTIVE_ROUTER, METRICS),
        "a per-batch schedule through the adaptive config (EAGLE, EAGLE3)",
        capabilities=frozenset({ADAPTIVE_TIERS}),
    ),
)
ALIASES: dict[str, str] = {}

ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")
ADAPTIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN")
NEEDS_DRAFT = ("EAGLE", "EAGLE3", "STANDALONE")
PLACEHOLDER_MODEL = "<draft model: a path or hub name>"
ADAPTIVE_FILE = "adaptive.json"
LAUNCH = "python -m sglang.launch_server --model-path TARGET_MODEL"


def algorithm_name(given: str | None, draft_path: str | None) -> str:
    """SGLang's algorithm: as given (any case), else STANDALONE for a separate draft model."""
    if given is None or not given.strip():
        return "STANDALONE"
    upper = given.strip().upper()
    if upper not in ALGORITHMS:
        raise ValueError(f"SGLang --speculative-algorithm must be one of {', '.join(ALGORITHMS)}; got {given!r}")
    return upper


def graph_batches(limit: int, tier_ends: Sequence[int]) -> list[int]:
    """CUDA-graph batch sizes that hold every tier's last batch, so that padding never crosses a tier."""
    sizes = {1, 2, 4, 8, *range(16, limit + 1, 8), *tier_ends}
    return sorted(size for size in sizes if size <= limit)


# ---------------------------------------------------------------------------
# Config writer


def write_config(request: ConfigRequest, version: EngineVersion) -> Exported:
    best = list(request.best_k)
    limit = request.batch_limit
    algorithm = algorithm_name(request.method, request.draft_path)
    notes: list[str] = []
    placeholders: tuple[str, ...] = ()
    if not best or max(best) == 0:
        return Exported(None, [], "", ["no k pays at any batch that fits: launch SGLang without speculation"])
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
        tiers = runs_of(best)
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
        k = best[min(request.batch, limit) - 1] or max(best)
        steps, topk, draft_tokens = k, 1, k + 1
        runs = [k] * limit
        adaptive = None
        why = (
            f"SGLang {version.name} has no per-batch schedule"
            if not version.can(ADAPTIVE_TIERS)
            else f"SGLang's adaptive schedule runs only for {', '.join(ADAPTIVE_ALGORITHMS)}"
            if algorithm not in ADAPTIVE_ALGORITHMS
            else "one k pays at every batch"
        )
        notes.append(f"{why}: one draft length, the schedule's k = {k} at batch {min(request.batch, limit)}")
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
        tier_ends = [last for _first, last, _k in runs_of(best)]
        graphs = graph_batches(limit, tier_ends)
        flags += ["--speculative-adaptive", "--speculative-adaptive-config", ADAPTIVE_FILE]
        flags += ["--cuda-graph-bs", *map(str, graphs)]
        config["speculative_adaptive"] = True
        config["speculative_adaptive_config"] = adaptive
        config["cuda_graph_bs"] = graphs
    flags += ["--max-running-requests", str(limit)]
    config["max_running_requests"] = limit
    notes.append(f"--max-running-requests {limit}: the largest batch whose weights and KV caches fit")
    differ = differences(best, runs) if request.tree is None else ()
    if differ:
        notes.append(f"SGLang runs another k than the schedule at batches {describe_batches(differ)}")
    text = LAUNCH + " " + " ".join(quoted(flags))
    if files:
        text = f"# {ADAPTIVE_FILE}\n{files[ADAPTIVE_FILE]}\n{text}"
    return Exported(config, flags, text, notes, files, tuple(runs), differ, placeholders)


# ---------------------------------------------------------------------------
# Config reader


def _parse(flags: Sequence[str]) -> dict[str, Any]:
    where = SPEC_FIELDS.cite()
    valued = {
        "--speculative-algorithm": str,
        "--speculative-num-steps": int,
        "--speculative-eagle-topk": int,
        "--speculative-num-draft-tokens": int,
        "--speculative-draft-model-path": str,
        "--speculative-adaptive-config": str,
        "--max-running-requests": int,
    }
    switches = {"--speculative-adaptive"}
    lists = {"--cuda-graph-bs"}
    parsed: dict[str, Any] = {}
    index = 0
    while index < len(flags):
        flag = flags[index]
        if flag in switches:
            parsed[flag] = True
            index += 1
        elif flag in lists:
            values = []
            index += 1
            while index < len(flags) and not flags[index].startswith("--"):
                values.append(int(flags[index]))
                index += 1
            parsed[flag] = values
        elif flag in valued:
            if index + 1 >= len(flags):
                raise ConfigRuleError(f"{flag} expects a value", where)
            try:
                parsed[flag] = valued[flag](flags[index + 1])
            except ValueError:
                raise ConfigRuleError(f"{flag}: invalid value {flags[index + 1]!r}", where) from None
            index += 2
        else:
            raise ConfigRuleError(f"unrecognized argument {flag}", where)
    return parsed


def read_config(exported: Exported, version: EngineVersion, batch_limit: int) -> list[int]:
    """Read the flags (and the adaptive file) as SGLang's ServerArgs does; the steps run at each batch."""
    where = SPEC_HOOK.cite()
    flags = _parse(exported.flags)
    algorithm = str(flags.get("--speculative-algorithm", "")).upper()
    if algorithm not in ALGORITHMS:
        raise ConfigRuleError(f"Unknown speculative algorithm name: {algorithm}", where)
    if algorithm == "NEXTN":
        algorithm = "EAGLE"
    steps = flags.get("--speculative-num-steps")
    topk = flags.get("--speculative-eagle-topk")
    draft_tokens = flags.get("--speculative-num-draft-tokens")
    adaptive = bool(flags.get("--speculative-adaptive"))
    if steps is None and (topk is not None or draft_tokens is not None):
        raise ConfigRuleError("topk or draft tokens without steps: all three are given or all chosen", where)
    if steps is not None and topk is None and algorithm != "NGRAM":
        raise ConfigRuleError("steps without topk (speculative_eagle_topk > 1 compares None)", where)
    draft = flags.get("--speculative-draft-model-path")
    if algorithm in NEEDS_DRAFT and draft is None:
        raise ConfigRuleError(f"{algorithm} loads a draft model: --speculative-draft-model-path", where)
    if draft is not None and not re.match(r"^[~./A-Za-z0-9_\-]+$", draft):
        raise ConfigRuleError(f"draft model path {draft!r} is not a path or hub name", where)
    running = flags.get("--max-running-requests", 48)
    if running < batch_limit:
        raise ConfigRuleError(f"--max-running-requests {running} is below the batch {batch_limit}", where)
    assert isinstance(steps, int) and isinstance(topk, int)
    if topk == 1:
        draft_tokens = steps + 1  # SGLang overwrites it with a warning
    else:
        assert isinstance(draft_tokens, int)
        if not 1 <= draft_tokens - 1 <= topk + (steps - 1) * topk * topk:
            raise ConfigRuleError("num_draft_tokens - 1 exceeds the draft pool topk + (steps - 1) topk^2", where)
    if not adaptive:
        return [draft_tokens - 1 if topk > 1 else steps] * batch_limit
    if not version.can(ADAPTIVE_TIERS):
        raise ConfigRuleError(f"--speculative-adaptive per-batch tiers are not in SGLang {version.name}", where)
    if algorithm not in ("EAGLE", "EAGLE3") or topk != 1:
        return [steps] * batch_limit  # adaptive_unsupported_reason: SGLang warns and runs static
    name = flags.get("--speculative-adaptive-config")
    if name is None or name not in exported.files:
        raise ConfigRuleError("--speculative-adaptive-config names no file that was written", where)
    tiers = _adaptive_tiers(json.loads(exported.files[name]))
    union = sorted({k for candidates in tiers.values() for k in candidates})
    if steps not in union:
        raise ConfigRuleError(f"--speculative-num-steps={steps} is not in the adaptive config candidate_steps", where)
    graphs = sorted(flags.get("--cuda-graph-bs", [1, 2, 4, 8, *range(16, 257, 8)]))
    keys = sorted(tiers)
    runs = []
    for batch in range(1, batch_limit + 1):
        runs.append(_tier_step(tiers, keys, graphs, batch, steps))
    return runs


def _adaptive_tiers(config: Any) -> dict[int, list[int]]:
    where = ADAPTIVE_PARAMS.cite()
    if not isinstance(config, Mapping):
        raise ConfigRuleError("speculative adaptive config must be a JSON object", where)
    strategy = config.get("strategy", "ema")
    if strategy not in ("ema", "throughput_aware"):
        raise ConfigRuleError(f"unknown adaptive strategy {strategy!r}", where)
    tiers: dict[int, list[int]] = {}
    for key, entry in config.items():
        if not isinstance(key, str) or not key.isdigit():
            continue
        candidates = entry.get("candidate_steps") if isinstance(entry, Mapping) else None
        floor = 1 if strategy == "throughput_aware" else 0
        if (
            not isinstance(candidates, list)
            or not candidates
            or not all(isinstance(k, int) and not isinstance(k, bool) and k >= floor for k in candidates)
        ):
            raise ConfigRuleError(f"BS {key}: candidate_steps must be a list of non-negative ints", where)
        tiers[int(key)] = sorted(candidates)
    if not tiers:
        raise ConfigRuleError("the adaptive config must contain at least one integer-string BS key", where)
    return tiers


def _tier_step(tiers: dict[int, list[int]], keys: list[int], graphs: list[int], batch: int, steps: int) -> int:
    """batch_size_key_for_batch: pad up to a captured graph batch, then the largest key <= it (else the smallest)."""
    index = bisect.bisect_left(graphs, batch)
    padded = graphs[index] if index < len(graphs) else batch
    position = bisect.bisect_right(keys, padded) - 1
    candidates = tiers[keys[max(position, 0)]]
    # a slot starts at the global steps when it is among its candidates, else at the median candidate
    return steps if steps in candidates else candidates[len(candidates) // 2]


# ---------------------------------------------------------------------------
# Reports

PROMETHEUS = PrometheusNames(prefix="sglang", running="num_running_reqs", counters=("spec_verify_calls",))


def k_from_rate(length: float, rate: float) -> tuple[int | None, str]:
    """k from accept length and accept rate: (L - 1) / k since PR #23530, L / (k + 1) before."""
    if rate <= 0 or length <= 1:
        return None, ""
    current = integral((length - 1.0) / rate)
    if current is not None:
        return current, "sglang:spec_accept_rate read as (accept length - 1) / k (SGLang 2026-05)"
    older = integral(length / rate - 1.0)
    if older is not None:
        return older, "sglang:spec_accept_rate read as accept length / (k + 1) (SGLang 2026-03)"
    return None, ""


def _detect_metrics(text: str, payload: Any) -> bool:
    return payload is None and re.search(r"(?m)^sglang[:_]spec_(accept_|num_steps|verify_calls)", text) is not None


def _read_metrics(text: str, payload: Any, options: ReadOptions) -> list[Measurement]:
    found, running = groups(text, PROMETHEUS, options.label)
    if not found:
        raise fail(ErrorKind.UNRELATED, "SGLang: no sglang:spec_* series: is speculative decoding enabled?")
    generated: dict[str, float] = {}
    for name, labels, value in samples(text):
        if stem_of(name, "sglang") == "generation_tokens" and math.isfinite(value):
            key = labels.get(options.label, "")
            generated[key] = generated.get(key, 0.0) + value
    measurements = []
    for key, group in sorted(found.items()):
        lengths = group.gauges.get("spec_accept_length")
        if not lengths:
            raise fail(ErrorKind.MISSING_COUNTER, "SGLang: missing gauge sglang:spec_accept_length")
        length = float(np.mean(lengths))
        notes: list[str] = []
        k, source = options.k, "given"
        live_steps = group.gauges.get("spec_num_steps")
        live_tokens = group.gauges.get("spec_num_draft_tokens")
        version = "2026-05" if live_steps is not None else "2026-03"
        if k is None and live_steps:
            k, source = round(float(np.mean(live_steps))), "sglang:spec_num_steps (the tier running now)"
            if live_tokens and abs(float(np.mean(live_tokens)) - (k + 1)) > 1e-9:
                notes.append("sglang:spec_num_draft_tokens is not steps + 1: a tree; p is chain-equivalent")
        rates = group.gauges.get("spec_accept_rate")
        if k is None and rates:
            k, how = k_from_rate(length, float(np.mean(rates)))
            source = "from accept length and accept rate"
            if how:
                notes.append(how)
        if live_steps is not None and len(set(live_steps)) > 1:
            notes.append(f"series report several steps {sorted(set(live_steps))}: an adaptive schedule")
        if rates and live_steps is not None:
            notes.append(
                "in adaptive mode sglang:spec_accept_rate divides by the startup draft width, not the tier that ran; "
                "p here comes from the accept length at the steps running now"
            )
        verify = group.sums.get("spec_verify_calls")
        cycles = options.cycles
        if cycles is None and verify and key in generated:
            length = generated[key] / verify
            cycles = verify
            notes.append(
                "accept length = sglang:generation_tokens_total / sglang:spec_verify_calls_total (exact, whole run)"
            )
        elif cycles is None and key in generated and length > 0 and len(found) == 1:
            cycles = generated[key] / length
            notes.append(
                "verifications estimated as sglang:generation_tokens_total / accept length (the gauge covers the last "
                "logging interval, the counter the whole run): the interval is approximate"
            )
        measurement = mean_only(NAME, "sglang-metrics", key or None, length, k, source, cycles, running, notes)
        measurements.append(_versioned(measurement, version, options))
    return measurements


def _versioned(measurement: Measurement, version: str, options: ReadOptions) -> Measurement:
    from dataclasses import replace

    return replace(measurement, version=version, draft_lengths=options.draft_lengths)


def _detect_server_info(text: str, payload: Any) -> bool:
    from app.model.engines.reports import has_key

    return payload is not None and has_key(payload, ("avg_spec_accept_length", "internal_states"))


def _read_server_info(text: str, payload: Any, options: ReadOptions) -> list[Measurement]:
    info = payload[0] if isinstance(payload, list) and payload else payload
    if not isinstance(info, Mapping):
        raise fail(ErrorKind.UNPARSEABLE, "SGLang /server_info must be a JSON object")
    states = info.get("internal_states")
    if states is None and isinstance(info.get("decode"), list) and info["decode"]:
        info = info["decode"][0]
        states = info.get("internal_states") if isinstance(info, Mapping) else None
    if not isinstance(states, list) or not states:
        states = [info]
    lengths = []
    for state in states:
        value = state.get("avg_spec_accept_length") if isinstance(state, Mapping) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        lengths.append(float(value))
    if not lengths:
        raise fail(
            ErrorKind.MISSING_COUNTER,
            "SGLang: no numeric avg_spec_accept_length in internal_states: is speculative decoding enabled?",
        )
    notes = []
    if len(lengths) > 1:
        notes.append(f"{len(lengths)} internal states (data-parallel ranks) averaged")
    steps = info.get("speculative_num_steps")
    topk = info.get("speculative_eagle_topk")
    k, source = options.k, "given"
    if k is None and isinstance(steps, int) and not isinstance(steps, bool) and steps >= 1:
        k, source = steps, "speculative_num_steps"
        if isinstance(topk, int) and topk > 1:
            notes.append(f"speculative_eagle_topk = {topk}: a tree; p is the chain-equivalent acceptance at depth k")
    if info.get("speculative_adaptive"):
        notes.append(
            "speculative_adaptive: steps vary by batch tier; the top-level speculative_num_steps is the startup "
            "value (give draft_lengths for the tiers)"
        )
    measurement = mean_only(
        NAME, "sglang-server-info", None, float(np.mean(lengths)), k, source, options.cycles, None, notes
    )
    return [_versioned(measurement, "2026-05", options)]


REPORTS = (
    ReportFormat(
        "sglang-server-info",
        NAME,
        "SGLang /server_info JSON: avg_spec_accept_length in internal_states",
        ("2026-03", "2026-05"),
        _detect_server_info,
        _read_server_info,
    ),
    ReportFormat(
        "sglang-metrics",
        NAME,
        "SGLang /metrics (Prometheus text): spec_accept_length, spec_num_steps gauges, spec_verify_calls_total",
        ("2026-03", "2026-05"),
        _detect_metrics,
        _read_metrics,
    ),
)


def shell_line(flags: Sequence[str]) -> str:
    return LAUNCH + " " + " ".join(shlex.quote(flag) for flag in flags)


METHODS = ALGORITHMS
METHOD_ALIAS = "sglang_algorithm"  # the older query parameter for method=, kept as an alias
HOW_TO_APPLY = (  # what the off-schedule alert tells an operator to do
    "give SGLang the flags specdec-lab config --engine sglang writes (the adaptive config per batch tier, "
    "--speculative-adaptive-config, or one draft length where the algorithm takes one)"
)


def choose_method(given: str | None) -> str | None:
    """The --speculative-algorithm as SGLang spells it (None: STANDALONE, or as the draft type says)."""
    return algorithm_name(given, None) if given else None


# ---------------------------------------------------------------------------
# Prometheus rules: the series each version exports (python/sglang/srt/observability/metrics_collector.py)

_GAUGES_LOSE = (
    "no per-position counters: SGLang exports no acceptance per position, so the profile cannot be seen and p is "
    "the i.i.d. p that gives the measured tokens per verification at the running k",
)
RULES_METRICS = {
    "2026-03": RulesMetrics(
        running="sglang:num_running_reqs",
        scrape_format="sglang-metrics",
        accept_length="sglang:spec_accept_length",
        missing="",
        loses=(
            *_GAUGES_LOSE,
            "only gauges: sglang:spec_accept_length is the mean of the last logging interval, so the window's "
            "tokens per verification is an unweighted mean of scraped values (busy and idle moments count alike, "
            "intervals between scrapes are lost) with no count of verifications: no interval for p and no "
            "minimum of drafts before an alert",
            "no gauge of the k running: the schedule check cannot be made (SGLang 2026-05 has sglang:spec_num_steps)",
        ),
    ),
    "2026-05": RulesMetrics(
        running="sglang:num_running_reqs",
        scrape_format="sglang-metrics",
        verify_calls="sglang:spec_verify_calls_total",
        generated="sglang:generation_tokens_total",
        accept_length="sglang:spec_accept_length",
        running_k="sglang:spec_num_steps",
        k_from="gauge",
        loses=(
            *_GAUGES_LOSE,
            "no counter of drafted or accepted tokens: tokens per verification is sglang:generation_tokens_total / "
            "sglang:spec_verify_calls_total (each request's first token, from prefill, counts too), and p has no "
            "sampling interval",
            "sglang:spec_num_steps is a gauge of the tier running at the scrape: tiers run between scrapes are not "
            "seen, and a window whose batch crossed a tier mixes two k",
        ),
    ),
}
