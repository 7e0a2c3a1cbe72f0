"""The drafters llama.cpp takes, in its own words, and how a user's choice is read."""

from __future__ import annotations

SPEC_TYPES = (
    "none",
    "draft-simple",
    "draft-eagle3",
    "draft-mtp",
    "draft-dflash",
    "draft-dspark",
    "ngram-simple",
    "ngram-map-k",
    "ngram-map-k4v",
    "ngram-mod",
    "ngram-cache",
)


WRITTEN_TYPES = ("draft-simple", "ngram-simple", "ngram-mod")


PLACEHOLDER_MODEL = "<draft.gguf>"


def spec_type(given: str | None, draft_path: str | None) -> str:
    if given is None or not given.strip():
        return "draft-simple"
    lowered = given.strip().lower().replace("_", "-")
    if lowered not in WRITTEN_TYPES:
        raise ValueError(f"llama.cpp --spec-type must be one of {', '.join(WRITTEN_TYPES)}; got {given!r}")
    return lowered


METHODS = WRITTEN_TYPES


def choose_method(given: str | None) -> str | None:
    """The --spec-type (None: draft-simple with a draft model)."""
    return spec_type(given, None) if given else None
