module {
  parc.model @llama_tiny class "LlamaForCausalLM" {
    parc.hf_config "hf:llama" {attention_bias = false, head_dim = 64 : i64, hidden_act = "silu", hidden_size = 256 : i64, intermediate_size = 688 : i64, mlp_bias = false, model_type = "llama", num_attention_heads = 4 : i64, num_hidden_layers = 4 : i64, num_key_value_heads = 2 : i64, rms_norm_eps = 1.000000e-05 : f64, rope_theta = 1.000000e+04 : f64, tie_word_embeddings = false, torch_dtype = "float32", vocab_size = 1024 : i64} defaulted ["head_dim", "mlp_bias", "attention_bias", "layer_types"]
    parc.module @model "LlamaModel" composite {
      parc.module @embed_tokens "Embedding" leaf {
        parc.param @weight : tensor<1024x256xf32>
      }
      parc.module @layers "ModuleList" list {
        parc.module @"0" "LlamaDecoderLayer" composite attributes {layer_type = "full_attention"} {
          parc.module @self_attn "LlamaAttention" composite {
            parc.module @q_proj "Linear" leaf {
              parc.param @weight : tensor<256x256xf32>
            }
            parc.module @k_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @v_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @o_proj "Linear" leaf {
              parc.param @weight : tensor<256x256xf32>
            }
            func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
              %0 = parc.linear %arg0, @q_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x256xf32>
              %1 = parc.linear %arg0, @k_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              %2 = parc.linear %arg0, @v_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              %3 = parc.rope %0 {head_dim = 64 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x256xf32>
              %4 = parc.rope %1 {head_dim = 64 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x128xf32>
              %5 = parc.attention %3, %4, %2 {causal, head_dim = 64 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 1.250000e-01 : f64} : (tensor<?x?x256xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>) -> tensor<?x?x256xf32>
              %6 = parc.linear %5, @o_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x256xf32>
              return %6 : tensor<?x?x256xf32>
            }
          }
          parc.module @mlp "LlamaMLP" composite {
            parc.module @gate_proj "Linear" leaf {
              parc.param @weight : tensor<688x256xf32>
            }
            parc.module @up_proj "Linear" leaf {
              parc.param @weight : tensor<688x256xf32>
            }
            parc.module @down_proj "Linear" leaf {
              parc.param @weight : tensor<256x688xf32>
            }
            parc.module @act_fn "SiLU" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
              %0 = parc.linear %arg0, @gate_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x688xf32>
              %1 = parc.activation silu %0 : tensor<?x?x688xf32>
              %2 = parc.linear %arg0, @up_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x688xf32>
              %3 = parc.mul %1, %2 : tensor<?x?x688xf32>
              %4 = parc.linear %3, @down_proj::@weight : tensor<?x?x688xf32> -> tensor<?x?x256xf32>
              return %4 : tensor<?x?x256xf32>
            }
          }
          parc.module @input_layernorm "LlamaRMSNorm" leaf {
            parc.param @weight : tensor<256xf32>
          }
          parc.module @post_attention_layernorm "LlamaRMSNorm" leaf {
            parc.param @weight : tensor<256xf32>
          }
          func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
            %0 = parc.rms_norm %arg0, @input_layernorm::@weight {eps = 1.000000e-05 : f64} : tensor<?x?x256xf32>
            %1 = parc.call @self_attn(%0) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
            %2 = parc.add %arg0, %1 : tensor<?x?x256xf32>
            %3 = parc.rms_norm %2, @post_attention_layernorm::@weight {eps = 1.000000e-05 : f64} : tensor<?x?x256xf32>
            %4 = parc.call @mlp(%3) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
            %5 = parc.add %2, %4 : tensor<?x?x256xf32>
            return %5 : tensor<?x?x256xf32>
          }
        }
        parc.module @"1" "LlamaDecoderLayer" composite attributes {layer_type = "full_attention"} {
          parc.module @self_attn "LlamaAttention" composite {
            parc.module @q_proj "Linear" leaf {
              parc.param @weight : tensor<256x256xf32>
            }
            parc.module @k_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @v_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @o_proj "Linear" leaf {
              parc.param @weight : tensor<256x256xf32>
            }
            func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
              %0 = parc.linear %arg0, @q_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x256xf32>
              %1 = parc.linear %arg0, @k_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              %2 = parc.linear %arg0, @v_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              %3 = parc.rope %0 {head_dim = 64 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x256xf32>
              %4 = parc.rope %1 {head_dim = 64 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x128xf32>
              %5 = parc.attention %3, %4, %2 {causal, head_dim = 64 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 1.250000e-01 : f64} : (tensor<?x?x256xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>) -> tensor<?x?x256xf32>
              %6 = parc.linear %5, @o_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x256xf32>
              return %6 : tensor<?x?x256xf32>
            }
          }
          parc.module @mlp "LlamaMLP" composite {
            parc.module @gate_proj "Linear" leaf {
              parc.param @weight : tensor<688x256xf32>
            }
            parc.module @up_proj "Linear" leaf {
              parc.param @weight : tensor<688x256xf32>
            }
            parc.module @down_proj "Linear" leaf {
              parc.param @weight : tensor<256x688xf32>
            }
            parc.module @act_fn "SiLU" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
              %0 = parc.linear %arg0, @gate_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x688xf32>
              %1 = parc.activation silu %0 : tensor<?x?x688xf32>
              %2 = parc.linear %arg0, @up_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x688xf32>
              %3 = parc.mul %1, %2 : tensor<?x?x688xf32>
              %4 = parc.linear %3, @down_proj::@weight : tensor<?x?x688xf32> -> tensor<?x?x256xf32>
              return %4 : tensor<?x?x256xf32>
            }
          }
          parc.module @input_layernorm "LlamaRMSNorm" leaf {
            parc.param @weight : tensor<256xf32>
          }
          parc.module @post_attention_layernorm "LlamaRMSNorm" leaf {
            parc.param @weight : tensor<256xf32>
          }
          func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
            %0 = parc.rms_norm %arg0, @input_layernorm::@weight {eps = 1.000000e-05 : f64} : tensor<?x?x256xf32>
            %1 = parc.call @self_attn(%0) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
            %2 = parc.add %arg0, %1 : tensor<?x?x256xf32>
            %3 = parc.rms_norm %2, @post_attention_layernorm::@weight {eps = 1.000000e-05 : f64} : tensor<?x?x256xf32>
            %4 = parc.call @mlp(%3) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
            %5 = parc.add %2, %4 : tensor<?x?x256xf32>
            return %5 : tensor<?x?x256xf32>
          }
        }
        parc.module @"2" "LlamaDecoderLayer" composite attributes {layer_type = "full_attention"} {
          parc.module @self_attn "LlamaAttention" composite {
            parc.module @q_proj "Linear" leaf {
              parc.param @weight : tensor<256x256xf32>
            }
            parc.module @k_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @v_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @o_proj "Linear" leaf {
              parc.param @weight : tensor<256x256xf32>
            }
            func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
              %0 = parc.linear %arg0, @q_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x256xf32>
              %1 = parc.linear %arg0, @k_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              %2 = parc.linear %arg0, @v_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              %3 = parc.rope %0 {head_dim = 64 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x256xf32>
              %4 = parc.rope %1 {head_dim = 64 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x128xf32>
              %5 = parc.attention %3, %4, %2 {causal, head_dim = 64 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 1.250000e-01 : f64} : (tensor<?x?x256xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>) -> tensor<?x?x256xf32>
              %6 = parc.linear %5, @o_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x256xf32>
              return %6 : tensor<?x?x256xf32>
            }
          }
          parc.module @mlp "LlamaMLP" composite {
            parc.module @gate_proj "Linear" leaf {
              parc.param @weight : tensor<688x256xf32>
            }
            parc.module @up_proj "Linear" leaf {
              parc.param @weight : tensor<688x256xf32>
            }
            parc.module @down_proj "Linear" leaf {
              parc.param @weight : tensor<256x688xf32>
            }
            parc.module @act_fn "SiLU" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
              %0 = parc.linear %arg0, @gate_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x688xf32>
              %1 = parc.activation silu %0 : tensor<?x?x688xf32>
              %2 = parc.linear %arg0, @up_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x688xf32>
              %3 = parc.mul %1, %2 : tensor<?x?x688xf32>
              %4 = parc.linear %3, @down_proj::@weight : tensor<?x?x688xf32> -> tensor<?x?x256xf32>
              return %4 : tensor<?x?x256xf32>
            }
          }
          parc.module @input_layernorm "LlamaRMSNorm" leaf {
            parc.param @weight : tensor<256xf32>
          }
          parc.module @post_attention_layernorm "LlamaRMSNorm" leaf {
            parc.param @weight : tensor<256xf32>
          }
          func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
            %0 = parc.rms_norm %arg0, @input_layernorm::@weight {eps = 1.000000e-05 : f64} : tensor<?x?x256xf32>
            %1 = parc.call @self_attn(%0) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
            %2 = parc.add %arg0, %1 : tensor<?x?x256xf32>
            %3 = parc.rms_norm %2, @post_attention_layernorm::@weight {eps = 1.000000e-05 : f64} : tensor<?x?x256xf32>
            %4 = parc.call @mlp(%3) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
            %5 = parc.add %2, %4 : tensor<?x?x256xf32>
            return %5 : tensor<?x?x256xf32>
          }
        }
        parc.module @"3" "LlamaDecoderLayer" composite attributes {layer_type = "full_attention"} {
          parc.module @self_attn "LlamaAttention" composite {
            parc.module @q_proj "Linear" leaf {
              parc.param @weight : tensor<256x256xf32>
            }
            parc.module @k_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @v_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @o_proj "Linear" leaf {
              parc.param @weight : tensor<256x256xf32>
            }
            func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
              %0 = parc.linear %arg0, @q_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x256xf32>
              %1 = parc.linear %arg0, @k_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              %2 = parc.linear %arg0, @v_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              %3 = parc.rope %0 {head_dim = 64 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x256xf32>
              %4 = parc.rope %1 {head_dim = 64 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x128xf32>
              %5 = parc.attention %3, %4, %2 {causal, head_dim = 64 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 1.250000e-01 : f64} : (tensor<?x?x256xf32>, tensor<?x?x128xf32>, tensor<?x?x128xf32>) -> tensor<?x?x256xf32>
              %6 = parc.linear %5, @o_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x256xf32>
              return %6 : tensor<?x?x256xf32>
            }
          }
          parc.module @mlp "LlamaMLP" composite {
            parc.module @gate_proj "Linear" leaf {
              parc.param @weight : tensor<688x256xf32>
            }
            parc.module @up_proj "Linear" leaf {
              parc.param @weight : tensor<688x256xf32>
            }
            parc.module @down_proj "Linear" leaf {
              parc.param @weight : tensor<256x688xf32>
            }
            parc.module @act_fn "SiLU" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
              %0 = parc.linear %arg0, @gate_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x688xf32>
              %1 = parc.activation silu %0 : tensor<?x?x688xf32>
              %2 = parc.linear %arg0, @up_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x688xf32>
              %3 = parc.mul %1, %2 : tensor<?x?x688xf32>
              %4 = parc.linear %3, @down_proj::@weight : tensor<?x?x688xf32> -> tensor<?x?x256xf32>
              return %4 : tensor<?x?x256xf32>
            }
          }
          parc.module @input_layernorm "LlamaRMSNorm" leaf {
            parc.param @weight : tensor<256xf32>
          }
          parc.module @post_attention_layernorm "LlamaRMSNorm" leaf {
            parc.param @weight : tensor<256xf32>
          }
          func.func @forward(%arg0: tensor<?x?x256xf32>) -> tensor<?x?x256xf32> {
            %0 = parc.rms_norm %arg0, @input_layernorm::@weight {eps = 1.000000e-05 : f64} : tensor<?x?x256xf32>
            %1 = parc.call @self_attn(%0) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
            %2 = parc.add %arg0, %1 : tensor<?x?x256xf32>
            %3 = parc.rms_norm %2, @post_attention_layernorm::@weight {eps = 1.000000e-05 : f64} : tensor<?x?x256xf32>
            %4 = parc.call @mlp(%3) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
            %5 = parc.add %2, %4 : tensor<?x?x256xf32>
            return %5 : tensor<?x?x256xf32>
          }
        }
      }
      parc.module @norm "LlamaRMSNorm" leaf {
        parc.param @weight : tensor<256xf32>
      }
      parc.module @rotary_emb "LlamaRotaryEmbedding" leaf {
      }
      func.func @forward(%arg0: tensor<?x?xi64>) -> tensor<?x?x256xf32> {
        %0 = parc.embedding %arg0, @embed_tokens::@weight : tensor<?x?xi64> -> tensor<?x?x256xf32>
        %1 = parc.call @layers::@"0"(%0) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
        %2 = parc.call @layers::@"1"(%1) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
        %3 = parc.call @layers::@"2"(%2) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
        %4 = parc.call @layers::@"3"(%3) : (tensor<?x?x256xf32>) -> tensor<?x?x256xf32>
        %5 = parc.rms_norm %4, @norm::@weight {eps = 1.000000e-05 : f64} : tensor<?x?x256xf32>
        return %5 : tensor<?x?x256xf32>
      }
    }
    parc.module @lm_head "Linear" leaf {
      parc.param @weight : tensor<1024x256xf32>
    }
    func.func @forward(%arg0: tensor<?x?xi64>, %arg1: tensor<?x?xi64>) -> tensor<f32> {
      %0 = parc.call @model(%arg0) : (tensor<?x?xi64>) -> tensor<?x?x256xf32>
      %1 = parc.linear %0, @lm_head::@weight : tensor<?x?x256xf32> -> tensor<?x?x1024xf32>
      %2 = parc.cross_entropy %1, %arg1 : tensor<?x?x1024xf32>, tensor<?x?xi64> -> tensor<f32>
      return %2 : tensor<f32>
    }
  }
}
