"""Where the draft comes from: a separate model, n-gram lookup, extra heads, feature-level drafting.

The sources differ in how often the target agrees (acceptance), in what a draft
costs (c, in target passes per draft step) and in how many candidates each
verification checks.  To put them side by side under one yardstick, every
source carries numbers measured on the same machine and model by the same
harness: Spec-Bench's leaderboard (Xia et al., Findings of ACL 2024,
arXiv:2401.07851; RTX 3090 table: Vicuna-7B-v1.3, greedy decoding, FP16,
batch size 1), which reports the mean accepted tokens per verification step tau
(bonus token included; 1.00 for plain decoding) and the wall-clock speedup.
Each method's own paper is cited beside it for what the method is.

The figures, each with its leaderboard row, are in ``data/draft_sources.json``; how p and c follow from them
is in DERIVATION below.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.model.arithmetic import closed_form
from app.model.arithmetic.closed_form import VerifyCost, free_verification
from app.model.limits import MAX_DRAFT_COST

SPEC_BENCH = "Spec-Bench leaderboard, RTX 3090 table (Xia et al., Findings of ACL 2024, arXiv:2401.07851)"
SPEC_BENCH_SETTING = "Vicuna-7B-v1.3, greedy decoding, FP16, batch size 1, one RTX 3090"
DERIVATION = """\
From tau, the speedup S and the draft depth d each source ran with in that harness, two chain-equivalent
parameters follow (both editable): the acceptance p, the i.i.d. acceptance that gives tau with a chain of d
drafts (the closed form's inverse of E[T] = tau at k = d; for tree methods it folds the tree's extra candidates
into p), and the draft cost c = (tau / S - 1) / d (the measured cost of a cycle in target passes is tau / S, one
pass of it is the verification and the rest is charged to the d draft steps; for tree methods it includes
verifying the whole tree, which is not free on that GPU). The decisive figure is tokens per unit of the whole
cycle's cost, drafting and verification together: tau / (d c + 1), which is the speedup S. Accepted drafts per
unit of draft cost alone, (tau - 1) / (d c), leaves the verification pass out, so it ranks nearly free drafts
(prompt lookup) first however few tokens they add."""
SPEC_BENCH_HARNESS = "Spec-Bench evaluation scripts (github.com/hemingkx/Spec-Bench, evaluation/inference_*.py)"
DATA = Path(__file__).parents[1] / "data" / "draft_sources.json"  # each source's measured figures and their rows


@dataclass(frozen=True)
class DraftSource:
    id: str
    name: str
    kind: str  # "draft_model", "ngram", "heads", "feature"
    method: str  # what the method is, with its paper
    mean_accepted_tokens: float  # tau, measured
    measured_speedup: float  # S, measured
    measurement: str  # where tau and S come from
    reference_depth: int  # draft depth d in that measurement
    depth_source: str  # where d comes from
    tree_nodes: int | None  # candidates verified per step (None: a single chain)
    acceptance: float  # chain-equivalent p (derived; editable)
    draft_cost: float  # c per draft step (derived; editable)
    edited: bool = False


def chain_equivalent_acceptance(mean_accepted_tokens: float, depth: int) -> float:
    """The i.i.d. p whose chain of ``depth`` drafts yields ``mean_accepted_tokens`` tokens per cycle."""
    return closed_form.acceptance_from_mean_length(min(mean_accepted_tokens, depth + 1.0), depth)


def implied_draft_cost(mean_accepted_tokens: float, speedup: float, depth: int) -> float:
    """c = (tau / S - 1) / d: what a cycle cost beyond one target pass, per draft step."""
    return max(mean_accepted_tokens / speedup - 1.0, 0.0) / depth


def _source(row: Mapping[str, Any]) -> DraftSource:
    """One source of ``data/draft_sources.json``, with its chain-equivalent p and c derived from tau, S and d."""
    tau, speedup, depth = row["tau"], row["speedup"], row["depth"]
    return DraftSource(
        id=row["id"],
        name=row["name"],
        kind=row["kind"],
        method=row["method"],
        mean_accepted_tokens=tau,
        measured_speedup=speedup,
        measurement=f"{SPEC_BENCH}: {SPEC_BENCH_SETTING}",
        reference_depth=depth,
        depth_source=f"{SPEC_BENCH_HARNESS}: {row['depth_in_harness']}"
        if "depth_in_harness" in row
        else row["depth_source"],
        tree_nodes=row["tree_nodes"],
        acceptance=chain_equivalent_acceptance(tau, depth),
        draft_cost=implied_draft_cost(tau, speedup, depth),
    )


# Each source's tau and S are its row of the Spec-Bench leaderboard (#Mean Accepted Tokens, Overall speedup)
DEFAULT_SOURCES: tuple[DraftSource, ...] = tuple(
    _source(row) for row in json.loads(DATA.read_text(encoding="utf-8"))["sources"]
)

SOURCE_IDS = tuple(source.id for source in DEFAULT_SOURCES)


def with_overrides(
    overrides: Mapping[str, tuple[float, float]], sources: Sequence[DraftSource] = DEFAULT_SOURCES
) -> list[DraftSource]:
    """Replace (acceptance p, draft cost c) of the sources named in ``overrides``."""
    known = {source.id for source in sources}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"unknown draft source {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    edited = []
    for source in sources:
        if source.id not in overrides:
            edited.append(source)
            continue
        p, c = overrides[source.id]
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):
            raise ValueError(f"acceptance of {source.id} must be from 0 to 1; got {p}")
        if not (math.isfinite(c) and 0.0 <= c <= MAX_DRAFT_COST):
            raise ValueError(f"draft cost of {source.id} must be from 0 to {MAX_DRAFT_COST:g}; got {c}")
        edited.append(replace(source, acceptance=p, draft_cost=c, edited=True))
    return edited


@dataclass(frozen=True)
class SourceEvaluation:
    source: DraftSource
    accepted_per_draft_cost: float | None  # accepted drafts per unit of draft cost at the reference depth
    accepted_per_draft_cost_at_best_k: float | None
    expected_tokens_at_reference: float  # chain model at the reference depth (= tau unless edited)
    speedup_at_reference: float
    best_k: int
    best_speedup: float
    expected_tokens_at_best_k: float
    speedups: list[float]  # k = 0..k_max


def accepted_per_draft_cost(p: float, k: int, c: float) -> float | None:
    """Accepted drafts per cycle over draft cost per cycle, (E[T] - 1) / (k c); None when drafting is free."""
    if k == 0:
        return None
    cost = k * c
    return None if cost <= 0.0 else (closed_form.expected_tokens(p, k) - 1.0) / cost


def evaluate_source(source: DraftSource, k_max: int, verify: VerifyCost = free_verification) -> SourceEvaluation:
    p, c, depth = source.acceptance, source.draft_cost, source.reference_depth
    speedups = closed_form.speedup_curve(p, c, k_max, verify)
    best, best_speedup = closed_form.best_k(p, c, k_max, verify)
    return SourceEvaluation(
        source=source,
        accepted_per_draft_cost=accepted_per_draft_cost(p, depth, c),
        accepted_per_draft_cost_at_best_k=accepted_per_draft_cost(p, best, c),
        expected_tokens_at_reference=closed_form.expected_tokens(p, depth),
        speedup_at_reference=closed_form.speedup(p, depth, c, verify),
        best_k=best,
        best_speedup=best_speedup,
        expected_tokens_at_best_k=closed_form.expected_tokens(p, best),
        speedups=speedups,
    )


def compare_sources(
    k_max: int,
    verify: VerifyCost = free_verification,
    overrides: Mapping[str, tuple[float, float]] | None = None,
) -> list[SourceEvaluation]:
    """Every source under the same verification regime, best first by predicted speedup."""
    if k_max < 1:
        raise ValueError("k_max must be at least 1")
    sources = with_overrides(overrides or {})
    evaluations = [evaluate_source(source, k_max, verify) for source in sources]
    return sorted(evaluations, key=lambda evaluation: -evaluation.best_speedup)


def parse_overrides(text: str) -> dict[str, tuple[float, float]]:
    """'eagle:0.8:0.1,ngram:0.5:0' -> {'eagle': (0.8, 0.1), 'ngram': (0.5, 0.0)}."""
    overrides: dict[str, tuple[float, float]] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        pieces = item.split(":")
        if len(pieces) != 3:
            raise ValueError(f"each override is id:acceptance:draft_cost, e.g. eagle:0.8:0.1; got {item!r}")
        source_id, p_text, c_text = (piece.strip() for piece in pieces)
        try:
            p, c = float(p_text), float(c_text)
        except ValueError as error:
            raise ValueError(f"acceptance and draft cost must be numbers in {item!r}") from error
        if source_id in overrides:
            raise ValueError(f"draft source {source_id} is overridden twice")
        overrides[source_id] = (p, c)
    return overrides
