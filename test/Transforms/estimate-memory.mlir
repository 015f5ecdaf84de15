// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=2 compute-dtype=f32 master-dtype=f32 reduce-dtype=f32 optim-dtype=f32" "--estimate-memory=hardware=cpu seq=8 mbs=1" 2>/dev/null | FileCheck %s
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-remat=mode=full "--apply-fsdp=shards=2 compute-dtype=f32 master-dtype=f32 reduce-dtype=f32 optim-dtype=f32" "--estimate-memory=hardware=cpu seq=8 mbs=1" 2>/dev/null | FileCheck %s --check-prefix=FULL
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=2 compute-dtype=f32 master-dtype=f32 reduce-dtype=f32 optim-dtype=f32" "--estimate-memory=hardware=cpu seq=8 mbs=1 grad-accum=4" 2>/dev/null | FileCheck %s --check-prefix=ACCUM
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 | sed 's/shard.grid @fsdp(shape = 2)/&\n  shard.grid @tp(shape = 4)/' | not parc-opt "--estimate-memory=hardware=cpu seq=8" 2>&1 | FileCheck %s --check-prefix=GRIDS
// RUN: not parc-opt %S/Inputs/tiny-2-layers.mlir --estimate-memory=hardware=cpu 2>&1 | FileCheck %s --check-prefix=NO-PLAN
// RUN: not parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 --estimate-memory=hardware=tpu-v9 2>&1 | FileCheck %s --check-prefix=HARDWARE
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 "--estimate-memory=hardware=h100-80gb seq=8 mbs=1" 2>/dev/null | FileCheck %s --check-prefix=CACHING
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 "--estimate-memory=hardware=h100-80gb seq=8 mbs=1 allocator=expandable-segments" 2>/dev/null | FileCheck %s --check-prefix=EXPANDABLE
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 "--estimate-memory=hardware=h100-80gb seq=8 mbs=1 allocator=direct" 2>/dev/null | FileCheck %s --check-prefix=DIRECT

// Two f32 layers of 1232 parameters and a tied 100x16 embedding (counted,
// sharded and given moments once: 4064 parameters, 2032 per rank), seq 8.
// The peak is layer 1's reduce-scatter: its gradients (1232 f32, 4928
// bytes) have been copied into one flat buffer and dropped, and the cpu
// profile's Gloo reduce-scatter is an all-to-all into a receive buffer of
// the flat buffer's size and a sum of this rank's slice (2464). Beside them
// are layer 1's gradient shards (2464), the root's unsharded gradient (the
// tied embedding, 100x16 f32: 6400), layer 0's activations still saved, and
// the root, layer 1 (freed after its reduce-scatter) and layer 0 gathered.
// CHECK: memory per rank (fsdp, 2 ranks)
// CHECK-NEXT: sharded parameters {{.*}} 8128 bytes
// CHECK-NEXT: unsharded parameters {{.*}} 16256 bytes
// CHECK-NEXT: gradients {{.*}} 21184 bytes
// CHECK-NEXT: optimizer state {{.*}} 16256 bytes
// The cpu profile runs eager kernels. Per layer (8x16 f32 = 512 bytes):
// the norm's input, x^2 and x * rstd (3 x 512) and rstd (32); q_proj's input
// (512); attention's contiguous q, k and v copies (3 x 512), its 4x8x8 fp32
// probabilities (1024) and the 8x8 mask (64); the residual (512), up's output
// and the activation's (2 x 960): 7136 bytes.
// CHECK-NEXT: saved activations {{.*}} 7136 bytes
// CHECK-NEXT: recompute working set {{.*}} 0 bytes
// CHECK-NEXT: logits and loss {{.*}} 0 bytes
// CHECK-NEXT: fixed overhead {{.*}} 0 bytes
// CHECK-NEXT: peak {{.*}} 68960 bytes
// CHECK-NEXT: peak during: reduce-scatter model.layers.1 (copy-in)
// CHECK-NEXT: capacity 24.00 GiB: fits
// CHECK: parc.model @tiny {{.*}}parc.predicted_fits = true, parc.predicted_hardware = "cpu", parc.predicted_micro_batch = 1 : i64, parc.predicted_peak_bytes = 68960 : i64, parc.predicted_peak_phase = "reduce-scatter model.layers.1 (copy-in)", parc.predicted_seq_len = 8 : i64

// Full remat keeps one layer input per layer (8x16 f32 = 512 bytes) and
// rebuilds the layer being differentiated; the peak is again layer 1's
// reduce-scatter, with the one layer input left saved.
// FULL: unsharded parameters {{.*}} 16256 bytes
// FULL-NEXT: gradients {{.*}} 21184 bytes
// FULL-NEXT: optimizer state {{.*}} 16256 bytes
// FULL-NEXT: saved activations {{.*}} 512 bytes
// FULL-NEXT: recompute working set {{.*}} 0 bytes
// FULL: peak {{.*}} 62336 bytes
// FULL-NEXT: peak during: reduce-scatter model.layers.1 (copy-in)

// With gradient accumulation the sharded gradients live all step.
// ACCUM: gradients {{.*}} 26848 bytes

// A grid no plan uses is refused rather than counted as ranks.
// GRIDS: error: lower-to-schedule: parc.tp_size = 1 but shard.grid @tp has 4 ranks: run --apply-tp again

// NO-PLAN: error: lower-to-schedule: @tiny has no FSDP plan: run --apply-fsdp first (shards=1 for unsharded parameters)
// HARDWARE: error: unknown hardware profile 'tpu-v9'
// HARDWARE-SAME: a100-80gb, b200-192gb, cpu, h100-80gb, h100-96gb-500w, h200-141gb

// On a GPU profile the device holds what the caching allocator reserves:
// every tensor of this model is under 1 MiB, so the compute stream and the
// all-gather stream each reserve one 2 MiB small-pool segment, and the
// verdict is against those and the fixed overhead (1.5 GiB).
// CACHING: peak {{.*}} 1610672096 bytes
// CACHING-NEXT: peak during: reduce-scatter model.layers.1
// CACHING-NEXT: reserved by allocator {{.*}} 4194304 bytes
// CACHING-NEXT: device peak {{.*}} 1614807040 bytes
// CACHING-NEXT: reserved (caching allocator) peaks during: start of step
// CACHING-NEXT: capacity 79.11 GiB: fits, headroom 77.61 GiB
// EXPANDABLE: reserved by allocator {{.*}} 4194304 bytes
// EXPANDABLE: reserved (expandable-segments allocator) peaks during: start of step
// One allocation per tensor: nothing is reserved beyond the tensors.
// DIRECT: peak {{.*}} 1610672096 bytes
// DIRECT-NEXT: peak during: reduce-scatter model.layers.1
// DIRECT-NEXT: capacity 79.11 GiB: fits, headroom 77.61 GiB
