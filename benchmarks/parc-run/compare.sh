#!/usr/bin/env bash
# Two parc-run binaries side by side on the same plans, interleaved: the
# per-step cost of a runtime change (e.g. the program interpreter against the
# runtime before it). World 1 and FSDP 2 of examples/tiny/llama-tiny.json,
# fp32, seq 128, one compute thread per process; medians of steps 2..N.
# Each runtime runs the plans of its own planner (OLD_BUILD_DIR's parc-plan
# for the old one, default BUILD_DIR's) when plan.bin changed in between.
#   usage: benchmarks/parc-run/compare.sh NEW_PARC_RUN OLD_PARC_RUN [BUILD_DIR] [STEPS] [PAIRS] [OLD_BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
new="$1"
old="$2"
build="${3:-$root/build}"
steps="${4:-10}"
pairs="${5:-3}"
oldbuild="${6:-$build}"
model="$root/examples/tiny/llama-tiny.json"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
for side in new old; do
  planner=$([[ $side == new ]] && echo "$build" || echo "$oldbuild")/bin/parc-plan
  "$planner" --model "$model" --hardware cpu --gpus 1 --dtype fp32 \
    --seq 128 --mbs 4 --emit-plan "$work/$side-w1.bin" > /dev/null 2>&1
  "$planner" --model "$model" --hardware cpu --gpus 2 --dtype fp32 \
    --seq 128 --mbs 2 --emit-plan "$work/$side-fsdp2.bin" > /dev/null 2>&1
done
step() {
  /usr/bin/python3 - "$1" 512 <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r["rank"] == 0 and r["step"] > 1]
print(f"{statistics.median(int(sys.argv[2]) / r['tokens_per_s'] for r in rows):.4f}")
PY
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "| pair | world 1 new / old s | ratio | FSDP 2 new / old s | ratio |"
echo "| --- | --- | --- | --- | --- |"
for p in $(seq "$pairs"); do
  for bin in new old; do
    exe=$([[ $bin == new ]] && echo "$new" || echo "$old")
    rm -f "$work/$bin-w1.jsonl" "$work/$bin-f2.jsonl"
    "$exe" "$work/$bin-w1.bin" --steps "$steps" --log "$work/$bin-w1.jsonl" --quiet
    "$exe" --nproc 2 "$work/$bin-fsdp2.bin" --steps "$steps" --log "$work/$bin-f2.jsonl" --quiet
  done
  nw=$(step "$work/new-w1.jsonl"); ow=$(step "$work/old-w1.jsonl")
  nf=$(step "$work/new-f2.jsonl"); of=$(step "$work/old-f2.jsonl")
  /usr/bin/python3 -c "print(f'| $p | $nw / $ow | {$nw/$ow:.2f} | $nf / $of | {$nf/$of:.2f} |')"
done
