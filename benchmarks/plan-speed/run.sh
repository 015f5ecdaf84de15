#!/usr/bin/env bash
# Planning speed: parc-plan end to end (import, discover-layers, remat, FSDP,
# memory replay, report) for a 126-layer, 16384-hidden Llama-class model
# (Llama 3.1 405B's config) on 16384 GPUs, plus how the time grows with
# layers and with GPUs. Prints wall time and peak RSS of each run (GNU time);
# results are recorded in results.md beside this script.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${PARC_BIN:-$here/../../build/bin}"
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

plan() { # config, gpus
  echo --model "$1" --hardware h100-80gb --gpus "$2" --fsdp "$2" \
    --remat full --seq 8192 --mbs 1 --gbs "$2"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "parc-plan, best of $runs runs"
measure "405B-class, 126 layers, 16384 GPUs" $(plan "$here/llama-405b.json" 16384)

for layers in 32 126 250 500 1000; do
  sed "s/\"num_hidden_layers\": 126/\"num_hidden_layers\": $layers/" \
    "$here/llama-405b.json" >"$tmp/l$layers.json"
  measure "layers $layers, 16384 GPUs" $(plan "$tmp/l$layers.json" 16384)
done
for gpus in 8 128 1024 16384; do
  measure "126 layers, $gpus GPUs" $(plan "$here/llama-405b.json" "$gpus")
done
