"""Make a draft model from a GGUF target by keeping its first N transformer blocks.

Usage: truncate_layers.py SOURCE.gguf OUT.gguf N

The draft shares the target's tokenizer, embeddings and output head, so llama-server accepts it as a
draft for that target; it is a weaker guesser than the whole model, which is what a draft is.
"""

from __future__ import annotations

import re
import sys

import gguf

BLOCK = re.compile(r"^blk\.(\d+)\.")


def truncate(source: str, target: str, keep: int) -> None:
    reader = gguf.GGUFReader(source)
    architecture = str(reader.get_field("general.architecture").contents())
    writer = gguf.GGUFWriter(target, architecture)
    for name, field in reader.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        value = keep if name == f"{architecture}.block_count" else field.contents()
        sub_type = field.types[1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(name, value, field.types[0], sub_type=sub_type)
    for tensor in reader.tensors:
        block = BLOCK.match(tensor.name)
        if block and int(block.group(1)) >= keep:
            continue
        writer.add_tensor(tensor.name, tensor.data, raw_shape=tensor.data.shape, raw_dtype=tensor.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    truncate(sys.argv[1], sys.argv[2], int(sys.argv[3]))
