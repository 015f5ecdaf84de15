// RUN: parc-opt %s --discover-layers=stacks=model.layers -split-input-file -verify-diagnostics

// Every chunk overrides the stacks with `model.layers`; each gets it wrong in
// another way.

// The path names nothing; the error lists where discovery finds layers.
// The errors are about the pass option, so they are on the model; notes point
// at the ops the path names.

// expected-error @+1 {{stack override 'model.layers' resolves to nothing in @renamed; containers with layers: model.decoder.layers}}
parc.model @renamed class "TinyForCausalLM" {
  parc.module @model "TinyModel" composite {
    parc.module @decoder "Decoder" composite {
      parc.module @layers "ModuleList" list {
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
// The path names a list of MLP blocks: residual, but without attention.

// expected-error @+1 {{stack override 'model.layers' holds no layers in @mlp_only}}
parc.model @mlp_only class "TinyModel" {
  parc.module @model "TinyModel" composite {
    // expected-note @+1 {{stack override 'model.layers' names this module}}
    parc.module @layers "ModuleList" list {
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
}

// -----
// The path names a layer, not a container of layers.

// expected-error @+1 {{stack override 'model.layers' holds no layers in @names_a_layer}}
parc.model @names_a_layer class "TinyModel" {
  parc.module @model "TinyModel" composite {
    // expected-note @+1 {{stack override 'model.layers' names this module}}
    parc.module @layers "DecoderLayer" leaf {
      func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
        %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
        %y = parc.add %x, %a : tensor<?x?x16xf32>
        return %y : tensor<?x?x16xf32>
      }
    }
  }
}

// -----
// The path names a parameter.

// expected-error @+1 {{stack override 'model.layers' names a 'parc.param', not a parc.module, in @names_a_param; containers with layers: none}}
parc.model @names_a_param class "TinyModel" {
  parc.module @model "TinyModel" composite {
    // expected-note @+1 {{stack override 'model.layers' names this op}}
    parc.param @layers : tensor<16xf32>
  }
}

// -----
// Causal and bidirectional layers cannot share one stack.

// expected-error @+1 {{stack override 'model.layers' in @mixed mixes causal and bidirectional layers (model.layers.text, model.layers.vision); name each container on its own}}
parc.model @mixed class "TinyForConditionalGeneration" {
  parc.module @model "TinyModel" composite {
    parc.module @layers "ModuleDict" dict {
      parc.module @text "ModuleList" list {
        // expected-note @+1 {{model.layers.text.0 is causal}}
        parc.module @"0" "DecoderLayer" leaf {
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
            %y = parc.add %x, %a : tensor<?x?x16xf32>
            return %y : tensor<?x?x16xf32>
          }
        }
      }
      parc.module @vision "ModuleList" list {
        // expected-note @+1 {{model.layers.vision.0 is bidirectional}}
        parc.module @"0" "EncoderLayer" leaf {
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            %a = parc.attention %x, %x, %x {head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
            %y = parc.add %x, %a : tensor<?x?x16xf32>
            return %y : tensor<?x?x16xf32>
          }
        }
      }
    }
  }
}
