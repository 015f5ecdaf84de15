// RUN: parc-opt %s --print-model-stats -o /dev/null | FileCheck %s
// RUN: parc-opt %s --print-model-stats=max-depth=0 -o /dev/null | FileCheck %s --check-prefix=TOTAL

// The total comes first as a plain integer, with the tied head counted once;
// subtrees nest by depth; dtypes and tie groups follow.

// CHECK: {{^}}1416{{$}}
// CHECK-NEXT: subtrees:
// CHECK-NEXT: {{^  }}model{{ +}}776{{$}}
// CHECK-NEXT: {{^    }}model.embed{{ +}}640{{$}}
// CHECK-NEXT: {{^    }}model.layers{{ +}}136{{$}}
// CHECK-NEXT: {{^  }}lm_head{{ +}}0  (tied to model.embed.weight)
// CHECK-NEXT: {{^  }}proj{{ +}}640{{$}}
// CHECK-NEXT: dtypes:
// CHECK-NEXT: {{^  }}bf16{{ +}}1280{{$}}
// CHECK-NEXT: {{^  }}f32{{ +}}136{{$}}
// CHECK-NEXT: ties:
// CHECK-NEXT: {{^  }}model.embed.weight = lm_head.weight{{$}}

// TOTAL: {{^}}1416{{$}}
// TOTAL-NEXT: dtypes:

parc.model @m class "M" {
  parc.module @model "Inner" composite {
    parc.module @embed "Embedding" leaf {
      parc.param @weight : tensor<40x16xbf16>
    }
    parc.module @layers "ModuleList" list {
      parc.module @"0" "Block" composite {
        parc.module @proj "Linear" leaf {
          parc.param @weight : tensor<8x16xf32>
          parc.param @bias : tensor<8xf32>
        }
      }
    }
  }
  parc.module @lm_head "Linear" leaf {
    parc.param @weight : tensor<40x16xbf16>
  }
  parc.module @proj "Linear" leaf {
    parc.param @weight : tensor<40x16xbf16>
  }
  parc.tie [@model::@embed::@weight, @lm_head::@weight]
}
