module {
  parc.model @gemma4_tiny class "Gemma4ForCausalLM" {
    parc.hf_config "hf:gemma4_text" {attention_bias = false, attention_k_eq_v = true, enable_moe_block = false, final_logit_softcapping = 3.000000e+01 : f64, global_head_dim = 64 : i64, head_dim = 32 : i64, hidden_activation = "gelu_pytorch_tanh", hidden_size = 128 : i64, hidden_size_per_layer_input = 0 : i64, intermediate_size = 256 : i64, model_type = "gemma4_text", num_attention_heads = 4 : i64, num_global_key_value_heads = 1 : i64, num_hidden_layers = 4 : i64, num_key_value_heads = 2 : i64, num_kv_shared_layers = 0 : i64, rms_norm_eps = 9.9999999999999995E-7 : f64, rope_local_base_freq = 1.000000e+04 : f64, rope_theta = 1.000000e+06 : f64, sliding_window = 16 : i64, sliding_window_pattern = 6 : i64, tie_word_embeddings = true, torch_dtype = "float32", vocab_size = 512 : i64} defaulted ["attn_logit_softcapping", "rope_parameters", "query_pre_attn_scalar", "sliding_window_pattern"]
    parc.module @model "Gemma4TextModel" composite {
      parc.module @embed_tokens "Gemma4TextScaledWordEmbedding" leaf {
        parc.param @weight : tensor<512x128xf32>
      }
      parc.module @layers "ModuleList" list {
        parc.module @"0" "Gemma4TextDecoderLayer" composite attributes {layer_type = "sliding_attention"} {
          parc.module @self_attn "Gemma4TextAttention" composite {
            parc.module @q_proj "Linear" leaf {
              parc.param @weight : tensor<128x128xf32>
            }
            parc.module @k_proj "Linear" leaf {
              parc.param @weight : tensor<64x128xf32>
            }
            parc.module @v_proj "Linear" leaf {
              parc.param @weight : tensor<64x128xf32>
            }
            parc.module @o_proj "Linear" leaf {
              parc.param @weight : tensor<128x128xf32>
            }
            parc.module @q_norm "Gemma4RMSNorm" leaf {
              parc.param @weight : tensor<32xf32>
            }
            parc.module @k_norm "Gemma4RMSNorm" leaf {
              parc.param @weight : tensor<32xf32>
            }
            parc.module @v_norm "Gemma4RMSNorm" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
              %0 = parc.linear %arg0, @q_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x128xf32>
              %1 = parc.linear %arg0, @k_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
              %2 = parc.linear %arg0, @v_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
              %3 = parc.rms_norm %0, @q_norm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
              %4 = parc.rms_norm %1, @k_norm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x64xf32>
              %5 = parc.rms_normalize %2 {eps = 9.9999999999999995E-7 : f64, group_size = 32 : i64} : tensor<?x?x64xf32>
              %6 = parc.rope %3 {head_dim = 32 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x128xf32>
              %7 = parc.rope %4 {head_dim = 32 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x64xf32>
              %8 = parc.attention %6, %7, %5 {causal, head_dim = 32 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 1.000000e+00 : f64, sliding_window = 16 : i64} : (tensor<?x?x128xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x128xf32>
              %9 = parc.linear %8, @o_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x128xf32>
              return %9 : tensor<?x?x128xf32>
            }
          }
          parc.module @mlp "Gemma4TextMLP" composite {
            parc.module @gate_proj "Linear" leaf {
              parc.param @weight : tensor<256x128xf32>
            }
            parc.module @up_proj "Linear" leaf {
              parc.param @weight : tensor<256x128xf32>
            }
            parc.module @down_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @act_fn "GELUTanh" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
              %0 = parc.linear %arg0, @gate_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x256xf32>
              %1 = parc.activation gelu_tanh %0 : tensor<?x?x256xf32>
              %2 = parc.linear %arg0, @up_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x256xf32>
              %3 = parc.mul %1, %2 : tensor<?x?x256xf32>
              %4 = parc.linear %3, @down_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              return %4 : tensor<?x?x128xf32>
            }
          }
          parc.module @input_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @post_attention_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @pre_feedforward_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @post_feedforward_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
            %0 = parc.rms_norm %arg0, @input_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %1 = parc.call @self_attn(%0) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
            %2 = parc.rms_norm %1, @post_attention_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %3 = parc.add %arg0, %2 : tensor<?x?x128xf32>
            %4 = parc.rms_norm %3, @pre_feedforward_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %5 = parc.call @mlp(%4) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
            %6 = parc.rms_norm %5, @post_feedforward_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %7 = parc.add %3, %6 : tensor<?x?x128xf32>
            return %7 : tensor<?x?x128xf32>
          }
        }
        parc.module @"1" "Gemma4TextDecoderLayer" composite attributes {layer_type = "sliding_attention"} {
          parc.module @self_attn "Gemma4TextAttention" composite {
            parc.module @q_proj "Linear" leaf {
              parc.param @weight : tensor<128x128xf32>
            }
            parc.module @k_proj "Linear" leaf {
              parc.param @weight : tensor<64x128xf32>
            }
            parc.module @v_proj "Linear" leaf {
              parc.param @weight : tensor<64x128xf32>
            }
            parc.module @o_proj "Linear" leaf {
              parc.param @weight : tensor<128x128xf32>
            }
            parc.module @q_norm "Gemma4RMSNorm" leaf {
              parc.param @weight : tensor<32xf32>
            }
            parc.module @k_norm "Gemma4RMSNorm" leaf {
              parc.param @weight : tensor<32xf32>
            }
            parc.module @v_norm "Gemma4RMSNorm" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
              %0 = parc.linear %arg0, @q_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x128xf32>
              %1 = parc.linear %arg0, @k_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
              %2 = parc.linear %arg0, @v_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
              %3 = parc.rms_norm %0, @q_norm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
              %4 = parc.rms_norm %1, @k_norm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x64xf32>
              %5 = parc.rms_normalize %2 {eps = 9.9999999999999995E-7 : f64, group_size = 32 : i64} : tensor<?x?x64xf32>
              %6 = parc.rope %3 {head_dim = 32 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x128xf32>
              %7 = parc.rope %4 {head_dim = 32 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x64xf32>
              %8 = parc.attention %6, %7, %5 {causal, head_dim = 32 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 1.000000e+00 : f64, sliding_window = 16 : i64} : (tensor<?x?x128xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x128xf32>
              %9 = parc.linear %8, @o_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x128xf32>
              return %9 : tensor<?x?x128xf32>
            }
          }
          parc.module @mlp "Gemma4TextMLP" composite {
            parc.module @gate_proj "Linear" leaf {
              parc.param @weight : tensor<256x128xf32>
            }
            parc.module @up_proj "Linear" leaf {
              parc.param @weight : tensor<256x128xf32>
            }
            parc.module @down_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @act_fn "GELUTanh" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
              %0 = parc.linear %arg0, @gate_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x256xf32>
              %1 = parc.activation gelu_tanh %0 : tensor<?x?x256xf32>
              %2 = parc.linear %arg0, @up_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x256xf32>
              %3 = parc.mul %1, %2 : tensor<?x?x256xf32>
              %4 = parc.linear %3, @down_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              return %4 : tensor<?x?x128xf32>
            }
          }
          parc.module @input_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @post_attention_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @pre_feedforward_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @post_feedforward_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
            %0 = parc.rms_norm %arg0, @input_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %1 = parc.call @self_attn(%0) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
            %2 = parc.rms_norm %1, @post_attention_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %3 = parc.add %arg0, %2 : tensor<?x?x128xf32>
            %4 = parc.rms_norm %3, @pre_feedforward_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %5 = parc.call @mlp(%4) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
            %6 = parc.rms_norm %5, @post_feedforward_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %7 = parc.add %3, %6 : tensor<?x?x128xf32>
            return %7 : tensor<?x?x128xf32>
          }
        }
        parc.module @"2" "Gemma4TextDecoderLayer" composite attributes {layer_type = "sliding_attention"} {
          parc.module @self_attn "Gemma4TextAttention" composite {
            parc.module @q_proj "Linear" leaf {
              parc.param @weight : tensor<128x128xf32>
            }
            parc.module @k_proj "Linear" leaf {
              parc.param @weight : tensor<64x128xf32>
            }
            parc.module @v_proj "Linear" leaf {
              parc.param @weight : tensor<64x128xf32>
            }
            parc.module @o_proj "Linear" leaf {
              parc.param @weight : tensor<128x128xf32>
            }
            parc.module @q_norm "Gemma4RMSNorm" leaf {
              parc.param @weight : tensor<32xf32>
            }
            parc.module @k_norm "Gemma4RMSNorm" leaf {
              parc.param @weight : tensor<32xf32>
            }
            parc.module @v_norm "Gemma4RMSNorm" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
              %0 = parc.linear %arg0, @q_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x128xf32>
              %1 = parc.linear %arg0, @k_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
              %2 = parc.linear %arg0, @v_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
              %3 = parc.rms_norm %0, @q_norm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
              %4 = parc.rms_norm %1, @k_norm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x64xf32>
              %5 = parc.rms_normalize %2 {eps = 9.9999999999999995E-7 : f64, group_size = 32 : i64} : tensor<?x?x64xf32>
              %6 = parc.rope %3 {head_dim = 32 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x128xf32>
              %7 = parc.rope %4 {head_dim = 32 : i64, theta = 1.000000e+04 : f64} : tensor<?x?x64xf32>
              %8 = parc.attention %6, %7, %5 {causal, head_dim = 32 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 1.000000e+00 : f64, sliding_window = 16 : i64} : (tensor<?x?x128xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x128xf32>
              %9 = parc.linear %8, @o_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x128xf32>
              return %9 : tensor<?x?x128xf32>
            }
          }
          parc.module @mlp "Gemma4TextMLP" composite {
            parc.module @gate_proj "Linear" leaf {
              parc.param @weight : tensor<256x128xf32>
            }
            parc.module @up_proj "Linear" leaf {
              parc.param @weight : tensor<256x128xf32>
            }
            parc.module @down_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @act_fn "GELUTanh" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
              %0 = parc.linear %arg0, @gate_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x256xf32>
              %1 = parc.activation gelu_tanh %0 : tensor<?x?x256xf32>
              %2 = parc.linear %arg0, @up_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x256xf32>
              %3 = parc.mul %1, %2 : tensor<?x?x256xf32>
              %4 = parc.linear %3, @down_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              return %4 : tensor<?x?x128xf32>
            }
          }
          parc.module @input_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @post_attention_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @pre_feedforward_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @post_feedforward_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
            %0 = parc.rms_norm %arg0, @input_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %1 = parc.call @self_attn(%0) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
            %2 = parc.rms_norm %1, @post_attention_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %3 = parc.add %arg0, %2 : tensor<?x?x128xf32>
            %4 = parc.rms_norm %3, @pre_feedforward_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %5 = parc.call @mlp(%4) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
            %6 = parc.rms_norm %5, @post_feedforward_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %7 = parc.add %3, %6 : tensor<?x?x128xf32>
            return %7 : tensor<?x?x128xf32>
          }
        }
        parc.module @"3" "Gemma4TextDecoderLayer" composite attributes {layer_type = "full_attention"} {
          parc.module @self_attn "Gemma4TextAttention" composite {
            parc.module @q_proj "Linear" leaf {
              parc.param @weight : tensor<256x128xf32>
            }
            parc.module @k_proj "Linear" leaf {
              parc.param @weight : tensor<64x128xf32>
            }
            parc.module @o_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @q_norm "Gemma4RMSNorm" leaf {
              parc.param @weight : tensor<64xf32>
            }
            parc.module @k_norm "Gemma4RMSNorm" leaf {
              parc.param @weight : tensor<64xf32>
            }
            parc.module @v_norm "Gemma4RMSNorm" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
              %0 = parc.linear %arg0, @q_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x256xf32>
              %1 = parc.linear %arg0, @k_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x64xf32>
              %2 = parc.rms_norm %0, @q_norm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x256xf32>
              %3 = parc.rms_norm %1, @k_norm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x64xf32>
              %4 = parc.rms_normalize %1 {eps = 9.9999999999999995E-7 : f64, group_size = 64 : i64} : tensor<?x?x64xf32>
              %5 = parc.rope %2 {head_dim = 64 : i64, rotated_pairs = 8 : i64, theta = 1.000000e+06 : f64} : tensor<?x?x256xf32>
              %6 = parc.rope %3 {head_dim = 64 : i64, rotated_pairs = 8 : i64, theta = 1.000000e+06 : f64} : tensor<?x?x64xf32>
              %7 = parc.attention %5, %6, %4 {causal, head_dim = 64 : i64, k_eq_v, num_heads = 4 : i64, num_kv_heads = 1 : i64, scale = 1.000000e+00 : f64} : (tensor<?x?x256xf32>, tensor<?x?x64xf32>, tensor<?x?x64xf32>) -> tensor<?x?x256xf32>
              %8 = parc.linear %7, @o_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              return %8 : tensor<?x?x128xf32>
            }
          }
          parc.module @mlp "Gemma4TextMLP" composite {
            parc.module @gate_proj "Linear" leaf {
              parc.param @weight : tensor<256x128xf32>
            }
            parc.module @up_proj "Linear" leaf {
              parc.param @weight : tensor<256x128xf32>
            }
            parc.module @down_proj "Linear" leaf {
              parc.param @weight : tensor<128x256xf32>
            }
            parc.module @act_fn "GELUTanh" leaf {
            }
            func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
              %0 = parc.linear %arg0, @gate_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x256xf32>
              %1 = parc.activation gelu_tanh %0 : tensor<?x?x256xf32>
              %2 = parc.linear %arg0, @up_proj::@weight : tensor<?x?x128xf32> -> tensor<?x?x256xf32>
              %3 = parc.mul %1, %2 : tensor<?x?x256xf32>
              %4 = parc.linear %3, @down_proj::@weight : tensor<?x?x256xf32> -> tensor<?x?x128xf32>
              return %4 : tensor<?x?x128xf32>
            }
          }
          parc.module @input_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @post_attention_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @pre_feedforward_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          parc.module @post_feedforward_layernorm "Gemma4RMSNorm" leaf {
            parc.param @weight : tensor<128xf32>
          }
          func.func @forward(%arg0: tensor<?x?x128xf32>) -> tensor<?x?x128xf32> {
            %0 = parc.rms_norm %arg0, @input_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %1 = parc.call @self_attn(%0) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
            %2 = parc.rms_norm %1, @post_attention_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %3 = parc.add %arg0, %2 : tensor<?x?x128xf32>
            %4 = parc.rms_norm %3, @pre_feedforward_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %5 = parc.call @mlp(%4) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
            %6 = parc.rms_norm %5, @post_feedforward_layernorm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
            %7 = parc.add %3, %6 : tensor<?x?x128xf32>
            return %7 : tensor<?x?x128xf32>
          }
        }
      }
      parc.module @norm "Gemma4RMSNorm" leaf {
        parc.param @weight : tensor<128xf32>
      }
      parc.module @rotary_emb "Gemma4TextRotaryEmbedding" leaf {
      }
      func.func @forward(%arg0: tensor<?x?xi64>) -> tensor<?x?x128xf32> {
        %0 = parc.embedding %arg0, @embed_tokens::@weight {scale = 11.313708498984761 : f64} : tensor<?x?xi64> -> tensor<?x?x128xf32>
        %1 = parc.call @layers::@"0"(%0) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
        %2 = parc.call @layers::@"1"(%1) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
        %3 = parc.call @layers::@"2"(%2) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
        %4 = parc.call @layers::@"3"(%3) : (tensor<?x?x128xf32>) -> tensor<?x?x128xf32>
        %5 = parc.rms_norm %4, @norm::@weight {eps = 9.9999999999999995E-7 : f64} : tensor<?x?x128xf32>
        return %5 : tensor<?x?x128xf32>
      }
    }
    parc.module @lm_head "Linear" leaf {
      parc.param @weight : tensor<512x128xf32>
    }
    func.func @forward(%arg0: tensor<?x?xi64>, %arg1: tensor<?x?xi64>) -> tensor<f32> {
      %0 = parc.call @model(%arg0) : (tensor<?x?xi64>) -> tensor<?x?x128xf32>
      %1 = parc.linear %0, @lm_head::@weight : tensor<?x?x128xf32> -> tensor<?x?x512xf32>
      %2 = parc.softcap %1 {cap = 3.000000e+01 : f64} : tensor<?x?x512xf32>
      %3 = parc.cross_entropy %2, %arg1 : tensor<?x?x512xf32>, tensor<?x?xi64> -> tensor<f32>
      return %3 : tensor<f32>
    }
    parc.tie [@model::@embed_tokens::@weight, @lm_head::@weight]
  }
}
