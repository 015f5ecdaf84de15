// RUN: not parc-opt %s --apply-remat=mode=sometimes 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not parc-opt %s "--apply-remat=mode=every every=0" 2>&1 | FileCheck %s --check-prefix=EVERY0
// RUN: not parc-opt %s "--apply-remat=mode=full every=2" 2>&1 | FileCheck %s --check-prefix=EVERY-FULL
// RUN: not parc-opt %s "--apply-remat=mode=full scope=audio" 2>&1 | FileCheck %s --check-prefix=SCOPE
// RUN: not parc-opt %s "--apply-remat=mode=full frozen=model.nothing" 2>&1 | FileCheck %s --check-prefix=FROZEN
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=budget 2>&1 | FileCheck %s --check-prefix=NO-BUDGET
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=1 seq=0" 2>&1 | FileCheck %s --check-prefix=BUDGET-SEQ
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=1 compute-dtype=f8" 2>&1 | FileCheck %s --check-prefix=BUDGET-DTYPE
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=1 hardware=tpu-v9" 2>&1 | FileCheck %s --check-prefix=BUDGET-HARDWARE
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=1 scope=vision" 2>&1 | FileCheck %s --check-prefix=BUDGET-SCOPE

parc.model @m class "M" {
}

// The options are enums: the pass pipeline parser names the option and
// the value it does not know.
// MODE: for the --mode option: Cannot find option named 'sometimes'!
// EVERY0: error: remat every=N needs mode=every and N > 0, got mode=every every=0
// EVERY-FULL: error: remat every=N needs mode=every and N > 0, got mode=full every=2
// SCOPE: for the --scope option: Cannot find option named 'audio'!
// FROZEN: frozen path 'model.nothing' names no module of @m
// NO-BUDGET: error: remat mode=budget needs budget=<bytes> (the activation bytes per rank the step may keep)
// BUDGET-SEQ: error: remat mode=budget needs seq > 0, mbs > 0 and image-tokens >= 0, got seq=0, mbs=1, image-tokens=0
// BUDGET-DTYPE: for the --compute-dtype option: Cannot find option named 'f8'!
// BUDGET-HARDWARE: error: {{.*}}tpu-v9
// BUDGET-SCOPE: error: remat requested (mode=budget, scope=vision) but no trainable layer is in scope in @tiny4
