// RUN: parc-opt %s --apply-remat=mode=sometimes -verify-diagnostics -split-input-file
// RUN: not parc-opt %s --apply-remat=mode=every:0 2>&1 | FileCheck %s --check-prefix=EVERY0
// RUN: not parc-opt %s "--apply-remat=mode=full scope=audio" 2>&1 | FileCheck %s --check-prefix=SCOPE
// RUN: not parc-opt %s "--apply-remat=mode=full frozen=model.nothing" 2>&1 | FileCheck %s --check-prefix=FROZEN
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=budget 2>&1 | FileCheck %s --check-prefix=NO-BUDGET
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=1 seq=0" 2>&1 | FileCheck %s --check-prefix=BUDGET-SEQ
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=1 compute-dtype=f8" 2>&1 | FileCheck %s --check-prefix=BUDGET-DTYPE
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=1 hardware=tpu-v9" 2>&1 | FileCheck %s --check-prefix=BUDGET-HARDWARE
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=1 scope=vision" 2>&1 | FileCheck %s --check-prefix=BUDGET-SCOPE

// expected-error@+1 {{unknown remat mode 'sometimes' (expected full, selective, every:N with N > 0, budget or none)}}
parc.model @m class "M" {
}

// EVERY0: unknown remat mode 'every:0'
// SCOPE: unknown remat scope 'audio' (expected all, language or vision)
// FROZEN: frozen path 'model.nothing' names no module of @m
// NO-BUDGET: error: remat mode=budget needs budget=<bytes> (the activation bytes per rank the step may keep)
// BUDGET-SEQ: error: remat mode=budget needs seq > 0, mbs > 0 and image-tokens >= 0, got seq=0, mbs=1, image-tokens=0
// BUDGET-DTYPE: error: unknown compute-dtype 'f8' (expected bf16, f16 or f32)
// BUDGET-HARDWARE: error: {{.*}}tpu-v9
// BUDGET-SCOPE: error: remat requested (mode=budget, scope=vision) but no trainable layer is in scope in @tiny4
