#!/usr/bin/env bash
# ggml's CPU ggml_norm / ggml_rms_norm behind normoracle's C ABI (examples/c/ggml_shim.c), for
# `normoracle fuzz --lib` and the accuracy table (docs/zoo.md). ggml's source ships in
# llama-cpp-python's source distribution on PyPI: this downloads it into target/ggml/, builds
# ggml's base and CPU libraries (static, position-independent, -march=native as llama.cpp's
# default build) and links the shim into target/ggml/libnormoracle_ggml.so. CMake and Ninja
# come from PyPI too (into target/ggml/venv) when the system has none. About 4 minutes on 2
# cores; the download is 77 MB. Not part of CI.
#
#   scripts/ggml_shim.sh [LLAMA_CPP_PYTHON_VERSION]    # default: the one pinned below
#
# It prints the label and path for `normoracle zoo --lib LABEL=PATH`, and writes the label
# (e.g. "ggml 0.25.3 (llama-cpp-python 0.3.36)") to target/ggml/label.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${1:-0.3.36}
out=target/ggml
mkdir -p "$out"

sdist="$out/llama_cpp_python-$version.tar.gz"
if [ ! -f "$sdist" ]; then
    # --no-binary for this package only: its build requirements may come as wheels.
    python3 -m pip download --quiet --no-deps --no-binary llama-cpp-python \
        "llama-cpp-python==$version" -d "$out"
fi
src="$out/llama_cpp_python-$version/vendor/llama.cpp/ggml"
if [ ! -d "$src" ]; then
    tar xzf "$sdist" -C "$out" "llama_cpp_python-$version/vendor/llama.cpp/ggml"
fi
# The sdist leaves out the pkg-config template ggml's CMakeLists configures.
[ -f "$src/ggml.pc.in" ] || touch "$src/ggml.pc.in"

if ! command -v cmake >/dev/null || ! command -v ninja >/dev/null; then
    [ -x "$out/venv/bin/cmake" ] || {
        python3 -m venv "$out/venv"
        "$out/venv/bin/pip" install --quiet cmake ninja
    }
    export PATH="$PWD/$out/venv/bin:$PATH"
fi

build="$out/build"
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DGGML_NATIVE=ON \
    -DGGML_OPENMP=OFF -DGGML_CCACHE=OFF -DGGML_BUILD_TESTS=OFF -DGGML_BUILD_EXAMPLES=OFF \
    >"$out/cmake.log"
ninja -C "$build" ggml-base ggml-cpu >"$out/build.log"

lib="$out/libnormoracle_ggml.so"
cc -O2 -shared -fPIC -o "$lib" examples/c/ggml_shim.c -I"$src/include" \
    "$build/src/libggml-cpu.a" "$build/src/libggml-base.a" -lstdc++ -lm -lpthread

ggml=$(sed -n 's/^set(GGML_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))$/\2/p' "$src/CMakeLists.txt" | paste -sd.)
label="ggml $ggml (llama-cpp-python $version)"
printf '%s\n' "$label" >"$out/label"
echo "$lib: $label"
echo "  normoracle fuzz --lib $lib --op layer_norm --dtype f32"
echo "  normoracle zoo --lib \"$label=$lib\""
