// RUN: not parc-opt %S/Inputs/tiny-2-layers.mlir --estimate-cost=hardware=cpu 2>&1 | FileCheck %s --check-prefix=NO-PLAN
// RUN: not parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 --estimate-cost=hardware=tpu-v9 2>&1 | FileCheck %s --check-prefix=HARDWARE
// RUN: not parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 "--estimate-cost=hardware=cpu overlap=most" 2>&1 | FileCheck %s --check-prefix=OVERLAP
// RUN: not parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 "--estimate-cost=hardware=cpu overlap=1.5" 2>&1 | FileCheck %s --check-prefix=OVERLAP-RANGE
// RUN: not parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 "--estimate-cost=hardware=cpu compute-efficiency=1.5" 2>&1 | FileCheck %s --check-prefix=EFFICIENCY
// RUN: not parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 "--estimate-cost=hardware=cpu seq=0" 2>&1 | FileCheck %s --check-prefix=SEQ

// NO-PLAN: error: lower-to-schedule: @tiny has no FSDP plan: run --apply-fsdp first (shards=1 for unsharded parameters)
// HARDWARE: error: unknown hardware profile 'tpu-v9'
// OVERLAP: for the --overlap option: 'most' is not 'schedule', 'none' or a fraction in [0, 1]
// OVERLAP-RANGE: for the --overlap option: '1.5' is not 'schedule', 'none' or a fraction in [0, 1]
// EFFICIENCY: error: estimate-cost needs a compute efficiency in (0, 1] (or 0 for the hardware profile's), got 1.5
// SEQ: error: lower-to-schedule: needs positive seq, mbs and grad-accum
