// RUN: parc-opt %s -split-input-file -verify-diagnostics --apply-tp=size=4
// RUN: not parc-opt %s -split-input-file --apply-tp=size=0 2>&1 | FileCheck %s --check-prefix=SIZE

// SIZE: error: apply-tp needs size >= 1, got 0

// Each refusal is reported on the op holding the value in the first layer
// refused and names the op attribute or parameter and the layer (this IR has
// no parc.hf_config, except @config's), the value, and what the size must
// divide.

// -----

parc.model @heads class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 1>]} {
  parc.module @model "Model" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @q "Linear" leaf {
          parc.param @weight : tensor<12x16xf32>
        }
        parc.module @k "Linear" leaf {
          parc.param @weight : tensor<4x16xf32>
        }
        parc.module @o "Linear" leaf {
          parc.param @weight : tensor<16x12xf32>
        }
        parc.module @up "Linear" leaf {
          parc.param @weight : tensor<32x16xf32>
        }
        parc.module @down "Linear" leaf {
          parc.param @weight : tensor<16x32xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %q = parc.linear %x, @q::@weight : tensor<?x?x16xf32> -> tensor<?x?x12xf32>
          %k = parc.linear %x, @k::@weight : tensor<?x?x16xf32> -> tensor<?x?x4xf32>
          // expected-error@+2 {{tensor parallel size 4 does not divide the 6 attention heads of the language layers (num_heads = 6 on the parc.attention in model.layers.0) of @heads; use a size that divides 6}}
          // expected-error@+1 {{tensor parallel size 4 does not divide the 2 KV heads of the language layers (num_kv_heads = 2 on the parc.attention in model.layers.0) of @heads; use a size that divides 2}}
          %a = parc.attention %q, %k, %k {causal, head_dim = 2 : i64, num_heads = 6 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64} : (tensor<?x?x12xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x12xf32>
          %o = parc.linear %a, @o::@weight : tensor<?x?x12xf32> -> tensor<?x?x16xf32>
          %r = parc.add %x, %o : tensor<?x?x16xf32>
          %u = parc.linear %r, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
          %g = parc.activation silu %u : tensor<?x?x32xf32>
          %d = parc.linear %g, @down::@weight : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
          %y = parc.add %r, %d : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%h0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
      %h1 = parc.call @layers::@"0"(%h0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      return %h1 : tensor<?x?x16xf32>
    }
  }
}

// -----

parc.model @kv class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 2>]} {
  parc.module @model "Model" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @q "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @k "Linear" leaf {
          parc.param @weight : tensor<4x16xf32>
        }
        parc.module @o "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @up "Linear" leaf {
          parc.param @weight : tensor<32x16xf32>
        }
        parc.module @down "Linear" leaf {
          parc.param @weight : tensor<16x32xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %q = parc.linear %x, @q::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %k = parc.linear %x, @k::@weight : tensor<?x?x16xf32> -> tensor<?x?x4xf32>
          // expected-error@+1 {{tensor parallel size 4 does not divide the 2 KV heads of the language layers (num_kv_heads = 2 on the parc.attention in model.layers.0, and 1 more layer) of @kv; use a size that divides 2}}
          %a = parc.attention %q, %k, %k {causal, head_dim = 2 : i64, num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
          %o = parc.linear %a, @o::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %r = parc.add %x, %o : tensor<?x?x16xf32>
          %u = parc.linear %r, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
          %g = parc.activation silu %u : tensor<?x?x32xf32>
          %d = parc.linear %g, @down::@weight : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
          %y = parc.add %r, %d : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"1" "Block" composite attributes {parc.layer_index = 1 : i64, parc.stack = "language"} {
        parc.module @q "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @k "Linear" leaf {
          parc.param @weight : tensor<4x16xf32>
        }
        parc.module @o "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @up "Linear" leaf {
          parc.param @weight : tensor<32x16xf32>
        }
        parc.module @down "Linear" leaf {
          parc.param @weight : tensor<16x32xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %q = parc.linear %x, @q::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %k = parc.linear %x, @k::@weight : tensor<?x?x16xf32> -> tensor<?x?x4xf32>
          %a = parc.attention %q, %k, %k {causal, head_dim = 2 : i64, num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
          %o = parc.linear %a, @o::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %r = parc.add %x, %o : tensor<?x?x16xf32>
          %u = parc.linear %r, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
          %g = parc.activation silu %u : tensor<?x?x32xf32>
          %d = parc.linear %g, @down::@weight : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
          %y = parc.add %r, %d : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%h0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
      %h1 = parc.call @layers::@"0"(%h0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      %h2 = parc.call @layers::@"1"(%h1) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      return %h2 : tensor<?x?x16xf32>
    }
  }
}

// -----

parc.model @ffn class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 1>]} {
  parc.module @model "Model" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @q "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @k "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @o "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @up "Linear" leaf {
          // expected-error@+1 {{tensor parallel size 4 does not divide the intermediate size 30 of the language layers (dim 0 of model.layers.0.up.weight = 30) of @ffn; use a size that divides 30}}
          parc.param @weight : tensor<30x16xf32>
        }
        parc.module @down "Linear" leaf {
          parc.param @weight : tensor<16x30xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %q = parc.linear %x, @q::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %k = parc.linear %x, @k::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %a = parc.attention %q, %k, %k {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %o = parc.linear %a, @o::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %r = parc.add %x, %o : tensor<?x?x16xf32>
          %u = parc.linear %r, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x30xf32>
          %g = parc.activation silu %u : tensor<?x?x30xf32>
          %d = parc.linear %g, @down::@weight : tensor<?x?x30xf32> -> tensor<?x?x16xf32>
          %y = parc.add %r, %d : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%h0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
      %h1 = parc.call @layers::@"0"(%h0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      return %h1 : tensor<?x?x16xf32>
    }
  }
}

// -----

// A norm over the whole query projection needs whole 16-wide groups per rank.
parc.model @groups class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 1>]} {
  parc.module @model "Model" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @q "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @k "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @o "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @up "Linear" leaf {
          parc.param @weight : tensor<32x16xf32>
        }
        parc.module @down "Linear" leaf {
          parc.param @weight : tensor<16x32xf32>
        }
        parc.module @qn "RMSNorm" leaf {
          parc.param @weight : tensor<16xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %q = parc.linear %x, @q::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %k = parc.linear %x, @k::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          // expected-error@+1 {{tensor parallel size 4 does not divide the 16-wide query projection into whole 16-wide groups of the language layers (rms_norm model.layers.0.qn.weight normalising groups of 16) of @groups; use a size that divides 1}}
          %qn = parc.rms_norm %q, @qn::@weight {eps = 1.0e-6 : f64} : tensor<?x?x16xf32>
          %a = parc.attention %qn, %k, %k {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %o = parc.linear %a, @o::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %r = parc.add %x, %o : tensor<?x?x16xf32>
          %u = parc.linear %r, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
          %g = parc.activation silu %u : tensor<?x?x32xf32>
          %d = parc.linear %g, @down::@weight : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
          %y = parc.add %r, %d : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%h0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
      %h1 = parc.call @layers::@"0"(%h0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      return %h1 : tensor<?x?x16xf32>
    }
  }
}

// -----

// With a parc.hf_config the refusal names the config key, and a note points
// at the config's line (no column: its excerpt would be the whole dictionary).
parc.model @config class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 1>]} {
  // expected-note@+1 {{num_key_value_heads = 2 in the imported config (hf:test)}}
  parc.hf_config "hf:test" {num_attention_heads = 8 : i64, num_key_value_heads = 2 : i64} defaulted []
  parc.module @model "Model" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @q "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @k "Linear" leaf {
          parc.param @weight : tensor<4x16xf32>
        }
        parc.module @o "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %q = parc.linear %x, @q::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %k = parc.linear %x, @k::@weight : tensor<?x?x16xf32> -> tensor<?x?x4xf32>
          // expected-error@+1 {{tensor parallel size 4 does not divide the 2 KV heads of the language layers (num_key_value_heads = 2) of @config; use a size that divides 2}}
          %a = parc.attention %q, %k, %k {causal, head_dim = 2 : i64, num_heads = 8 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x4xf32>, tensor<?x?x4xf32>) -> tensor<?x?x16xf32>
          %o = parc.linear %a, @o::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %y = parc.add %x, %o : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%h0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
      %h1 = parc.call @layers::@"0"(%h0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      return %h1 : tensor<?x?x16xf32>
    }
  }
}

// -----

// A tie group is one tensor: its members cannot be split two ways. The error
// is on the tie, with a note at each of the two parameters.
parc.model @tied class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 1>]} {
  parc.module @model "Model" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @q "Linear" leaf {
          // expected-note@+1 {{model.layers.0.q.weight is colwise}}
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @o "Linear" leaf {
          // expected-note@+1 {{model.layers.0.o.weight would be rowwise}}
          parc.param @weight : tensor<16x16xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %q = parc.linear %x, @q::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %o = parc.linear %a, @o::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %y = parc.add %x, %o : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%h0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
      %h1 = parc.call @layers::@"0"(%h0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      return %h1 : tensor<?x?x16xf32>
    }
  }
  // expected-error@+1 {{apply-tp: tied parameter model.layers.0.o.weight would be rowwise but its tie group is colwise}}
  parc.tie [@model::@layers::@"0"::@q::@weight, @model::@layers::@"0"::@o::@weight]
}

// -----

// Discovery (run on demand) finds no layer to split.
// expected-warning@+2 {{no layer stacks found in @nolayers}}
// expected-error@+1 {{apply-tp needs layer stacks: discovery found none in @nolayers}}
parc.model @nolayers class "M" {
  parc.param @w : tensor<16x16xf32>
}

// -----

// A column-parallel linear's output passed to another module.
parc.model @split_call class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 1>]} {
  parc.module @model "Model" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @up "Linear" leaf {
          parc.param @weight : tensor<32x16xf32>
        }
        parc.module @down "Linear" leaf {
          parc.param @weight : tensor<16x32xf32>
        }
        parc.module @mlp "MLP" composite {
          func.func @forward(%x: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
            %g = parc.activation silu %x : tensor<?x?x32xf32>
            return %g : tensor<?x?x32xf32>
          }
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %u = parc.linear %x, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
          // expected-error@+1 {{apply-tp: passes values split over TP ranks to '@mlp'; TP-split values stay inside one module}}
          %g = parc.call @mlp(%u) : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
          %d = parc.linear %g, @down::@weight : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
          %y = parc.add %x, %d : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%h0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
      %h1 = parc.call @layers::@"0"(%h0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      return %h1 : tensor<?x?x16xf32>
    }
  }
  func.func @forward(%h0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
    %h = parc.call @model(%h0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
    return %h : tensor<?x?x16xf32>
  }
}
