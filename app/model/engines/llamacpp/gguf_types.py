"""The speculative type llama-server infers from a draft GGUF's metadata when no --spec-type is given.

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
from pathlib import Path
from typing import BinaryIO

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


def _count(stream: BinaryIO, fmt: str = "<Q") -> int:
    value = int(_unpack(stream, fmt))
    if value > _LIMIT:
        raise _Header("implausible count")
    return value


def _string(stream: BinaryIO) -> str:
    length = _count(stream)
    data = stream.read(length)
    if len(data) != length:
        raise _Header("truncated")
    return data.decode("utf-8", errors="replace")


def _value(stream: BinaryIO, kind: int) -> object:
    if kind == _STRING:
        return _string(stream)
    if kind == _ARRAY:
        item_kind = int(_unpack(stream, "<I"))
        return [_value(stream, item_kind) for _ in range(_count(stream))]
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
            n_tensors, n_kv = _count(stream), _count(stream)
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
