// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=2 compute-dtype=f32 master-dtype=f32 reduce-dtype=f32 optim-dtype=f32" "--estimate-cost=hardware=cpu seq=8 mbs=1" 2>/dev/null | FileCheck %s
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-remat=mode=full "--apply-fsdp=shards=2 compute-dtype=f32 master-dtype=f32 reduce-dtype=f32 optim-dtype=f32" "--estimate-cost=hardware=cpu seq=8 mbs=1" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=FULL
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-remat=mode=selective "--apply-fsdp=shards=2 compute-dtype=f32 master-dtype=f32 reduce-dtype=f32 optim-dtype=f32" "--estimate-cost=hardware=cpu seq=8 mbs=1" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=SELECTIVE
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=2 compute-dtype=f32 master-dtype=f32 reduce-dtype=f32 optim-dtype=f32" "--estimate-cost=hardware=cpu seq=8 mbs=1 overlap=none" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=NONE
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=2 compute-dtype=f32 master-dtype=f32 reduce-dtype=f32 optim-dtype=f32" "--estimate-cost=hardware=cpu seq=8 mbs=1 overlap=0.5" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=HALF
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=2 compute-dtype=f32 master-dtype=f32 reduce-dtype=f32 optim-dtype=f32" "--estimate-cost=hardware=cpu seq=8 mbs=1 grad-accum=4 gpus-per-node=1" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=ACCUM
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=1 compute-dtype=f32 master-dtype=f32 reduce-dtype=f32 optim-dtype=f32" "--estimate-cost=hardware=cpu seq=8 mbs=1 compute-efficiency=1" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=ONE
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 schedule=1f1b microbatches=4" --apply-fsdp=shards=1 "--estimate-cost=hardware=cpu seq=4096" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=PP
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 schedule=interleaved-1f1b chunks=2 microbatches=8" --apply-fsdp=shards=1 "--estimate-cost=hardware=cpu seq=4096" -o /dev/null 2>/dev/null | FileCheck %s --check-prefix=INTERLEAVED

// Two f32 layers (hidden 16, 4 heads of 4, up 30), a tied 100x16
// embedding / lm_head, seq 8, micro-batch 1: 8 tokens per step.
// Forward FLOPs of one layer:
//   rms_norm 8x16 x 4 = 512; q 2x8x16x16 = 4096;
//   causal attention 4 x 36 pairs (8x9/2) x 4 heads x 4 = 2304; add 128;
//   up 2x8x16x30 = 7680; silu 240 x 4 = 960; down 7680; add 128: 23488.
// Root: embedding 0, lm_head 2x8x16x100 = 25600, cross-entropy 800 x 4 =
// 3200: 28800. Forward 2 x 23488 + 28800 = 75776; backward twice that (every
// weight is trainable and the embedding makes every layer input need a
// gradient).
// CHECK: step time per rank (fsdp, 2 ranks) on CPU test machine
// CHECK-NEXT: forward 75776 FLOPs
// CHECK-NEXT: backward 151552 FLOPs
// CHECK-NEXT: recompute 0 FLOPs
// CHECK-NEXT: total 227328 FLOPs
// 227328 / 8 tokens.
// CHECK-NEXT: model FLOPs per token 28416 FLOPs
// 227328 / (0.6 x 50e9).
// CHECK-NEXT: compute 7.5776e-06 s at 60% of 0.05 TFLOP/s
// All-gathers: the root (1600 f32 = 6400 B) once, each layer (1232 f32 =
// 4928 B) in forward and again in backward; reduce-scatters: the root and
// both layers. (2-1)/2 x 42368 B / 5 GB/s.
// CHECK-NEXT: communication 4.2368e-06 s 5 all-gathers 26112 B, 3 reduce-scatters 16256 B, ring over intra-node 5 GB/s
// The timeline leaves exposed the first all-gathers (root + layer 0:
// 1.1328 us), layer 1's backward all-gather (issued after the lm_head
// backward, nothing left to hide behind: 0.4928 us) and the last
// reduce-scatters (layer 0 + root: 1.1328 us).
// CHECK-NEXT: exposed communication 2.7584e-06 s overlap schedule
// The gradient clipping reads the 2032 f32 gradients per rank once (8128 B),
// then AdamW reads p, g, m, v and writes p, m, v = 7 x 8128 B.
// CHECK-NEXT: optimizer step 3.2512e-06 s 65024 B at 20 GB/s
// 7.5776 + 2.7584 + 3.2512 us.
// CHECK-NEXT: step 1.35872e-05 s x 1 micro-batches
// 8 / 13.5872 us; 28416 x 588789 / 50e9.
// CHECK-NEXT: tokens/s/GPU 588789
// CHECK-NEXT: MFU 33.46%
// CHECK: parc.model @tiny {{.*}}parc.predicted_flops_per_step = 2.273280e+05 : f64, parc.predicted_mfu = 0.3346{{[0-9]*}} : f64, parc.predicted_step_time_s = 1.358720e-05 : f64, parc.predicted_tokens_per_s_per_gpu = 588789.{{[0-9]*}} : f64

// Full remat reruns each layer's forward once (2 x 23488); model FLOPs per
// token do not change.
// FULL: recompute 46976 FLOPs
// FULL-NEXT: total 274304 FLOPs
// FULL-NEXT: model FLOPs per token 28416 FLOPs
// FULL: MFU 30.00%

// Selective remat reruns the ops marked parc.recompute: the norm, the silu
// and the two adds (512 + 960 + 2 x 128 per layer).
// SELECTIVE: recompute 3456 FLOPs

// No overlap: every collective blocks compute.
// NONE: exposed communication 4.2368e-06 s overlap none
// NONE: step 1.50656e-05 s

// Half the communication hidden.
// HALF: exposed communication 2.1184e-06 s overlap 0.5

// Four micro-batches: FLOPs, collectives and compute times four, one
// optimizer step. Two ranks over one-GPU nodes use the inter-node link
// (1.25 GB/s): 4 x 0.5 x 42368 / 1.25e9.
// ACCUM: total 909312 FLOPs
// ACCUM-NEXT: model FLOPs per token 28416 FLOPs
// ACCUM-NEXT: compute 3.03104e-05 s
// ACCUM-NEXT: communication 6.77888e-05 s 20 all-gathers 104448 B, 12 reduce-scatters 65024 B, ring over inter-node 1.25 GB/s
// ACCUM: optimizer step 3.2512e-06 s
// ACCUM: step {{.*}} s x 4 micro-batches

// One rank: no communication; the whole peak (efficiency 1).
// ONE: compute 4.54656e-06 s at 100% of 0.05 TFLOP/s
// ONE-NEXT: communication 0 s
// ONE-NEXT: exposed communication 0 s

// Two stages of two equal layers each, at a sequence long enough that the
// transfers are small beside compute: timing the stages' programs meets the
// closed-form bubble (p - 1) / (v m), within the transfers and the
// embedding / loss on the end stages.
// PP: pipeline {{.*}} 1f1b x 2 stages, 4 micro-batches; bubble 24.68% (closed form 25.00%)
// INTERLEAVED: pipeline {{.*}} interleaved-1f1b x 2 stages x 2 chunks, 8 micro-batches; bubble 6.18% (closed form 6.25%)
