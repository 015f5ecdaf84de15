// RUN: parc-opt %s -split-input-file -verify-diagnostics

parc.model @tie_shapes class "M" {
  parc.module @a "Embedding" leaf {
    parc.param @weight : tensor<16x8xf32>
  }
  parc.module @b "Linear" leaf {
    parc.param @weight : tensor<8x16xf32>
  }
  // expected-error@+1 {{ties parameters of different types: @a::@weight is 'tensor<16x8xf32>' but @b::@weight is 'tensor<8x16xf32>'}}
  parc.tie [@a::@weight, @b::@weight]
}

// -----

parc.model @tie_dtypes class "M" {
  parc.param @a : tensor<4xf32>
  parc.param @b : tensor<4xbf16>
  // expected-error@+1 {{ties parameters of different types}}
  parc.tie [@a, @b]
}

// -----

parc.model @tie_unknown class "M" {
  parc.param @a : tensor<4xf32>
  // expected-error@+1 {{@missing::@weight does not name a parc.param}}
  parc.tie [@a, @missing::@weight]
}

// -----

parc.model @tie_single class "M" {
  parc.param @a : tensor<4xf32>
  // expected-error@+1 {{needs at least two parameters, got 1}}
  parc.tie [@a]
}

// -----

parc.model @tie_twice class "M" {
  parc.param @a : tensor<4xf32>
  parc.param @b : tensor<4xf32>
  parc.param @c : tensor<4xf32>
  parc.tie [@a, @b]
  // expected-error@+1 {{@a appears in more than one tie group}}
  parc.tie [@a, @c]
}

// -----

parc.model @leaf_child class "M" {
  // expected-error@+1 {{of kind 'leaf' has child module @inner}}
  parc.module @outer "Linear" leaf {
    parc.module @inner "Linear" leaf {
    }
  }
}

// -----

parc.model @list_names class "M" {
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf {
    }
    // expected-error@+1 {{in a list container must be named @"1", got @two}}
    parc.module @two "Block" leaf {
    }
  }
}

// -----

parc.model @container_param class "M" {
  // expected-error@+1 {{is a container (sequential) and may hold only modules, found 'parc.param'}}
  parc.module @seq "Sequential" sequential {
    parc.param @weight : tensor<4xf32>
  }
}

// -----

parc.model @func_name class "M" {
  parc.module @m "Block" composite {
    // expected-error@+1 {{in a module must be named @forward, got @step}}
    func.func @step() {
      return
    }
  }
}

// -----

parc.model @dynamic_param class "M" {
  // expected-error@+1 {{attribute 'type' failed to satisfy constraint}}
  parc.param @w : tensor<?x4xf32>
}

// -----

// expected-error@+1 {{expects parent op to be one of 'parc.model, parc.module'}}
parc.module @orphan "Linear" leaf {
}

// -----

parc.model @linear_in class "M" {
  parc.module @proj "Linear" leaf {
    parc.param @weight : tensor<8x16xf32>
  }
  func.func @forward(%x: tensor<?x?x12xf32>) -> tensor<?x?x8xf32> {
    // expected-error@+1 {{input features 12 do not match weight @proj::@weight of 'tensor<8x16xf32>'}}
    %y = parc.linear %x, @proj::@weight : tensor<?x?x12xf32> -> tensor<?x?x8xf32>
    return %y : tensor<?x?x8xf32>
  }
}

// -----

parc.model @linear_out class "M" {
  parc.module @proj "Linear" leaf {
    parc.param @weight : tensor<8x16xf32>
  }
  func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x9xf32> {
    // expected-error@+1 {{result features 9 do not match weight @proj::@weight}}
    %y = parc.linear %x, @proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x9xf32>
    return %y : tensor<?x?x9xf32>
  }
}

// -----

parc.model @linear_missing class "M" {
  func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x8xf32> {
    // expected-error@+1 {{weight @proj::@weight does not name a parc.param of the enclosing module}}
    %y = parc.linear %x, @proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
    return %y : tensor<?x?x8xf32>
  }
}

// -----

parc.model @linear_bias class "M" {
  parc.module @proj "Linear" leaf {
    parc.param @weight : tensor<8x16xf32>
    parc.param @bias : tensor<16xf32>
  }
  func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x8xf32> {
    // expected-error@+1 {{bias @proj::@bias has 16 elements, expected 8}}
    %y = parc.linear %x, @proj::@weight bias @proj::@bias : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
    return %y : tensor<?x?x8xf32>
  }
}

// -----

parc.model @linear_rank class "M" {
  parc.module @proj "Linear" leaf {
    parc.param @weight : tensor<8xf32>
  }
  func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    // expected-error@+1 {{weight @proj::@weight must have rank 2, got 'tensor<8xf32>'}}
    %y = parc.linear %x, @proj::@weight : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    return %y : tensor<?x?x8xf32>
  }
}

// -----

parc.model @embedding_width class "M" {
  parc.module @embed "Embedding" leaf {
    parc.param @weight : tensor<100x16xf32>
  }
  func.func @forward(%ids: tensor<?x?xi64>) -> tensor<?x?x32xf32> {
    // expected-error@+1 {{result width 32 does not match embedding width 16}}
    %e = parc.embedding %ids, @embed::@weight : tensor<?x?xi64> -> tensor<?x?x32xf32>
    return %e : tensor<?x?x32xf32>
  }
}

// -----

func.func @attention_groups(%q: tensor<?x?x24xf32>, %k: tensor<?x?x16xf32>) -> tensor<?x?x24xf32> {
  // expected-error@+1 {{num_heads 6 is not a multiple of num_kv_heads 4}}
  %a = parc.attention %q, %k, %k {head_dim = 4 : i64, num_heads = 6 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x24xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x24xf32>
  return %a : tensor<?x?x24xf32>
}

// -----

func.func @attention_width_overflow(%q: tensor<?x?x16xf32>, %k: tensor<?x?x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error@+1 {{num_heads 4 x head_dim 2377900603251621892 overflows a 64-bit width}}
  %a = parc.attention %q, %k, %k {head_dim = 2377900603251621892 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  return %a : tensor<?x?x16xf32>
}

// -----

func.func @attention_width(%q: tensor<?x?x20xf32>, %k: tensor<?x?x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error@+1 {{query width 20 != 16 (heads x head_dim)}}
  %a = parc.attention %q, %k, %k {head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64} : (tensor<?x?x20xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  return %a : tensor<?x?x16xf32>
}

// -----

func.func @attention_k_eq_v(%q: tensor<?x?x16xf32>, %k: tensor<?x?x8xf32>, %v: tensor<4x?x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error@+1 {{k_eq_v requires key and value of one type}}
  %a = parc.attention %q, %k, %v {head_dim = 4 : i64, k_eq_v, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<4x?x8xf32>) -> tensor<?x?x16xf32>
  return %a : tensor<?x?x16xf32>
}

// -----

func.func @attention_window(%q: tensor<?x?x16xf32>, %k: tensor<?x?x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error@+1 {{sliding_window must be positive}}
  %a = parc.attention %q, %k, %k {head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64, sliding_window = 0 : i64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
  return %a : tensor<?x?x16xf32>
}

// -----

func.func @rope_head_dim(%x: tensor<?x?x12xf32>) -> tensor<?x?x12xf32> {
  // expected-error@+1 {{last dimension 12 is not a multiple of head_dim 8}}
  %r = parc.rope %x {head_dim = 8 : i64, theta = 1.0e4 : f64} : tensor<?x?x12xf32>
  return %r : tensor<?x?x12xf32>
}

// -----

func.func @rope_odd(%x: tensor<?x?x12xf32>) -> tensor<?x?x12xf32> {
  // expected-error@+1 {{head_dim must be positive and even, got 3}}
  %r = parc.rope %x {head_dim = 3 : i64, theta = 1.0e4 : f64} : tensor<?x?x12xf32>
  return %r : tensor<?x?x12xf32>
}

// -----

parc.model @norm_group class "M" {
  parc.param @w : tensor<5xf32>
  func.func @forward(%x: tensor<?x?x12xf32>) -> tensor<?x?x12xf32> {
    // expected-error@+1 {{last dimension 12 is not a multiple of the norm size 5}}
    %n = parc.rms_norm %x, @w {eps = 1.0e-6 : f64} : tensor<?x?x12xf32>
    return %n : tensor<?x?x12xf32>
  }
}

// -----

func.func @rms_norm_rank0(%x: tensor<f32>) -> tensor<f32> {
  // expected-error@+1 {{operand #0 must be non-0-ranked.tensor}}
  %n = parc.rms_normalize %x {eps = 1.0e-6 : f64, group_size = 4 : i64} : tensor<f32>
  return %n : tensor<f32>
}

// -----

func.func @rms_normalize_group(%x: tensor<?x?x12xf32>) -> tensor<?x?x12xf32> {
  // expected-error@+1 {{last dimension 12 is not a multiple of the group size 5}}
  %n = parc.rms_normalize %x {eps = 1.0e-6 : f64, group_size = 5 : i64} : tensor<?x?x12xf32>
  return %n : tensor<?x?x12xf32>
}

// -----

func.func @rms_normalize_group_zero(%x: tensor<?x?x12xf32>) -> tensor<?x?x12xf32> {
  // expected-error@+1 {{attribute 'group_size' failed to satisfy constraint}}
  %n = parc.rms_normalize %x {eps = 1.0e-6 : f64, group_size = 0 : i64} : tensor<?x?x12xf32>
  return %n : tensor<?x?x12xf32>
}

// -----

func.func @rms_normalize_eps(%x: tensor<?x?x12xf32>) -> tensor<?x?x12xf32> {
  // expected-error@+1 {{eps is -1.000000e+00; it is finite and not negative}}
  %n = parc.rms_normalize %x {eps = -1.0 : f64, group_size = 4 : i64} : tensor<?x?x12xf32>
  return %n : tensor<?x?x12xf32>
}

// -----

parc.model @rms_norm_scalar class "M" {
  parc.param @w : tensor<4xf32>
  func.func @forward(%x: tensor<f32>) -> tensor<f32> {
    // expected-error@+1 {{operand #0 must be non-0-ranked.tensor}}
    %n = parc.rms_norm %x, @w {eps = 1.0e-6 : f64} : tensor<f32>
    return %n : tensor<f32>
  }
}

// -----

parc.model @layer_norm_size class "M" {
  parc.param @w : tensor<8xf32>
  func.func @forward(%x: tensor<?x?x12xf32>) -> tensor<?x?x12xf32> {
    // expected-error@+1 {{last dimension 12 does not match the norm size 8}}
    %n = parc.layer_norm %x, @w {eps = 1.0e-6 : f64} : tensor<?x?x12xf32>
    return %n : tensor<?x?x12xf32>
  }
}

// -----

parc.model @call_no_forward class "M" {
  parc.module @leaf "Linear" leaf {
  }
  func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    // expected-error@+1 {{callee @leaf (Linear) has no @forward}}
    %y = parc.call @leaf(%x) : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    return %y : tensor<?x?x8xf32>
  }
}

// -----

parc.model @call_types class "M" {
  parc.module @block "Block" composite {
    func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
      return %x : tensor<?x?x8xf32>
    }
  }
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    // expected-error@+1 {{type does not match the forward of @block}}
    %y = parc.call @block(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    return %y : tensor<?x?x4xf32>
  }
}

// -----

parc.model @call_missing class "M" {
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    // expected-error@+1 {{@layers::@"3" does not name a parc.module}}
    %y = parc.call @layers::@"3"(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    return %y : tensor<?x?x4xf32>
  }
}

// -----

func.func @softcap_zero(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  // expected-error@+1 {{cap must be positive, got 0}}
  %y = parc.softcap %x {cap = 0.0 : f64} : tensor<?x?x8xf32>
  return %y : tensor<?x?x8xf32>
}

// -----

func.func @cross_entropy_rank(%logits: tensor<?x8xf32>, %labels: tensor<?x?xi64>) -> tensor<f32> {
  // expected-error@+1 {{logits must have rank 3, got 'tensor<?x8xf32>'}}
  %l = parc.cross_entropy %logits, %labels : tensor<?x8xf32>, tensor<?x?xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @cross_entropy_dims(%logits: tensor<2x4x8xf32>, %labels: tensor<2x5xi64>) -> tensor<f32> {
  // expected-error@+1 {{logits and labels disagree in dimension 1}}
  %l = parc.cross_entropy %logits, %labels : tensor<2x4x8xf32>, tensor<2x5xi64> -> tensor<f32>
  return %l : tensor<f32>
}

// -----

func.func @pool_grid(%x: tensor<?x15x8xf32>) -> tensor<?x3x8xf32> {
  // expected-error@+1 {{15 tokens are not a square grid divisible by kernel 2}}
  %y = parc.avg_pool_tokens %x {kernel = 2 : i64} : tensor<?x15x8xf32> -> tensor<?x3x8xf32>
  return %y : tensor<?x3x8xf32>
}

// -----

parc.model @patches class "M" {
  parc.param @w : tensor<8x3x4x4xf32>
  func.func @forward(%px: tensor<?x3x18x16xf32>) -> tensor<?x16x8xf32> {
    // expected-error@+1 {{image 18x16 is not a multiple of patch size 4}}
    %p = parc.patch_embedding %px, @w : tensor<?x3x18x16xf32> -> tensor<?x16x8xf32>
    return %p : tensor<?x16x8xf32>
  }
}

// -----

func.func @merge_width(%t: tensor<?x?x16xf32>, %i: tensor<?x4x8xf32>) -> tensor<?x?x16xf32> {
  // expected-error@+1 {{image features of width 8 cannot replace text embeddings of width 16}}
  %m = parc.merge_image_features %t, %i : tensor<?x?x16xf32>, tensor<?x4x8xf32>
  return %m : tensor<?x?x16xf32>
}

// -----

parc.model @model_body class "M" {
  // expected-error@+1 {{'arith.constant' op is not allowed in the body of 'parc.model'}}
  %zero = arith.constant 0 : i32
}

// -----

parc.model @short_padding class "M" {
  shard.grid @fsdp(shape = 4)
  parc.param @w : tensor<6x8xf32>
  parc.fsdp_unit @root path "" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = false} {
    %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
    // expected-error@+1 {{padded_dim0 4 is smaller than dim 0 of @w (6)}}
    parc.shard_param @w to %s {padded_dim0 = 4 : i64} : !shard.sharding
  }
}

// -----

parc.model @unit_missing_param class "M" {
  shard.grid @fsdp(shape = 4)
  parc.fsdp_unit @root path "" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = false} {
    %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
    // expected-error@+1 {{@gone does not name a parc.param}}
    parc.shard_param @gone to %s {padded_dim0 = 4 : i64} : !shard.sharding
  }
}

// -----

parc.model @program_no_batch class "M" {
  shard.grid @fsdp(shape = 2)
  // expected-error@+1 {{needs batch >= 1 and seq >= 1, got batch 0 seq 8}}
  parc.program @p ranks 2 covers {} micro_batches 1 batch 0 seq 8 {
    parc.optimizer_step params 16
  }
}

// -----

parc.model @program_0 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %b = parc.buffer activation "layers.0" micro_batch 0 : tensor<8xbf16>
    // expected-error@+1 {{must free a parc.save, parc.alloc or shard.all_gather result of its program}}
    parc.free %b : tensor<8xbf16>
  }
}

// -----

parc.model @program_1 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %w = parc.buffer param_shard "layers.0" : tensor<8xbf16>
    %g = shard.all_gather %w on @fsdp grid_axes = [0] gather_axis = 0 : tensor<8xbf16> -> tensor<16xbf16>
    parc.wait %g : tensor<16xbf16>
    parc.free %g : tensor<16xbf16>
    // expected-error@+1 {{frees a buffer that is already freed}}
    parc.free %g : tensor<16xbf16>
  }
}

// -----

parc.model @program_2 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    parc.forward_step "layers.0" micro_batch 0
    // expected-error@+1 {{is never freed}}
    %s = parc.save "layers.0" micro_batch 0 : tensor<64xi8>
    parc.backward_step "layers.0" micro_batch 0
  }
}

// -----

parc.model @program_3 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{runs the backward of 'layers.0' micro-batch 0 before its forward}}
    parc.backward_step "layers.0" micro_batch 0
  }
}

// -----

parc.model @program_4 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    parc.forward_step "" part "tail" micro_batch 0
    // expected-error@+1 {{runs the forward of the root's tail micro-batch 0 twice}}
    parc.forward_step "" part "tail" micro_batch 0
  }
}

// -----

parc.model @program_5 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    parc.forward_step "layers.0" micro_batch 0
    parc.backward_step "layers.0" micro_batch 0
    // expected-error@+1 {{runs the recompute of 'layers.0' micro-batch 0 after its backward}}
    parc.recompute_step "layers.0" micro_batch 0 remat <full> bytes 8
  }
}

// -----

parc.model @program_6 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{saves activations of 'layers.0' micro-batch 0 outside its forward}}
    %s = parc.save "layers.0" micro_batch 0 : tensor<64xi8>
  }
}

// -----

parc.model @program_7 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{runs micro-batch 3 of a program with 1 micro-batches}}
    parc.forward_step "layers.0" micro_batch 3
  }
}

// -----

parc.model @program_8 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{names 'layers.9', which is no discovered layer}}
    parc.forward_step "layers.9" micro_batch 0
  }
}

// -----

parc.model @program_9 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{part must be "head" or "tail", got "middle"}}
    parc.forward_step "" part "middle" micro_batch 0
  }
}

// -----

parc.model @program_10 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{names both a module ("layers.0") and a root part}}
    parc.backward_step "layers.0" part "head" micro_batch 0
  }
}

// -----

parc.model @program_11 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{needs a module path or a root part}}
    parc.forward_step "" micro_batch 0
  }
}

// -----

parc.model @program_12 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{recomputes nothing: remat is none}}
    parc.recompute_step "layers.0" micro_batch 0 remat <none> bytes 8
  }
}

// -----

parc.model @program_13 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{must be a non-empty static buffer, got 'tensor<?xbf16>'}}
    %b = parc.buffer activation "layers.0" : tensor<?xbf16>
  }
}

// -----

parc.model @program_14 class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %w = parc.buffer param_shard "layers.0" : tensor<8xbf16>
    // expected-error@+1 {{is not a step of a parc.program}}
    %s = shard.all_slice %w on @fsdp grid_axes = [0] slice_axis = 0 : tensor<8xbf16> -> tensor<4xbf16>
  }
}

// -----

parc.model @covers_unknown class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  // expected-error@+1 {{covers 'tp', which is no shard.grid of the model}}
  parc.program @p ranks 2 covers {tp = array<i64: 0>} micro_batches 1 batch 1 seq 8 {
  }
}

// -----

parc.model @covers_out_of_range class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  // expected-error@+1 {{covers index 2 of 'pp' of size 2}}
  parc.program @p ranks 2 covers {pp = array<i64: 2>} micro_batches 1 batch 1 seq 8 {
  }
}

// -----

parc.model @ranks_mismatch class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  // expected-error@+1 {{covers 2 ranks of the model's grids but says ranks 4}}
  parc.program @p ranks 4 covers {pp = array<i64: 1>} micro_batches 1 batch 1 seq 8 {
  }
}

// -----

parc.model @clip_not_before_optimizer class "M" {
  shard.grid @fsdp(shape = 2)
  parc.program @p ranks 2 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{must immediately precede the program's parc.optimizer_step}}
    parc.clip_grad_norm max_norm 1.0
    // expected-note@+1 {{followed by this op instead}}
    %b = parc.buffer gradient "" : tensor<16xf32>
    parc.optimizer_step params 16
  }
}

// -----

parc.model @clip_zero_norm class "M" {
  shard.grid @fsdp(shape = 2)
  parc.program @p ranks 2 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{max_norm must be positive, got 0}}
    parc.clip_grad_norm max_norm 0.0
    parc.optimizer_step params 16
  }
}

// -----

parc.model @program_wait_before_compute class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %w = parc.buffer param_shard "layers.0" : tensor<8xbf16>
    // expected-note@+1 {{the gather}}
    %g = shard.all_gather %w on @fsdp grid_axes = [0] gather_axis = 0 : tensor<8xbf16> -> tensor<16xbf16>
    // expected-error@+1 {{runs the forward of 'layers.0' micro-batch 0 before waiting for the all-gather of FSDP unit 'layers.0'}}
    parc.forward_step "layers.0" micro_batch 0
  }
}

// -----

parc.model @program_wait_before_free class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %w = parc.buffer param_shard "layers.0" : tensor<8xbf16>
    // expected-note@+1 {{the gather}}
    %g = shard.all_gather %w on @fsdp grid_axes = [0] gather_axis = 0 : tensor<8xbf16> -> tensor<16xbf16>
    // expected-error@+1 {{frees the all-gather of FSDP unit 'layers.0' before waiting for it}}
    parc.free %g : tensor<16xbf16>
  }
}

// -----

parc.model @program_wait_twice class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %w = parc.buffer param_shard "layers.0" : tensor<8xbf16>
    %g = shard.all_gather %w on @fsdp grid_axes = [0] gather_axis = 0 : tensor<8xbf16> -> tensor<16xbf16>
    parc.wait %g : tensor<16xbf16>
    // expected-error@+1 {{waits for an all-gather of FSDP unit 'layers.0' that is already waited for}}
    parc.wait %g : tensor<16xbf16>
  }
}

// -----

parc.model @program_wait_not_gather class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %w = parc.buffer param_shard "layers.0" : tensor<8xbf16>
    // expected-error@+1 {{must wait for a shard.all_gather of a param_shard buffer or a shard.reduce_scatter of a gradient buffer of its program}}
    parc.wait %w : tensor<8xbf16>
  }
}

// -----

parc.model @program_scatter_twice_in_flight class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @dp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
    parc.module @"1" "Block" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %d0 = parc.buffer gradient "layers.1" : tensor<16xf32>
    // expected-note@+1 {{the reduce-scatter}}
    %r0 = shard.reduce_scatter %d0 on @fsdp grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<8xf32>
    %d1 = parc.buffer gradient "layers.0" : tensor<16xf32>
    // expected-error@+1 {{issues another reduce-scatter before waiting for the reduce-scatter of FSDP unit 'layers.1'}}
    %r1 = shard.reduce_scatter %d1 on @fsdp grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<8xf32>
  }
}

// -----

parc.model @program_scatter_read_in_flight class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @dp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
    parc.module @"1" "Block" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %d0 = parc.buffer gradient "layers.1" : tensor<16xf32>
    // expected-note@+1 {{the reduce-scatter}}
    %r0 = shard.reduce_scatter %d0 on @fsdp grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<8xf32>
    // expected-error@+1 {{all-reduces its result before waiting for the reduce-scatter of FSDP unit 'layers.1'}}
    %a = shard.all_reduce %r0 on @dp grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
  }
}

// -----

parc.model @program_scatter_optimizer_in_flight class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @dp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
    parc.module @"1" "Block" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %d0 = parc.buffer gradient "layers.1" : tensor<16xf32>
    // expected-note@+1 {{the reduce-scatter}}
    %r0 = shard.reduce_scatter %d0 on @fsdp grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<8xf32>
    // expected-error@+1 {{updates the gradients before waiting for the reduce-scatter of FSDP unit 'layers.1'}}
    parc.optimizer_step params 8
  }
}

// -----

parc.model @program_scatter_wait_twice class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @dp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
    parc.module @"1" "Block" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %d0 = parc.buffer gradient "layers.1" : tensor<16xf32>
    %r0 = shard.reduce_scatter %d0 on @fsdp grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<8xf32>
    parc.wait %r0 : tensor<8xf32>
    // expected-error@+1 {{waits for a reduce-scatter of FSDP unit 'layers.1' that is already waited for}}
    parc.wait %r0 : tensor<8xf32>
  }
}

// -----

parc.model @program_scatter_never_waited class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @dp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
    parc.module @"1" "Block" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %d0 = parc.buffer gradient "layers.1" : tensor<16xf32>
    // expected-error@+1 {{reduce-scatters the gradient of FSDP unit 'layers.1' and is never waited for (parc.wait)}}
    %r0 = shard.reduce_scatter %d0 on @fsdp grid_axes = [0] scatter_axis = 0 : tensor<16xf32> -> tensor<8xf32>
  }
}

// -----

parc.model @program_alloc_never_freed class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    parc.forward_step "layers.0" micro_batch 0
    parc.backward_step "layers.0" micro_batch 0
    // expected-error@+1 {{is never freed}}
    %a = parc.alloc gradients "layers.0" micro_batch 0 : tensor<48xi8>
  }
}

// -----

parc.model @program_alloc_empty class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{must allocate a positive static number of bytes, got 'tensor<0xi8>'}}
    %a = parc.alloc logits "" micro_batch 0 : tensor<0xi8>
  }
}

// -----

parc.model @program_alloc_micro_batch class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{runs micro-batch 3 of a program with 1 micro-batches}}
    %a = parc.alloc logits "" micro_batch 3 : tensor<8xi8>
  }
}

// -----

parc.model @program_peak_negative class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{#parc.peak adds -8 bytes: a step's highest point is never below what was live before it}}
    parc.forward_step "layers.0" micro_batch 0 peak <working = 8, logits = -16>
  }
}

// -----

parc.model @program_peak_blocks_sum class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // The blocks are the positive parts' tensors: -16 freed is none of them.
    // expected-error@+1 {{#parc.peak blocks add up to 40 bytes, its positive parts to 48}}
    parc.forward_step "layers.0" micro_batch 0 peak <working = 16, logits = 32, saved = -16, blocks = [8, 32]>
  }
}

// -----

parc.model @program_peak_block_empty class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    // expected-error@+1 {{#parc.peak block of 0 bytes: every block is a tensor of at least one byte}}
    parc.forward_step "layers.0" micro_batch 0 peak <logits = 32, blocks = [32, 0]>
  }
}

// -----

parc.model @program_wait_never class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %w = parc.buffer param_shard "layers.0" : tensor<8xbf16>
    // expected-error@+1 {{gathers FSDP unit 'layers.0' and is never waited for (parc.wait)}}
    %g = shard.all_gather %w on @fsdp grid_axes = [0] gather_axis = 0 : tensor<8xbf16> -> tensor<16xbf16>
  }
}

// -----

parc.model @program_wait_regather class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %w = parc.buffer param_shard "layers.0" : tensor<8xbf16>
    // expected-note@+1 {{the previous gather}}
    %g = shard.all_gather %w on @fsdp grid_axes = [0] gather_axis = 0 : tensor<8xbf16> -> tensor<16xbf16>
    // expected-error@+1 {{gathers FSDP unit 'layers.0' again before the previous gather is waited}}
    %g2 = shard.all_gather %w on @fsdp grid_axes = [0] gather_axis = 0 : tensor<8xbf16> -> tensor<16xbf16>
  }
}

// -----

parc.model @program_wait_root class "M" {
  shard.grid @fsdp(shape = 2)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
    }
  }
  parc.program @p ranks 4 covers {} micro_batches 1 batch 1 seq 8 {
    %w = parc.buffer param_shard "layers.0" : tensor<8xbf16>
    %r = parc.buffer param_shard "" : tensor<8xbf16>
    // expected-note@+1 {{the gather}}
    %g = shard.all_gather %r on @fsdp grid_axes = [0] gather_axis = 0 : tensor<8xbf16> -> tensor<16xbf16>
    // expected-error@+1 {{runs the forward of 'layers.0' micro-batch 0 before waiting for the all-gather of FSDP unit root}}
    parc.forward_step "layers.0" micro_batch 0
  }
}

// -----

// expected-error@+1 {{'parc.model' op has 'parc.pp' but no 'parc.pp_schedule'}}
parc.model @plan_only class "M" attributes {parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 1>} {
}

// -----

// expected-error@+1 {{'parc.model' op has 'parc.pp_schedule' without a #parc.pp 'parc.pp'}}
parc.model @schedule_only class "M" attributes {parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, B0]>]} {
}

// -----

// expected-error@+1 {{#parc.pp stages must be in [1, 131072], got -1}}
parc.model @pp_negative class "M" attributes {parc.pp = #parc.pp<stages = -1, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = []} {
}

// -----

// expected-error@+1 {{#parc.pp microbatches must be in [1, 4096], got 1000000}}
parc.model @pp_micro_huge class "M" attributes {parc.pp = #parc.pp<stages = 1, schedule = "1f1b", chunks = 1, microbatches = 1000000>, parc.pp_schedule = []} {
}

// -----

// expected-error@+2 {{unknown pipeline schedule "zigzag" (expected none, gpipe, 1f1b or interleaved-1f1b)}}
// expected-error@+1 {{failed to parse Parc_PipelinePlanAttr parameter 'schedule'}}
parc.model @pp_schedule_name class "M" attributes {parc.pp = #parc.pp<stages = 1, schedule = "zigzag", chunks = 1, microbatches = 1>, parc.pp_schedule = []} {
}

// -----

// expected-error@+1 {{#parc.pp has 2 chunks, which only interleaved-1f1b runs}}
parc.model @pp_chunks class "M" attributes {parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 2, microbatches = 2>, parc.pp_schedule = []} {
}

// -----

// expected-error@+1 {{#parc.pp in_flight has 1 entries for 2 stages}}
parc.model @pp_in_flight class "M" attributes {parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 2, in_flight = [2]>, parc.pp_schedule = []} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.pp' must be a #parc.pp<...> plan, got {stages = 2 : i64}}}
parc.model @pp_dictionary class "M" attributes {parc.pp = {stages = 2 : i64}, parc.pp_schedule = []} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.pp_schedule' of stage 0 runs F0 twice}}
parc.model @twice class "M" attributes {parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, F0, B0]>, #parc.pp_steps<stage = 1, steps = [F0, B0]>]} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.pp_schedule' of stage 1 runs B0 before its forward}}
parc.model @before_forward class "M" attributes {parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, B0]>, #parc.pp_steps<stage = 1, steps = [B0, F0]>]} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.pp_schedule' of stage 1 never runs the backward of micro-batch 0}}
parc.model @never_backward class "M" attributes {parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, B0]>, #parc.pp_steps<stage = 1, steps = [F0]>]} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.pp_schedule' of stage 1 never runs the forward of micro-batch 0}}
parc.model @missing_stage class "M" attributes {parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, B0]>]} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.pp_schedule' of stage 0 runs F1, outside the 1 micro-batches x 1 chunks of 'parc.pp'}}
parc.model @outside class "M" attributes {parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, B0, F1]>, #parc.pp_steps<stage = 1, steps = [F0, B0]>]} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.pp_schedule' has stage 3 of a 1-stage 'parc.pp'}}
parc.model @stage_range class "M" attributes {parc.pp = #parc.pp<stages = 1, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = [#parc.pp_steps<stage = 3, steps = [F0, B0]>]} {
}

// -----

// expected-error@+2 {{expected a pipeline step, F<micro-batch> or B<micro-batch> with an optional .c<chunk>, got 'W0'}}
// expected-error@+1 {{failed to parse Parc_PipelineStepsAttr parameter 'steps'}}
parc.model @bad_step class "M" attributes {parc.pp = #parc.pp<stages = 1, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, W0]>]} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.pp_schedule' entries must be #parc.pp_steps, got {stage = 0 : i64, steps = ["F0", "B0"]}}}
parc.model @untyped_steps class "M" attributes {parc.pp = #parc.pp<stages = 1, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = [{stage = 0 : i64, steps = ["F0", "B0"]}]} {
}

// -----

// expected-error@+1 {{#parc.pp_steps stage must be in [0, 131072), got -1}}
parc.model @negative_stage class "M" attributes {parc.pp = #parc.pp<stages = 1, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = [#parc.pp_steps<stage = -1, steps = [F0, B0]>]} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.tp_size' must be an integer in [1, 131072]}}
parc.model @tp_size class "M" attributes {parc.tp_size = 0 : i64} {
}

// -----

parc.model @tp_plan class "M" {
  // expected-error@+1 {{'parc.param' op 'parc.tp' must be a #parc.tp<...> role, got "colwise"}}
  parc.param @w : tensor<4x4xf32> {parc.tp = "colwise"}
}

// -----

parc.model @tp_role class "M" {
  // expected-error@+2 {{expected ::mlir::parc::TpRole to be one of: colwise, rowwise, vocab, replicated, sequence}}
  // expected-error@+1 {{failed to parse Parc_TpRoleAttr parameter 'value'}}
  parc.param @w : tensor<4x4xf32> {parc.tp = #parc.tp<diagonal>}
}

// -----

parc.model @tp_shards_string class "M" {
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    // expected-error@+1 {{'parc.activation' op 'parc.tp_shards' must be #parc.tp_shards<...>, got "features"}}
    %y = parc.activation silu %x {parc.tp_shards = "features"} : tensor<?x?x4xf32>
    return %y : tensor<?x?x4xf32>
  }
}

// -----

parc.model @tp_shards_count class "M" {
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    // expected-error@+1 {{'parc.activation' op 'parc.tp_shards' has 2 value shards for 1 results}}
    %y = parc.activation silu %x {parc.tp_shards = #parc.tp_shards<values = [features, full]>} : tensor<?x?x4xf32>
    return %y : tensor<?x?x4xf32>
  }
}

// -----

parc.model @tp_shards_gather class "M" {
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    // expected-error@+1 {{'parc.activation' op 'parc.tp_shards' gathers operand 1 of 1}}
    %y = parc.activation silu %x {parc.tp_shards = #parc.tp_shards<values = [full], gather = [1]>} : tensor<?x?x4xf32>
    return %y : tensor<?x?x4xf32>
  }
}

// -----

parc.model @tp_shards_comm_twice class "M" {
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    // expected-error@+1 {{#parc.tp_shards lists copy_input twice}}
    %y = parc.activation silu %x {parc.tp_shards = #parc.tp_shards<values = [features], comms = [copy_input, copy_input]>} : tensor<?x?x4xf32>
    return %y : tensor<?x?x4xf32>
  }
}

// -----

parc.model @tp_shards_gather_twice class "M" {
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    // expected-error@+1 {{#parc.tp_shards gathers operand 0 twice}}
    %y = parc.activation silu %x {parc.tp_shards = #parc.tp_shards<values = [full], gather = [0, 0]>} : tensor<?x?x4xf32>
    return %y : tensor<?x?x4xf32>
  }
}

// -----

parc.model @tp_shards_keyword class "M" {
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    // expected-error@+2 {{expected one of [full, features, vocab, sequence] for what a TP rank holds of a value, got: columns}}
    // expected-error@+1 {{failed to parse Parc_TpShardsAttr parameter 'values'}}
    %y = parc.activation silu %x {parc.tp_shards = #parc.tp_shards<values = [columns]>} : tensor<?x?x4xf32>
    return %y : tensor<?x?x4xf32>
  }
}

// -----

parc.model @tp_shards_args class "M" {
  // expected-error@+1 {{'func.func' op 'parc.tp_shards' has 1 value shards for 2 arguments}}
  func.func @forward(%x: tensor<?x?x4xf32>, %y: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> attributes {parc.tp_shards = #parc.tp_shards<values = [full]>} {
    return %x : tensor<?x?x4xf32>
  }
}

// -----

parc.model @remat_string class "M" {
  // expected-error@+1 {{'parc.module' op 'parc.remat' must be a #parc.remat<...> decision, got "full"}}
  parc.module @layer "Block" leaf attributes {parc.remat = "full"} {
  }
}

// -----

parc.model @remat_kind class "M" {
  // expected-error@+2 {{expected ::mlir::parc::RematKind to be one of: none, selective, full, op}}
  // expected-error@+1 {{failed to parse Parc_RematKindAttr parameter 'value'}}
  parc.module @layer "Block" leaf attributes {parc.remat = #parc.remat<sometimes>} {
  }
}

// -----

parc.model @remat_save_value class "M" {
  parc.module @proj "Linear" leaf {
    parc.param @weight : tensor<8x8xf32>
  }
  func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    // expected-error@+1 {{'parc.linear' op 'parc.remat_save' must be a unit attribute, got true}}
    %y = parc.linear %x, @proj::@weight {parc.remat_save = true} : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    return %y : tensor<?x?x8xf32>
  }
}

// -----

parc.model @remat_save_call class "M" {
  parc.module @inner "Block" leaf {
    func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
      return %x : tensor<?x?x8xf32>
    }
  }
  func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    // expected-error@+1 {{'parc.call' op 'parc.remat_save' marks an op whose outputs remat keeps; this op has no autograd outputs to keep}}
    %y = parc.call @inner(%x) {parc.remat_save} : (tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
    return %y : tensor<?x?x8xf32>
  }
}

// -----

parc.model @remat_save_recompute class "M" {
  parc.module @proj "Linear" leaf {
    parc.param @weight : tensor<8x8xf32>
  }
  func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
    // expected-error@+1 {{'parc.linear' op is marked both 'parc.recompute' and 'parc.remat_save'}}
    %y = parc.linear %x, @proj::@weight {parc.recompute, parc.remat_save} : tensor<?x?x8xf32> -> tensor<?x?x8xf32>
    return %y : tensor<?x?x8xf32>
  }
}

// -----

parc.model @pp_stage class "M" {
  // expected-error@+1 {{'parc.module' op 'parc.pp_stage' must be an integer in [0, 131071]}}
  parc.module @m "Block" leaf attributes {parc.pp_stage = -2 : i64} {
  }
}

// -----

parc.model @param_index class "M" {
  // expected-error@+1 {{'parc.param' op has element type 'index'; a parameter is f16, bf16, f32 or f64}}
  parc.param @w : tensor<4x4xindex>
}

// -----

parc.model @param_int class "M" {
  // expected-error@+1 {{'parc.param' op has element type 'i8'; a parameter is f16, bf16, f32 or f64}}
  parc.param @w : tensor<4xi8>
}

// -----

parc.model @param_zero class "M" {
  // expected-error@+1 {{'parc.param' op dimension 1 is 0; a parameter's dimensions are in [1, 4294967296]}}
  parc.param @w : tensor<4x0xf32>
}

// -----

parc.model @param_huge_dim class "M" {
  // expected-error@+1 {{'parc.param' op dimension 0 is 9223372036854775807; a parameter's dimensions are in [1, 4294967296]}}
  parc.param @w : tensor<9223372036854775807x4xf32>
}

// -----

parc.model @param_huge class "M" {
  // expected-error@+1 {{'parc.param' op has more than 17592186044416 elements}}
  parc.param @w : tensor<4294967296x4294967296xf32>
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.stacks' must be an array of #parc.stack, got [{layers = 2 : i64, name = "language", path = "layers"}]}}
parc.model @stacks_untyped class "M" attributes {parc.stacks = [{layers = 2 : i64, name = "language", path = "layers"}]} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.stacks' names stack 'language' twice}}
parc.model @stacks_twice class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "a", layers = 1>, #parc.stack<name = "language", path = "b", layers = 1>]} {
}

// -----

// expected-error@+1 {{#parc.stack 'language' has 1099511627776 layers, not in [0, 4096]}}
parc.model @stacks_huge class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "layers", layers = 1099511627776>]} {
}

// -----

// expected-error@+1 {{#parc.stack needs a name}}
parc.model @stacks_unnamed class "M" attributes {parc.stacks = [#parc.stack<name = "", path = "layers", layers = 1>]} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.pp_tied_copies' must be an array of #parc.pp_tied, got [{stages = [0, 1]}]}}
parc.model @tied_dictionary class "M" attributes {parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 2>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, F1, B0, B1]>, #parc.pp_steps<stage = 1, steps = [F0, B0, F1, B1]>], parc.pp_tied_copies = [{stages = [0, 1]}]} {
}

// -----

// expected-error@+1 {{#parc.pp_tied stages must ascend within [0, }}
parc.model @tied_unsorted class "M" attributes {parc.pp_tied_copies = [#parc.pp_tied<params = [@a, @b], stages = [1, 0]>]} {
}

// -----

// expected-error@+1 {{#parc.pp_tied needs at least two parameter references, got [@a]}}
parc.model @tied_one_param class "M" attributes {parc.pp_tied_copies = [#parc.pp_tied<params = [@a], stages = [0, 1]>]} {
}

// -----

// expected-error@+1 {{'parc.model' op has 'parc.pp_tied_copies' but no 'parc.pp'}}
parc.model @tied_no_plan class "M" attributes {parc.pp_tied_copies = [#parc.pp_tied<params = [@a, @b], stages = [0, 1]>]} {
}

// -----

// expected-error@+1 {{'parc.model' op 'parc.pp_tied_copies' keeps a copy on stage 2 of a 2-stage 'parc.pp'}}
parc.model @tied_past_stages class "M" attributes {parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 2>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, F1, B0, B1]>, #parc.pp_steps<stage = 1, steps = [F0, B0, F1, B1]>], parc.pp_tied_copies = [#parc.pp_tied<params = [@a, @b], stages = [0, 2]>]} {
}

// -----

parc.model @position_rank class "M" {
  parc.param @table : tensor<2x2x4x8xf32>
  func.func @forward(%x: tensor<?x16x8xf32>) -> tensor<?x16x8xf32> {
    // expected-error@+1 {{'parc.position_embedding' op weight @table must have rank 2 or 3, got 'tensor<2x2x4x8xf32>'}}
    %e = parc.position_embedding %x, @table : tensor<?x16x8xf32>
    return %e : tensor<?x16x8xf32>
  }
}

// -----

parc.model @position_width class "M" {
  parc.param @table : tensor<2x4x6xf32>
  func.func @forward(%x: tensor<?x16x8xf32>) -> tensor<?x16x8xf32> {
    // expected-error@+1 {{'parc.position_embedding' op input width 8 does not match position table 'tensor<2x4x6xf32>'}}
    %e = parc.position_embedding %x, @table : tensor<?x16x8xf32>
    return %e : tensor<?x16x8xf32>
  }
}
