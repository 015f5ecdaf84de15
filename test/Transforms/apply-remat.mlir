// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=full | FileCheck %s --check-prefix=FULL
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=selective | FileCheck %s --check-prefix=SELECTIVE
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=every every=2" | FileCheck %s --check-prefix=EVERY
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=none | FileCheck %s --check-prefix=NONE
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=full frozen=model.layers.1" | FileCheck %s --check-prefix=FROZEN
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=full 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=153600 seq=64 mbs=2" 2>&1 | FileCheck %s --check-prefix=BUDGET-ALL
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=100000 seq=64 mbs=2" 2>&1 | FileCheck %s --check-prefix=BUDGET-HALF
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=60000 seq=64 mbs=2" 2>&1 | FileCheck %s --check-prefix=BUDGET-LEAN
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=1000 seq=64 mbs=2" 2>&1 | FileCheck %s --check-prefix=BUDGET-OVER
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=budget budget=100000 seq=64 mbs=2 frozen=model.layers.0" 2>&1 | FileCheck %s --check-prefix=BUDGET-FROZEN
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=op | FileCheck %s --check-prefix=OP
// RUN: parc-opt %s --apply-remat=mode=full -split-input-file -verify-diagnostics

// Every layer of the stack records its decision; nothing else changes.
// FULL-COUNT-4: parc.remat = #parc.remat<full>
// FULL-NOT: parc.recompute

// Selective remat keeps matmul and attention outputs: norms, adds and
// activations are marked for recompute, linears and attention are not.
// SELECTIVE: parc.remat = #parc.remat<selective>
// SELECTIVE: parc.rms_norm {{.*}}parc.recompute
// SELECTIVE-NEXT: parc.linear
// SELECTIVE-NOT: parc.recompute
// SELECTIVE-SAME: tensor<?x?x16xf32>
// SELECTIVE-NEXT: parc.attention
// SELECTIVE-NOT: parc.recompute
// SELECTIVE-SAME: -> tensor<?x?x16xf32>
// SELECTIVE-NEXT: parc.add {{.*}}parc.recompute
// SELECTIVE: parc.activation silu {{.*}}parc.recompute

// torchtitan's op policy: the layer is rerun in backward except attention
// and the 1st and 3rd matmul (q and down; up, the 2nd, is rerun), whose
// outputs are kept. Nothing is marked for selective recompute.
// OP-COUNT-4: parc.remat = #parc.remat<op>
// OP-NOT: parc.recompute
// OP: parc.rms_norm
// OP-NOT: parc.remat_save
// OP-SAME: tensor<?x?x16xf32>
// OP-NEXT: parc.linear {{.*}}@q::@weight {parc.remat_save}
// OP-NEXT: parc.attention {{.*}}parc.remat_save
// OP-NEXT: parc.add
// OP-NOT: parc.remat_save
// OP-SAME: tensor<?x?x16xf32>
// OP-NEXT: parc.linear {{.*}}@up::@weight :
// OP-NEXT: parc.activation silu
// OP-NOT: parc.remat_save
// OP-SAME: tensor<?x?x30xf32>
// OP-NEXT: parc.linear {{.*}}@down::@weight {parc.remat_save}

// mode=every every=2 wraps layers 1 and 3 (the second and fourth).
// EVERY: parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"}
// EVERY: parc.module @"1" "Block" composite attributes {parc.layer_index = 1 : i64, parc.remat = #parc.remat<full>, parc.stack = "language"}
// EVERY: parc.module @"2" "Block" composite attributes {parc.layer_index = 2 : i64, parc.stack = "language"}
// EVERY: parc.module @"3" "Block" composite attributes {parc.layer_index = 3 : i64, parc.remat = #parc.remat<full>, parc.stack = "language"}

// NONE-NOT: parc.remat

// FROZEN: parc.module @"0" "Block" composite attributes {{{.*}}parc.remat = #parc.remat<full>
// FROZEN: parc.module @"1" "Block" composite attributes {parc.frozen, parc.layer_index = 1 : i64, parc.stack = "language"}
// FROZEN: parc.module @"2" "Block" composite attributes {{{.*}}parc.remat = #parc.remat<full>

// REMARK: remark: full remat on 4 of 4 layers in model.layers

// Under a budget each layer gets what recomputes least while the
// activations alive at once stay within it. Room for everything: nothing
// is recomputed (the four layers keep 4 x 38400 bytes at seq 64 x mbs 2).
// BUDGET-ALL: remark: budget remat in model.layers: full on 0, selective on 0, none on 4 layers
// BUDGET-ALL: remark: budget remat keeps at most 153600 of 153600 activation bytes and recomputes 0.000e+00 FLOPs
// BUDGET-ALL-NOT: parc.remat =

// Less room: the first layers are recomputed, since their backward runs
// last, when the other layers' saved tensors are freed already.
// BUDGET-HALF: remark: budget remat in model.layers: full on 2, selective on 0, none on 2 layers
// BUDGET-HALF: remark: budget remat keeps at most 84992 of 100000 activation bytes
// BUDGET-HALF: parc.module @"0" "Block" composite attributes {{{.*}}parc.remat = #parc.remat<full>
// BUDGET-HALF: parc.module @"1" "Block" composite attributes {{{.*}}parc.remat = #parc.remat<full>
// BUDGET-HALF: parc.module @"2" "Block" composite attributes {parc.layer_index = 2 : i64, parc.stack = "language"}
// BUDGET-HALF: parc.module @"3" "Block" composite attributes {parc.layer_index = 3 : i64, parc.stack = "language"}

// The leanest choice keeps the last layer whole: recomputing it would
// rebuild its activations on top of every other layer's saved input.
// BUDGET-LEAN: full on 3, selective on 0, none on 1 layers
// BUDGET-LEAN: keeps at most 50688 of 60000
// BUDGET-LEAN: parc.module @"3" "Block" composite attributes {parc.layer_index = 3 : i64, parc.stack = "language"}

// A budget nothing meets: full remat everywhere, and a warning that says so.
// BUDGET-OVER: warning: remat budget of 1000 bytes is below the least the layers can keep (54784 bytes with full remat on every layer in scope): full remat on every layer in scope
// BUDGET-OVER: full on 4, selective on 0, none on 0 layers
// BUDGET-OVER-COUNT-4: parc.remat = #parc.remat<full>

// A frozen layer keeps its decision (none) and counts towards the peak.
// BUDGET-FROZEN: remark: budget remat in model.layers: full on 2, selective on 0, none on 1 layers
// BUDGET-FROZEN: parc.module @"0" "Block" composite attributes {parc.frozen, parc.layer_index = 0 : i64, parc.stack = "language"}

// -----

// The founding bug: remat asked for, no layer to wrap. Refused, never a no-op.
// expected-warning@+2 {{no layer stacks found in @undiscovered}}
// expected-error@+1 {{remat requested (mode=full, scope=all) but no layer is in scope in @undiscovered (stacks searched: none; run --discover-layers or name them with --discover-layers=stacks=)}}
parc.model @undiscovered class "M" {
  parc.module @layers "ModuleList" list {
  }
}

// -----

// expected-remark@+2 {{full remat on 0 of 0 layers}}
// expected-error@+1 {{no layer is in scope in @wrong_scope (stacks searched: model.vision (vision))}}
parc.model @wrong_scope class "M" attributes {parc.stacks = [#parc.stack<name = "vision", path = "model.vision", layers = 0>]} {
}
