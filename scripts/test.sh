#!/usr/bin/env bash
# The whole test suite: set up, then run the lit tests and the unit tests and
# report one count. Exits non-zero when any test fails.
#
# scripts/test.sh --sanitize: the same suite against a build with ASan and
# UBSan (g++, -O1, line tables) in build-asan/ instead of build/. parc-run
# is not built there (PARC_BUILD_RUNTIME=OFF): LibTorch (Debian's
# libtorch-dev) is not built with the sanitizers, and an instrumented
# executor over an uninstrumented LibTorch was not tried; so the Runtime
# tests (REQUIRES: parc-run) are reported unsupported in this mode. Builds
# at nice 15 with PARC_JOBS jobs (default 2). `--sanitize PATH...` runs
# only those lit paths of the source tree (test/Import ...) and the unit
# tests. The default mode is unchanged.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ "${1:-}" == --sanitize ]]; then
  "$root/scripts/bootstrap.sh" --install-only || exit 1
  build="$root/build-asan"
  # vptr is off: LLVM and MLIR are built without RTTI, and the check needs
  # the dynamic type's typeinfo. -fno-sanitize-recover: a UBSan report is
  # fatal, so a test cannot pass over one.
  # cmake/UninstrumentedLlvm.h turns LLVM's allocator poisoning off, as in the
  # uninstrumented MLIR this build links.
  sanitize="-fsanitize=address,undefined -fno-sanitize=vptr -fno-sanitize-recover=undefined -fno-omit-frame-pointer -include $root/cmake/UninstrumentedLlvm.h"
  if [[ ! -f $build/build.ninja ]]; then
    nice -n 15 cmake -S "$root" -B "$build" -G Ninja \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
      "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" \
      "-DCMAKE_CXX_FLAGS=$sanitize" "-DCMAKE_C_FLAGS=$sanitize" \
      "-DCMAKE_EXE_LINKER_FLAGS=$sanitize" "-DCMAKE_SHARED_LINKER_FLAGS=$sanitize" \
      -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
      -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
      -DPARC_BUILD_RUNTIME=OFF || exit 1
  fi
  nice -n 15 cmake --build "$build" -- -j "${PARC_JOBS:-2}" || exit 1
  # abort_on_error: a sanitizer report kills the tool with SIGABRT, so a
  # `not tool ...` test fails on it instead of taking its exit status 1 for
  # the expected refusal (the same holds for leaks, which LSan reports at
  # exit). No suppressions: every report is in parc's code or is a finding.
  export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1}"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:abort_on_error=1}"
  export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-22/bin/llvm-symbolizer}"
  export PARC_BUILD_DIR="$build"
  shift
  lit_paths=()
  for p in "$@"; do lit_paths+=("$(realpath "$p")"); done
else
  "$root/scripts/bootstrap.sh" || exit 1
  build="$root/build"
  lit_paths=()
fi
((${#lit_paths[@]})) || lit_paths=(test)
cd "$build"

log=$(mktemp)
trap 'rm -f "$log"' EXIT

/usr/lib/llvm-22/bin/lit -sv "${lit_paths[@]}" 2>&1 | tee "$log"
lit_status=${PIPESTATUS[0]}
lit_passed=$(grep -Eo '^ *Passed *: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
lit_failed=$(grep -Eo '^ *(Failed|Unresolved|Timed Out|Unexpectedly Passed) *: *[0-9]+' "$log" |
  awk -F: '{ n += $2 } END { print n + 0 }')
[[ -n "$lit_failed" ]] || lit_failed=0

./bin/parc-unittests 2>&1 | tee "$log"
unit_status=${PIPESTATUS[0]}
unit_passed=$(grep -Eo '^\[  PASSED  \] [0-9]+' "$log" | grep -Eo '[0-9]+$' || echo 0)
unit_failed=$(grep -Eo '^\[  FAILED  \] [0-9]+ tests?, listed' "$log" | grep -Eo '[0-9]+' | head -1 || echo 0)
[[ -n "$unit_failed" ]] || unit_failed=0
if ((unit_status != 0 && unit_failed == 0)); then unit_failed=1; fi
if ((lit_status != 0 && lit_failed == 0)); then lit_failed=1; fi

echo
echo "lit: $lit_passed passed, $lit_failed failed; unit: $unit_passed passed, $unit_failed failed"
echo "$((lit_passed + unit_passed)) passed, $((lit_failed + unit_failed)) failed"
((lit_status == 0 && unit_status == 0))
