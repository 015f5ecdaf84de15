// RUN: parc-opt %s --discover-layers=stacks=model.layers,vision.layers -verify-diagnostics | FileCheck %s
// RUN: not parc-opt %s --discover-layers=stacks=model.layers,model 2>&1 | FileCheck %s --check-prefix=OVERLAP
// Discovery without the override replaces the override's tags.
// RUN: parc-opt %s --discover-layers=stacks=model.layers,vision.layers 2>/dev/null | parc-opt --discover-layers 2>/dev/null | FileCheck %s --check-prefix=REDISCOVER

// `stacks=` records only the named stacks, in the order given, named by their
// attention. Every layer below a named path joins its stack whatever its
// class, so alternating classes that discovery splits into runs are one
// stack; draft.layers, not named, is not tagged.

// CHECK-LABEL: parc.model @hybrid
// CHECK-SAME: parc.stacks = [#parc.stack<name = "language", path = "model.layers", layers = 3>, #parc.stack<name = "vision", path = "vision.layers", layers = 2>]
// CHECK: parc.module @"0" "EncoderLayer" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "vision"}
// CHECK: parc.module @"1" "EncoderLayer" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "vision"}
// CHECK: parc.module @"0" "AttentionLayer" leaf attributes {parc.layer_index = 0 : i64, parc.stack = "language"}
// CHECK: parc.module @"1" "SlidingLayer" leaf attributes {parc.layer_index = 1 : i64, parc.stack = "language"}
// CHECK: parc.module @"2" "AttentionLayer" leaf attributes {parc.layer_index = 2 : i64, parc.stack = "language"}
// CHECK: parc.module @draft
// CHECK-NOT: parc.stack =

// The error is on the layer (without printing it), with a note at each
// override's module.
// OVERLAP: error: stack overrides 'model.layers' and 'model' both hold layer model.layers.0 in @hybrid
// OVERLAP-NEXT: parc.module @"0" "AttentionLayer" leaf {
// OVERLAP-NOT: see current operation
// OVERLAP: note: stack override 'model.layers' names this module
// OVERLAP-NEXT: parc.module @layers "ModuleList" list {
// OVERLAP: note: stack override 'model' names this module
// OVERLAP-NEXT: parc.module @model "TextModel" composite {

// REDISCOVER: parc.stacks = [#parc.stack<name = "vision", path = "vision.layers", layers = 2>, #parc.stack<name = "language", path = "model.layers", layers = 1>, #parc.stack<name = "language_1", path = "model.layers", layers = 1>, #parc.stack<name = "language_2", path = "model.layers", layers = 1>, #parc.stack<name = "language_3", path = "draft.layers", layers = 1>]

// expected-remark @+2 {{3 layers in model.layers (language)}}
// expected-remark @+1 {{2 layers in vision.layers (vision)}}
parc.model @hybrid class "TinyForConditionalGeneration" {
  parc.module @vision "VisionModel" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "EncoderLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"1" "EncoderLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
  }
  parc.module @model "TextModel" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "AttentionLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"1" "SlidingLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64, sliding_window = 4 : i64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
      parc.module @"2" "AttentionLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
  }
  parc.module @draft "DraftModel" composite {
    parc.module @layers "ModuleList" list {
      parc.module @"0" "DraftLayer" leaf {
        func.func @forward(%x: tensor<?x?x16xf32>) -> tensor<?x?x16xf32> {
          %a = parc.attention %x, %x, %x {causal, head_dim = 4 : i64, num_heads = 4 : i64, num_kv_heads = 4 : i64, scale = 0.5 : f64} : (tensor<?x?x16xf32>, tensor<?x?x16xf32>, tensor<?x?x16xf32>) -> tensor<?x?x16xf32>
          %y = parc.add %x, %a : tensor<?x?x16xf32>
          return %y : tensor<?x?x16xf32>
        }
      }
    }
  }
}
