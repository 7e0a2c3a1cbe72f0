"""Which target preset a served model is, from the name an engine reports it under (``model_name`` in vLLM's
and SGLang's /metrics, the model of a llama.cpp or TensorRT-LLM report).

Engines report the name the model was served as: a hub name such as ``meta-llama/Llama-3.1-70B-Instruct``, a
local path, or an alias.  A preset matches when the name, without its organisation or directory and folded to
lower-case letters and digits, holds one of the preset's family names.  Fine-tunes and quantisations keep the
shape of their base model, so ``Llama-3.3-70B-Instruct-AWQ`` is the 70B preset; a name that holds none of them
matches nothing, and the caller says so rather than guessing.
"""

from __future__ import annotations

import re

# The family names of each target preset (app.model.cost.presets.MODELS), folded as ``folded`` folds them.  Models
# listed together share the preset's shape (layers, heads, width): Llama 3, 3.1 and 3.3 at 70B; 3 and 3.1 at
# 8B; DeepSeek-V3 and R1 (the DeepSeek-R1 report, section 2: R1 is trained from DeepSeek-V3-Base).
FAMILY_NAMES: dict[str, tuple[str, ...]] = {
    "dense-1b": ("llama321b",),
    "dense-3b": ("llama323b",),
    "dense-8b": ("llama318b", "llama38b"),
    "dense-70b": ("llama3170b", "llama3370b", "llama370b"),
    "dense-405b": ("llama31405b",),
    "mixtral-8x7b": ("mixtral8x7b",),
    "deepseek-v3": ("deepseekv3", "deepseekr1"),
}


def folded(name: str) -> str:
    """The name's last path segment, lower-case, letters and digits only."""
    last = re.split(r"[/\\]", name.strip().rstrip("/\\"))[-1]
    return re.sub(r"[^a-z0-9]", "", last.lower())


def preset_for(model_name: str) -> str | None:
    """The key of the target preset the served name is, or None when it names none of them (or several)."""
    name = folded(model_name)
    if not name:
        return None
    found = {key for key, families in FAMILY_NAMES.items() if any(family in name for family in families)}
    return found.pop() if len(found) == 1 else None
