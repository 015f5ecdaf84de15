//===- StepMemory.cpp - what a training step's compute allocates ----------===//

#include "parc/Analysis/StepMemory.h"

#include "parc/Analysis/ModelGraph.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;
using namespace mlir::parc;

UnitFootprint mlir::parc::getFootprint(const FsdpUnitSize &size,
                                       int64_t shards) {
  UnitFootprint unit;
  static_cast<FsdpUnitPlace &>(unit) = size;
  unit.computeBytes = size.computeBytes;
  int64_t perRank = size.elements / shards;
  int64_t trainablePerRank = size.trainableElements / shards;
  // One shard in the compute dtype is no FSDP at all (torchtitan applies
  // fully_shard only over more than one rank): the forward runs on the
  // parameters themselves, with no gathered copy.
  bool computesOnMaster = shards == 1 && size.computeBytes == size.masterBytes;
  unit.unshardedParameters =
      computesOnMaster ? 0 : size.elements * size.computeBytes;
  unit.shardedParameters = perRank * size.masterBytes;
  unit.shardedGradients = trainablePerRank * size.masterBytes;
  // Gradients are produced unsharded in the compute dtype and copied to the
  // reduce dtype for the reduce-scatter when the two differ.
  unit.gradientBytes =
      size.computeBytes +
      (size.reduceBytes != size.computeBytes ? size.reduceBytes : 0);
  // Without FSDP the gradient is the parameter's own .grad, accumulated in
  // place: there is no unsharded copy to reduce-scatter from.
  if (computesOnMaster && size.reduceBytes == size.masterBytes) {
    unit.gradientBytes = 0;
    unit.accumulationTransient = size.largestTrainable * size.masterBytes;
  }
  unit.unshardedGradients = size.trainableElements * unit.gradientBytes;
  // FSDP2 without gradient sync keeps each parameter's unsharded gradient
  // in the reduce dtype across micro-batches and adds each backward's
  // (compute dtype) into it.
  unit.accumulatedGradients = size.trainableElements * size.reduceBytes;
  unit.producedGradients = size.trainableElements * size.computeBytes;
  // AdamW: first and second moments.
  unit.optimizerState = 2 * trainablePerRank * size.optimBytes;
  unit.largestMoment =
      (size.largestTrainable + shards - 1) / shards * size.optimBytes;
  return unit;
}

SmallVector<int64_t>
mlir::parc::getLateRootGradientElements(ModelOp model, int64_t tpSize) {
  PipelinePlacement placement(model);
  SmallVector<int64_t> late(placement.getStageCount(), 0);
  SymbolTableCollection tables;
  llvm::DenseSet<Operation *> embedded, other;
  walkModelGraph(model, [&](Operation *op) {
    if (auto embedding = dyn_cast<EmbeddingOp>(op)) {
      if (auto param = tables.lookupNearestSymbolFrom<ParamOp>(
              op, embedding.getWeight()))
        embedded.insert(param);
      return;
    }
    if (isa<ParamOp, ShardParamOp>(op))
      return;
    for (NamedAttribute attr : op->getAttrs())
      if (auto ref = dyn_cast<SymbolRefAttr>(attr.getValue()))
        if (auto param = tables.lookupNearestSymbolFrom<ParamOp>(op, ref))
          other.insert(param);
  });
  for (FsdpUnitOp unit : model.getBody()->getOps<FsdpUnitOp>()) {
    if (!unit.getPath().empty())
      continue;
    for (ShardParamOp shard : unit.getBody()->getOps<ShardParamOp>()) {
      if (shard->hasAttr("frozen") || shard->hasAttr("tied"))
        continue;
      auto param = dyn_cast_or_null<ParamOp>(
          tables.lookupSymbolIn(model, shard.getParam()));
      if (!param || !embedded.contains(param) || other.contains(param))
        continue;
      SmallVector<int64_t> local = getTpLocalShape(param, tpSize);
      int64_t stage =
          std::min<int64_t>(placement.getStage(param), late.size() - 1);
      late[stage] += ShapedType::getNumElements(local) / local[0] *
                     shard.getPaddedDim0();
    }
  }
  return late;
}

