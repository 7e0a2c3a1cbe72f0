"""The time of one decoding step as named terms, fitted to measured steps.

A step decodes B sequences together; each sends n tokens through the target (n = 1 plain, 1 + the drafted
tokens when it verifies a draft; a mean over steps may be fractional).  Its time is modelled as

    t(B, n) = fixed + multi_token [B n > 1] + per_sequence B + per_extra_token B (n - 1) + per_draft_step (n - 1)
              + draft_multi_sequence [B > 1] (n - 1)

- ``fixed``: what a step costs whatever the batch: reading the weights, launching the passes.
- ``multi_token``: what a pass over more than one token adds once: the engines switch from vector kernels
  (one token: matrix times vector) to matrix kernels, which cost more to start.  On llama.cpp's CPU build a
  one-token pass is markedly cheaper than the line through the others.  Only plain decoding at batch 1 is a
  one-token pass, so without that step among the measurements the term is kept at 0.
- ``per_sequence``: what each sequence adds to a step: its first token's compute and sampling, its KV cache
  read at the context.
- ``per_extra_token``: each further token a sequence verifies: the target's compute on it, its sampling, and
  (for a draft model) the drafting of it when the draft runs sequence by sequence.
- ``per_draft_step``: a draft model's own fixed time per draft step (its launch), which grows with the
  drafted tokens of a step but not with the batch.  Zero for drafting without a model (n-gram lookup).
- ``draft_multi_sequence``: what a draft step over more than one sequence adds, per draft step.  llama.cpp's
  server drafts every slot's next token in one draft pass (``common_speculative_impl_draft_simple::draft`` in
  common/speculative.cpp, b11312 and b11434: one token per sequence per step), so at batch 1 each draft step is a
  one-token pass of the draft (vector kernels), and above it a pass over several tokens (matrix kernels), as for
  the target.  Identified only where drafted steps at batch 1 and above it were both measured.

Not a term: after each target pass llama.cpp's server also hands the verified batch to the draft model
(``common_speculative_process`` in tools/server/server-context.cpp, b11312), one more draft pass per step at
every draft length.  Fitted as its own two terms (fixed, per sequence) on a real sweep it came out at 13 ms and
0 ms and made the out-of-sample errors worse (leave-one-out worst 9.9% to 12.8%): its cost is carried by
``fixed``, ``per_draft_step`` and ``per_extra_token``.  In b11434 that pass reads every token the target verified
(server-context.cpp, "always re-evaluate for simplicity"), so it was tried again as a fixed time per drafted step
on five draft-model sweeps: the worst leave-one-out cell moved 9.9/16.3/45.8/14.9/21.7% to
10.9/8.7/37.6/13.2/18.7% and the median moved both ways (4.2/6.1/5.5/7.3/6.8% to 5.5/3.2/8.1/4.6/8.3%), inside
what the sweeps' own rounds disagree by; not adopted.

Each term is a least-squares coefficient on the relative error, held at zero or above (non-negative least
squares).  A term the measurements cannot identify (one batch size, no drafted tokens) is kept at zero and
named in ``kept``, with the reason; its cost is then carried by the terms that were fitted.  Or it is given:
a value measured elsewhere on the same engine and hardware (an earlier sweep's fit) is held for a term these
steps cannot identify, named in ``given``, and the other terms are fitted around it.  A given value never
overrides a term the steps identify.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import nnls

MODEL = (
    "t(B, n) = fixed + multi_token [B n > 1] + per_sequence B + per_extra_token B (n - 1) + per_draft_step (n - 1) "
    "+ draft_multi_sequence [B > 1] (n - 1)"
)
TERMS: tuple[str, ...] = (
    "fixed_ms",
    "multi_token_ms",
    "per_sequence_ms",
    "per_extra_token_ms",
    "per_draft_step_ms",
    "draft_multi_sequence_ms",
)
TERM_LABELS: dict[str, str] = {
    "fixed_ms": "fixed time per step",
    "multi_token_ms": "the extra fixed time of a pass over more than one token",
    "per_sequence_ms": "time per sequence per step",
    "per_extra_token_ms": "time per further verified token of a sequence",
    "per_draft_step_ms": "a draft model's fixed time per draft step",
    "draft_multi_sequence_ms": "what a draft step over more than one sequence adds, per draft step",
}
DRAFT_MODEL_TERMS = ("per_draft_step_ms", "draft_multi_sequence_ms")


def terms_text(values: Mapping[str, float], shown: Sequence[str] = TERMS, digits: int = 2) -> str:
    """The terms in ``shown`` (in :data:`TERMS` order) as one sum: "44.65 ms (fixed time per step) + ..."."""
    return " + ".join(f"{values[name]:.{digits}f} ms ({TERM_LABELS[name]})" for name in TERMS if name in shown)


class StepCostError(ValueError):
    """Step times that cannot be fitted, with the reason."""


@dataclass(frozen=True)
class StepPoint:
    """One measured step: ``batch`` sequences of ``tokens`` tokens each through the target, in ``ms``."""

    batch: float
    tokens: float
    ms: float


@dataclass(frozen=True)
class StepCost:
    fixed_ms: float
    per_sequence_ms: float
    per_extra_token_ms: float
    per_draft_step_ms: float = 0.0
    multi_token_ms: float = 0.0
    draft_multi_sequence_ms: float = 0.0
    fitted: tuple[str, ...] = ()
    kept: dict[str, str] = field(default_factory=dict)  # term -> why it was kept at 0
    given: dict[str, str] = field(default_factory=dict)  # term -> why these steps could not fit it (held as given)
    points: int = 0
    rms_relative_error: float | None = None

    def step_ms(self, batch: ArrayLike, tokens: ArrayLike) -> NDArray[np.float64]:
        columns = _columns(np.asarray(batch, dtype=np.float64), np.asarray(tokens, dtype=np.float64))
        coefficients = np.array([getattr(self, name) for name in TERMS])
        result: NDArray[np.float64] = np.tensordot(coefficients, columns, axes=1)
        return result

    def speedup(self, batch: ArrayLike, tokens_per_step: float, tokens_verified: float) -> NDArray[np.float64]:
        """Throughput with speculation over plain decoding at ``batch``: tokens per step over the time ratio.

        ``tokens_per_step`` is what one step yields per sequence (1 + accepted tokens, averaged over steps),
        ``tokens_verified`` what it sends through the target (1 + drafted tokens)."""
        plain = self.step_ms(batch, 1.0)
        result: NDArray[np.float64] = tokens_per_step * plain / self.step_ms(batch, tokens_verified)
        return result


def _columns(batch: NDArray[np.float64], tokens: NDArray[np.float64]) -> NDArray[np.float64]:
    batch, tokens = np.broadcast_arrays(batch, tokens)
    extra = tokens - 1.0
    several = (batch * tokens > 1.0 + 1e-9).astype(np.float64)
    several_sequences = (batch > 1.0 + 1e-9).astype(np.float64)
    return np.stack([np.ones_like(batch), several, batch, batch * extra, extra, several_sequences * extra])


def _identifiable(chosen: list[int], design: NDArray[np.float64], kept: dict[str, str]) -> list[int]:
    """``chosen`` less each term whose column is a combination of the ones before it (kept, with the reason)."""
    basis: list[int] = []
    for index in chosen:
        if np.linalg.matrix_rank(design[[*basis, index]].T) == len(basis) + 1:
            basis.append(index)
        elif len(basis) == design.shape[1]:
            kept[TERMS[index]] = f"{design.shape[1]} measured steps identify no more than {len(basis)} terms"
        else:
            kept[TERMS[index]] = "these steps cannot tell it from the terms before it: carried by them"
    return basis


def given_terms(terms: Mapping[str, object]) -> dict[str, float]:
    """Terms given from elsewhere, checked: each a term of :data:`TERMS` with a finite number of ms, 0 or above."""
    checked: dict[str, float] = {}
    for name, value in terms.items():
        if name not in TERMS or isinstance(value, bool) or not isinstance(value, int | float):
            raise StepCostError(f"{name}: not a step-cost term with a number ({', '.join(TERMS)})")
        if not (math.isfinite(value) and value >= 0):
            raise StepCostError(f"{name} must be a finite number of ms, 0 or above; got {value}")
        checked[name] = float(value)
    return checked


def fit(points: Sequence[StepPoint], draft_model: bool, given: Mapping[str, float] | None = None) -> StepCost:
    """Non-negative least squares on the relative error over the terms the points can identify; a term they
    cannot identify is held at its value in ``given`` where it has one, else kept at 0."""
    if not points:
        raise StepCostError("no measured steps to fit")
    batch = np.array([point.batch for point in points], dtype=np.float64)
    tokens = np.array([point.tokens for point in points], dtype=np.float64)
    ms = np.array([point.ms for point in points], dtype=np.float64)
    if not (np.all(np.isfinite(ms)) and np.all(ms > 0) and np.all(batch >= 1) and np.all(tokens >= 1)):
        raise StepCostError("each step needs a batch of at least 1, at least 1 token and a positive time")
    kept: dict[str, str] = {}
    drafted = tokens - 1.0 > 1e-9
    if not draft_model:
        for name in DRAFT_MODEL_TERMS:
            kept[name] = "no draft model: drafting is a lookup, counted per sequence"
    elif not np.any(drafted & (batch <= 1.0 + 1e-9)):
        kept["draft_multi_sequence_ms"] = (
            "no drafted step at batch 1 measured: a draft step over one sequence is priced as one over several"
        )
    elif not np.any(drafted & (batch > 1.0 + 1e-9)):
        kept["draft_multi_sequence_ms"] = "every drafted step was at batch 1"
    if np.ptp(batch) < 1e-9:
        kept["per_sequence_ms"] = f"one batch size ({batch[0]:g}): carried by the fixed time"
        if draft_model:
            kept["per_draft_step_ms"] = f"one batch size ({batch[0]:g}): carried by the time per further token"
    one_token = batch * tokens <= 1.0 + 1e-9
    if not np.any(one_token):
        kept["multi_token_ms"] = "no one-token pass (plain decoding at batch 1) measured: carried by the fixed time"
    elif np.all(one_token):
        kept["multi_token_ms"] = "every step was a one-token pass"
    if np.all(tokens - 1.0 < 1e-9):
        for name in ("per_extra_token_ms", *DRAFT_MODEL_TERMS):
            kept[name] = "no step verified a draft"
    columns = _columns(batch, tokens)
    chosen = _identifiable([index for index, name in enumerate(TERMS) if name not in kept], columns / ms, kept)
    values = dict.fromkeys(TERMS, 0.0)
    held: dict[str, str] = {}
    try:
        checked = given_terms(given or {})
    except StepCostError as error:
        raise StepCostError(f"a given term: {error}") from None
    for name, value in checked.items():
        if name in kept and (draft_model or name not in DRAFT_MODEL_TERMS):  # a lookup has no draft passes
            values[name] = float(value)
            held[name] = kept.pop(name)
    offset = sum(values[name] * columns[TERMS.index(name)] for name in held) / ms
    solution, _residual = nnls((columns[chosen] / ms).T, 1.0 - offset)
    for index, value in zip(chosen, solution, strict=True):
        values[TERMS[index]] = float(value)
    cost = StepCost(**values, fitted=tuple(TERMS[index] for index in chosen), kept=kept, given=held, points=len(points))
    relative = cost.step_ms(batch, tokens) / ms - 1.0
    return replace(cost, rms_relative_error=float(math.sqrt(float(np.mean(relative**2)))))
