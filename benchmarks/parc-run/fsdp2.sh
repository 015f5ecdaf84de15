#!/usr/bin/env bash
# Two-rank FSDP in parc-run against two-rank DistributedDataParallel in
# PyTorch eager (Debian's python3-torch 1.13, benchmarks/parc-run/eager.py
# --ddp 2), both on Gloo on this host, for three Llama sizes:
# examples/tiny/llama-tiny.json (4.6 M parameters),
# benchmarks/parc-run/models/llama-30m.json (31.6 M) and llama-125m.json
# (124.7 M); fp32, seq 256, micro-batch 2 per rank (the same global batch of
# 4 sequences), AdamW + clipping. Each setting runs parc-run and DDP one
# after the other, PAIRS times, first at both sides' defaults and then with
# both pinned to one thread per process (OMP_NUM_THREADS=1); each run's
# figure is the median step time of its steps 2..N, a row the median over
# the pairs of those figures and of the pair ratios.
#
# The last column sets the cost model against the run: parc-plan's
# predicted exposed communication per step (cost.exposed_communication_s,
# for the cpu profile) and what parc-run measured (--trace: the time rank
# 0's program spent in its collective steps and waits, median over the
# pairs of its per-step mean over steps 2..N).
#   usage: benchmarks/parc-run/fsdp2.sh [BUILD_DIR] [PAIRS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
pairs="${2:-3}"
source "$root/benchmarks/parc-run/common.sh"

# Seconds per step rank 0 spent in collectives and waits (steps 2..N).
exposed_step() {
  "$py" - "$1" <<'PY'
import collections, json, sys
events = json.load(open(sys.argv[1]))["traceEvents"]
per = collections.defaultdict(float)
for e in events:
    if e.get("ph") != "X" or e["pid"] != 1 or e["args"].get("step", 0) < 2:
        continue
    if e["tid"] == 2 or e["name"].startswith("wait "):
        per[e["args"]["step"]] += e["dur"] / 1e6
print(f"{sum(per.values()) / max(len(per), 1):.6f}")
PY
}

echo "| model | parameters | threads | parc-run FSDP 2 s/step | DDP 2 s/step | ratio (median of pairs) | pair ratios | exposed communication s/step, predicted / measured |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for spec in "${llama_sizes[@]}"; do
  IFS=: read -r model steps params <<< "$spec"
  name="$(basename "$model" .json)"
  "$build/bin/parc-plan" --model "$root/$model" --hardware cpu --gpus 2 \
    --dtype fp32 --seq 256 --mbs 2 --emit-plan "$work/$name.bin" --json \
    > "$work/$name.json" 2> /dev/null
  predicted=$("$py" -c 'import json, sys
cost = json.load(open(sys.argv[1]))["cost"]
print("%.4f" % cost["exposed_communication_s"])' "$work/$name.json")
  echo "load before $name: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  for threads in default 1; do
    envs=()
    [[ $threads == 1 ]] && envs=(OMP_NUM_THREADS=1)
    results=()
    exposed=()
    for ((p = 0; p < pairs; ++p)); do
      rm -f "$work/log.jsonl" "$work/trace.json"
      env "${envs[@]}" "$build/bin/parc-run" --nproc 2 "$work/$name.bin" \
        --steps "$steps" --log "$work/log.jsonl" --trace "$work/trace.json" \
        --quiet > /dev/null
      ours=$(parc_step "$work/log.jsonl" 1024)
      exposed+=("$(exposed_step "$work/trace.json")")
      theirs=$(env "${envs[@]}" "$py" "$root/benchmarks/parc-run/eager.py" \
        "$root/$model" --seq 256 --mbs 2 --steps "$steps" --ddp 2)
      results+=("$ours:$theirs")
    done
    measured=$(printf '%s\n' "${exposed[@]}" | sort -g | sed -n "$(( (pairs + 1) / 2 ))p")
    pair_row "$name" "$params" "$threads" "$predicted / $measured" "${results[@]}"
  done
done
