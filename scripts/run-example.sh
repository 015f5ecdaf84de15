#!/usr/bin/env bash
# The main job on the built-in example: set up, import Gemma 4 31B's config
# and print its summary (parameter counts per subtree and dtype, ties).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh"
config="${1:-$root/examples/models/gemma4-31b.json}"
out="$root/build/example.mlir"
"$root/build/bin/parc-translate" --import-hf-config "$config" -o "$out"
echo "parc: imported $config -> $out"
"$root/build/bin/parc-opt" --print-model-stats "$out" -o /dev/null
