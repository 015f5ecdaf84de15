// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 schedule=1f1b microbatches=4" 2>&1 | FileCheck %s
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 schedule=gpipe microbatches=2" 2>&1 | FileCheck %s --check-prefix=GPIPE
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 schedule=interleaved-1f1b chunks=2 microbatches=2" 2>&1 | FileCheck %s --check-prefix=INTERLEAVED
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 microbatches=2 split=1,3" "--apply-pp=stages=2 microbatches=2 split=3,1" 2>&1 | FileCheck %s --check-prefix=PINNED

// The tail (lm_head, loss) and the layers balance at 2 + 2; 1F1B keeps
// p - s micro-batches in flight (counted from the emitted steps).
// CHECK: remark: PP: tied parameters model.embed.weight lm_head.weight span stages 0 1: kept as 2 copies with gradients all-reduced over @pp
// CHECK: remark: PP 2 (1f1b, 4 micro-batches): stages of 2 and 2 layers; bubble 25%
// CHECK: parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 4, stage_layers = [2, 2],
// CHECK-SAME: in_flight = [2, 1], bubble = 2.500000e-01 : f64>
// CHECK-SAME: parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, F1, B0, F2, B1, F3, B2, B3]>, #parc.pp_steps<stage = 1, steps = [F0, B0, F1, B1, F2, B2, F3, B3]>]
// CHECK-SAME: parc.pp_tied_copies = [#parc.pp_tied<params = [@model::@embed::@weight, @lm_head::@weight], stages = [0, 1]>]
// CHECK-NEXT: shard.grid @pp(shape = 2)
// CHECK: @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.pp_stage = 0 : i64
// CHECK: @"1" "Block" composite attributes {parc.layer_index = 1 : i64, parc.pp_stage = 0 : i64
// CHECK: @"2" "Block" composite attributes {parc.layer_index = 2 : i64, parc.pp_stage = 1 : i64
// CHECK: @"3" "Block" composite attributes {parc.layer_index = 3 : i64, parc.pp_stage = 1 : i64

// GPipe: every forward, then every backward; all micro-batches in flight.
// GPIPE: remark: PP 2 (gpipe, 2 micro-batches): stages of 2 and 2 layers; bubble 50%
// GPIPE: parc.pp = #parc.pp<stages = 2, schedule = "gpipe", chunks = 1, microbatches = 2, stage_layers = [2, 2],
// GPIPE-SAME: in_flight = [2, 2], bubble = 5.000000e-01 : f64>
// GPIPE-SAME: parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, F1, B0, B1]>, #parc.pp_steps<stage = 1, steps = [F0, F1, B0, B1]>]

// Interleaved 1F1B: layer l on stage l mod p, chunk l div p; the bubble is
// (p - 1) / (v m).
// INTERLEAVED: remark: PP 2 (interleaved-1f1b, 2 chunks, 2 micro-batches): virtual stages of 1, 1, 1 and 1 layers; bubble 25%
// INTERLEAVED: parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, F1, F0.c1, F1.c1, B0.c1, B1.c1, B0, B1]>, #parc.pp_steps<stage = 1, steps = [F0, F1, F0.c1, B0.c1, F1.c1, B1.c1, B0, B1]>]
// INTERLEAVED: @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.pp_chunk = 0 : i64, parc.pp_stage = 0 : i64
// INTERLEAVED: @"1" "Block" composite attributes {parc.layer_index = 1 : i64, parc.pp_chunk = 0 : i64, parc.pp_stage = 1 : i64
// INTERLEAVED: @"2" "Block" composite attributes {parc.layer_index = 2 : i64, parc.pp_chunk = 1 : i64, parc.pp_stage = 0 : i64
// INTERLEAVED: @"3" "Block" composite attributes {parc.layer_index = 3 : i64, parc.pp_chunk = 1 : i64, parc.pp_stage = 1 : i64

// A pinned split replaces the cost-balanced one, and running the pass again
// replaces the plan.
// PINNED: remark: PP 2 (1f1b, 2 micro-batches): stages of 1 and 3 layers
// PINNED: remark: PP 2 (1f1b, 2 micro-batches): stages of 3 and 1 layers
// PINNED: @"2" "Block" composite attributes {parc.layer_index = 2 : i64, parc.pp_stage = 0 : i64
// PINNED: @"3" "Block" composite attributes {parc.layer_index = 3 : i64, parc.pp_stage = 1 : i64
