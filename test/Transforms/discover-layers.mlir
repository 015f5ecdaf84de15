// RUN: parc-opt %s --discover-layers -split-input-file -verify-diagnostics | FileCheck %s
// Idempotent: a second run prints the same IR as the first.
// RUN: parc-opt %s --discover-layers -split-input-file 2>/dev/null > %t.once
// RUN: parc-opt %t.once --discover-layers -split-input-file 2>/dev/null | diff %t.once -

// A ModuleList of three decoder layers. The attention is in each layer's
// self_attn, reached through parc.call. TinyModel maps hidden states to hidden
// states and runs attention too, but it sits under no container, so it is not
// a layer.

// CHECK-LABEL: parc.model @plain_list
// CHECK-SAME: parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 3>]
// CHECK-NOT: parc.stack =
// CHECK: parc.module @"0" "DecoderLayer" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"}
// CHECK-NOT: parc.stack =
// CHECK: parc.module @"1" "DecoderLayer" composite attributes {parc.layer_index = 1 : i64, parc.stack = "language"}
// CHECK-NOT: parc.stack =
// CHECK: parc.module @"2" "DecoderLayer" composite attributes {parc.layer_index = 2 : i64, parc.stack = "language"}
// CHECK-NOT: parc.stack =
// expected-remark @+1 {{3 layers in model.layers (language)}}
parc.model @plain_list class "TinyForCausalLM" {
  parc.module @model "TinyModel" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "DecoderLayer" composite {
        parc.module @self_attn "Attention" composite {
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
            return %a : tensor<?x?x16xf32>
          }
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.call @self_attn(%x) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"1" "DecoderLayer" composite {
        parc.module @self_attn "Attention" composite {
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
            return %a : tensor<?x?x16xf32>
          }
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.call @self_attn(%x) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"2" "DecoderLayer" composite {
        parc.module @self_attn "Attention" composite {
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
            return %a : tensor<?x?x16xf32>
          }
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.call @self_attn(%x) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
      %h0 = parc.call @layers::@"0"(%x) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      %h1 = parc.call @layers::@"1"(%h0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      %h2 = parc.call @layers::@"2"(%h1) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      return %h2 : tensor<?x?x16xf32>
    }
  }
}

// -----
// The same layers in a ModuleDict keyed "0".."2", as pipeline splitting leaves
// them, are the same stack.

// CHECK-LABEL: parc.model @numeric_dict
// CHECK-SAME: parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 3>]
// CHECK: parc.module @layers "ModuleDict" dict {
// CHECK-NEXT: parc.module @"0" "DecoderLayer" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"}
// CHECK: parc.module @"1" "DecoderLayer" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"}
// CHECK: parc.module @"2" "DecoderLayer" leaf attributes {parc.layer_index = 2 : i64, parc.stack = "language"}
// expected-remark @+1 {{3 layers in model.layers (language)}}
parc.model @numeric_dict class "TinyForCausalLM" {
  parc.module @model "TinyModel" composite {
    parc.module @layers "ModuleDict" dict {
      parc.module @"0" "DecoderLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"1" "DecoderLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"2" "DecoderLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
  }
}

// -----
// Sequentials inside a ModuleList flatten into one stack, numbered in
// container order; the stack is named by the list, the outermost container
// that holds only these layers.

// CHECK-LABEL: parc.model @sequential_in_list
// CHECK-SAME: parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 3>]
// CHECK: parc.module @"0" "Sequential" sequential {
// CHECK-NEXT: parc.module @"0" "DecoderLayer" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"}
// CHECK: parc.module @"1" "DecoderLayer" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"}
// CHECK: parc.module @"1" "Sequential" sequential {
// CHECK-NEXT: parc.module @"0" "DecoderLayer" leaf attributes {parc.layer_index = 2 : i64, parc.stack = "language"}
// expected-remark @+1 {{3 layers in model.layers (language)}}
parc.model @sequential_in_list class "TinyForCausalLM" {
  parc.module @model "TinyModel" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Sequential" sequential {
        parc.module @"0" "DecoderLayer" leaf {
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
            %y = parc.add %x, %a : tensor<?x?x16xf32>
            return %y : tensor<?x?x16xf32>
          }
        }
        parc.module @"1" "DecoderLayer" leaf {
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
            %y = parc.add %x, %a : tensor<?x?x16xf32>
            return %y : tensor<?x?x16xf32>
          }
        }
      }
      parc.module @"1" "Sequential" sequential {
        parc.module @"0" "DecoderLayer" leaf {
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
            %y = parc.add %x, %a : tensor<?x?x16xf32>
            return %y : tensor<?x?x16xf32>
          }
        }
      }
    }
  }
}

// -----
// A list inside a Sequential inside a ModuleDict, at every level named by
// string keys: still one stack, named by the dict.

// CHECK-LABEL: parc.model @list_in_sequential_in_dict
// CHECK-SAME: parc.stacks = [#parc.stack<name = "language", path = "model.stages", layers = 3>]
// CHECK: parc.module @first "Sequential" sequential {
// CHECK-NEXT: parc.module @"0" "ModuleList" list {
// CHECK-NEXT: parc.module @"0" "DecoderLayer" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"}
// CHECK: parc.module @"1" "DecoderLayer" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"}
// CHECK: parc.module @second "Sequential" sequential {
// CHECK-NEXT: parc.module @"0" "ModuleList" list {
// CHECK-NEXT: parc.module @"0" "DecoderLayer" leaf attributes {parc.layer_index = 2 : i64, parc.stack = "language"}
// expected-remark @+1 {{3 layers in model.stages (language)}}
parc.model @list_in_sequential_in_dict class "TinyForCausalLM" {
  parc.module @model "TinyModel" composite {
    parc.module @stages "ModuleDict" dict {
      parc.module @first "Sequential" sequential {
        parc.module @"0" "ModuleList" list {
          parc.module @"0" "DecoderLayer" leaf {
            func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
              %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
              %y = parc.add %x, %a : tensor<?x?x16xf32>
              return %y : tensor<?x?x16xf32>
            }
          }
          parc.module @"1" "DecoderLayer" leaf {
            func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
              %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
              %y = parc.add %x, %a : tensor<?x?x16xf32>
              return %y : tensor<?x?x16xf32>
            }
          }
        }
      }
      parc.module @second "Sequential" sequential {
        parc.module @"0" "ModuleList" list {
          parc.module @"0" "DecoderLayer" leaf {
            func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
              %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
              %y = parc.add %x, %a : tensor<?x?x16xf32>
              return %y : tensor<?x?x16xf32>
            }
          }
        }
      }
    }
  }
}

// -----
// A one-layer model still has a stack; the list holding only the Sequential
// holding the layer names it.

// CHECK-LABEL: parc.model @one_layer
// CHECK-SAME: parc.stacks = [#parc.stack<name = "language", path = "layers", layers = 1>]
// CHECK: parc.module @"0" "DecoderLayer" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"}
// expected-remark @+1 {{1 layer in layers (language)}}
parc.model @one_layer class "TinyForCausalLM" {
  parc.module @layers "ModuleList" list {
    parc.module @"0" "Sequential" sequential {
      parc.module @"0" "DecoderLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
  }
}

// -----
// A vision tower with bidirectional attention before a causal language stack:
// two stacks in pre-order, named by their attention's causality.

// CHECK-LABEL: parc.model @vision_language
// CHECK-SAME: parc.stacks = [#parc.stack<name = "vision", path = "vision_tower.encoder.layers", layers = 2>, #parc.stack<name = "language", path = "language_model.layers", layers = 2>]
// CHECK: parc.module @"0" "EncoderLayer" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "vision"}
// CHECK: parc.module @"1" "EncoderLayer" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "vision"}
// CHECK: parc.module @"0" "DecoderLayer" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"}
// CHECK: parc.module @"1" "DecoderLayer" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"}
// expected-remark @+2 {{2 layers in vision_tower.encoder.layers (vision)}}
// expected-remark @+1 {{2 layers in language_model.layers (language)}}
parc.model @vision_language class "TinyForConditionalGeneration" {
  parc.module @vision_tower "VisionModel" composite {
    parc.module @encoder "VisionEncoder" composite {
      parc.module @layers "ModuleList" list {
        parc.module @"0" "EncoderLayer" leaf {
          func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
            %a = parc.attention %x, %x, %x {head_dim = 4 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
            %y = parc.add %x, %a : tensor<?x?x8xf32>
            return %y : tensor<?x?x8xf32>
          }
        }
        parc.module @"1" "EncoderLayer" leaf {
          func.func @forward(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
            %a = parc.attention %x, %x, %x {head_dim = 4 : i64, num_heads = 2 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64} : (tensor<?x?x8xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x8xf32>
            %y = parc.add %x, %a : tensor<?x?x8xf32>
            return %y : tensor<?x?x8xf32>
          }
        }
      }
    }
  }
  parc.module @language_model "TextModel" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "DecoderLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"1" "DecoderLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
  }
}

// -----
// One class with sliding and full attention, a full-attention layer whose
// values are its keys (no v_proj) and a different head_dim: one stack.

// CHECK-LABEL: parc.model @mixed_attention
// CHECK-SAME: parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 3>]
// CHECK: parc.module @"0" "DecoderLayer" composite attributes {layer_type = "sliding_attention", parc.layer_index = 0 : i64, parc.stack = "language"}
// CHECK: parc.module @"1" "DecoderLayer" composite attributes {layer_type = "full_attention", parc.layer_index = 1 : i64, parc.stack = "language"}
// CHECK: parc.module @"2" "DecoderLayer" composite attributes {layer_type = "sliding_attention", parc.layer_index = 2 : i64, parc.stack = "language"}
// expected-remark @+1 {{3 layers in model.layers (language)}}
parc.model @mixed_attention class "TinyForCausalLM" {
  parc.module @model "TinyModel" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "DecoderLayer" composite attributes {layer_type = "sliding_attention"} {
        parc.module @k_proj "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @v_proj "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %k = parc.linear %x, @k_proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %v = parc.linear %x, @v_proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %a = parc.attention %x, %k, %v {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64, sliding_window = 8 : i64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"1" "DecoderLayer" composite attributes {layer_type = "full_attention"} {
        parc.module @q_proj "Linear" leaf {
          parc.param @weight : tensor<32x16xf32>
        }
        parc.module @k_proj "Linear" leaf {
          parc.param @weight : tensor<8x16xf32>
        }
        parc.module @o_proj "Linear" leaf {
          parc.param @weight : tensor<16x32xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %q = parc.linear %x, @q_proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
          %k = parc.linear %x, @k_proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
          %a = parc.attention %q, %k, %k {causal, head_dim = 8 : i64, k_eq_v, num_heads = 4 : i64, num_kv_heads = 1 : i64, scale = 1.0 : f64} : (tensor<?x?x32xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x32xf32>
          %o = parc.linear %a, @o_proj::@weight : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
          %y = parc.add %x, %o : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"2" "DecoderLayer" composite attributes {layer_type = "sliding_attention"} {
        parc.module @k_proj "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @v_proj "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %k = parc.linear %x, @k_proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %v = parc.linear %x, @v_proj::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %a = parc.attention %x, %k, %v {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64, sliding_window = 8 : i64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
  }
}

// -----
// Two classes in one list are two runs, so two language stacks; the second is
// numbered. Both are held by the same list, which names them.

// CHECK-LABEL: parc.model @two_classes
// CHECK-SAME: parc.stacks = [#parc.stack<name = "language", path = "layers", layers = 2>, #parc.stack<name = "language_1", path = "layers", layers = 1>]
// CHECK: parc.module @"0" "DenseLayer" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"}
// CHECK: parc.module @"1" "DenseLayer" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"}
// CHECK: parc.module @"2" "SparseLayer" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language_1"}
// expected-remark @+2 {{2 layers in layers (language)}}
// expected-remark @+1 {{1 layer in layers (language_1)}}
parc.model @two_classes class "TinyForCausalLM" {
  parc.module @layers "ModuleList" list {
    parc.module @"0" "DenseLayer" leaf {
      func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
        %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
        %y = parc.add %x, %a : tensor<?x?x16xf32>
        return %y : tensor<?x?x16xf32>
      }
    }
    parc.module @"1" "DenseLayer" leaf {
      func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
        %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
        %y = parc.add %x, %a : tensor<?x?x16xf32>
        return %y : tensor<?x?x16xf32>
      }
    }
    parc.module @"2" "SparseLayer" leaf {
      func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
        %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
        %y = parc.add %x, %a : tensor<?x?x16xf32>
        return %y : tensor<?x?x16xf32>
      }
    }
  }
}

// -----
// No layers: the blocks with attention change the hidden width, the residual
// blocks have no attention. Valid input; discovery warns, records that it ran
// and found nothing, and tags no module.

// CHECK-LABEL: parc.model @no_layers
// CHECK-SAME: parc.stacks = []
// CHECK-NOT: parc.stack =
// expected-warning @+1 {{no layer stacks found in @no_layers; containers searched: blocks, mlps (a layer is}}
parc.model @no_layers class "TinyModel" {
  parc.module @blocks "ModuleList" list {
    parc.module @"0" "Projector" leaf {
      parc.param @weight : tensor<8x16xf32>
      func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x8xf32> {
        %a = parc.attention %x, %x, %x {head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
        %p = parc.linear %a, @weight : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
        return %p : tensor<?x?x8xf32>
      }
    }
  }
  parc.module @mlps "Sequential" sequential {
    parc.module @"0" "MLPBlock" leaf {
      parc.param @weight : tensor<16x16xf32>
      func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
        %u = parc.linear %x, @weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
        %y = parc.add %x, %u : tensor<?x?x16xf32>
        return %y : tensor<?x?x16xf32>
      }
    }
  }
}

// -----
// No containers at all.

// CHECK-LABEL: parc.model @no_containers
// CHECK-SAME: parc.stacks = []
// expected-warning @+1 {{no layer stacks found in @no_containers; containers searched: none}}
parc.model @no_containers class "Linear" {
  parc.param @weight : tensor<8x16xf32>
}
