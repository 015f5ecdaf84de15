#!/usr/bin/env bash
# Installs what parc needs from Debian's archive (only what is missing), then
# configures and builds into build/. Safe to run again: a second run installs
# nothing and rebuilds only what changed. `bootstrap.sh --install-only`
# installs and stops (scripts/fuzz.sh and `scripts/test.sh --sanitize` build
# elsewhere).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

packages=(
  cmake ninja-build g++ python3
  llvm-22-dev llvm-22-tools libmlir-22-dev mlir-22-tools
  libyaml-cpp-dev libtomlplusplus-dev libgtest-dev
  libflatbuffers-dev flatbuffers-compiler
  libtorch-dev libgloo-dev libopenblas0-pthread python3-torch
)

"$root/scripts/install-packages.sh" "${packages[@]}"
[[ "${1:-}" != --install-only ]] || exit 0

if [[ ! -f build/build.ninja ]]; then
  cmake -S . -B build -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit
fi
cmake --build build
