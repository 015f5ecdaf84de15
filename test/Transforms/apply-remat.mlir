// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=full | FileCheck %s --check-prefix=FULL
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=selective | FileCheck %s --check-prefix=SELECTIVE
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=every:2 | FileCheck %s --check-prefix=EVERY
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=none | FileCheck %s --check-prefix=NONE
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-remat=mode=full frozen=model.layers.1" | FileCheck %s --check-prefix=FROZEN
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=full 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
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

// every:2 wraps layers 1 and 3 (the second and fourth).
// EVERY: parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"}
// EVERY: parc.module @"1" "Block" composite attributes {parc.layer_index = 1 : i64, parc.remat = #parc.remat<full>, parc.stack = "language"}
// EVERY: parc.module @"2" "Block" composite attributes {parc.layer_index = 2 : i64, parc.stack = "language"}
// EVERY: parc.module @"3" "Block" composite attributes {parc.layer_index = 3 : i64, parc.remat = #parc.remat<full>, parc.stack = "language"}

// NONE-NOT: parc.remat

// FROZEN: parc.module @"0" "Block" composite attributes {{{.*}}parc.remat = #parc.remat<full>
// FROZEN: parc.module @"1" "Block" composite attributes {parc.frozen, parc.layer_index = 1 : i64, parc.stack = "language"}
// FROZEN: parc.module @"2" "Block" composite attributes {{{.*}}parc.remat = #parc.remat<full>

// REMARK: remark: full remat on 4 of 4 layers in model.layers

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
