// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 schedule=1f1b microbatches=4" 2>&1 | FileCheck %s

// The tail (lm_head, loss) and the layers balance at 2 + 2; 1F1B keeps
// p - s micro-batches in flight (counted from the emitted steps).
// CHECK: remark: PP: tied parameters model.embed.weight lm_head.weight span stages 0 1: kept as 2 copies with gradients all-reduced over @pp
// CHECK: remark: PP 2 (1f1b, 4 micro-batches): stages of 2 and 2 layers; bubble 25%
// CHECK: parc.pp = {bubble = 2.500000e-01 : f64, chunks = 1 : i64, in_flight = [2, 1], microbatches = 4 : i64, schedule = "1f1b"
// CHECK-SAME: stage_layers = [2, 2], stages = 2 : i64}
// CHECK-SAME: parc.pp_schedule = [{max_in_flight = 2 : i64, stage = 0 : i64, steps = ["F0", "F1", "B0", "F2", "B1", "F3", "B2", "B3"]}, {max_in_flight = 1 : i64, stage = 1 : i64, steps = ["F0", "B0", "F1", "B1", "F2", "B2", "F3", "B3"]}]
// CHECK-SAME: parc.pp_tied_copies = [{gradient_all_reduce = "pp", params = [@model::@embed::@weight, @lm_head::@weight], stages = [0, 1]}]
// CHECK-NEXT: shard.grid @pp(shape = 2)
// CHECK: @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.pp_stage = 0 : i64
// CHECK: @"1" "Block" composite attributes {parc.layer_index = 1 : i64, parc.pp_stage = 0 : i64
// CHECK: @"2" "Block" composite attributes {parc.layer_index = 2 : i64, parc.pp_stage = 1 : i64
// CHECK: @"3" "Block" composite attributes {parc.layer_index = 3 : i64, parc.pp_stage = 1 : i64
