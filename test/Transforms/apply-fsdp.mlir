// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=8 | FileCheck %s
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=4 reshard-after-forward=false prefetch=2 compute-dtype=bf16 master-dtype=bf16 reduce-dtype=bf16 optim-dtype=bf16 grad-sync=last-micro-batch" | FileCheck %s --check-prefix=POLICY
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=8 reshard-last-layer=false" | FileCheck %s --check-prefix=LAST
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=8 --apply-fsdp=shards=8 | FileCheck %s --check-prefix=TWICE
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=8 2>&1 >/dev/null | FileCheck %s --check-prefix=REMARK
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-remat=mode=none frozen=lm_head" --apply-fsdp=shards=8 | FileCheck %s --check-prefix=FROZEN-TIE
// RUN: parc-opt %s --apply-fsdp=shards=8 -split-input-file -verify-diagnostics
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=4 replicas=2" "--apply-fsdp=shards=8 replicas=3" 2>/dev/null | FileCheck %s --check-prefix=REPLICAS
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=8 replicas=3" 2>&1 >/dev/null | FileCheck %s --check-prefix=REPLICAS-REMARK

// With replicas (hybrid sharding) a second grid holds the copies of each
// FSDP group; running the pass again replaces both grids.
// REPLICAS: parc.model @tiny
// REPLICAS-NEXT: shard.grid @fsdp(shape = 8)
// REPLICAS-NEXT: shard.grid @dp(shape = 3)
// REPLICAS-NOT: shard.grid
// REPLICAS-REMARK: remark: HSDP: 3 replicas of each FSDP group over shard.grid @dp; gradient shards all-reduced over it each step

// One grid, a root unit for what is outside the layers, one unit per layer in
// execution order; every parameter sharded on dim 0 over the fsdp axis.
// CHECK-LABEL: parc.model @tiny
// CHECK-NEXT: shard.grid @fsdp(shape = 8)
// CHECK: parc.fsdp_unit @root path "" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, padding_elements = 64 : i64, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = false} {
// CHECK-NEXT: %[[S:.*]] = shard.sharding @fsdp split_axes = {{\[\[}}0]] : !shard.sharding
// The tied embedding and lm_head are one storage: sharded once, in one unit,
// 100 rows padded to 104.
// CHECK-NEXT: parc.shard_param @model::@embed::@weight to %[[S]] {padded_dim0 = 104 : i64, tied = [@lm_head::@weight]} : !shard.sharding
// CHECK-NEXT: }
// CHECK-NEXT: parc.fsdp_unit @model.layers.0 path "model.layers.0" attributes {{{.*}}padding_elements = 32 : i64, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = true}
// CHECK-NEXT: shard.sharding @fsdp
// CHECK-NEXT: parc.shard_param @model::@layers::@"0"::@norm::@weight to %{{.*}} {padded_dim0 = 16 : i64}
// CHECK-NEXT: parc.shard_param @model::@layers::@"0"::@q::@weight
// 30 rows of 16 padded to 32: 32 elements of padding.
// CHECK-NEXT: parc.shard_param @model::@layers::@"0"::@up::@weight to %{{.*}} {padded_dim0 = 32 : i64}
// CHECK-NEXT: parc.shard_param @model::@layers::@"0"::@down::@weight to %{{.*}} {padded_dim0 = 16 : i64}
// CHECK-NEXT: }
// CHECK-NEXT: parc.fsdp_unit @model.layers.1 path "model.layers.1"
// CHECK-NOT: parc.shard_param @lm_head

// POLICY: shard.grid @fsdp(shape = 4)
// POLICY: parc.fsdp_unit @root path "" attributes {compute_dtype = bf16, grad_sync = #parc.grad_sync<last_micro_batch>, master_dtype = bf16, optim_dtype = bf16, padding_elements = 0 : i64, prefetch = 2 : i64, reduce_dtype = bf16, reshard_after_forward = false}
// POLICY: parc.fsdp_unit @model.layers.0 {{.*}}reshard_after_forward = false}

// NeMo Automodel's heuristic: every layer is resharded after forward but the
// last in execution order, whose backward runs first; the root stays
// gathered as always.
// LAST: parc.fsdp_unit @root {{.*}}reshard_after_forward = false}
// LAST: parc.fsdp_unit @model.layers.0 {{.*}}reshard_after_forward = true}
// LAST: parc.fsdp_unit @model.layers.1 {{.*}}reshard_after_forward = false}

// Re-running replaces the plan instead of stacking a second one.
// TWICE-COUNT-1: shard.grid @fsdp
// TWICE-COUNT-3: parc.fsdp_unit
// TWICE-NOT: parc.fsdp_unit

// Freezing lm_head freezes the embedding it is tied to: one tensor, one
// requires_grad, so no gradient and no optimizer state for the group.
// FROZEN-TIE: parc.shard_param @model::@embed::@weight to %{{.*}} {frozen, padded_dim0 = 104 : i64, tied = [@lm_head::@weight]}
// FROZEN-TIE-NOT: frozen

// REMARK: remark: 3 FSDP units (root + 2 layers) over shard.grid @fsdp of 8 shards; padding 128 elements

// -----

// Without --discover-layers first, apply-fsdp discovers the layers itself.
// expected-warning@+3 {{no layer stacks found in @flat}}
// expected-warning@+2 {{no discovered layers in @flat: every parameter is in the root FSDP unit}}
// expected-remark@+1 {{1 FSDP units (root + 0 layers)}}
parc.model @flat class "M" {
  parc.param @w : tensor<4x4xf32>
}
