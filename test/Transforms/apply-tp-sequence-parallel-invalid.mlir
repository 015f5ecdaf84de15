// RUN: parc-opt %s -split-input-file -verify-diagnostics "--apply-tp=size=2 sequence-parallel=true"
// RUN: not parc-opt %S/Inputs/tiny-2-layers.mlir "--apply-tp=size=2 sequence-parallel=true" 2>&1 | FileCheck %s --check-prefix=ATTN

// tiny-2-layers' attention projections stay replicated (no linear reduces
// its output), so its input is still a sequence shard.
// ATTN: tiny-2-layers.mlir:23:16: error: apply-tp: 'parc.attention' needs the whole sequence but gets a sequence shard (no column-parallel linear gathered its input)

// Refusals of TP sharding rules under sequence parallelism: apply-tp
// propagates each value's split through the forwards (TpShardingOpInterface)
// and reports the op where a rule does not hold, by location.

parc.model @mixed class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 1>]} {
  parc.module @model "Model" composite {
    parc.module @embed "Embedding" leaf {
      parc.param @weight : tensor<100x16xf32>
    }
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @up "Linear" leaf {
          parc.param @weight : tensor<32x16xf32>
        }
        parc.module @down "Linear" leaf {
          parc.param @weight : tensor<16x32xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %u = parc.linear %x, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
          %g = parc.activation silu %u : tensor<?x?x32xf32>
          %d = parc.linear %g, @down::@weight : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
          %y = parc.add %x, %d : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%ids: tensor<?x?xi64>, %e0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
      %e = parc.embedding %ids, @embed::@weight : tensor<?x?xi64> -> tensor<?x?x16xf32>
      %h1 = parc.call @layers::@"0"(%e) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      // expected-error@+1 {{apply-tp: 'parc.add' mixes sequence-parallel values with others}}
      %h2 = parc.add %h1, %e0 : tensor<?x?x16xf32>
      return %h2 : tensor<?x?x16xf32>
    }
  }
  func.func @forward(%ids: tensor<?x?xi64>, %e0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
    %h = parc.call @model(%ids, %e0) : (tensor<?x?xi64>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
    return %h : tensor<?x?x16xf32>
  }
}

// -----

parc.model @twice class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 1>]} {
  parc.module @model "Model" composite {
    parc.module @embed "Embedding" leaf {
      parc.param @weight : tensor<100x16xf32>
    }
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @up "Linear" leaf {
          parc.param @weight : tensor<32x16xf32>
        }
        parc.module @down "Linear" leaf {
          parc.param @weight : tensor<16x32xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %u = parc.linear %x, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
          %g = parc.activation silu %u : tensor<?x?x32xf32>
          %d = parc.linear %g, @down::@weight : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
          %y = parc.add %x, %d : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%ids: tensor<?x?xi64>, %e0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
      %e = parc.embedding %ids, @embed::@weight : tensor<?x?xi64> -> tensor<?x?x16xf32>
      // expected-note@+1 {{first called here}}
      %h1 = parc.call @layers::@"0"(%e) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      // expected-error@+1 {{apply-tp: 'model.layers.0' is called with differently split arguments; a module's ops are split one way}}
      %h2 = parc.call @layers::@"0"(%e0) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      return %h2 : tensor<?x?x16xf32>
    }
  }
  func.func @forward(%ids: tensor<?x?xi64>, %e0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
    %h = parc.call @model(%ids, %e0) : (tensor<?x?xi64>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
    return %h : tensor<?x?x16xf32>
  }
}

// -----

parc.model @noloss class "M" attributes {parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 1>]} {
  parc.module @model "Model" composite {
    parc.module @embed "Embedding" leaf {
      parc.param @weight : tensor<100x16xf32>
    }
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite attributes {parc.layer_index = 0 : i64, parc.stack = "language"} {
        parc.module @up "Linear" leaf {
          parc.param @weight : tensor<32x16xf32>
        }
        parc.module @down "Linear" leaf {
          parc.param @weight : tensor<16x32xf32>
        }
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %u = parc.linear %x, @up::@weight : tensor<?x?x16xf32> -> tensor<?x?x32xf32>
          %g = parc.activation silu %u : tensor<?x?x32xf32>
          %d = parc.linear %g, @down::@weight : tensor<?x?x32xf32> -> tensor<?x?x16xf32>
          %y = parc.add %x, %d : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
    func.func @forward(%ids: tensor<?x?xi64>, %e0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
      %e = parc.embedding %ids, @embed::@weight : tensor<?x?xi64> -> tensor<?x?x16xf32>
      %h1 = parc.call @layers::@"0"(%e) : (tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
      return %h1 : tensor<?x?x16xf32>
    }
  }
  func.func @forward(%ids: tensor<?x?xi64>, %e0: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
    %h = parc.call @model(%ids, %e0) : (tensor<?x?xi64>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
    // expected-error@+1 {{apply-tp: the model's result is split over the sequence; under sequence parallel the forward ends in a loss, which gathers it}}
    return %h : tensor<?x?x16xf32>
  }
}
