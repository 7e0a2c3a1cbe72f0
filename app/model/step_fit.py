"""Fit the roofline's efficiencies and per-pass overhead to measured step times.

A measured row is either one target pass over ``tokens`` tokens per sequence at a batch, or one
speculative cycle: ``draft_steps`` draft passes (each over ``draft_width`` tokens per sequence) and a
verification pass over ``tokens`` tokens.  With bandwidth efficiency e_b, compute efficiency e_c and
overhead o per pass, a pass takes max(M / e_b, F / e_c) + o where M and F are its bytes and FLOPs over
the peak figures; a row is the sum of its passes.  The fit minimises the squared relative error over a
log-spaced grid of (e_b, e_c), refined around the best cell, with o solved in closed form at each point.

The same rows also fit the named terms of :mod:`app.model.step_cost` (fixed, per sequence, per further
token, per draft step), which need no hardware figures: ``StepFit.step_cost``.

Formats read: a CSV of ``batch, tokens, ms`` (tokens may be a mean over steps; an optional ``draft_steps``
column makes a row a cycle of that many draft passes and the verification, as ``measure --batch`` writes
for a draft model); the JSON vLLM's dynamic speculation config generator
writes (``vllm/v1/spec_decode/dynamic/generate_config.py``: ``batch_stats`` maps batch size to
{k: median inter-token latency in ms}, k = 0 without speculation), each entry taken as the time of one
step (k = 0) or cycle (k > 0); SGLang's ``scripts/playground/bench_speculative.py`` JSON Lines (keys
``batch_size``, ``steps``, ``topk``, ``num_draft_tokens``, ``step_time`` in seconds); TensorRT-LLM's
iteration statistics (decode-only iterations: ``iterLatencyMS`` at ``inflightBatchingStats.numGenRequests``
sequences, each drafting ``specDecodingStats.numDraftTokens / numRequestsWithDraftTokens`` tokens).
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, replace

import numpy as np

from app.model import step_cost as named_terms
from app.model.regimes import RooflineSetup, model_step
from app.model.step_cost import StepCost, StepPoint

MAX_ROWS = 5_000
MAX_BATCH = 4096
MAX_TOKENS = 1024
MAX_DRAFT_STEPS = 64
MAX_OVERHEAD_US = 100_000.0
EFFICIENCY_FLOOR = 0.01
GRID = 48
GRID_CHUNK = 64


class StepFitError(ValueError):
    """Step times that cannot be read or fitted, with the reason."""


@dataclass(frozen=True)
class StepRow:
    batch: int
    tokens: float  # verified tokens per sequence of the target pass (a mean over steps may be fractional)
    ms: float
    draft_steps: int = 0
    draft_width: int = 1

    @property
    def kind(self) -> str:
        return "cycle" if self.draft_steps else "target"


@dataclass(frozen=True)
class StepFit:
    format: str
    rows: list[StepRow]
    bandwidth_efficiency: float
    compute_efficiency: float
    overhead_us: float
    fitted_ms: list[float]
    rms_relative_error: float
    max_relative_error: float
    at_bounds: list[str]
    setup: RooflineSetup
    step_cost: StepCost | None = None  # the named terms, where the rows identify any


def _row(batch: float, tokens: float, ms: float, where: str, draft_steps: int = 0, width: int = 1) -> StepRow:
    for name, value in (("batch", batch), ("tokens", tokens), ("ms", ms)):
        if not math.isfinite(value):
            raise StepFitError(f"{where}: {name} is not a finite number")
    if not (1 <= batch <= MAX_BATCH and float(batch).is_integer()):
        raise StepFitError(f"{where}: batch must be a whole number from 1 to {MAX_BATCH}; got {batch:g}")
    if not 1 <= tokens <= MAX_TOKENS:
        raise StepFitError(f"{where}: tokens must be from 1 to {MAX_TOKENS} (a mean may be fractional); got {tokens:g}")
    if not 0 < ms <= 1e6:
        raise StepFitError(f"{where}: the time must be above 0 and at most 1e6 ms; got {ms:g}")
    if not 0 <= draft_steps <= MAX_DRAFT_STEPS:
        raise StepFitError(
            f"{where}: draft_steps must be a whole number from 0 to {MAX_DRAFT_STEPS}; got {draft_steps}"
        )
    whole = int(tokens) if float(tokens).is_integer() else float(tokens)
    return StepRow(int(batch), whole, float(ms), draft_steps, width)


def _csv_rows(text: str) -> list[StepRow]:
    reader = csv.DictReader(io.StringIO(text.strip()))
    fields = {name.strip().lower(): name for name in reader.fieldnames or []}
    aliases = {
        "batch": ("batch", "batch_size"),
        "tokens": ("tokens", "tokens_per_sequence", "n"),
        "ms": ("ms", "time_ms", "milliseconds", "step_ms"),
    }
    chosen = {}
    for key, names in aliases.items():
        found = next((fields[name] for name in names if name in fields), None)
        if found is None:
            raise StepFitError(f"the CSV needs a {key} column (one of {', '.join(names)}); got {', '.join(fields)}")
        chosen[key] = found
    draft_column = fields.get("draft_steps")
    rows = []
    for number, record in enumerate(reader, start=2):
        try:
            values = {key: float(record[name]) for key, name in chosen.items()}
            draft_steps = float(record[draft_column] or 0) if draft_column else 0.0
        except (TypeError, ValueError):
            raise StepFitError(f"line {number}: batch, tokens, ms and draft_steps must be numbers") from None
        if not draft_steps.is_integer():
            raise StepFitError(f"line {number}: draft_steps must be a whole number; got {draft_steps:g}")
        where = f"line {number}"
        rows.append(_row(values["batch"], values["tokens"], values["ms"], where, draft_steps=int(draft_steps)))
        if len(rows) > MAX_ROWS:
            raise StepFitError(f"more than {MAX_ROWS:,} rows")
    return rows


def _vllm_rows(payload: dict[str, object]) -> list[StepRow]:
    stats = payload.get("batch_stats")
    if not isinstance(stats, dict) or not stats:
        raise StepFitError("vLLM dynamic speculation config: batch_stats must map batch size to {k: ms}")
    rows = []
    for batch_key, by_k in stats.items():
        if not isinstance(by_k, dict):
            raise StepFitError(f"batch_stats[{batch_key!r}] must map k to milliseconds")
        for k_key, ms in by_k.items():
            where = f"batch_stats[{batch_key!r}][{k_key!r}]"
            try:
                batch, k = float(batch_key), float(k_key)
            except ValueError:
                raise StepFitError(f"{where}: batch and k must be numbers") from None
            if not isinstance(ms, int | float) or isinstance(ms, bool):
                raise StepFitError(f"{where}: the latency must be a number")
            if not (0 <= k <= 64 and k.is_integer()):
                raise StepFitError(f"{where}: k must be a whole number from 0 to 64")
            rows.append(_row(batch, int(k) + 1, float(ms), where, draft_steps=int(k)))
    return rows


def _sglang_rows(records: list[object]) -> list[StepRow]:
    rows = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, dict):
            raise StepFitError(f"line {number}: each line must be a JSON object")
        try:
            batch = float(record["batch_size"])
            steps = int(record.get("steps", 0) or 0)
            topk = int(record.get("topk", 0) or 0)
            draft_tokens = int(record.get("num_draft_tokens", 0) or 0)
            seconds = float(record["step_time"])
        except (KeyError, TypeError, ValueError):
            raise StepFitError(f"line {number}: needs numeric batch_size and step_time (seconds)") from None
        if steps < 0 or topk < 0 or draft_tokens < 0 or steps > 64:
            raise StepFitError(f"line {number}: steps, topk and num_draft_tokens must be at least 0 (steps <= 64)")
        tokens = draft_tokens if steps else 1
        rows.append(_row(batch, max(tokens, 1), seconds * 1e3, f"line {number}", steps, max(topk, 1)))
    return rows


def _trtllm_rows(records: list[object]) -> list[StepRow]:
    """Decode-only iterations of TensorRT-LLM's iteration stats: iterLatencyMS at numGenRequests sequences."""
    rows = []
    for number, record in enumerate(records):
        if not isinstance(record, dict):
            continue
        inflight = record.get("inflightBatchingStats") or {}
        spec = record.get("specDecodingStats") or {}
        if not isinstance(inflight, dict) or not isinstance(spec, dict):
            continue
        try:
            context = float(inflight.get("numContextRequests", 0) or 0)
            batch = float(inflight.get("numGenRequests", 0) or 0)
            ms = float(record["iterLatencyMS"])
            drafted = float(spec.get("numDraftTokens", 0) or 0)
            requests = float(spec.get("numRequestsWithDraftTokens", 0) or 0)
        except (KeyError, TypeError, ValueError):
            raise StepFitError(f"iteration {number}: needs numeric iterLatencyMS and numGenRequests") from None
        if context > 0 or batch < 1:
            continue  # a prefill shares the iteration: not a decoding step
        k = round(drafted / requests) if requests > 0 else 0
        if requests > 0 and (requests != batch or abs(drafted / requests - k) > 1e-9):
            continue  # some sequences drafted and some did not, or drafts of several lengths
        rows.append(_row(batch, k + 1, ms, f"iteration {number}", draft_steps=k))
    return rows


def read_step_times(text: str) -> tuple[str, list[StepRow]]:
    stripped = text.strip()
    if not stripped:
        raise StepFitError("no step times: give a CSV (batch, tokens, ms) or a vLLM / SGLang benchmark file")
    if stripped[0] in "[{":
        try:
            payload = json.loads(stripped)
        except json.JSONDecodeError:
            try:
                payload = [json.loads(line) for line in stripped.splitlines() if line.strip()]
            except json.JSONDecodeError as error:
                raise StepFitError(f"the JSON does not parse ({error.msg})") from None
        if isinstance(payload, dict) and "batch_stats" in payload:
            rows, name = _vllm_rows(payload), "vllm-dynamic-config"
        elif isinstance(payload, dict) and "step_time" in payload:
            rows, name = _sglang_rows([payload]), "sglang-bench-speculative"
        elif isinstance(payload, list) and any(isinstance(item, dict) and "iterLatencyMS" in item for item in payload):
            rows, name = _trtllm_rows(payload), "trtllm-iteration-stats"
        elif isinstance(payload, list):
            rows, name = _sglang_rows(payload), "sglang-bench-speculative"
        else:
            raise StepFitError("JSON with neither batch_stats (vLLM) nor step_time records (SGLang bench_speculative)")
    else:
        rows, name = _csv_rows(stripped), "csv"
    if len(rows) > MAX_ROWS:
        raise StepFitError(f"more than {MAX_ROWS:,} rows")
    if len(rows) < 3:
        raise StepFitError(f"{len(rows)} rows: at least 3 are needed to fit three parameters")
    return name, rows


def _components(setup: RooflineSetup, rows: list[StepRow]) -> tuple[np.ndarray, ...]:
    """Per row: target and draft passes' bytes and FLOPs in seconds at efficiency 1, and passes per row."""
    unit = replace(setup, bandwidth_efficiency=1.0, compute_efficiency=1.0, step_overhead_us=0.0)
    batch = np.array([row.batch for row in rows], dtype=np.float64)
    tokens = np.array([row.tokens for row in rows], dtype=np.float64)
    width = np.array([row.draft_width for row in rows], dtype=np.float64)
    steps = np.array([row.draft_steps for row in rows], dtype=np.float64)
    target = model_step(unit, unit.target, unit.target_bytes_per_param, batch, tokens)
    draft = model_step(unit, unit.draft, unit.draft_bytes_per_param, batch, width)
    return target.memory_s, target.compute_s, draft.memory_s, draft.compute_s, steps


def _predict(parts: tuple[np.ndarray, ...], eb: np.ndarray, ec: np.ndarray) -> np.ndarray:
    tm, tc, dm, dc, steps = parts
    target = np.maximum(tm[None, :] / eb[:, None], tc[None, :] / ec[:, None])
    draft = np.maximum(dm[None, :] / eb[:, None], dc[None, :] / ec[:, None])
    result: np.ndarray = target + steps[None, :] * draft
    return result


def fit_step_times(setup: RooflineSetup, format_name: str, rows: list[StepRow]) -> StepFit:
    parts = _components(setup, rows)
    measured = np.array([row.ms for row in rows]) * 1e-3
    passes = parts[4] + 1.0
    weight = 1.0 / measured
    cap = MAX_OVERHEAD_US * 1e-6

    def best_on(eb_values: np.ndarray, ec_values: np.ndarray) -> tuple[float, float, float, float]:
        eb_all, ec_all = (grid.ravel() for grid in np.meshgrid(eb_values, ec_values, indexing="ij"))
        best = (0.0, 0.0, 0.0, math.inf)
        a = passes * weight
        for start in range(0, eb_all.size, GRID_CHUNK):  # bounded memory: GRID_CHUNK x rows at a time
            eb, ec = eb_all[start : start + GRID_CHUNK], ec_all[start : start + GRID_CHUNK]
            predicted = _predict(parts, eb, ec)
            # o minimising sum(((predicted + passes o - measured) / measured)^2), kept within [0, cap]
            overhead = np.clip(((measured - predicted) * weight) @ a / float(a @ a), 0.0, cap)
            total = (((predicted + overhead[:, None] * passes - measured) * weight) ** 2).sum(axis=1)
            index = int(np.argmin(total))
            if total[index] < best[3]:
                best = (float(eb[index]), float(ec[index]), float(overhead[index]), float(total[index]))
        return best

    levels = np.geomspace(EFFICIENCY_FLOOR, 1.0, GRID)
    eb, ec, overhead, _ = best_on(levels, levels)
    for _ in range(3):  # refine around the best cell
        span = levels[1] / levels[0]
        levels_b = np.clip(np.geomspace(eb / span, eb * span, 17), EFFICIENCY_FLOOR, 1.0)
        levels_c = np.clip(np.geomspace(ec / span, ec * span, 17), EFFICIENCY_FLOOR, 1.0)
        eb, ec, overhead, _ = best_on(levels_b, levels_c)
        levels = levels_b
    fitted = _predict(parts, np.array([eb]), np.array([ec]))[0] + overhead * passes
    relative = (fitted - measured) / measured
    at_bounds = [
        name
        for name, value, low, high in (
            ("bandwidth_efficiency", eb, EFFICIENCY_FLOOR, 1.0),
            ("compute_efficiency", ec, EFFICIENCY_FLOOR, 1.0),
            ("overhead_us", overhead, 0.0, cap),
        )
        if math.isclose(value, low, rel_tol=1e-6, abs_tol=1e-12) or math.isclose(value, high, rel_tol=1e-6)
    ]
    fitted_setup = replace(
        setup,
        bandwidth_efficiency=eb,
        compute_efficiency=ec,
        step_overhead_us=overhead * 1e6,
        overhead_per_draft_step_us=None,  # the fit gives draft and target passes one overhead
        # measured steps hold the cycle's own time and the all-reduces: the fitted overhead carries them, so the
        # defaults' terms for them (fitted to published measurements) would count them twice
        cycle_overhead_us=0.0,
        cycle_overhead_per_sequence_us=0.0,
        allreduce_us=0.0,
    )
    terms = named_terms.fit(
        [StepPoint(row.batch, row.tokens, row.ms) for row in rows], draft_model=any(row.draft_steps for row in rows)
    )
    return StepFit(
        format=format_name,
        rows=rows,
        bandwidth_efficiency=eb,
        compute_efficiency=ec,
        overhead_us=overhead * 1e6,
        fitted_ms=[float(value) * 1e3 for value in fitted],
        rms_relative_error=float(np.sqrt(np.mean(relative**2))),
        max_relative_error=float(np.max(np.abs(relative))),
        at_bounds=at_bounds,
        setup=fitted_setup,
        step_cost=terms,
    )


def example_step_times(setup: RooflineSetup, batches: list[int], tokens: list[int], noise: float, seed: int) -> str:
    """A CSV of target step times from ``setup`` itself, with multiplicative noise (for tests and examples)."""
    rng = np.random.default_rng(seed)
    lines = ["batch,tokens,ms"]
    for batch in batches:
        for n in tokens:
            step = model_step(setup, setup.target, setup.target_bytes_per_param, batch, n)
            ms = float(step.total_s) * 1e3 * float(np.exp(rng.normal(0.0, noise)))
            lines.append(f"{batch},{n},{ms:.6f}")
    return "\n".join(lines) + "\n"
