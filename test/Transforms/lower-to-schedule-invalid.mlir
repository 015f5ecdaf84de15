// RUN: parc-opt %s -split-input-file -verify-diagnostics --lower-to-schedule=seq=8
// RUN: parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 microbatches=2" --apply-fsdp=shards=1 2>/dev/null | not parc-opt "--lower-to-schedule=grad-accum=4" 2>&1 | FileCheck %s --check-prefix=ACCUM

// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-fsdp=shards=2 2>/dev/null | not parc-opt "--lower-to-schedule=seq=8 max-norm=-1" 2>&1 | FileCheck %s --check-prefix=NORM

// ACCUM: error: lower-to-schedule: grad-accum = 4 with a pipeline: the micro-batches are parc.pp's (2)
// NORM: error: lower-to-schedule: max-norm must be >= 0 (0: no clipping), got -1

// Not yet planned: no layers discovered.
// expected-error@+1 {{lower-to-schedule: @undiscovered has no discovered layers: run --discover-layers first}}
parc.model @undiscovered class "M" {
  shard.grid @fsdp(shape = 1)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
    parc.module @"1" "Block" leaf {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
  }
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    %h0 = parc.call @layers::@"0"(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %h1 = parc.call @layers::@"1"(%h0) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    return %h1 : tensor<?x?x4xf32>
  }
}

// -----

// Not yet planned: no FSDP units.
// expected-error@+1 {{lower-to-schedule: @unsharded has no FSDP plan: run --apply-fsdp first (shards=1 for unsharded parameters)}}
parc.model @unsharded class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "layers", layers = 2>]} {
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
    parc.module @"1" "Block" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
  }
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    %h0 = parc.call @layers::@"0"(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %h1 = parc.call @layers::@"1"(%h0) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    return %h1 : tensor<?x?x4xf32>
  }
}

// -----

// The pipeline grid disagrees with parc.pp.
// expected-error@+1 {{lower-to-schedule: parc.pp has 2 stages but shard.grid @pp has 0 ranks: run --apply-pp again}}
parc.model @no_pp_grid class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "layers", layers = 2>], parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, B0]>, #parc.pp_steps<stage = 1, steps = [F0, B0]>]} {
  shard.grid @fsdp(shape = 1)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language", parc.pp_stage = 0 : i64} {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
    parc.module @"1" "Block" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language", parc.pp_stage = 1 : i64} {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
  }
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    %h0 = parc.call @layers::@"0"(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %h1 = parc.call @layers::@"1"(%h0) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    return %h1 : tensor<?x?x4xf32>
  }
  parc.fsdp_unit @u0 path "layers.0" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = true} {
    %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
    parc.shard_param @layers::@"0"::@w to %s {padded_dim0 = 4 : i64} : !shard.sharding
  }
  parc.fsdp_unit @u1 path "layers.1" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = true} {
    %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
    parc.shard_param @layers::@"1"::@w to %s {padded_dim0 = 4 : i64} : !shard.sharding
  }
}

// -----

parc.model @off_stage class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "layers", layers = 2>], parc.pp = #parc.pp<stages = 2, schedule = "1f1b", chunks = 1, microbatches = 1>, parc.pp_schedule = [#parc.pp_steps<stage = 0, steps = [F0, B0]>, #parc.pp_steps<stage = 1, steps = [F0, B0]>]} {
  shard.grid @fsdp(shape = 1)
  shard.grid @pp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language", parc.pp_stage = 0 : i64} {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
    // expected-error@+1 {{lower-to-schedule: layer layers.1 is on pp stage 3 chunk 0 of a plan with 2 stages x 1 chunks: run --apply-pp again}}
    parc.module @"1" "Block" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language", parc.pp_stage = 3 : i64} {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
  }
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    %h0 = parc.call @layers::@"0"(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %h1 = parc.call @layers::@"1"(%h0) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    return %h1 : tensor<?x?x4xf32>
  }
  parc.fsdp_unit @u0 path "layers.0" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = true} {
    %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
    parc.shard_param @layers::@"0"::@w to %s {padded_dim0 = 4 : i64} : !shard.sharding
  }
  parc.fsdp_unit @u1 path "layers.1" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = true} {
    %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
    parc.shard_param @layers::@"1"::@w to %s {padded_dim0 = 4 : i64} : !shard.sharding
  }
}

// -----

// expected-error@+1 {{lower-to-schedule: parc.tp_size = 2 but shard.grid @tp has 0 ranks: run --apply-tp again}}
parc.model @no_tp_grid class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "layers", layers = 2>], parc.tp_size = 2 : i64} {
  shard.grid @fsdp(shape = 1)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
    parc.module @"1" "Block" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
  }
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    %h0 = parc.call @layers::@"0"(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %h1 = parc.call @layers::@"1"(%h0) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    return %h1 : tensor<?x?x4xf32>
  }
  parc.fsdp_unit @u0 path "layers.0" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = true} {
    %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
    parc.shard_param @layers::@"0"::@w to %s {padded_dim0 = 4 : i64} : !shard.sharding
  }
  parc.fsdp_unit @u1 path "layers.1" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = true} {
    %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
    parc.shard_param @layers::@"1"::@w to %s {padded_dim0 = 4 : i64} : !shard.sharding
  }
}

// -----

// A TP plan whose ops carry no apply-tp record of their splits.
// expected-error@+1 {{lower-to-schedule: parc.tp_size = 2 but the forward has no parc.tp_shards record: run --apply-tp again}}
parc.model @no_tp_shards class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "layers", layers = 2>], parc.tp_size = 2 : i64} {
  shard.grid @fsdp(shape = 1)
  shard.grid @tp(shape = 2)
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Block" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
    parc.module @"1" "Block" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"} {
      parc.param @w : tensor<4x4xf32>
      func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
        %q = parc.linear %x, @w : tensor<?x?x4xf32> -> tensor<?x?x4xf32>
        %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 1 : i64, num_kv_heads = 1 : i64, scale = 0.5 : f64} : (tensor<?x?x4xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
        return %a : tensor<?x?x4xf32>
      }
    }
  }
  func.func @forward(%x: tensor<?x?x4xf32>) -> tensor<?x?x4xf32> {
    %h0 = parc.call @layers::@"0"(%x) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    %h1 = parc.call @layers::@"1"(%h0) : (tensor<?x?x4xf32>) -> tensor<?x?x4xf32>
    return %h1 : tensor<?x?x4xf32>
  }
  parc.fsdp_unit @u0 path "layers.0" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = true} {
    %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
    parc.shard_param @layers::@"0"::@w to %s {padded_dim0 = 4 : i64} : !shard.sharding
  }
  parc.fsdp_unit @u1 path "layers.1" attributes {compute_dtype = bf16, master_dtype = f32, optim_dtype = f32, prefetch = 1 : i64, reduce_dtype = f32, reshard_after_forward = true} {
    %s = shard.sharding @fsdp split_axes = [[0]] : !shard.sharding
    parc.shard_param @layers::@"1"::@w to %s {padded_dim0 = 4 : i64} : !shard.sharding
  }
}
