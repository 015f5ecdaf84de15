#!/usr/bin/env bash
# parc-run against PyTorch eager (Debian's python3-torch 1.13), measured side
# by side in one run: world-1 step time, and 2-rank FSDP against 2-rank DDP on
# Gloo, for examples/tiny/llama-tiny.json (4 layers, 256 wide), fp32, seq 128.
# Every process gets one compute thread (OMP_NUM_THREADS=1), so both sides use
# the same cores. Step times are medians of steps 2..N of each run.
#   usage: benchmarks/parc-run/run.sh [BUILD_DIR] [STEPS]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="${1:-$root/build}"
steps="${2:-10}"
model="$root/examples/tiny/llama-tiny.json"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=1
py=/usr/bin/python3

"$build/bin/parc-plan" --model "$model" --hardware cpu --gpus 1 --dtype fp32 \
  --seq 128 --mbs 4 --emit-plan "$work/w1.bin" > /dev/null 2>&1
"$build/bin/parc-plan" --model "$model" --hardware cpu --gpus 2 --dtype fp32 \
  --seq 128 --mbs 2 --emit-plan "$work/fsdp2.bin" > /dev/null 2>&1

# Median step time in seconds of a parc-run log (rank 0), from tokens/s.
parc_step() {
  "$py" - "$1" 512 <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
rows = [r for r in rows if r["rank"] == 0 and r["step"] > 1]
print(f"{statistics.median(int(sys.argv[2]) / r['tokens_per_s'] for r in rows):.6f}")
PY
}

"$build/bin/parc-run" "$work/w1.bin" --steps "$steps" --log "$work/w1.jsonl" --quiet
parc_w1=$(parc_step "$work/w1.jsonl")
eager_w1=$("$py" "$root/benchmarks/parc-run/eager.py" "$model" --seq 128 --mbs 4 --steps "$steps")
"$build/bin/parc-run" --nproc 2 "$work/fsdp2.bin" --steps "$steps" --log "$work/f2.jsonl" --quiet
parc_f2=$(parc_step "$work/f2.jsonl")
ddp_2=$("$py" "$root/benchmarks/parc-run/eager.py" "$model" --seq 128 --mbs 2 --steps "$steps" --ddp 2)

"$py" - "$parc_w1" "$eager_w1" "$parc_f2" "$ddp_2" <<'PY'
import sys
pw, ew, pf, dd = map(float, sys.argv[1:])
print("| run | parc-run s/step | PyTorch s/step | ratio (parc-run / PyTorch) |")
print("| --- | --- | --- | --- |")
print(f"| world 1 vs eager | {pw:.4f} | {ew:.4f} | {pw / ew:.2f} |")
print(f"| FSDP 2 vs DDP 2 (Gloo) | {pf:.4f} | {dd:.4f} | {pf / dd:.2f} |")
PY
