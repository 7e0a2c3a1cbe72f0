"""The drafters SGLang takes, in its own words, and how a user's choice is read."""

from __future__ import annotations

ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")


ADAPTIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN")


NEEDS_DRAFT = ("EAGLE", "EAGLE3", "STANDALONE")


PLACEHOLDER_MODEL = "<draft model: a path or hub name>"


def algorithm_name(given: str | None, draft_path: str | None) -> str:
    """SGLang's algorithm: as given (any case), else STANDALONE for a separate draft model."""
    if given is None or not given.strip():
        return "STANDALONE"
    upper = given.strip().upper()
    if upper not in ALGORITHMS:
        raise ValueError(f"SGLang --speculative-algorithm must be one of {', '.join(ALGORITHMS)}; got {given!r}")
    return upper


METHODS = ALGORITHMS


METHOD_ALIAS = "sglang_algorithm"  # the older query parameter for method=, kept as an alias


def choose_method(given: str | None) -> str | None:
    """The --speculative-algorithm as SGLang spells it (None: STANDALONE, or as the draft type says)."""
    return algorithm_name(given, None) if given else None
