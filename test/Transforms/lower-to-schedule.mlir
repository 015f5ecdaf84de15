// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 "--lower-to-schedule=seq=8" 2>&1 | FileCheck %s --check-prefix=FSDP
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-remat=mode=selective --apply-fsdp=shards=2 "--lower-to-schedule=seq=8 grad-accum=2" 2>&1 | FileCheck %s --check-prefix=REMAT
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir --apply-remat=mode=full "--apply-pp=stages=2 schedule=1f1b microbatches=2" --apply-fsdp=shards=2 "--lower-to-schedule=seq=8" 2>&1 | FileCheck %s --check-prefix=PP
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 schedule=interleaved-1f1b chunks=2 microbatches=2" --apply-fsdp=shards=1 "--lower-to-schedule=seq=8" 2>&1 | FileCheck %s --check-prefix=INTERLEAVED
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-tp=size=2 --apply-fsdp=shards=2 "--lower-to-schedule=seq=8" 2>&1 | FileCheck %s --check-prefix=TP
// RUN: parc-opt %S/Inputs/tiny-2-layers-attn-out.mlir "--apply-tp=size=2 sequence-parallel=true" --apply-fsdp=shards=2 "--lower-to-schedule=seq=8" 2>&1 | FileCheck %s --check-prefix=SP
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-fsdp=shards=2 grad-sync=last-micro-batch" "--lower-to-schedule=seq=8 grad-accum=2" 2>&1 | FileCheck %s --check-prefix=DEFER
// Re-running replaces the programs.
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 "--lower-to-schedule=seq=8" --lower-to-schedule 2>/dev/null | FileCheck %s --check-prefix=AGAIN
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 "--lower-to-schedule=seq=8 max-norm=0.5" 2>/dev/null | FileCheck %s --check-prefix=CLIP
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 "--lower-to-schedule=seq=8 max-norm=0" 2>/dev/null | FileCheck %s --check-prefix=NOCLIP

// Sizes of the tiny models (f32 IR, bf16 compute, f32 reduce): a layer holds
// norm 16 + q 16x16 + up 30x16 + down 16x30 = 1232 parameters; the root the
// embedding 100x16 = 1600 (lm_head is tied to it and stored once). A token
// batch is mbs 1 x seq 8, so an activation is 8 x 16 = 128 elements.

// FSDP 2, no remat: one program for both ranks. The root stays gathered from
// the first forward to the end; each layer is gathered one ahead (prefetch 1),
// waited for just before it computes (the gather overlaps the compute step
// between) and freed after its forward; a layer saves 2400 bytes: its input, norm
// output, q, attention output, residual (5 x 128) and up / activation
// (2 x 240) bf16 elements = 2240 bytes, plus fp32 statistics: attention
// logsumexp 8 x 4 heads and norm rstd 8 = 40 x 4 bytes.
// What compute leaves behind is allocated in the program too, and a step's
// highest point is its #parc.peak: a layer's forward and backward peak at
// their largest op (1024 bytes); the loss keeps the bf16 logits and their
// fp32 log-softmax (800 x 6 = 4800 bytes) and the root's ops 320; lm_head's
// backward holds the bf16 logits gradient (1600, the 4800 kept gone) and
// the root's gradients from then on (1600 x (2 bf16 + 4 f32 for the
// reduce) = 9600); a layer's backward leaves its unsharded gradients
// (1232 x 6 = 7392) and its fp32 gradient shards (616 x 4 = 2464).
// FSDP: remark: lower-to-schedule: 1 program for 2 ranks: @all_ranks 56 steps
// FSDP-LABEL: parc.program @all_ranks ranks 2 covers {} micro_batches 1 batch 1 seq 8 {
// FSDP-NEXT: %[[ROOT:.*]] = parc.buffer param_shard "" : tensor<800xbf16>
// FSDP-NEXT: %[[W0:.*]] = parc.buffer param_shard "model.layers.0" : tensor<616xbf16>
// FSDP-NEXT: %[[W1:.*]] = parc.buffer param_shard "model.layers.1" : tensor<616xbf16>
// FSDP-NEXT: %[[GROOT:.*]] = shard.all_gather %[[ROOT]] on @fsdp grid_axes = [0] gather_axis = 0 : tensor<800xbf16> -> tensor<1600xbf16>
// FSDP-NEXT: %[[G0:.*]] = shard.all_gather %[[W0]] on @fsdp grid_axes = [0] gather_axis = 0 : tensor<616xbf16> -> tensor<1232xbf16>
// FSDP-NEXT: parc.wait %[[GROOT]] : tensor<1600xbf16>
// FSDP-NEXT: parc.forward_step "" part "head" micro_batch 0
// FSDP-NEXT: %[[G1:.*]] = shard.all_gather %[[W1]] on @fsdp
// FSDP-NEXT: parc.wait %[[G0]] : tensor<1232xbf16>
// FSDP-NEXT: parc.forward_step "model.layers.0" micro_batch 0 peak <working = 1024>
// FSDP-NEXT: %[[S0:.*]] = parc.save "model.layers.0" micro_batch 0 : tensor<2400xi8>
// FSDP-NEXT: parc.free %[[G0]] : tensor<1232xbf16>
// FSDP-NEXT: parc.wait %[[G1]] : tensor<1232xbf16>
// FSDP-NEXT: parc.forward_step "model.layers.1" micro_batch 0 peak <working = 1024>
// FSDP-NEXT: %[[S1:.*]] = parc.save "model.layers.1" micro_batch 0 : tensor<2400xi8>
// FSDP-NEXT: parc.free %[[G1]] : tensor<1232xbf16>
// FSDP-NEXT: parc.forward_step "" part "tail" micro_batch 0 peak <logits = 4800, saved = 320, blocks = [320, 1600, 3200]>
// FSDP-NEXT: %[[ST:.*]] = parc.save "" part "tail" micro_batch 0 : tensor<320xi8>
// What the loss keeps, one allocation per tensor: the logits and the fp32
// log-softmax.
// FSDP-NEXT: %[[LOGITS:.*]] = parc.alloc logits "" micro_batch 0 : tensor<1600xi8>
// FSDP-NEXT: %[[LSM:.*]] = parc.alloc logits "" micro_batch 0 : tensor<3200xi8>
// FSDP-NEXT: parc.backward_step "" part "tail" micro_batch 0 peak <logits = -3200, gradients = 9600>
// FSDP-NEXT: %[[RG:.*]] = parc.alloc gradients "" micro_batch 0 : tensor<9600xi8>
// FSDP-NEXT: parc.free %[[ST]] : tensor<320xi8>
// FSDP-NEXT: parc.free %[[LOGITS]] : tensor<1600xi8>
// FSDP-NEXT: parc.free %[[LSM]] : tensor<3200xi8>
// FSDP-NEXT: %[[B1:.*]] = shard.all_gather %[[W1]] on @fsdp
// FSDP-NEXT: %[[B0:.*]] = shard.all_gather %[[W0]] on @fsdp
// FSDP-NEXT: parc.wait %[[B1]] : tensor<1232xbf16>
// FSDP-NEXT: parc.backward_step "model.layers.1" micro_batch 0 peak <working = 1024>
// FSDP-NEXT: %[[DG1:.*]] = parc.alloc gradients "model.layers.1" micro_batch 0 : tensor<7392xi8>
// FSDP-NEXT: parc.alloc gradient_shards "model.layers.1" : tensor<2464xi8>
// FSDP-NEXT: parc.free %[[S1]] : tensor<2400xi8>
// FSDP-NEXT: %[[D1:.*]] = parc.buffer gradient "model.layers.1" micro_batch 0 : tensor<1232xf32>
// FSDP-NEXT: %[[R1:.*]] = shard.reduce_scatter %[[D1]] on @fsdp grid_axes = [0] scatter_axis = 0 : tensor<1232xf32> -> tensor<616xf32>
// FSDP-NEXT: parc.free %[[B1]] : tensor<1232xbf16>
// FSDP-NEXT: parc.wait %[[B0]] : tensor<1232xbf16>
// FSDP-NEXT: parc.backward_step "model.layers.0" micro_batch 0 peak <working = 1024>
// FSDP-NEXT: %[[DG0:.*]] = parc.alloc gradients "model.layers.0" micro_batch 0 : tensor<7392xi8>
// FSDP-NEXT: parc.alloc gradient_shards "model.layers.0" : tensor<2464xi8>
// FSDP-NEXT: parc.free %[[S0]]
// One reduce-scatter in flight (FSDP2): layer 1's overlapped layer 0's
// backward and is waited for before layer 0's is issued, which frees the
// gradients it read; the end of the backward waits for the last.
// FSDP-NEXT: parc.wait %[[R1]] : tensor<616xf32>
// FSDP-NEXT: parc.free %[[DG1]] : tensor<7392xi8>
// FSDP-NEXT: parc.buffer gradient "model.layers.0"
// FSDP-NEXT: %[[R0:.*]] = shard.reduce_scatter
// FSDP-NEXT: parc.free %[[B0]]
// FSDP-NEXT: parc.backward_step "" part "head" micro_batch 0
// FSDP-NEXT: parc.wait %[[R0]] : tensor<616xf32>
// FSDP-NEXT: parc.free %[[DG0]] : tensor<7392xi8>
// FSDP-NEXT: %[[DR:.*]] = parc.buffer gradient "" micro_batch 0 : tensor<1600xf32>
// FSDP-NEXT: %[[RR:.*]] = shard.reduce_scatter %[[DR]] on @fsdp grid_axes = [0] scatter_axis = 0 : tensor<1600xf32> -> tensor<800xf32>
// FSDP-NEXT: parc.free %[[GROOT]] : tensor<1600xbf16>
// The root's result is its fp32 gradient shard (800 x 4), beside its input
// until that is freed.
// FSDP-NEXT: parc.wait %[[RR]] peak <gradients = 3200> : tensor<800xf32>
// FSDP-NEXT: parc.alloc gradient_shards "" : tensor<3200xi8>
// FSDP-NEXT: parc.free %[[RG]] : tensor<9600xi8>
// (1600 + 2 x 1232) / 2 shards.
// FSDP-NEXT: parc.clip_grad_norm max_norm 1.000000e+00
// FSDP-NEXT: parc.optimizer_step params 2032
// FSDP-NEXT: }

// Selective remat runs the norm, the adds and the activation as
// checkpointed groups that keep their inputs, beside what q, attention, up
// and down keep for their backward: x, the norm output, q, the attention
// output, the residual, up's and the activation's outputs and down's (6 x
// 128 + 2 x 240 bf16 = 2496 bytes, + 128 of attention statistics). Every
// tensor a backward needs is kept; the recompute rebuilds the norm's rstd
// (32 bytes). Two micro-batches and no pipeline, so F0 B0 F1 B1, a reduce-scatter per
// micro-batch.
// REMAT: @all_ranks 108 steps
// REMAT: parc.program @all_ranks ranks 2 covers {} micro_batches 2 batch 1 seq 8 {
// REMAT: parc.save "model.layers.0" micro_batch 0 : tensor<2624xi8>
// REMAT: parc.backward_step "" part "tail" micro_batch 0
// REMAT: parc.recompute_step "model.layers.1" micro_batch 0 remat <selective> bytes 32
// REMAT-NEXT: parc.backward_step "model.layers.1" micro_batch 0
// Each micro-batch of gradient accumulation reduce-scatters and frees the
// root after its backward and gathers it again (FSDP2's defaults).
// The end of each micro-batch's backward waits for its last reduce-scatter.
// REMAT: parc.backward_step "" part "head" micro_batch 0
// REMAT-NEXT: parc.wait %{{.*}} : tensor<616xf32>
// REMAT-NEXT: parc.free %{{.*}} : tensor<7392xi8>
// REMAT-NEXT: %[[RG:.*]] = parc.buffer gradient "" micro_batch 0 : tensor<1600xf32>
// REMAT-NEXT: %[[RR:.*]] = shard.reduce_scatter %[[RG]] on @fsdp
// REMAT-NEXT: parc.free %{{.*}} : tensor<1600xbf16>
// REMAT-NEXT: parc.wait %[[RR]] : tensor<800xf32>
// REMAT-NEXT: parc.free %{{.*}} : tensor<9600xi8>
// REMAT-NEXT: shard.all_gather %{{.*}} : tensor<800xbf16> -> tensor<1600xbf16>
// REMAT-NEXT: shard.all_gather %{{.*}} : tensor<616xbf16> -> tensor<1232xbf16>
// REMAT-NEXT: parc.wait %{{.*}} : tensor<1600xbf16>
// REMAT-NEXT: parc.forward_step "" part "head" micro_batch 1
// REMAT: parc.recompute_step "model.layers.0" micro_batch 1 remat <selective> bytes 32
// REMAT: parc.buffer gradient "model.layers.0" micro_batch 1 : tensor<1232xf32>
// From the second micro-batch on, a reduce-scatter's result is a shard of
// its own beside the accumulated one until it is added in (the root's
// 800 x 4 bytes).
// REMAT: parc.wait %{{.*}} peak <gradients = 3200> : tensor<800xf32>
// REMAT: parc.optimizer_step params 2032

// PP 2 x FSDP 2, 1F1B with 2 micro-batches: stage 0 runs F0 F1 B0 B1 and
// stage 1 F0 B0 F1 B1; activations (128 bf16) cross the stage boundary in
// forward and their gradients in backward. Full remat saves only the layer
// input (128 bf16 = 256 bytes) and recomputes 2400. Each stage holds a copy
// of the tied embedding / lm_head (1600), whose gradient shards (800 f32)
// are all-reduced between the two stages.
// PP: remark: lower-to-schedule: 2 programs for 4 ranks: @stage_0 94 steps, @stage_1 106 steps
// PP-LABEL: parc.program @stage_0 ranks 2 covers {pp = array<i64: 0>} micro_batches 2 batch 1 seq 8 {
// PP: parc.forward_step "model.layers.1" micro_batch 0
// PP-NEXT: parc.save "model.layers.1" micro_batch 0 : tensor<256xi8>
// PP-NEXT: parc.free
// PP-NEXT: %[[A0:.*]] = parc.buffer activation "model.layers.1" micro_batch 0 : tensor<128xbf16>
// PP-NEXT: shard.send %[[A0]] on @pp grid_axes = [0] destination = [1] : (tensor<128xbf16>) -> tensor<128xbf16>
// PP-NEXT: parc.forward_step "" part "head" micro_batch 1
// PP: shard.send {{.*}} destination = [1]
// PP-NEXT: %[[DA0:.*]] = parc.buffer activation_grad "model.layers.1" micro_batch 0 : tensor<128xbf16>
// PP-NEXT: shard.recv %[[DA0]] on @pp grid_axes = [0] source = [1] : (tensor<128xbf16>) -> tensor<128xbf16>
// PP: parc.recompute_step "model.layers.1" micro_batch 0 remat <full> bytes 2400
// PP-NEXT: parc.backward_step "model.layers.1" micro_batch 0
// PP: parc.backward_step "" part "head" micro_batch 0
// PP-NEXT: parc.wait %{{.*}} : tensor<616xf32>
// PP-NEXT: parc.free %{{.*}} : tensor<7392xi8>
// PP-NEXT: parc.buffer activation_grad "model.layers.1" micro_batch 1
// The root's gradient is reduced once, after the last micro-batch; the
// tied copies are all-reduced once it has landed.
// PP: parc.backward_step "" part "head" micro_batch 1
// PP-NEXT: parc.wait %{{.*}} peak <gradients = 2464> : tensor<616xf32>
// PP-NEXT: parc.free %{{.*}} : tensor<7392xi8>
// PP-NEXT: parc.buffer gradient "" : tensor<1600xf32>
// PP-NEXT: %[[RR:.*]] = shard.reduce_scatter
// PP-NEXT: parc.free
// PP-NEXT: parc.wait %[[RR]] : tensor<800xf32>
// PP-NEXT: parc.free %{{.*}} : tensor<9600xi8>
// PP-NEXT: %[[T0:.*]] = parc.buffer gradient "model.embed.weight" : tensor<800xf32>
// PP-NEXT: shard.all_reduce %[[T0]] on @pp grid_axes = [0] {parc.group = array<i64: 0, 1>} : tensor<800xf32> -> tensor<800xf32>
// PP-NEXT: parc.clip_grad_norm max_norm 1.000000e+00
// PP-NEXT: parc.optimizer_step params 2032
// PP-NEXT: }
// PP-LABEL: parc.program @stage_1 ranks 2 covers {pp = array<i64: 1>} micro_batches 2 batch 1 seq 8 {
// PP: %[[R0:.*]] = parc.buffer activation "model.layers.2" micro_batch 0 : tensor<128xbf16>
// PP-NEXT: shard.recv %[[R0]] on @pp grid_axes = [0] source = [0]
// The last stage computes the loss: lm_head's backward holds the root's
// gradients and, accumulating over the micro-batches, their shards (9600 +
// 800 x 4 bytes).
// PP: parc.forward_step "" part "tail" micro_batch 0 peak <logits = 4800, saved = 320, blocks = [320, 1600, 3200]>
// PP-NEXT: parc.save "" part "tail" micro_batch 0 : tensor<320xi8>
// PP-NEXT: parc.alloc logits "" micro_batch 0 : tensor<1600xi8>
// PP-NEXT: parc.alloc logits "" micro_batch 0 : tensor<3200xi8>
// PP-NEXT: parc.backward_step "" part "tail" micro_batch 0 peak <logits = -3200, gradients = 12800>
// PP-NEXT: parc.alloc gradients "" micro_batch 0 : tensor<9600xi8>
// PP-NEXT: parc.alloc gradient_shards "" : tensor<3200xi8>
// PP: parc.backward_step "model.layers.2" micro_batch 0
// PP: parc.buffer activation_grad "model.layers.2" micro_batch 0 : tensor<128xbf16>
// PP-NEXT: shard.send {{.*}} on @pp grid_axes = [0] destination = [0]
// PP-NEXT: parc.wait %{{.*}} : tensor<616xf32>
// PP-NEXT: parc.free %{{.*}} : tensor<7392xi8>
// PP-NEXT: parc.buffer activation "model.layers.2" micro_batch 1
// PP: shard.all_reduce {{.*}} on @pp grid_axes = [0] {parc.group = array<i64: 0, 1>} : tensor<800xf32>
// PP-NEXT: parc.clip_grad_norm max_norm 1.000000e+00
// PP-NEXT: parc.optimizer_step params 2032

// Interleaved 1F1B, 2 stages x 2 chunks: stage 1 holds layers 1 (chunk 0)
// and 3 (chunk 1); chunk 0 sends on to stage 0's chunk 1, chunk 1 ends in
// the loss. FSDP 1 of f32 master weights computing in bf16 still gathers,
// over a group of one: the gather is the bf16 copy the forward runs on.
// INTERLEAVED: remark: lower-to-schedule: 2 programs for 2 ranks
// INTERLEAVED-LABEL: parc.program @stage_1 ranks 1 covers {pp = array<i64: 1>} micro_batches 2 batch 1 seq 8 {
// INTERLEAVED-NEXT: parc.buffer param_shard "" : tensor<1600xbf16>
// INTERLEAVED-NEXT: parc.buffer param_shard "model.layers.1" : tensor<1232xbf16>
// INTERLEAVED-NEXT: parc.buffer param_shard "model.layers.3" : tensor<1232xbf16>
// INTERLEAVED-NEXT: parc.buffer activation "model.layers.1" micro_batch 0
// INTERLEAVED-NEXT: shard.recv {{.*}} source = [0]
// INTERLEAVED-NEXT: shard.all_gather %{{.*}} on @fsdp grid_axes = [0] gather_axis = 0 : tensor<1600xbf16> -> tensor<1600xbf16>
// INTERLEAVED-NEXT: shard.all_gather
// INTERLEAVED-NEXT: parc.wait
// INTERLEAVED-NEXT: parc.wait
// INTERLEAVED-NEXT: parc.forward_step "model.layers.1" micro_batch 0
// INTERLEAVED-NEXT: parc.save "model.layers.1" micro_batch 0 : tensor<2400xi8>
// INTERLEAVED-NEXT: parc.free
// INTERLEAVED-NEXT: parc.buffer activation "model.layers.1" micro_batch 0
// INTERLEAVED-NEXT: shard.send {{.*}} destination = [0]
// INTERLEAVED: parc.forward_step "model.layers.3" micro_batch 0 chunk 1
// INTERLEAVED-NEXT: parc.save "model.layers.3" micro_batch 0 chunk 1
// INTERLEAVED-NEXT: parc.free
// INTERLEAVED-NEXT: parc.forward_step "" part "tail" micro_batch 0
// INTERLEAVED-NEXT: parc.save "" part "tail"
// INTERLEAVED-NEXT: parc.alloc logits ""
// INTERLEAVED-NEXT: parc.alloc logits ""
// INTERLEAVED-NEXT: parc.backward_step "" part "tail" micro_batch 0
// INTERLEAVED-NEXT: parc.alloc gradients ""
// INTERLEAVED-NEXT: parc.alloc gradient_shards ""
// INTERLEAVED-NEXT: parc.free
// INTERLEAVED-NEXT: parc.free
// INTERLEAVED-NEXT: parc.free
// INTERLEAVED-NEXT: shard.all_gather
// INTERLEAVED-NEXT: parc.wait
// INTERLEAVED-NEXT: parc.backward_step "model.layers.3" micro_batch 0 chunk 1
// One shard: no gradient to reduce-scatter; the optimizer updates all
// (1600 + 2 x 1232) parameters.
// INTERLEAVED-NOT: shard.reduce_scatter
// INTERLEAVED: parc.optimizer_step params 4064

// TP 2 x FSDP 2: q stays replicated (no linear consumes the attention), up
// is column-parallel (15 x 16, padded to 16 x 16) and down row-parallel
// (16 x 15): 16 + 256 + 256 + 240 = 768 per layer, the vocab-parallel
// embedding 50 x 16 = 800. The embedding and down all-reduce their outputs
// (128 bf16); in backward, up's input gradient and lm_head's are
// all-reduced; the logits (2 x 400 bf16) are all-gathered.
// TP: remark: lower-to-schedule: 1 program for 4 ranks
// TP-LABEL: parc.program @all_ranks ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
// TP-NEXT: parc.buffer param_shard "" : tensor<400xbf16>
// TP-NEXT: parc.buffer param_shard "model.layers.0" : tensor<384xbf16>
// TP: parc.forward_step "" part "head" micro_batch 0
// TP-NEXT: %[[E:.*]] = parc.buffer activation "" micro_batch 0 : tensor<128xbf16>
// TP-NEXT: shard.all_reduce %[[E]] on @tp grid_axes = [0] : tensor<128xbf16> -> tensor<128xbf16>
// TP: parc.forward_step "model.layers.0" micro_batch 0
// TP-NEXT: %[[D:.*]] = parc.buffer activation "model.layers.0" micro_batch 0 : tensor<128xbf16>
// TP-NEXT: shard.all_reduce %[[D]] on @tp
// TP: parc.forward_step "" part "tail" micro_batch 0
// TP-NEXT: %[[L:.*]] = parc.buffer activation "" micro_batch 0 : tensor<400xbf16>
// TP-NEXT: shard.all_gather %[[L]] on @tp grid_axes = [0] gather_axis = 0 : tensor<400xbf16> -> tensor<800xbf16>
// TP-NEXT: parc.save "" part "tail" micro_batch 0
// TP-NEXT: parc.alloc logits "" micro_batch 0
// TP-NEXT: parc.alloc logits "" micro_batch 0
// TP-NEXT: parc.backward_step "" part "tail" micro_batch 0
// TP-NEXT: parc.buffer activation_grad "" micro_batch 0 : tensor<128xbf16>
// TP-NEXT: shard.all_reduce {{.*}} on @tp
// TP: parc.backward_step "model.layers.1" micro_batch 0
// TP-NEXT: parc.buffer activation_grad "model.layers.1" micro_batch 0 : tensor<128xbf16>
// TP-NEXT: shard.all_reduce {{.*}} on @tp
// TP: parc.backward_step "" part "head" micro_batch 0
// TP-NEXT: parc.wait %{{.*}} : tensor<384xf32>
// TP-NEXT: parc.free
// TP-NEXT: parc.buffer gradient "" micro_batch 0 : tensor<800xf32>
// (800 + 2 x 768) / 2.
// TP: parc.optimizer_step params 1168

// Sequence parallel: all-gather (64 -> 128) before the column-parallel up,
// reduce-scatter (128 -> 64) after down; backward swaps them.
// SP: parc.forward_step "model.layers.0" micro_batch 0
// SP-NEXT: parc.buffer activation "model.layers.0" micro_batch 0 : tensor<64xbf16>
// SP-NEXT: shard.all_gather {{.*}} on @tp grid_axes = [0] gather_axis = 0 : tensor<64xbf16> -> tensor<128xbf16>
// SP-NEXT: parc.buffer activation "model.layers.0" micro_batch 0 : tensor<128xbf16>
// SP-NEXT: shard.reduce_scatter {{.*}} on @tp grid_axes = [0] scatter_axis = 0 : tensor<128xbf16> -> tensor<64xbf16>
// SP: parc.backward_step "model.layers.1" micro_batch 0
// SP-NEXT: parc.buffer activation_grad "model.layers.1" micro_batch 0 : tensor<64xbf16>
// SP-NEXT: shard.all_gather {{.*}} : tensor<64xbf16> -> tensor<128xbf16>
// SP-NEXT: parc.buffer activation_grad "model.layers.1" micro_batch 0 : tensor<128xbf16>
// SP-NEXT: shard.reduce_scatter {{.*}} : tensor<128xbf16> -> tensor<64xbf16>

// AGAIN-COUNT-1: parc.program
// AGAIN-NOT: parc.program

// Clipping to the plan's max-norm (torchtitan's max_norm, 1.0 by default) is
// the step between the last reduction and the optimizer; 0 plans none.
// CLIP-LABEL: parc.program @all_ranks
// CLIP: parc.clip_grad_norm max_norm 5.000000e-01
// CLIP-NEXT: parc.optimizer_step params 2032
// NOCLIP-LABEL: parc.program @all_ranks
// NOCLIP-NOT: parc.clip_grad_norm
// NOCLIP: parc.optimizer_step params 2032

// FSDP 2, gradients reduce-scattered after the last micro-batch: micro-batch
// 0's backward keeps each unit's unsharded fp32 gradients (1232 x 4 = 4928
// bytes a layer) and issues no reduce-scatter; micro-batch 1 folds its
// gradients into them, and one reduce-scatter a unit, of the whole
// accumulated buffer (no micro-batch), frees them when it completes.
// DEFER-LABEL: parc.program @all_ranks ranks 2 covers {} micro_batches 2
// DEFER: parc.backward_step "model.layers.1" micro_batch 0
// DEFER-NEXT: %[[ACC1:.*]] = parc.alloc gradients "model.layers.1" micro_batch 0 : tensor<4928xi8>
// DEFER-NOT: shard.reduce_scatter
// DEFER: parc.backward_step "model.layers.0" micro_batch 0
// DEFER-NEXT: %[[ACC0:.*]] = parc.alloc gradients "model.layers.0" micro_batch 0 : tensor<4928xi8>
// DEFER-NOT: shard.reduce_scatter
// DEFER: parc.backward_step "model.layers.1" micro_batch 1
// DEFER: %[[G1:.*]] = parc.buffer gradient "model.layers.1" : tensor<1232xf32>
// DEFER-NEXT: %[[R1:.*]] = shard.reduce_scatter %[[G1]] on @fsdp
// DEFER: parc.backward_step "model.layers.0" micro_batch 1
// DEFER: parc.wait %[[R1]] : tensor<616xf32>
// DEFER-NEXT: parc.free %[[ACC1]] : tensor<4928xi8>
// DEFER-NEXT: %[[G0:.*]] = parc.buffer gradient "model.layers.0" : tensor<1232xf32>
// DEFER-NEXT: %[[R0:.*]] = shard.reduce_scatter %[[G0]] on @fsdp
// DEFER: parc.wait %[[R0]] : tensor<616xf32>
// DEFER-NEXT: parc.free %[[ACC0]] : tensor<4928xi8>
// DEFER-NEXT: %[[GR:.*]] = parc.buffer gradient "" : tensor<1600xf32>
// DEFER-NEXT: shard.reduce_scatter %[[GR]] on @fsdp
// DEFER-NOT: shard.reduce_scatter
// DEFER: parc.optimizer_step
