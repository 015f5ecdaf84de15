//===- SchedulePlan.h - what --lower-to-schedule lowers from ---*- C++ -*-===//
//
// Private to lib/Transforms: the plan the earlier passes recorded as
// attributes, read once into what the program writer needs (layers, FSDP
// units, TP traffic, pipeline steps, what each step allocates).
//
//===----------------------------------------------------------------------===//

#ifndef PARC_LIB_TRANSFORMS_SCHEDULEPLAN_H
#define PARC_LIB_TRANSFORMS_SCHEDULEPLAN_H

#include "TpShards.h"
#include "Parc/IR/ParcOps.h"
#include "parc/Analysis/HardwareProfile.h"
#include "parc/Analysis/Parallelism.h"
#include "parc/Analysis/StepMemory.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace mlir::parc::lowering {

//===----------------------------------------------------------------------===//
// What the programs are lowered from
//===----------------------------------------------------------------------===//

/// An FSDP unit, or the part of the root unit one stage holds, in elements.
struct UnitPart {
  std::string path;
  int64_t gatherElements = 0; // unsharded, all its parameters
  int64_t gradElements = 0;   // unsharded, its trainable parameters
  int64_t prefetch = 1;
  bool reshardAfterForward = true;
  /// Reduce-scattered after the last micro-batch only
  /// (#parc.grad_sync<last_micro_batch>).
  bool deferSync = false;
  Type compute, master, reduce;
};

/// One layer as the programs see it.
struct LayerStep {
  NNModuleOp layer;
  StringAttr path;
  int64_t stage = 0, chunk = 0;
  int64_t tokens = 0; // per sample
  RematKind remat = RematKind::None;
  int64_t savedBytes = 0, recomputedBytes = 0, workingBytes = 0;
  TpTraffic tp;
  UnitPart unit;
};

struct TiedCopy {
  std::string path; // the storage owner
  int64_t gradElements = 0;
  SmallVector<int64_t> stages;
};

/// What one stage's compute leaves behind, in bytes per rank.
struct StageFootprints {
  UnitFootprint root;
  llvm::StringMap<UnitFootprint> layers;
  /// The root's gradients only the embedding's backward produces.
  int64_t lateRootGradients = 0;
};

struct SchedulePlan {
  int64_t shards = 1, tpSize = 1, stages = 1, chunks = 1, microBatches = 1;
  int64_t dpSize = 1, world = 1;
  int64_t seq = 0, mbs = 1;
  /// Clip to this global gradient norm before the optimizer (0: never).
  double maxNorm = 0;
  bool sequenceParallel = false;
  Type compute, reduce;
  /// Per stage: its steps, its layers in execution order, its root part.
  SmallVector<SmallVector<PipelineStep>> steps;
  std::vector<std::vector<LayerStep>> layers;
  SmallVector<UnitPart> roots;
  TpTraffic rootTp;
  /// Elements of the activation crossing a stage boundary, per micro-batch.
  int64_t boundaryElements = 0;
  SmallVector<TiedCopy> tied;
  /// Per stage; and the loss path (on the stage that computes the loss).
  SmallVector<StageFootprints> memory;
  LossBytes loss;
  /// How many of the root's forward / backward TP collectives belong to
  /// its head (the rest to its tail).
  size_t headForward = 0, headBackward = 0;
};

/// Reads the plan of `model` for a step of `gradAccum` micro-batches of
/// `mbs` x `seq` tokens; a plan the lowering cannot take is an error on the
/// model naming the pass to rerun.
FailureOr<SchedulePlan> readSchedulePlan(ModelOp model, int64_t seq,
                                         int64_t mbs, int64_t gradAccum,
                                         int64_t imageTokens,
                                         KernelProfile kernels);

} // namespace mlir::parc::lowering

#endif // PARC_LIB_TRANSFORMS_SCHEDULEPLAN_H
