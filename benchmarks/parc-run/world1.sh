#!/usr/bin/env bash
# World-1 training step of parc-run against PyTorch eager (Debian's
# python3-torch 1.13, benchmarks/parc-run/eager.py) on three Llama sizes:
# examples/tiny/llama-tiny.json (4.6 M parameters) and
# benchmarks/parc-run/models/llama-30m.json (31.6 M) and llama-125m.json
# (124.7 M), fp32, seq 256, micro-batch 4, AdamW + clipping. Each setting
# runs parc-run and eager one after the other, PAIRS times, first at both
# sides' defaults (no thread variable set) and then with both pinned to one
# thread (OMP_NUM_THREADS=1); each run's figure is the median step time of
# its steps 2..N, and a row is the median over the pairs of those figures
# and of the pair ratios. The machine's load is printed with each model.
#   usage: benchmarks/parc-run/world1.sh [BUILD_DIR] [PAIRS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
pairs="${2:-3}"
source "$root/benchmarks/parc-run/common.sh"

echo "| model | parameters | threads | parc-run s/step | eager s/step | ratio (median of pairs) | pair ratios |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for spec in "${llama_sizes[@]}"; do
  IFS=: read -r model steps params <<< "$spec"
  name="$(basename "$model" .json)"
  "$build/bin/parc-plan" --model "$root/$model" --hardware cpu --gpus 1 \
    --dtype fp32 --seq 256 --mbs 4 --emit-plan "$work/$name.bin" > /dev/null 2>&1
  echo "load before $name: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  for threads in default 1; do
    envs=()
    [[ $threads == 1 ]] && envs=(OMP_NUM_THREADS=1)
    results=()
    for ((p = 0; p < pairs; ++p)); do
      rm -f "$work/log.jsonl"
      env "${envs[@]}" "$build/bin/parc-run" "$work/$name.bin" --steps "$steps" \
        --log "$work/log.jsonl" --quiet > /dev/null
      ours=$(parc_step "$work/log.jsonl" 1024)
      theirs=$(env "${envs[@]}" "$py" "$root/benchmarks/parc-run/eager.py" \
        "$root/$model" --seq 256 --mbs 4 --steps "$steps")
      results+=("$ours:$theirs")
    done
    pair_row "$name" "$params" "$threads" "" "${results[@]}"
  done
done
