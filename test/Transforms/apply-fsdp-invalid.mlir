// RUN: not parc-opt %s --apply-fsdp=shards=0 2>&1 | FileCheck %s --check-prefix=SHARDS
// RUN: not parc-opt %s "--apply-fsdp=shards=2 master-dtype=fp8" 2>&1 | FileCheck %s --check-prefix=DTYPE
// RUN: not parc-opt %s "--apply-fsdp=shards=2 prefetch=-1" 2>&1 | FileCheck %s --check-prefix=PREFETCH

// SHARDS: error: apply-fsdp needs shards >= 1, got 0
// DTYPE: for the --master-dtype option: Cannot find option named 'fp8'!
// PREFETCH: error: apply-fsdp needs prefetch >= 0, got -1

parc.model @m class "M" {
  parc.param @w : tensor<4x4xf32>
}
