// RUN: parc-opt %s --apply-tp=size=2 2>&1 | FileCheck %s
// RUN: parc-opt %s "--apply-tp=size=2 sequence-parallel=true loss-parallel=true" 2>&1 | FileCheck %s --check-prefix=SP
// RUN: parc-opt %s --apply-tp=size=2 --apply-tp=size=2 2>/dev/null | FileCheck %s --check-prefix=TWICE
// RUN: parc-opt %s --apply-tp=size=1 2>&1 | FileCheck %s --check-prefix=ONE
// RUN: parc-opt %s --apply-tp=size=2 2>/dev/null | FileCheck %s --check-prefix=SHARDS --implicit-check-not=tp_collectives
// RUN: parc-opt %s "--apply-tp=size=2 sequence-parallel=true loss-parallel=true" 2>/dev/null | FileCheck %s --check-prefix=SP-SHARDS
// RUN: parc-opt %S/Inputs/tiny-2-layers.mlir --apply-tp=size=2 2>&1 >/dev/null | FileCheck %s --check-prefix=NO-OUT

// A two-layer model whose projections are found through parc.call: layer 0
// has a gated MLP, layer 1 an fc1 / gelu / fc2 MLP; a per-head q norm and rope
// sit between the projections and the attention; the vocab (101) is odd.

// CHECK: remark: TP 2: 7 column-parallel, 4 row-parallel, 1 replicated linears; vocab 101 padded to 102; sequence parallel off, loss parallel off; collectives per token: 5 all_reduce (320 bytes) 1 all_gather (408 bytes)
// CHECK: module {
// CHECK: parc.model @tp class "TpForCausalLM" attributes {
// CHECK-SAME: parc.tp_loss_parallel = false, parc.tp_sequence_parallel = false, parc.tp_size = 2 : i64
// CHECK-NEXT: shard.grid @tp(shape = 2)
// CHECK: @embed
// CHECK-NEXT: parc.param @weight : tensor<101x16xf32> {parc.tp = #parc.tp<vocab>, parc.tp_padded_dim0 = 102 : i64}
// CHECK: @"0"
// CHECK: @attn
// CHECK: @q "Linear"
// CHECK-NEXT: parc.param @weight : tensor<16x16xf32> {parc.tp = #parc.tp<colwise>}
// CHECK-NEXT: parc.param @bias : tensor<16xf32> {parc.tp = #parc.tp<colwise>}
// CHECK: @k "Linear"
// CHECK-NEXT: parc.param @weight : tensor<8x16xf32> {parc.tp = #parc.tp<colwise>}
// CHECK: @v "Linear"
// CHECK-NEXT: parc.param @weight : tensor<8x16xf32> {parc.tp = #parc.tp<colwise>}
// CHECK: @o "Linear"
// CHECK-NEXT: parc.param @weight : tensor<16x16xf32> {parc.tp = #parc.tp<rowwise>}
// CHECK-NEXT: parc.param @bias : tensor<16xf32> {parc.tp = #parc.tp<replicated>}
// CHECK: @qn "RMSNorm"
// CHECK-NEXT: parc.param @weight : tensor<4xf32> {parc.tp = #parc.tp<replicated>}
// CHECK: parc.linear %{{.*}}, @o::@weight bias @o::@bias {parc.tp_shards = #parc.tp_shards<values = [full], comms = [reduce]>}
// CHECK: @gate "Linear"
// CHECK-NEXT: parc.param @weight : tensor<32x16xf32> {parc.tp = #parc.tp<colwise>}
// CHECK: @up "Linear"
// CHECK-NEXT: parc.param @weight : tensor<32x16xf32> {parc.tp = #parc.tp<colwise>}
// CHECK: @down "Linear"
// CHECK-NEXT: parc.param @weight : tensor<16x32xf32> {parc.tp = #parc.tp<rowwise>}
// CHECK: parc.linear %{{.*}}, @down::@weight {parc.tp_shards = #parc.tp_shards<values = [full], comms = [reduce]>}
// CHECK: @norm1 "RMSNorm"
// CHECK-NEXT: parc.param @weight : tensor<16xf32> {parc.tp = #parc.tp<replicated>}
// CHECK: @"1"
// CHECK: @fc1 "Linear"
// CHECK-NEXT: parc.param @weight : tensor<24x16xf32> {parc.tp = #parc.tp<colwise>}
// CHECK-NEXT: parc.param @bias : tensor<24xf32> {parc.tp = #parc.tp<colwise>}
// CHECK: @fc2 "Linear"
// CHECK-NEXT: parc.param @weight : tensor<16x24xf32> {parc.tp = #parc.tp<rowwise>}
// CHECK-NEXT: parc.param @bias : tensor<16xf32> {parc.tp = #parc.tp<replicated>}
// CHECK: @side "Linear"
// CHECK-NEXT: parc.param @weight : tensor<16x16xf32> {parc.tp = #parc.tp<replicated>}
// CHECK: @final_norm "RMSNorm"
// CHECK-NEXT: parc.param @weight : tensor<16xf32> {parc.tp = #parc.tp<replicated>}
// CHECK: parc.embedding %{{.*}}, @embed::@weight {parc.tp_shards = #parc.tp_shards<values = [full], comms = [reduce]>}
// CHECK: @lm_head "Linear"
// CHECK-NEXT: parc.param @weight : tensor<101x16xf32> {parc.tp = #parc.tp<vocab>, parc.tp_padded_dim0 = 102 : i64}
// CHECK: parc.linear %{{.*}}, @lm_head::@weight {parc.tp_shards = #parc.tp_shards<values = [vocab], comms = [copy_input]>}
// CHECK-NEXT: parc.softcap
// CHECK-NEXT: parc.cross_entropy %{{[0-9]+}}, %{{[a-z0-9]+}} {parc.tp_shards = #parc.tp_shards<values = [full], gather = [0]>} :

// Sequence parallel: residual-stream norms are sequence-sharded, q/k norms
// stay replicated; each column-parallel linear gathers the sequence (the
// remark counts one all-gather per group sharing an input, as parc-run runs
// it), the row-parallel ones reduce-scatter; the loss is computed on
// vocab-sharded logits.
// SP: remark: TP 2: 7 column-parallel, 4 row-parallel, 1 replicated linears; vocab 101 padded to 102; sequence parallel on, loss parallel on; collectives per token: 1 all_reduce (12 bytes) 5 all_gather (320 bytes) 5 reduce_scatter (320 bytes)
// SP: module {
// SP: parc.tp_loss_parallel = true, parc.tp_sequence_parallel = true, parc.tp_size = 2 : i64
// SP: @qn "RMSNorm"
// SP-NEXT: parc.param @weight : tensor<4xf32> {parc.tp = #parc.tp<replicated>}
// SP: parc.linear %arg0, @q::@weight bias @q::@bias {parc.tp_shards = #parc.tp_shards<values = [features], comms = [gather_sequence]>}
// SP-NEXT: parc.linear %arg0, @k::@weight {parc.tp_shards =
// SP-NEXT: parc.linear %arg0, @v::@weight {parc.tp_shards =
// SP: parc.linear %{{.*}}, @o::@weight bias @o::@bias {parc.tp_shards = #parc.tp_shards<values = [sequence], comms = [scatter_sequence, bias_grad]>}
// SP: parc.linear %arg0, @gate::@weight {parc.tp_shards = #parc.tp_shards<values = [features], comms = [gather_sequence]>}
// SP: @norm1 "RMSNorm"
// SP-NEXT: parc.param @weight : tensor<16xf32> {parc.tp = #parc.tp<sequence>}
// SP: @norm2 "RMSNorm"
// SP-NEXT: parc.param @weight : tensor<16xf32> {parc.tp = #parc.tp<sequence>}
// SP: parc.linear %{{[0-9]+}}, @fc1::@weight bias @fc1::@bias {parc.tp_shards = #parc.tp_shards<values = [features], comms = [gather_sequence]>}
// SP: @final_norm "RMSNorm"
// SP-NEXT: parc.param @weight : tensor<16xf32> {parc.tp = #parc.tp<sequence>}
// SP: parc.embedding %{{.*}} {parc.tp_shards = #parc.tp_shards<values = [sequence], comms = [scatter_sequence]>}
// SP: parc.linear %{{.*}}, @lm_head::@weight {parc.tp_shards = #parc.tp_shards<values = [vocab], comms = [gather_sequence]>}
// SP: parc.cross_entropy %{{.*}} {parc.tp_shards = #parc.tp_shards<values = [full], comms = [vocab_loss]>}

// parc.tp_shards records how each op's results are split over the TP ranks
// and the collectives its kernel runs: column-parallel linears copy their
// input (its gradient is reduced), q/k norms on head-split features reduce
// their weight gradient, row-parallel linears and the vocab-parallel
// embedding reduce their output, and the loss gathers vocab-split logits.
// SHARDS: parc.linear %arg0, @q::@weight bias @q::@bias {{.*}}parc.tp_shards = #parc.tp_shards<values = [features], comms = [copy_input]>}
// SHARDS: parc.rms_norm %0, @qn::@weight {{.*}}parc.tp_shards = #parc.tp_shards<values = [features], comms = [weight_grad]>}
// SHARDS: parc.attention {{.*}}parc.tp_shards = #parc.tp_shards<values = [features]>
// SHARDS: parc.linear %6, @o::@weight bias @o::@bias {{.*}}parc.tp_shards = #parc.tp_shards<values = [full], comms = [reduce]>}
// SHARDS: parc.mul {{.*}}parc.tp_shards = #parc.tp_shards<values = [features]>
// SHARDS: parc.add %arg0, %1 {parc.tp_shards = #parc.tp_shards<values = [full]>}
// SHARDS: parc.linear %7, @side::@weight {parc.tp_shards = #parc.tp_shards<values = [full]>}
// SHARDS: parc.embedding {{.*}}parc.tp_shards = #parc.tp_shards<values = [full], comms = [reduce]>}
// SHARDS: func.func @forward(%arg0: tensor<?x?xi64>, %arg1: tensor<?x?xi64>) -> tensor<f32> attributes {parc.tp_shards = #parc.tp_shards<values = [full, full]>}
// SHARDS: parc.linear %0, @lm_head::@weight {{.*}}parc.tp_shards = #parc.tp_shards<values = [vocab], comms = [copy_input]>}
// SHARDS-NEXT: parc.softcap {{.*}}parc.tp_shards = #parc.tp_shards<values = [vocab]>}

// Under sequence parallelism a layer's arguments are sequence-split; the
// linears that read them gather the sequence, the row-parallel ones scatter
// it (a bias is added after the scatter, so its gradient is reduced), norms
// and the replicated side linear on sequence shards reduce their weight
// gradients, and the loss runs on vocab shards.
// SP-SHARDS: func.func @forward(%arg0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> attributes {parc.tp_shards = #parc.tp_shards<values = [sequence]>}
// SP-SHARDS: parc.linear %arg0, @q::@weight bias @q::@bias {{.*}}parc.tp_shards = #parc.tp_shards<values = [features], comms = [gather_sequence]>}
// SP-SHARDS: parc.linear %6, @o::@weight bias @o::@bias {{.*}}parc.tp_shards = #parc.tp_shards<values = [sequence], comms = [scatter_sequence, bias_grad]>}
// SP-SHARDS: parc.linear %3, @down::@weight {{.*}}parc.tp_shards = #parc.tp_shards<values = [sequence], comms = [scatter_sequence]>}
// SP-SHARDS: parc.rms_norm %arg0, @norm1::@weight {{.*}}parc.tp_shards = #parc.tp_shards<values = [sequence], comms = [weight_grad]>}
// SP-SHARDS: parc.call @attn(%0) {parc.tp_shards = #parc.tp_shards<values = [sequence]>}
// SP-SHARDS: parc.linear %7, @side::@weight {parc.tp_shards = #parc.tp_shards<values = [sequence], comms = [weight_grad]>}
// SP-SHARDS: func.func @forward(%arg0: tensor<?x?xi64>) -> tensor<?x?x16xf32> attributes {parc.tp_shards = #parc.tp_shards<values = [full]>}
// SP-SHARDS-NEXT: parc.embedding {{.*}}parc.tp_shards = #parc.tp_shards<values = [sequence], comms = [scatter_sequence]>}
// SP-SHARDS: parc.linear %0, @lm_head::@weight {{.*}}parc.tp_shards = #parc.tp_shards<values = [vocab], comms = [gather_sequence]>}
// SP-SHARDS: parc.cross_entropy {{.*}}parc.tp_shards = #parc.tp_shards<values = [full], comms = [vocab_loss]>}

// Running twice gives one grid.
// TWICE: shard.grid @tp(shape = 2)
// TWICE-NOT: shard.grid

// size=1 records the size and nothing else.
// ONE-NOT: remark
// ONE: parc.model @tp class "TpForCausalLM" attributes {{{.*}}parc.tp_size = 1 : i64}
// ONE-NOT: shard.grid
// ONE-NOT: parc.tp

// An attention whose output no linear reduces cannot split its heads: its
// projection stays replicated (tiny-2-layers adds the attention output to the
// residual directly), with a warning per layer; its tied embedding and
// lm_head are still vocab-parallel.
// NO-OUT: warning: apply-tp: no linear consumes the parc.attention output in model.layers.0; its projections stay replicated
// NO-OUT: warning: apply-tp: no linear consumes the parc.attention output in model.layers.1; its projections stay replicated
// NO-OUT: remark: TP 2: 2 column-parallel, 2 row-parallel, 2 replicated linears; vocab 100 padded to 100;

parc.model @tp class "TpForCausalLM" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 2>]} {
  parc.module @model "TpModel" composite {
    parc.module @embed "Embedding" leaf {
      parc.param @weight : tensor<101x16xf32>
    }
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @attn "Attention" composite {
          parc.module @q "Linear" leaf {
            parc.param @weight : tensor<16x16xf32>
            parc.param @bias : tensor<16xf32>
          }
          parc.module @k "Linear" leaf {
            parc.param @weight : tensor<8x16xf32>
          }
          parc.module @v "Linear" leaf {
            parc.param @weight : tensor<8x16xf32>
          }
          parc.module @o "Linear" leaf {
            parc.param @weight : tensor<16x16xf32>
            parc.param @bias : tensor<16xf32>
          }
          parc.module @qn "RMSNorm" leaf {
            parc.param @weight : tensor<4xf32>
          }
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            %q = parc.linear %x, @q::@weight bias @q::@bias : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
            %k = parc.linear %x, @k::@weight : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
            %v = parc.linear %x, @v::@weight : tensor<?x?x16xf32> -> tensor<?x?x8xf32>
            %qn = parc.rms_norm %q, @qn::@weight {eps = 1.0e-6 : f64} : tensor<?x?x16xf32>
            %qr = parc.rope %qn {head_dim = 4 : i64, theta = 1.0e4 : f64} : tensor<?x?x16xf32>
            %kr = parc.rope %k {head_dim = 4 : i64, theta = 1.0e4 : f64} : tensor<?x?x8xf32>
            %a = parc.attention %qr, %kr, %v {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 2 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x8xf32>, tensor<?x?x8xf32>) -> tensor<?x?x16xf32>
            %o = parc.linear %a, @o::@weight bias @o::@bias : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
            return %o : tensor<?x?x16xf32>
          }
        }
        parc.module @mlp "MLP" composite {
          parc.module @gate "Linear" leaf {
            parc.param @weight : tensor<32x16xf32>
          }
          parc.module @up "Linear" leaf {
            parc.param @weight : tensor<32x16xf32>
          }
          parc.module @down "Linear" leaf {
            parc.param @weight : tensor<16x32xf32>
          }
          func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
            %g = parc.linear %x, @gate::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
            %ga = parc.activation silu %g : tensor<?x?x32xf32>
            %u = parc.linear %x, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
            %h = parc.mul %ga, %u : tensor<?x?x32xf32>
            %d = parc.linear %h, @down::@weight : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
            return %d : tensor<?x?x16xf32>
          }
        }
        parc.module @norm1 "RMSNorm" leaf {
          parc.param @weight : tensor<16xf32>
        }
        parc.module @norm2 "RMSNorm" leaf {
          parc.param @weight : tensor<16xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %n1 = parc.rms_norm %x, @norm1::@weight {eps = 1.0e-6 : f64} : tensor<?x?x16xf32>
          %a = parc.call @attn(%n1) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %r = parc.add %x, %a : tensor<?x?x16xf32>
          %n2 = parc.rms_norm %r, @norm2::@weight {eps = 1.0e-6 : f64} : tensor<?x?x16xf32>
          %m = parc.call @mlp(%n2) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %r, %m : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"1" "Block" composite attributes {parc.layer_index = 1 : i64, parc.stack = "language"} {
        parc.module @qkv_q "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @o "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @fc1 "Linear" leaf {
          parc.param @weight : tensor<24x16xf32>
          parc.param @bias : tensor<24xf32>
        }
        parc.module @fc2 "Linear" leaf {
          parc.param @weight : tensor<16x24xf32>
          parc.param @bias : tensor<16xf32>
        }
        parc.module @side "Linear" leaf {
          parc.param @weight : tensor<16x16xf32>
        }
        parc.module @norm "RMSNorm" leaf {
          parc.param @weight : tensor<16xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %n = parc.rms_norm %x, @norm::@weight {eps = 1.0e-6 : f64} : tensor<?x?x16xf32>
          %q = parc.linear %n, @qkv_q::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %a = parc.attention %q, %q, %q {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %o = parc.linear %a, @o::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %r = parc.add %x, %o : tensor<?x?x16xf32>
          %h = parc.linear %r, @fc1::@weight bias @fc1::@bias : tensor<?x?x16xf32> -> tensor<?x?x24xf32>
          %g = parc.activation gelu_tanh %h : tensor<?x?x24xf32>
          %d = parc.linear %g, @fc2::@weight bias @fc2::@bias : tensor<?x?x24xf32> -> tensor<?x?x16xf32>
          %s = parc.linear %d, @side::@weight : tensor<?x?x16xf32> -> tensor<?x?x16xf32>
          %y = parc.add %r, %s : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    parc.module @final_norm "RMSNorm" leaf {
      parc.param @weight : tensor<16xf32>
    }
    func.func @forward(%ids: tensor<?x?xi64>) -> tensor<?x?x16xf32> {
      %h0 = parc.embedding %ids, @embed::@weight : tensor<?x?xi64> -> tensor<?x?x16xf32>
      %h1 = parc.call @layers::@"0"(%h0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      %h2 = parc.call @layers::@"1"(%h1) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      %h3 = parc.rms_norm %h2, @final_norm::@weight {eps = 1.0e-6 : f64} : tensor<?x?x16xf32>
      return %h3 : tensor<?x?x16xf32>
    }
  }
  parc.module @lm_head "Linear" leaf {
    parc.param @weight : tensor<101x16xf32>
  }
  func.func @forward(%ids: tensor<?x?xi64>, %labels: tensor<?x?xi64>) -> tensor<f32> {
    %h = parc.call @model(%ids) : (tensor<?x?xi64>) -> tensor<?x?x16xf32>
    %logits = parc.linear %h, @lm_head::@weight : tensor<?x?x16xf32> -> tensor<?x?x101xf32>
    %capped = parc.softcap %logits {cap = 30.0 : f64} : tensor<?x?x101xf32>
    %loss = parc.cross_entropy %capped, %labels : tensor<?x?x101xf32>, tensor<?x?xi64> -> tensor<f32>
    return %loss : tensor<f32>
  }
}
