"""Write a GGUF model as the safetensors checkpoint vLLM's CPU build loads: ``vllm_model.py GGUF OUT_DIR``.

transformers reads the GGUF (its weights dequantized to float, its tokenizer rebuilt from the GGUF's vocabulary)
and records the GGUF origin as ``quantization_config``; the weights saved are plain floats, so that entry is
dropped, else vLLM would look for a quantization it does not need.  Runs inside vLLM's environment (torch,
transformers, gguf); reaches no network (``HF_HUB_OFFLINE=1``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from transformers import AutoModelForCausalLM, AutoTokenizer


def main(gguf: str, out: str) -> None:
    source = Path(gguf)
    tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name)
    model = AutoModelForCausalLM.from_pretrained(str(source.parent), gguf_file=source.name)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None  # the GGUF "quantizer" only dequantized on load: the weights are plain floats now
    if hasattr(model, "is_quantized"):
        model.is_quantized = False
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
