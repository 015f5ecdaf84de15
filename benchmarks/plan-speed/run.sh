#!/usr/bin/env bash
# Planning speed: parc-plan end to end (import, discover-layers, TP, remat,
# PP, FSDP, lowering to per-rank programs, memory replay, cost model, report
# and plan.bin export) for Llama 3.1 405B's config (126 layers, hidden 16384)
# on 16384 GPUs as TP 8 x PP 16 x FSDP 128, plus how the time grows with
# layers and with GPUs. Prints wall time and peak RSS of each run (GNU
# time); results are recorded in results.md beside this script.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${PARC_BIN:-$here/../../build/bin}"
model="$here/../../examples/models/llama-3.1-405b.json"
runs="${RUNS:-5}"

measure() { # label, then the parc-plan arguments
  local label="$1"; shift
  local best="" rss=""
  for _ in $(seq "$runs"); do
    /usr/bin/time -o "$tmp/time" -f "%e %M" "$bin/parc-plan" "$@" >/dev/null 2>&1 || true
    read -r t m < <(tail -n 1 "$tmp/time")
    if [[ -z "$best" ]] || awk -v t="$t" -v b="$best" 'BEGIN { exit !(t < b) }'; then best=$t; fi
    if [[ -z "$rss" || $m -gt $rss ]]; then rss=$m; fi
  done
  printf '%-44s %6.2f s  %7.1f MB peak RSS\n' "$label" "$best" "$(awk -v kb="$rss" 'BEGIN { print kb / 1024 }')"
}

plan() { # config, gpus, pp: TP 8 inside a node, FSDP over the rest
  local fsdp=$(($2 / 8 / $3)) micro=$((16 > $3 ? 16 : $3))
  echo --model "$1" --hardware h100-80gb --gpus "$2" --gpus-per-node 8 \
    --tp 8 --pp "$3" --fsdp "$fsdp" --microbatches "$micro" --sequence-parallel=true \
    --remat full --seq 8192 --mbs 1 --gbs $((fsdp * micro)) --emit-plan "$tmp/plan.bin"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! "$bin/parc-plan" $(plan "$model" 16384 16) >"$tmp/check" 2>&1; then
  cat "$tmp/check" >&2
  exit 1
fi

echo "parc-plan, best of $runs runs"
measure "405B, TP 8 x PP 16 x FSDP 128, 16384 GPUs" $(plan "$model" 16384 16)
echo "plan.bin: $(stat -c %s "$tmp/plan.bin") bytes"

for layers in 32 126 250 500 1000; do
  sed "s/\"num_hidden_layers\": 126/\"num_hidden_layers\": $layers/" \
    "$model" >"$tmp/l$layers.json"
  measure "layers $layers, 16384 GPUs" $(plan "$tmp/l$layers.json" 16384 16)
done
measure "126 layers, 8 GPUs (TP 8)" $(plan "$model" 8 1)
for gpus in 128 1024 16384; do
  measure "126 layers, $gpus GPUs" $(plan "$model" "$gpus" 16)
done
