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

Each term is a least-squares coefficient on the relative error, held at zero or above (non-negative least
squares).  A term the measurements cannot identify (one batch size, no drafted tokens) is kept at zero and
named in ``kept``, with the reason; its cost is then carried by the terms that were fitted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
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


def fit(points: Sequence[StepPoint], draft_model: bool) -> StepCost:
    """Non-negative least squares on the relative error over the terms the points can identify."""
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
        kept["per_draft_step_ms"] = "no draft model: drafting is a lookup, counted per sequence"
        kept["draft_multi_sequence_ms"] = "no draft model: drafting is a lookup, counted per sequence"
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
        kept["per_extra_token_ms"] = "no step verified a draft"
        kept["per_draft_step_ms"] = "no step verified a draft"
        kept["draft_multi_sequence_ms"] = "no step verified a draft"
    chosen = [index for index, name in enumerate(TERMS) if name not in kept]
    wanted = len(chosen)
    while len(points) < len(chosen):
        kept[TERMS[chosen.pop()]] = f"{len(points)} measured steps for {wanted} terms"
    design = _columns(batch, tokens)[chosen].T / ms[:, None]
    solution, _residual = nnls(design, np.ones_like(ms))
    values = dict.fromkeys(TERMS, 0.0)
    for index, value in zip(chosen, solution, strict=True):
        values[TERMS[index]] = float(value)
    cost = StepCost(**values, fitted=tuple(TERMS[index] for index in chosen), kept=kept, points=len(points))
    relative = cost.step_ms(batch, tokens) / ms - 1.0
    return replace(cost, rms_relative_error=float(math.sqrt(float(np.mean(relative**2)))))
