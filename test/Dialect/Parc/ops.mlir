// RUN: parc-opt %s | parc-opt | FileCheck %s
// RUN: parc-opt %s --mlir-print-op-generic | parc-opt | FileCheck %s

// A two-layer decoder with every structure and forward op of the dialect.

// CHECK-LABEL: parc.model @tiny class "TinyForCausalLM"
parc.model @tiny class "TinyForCausalLM" attributes {parc.source = "hand"} {
  // CHECK: parc.module @model "TinyModel" composite
  parc.module @model "TinyModel" composite {
    // CHECK: parc.module @embed_tokens "Embedding" leaf
    // CHECK-NEXT: parc.param @weight : tensor<128x16xf32>
    parc.module @embed_tokens "Embedding" leaf {
      parc.param @weight : tensor<128x16xf32>
    }
    // CHECK: parc.module @layers "ModuleList" list
    parc.module @layers "ModuleList" list {
      parc.module @"0" "TinyDecoderLayer" composite attributes {layer_type = "sliding_attention"} {
        parc.module @self_attn "TinyAttention" composite {
          parc.module @q_proj "Linear" leaf {
            parc.param @weight : tensor<16x16xf32>
            parc.param @bias : tensor<16xf32>
          }
          parc.module @k_proj "Linear" leaf {
            parc.param @weight : tensor<8x16xf32>
          }
          parc.module @o_proj "Linear" leaf {
            parc.param @weight : tensor<16x16xf32>
          }
          parc.module @k_norm "RMSNorm" leaf {
            parc.param @weight : tensor<4xf32>
          }
          // CHECK: func.func @forward
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            // CHECK: parc.linear %{{.*}}, @q_proj::@weight bias @q_proj::@bias : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
            %q = parc.linear %x, @q_proj::@weight bias @q_proj::@bias : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
            %k = parc.linear %x, @k_proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
            // CHECK: parc.rms_norm %{{.*}}, @k_norm::@weight {eps = {{.*}} : f64, unit_offset} : tensor<?x?x8xf32>
            %kn = parc.rms_norm %k, @k_norm::@weight {eps = 1.0e-6 : f64, unit_offset} : tensor<?x?x8xf32>
            // CHECK: parc.rope %{{.*}} {head_dim = 4 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x16xf32>
            %qr = parc.rope %q {head_dim = 4 : i64, theta = 1.0e4 : f64} : tensor<?x?x16xf32>
            %kr = parc.rope %kn {head_dim = 4 : i64, theta = 1.0e4 : f64, scaling = {factor = 8.0 : f64, rope_type = "llama3"}} : tensor<?x?x8xf32>
            // CHECK: parc.attention {{.*}} {causal, head_dim = 4 : i64, k_eq_v, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 5.000000e-01 : f64, sliding_window = 8 : i64, softcap = 5.000000e+01 : f64}
            %a = parc.attention %qr, %kr, %k {causal, head_dim = 4 : i64, k_eq_v, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64, sliding_window = 8 : i64, softcap = 50.0 : f64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
            %o = parc.linear %a, @o_proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
            return %o : tensor<?x?x16xf32>
          }
        }
        parc.module @mlp "TinyMLP" composite {
          parc.module @gate_proj "Linear" leaf {
            parc.param @weight : tensor<32x16xf32>
          }
          parc.module @up_proj "Linear" leaf {
            parc.param @weight : tensor<32x16xf32>
          }
          parc.module @down_proj "Linear" leaf {
            parc.param @weight : tensor<16x32xf32>
          }
          parc.module @act_fn "SiLU" leaf {
          }
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            %g = parc.linear %x, @gate_proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
            // CHECK: parc.activation silu %{{.*}} : tensor<?x?x32xf32>
            %s = parc.activation silu %g : tensor<?x?x32xf32>
            %u = parc.linear %x, @up_proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
            // CHECK: parc.mul %{{.*}}, %{{.*}} : tensor<?x?x32xf32>
            %m = parc.mul %s, %u : tensor<?x?x32xf32>
            %d = parc.linear %m, @down_proj::@weight : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
            return %d : tensor<?x?x16xf32>
          }
        }
        parc.module @input_layernorm "RMSNorm" leaf {
          parc.param @weight : tensor<16xf32>
        }
        parc.module @post_attention_layernorm "LayerNorm" leaf {
          parc.param @weight : tensor<16xf32>
          parc.param @bias : tensor<16xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %n = parc.rms_norm %x, @input_layernorm::@weight {eps = 1.0e-6 : f64} : tensor<?x?x16xf32>
          // CHECK: parc.call @self_attn(%{{.*}}) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %a = parc.call @self_attn(%n) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          // CHECK: parc.add %{{.*}}, %{{.*}} : tensor<?x?x16xf32>
          %r = parc.add %x, %a : tensor<?x?x16xf32>
          // CHECK: parc.layer_norm %{{.*}}, @post_attention_layernorm::@weight bias @post_attention_layernorm::@bias {eps = {{.*}} : f64}
          %n2 = parc.layer_norm %r, @post_attention_layernorm::@weight bias @post_attention_layernorm::@bias {eps = 1.0e-5 : f64} : tensor<?x?x16xf32>
          %m = parc.call @mlp(%n2) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %r, %m : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    parc.module @norm "RMSNorm" leaf {
      parc.param @weight : tensor<16xf32>
    }
    func.func @forward(%ids: tensor<?x?xi64>) -> tensor<?x?x16xf32> {
      // CHECK: parc.embedding %{{.*}}, @embed_tokens::@weight {scale = 4.000000e+00 : f64} : tensor<?x?xi64> -> tensor<?x?x16xf32>
      %e = parc.embedding %ids, @embed_tokens::@weight {scale = 4.0 : f64} : tensor<?x?xi64> -> tensor<?x?x16xf32>
      // CHECK: parc.call @layers::@"0"
      %h = parc.call @layers::@"0"(%e) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      %n = parc.rms_norm %h, @norm::@weight {eps = 1.0e-6 : f64} : tensor<?x?x16xf32>
      return %n : tensor<?x?x16xf32>
    }
  }
  parc.module @lm_head "Linear" leaf {
    parc.param @weight : tensor<128x16xf32>
  }
  func.func @forward(%ids: tensor<?x?xi64>, %labels: tensor<?x?xi64>) -> tensor<f32> {
    %h = parc.call @model(%ids) : (tensor<?x?xi64>) -> tensor<?x?x16xf32>
    %logits = parc.linear %h, @lm_head::@weight : tensor<?x?x16xf32> -> tensor<?x?x128xf32>
    // CHECK: parc.softcap %{{.*}} {cap = 3.000000e+01 : f64} : tensor<?x?x128xf32>
    %capped = parc.softcap %logits {cap = 30.0 : f64} : tensor<?x?x128xf32>
    // CHECK: parc.cross_entropy %{{.*}}, %{{.*}} : tensor<?x?x128xf32>, tensor<?x?xi64> -> tensor<f32>
    %loss = parc.cross_entropy %capped, %labels : tensor<?x?x128xf32>, tensor<?x?xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
  // CHECK: parc.tie [@model::@embed_tokens::@weight, @lm_head::@weight]
  parc.tie [@model::@embed_tokens::@weight, @lm_head::@weight]
}

// -----
// Vision ops: patches, positions, pooling, projection and merging.

// CHECK-LABEL: parc.model @vision class "TinyVision"
parc.model @vision class "TinyVision" {
  parc.module @patch "Conv2d" leaf {
    parc.param @weight : tensor<8x3x4x4xf32>
    parc.param @bias : tensor<8xf32>
  }
  parc.module @pos "Embedding" leaf {
    parc.param @weight : tensor<16x8xf32>
  }
  // One table per image axis (Gemma 4's patch grid): 4 x 4 positions.
  parc.param @grid_pos : tensor<2x4x8xf32>
  parc.param @proj : tensor<8x16xf32>
  parc.module @dict "ModuleDict" dict {
    parc.module @vision "Identity" leaf {
    }
  }
  func.func @forward(%px: tensor<?x3x16x16xf32>, %text: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
    // CHECK: parc.patch_embedding %{{.*}}, @patch::@weight bias @patch::@bias : tensor<?x3x16x16xf32> -> tensor<?x16x8xf32>
    %p = parc.patch_embedding %px, @patch::@weight bias @patch::@bias : tensor<?x3x16x16xf32> -> tensor<?x16x8xf32>
    // CHECK: parc.position_embedding %{{.*}}, @pos::@weight : tensor<?x16x8xf32>
    %e0 = parc.position_embedding %p, @pos::@weight : tensor<?x16x8xf32>
    // CHECK: parc.position_embedding %{{.*}}, @grid_pos : tensor<?x16x8xf32>
    %e = parc.position_embedding %e0, @grid_pos : tensor<?x16x8xf32>
    // CHECK: parc.avg_pool_tokens %{{.*}} {kernel = 2 : i64} : tensor<?x16x8xf32> -> tensor<?x4x8xf32>
    %pooled = parc.avg_pool_tokens %e {kernel = 2 : i64} : tensor<?x16x8xf32> -> tensor<?x4x8xf32>
    // CHECK: parc.matmul %{{.*}}, @proj : tensor<?x4x8xf32> -> tensor<?x4x16xf32>
    %img = parc.matmul %pooled, @proj : tensor<?x4x8xf32> -> tensor<?x4x16xf32>
    %g = parc.activation gelu_tanh %img : tensor<?x4x16xf32>
    // CHECK: parc.merge_image_features %{{.*}}, %{{.*}} : tensor<?x?x16xf32>, tensor<?x4x16xf32>
    %m = parc.merge_image_features %text, %g : tensor<?x?x16xf32>, tensor<?x4x16xf32>
    return %m : tensor<?x?x16xf32>
  }
}

// -----
// A parallelisation plan: a grid and an FSDP unit sharding a parameter.

// CHECK-LABEL: parc.model @planned class "M"
parc.model @planned class "M" {
  // CHECK: shard.grid @fsdp(shape = 4)
  shard.grid @fsdp(shape = 4)
  parc.module @proj "Linear" leaf {
    parc.param @weight : tensor<6x8xf32>
  }
  // CHECK: parc.fsdp_unit @root path "" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = false}
  parc.fsdp_unit @root path "" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = false} {
    // CHECK-NEXT: %[[S:.*]] = shard.sharding @fsdp split_axes = {{\[\[}}0]] : !shard.sharding
    %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
    // CHECK-NEXT: parc.shard_param @proj::@weight to %[[S]] {padded_dim0 = 8 : i64} : !shard.sharding
    parc.shard_param @proj::@weight to %s {padded_dim0 = 8 : i64} : !shard.sharding
  }
}

// -----
// Typed plan decisions: a layer's remat and a parameter's TP role.

// CHECK-LABEL: parc.model @decided class "M"
// CHECK-SAME: parc.pp = #parc.pp<stages = 1, schedule = "1f1b", chunks = 1, microbatches = 1, in_flight = [1], bubble = 0.000000e+00 : f64>
parc.model @decided class "M" attributes {parc.pp = #parc.pp<microbatches = 1, bubble = 0.0 : f64, stages = 1, schedule = "1f1b", chunks = 1, in_flight = [1]>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, B0]>], parc.tp_size = 2 : i64} {
  // CHECK: parc.module @layer "Block" leaf attributes {parc.remat = #parc.remat<selective>}
  parc.module @layer "Block" leaf attributes {parc.remat = #parc.remat<selective>} {
    // CHECK-NEXT: parc.param @weight : tensor<8x8xf32> {parc.tp = #parc.tp<colwise>}
    parc.param @weight : tensor<8x8xf32> {parc.tp = #parc.tp<colwise>}
  }
}

// -----
// TP sharding records: a forward's argument shards, each op's result shards,
// the collectives its kernel runs and the vocab-split operands it gathers.

// CHECK-LABEL: parc.model @tp_records class "M"
parc.model @tp_records class "M" attributes {parc.tp_size = 2 : i64} {
  parc.module @head "Linear" leaf {
    parc.param @weight : tensor<8x4xf32> {parc.tp = #parc.tp<vocab>}
  }
  // CHECK: func.func @forward(%{{.*}}: tensor<?x?x4xf32>, %{{.*}}: tensor<?x?xi64>) -> tensor<f32> attributes {parc.tp_shards = #parc.tp_shards<values = [sequence, full]>}
  func.func @forward(%x: tensor<?x?x4xf32>, %labels: tensor<?x?xi64>) -> tensor<f32> attributes {parc.tp_shards = #parc.tp_shards<values = [sequence, full]>} {
    // CHECK-NEXT: parc.linear %{{.*}}, @head::@weight {parc.tp_shards = #parc.tp_shards<values = [vocab], comms = [gather_sequence]>}
    %l = parc.linear %x, @head::@weight {parc.tp_shards = #parc.tp_shards<values = [vocab], comms = [gather_sequence]>} : tensor<?x?x4xf32> -> tensor<?x?x8xf32>
    // CHECK-NEXT: parc.cross_entropy %{{.*}}, %{{.*}} {parc.tp_shards = #parc.tp_shards<values = [full], gather = [0]>}
    %loss = parc.cross_entropy %l, %labels {parc.tp_shards = #parc.tp_shards<values = [full], gather = [0]>} : tensor<?x?x8xf32>, tensor<?x?xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
}

// -----
// A lowered schedule: a program per rank kind, its steps on shard collectives.

// CHECK-LABEL: parc.model @scheduled class "M"
parc.model @scheduled class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  // CHECK: parc.program @stage_0 ranks 2 covers {pp = array<i64: 0>} micro_batches 1 batch 1 seq 8 {
  parc.program @stage_0 ranks 2 covers {pp = array<i64: 0>} micro_batches 1 batch 1 seq 8 {
    // CHECK-NEXT: %[[W:.*]] = parc.buffer param_shard "layers.0" : tensor<8xbf16>
    %w = parc.buffer param_shard "layers.0" : tensor<8xbf16>
    // CHECK-NEXT: %[[G:.*]] = shard.all_gather %[[W]] on @fsdp grid_axes = [0] gather_axis = 0 : tensor<8xbf16> -> tensor<16xbf16>
    %g = shard.all_gather %w on @fsdp grid_axes = [0] gather_axis = 0 : tensor<8xbf16> -> tensor<16xbf16>
    // CHECK-NEXT: parc.forward_step "" part "head" micro_batch 0
    parc.forward_step "" part "head" micro_batch 0
    // CHECK-NEXT: parc.wait %[[G]] : tensor<16xbf16>
    parc.wait %g : tensor<16xbf16>
    // `blocks`: the tensors of the step's rise, for an allocator model.
    // CHECK-NEXT: parc.forward_step "layers.0" micro_batch 0 chunk 1 peak <working = 96, logits = -16, blocks = [32, 64]>
    parc.forward_step "layers.0" micro_batch 0 chunk 1 peak <blocks = [32, 64], logits = -16, working = 96>
    // CHECK-NEXT: %[[S:.*]] = parc.save "layers.0" micro_batch 0 chunk 1 : tensor<64xi8>
    %s = parc.save "layers.0" micro_batch 0 chunk 1 : tensor<64xi8>
    // CHECK-NEXT: parc.free %[[G]] : tensor<16xbf16>
    parc.free %g : tensor<16xbf16>
    // CHECK-NEXT: %[[X:.*]] = parc.buffer activation "layers.0" micro_batch 0 : tensor<32xbf16>
    %x = parc.buffer activation "layers.0" micro_batch 0 : tensor<32xbf16>
    // CHECK-NEXT: shard.send %[[X]] on @pp grid_axes = [0] destination = [1] : (tensor<32xbf16>) -> tensor<32xbf16>
    %sent = shard.send %x on @pp grid_axes = [0] destination = [1] : (tensor<32xbf16>) -> tensor<32xbf16>
    %dx = parc.buffer activation_grad "layers.0" micro_batch 0 : tensor<32xbf16>
    // CHECK: shard.recv %{{.*}} on @pp grid_axes = [0] source = [1] : (tensor<32xbf16>) -> tensor<32xbf16>
    %got = shard.recv %dx on @pp grid_axes = [0] source = [1] : (tensor<32xbf16>) -> tensor<32xbf16>
    %g2 = shard.all_gather %w on @fsdp grid_axes = [0] gather_axis = 0 : tensor<8xbf16> -> tensor<16xbf16>
    parc.wait %g2 : tensor<16xbf16>
    // CHECK: parc.recompute_step "layers.0" micro_batch 0 chunk 1 remat <full> bytes 128
    parc.recompute_step "layers.0" micro_batch 0 chunk 1 remat <full> bytes 128
    // CHECK-NEXT: parc.backward_step "layers.0" micro_batch 0 chunk 1
    parc.backward_step "layers.0" micro_batch 0 chunk 1
    // CHECK-NEXT: %[[A:.*]] = parc.alloc gradients "layers.0" micro_batch 0 : tensor<48xi8>
    %a = parc.alloc gradients "layers.0" micro_batch 0 : tensor<48xi8>
    // CHECK-NEXT: parc.alloc gradient_shards "layers.0" : tensor<32xi8>
    %sh = parc.alloc gradient_shards "layers.0" : tensor<32xi8>
    // CHECK-NEXT: parc.free %[[S]] : tensor<64xi8>
    parc.free %s : tensor<64xi8>
    // CHECK-NEXT: parc.buffer gradient "layers.0" micro_batch 0 : tensor<16xf32>
    %d = parc.buffer gradient "layers.0" micro_batch 0 : tensor<16xf32>
    // CHECK-NEXT: %[[R:.*]] = shard.reduce_scatter %{{.*}} on @fsdp grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<8xf32>
    %r = shard.reduce_scatter %d on @fsdp grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<8xf32>
    parc.free %g2 : tensor<16xbf16>
    parc.backward_step "" part "head" micro_batch 0
    // CHECK: parc.wait %[[R]] peak <gradients = 32> : tensor<8xf32>
    parc.wait %r peak <gradients = 32> : tensor<8xf32>
    // CHECK-NEXT: parc.free %[[A]] : tensor<48xi8>
    parc.free %a : tensor<48xi8>
    // CHECK: shard.all_reduce %{{.*}} on @pp grid_axes = [0] {parc.group = array<i64: 0, 1>} : tensor<8xf32> -> tensor<8xf32>
    %t = shard.all_reduce %r on @pp grid_axes = [0] {parc.group = array<i64: 0, 1>} : tensor<8xf32> -> tensor<8xf32>
    // CHECK-NEXT: parc.clip_grad_norm max_norm 1.000000e+00
    parc.clip_grad_norm max_norm 1.0
    // CHECK-NEXT: parc.optimizer_step params 8
    parc.optimizer_step params 8
  }
  // CHECK: parc.program @stage_1 ranks 2 covers {pp = array<i64: 1>} micro_batches 1 batch 1 seq 8 {
  parc.program @stage_1 ranks 2 covers {pp = array<i64: 1>} micro_batches 1 batch 1 seq 8 {
    parc.optimizer_step params 0
  }
}

// -----
// A tie group kept as one copy per stage.

// CHECK-LABEL: parc.model @tied_copies class "M"
// CHECK-SAME: parc.pp_tied_copies = [#parc.pp_tied<params = [@embed::@weight, @head::@weight], stages = [0, 1]>]
parc.model @tied_copies class "M" attributes {parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 2, in_flight = [2, 1], bubble = 0.0 : f64>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, F1, B0, B1]>, #parc.pp_steps<stage = 1, steps = [F0, B0, F1, B1]>], parc.pp_tied_copies = [#parc.pp_tied<params = [@embed::@weight, @head::@weight], stages = [0, 1]>]} {
}

// -----
// Gemma 4's value norm: a module without a weight, and the unscaled
// per-head RMS normalisation its parent's forward applies.

// CHECK-LABEL: parc.model @value_norm class "M"
parc.model @value_norm class "M" {
  // CHECK: parc.module @v_norm "Gemma4RMSNorm" leaf {
  // CHECK-NEXT: }
  parc.module @v_norm "Gemma4RMSNorm" leaf {
  }
  func.func @forward(%v: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
    // CHECK: parc.rms_normalize %{{.*}} {eps = 9.9999999999999995E-7 : f64, group_size = 8 : i64} : tensor<?x?x16xf32>
    %n = parc.rms_normalize %v {eps = 1.0e-6 : f64, group_size = 8 : i64} : tensor<?x?x16xf32>
    return %n : tensor<?x?x16xf32>
  }
}
