"""llama.cpp's drafters and its config: which methods it takes and how a request names them, its config read back the
way its own code reads it, and written for a schedule.

The speculative type llama-server infers from a draft GGUF's metadata when no --spec-type is given.

``common_speculative_types_from_gguf`` (common/speculative.cpp, called from common/arg.cpp where
``spec_types_is_default``), from PRs #26814 and #27005, as vendored in build b11312 (llama-cpp-python 0.3.36,
read from its sdist: common/speculative.cpp line 2270, common/arg.cpp line 568; the same at ggml-org/llama.cpp
@ 001d906a6d86, the stored commit read): an architecture ``dflash`` is ``draft-dspark`` when the file holds
``markov_w1.weight``, else ``draft-dflash``; any other architecture is ``draft-mtp`` when the file holds
``blk.{block_count - 1}.nextn.eh_proj.weight``, and otherwise nothing is inferred (a plain draft model is loaded and
left unused).  Only the header is read: keys and tensor names, no tensor data.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from app.model.engines import base
from app.model.engines.base import ConfigRuleError
from app.model.engines.llamacpp.versions import (
    ARG_CPP,
    ARG_CPP_2025,
    ARG_CPP_B11434,
    DRAFT_SAMPLING,
    DRAFT_TYPE_FROM_GGUF,
    SPEC_FLAGS,
    SPECULATIVE_CPP,
)

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


# No head: b11434's --spec-type also lists draft-eagle3 and draft-mtp, which this writer does not write, so a setup
# priced with a head gets a config for a separate draft model and a note saying so.
HEAD_METHODS: dict[str, str] = {}


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


_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_STRING, _ARRAY = 8, 9
_LIMIT = 1 << 20  # no header holds more keys, tensors or array items than this


class _Header(Exception):
    """The file is not a GGUF header this reader can walk."""


def _unpack(stream: BinaryIO, fmt: str) -> int | float | bool:
    size = struct.calcsize(fmt)
    data = stream.read(size)
    if len(data) != size:
        raise _Header("truncated")
    value: int | float | bool = struct.unpack(fmt, data)[0]
    return value


def _gguf_count(stream: BinaryIO, fmt: str = "<Q") -> int:
    value = int(_unpack(stream, fmt))
    if value > _LIMIT:
        raise _Header("implausible count")
    return value


def _string(stream: BinaryIO) -> str:
    length = _gguf_count(stream)
    data = stream.read(length)
    if len(data) != length:
        raise _Header("truncated")
    return data.decode("utf-8", errors="replace")


def _value(stream: BinaryIO, kind: int) -> object:
    if kind == _STRING:
        return _string(stream)
    if kind == _ARRAY:
        item_kind = int(_unpack(stream, "<I"))
        return [_value(stream, item_kind) for _ in range(_gguf_count(stream))]
    if kind not in _SCALARS:
        raise _Header(f"unknown value type {kind}")
    return _unpack(stream, _SCALARS[kind])


def read_header(path: str | Path) -> tuple[dict[str, object], set[str]] | None:
    """The metadata and tensor names of a GGUF file; None when it cannot be read as one."""
    try:
        with open(path, "rb") as stream:
            if stream.read(4) != b"GGUF":
                return None
            _unpack(stream, "<I")  # version
            n_tensors, n_kv = _gguf_count(stream), _gguf_count(stream)
            metadata = {}
            for _ in range(n_kv):
                key = _string(stream)
                metadata[key] = _value(stream, int(_unpack(stream, "<I")))
            names = set()
            for _ in range(n_tensors):
                names.add(_string(stream))
                dims = int(_unpack(stream, "<I"))
                for _ in range(dims):
                    _unpack(stream, "<Q")
                _unpack(stream, "<I")  # type
                _unpack(stream, "<Q")  # offset
            return metadata, names
    except (OSError, _Header, struct.error):
        return None


def spec_types_from_gguf(path: str) -> list[str]:
    """The types llama-server infers from the draft file; [] when none (or the file is not here to read)."""
    header = read_header(path)
    if header is None:
        return []
    metadata, names = header
    arch = metadata.get("general.architecture")
    if not isinstance(arch, str):
        return []
    if arch != "dflash":
        blocks = metadata.get(f"{arch}.block_count")
        if not isinstance(blocks, int) or isinstance(blocks, bool) or blocks <= 0:
            return []
        return ["draft-mtp"] if f"blk.{blocks - 1}.nextn.eh_proj.weight" in names else []
    return ["draft-dspark"] if "markov_w1.weight" in names else ["draft-dflash"]


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


DEFAULT_P_MIN = 0.0  # common_params_speculative_draft.p_min in common/common.h (b11312)


OLD_DEFAULT_P_MIN = 0.75


TREE = None  # llama.cpp drafts chains only


def write_config(request: base.ConfigRequest, version: base.EngineVersion) -> base.Exported:
    best = list(request.best_k)
    limit = request.batch_limit
    if not best or limit < 1:
        return base.Exported(None, [], "", ["nothing fits: llama-server cannot run this setup"])
    batch, k = base.user_batch_k(request)
    if k == 0:
        return base.Exported(
            None, [], "", [f"k = 0 at batch {batch}: run llama-server without speculation"], runs=tuple([0] * limit)
        )
    kind = spec_type(request.method, request.draft_path)
    notes = [f"llama.cpp takes one draft length: the schedule's k = {k} at batch {batch} (--parallel {batch})"]
    placeholders: tuple[str, ...] = ()
    draft = request.draft_path
    if kind == "draft-simple" and not draft:
        draft, placeholders = PLACEHOLDER_MODEL, (PLACEHOLDER_MODEL,)
        notes.append("fill in -md: the draft model's GGUF file (or choose ngram-simple, which needs none)")
    config: dict[str, Any]
    if version.can(SPEC_FLAGS):
        if kind == "draft-simple":
            assert draft is not None
            flags = ["--spec-type", kind, "-md", draft, "--spec-draft-n-max", str(k), "--spec-draft-n-min", "0"]
            config = {"--spec-type": kind, "-md": draft, "--spec-draft-n-max": k, "--spec-draft-n-min": 0}
            notes.append(
                f"--spec-draft-p-min is left at its default {DEFAULT_P_MIN:g} (common/common.h): drafts are not cut "
                "short by the draft's confidence, as the i.i.d. model assumes"
            )
        elif kind == "ngram-simple":
            flags = ["--spec-type", kind, "--spec-ngram-simple-size-m", str(k)]
            config = {"--spec-type": kind, "--spec-ngram-simple-size-m": k}
            notes.append("ngram-simple drafts up to --spec-ngram-simple-size-m tokens found earlier in the context")
        else:
            flags = ["--spec-type", kind, "--spec-ngram-mod-n-max", str(k), "--spec-ngram-mod-n-min", "1"]
            config = {"--spec-type": kind, "--spec-ngram-mod-n-max": k, "--spec-ngram-mod-n-min": 1}
    else:
        if kind != "draft-simple":
            raise ValueError(f"llama.cpp {version.name} has no --spec-type: only a draft model (draft-simple)")
        assert draft is not None
        flags = ["-md", draft, "--draft-max", str(k), "--draft-min", "0"]
        config = {"-md": draft, "--draft-max": k, "--draft-min": 0}
        notes.append(f"--draft-p-min is left at {OLD_DEFAULT_P_MIN:g}, this version's default")
    flags += ["--parallel", str(batch)]
    config["--parallel"] = batch
    runs = [k] * limit
    differ = base.differences(best, runs)
    if differ:
        notes.append(
            f"llama-server runs k = {k} also at batches {base.describe_batches(differ)}, where the schedule differs"
        )
    text = "llama-server -m TARGET.gguf " + " ".join(base.quoted(flags))
    return base.Exported(config, flags, text, notes, runs=tuple(runs), differs_at=differ, placeholders=placeholders)
