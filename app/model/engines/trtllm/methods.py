"""The drafters TensorRT-LLM takes, in its own words, and how a user's choice is read."""

from __future__ import annotations

DECODING_TYPES = ("Draft_Target", "Eagle3", "Eagle", "MTP", "NGram", "SA", "PARD", "DFlash", "DSpark", "AUTO")


# interface.py @ 00b6d5a25c30 support_dynamic_draft_len leaves DSpark out: one max_draft_len at every batch;
# AUTO (AutoDecodingConfig) chooses its own NGram setting (auto_heuristic.py), so no schedule is written for it
STATIC_TYPES = ("DSpark",)


CHOSEN_BY_ENGINE = ("AUTO",)


WRITTEN_TYPES = tuple(name for name in DECODING_TYPES if name not in CHOSEN_BY_ENGINE)


NEEDS_MODEL = ("Draft_Target", "Eagle", "Eagle3")


# The Drafter path keeps the old lookup (last key <= batch) after PR #10860: NGram, and the two-model path of Eagle3
# and MTP where the version has it (config_reader.two_model_path; the writer never writes that path).
DRAFTER_TYPES = ("NGram",)


# Where the one-model path runs no schedule (before PR #10860: versions without ONE_MODEL_SCHEDULE), a
# draft_len_schedule runs only through a Drafter: utils.py get_spec_drafter of that era gives NGram an NGramDrafter
# and Draft_Target a ModelDrafter (test_draft_len_schedule.py's Stage 1 drafts with both), and the two-model switches
# give Eagle3 / MTP-Eagle one (config_reader.two_model_path); every other type is one-model there and runs its
# max_draft_len at every batch (versions.STAGE_ONE_EXECUTOR).
STAGE_ONE_DRAFTER_TYPES = ("NGram", "Draft_Target")


PLACEHOLDER_MODEL = "<draft model: a path or hub name>"


def decoding_type(given: str | None) -> str:
    if given is None or not given.strip():
        return "Draft_Target"
    if given.strip().upper() in CHOSEN_BY_ENGINE:
        raise ValueError(
            "TensorRT-LLM decoding_type AUTO chooses its own drafter (auto_heuristic.py suggest_spec_config: NGram, "
            "max_draft_len 5 up to max_batch_size 4 else 3, none above 32 requests), so no schedule can be written "
            f"into it; pick one of {', '.join(WRITTEN_TYPES)} to run the schedule"
        )
    for name in WRITTEN_TYPES:
        if given.strip().lower().replace("-", "_") in (name.lower(), name.lower().replace("_", "")):
            return name
    raise ValueError(f"TensorRT-LLM decoding_type must be one of {', '.join(WRITTEN_TYPES)}; got {given!r}")


METHODS = WRITTEN_TYPES


METHOD_ALIAS = "trtllm_decoding_type"  # the older query parameter for method=, kept as an alias


def choose_method(given: str | None) -> str | None:
    """The decoding_type as TensorRT-LLM spells it (None: Draft_Target)."""
    return decoding_type(given) if given else None
