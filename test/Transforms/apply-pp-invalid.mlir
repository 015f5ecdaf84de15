// Every refusal of --apply-pp, at the model it plans. The option errors on
// the 4-layer model; the missing layer discovery with -verify-diagnostics.
// RUN: parc-opt %s -split-input-file -verify-diagnostics "--apply-pp=stages=2 microbatches=2"
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=0" 2>&1 | FileCheck %s --check-prefix=STAGES
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 schedule=zb" 2>&1 | FileCheck %s --check-prefix=SCHEDULE
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 chunks=0" 2>&1 | FileCheck %s --check-prefix=CHUNKS
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 chunks=2 microbatches=4" 2>&1 | FileCheck %s --check-prefix=CHUNKS-1F1B
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 microbatches=1" 2>&1 | FileCheck %s --check-prefix=FEW-MB
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 schedule=interleaved-1f1b chunks=2 microbatches=3" 2>&1 | FileCheck %s --check-prefix=MB-MULTIPLE
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=5 microbatches=8" 2>&1 | FileCheck %s --check-prefix=MANY-STAGES
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 schedule=interleaved-1f1b chunks=4 microbatches=4" 2>&1 | FileCheck %s --check-prefix=MANY-VIRTUAL
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 microbatches=2 split=1,2,1" 2>&1 | FileCheck %s --check-prefix=SPLIT-COUNT
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 microbatches=2 split=0,4" 2>&1 | FileCheck %s --check-prefix=SPLIT-ZERO
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 microbatches=2 split=2,3" 2>&1 | FileCheck %s --check-prefix=SPLIT-SUM
// RUN: not parc-opt %S/Inputs/tiny-4-layers.mlir "--apply-pp=stages=2 microbatches=2 seq=0" 2>&1 | FileCheck %s --check-prefix=SEQ

// STAGES: tiny-4-layers.mlir:1:1: error: apply-pp needs stages >= 1, got 0
// SCHEDULE: for the --schedule option: Cannot find option named 'zb'!
// CHUNKS: tiny-4-layers.mlir:1:1: error: apply-pp needs chunks >= 1, got 0
// CHUNKS-1F1B: tiny-4-layers.mlir:1:1: error: apply-pp: chunks = 2 needs schedule interleaved-1f1b, got '1f1b'
// FEW-MB: tiny-4-layers.mlir:1:1: error: apply-pp: 1 micro-batches cannot fill 2 pipeline stages (microbatches must be >= stages)
// MB-MULTIPLE: tiny-4-layers.mlir:1:1: error: apply-pp: interleaved-1f1b needs the micro-batches (3) to be a multiple of the stages (2)
// MANY-STAGES: tiny-4-layers.mlir:1:1: error: apply-pp: 5 stages for 4 layers (at most one stage per layer)
// MANY-VIRTUAL: tiny-4-layers.mlir:1:1: error: apply-pp: 8 virtual stages for 4 layers (at most one stage per layer)
// SPLIT-COUNT: tiny-4-layers.mlir:1:1: error: apply-pp: split has 3 entries, expected 2 (stages x chunks)
// SPLIT-ZERO: tiny-4-layers.mlir:1:1: error: apply-pp: every split entry must be >= 1, got 0
// SPLIT-SUM: tiny-4-layers.mlir:1:1: error: apply-pp: split sums to 5 layers, but @tiny4 has 4
// SEQ: tiny-4-layers.mlir:1:1: error: apply-pp needs positive seq and mbs

// expected-warning@+2 {{no layer stacks found in @empty}}
// expected-error@+1 {{apply-pp needs layers, and @empty has none}}
parc.model @empty class "Empty" {
}
