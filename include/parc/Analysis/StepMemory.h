//===- StepMemory.h - what a training step's compute allocates --*- C++ -*-===//
//
// The bytes behind the allocations --lower-to-schedule writes into each
// parc.program (a unit's gradients, its gradient shards, what the loss
// keeps, each compute step's peak): the FSDP units' footprints and the loss
// path, per pipeline stage. The lowering is their only reader; the memory
// replay reads them back from the program.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_STEPMEMORY_H
#define PARC_ANALYSIS_STEPMEMORY_H

#include "Parc/IR/ParcOps.h"
#include "parc/Analysis/FsdpUnits.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/Parallelism.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::parc {

/// One FSDP unit (or the part of the root unit one stage holds), in bytes
/// per rank.
struct UnitFootprint : FsdpUnitPlace {
  int64_t unshardedParameters = 0; // compute dtype, whole unit
  int64_t shardedParameters = 0;   // master dtype, this rank's shard
  int64_t shardedGradients = 0;
  int64_t unshardedGradients = 0; // compute dtype (+ reduce copy)
  int64_t gradientBytes = 0;      // per unsharded gradient element
  /// Deferred gradient sync: the unsharded gradients accumulated across
  /// micro-batches (reduce dtype), and what each backward produces before
  /// adding it in (compute dtype).
  int64_t accumulatedGradients = 0;
  int64_t producedGradients = 0;
  int64_t optimizerState = 0;
  /// One moment of the unit's largest trainable parameter shard: what the
  /// for-loop AdamW's square root makes per parameter.
  int64_t largestMoment = 0;
  int64_t computeBytes = 2; // bytes per activation element
  /// Without FSDP, once .grad holds an earlier micro-batch's gradients, a
  /// backward makes each new gradient as a tensor of its own and adds it in
  /// place before the next: one extra gradient of the unit's largest
  /// parameter during its backward.
  int64_t accumulationTransient = 0;
};

UnitFootprint getFootprint(const FsdpUnitSize &size, int64_t shards);

/// The loss path of the root: the logits and what the loss keeps, what
/// exists only while the forward ends, and what its backward holds.
struct LossBytes {
  int64_t logits = 0; // logit elements
  int64_t rootSaved = 0, kept = 0, transient = 0, gradients = 0;
  /// The same bytes as the tensors they are, in the order they are made:
  /// the forward's (root saves, logits, softcaps, fp32 copy, log-softmax),
  /// those of them the loss keeps, and the backward's gradients.
  SmallVector<int64_t> forwardTensors, keptTensors, gradientTensors;
};

/// The root's loss path at `batch` x `seq` on one rank of `tp` with the
/// kernels of a hardware profile, activations of `computeBytes` each.
LossBytes getLossBytes(ModelOp model, int64_t batch, int64_t seq, TpPlan tp,
                       KernelProfile kernels, int64_t computeBytes);

/// Per pipeline stage, the elements of the root's trainable parameters
/// whose gradient only the embedding's backward produces: an untied
/// embedding table. The embedding runs first, so its backward is the last
/// of the step and its gradient does not exist while the layers' backward
/// runs (a table tied to lm_head has one from lm_head's backward on).
SmallVector<int64_t> getLateRootGradientElements(ModelOp model, int64_t tpSize);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_STEPMEMORY_H
