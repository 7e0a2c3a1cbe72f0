"""What a sweep over the draft length measured on a live engine, turned into acceptance, costs and speedups.

Input: for each draft length k of the sweep (k = 0 is plain decoding, the baseline) the totals over the
same workload: requests, generated tokens, decode milliseconds, and the deltas of the engine's
speculative-decoding counters (verifications, drafted tokens, accepted tokens, accepted tokens per position
counted as "verifications with at least i + 1 accepted"), plus, where the engine reports it, the time it
spent generating drafts.

Symbols (per k):

- N = generated tokens minus one per request: the tokens of the decoding phase.  llama.cpp's
  ``timings.predicted_ms`` starts after the first token, which comes from the prompt pass
  (``server_slot_stats::n_gen_steps``), so N tokens take T = sum of ``predicted_ms``.
- t = T / N at k = 0: milliseconds of one plain target step.  Measured speedup S = t / (T / N).
- D verifications, G drafted tokens, A accepted tokens, a_i verifications with at least i + 1 accepted.
  Acceptance profile pi_i = a_i / D; tokens per verification E = 1 + A / D (= 1 + sum pi_i, the expected
  tokens of a cycle for any profile, i.i.d. or not); mean draft length L = G / D.
- P = N - D - A: decoding steps that verified no draft (an n-gram lookup that found nothing, the last token
  of a request), each one token.
- Cycle cost C = (T - P t) / (D t): one draft-and-verify cycle in plain steps, steps without a draft
  taken as plain steps.

Separating the draft cost c from the verification cost v(k).  C alone cannot be split: any
c L + v gives the same C.  The split comes from the engine's own timer of draft generation
(llama.cpp: ``common_speculative_impl::t_draft_us``, printed at ``-lv 4`` as the ``g`` of
``dur(b,g,a)`` in the ``statistics`` line, cumulative since start-up): c = draft ms / G / t, the time per
drafted token in plain steps, and v(k) = C - L c, everything else in the cycle.  For a draft model that is
the target's pass over the L + 1 tokens, the sampling of L + 1 positions and the draft model's own pass
over the verified tokens (llama.cpp runs it inside the target's decode call, ``common_speculative_process``,
outside ``t_draft_us``).  Without the engine's timer c is taken as given (for n-gram lookup it is about 0);
with neither, c and v stay unknown and only C is modelled.

Cost model: v(k) = v0 + beta L, least squares over the measured k (the constant cost per cycle v0 - 1 over a
plain step is real on small models: a cycle launches a multi-token batch and samples each position); with a
single speculative k, v0 = 1 and beta comes from that k.  Without c, C = a + gamma L is fitted instead.
The closed-form prediction is then

    S_hat(k) = E / (L c + v0 + beta L)

from the measured profile (E), the measured c at that k and the modelled v; ``predicted_speedup_mixed``
also counts the P steps without a draft: (D E + P) / (D (L c + v0 + beta L) + P).  The in-sample fit makes
the prediction agree where the linear cost model holds; ``predicted_speedup_holdout`` fits v without that
k (at least two other k needed), so it predicts a k from the others' costs and its own acceptance.  The
best k (k = 0 included, at speedup 1) is given as measured, by the closed form and by the mixed form.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace

import numpy as np

from app.model.counters.calibration import MAX_COUNTER
from app.model.counters.counts import CounterNames, SpecCounts, counter_families
from app.model.counters.prometheus_text import exposition

MAX_SWEEP = 65  # k = 0..64
MAX_COUNT = MAX_COUNTER


class MeasureError(ValueError):
    """Measurements that cannot be analysed, with the reason."""


@dataclass(frozen=True)
class Sample:
    """The totals measured at one draft length over the workload."""

    k: int
    requests: int
    generated: int  # sum of the responses' generated tokens (llama.cpp timings.predicted_n)
    decode_ms: float  # sum of their decode time (timings.predicted_ms)
    drafts: int = 0  # verifications (llamacpp:spec_decode_num_drafts_total delta)
    draft_tokens: int = 0
    accepted: int = 0
    accepted_per_position: tuple[int, ...] = ()  # position i: verifications with at least i + 1 accepted
    draft_ms: float | None = None  # the engine's own time generating drafts, where it reports it
    batch: int = 1  # requests decoded together (llama-server slots in use)
    # the batch's wall-clock time from sending its requests to the last answer, prompts included (end to end)
    wall_ms: float | None = None

    @property
    def tokens(self) -> int:
        """Decoding-phase tokens: the first token of each request comes from the prompt pass."""
        return self.generated - self.requests


@dataclass(frozen=True)
class KResult:
    k: int
    requests: int
    tokens: int
    ms_per_token: float
    measured_speedup: float
    drafts: int
    draft_tokens: int
    accepted: int
    profile: tuple[float, ...]  # share of verifications accepted at least to position i + 1
    tokens_per_verification: float | None  # 1 + accepted / drafts
    mean_draft_length: float | None  # draft tokens / drafts
    plain_steps: int  # decoding steps without a draft
    draft_share: float | None  # verifications / decoding steps
    cycle_cost: float | None  # plain steps per cycle
    c: float | None  # draft cost per drafted token, plain steps
    v: float | None  # measured verification cost: cycle_cost - mean_draft_length c
    v_model: float | None  # v0 + beta L
    predicted_speedup: float | None  # closed form
    predicted_speedup_mixed: float | None  # with the steps that had no draft
    predicted_speedup_holdout: float | None  # v fitted without this k


@dataclass(frozen=True)
class Analysis:
    plain_ms_per_token: float
    results: list[KResult]
    c: float | None  # pooled over the sweep
    c_source: str
    v0: float | None
    beta: float | None
    cycle_intercept: float  # C = a + gamma L, the same fit with c folded in
    cycle_slope: float
    cost_model: str
    best_k_measured: int
    best_k_predicted: int | None  # by the closed form
    best_k_predicted_mixed: int | None  # by the form that counts the steps without a draft
    notes: list[str] = field(default_factory=list)


def check_sample(sample: Sample) -> None:
    where = f"k = {sample.k}"
    if not 0 <= sample.k < MAX_SWEEP:
        raise MeasureError(f"{where}: k must be from 0 to {MAX_SWEEP - 1}")
    counts = {
        "requests": sample.requests,
        "generated": sample.generated,
        "drafts": sample.drafts,
        "draft tokens": sample.draft_tokens,
        "accepted": sample.accepted,
    }
    for name, value in counts.items():
        if not 0 <= value <= MAX_COUNT:
            raise MeasureError(f"{where}: {name} must be from 0 to {MAX_COUNT:g}; got {value}")
    if not (math.isfinite(sample.decode_ms) and sample.decode_ms > 0):
        raise MeasureError(f"{where}: decode time must be a positive number of ms; got {sample.decode_ms}")
    if sample.draft_ms is not None and not (math.isfinite(sample.draft_ms) and sample.draft_ms >= 0):
        raise MeasureError(f"{where}: draft time must be at least 0 ms; got {sample.draft_ms}")
    if sample.requests < 1 or sample.tokens < 1:
        raise MeasureError(f"{where}: needs a request that decoded at least 2 tokens")
    if sample.k == 0 and (sample.drafts or sample.draft_tokens or sample.accepted or sample.accepted_per_position):
        raise MeasureError("k = 0 is plain decoding: it must have no drafts")
    if sample.accepted > sample.draft_tokens:
        raise MeasureError(f"{where}: {sample.accepted} accepted of {sample.draft_tokens} drafted tokens")
    if sample.draft_tokens > sample.k * sample.drafts:
        raise MeasureError(f"{where}: {sample.draft_tokens} draft tokens in {sample.drafts} drafts of at most k")
    if sample.drafts + sample.accepted > sample.tokens:
        raise MeasureError(
            f"{where}: {sample.drafts} verifications and {sample.accepted} accepted tokens, but only "
            f"{sample.tokens} decoded tokens"
        )
    positions = sample.accepted_per_position
    if len(positions) > sample.k:
        raise MeasureError(f"{where}: {len(positions)} per-position counts for k = {sample.k}")
    if any(value < 0 for value in positions) or any(b > a for a, b in itertools.pairwise(positions)):
        raise MeasureError(f"{where}: per-position counts must be at least 0 and never grow along the positions")
    if positions and positions[0] > sample.drafts:
        raise MeasureError(f"{where}: {positions[0]} verifications accepted position 1 of {sample.drafts}")


def _fit_line(x: list[float], y: list[float], intercept: float | None) -> tuple[float, float]:
    """(intercept, slope) by least squares; the intercept fixed when given or when x has one distinct value."""
    xs, ys = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if intercept is None and np.ptp(xs) > 1e-12:
        slope, fitted = np.polyfit(xs, ys, 1)
        return float(fitted), float(slope)
    fixed = 1.0 if intercept is None else intercept
    return fixed, float(np.dot(xs, ys - fixed) / np.dot(xs, xs))


def analyze(samples: list[Sample], draft_cost: float | None = None, draft_cost_source: str = "given") -> Analysis:
    """Acceptance, costs, measured and predicted speedup per k; ``draft_cost`` is c when no draft time is known."""
    if not samples:
        raise MeasureError("no measurements")
    for sample in samples:
        check_sample(sample)
    ks = [sample.k for sample in samples]
    if len(set(ks)) != len(ks):
        raise MeasureError(f"k measured twice: {sorted(k for k in set(ks) if ks.count(k) > 1)}")
    by_k = {sample.k: sample for sample in sorted(samples, key=lambda item: item.k)}
    if 0 not in by_k:
        raise MeasureError("plain decoding (k = 0) was not measured: it is the baseline of every speedup")
    if draft_cost is not None and not (math.isfinite(draft_cost) and draft_cost >= 0):
        raise MeasureError(f"the draft cost c must be at least 0; got {draft_cost}")
    plain = by_k[0]
    t = plain.decode_ms / plain.tokens
    notes: list[str] = []

    speculative = [sample for k, sample in by_k.items() if k > 0 and sample.drafts > 0]
    for k, sample in by_k.items():
        if k > 0 and sample.drafts == 0:
            notes.append(f"k = {k}: no draft was verified, so it has no profile or costs")
        if k > 0 and sum(sample.accepted_per_position) != sample.accepted and sample.accepted_per_position:
            notes.append(
                f"k = {k}: per-position counts sum to {sum(sample.accepted_per_position)}, accepted is "
                f"{sample.accepted}; tokens per verification comes from accepted"
            )

    timed = [sample for sample in speculative if sample.draft_ms is not None]
    c_pooled: float | None
    if timed:
        c_pooled = sum(s.draft_ms or 0.0 for s in timed) / sum(s.draft_tokens for s in timed) / t
        c_source = "the engine's draft-generation time per drafted token, over plain ms per token"
        if len(timed) < len(speculative):
            notes.append("the engine's draft time is missing at some k: those take the pooled c")
    elif draft_cost is not None:
        c_pooled, c_source = draft_cost, draft_cost_source
    else:
        c_pooled, c_source = None, "unknown: no draft time from the engine and none given"

    def c_at(sample: Sample) -> float | None:
        if sample.draft_ms is not None and sample.draft_tokens > 0:
            return sample.draft_ms / sample.draft_tokens / t
        return c_pooled

    lengths: dict[int, float] = {}
    cycles: dict[int, float] = {}
    plain_steps: dict[int, int] = {}
    for sample in speculative:
        steps = sample.tokens - sample.drafts - sample.accepted
        plain_steps[sample.k] = steps
        lengths[sample.k] = sample.draft_tokens / sample.drafts
        cycles[sample.k] = (sample.decode_ms - steps * t) / (sample.drafts * t)
    measured_v = {
        sample.k: cycles[sample.k] - lengths[sample.k] * c for sample in speculative if (c := c_at(sample)) is not None
    }

    def fit(excluded: int | None) -> tuple[float, float] | None:
        chosen = [k for k in lengths if k != excluded]
        if not chosen or (excluded is not None and len(chosen) < 2):
            return None
        x = [lengths[k] for k in chosen]
        if c_pooled is None:
            return _fit_line(x, [cycles[k] for k in chosen], None)
        return _fit_line(x, [measured_v[k] for k in chosen], None)

    def predicted_cycle(k: int, line: tuple[float, float] | None) -> float | None:
        if line is None:
            return None
        intercept, slope = line
        c = c_at(by_k[k])
        return intercept + slope * lengths[k] + (lengths[k] * c if c is not None else 0.0)

    line = fit(None)
    cycle_line = _fit_line(list(lengths.values()), list(cycles.values()), None) if lengths else (1.0, 0.0)
    if len({round(value, 9) for value in lengths.values()}) == 1:
        notes.append("one speculative draft length: v0 = 1 is assumed and beta comes from that k alone")

    results: list[KResult] = []
    for k, sample in by_k.items():
        ms_per_token = sample.decode_ms / sample.tokens
        measured = t / ms_per_token
        baseline = 1.0 if k == 0 else None
        result = KResult(  # plain decoding, or a k at which nothing was drafted
            k=k,
            requests=sample.requests,
            tokens=sample.tokens,
            ms_per_token=ms_per_token,
            measured_speedup=measured,
            drafts=0,
            draft_tokens=sample.draft_tokens,
            accepted=0,
            profile=(),
            tokens_per_verification=None,
            mean_draft_length=None,
            plain_steps=sample.tokens,
            draft_share=None if k == 0 else 0.0,
            cycle_cost=None,
            c=None,
            v=None,
            v_model=None,
            predicted_speedup=baseline,
            predicted_speedup_mixed=baseline,
            predicted_speedup_holdout=baseline,
        )
        if k not in lengths:
            results.append(result)
            continue
        expected = 1.0 + sample.accepted / sample.drafts
        steps = plain_steps[k]
        modelled = predicted_cycle(k, line)
        holdout = predicted_cycle(k, fit(k))
        v_model = None
        if line is not None and c_pooled is not None:
            v_model = line[0] + line[1] * lengths[k]
        results.append(
            replace(
                result,
                drafts=sample.drafts,
                accepted=sample.accepted,
                profile=tuple(count / sample.drafts for count in sample.accepted_per_position),
                tokens_per_verification=expected,
                mean_draft_length=lengths[k],
                plain_steps=steps,
                draft_share=sample.drafts / (sample.drafts + steps) if sample.drafts + steps > 0 else None,
                cycle_cost=cycles[k],
                c=c_at(sample),
                v=measured_v.get(k),
                v_model=v_model,
                predicted_speedup=expected / modelled if modelled and modelled > 0 else None,
                predicted_speedup_mixed=(
                    (sample.drafts * expected + steps) / (sample.drafts * modelled + steps)
                    if modelled and modelled > 0
                    else None
                ),
                predicted_speedup_holdout=expected / holdout if holdout and holdout > 0 else None,
            )
        )
    best_measured = max(results, key=lambda item: item.measured_speedup).k
    predicted = [item for item in results if item.predicted_speedup is not None]
    best_predicted = max(predicted, key=lambda item: item.predicted_speedup or 0.0).k if predicted else None
    mixed = [item for item in results if item.predicted_speedup_mixed is not None]
    best_mixed = max(mixed, key=lambda item: item.predicted_speedup_mixed or 0.0).k if mixed else None
    if c_pooled is None:
        model = "C = a + gamma L fitted over the measured k (c unknown, so v(k) is not separated)"
    else:
        model = "v(k) = v0 + beta L fitted over the measured k; c measured per k (or as given)"
    return Analysis(
        plain_ms_per_token=t,
        results=results,
        c=c_pooled,
        c_source=c_source,
        v0=line[0] if line is not None and c_pooled is not None else None,
        beta=line[1] if line is not None and c_pooled is not None else None,
        cycle_intercept=cycle_line[0],
        cycle_slope=cycle_line[1],
        cost_model=model,
        best_k_measured=best_measured,
        best_k_predicted=best_predicted,
        best_k_predicted_mixed=best_mixed,
        notes=notes,
    )


# ---------------------------------------------------------------------------
# What a sweep writes for the rest of the product


def metrics_delta(sample: Sample, prefix: str = "llamacpp:") -> str:
    """The counter deltas at one k under the names llama.cpp's /metrics gives them (``calibrate --from`` reads it)."""
    if sample.k < 1:
        raise MeasureError("plain decoding (k = 0) has no speculative counters")
    positions = tuple(sample.accepted_per_position) + (0,) * (sample.k - len(sample.accepted_per_position))
    counts = SpecCounts(sample.drafts, sample.draft_tokens, sample.accepted, positions)
    return exposition(counter_families(CounterNames.spec_decode(prefix), [((), counts)]))


def step_times_csv(analysis: Analysis) -> str:
    """``batch,tokens,ms`` for ``specdec-lab step-fit``: a plain step, and each k's verification (k + 1 tokens)."""
    rows = ["batch,tokens,ms", f"1,1,{analysis.plain_ms_per_token:.6f}"]
    for result in analysis.results:
        if result.k > 0 and result.v is not None and result.v > 0:
            rows.append(f"1,{result.k + 1},{result.v * analysis.plain_ms_per_token:.6f}")
    if len(rows) == 2:
        raise MeasureError("no verification cost was separated (c unknown): only the plain step would be written")
    return "\n".join(rows) + "\n"
