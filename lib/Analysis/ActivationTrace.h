//===- ActivationTrace.h - what a forward keeps, traced ---------*- C++ -*-===//
//
// Internal to lib/Analysis: the loss path's bytes the memory replay charges,
// traced on the root's own ops like every layer's activations
// (estimateLayerActivations, MemoryEstimate.h).
//
//===----------------------------------------------------------------------===//

#ifndef PARC_LIB_ANALYSIS_ACTIVATIONTRACE_H
#define PARC_LIB_ANALYSIS_ACTIVATIONTRACE_H

#include "Parc/IR/ParcOps.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/Parallelism.h"

namespace mlir::parc {

/// The loss path of the root as the replay charges it: the logits and what
/// the loss keeps, what exists only while the forward ends, and what its
/// backward holds.
struct LossBytes {
  int64_t logits = 0; // logit elements
  int64_t rootSaved = 0, kept = 0, transient = 0, gradients = 0;
};

/// The root's loss path at `batch` x `seq` on one rank of `tp` with the
/// kernels of a hardware profile, activations of `computeBytes` each.
LossBytes getLossBytes(ModelOp model, int64_t batch, int64_t seq, TpPlan tp,
                       KernelProfile kernels, int64_t computeBytes);

} // namespace mlir::parc

#endif // PARC_LIB_ANALYSIS_ACTIVATIONTRACE_H
