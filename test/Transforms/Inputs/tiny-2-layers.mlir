parc.model @tiny class "TinyForCausalLM" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 2>]} {
  parc.module @model "TinyModel" composite {
    parc.module @embed "Embedding" leaf {
      parc.param @weight : tensor<100x16xf32>
    }
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @norm "RMSNorm" leaf {
          parc.param @weight : tensor<16xf32>
        }
        parc.module @q "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @up "Linear" leaf {
          parc.param @weight : tensor<30x16xf32>
        }
        parc.module @down "Linear" leaf {
          parc.param @weight : tensor<16x30xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %n = parc.rms_norm %x, @norm::@weight {eps = 1.0e-6 : f64} : tensor<?x?x16xf32>
          %q = parc.linear %n, @q::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %r = parc.add %x, %a : tensor<?x?x16xf32>
          %u = parc.linear %r, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x30xf32>
          %g = parc.activation silu %u : tensor<?x?x30xf32>
          %d = parc.linear %g, @down::@weight : tensor<?x?x30xf32> -> tensor<?x?x16xf32>
          %y = parc.add %r, %d : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"1" "Block" composite attributes {parc.layer_index = 1 : i64, parc.stack = "language"} {
        parc.module @norm "RMSNorm" leaf {
          parc.param @weight : tensor<16xf32>
        }
        parc.module @q "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @up "Linear" leaf {
          parc.param @weight : tensor<30x16xf32>
        }
        parc.module @down "Linear" leaf {
          parc.param @weight : tensor<16x30xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %n = parc.rms_norm %x, @norm::@weight {eps = 1.0e-6 : f64} : tensor<?x?x16xf32>
          %q = parc.linear %n, @q::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %r = parc.add %x, %a : tensor<?x?x16xf32>
          %u = parc.linear %r, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x30xf32>
          %g = parc.activation silu %u : tensor<?x?x30xf32>
          %d = parc.linear %g, @down::@weight : tensor<?x?x30xf32> -> tensor<?x?x16xf32>
          %y = parc.add %r, %d : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%ids: tensor<?x?xi64>) -> tensor<?x?x16xf32> {
      %h0 = parc.embedding %ids, @embed::@weight : tensor<?x?xi64> -> tensor<?x?x16xf32>
      %h1 = parc.call @layers::@"0"(%h0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      %h2 = parc.call @layers::@"1"(%h1) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      return %h2 : tensor<?x?x16xf32>
    }
  }
  parc.module @lm_head "Linear" leaf {
    parc.param @weight : tensor<100x16xf32>
  }
  func.func @forward(%ids: tensor<?x?xi64>, %labels: tensor<?x?xi64>) -> tensor<f32> {
    %h = parc.call @model(%ids) : (tensor<?x?xi64>) -> tensor<?x?x16xf32>
    %logits = parc.linear %h, @lm_head::@weight : tensor<?x?x16xf32> -> tensor<?x?x100xf32>
    %loss = parc.cross_entropy %logits, %labels : tensor<?x?x100xf32>, tensor<?x?xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
  parc.tie [@model::@embed::@weight, @lm_head::@weight]
}
