"""The drafters vLLM takes, in its own words, and how a user's choice is read."""

from __future__ import annotations

MTP_METHODS = (
    "deepseek_mtp",
    "mimo_mtp",
    "glm4_moe_mtp",
    "ernie_mtp",
    "qwen3_next_mtp",
    "longcat_flash_mtp",
    "mtp",
)


METHODS = (
    "ngram",
    "medusa",
    "mlp_speculator",
    "draft_model",
    "suffix",
    "custom_class",
    "eagle",
    "eagle3",
    "extract_hidden_states",
    "dflash",
    "ngram_gpu",
    "dspark",
    *MTP_METHODS,
)


# Methods that need no `model`: vLLM fills it in itself (speculative.py, post-init).
MODEL_FREE = ("ngram", "ngram_gpu", "suffix", "extract_hidden_states", "mtp", "dspark")


PLACEHOLDER_MODEL = "<draft model: a path or hub name>"


def method_name(given: str | None) -> str | None:
    """vLLM's literal for a method given in any case; a ValueError listing them for an unknown one."""
    if given is None or not given.strip():
        return None
    lowered = given.strip().lower()
    if lowered in METHODS or lowered.endswith("_mtp"):
        return lowered
    raise ValueError(f"vLLM method must be one of {', '.join(METHODS)} (or any *_mtp); got {given!r}")


def choose_method(given: str | None) -> str | None:
    """The method as vLLM spells it; a ValueError naming the choices."""
    return method_name(given)
