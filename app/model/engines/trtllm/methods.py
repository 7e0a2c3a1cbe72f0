"""The drafters TensorRT-LLM takes, in its own words, and how a user's choice is read."""

from __future__ import annotations

DECODING_TYPES = ("Draft_Target", "Eagle3", "Eagle", "MTP", "NGram", "SA", "PARD", "DFlash", "DSpark")


NEEDS_MODEL = ("Draft_Target", "Eagle", "Eagle3")


# The Drafter path keeps the old lookup (last key <= batch) after PR #10860.
DRAFTER_TYPES = ("NGram",)


PLACEHOLDER_MODEL = "<draft model: a path or hub name>"


def decoding_type(given: str | None) -> str:
    if given is None or not given.strip():
        return "Draft_Target"
    for name in DECODING_TYPES:
        if given.strip().lower().replace("-", "_") in (name.lower(), name.lower().replace("_", "")):
            return name
    raise ValueError(f"TensorRT-LLM decoding_type must be one of {', '.join(DECODING_TYPES)}; got {given!r}")


METHODS = DECODING_TYPES


METHOD_ALIAS = "trtllm_decoding_type"  # the older query parameter for method=, kept as an alias


def choose_method(given: str | None) -> str | None:
    """The decoding_type as TensorRT-LLM spells it (None: Draft_Target)."""
    return decoding_type(given) if given else None
