//===- FlopCount.h - FLOPs of a model's op graph ----------------*- C++ -*-===//
//
// Counts the FLOPs of one micro-batch on the model's own op graph: each
// forward is traced through parc.call at the run's batch and sequence (both
// dynamic in the IR), every op contributes its forward FLOPs, the backward
// FLOPs of the gradients actually needed (a frozen weight has no weight
// gradient, an input nothing trainable precedes has no input gradient) and,
// under remat, the forward backward reruns. The ops count themselves
// (FlopsOpInterface); docs/cost-model.md states the conventions.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_FLOPCOUNT_H
#define PARC_ANALYSIS_FLOPCOUNT_H

#include "Parc/IR/ParcOps.h"

#include "llvm/ADT/DenseMap.h"

namespace mlir::parc {

/// FLOPs of one pass over some ops, by where they are spent.
struct FlopCount {
  double forward = 0;
  double backward = 0;
  /// The extra forward backward reruns under remat (full: the whole layer;
  /// selective: the ops marked parc.recompute; op: the ops not marked
  /// parc.remat_save).
  double recompute = 0;
  /// The matmul-like part of `forward` (linear, matmul, patch embedding).
  double matmulForward = 0;
  /// The attention part of `forward` (q k^T and p v).
  double attentionForward = 0;

  /// What the hardware executes.
  double total() const { return forward + backward + recompute; }
  /// Model FLOPs as PaLM defines them: without recompute.
  double model() const { return forward + backward; }
  FlopCount &operator+=(const FlopCount &other);
  FlopCount &operator-=(const FlopCount &other);
  /// Every count times `factor` (one TP rank's share: 1 / tp).
  FlopCount scaled(double factor) const;
};

/// FLOPs of one layer's forward traced at `batch` x `tokens` (batch and
/// sequence are dynamic in the IR), its backward and its recompute under
/// `remat`. `inputRequiresGrad` is false when
/// nothing before the layer is trainable (then backward computes no input
/// gradient for its first ops).
FlopCount countLayerFlops(NNModuleOp layer, RematKind remat, int64_t batch,
                          int64_t tokens, bool inputRequiresGrad = true);

/// FLOPs of the root's own ops (the layers stopped at) traced at `batch` x
/// `tokens`, split at the call of the last layer: `head` before it (the
/// embedding, a vision projector), `tail` after it (the final norm, lm_head,
/// loss).
struct RootFlops {
  FlopCount head, tail;
  /// Both together, as traced.
  FlopCount total;
  /// Per layer the root calls: whether its input needs a gradient (false
  /// when nothing trainable precedes it).
  llvm::DenseMap<Operation *, bool> layerInputGrad;
};
RootFlops countRootFlops(ModelOp model, int64_t batch, int64_t tokens);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_FLOPCOUNT_H
