#!/usr/bin/env bash
# scripts/fuzz.sh [TARGET...] [-- LIBFUZZER_FLAG...]
#
# Builds the libFuzzer targets (fuzz/, clang-22 with ASan + UBSan) in
# build-fuzz/ and runs each TARGET (default: all of them) for
# PARC_FUZZ_SECONDS seconds (default 300), one after the other, at nice 15.
# TARGET is hf-config, recipe, parc-ir, plan-import, runtime-plan,
# checkpoint or safetensors.
#
# Each target grows its corpus in build-fuzz/fuzz-corpus/<target>/ (kept
# between runs, so executions accumulate), starting from the tracked seeds in
# fuzz/corpus/<target>/, which it never writes. Crashes, leaks, timeouts and
# OOMs land in build-fuzz/fuzz-artifacts/<target>/ (fork mode: the run goes
# on after one), the log in build-fuzz/fuzz-logs/. A reproducer worth
# keeping is copied to fuzz/regressions/<target>/ with a test in test/Fuzz/
# (docs/reliability.md). The last line per target is its final stats.
#
# Environment: PARC_FUZZ_SECONDS, PARC_JOBS (build parallelism, default 2),
# PARC_FUZZ_FORK (default 1; 0 runs in-process: about twice the executions
# a second, but the run stops at its first finding, so its timeout is 10 s
# rather than 1 s, which a starved process on a loaded machine would hit;
# the slowest input is then reported from libFuzzer's final stats and must
# stay under 1 s).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

all=(hf-config recipe parc-ir plan-import runtime-plan checkpoint safetensors)
targets=()
flags=()
while (($#)); do
  case "$1" in
    --) shift; flags=("$@"); break ;;
    *) targets+=("$1"); shift ;;
  esac
done
((${#targets[@]})) || targets=("${all[@]}")
seconds="${PARC_FUZZ_SECONDS:-300}"
jobs="${PARC_JOBS:-2}"

# The default build's packages, then what only fuzzing needs.
"$root/scripts/bootstrap.sh" --install-only
"$root/scripts/install-packages.sh" clang-22 libclang-rt-22-dev

build=build-fuzz
if [[ ! -f $build/build.ninja ]]; then
  # The runtime (LibTorch) is off: LibTorch is not built with the
  # sanitizers; fuzz-runtime-plan compiles the runtime's plan reader itself.
  nice -n 15 cmake -S . -B $build -G Ninja \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
    -DMLIR_DIR=/usr/lib/llvm-22/lib/cmake/mlir \
    -DLLVM_EXTERNAL_LIT=/usr/lib/llvm-22/bin/lit \
    -DPARC_ENABLE_FUZZERS=ON -DPARC_BUILD_RUNTIME=OFF
fi
nice -n 15 ninja -C $build -j "$jobs" parc-fuzzers

dict_of() {
  case "$1" in
    hf-config) echo fuzz/dict/json.dict ;;
    recipe) echo fuzz/dict/yaml.dict ;;
    parc-ir) echo fuzz/dict/mlir.dict ;;
  esac
}

# LSan on: a leak is a finding. UBSan stops at the first report (the build
# has -fno-sanitize-recover=undefined) and prints the stack.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export ASAN_SYMBOLIZER_PATH="${ASAN_SYMBOLIZER_PATH:-/usr/lib/llvm-22/bin/llvm-symbolizer}"

status=0
summary=()
for target in "${targets[@]}"; do
  exe="$build/bin/fuzz-$target"
  [[ -x $exe ]] || { echo "fuzz.sh: no target '$target' (${all[*]})" >&2; exit 1; }
  corpus="$build/fuzz-corpus/$target"
  artifacts="$build/fuzz-artifacts/$target"
  mkdir -p "$corpus" "$artifacts" "$build/fuzz-logs"
  log="$build/fuzz-logs/$target-$(date +%Y%m%d-%H%M%S).log"
  dict=$(dict_of "$target")
  args=(-max_total_time="$seconds" -rss_limit_mb=2048
        -print_final_stats=1 -artifact_prefix="$artifacts/")
  if [[ ${PARC_FUZZ_FORK:-1} == 0 ]]; then
    args+=(-timeout=10 -report_slow_units=1)
  else
    args+=(-timeout=1 -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
  fi
  [[ -z $dict ]] || args+=(-dict="$dict")
  echo "fuzz.sh: $target for ${seconds}s, log $log"
  nice -n 15 "$exe" "${args[@]}" "${flags[@]}" "$corpus" "fuzz/corpus/$target" \
    >"$log" 2>&1 || status=1
  last=$(grep -E '^#[0-9]+:?[[:space:]].*cov: ' "$log" | tail -1 || true)
  found=$(find "$artifacts" -type f | wc -l)
  slowest=$(grep -E '^stat::slowest_unit_time_sec' "$log" | awk '{print $2}' || true)
  summary+=("$target: ${last:-no stats (see $log)}; slowest input ${slowest:-?} s; corpus $(ls "$corpus" | wc -l) files; $found artifacts in $artifacts")
done
printf '%s\n' "${summary[@]}"
exit $status
