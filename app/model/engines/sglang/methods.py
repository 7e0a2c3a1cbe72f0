"""The drafters SGLang takes, in its own words, and how a user's choice is read."""

from __future__ import annotations

# arg_groups/fields/spec.py @ 015c872628e3 (speculative_algorithm's help): the builtins are EAGLE, EAGLE3, NEXTN,
# STANDALONE, NGRAM, DFLASH, DSPARK and UNO.  The first five take --speculative-num-steps; the last three draft a
# block whose width has a flag of its own (speculative_hook.py, _handle_dflash, _handle_dspark, _handle_uno).
STEP_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM")


BLOCK_ALGORITHMS = ("DFLASH", "DSPARK", "UNO")


ALGORITHMS = STEP_ALGORITHMS + BLOCK_ALGORITHMS


ADAPTIVE_ALGORITHMS = ("EAGLE", "EAGLE3", "NEXTN")


NEEDS_DRAFT = ("EAGLE", "EAGLE3", "STANDALONE", "DFLASH")


PLACEHOLDER_MODEL = "<draft model: a path or hub name>"


PLACEHOLDER_LORA = "<UNO draft LoRA: a path>"


# Names users bring from other engines, and why SGLang has no such builtin (fields/spec.py @ 015c872628e3).
NOT_SGLANG = {
    "AUTO": "AUTO is TensorRT-LLM's decoding type that picks its own drafter; SGLang has no AUTO builtin and "
    "chooses steps, topk and draft tokens itself only when none of them is given (speculative_hook.py, "
    "_auto_choose_speculative_params), which leaves no schedule to write: pick a builtin",
}


def algorithm_name(given: str | None, draft_path: str | None) -> str:
    """SGLang's algorithm: as given (any case), else STANDALONE for a separate draft model."""
    if given is None or not given.strip():
        return "STANDALONE"
    upper = given.strip().upper()
    if upper in NOT_SGLANG:
        raise ValueError(f"SGLang --speculative-algorithm {upper}: {NOT_SGLANG[upper]} ({', '.join(ALGORITHMS)})")
    if upper not in ALGORITHMS:
        raise ValueError(f"SGLang --speculative-algorithm must be one of {', '.join(ALGORITHMS)}; got {given!r}")
    return upper


METHODS = ALGORITHMS


METHOD_ALIAS = "sglang_algorithm"  # the older query parameter for method=, kept as an alias


def choose_method(given: str | None) -> str | None:
    """The --speculative-algorithm as SGLang spells it (None: STANDALONE, or as the draft type says)."""
    return algorithm_name(given, None) if given else None
