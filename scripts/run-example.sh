#!/usr/bin/env bash
# The main job on the built-in example: set up, then plan Gemma 4 31B on
# 8 x H100 80 GB with FSDP 8 and full activation checkpointing, everything in
# bf16 (the configuration of the OOM story), and print the per-rank memory
# verdict. Any other recipe or parc-plan flags may be given instead.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/bootstrap.sh"
if (($# == 0)); then
  set -- "$root/examples/gemma4-31b/fsdp8-ac.yaml"
fi
exec "$root/build/bin/parc-plan" "$@"
