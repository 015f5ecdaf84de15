#!/usr/bin/env bash
# Layout search speed: parc-plan --auto end to end (every layout the request
# leaves open planned through the full pipeline, memory replay and cost
# model) for Llama 3.1 8B, 70B and 405B on clusters of growing size. Prints
# wall time (best of RUNS), the candidates enumerated and planned, planned
# candidates per second, and the winner. Results are recorded in results.md
# beside this script. A search over LIMIT seconds (default 600) is stopped
# and reported as such.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${PARC_BIN:-$here/../../build/bin}"
models="$here/../../examples/models"
runs="${RUNS:-3}"
limit="${LIMIT:-600}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

search() { # label, then the parc-plan arguments
  local label="$1"; shift
  local best=""
  for _ in $(seq "$runs"); do
    local start end rc=0
    start=$(date +%s.%N)
    timeout "$limit" "$bin/parc-plan" "$@" --auto --json >"$tmp/out.json" 2>/dev/null || rc=$?
    end=$(date +%s.%N)
    if ((rc == 124)); then
      printf '%-46s over %s s (stopped)\n' "$label" "$limit"
      return
    fi
    local t
    t=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.2f", b - a }')
    if [[ -z "$best" ]] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
  done
  python3 - "$label" "$best" "$tmp/out.json" <<'PY'
import json, sys
label, wall, path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
doc = json.load(open(path))
s = doc["search"]
c = s["counts"]
win = s["ranked"][0]["layout"] + ", mbs %d, remat %s" % (
    s["ranked"][0]["micro_batch_size"], s["ranked"][0]["remat"]) if s["ranked"] else "nothing fits"
print("%-46s %6.2f s  %5d enumerated  %5d planned  %6.1f planned/s  winner: %s"
      % (label, wall, c["enumerated"], c["planned"], c["planned"] / wall, win))
PY
}

echo "parc-plan --auto, best of $runs runs, $(nproc) cores"
search "8B, 8 x H100, gbs 8 x 8192" --model "$models/llama-3.1-8b.json" \
  --hardware h100-80gb --gpus 8 --seq 8192
search "8B, 8 x H100, gbs 32 x 8192" --model "$models/llama-3.1-8b.json" \
  --hardware h100-80gb --gpus 8 --seq 8192 --gbs 32
search "70B, 16 x H100 (2 nodes), gbs 32 x 8192" --model "$models/llama-3.1-70b.json" \
  --hardware h100-80gb --nodes 2 --gpus-per-node 8 --seq 8192 --gbs 32
search "405B, 64 x H100 (8 nodes), gbs 64 x 8192" --model "$models/llama-3.1-405b.json" \
  --hardware h100-80gb --nodes 8 --gpus-per-node 8 --seq 8192 --gbs 64
search "405B, 1024 x H100 (128 nodes), gbs 1024 x 8192" --model "$models/llama-3.1-405b.json" \
  --hardware h100-80gb --nodes 128 --gpus-per-node 8 --seq 8192 --gbs 1024
