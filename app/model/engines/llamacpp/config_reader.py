"""llama.cpp's config read back the way llama.cpp's own code reads it: the k it runs at each batch, and
every rule it applies, each naming the file it comes from."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from app.model.engines import base
from app.model.engines.base import ConfigRuleError
from app.model.engines.llamacpp.gguf_types import spec_types_from_gguf
from app.model.engines.llamacpp.methods import SPEC_TYPES
from app.model.engines.llamacpp.versions import (
    ARG_CPP,
    ARG_CPP_2025,
    ARG_CPP_B11434,
    DRAFT_SAMPLING,
    DRAFT_TYPE_FROM_GGUF,
    SPEC_FLAGS,
    SPECULATIVE_CPP,
)

REMOVED = ("--draft", "--draft-n", "--draft-max", "--draft-min", "--draft-n-min")


DRAFT_SAMPLINGS = ("greedy", "probabilistic")  # --spec-draft-sampling's values (PR #27694); greedy by default


_VALUED = {
    "--spec-type",
    "-md",
    "--spec-draft-model",
    "--model-draft",
    "--spec-draft-n-max",
    "--spec-draft-n-min",
    "--spec-draft-p-min",
    "--draft-p-min",
    "--spec-ngram-simple-size-m",
    "--spec-ngram-simple-size-n",
    "--spec-ngram-mod-n-max",
    "--spec-ngram-mod-n-min",
    "--spec-ngram-mod-n-match",
    "--parallel",
    "-np",
}


_VALUED_OLD = {"-md", "--model-draft", "--draft-max", "--draft", "--draft-n", "--draft-min", "--draft-n-min"} | {
    "--draft-p-min",
    "--parallel",
    "-np",
}


def parse_flags(flags: Sequence[str], version: base.EngineVersion) -> dict[str, str]:
    """The speculative flags as llama-server's common/arg.cpp takes them; a ConfigRuleError where it exits."""
    where = (ARG_CPP if version.can(SPEC_FLAGS) else ARG_CPP_2025).cite()
    valued = _VALUED if version.can(SPEC_FLAGS) else _VALUED_OLD
    parsed: dict[str, str] = {}
    index = 0
    while index < len(flags):
        flag = flags[index]
        if version.can(SPEC_FLAGS) and flag in REMOVED:
            raise ConfigRuleError(f"{flag}: the argument has been removed (llama-server exits 1)", where)
        if flag not in valued and not (flag == DRAFT_SAMPLING and version.can(DRAFT_SAMPLING)):
            raise ConfigRuleError(f"error: invalid argument: {flag}", where)
        if index + 1 >= len(flags):
            raise ConfigRuleError(f"error: {flag} expects a value", where)
        value = flags[index + 1]
        if flag == "--spec-type":
            for name in value.split(","):
                if name not in SPEC_TYPES:
                    raise ConfigRuleError(f"unknown speculative type: {name}", SPECULATIVE_CPP.cite())
            parsed[flag] = ",".join(filter(None, [parsed.get(flag, ""), value]))  # repeats append
        elif flag == DRAFT_SAMPLING and value not in DRAFT_SAMPLINGS:
            raise ConfigRuleError(
                f"{flag}: invalid value, must be one of: {', '.join(DRAFT_SAMPLINGS)}", ARG_CPP_B11434.cite()
            )
        else:
            parsed[flag] = value
        index += 2
    return parsed


def _count(parsed: Mapping[str, str], names: Sequence[str], default: int, where: str) -> int:
    for name in names:
        if name in parsed:
            try:
                value = int(parsed[name])
            except ValueError:
                raise ConfigRuleError(f"{name}: invalid value {parsed[name]!r}", where) from None
            if value < 0:
                raise ConfigRuleError(f"{name}: invalid value", where)
            return value
    return default


def draft_length(flags: Sequence[str], version: base.EngineVersion) -> int:
    """The most tokens llama-server drafts per step with these flags (0: it does not speculate)."""
    where = (ARG_CPP if version.can(SPEC_FLAGS) else ARG_CPP_2025).cite()
    parsed = parse_flags(flags, version)
    draft = parsed.get("-md", parsed.get("--spec-draft-model", parsed.get("--model-draft")))
    if draft is not None and (not draft.strip() or "<" in draft or ">" in draft):
        raise ConfigRuleError(f"-md {draft!r} is not a file llama-server can load", where)
    if not version.can(SPEC_FLAGS):
        if draft is None:
            return 0
        return _count(parsed, ("--draft-max", "--draft", "--draft-n"), 16, where)
    types = [name for name in parsed.get("--spec-type", "none").split(",") if name != "none"]
    if "--spec-type" not in parsed and draft is not None and version.can(DRAFT_TYPE_FROM_GGUF):
        # common/arg.cpp: with the types at their default, the type is inferred from the draft GGUF (an MTP,
        # DFlash or DSpark draft drafts; a plain model infers nothing); a file not here to read infers nothing
        types = spec_types_from_gguf(draft)
    if not types:
        return 0  # --spec-type defaults to none: a draft model alone is loaded and unused
    kind = types[0]
    if kind.startswith("draft-"):
        if draft is None:
            raise ConfigRuleError(f"--spec-type {kind} needs a draft model (-md)", SPECULATIVE_CPP.cite())
        return _count(parsed, ("--spec-draft-n-max",), 3, where)
    if kind == "ngram-mod":
        return _count(parsed, ("--spec-ngram-mod-n-max",), 64, where)
    if kind == "ngram-cache":
        return 8
    return _count(parsed, ("--spec-ngram-simple-size-m",), 48, where)


def read_config(exported: base.Exported, version: base.EngineVersion, batch_limit: int) -> list[int]:
    return [draft_length(exported.flags, version)] * batch_limit
