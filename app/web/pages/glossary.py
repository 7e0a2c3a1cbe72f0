"""The words the pages use that a newcomer may not know, written once.

The glossary page (/glossary) lists them; on every page static/js/glossary.js finds each term where it is
written (by its patterns, JavaScript regular expressions matched against the text a reader sees) and explains
it on hover and on focus, with a link here.  A template can also mark a term itself: ``<span class="term"
data-term="c-ops">``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Term:
    id: str  # the anchor on /glossary and the data-term of a marked term
    name: str  # the headword
    definition: str
    patterns: tuple[str, ...]  # JavaScript regular expressions (flag "u") for the term as the pages write it


TERMS: tuple[Term, ...] = (
    Term(
        "v-k",
        "v(k): verification cost",
        "The time of the target's forward pass that checks k drafted tokens, in passes of plain decoding. It is 1 "
        "while the target is memory-bound (reading the weights dominates, so k + 1 tokens cost what one does) and "
        "grows towards k + 1 as the pass becomes compute-bound at large batch sizes. A cycle costs k·c + v(k).",
        (r"v\(k\)",),
    ),
    Term(
        "tau",
        "τ (tau): mean accepted length",
        "Tokens a verification step yields on average: the accepted drafts plus the target's own token. Under "
        "independent acceptance p with draft length k it is E[T] = 1 + p + p² + … + p^k; serving engines report it "
        "as the mean acceptance length.",
        (r"τ", r"\btau\b"),
    ),
    Term(
        "c-ops",
        "c_ops: draft arithmetic",
        "The arithmetic (floating-point operations) of one draft step as a fraction of one target step. Speculation "
        "spends more arithmetic than plain decoding, by (k·c_ops + k + 1) / E[T] (Leviathan et al., Theorem 3.11); "
        "with c_ops = 0 the draft's own arithmetic is left out. It is not the draft cost c, which is time.",
        (r"\bc_ops\b",),
    ),
    Term(
        "sps",
        "SpS: speculative sampling with a draft model",
        "A separate, smaller model of the same family drafts token by token and the target verifies with the exact "
        "rule (Leviathan et al. 2023; Chen et al. 2023). Spec-Bench lists it as SpS.",
        (r"\bSpS\b",),
    ),
    Term(
        "pld",
        "PLD: prompt lookup decoding",
        "Drafts without a model: it finds the latest n-gram of the output earlier in the prompt and copies what "
        "followed it there. Nearly free per draft, and strong when the output repeats the input (summaries, edits, "
        "code).",
        (r"\bPLD\b", r"prompt lookup"),
    ),
    Term(
        "wilson",
        "Wilson score interval",
        "A confidence interval for a proportion, here the acceptance p from accepted and drafted counts. Unlike "
        "p ± 1.96·√(p(1 − p)/n) it stays within 0 to 1 and keeps its coverage for few drafts or p near 0 or 1.",
        (r"Wilson(?: score)?(?: interval)?",),
    ),
    Term(
        "chi-square",
        "χ² on 4 df: Pearson's goodness-of-fit test",
        "Σ (observed − expected)² / expected over the bins of a histogram (here accepted drafts per cycle, or the "
        "output tokens of a rule). If the model holds (independent acceptance at p; the rule's output is the "
        "target's distribution) it follows a χ² distribution whose degrees of freedom (df) are the bins less one, "
        "less one per fitted number: 4 df for k = 5 with p fitted. The p-value is the chance of a value this large "
        "under the model; a small one means the model does not hold.",
        (r"χ²(?: = [0-9.]+ on [0-9]+ df)?", r"\bchi-square\b"),
    ),
    Term(
        "positional",
        "Positional acceptance P_i",
        "P_i: the chance that the draft at position i is accepted given that every draft before it was; for a tree, "
        "the chance that the i-th ranked candidate at a node is the one accepted. Independent acceptance is the "
        "special case P_i = p at every position.",
        (r"[Pp]ositional acceptance", r"[Pp]er-position acceptance"),
    ),
    Term(
        "tree-budget",
        "Tree budget n",
        "The number of drafted tokens (nodes of the tree) the target verifies in one pass. A chain of k drafts is a "
        "tree with n = k; a wider tree spends the same budget on alternatives at each position.",
        (r"\btree budget\b", r"\bbudget n\b", r"[Tt]okens verified per step \(budget\)"),
    ),
)


def terms() -> list[dict[str, object]]:
    """The terms as JSON for the pages' script."""
    return [asdict(term) for term in TERMS]
