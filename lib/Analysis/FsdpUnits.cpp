//===- FsdpUnits.cpp - the FSDP units of a plan, per pipeline stage -------===//

#include "parc/Analysis/FsdpUnits.h"
#include <algorithm>

#include "parc/Analysis/Grids.h"
#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/Parallelism.h"

#include "llvm/ADT/DenseMap.h"

using namespace mlir;
using namespace mlir::parc;

FailureOr<FsdpUnitSizes> mlir::parc::getFsdpUnitSizes(ModelOp model,
                                                      StringRef pass) {
  FsdpUnitSizes result;
  result.shards = getFsdpShardCount(model);
  if (result.shards <= 0)
    return mlir::emitError(model->getLoc())
           << pass
           << " needs an FSDP plan: run --apply-fsdp (with shards=1 for a "
              "single rank)";

  PipelinePlacement placement(model);
  int64_t stages = placement.getStageCount();
  int64_t tpSize = getTpPlan(model).size;
  llvm::StringMap<NNModuleOp> layerByPath = getLayersByPath(model);
  // Cached symbol tables: a nested reference walks the layer container,
  // and there is one per parameter.
  SymbolTableCollection tables;
  result.roots.resize(stages);
  result.layers.resize(stages);
  bool sawRoot = false;
  for (FsdpUnitOp unitOp : model.getBody()->getOps<FsdpUnitOp>()) {
    FsdpUnitSize unit;
    unit.path = unitOp.getPath().str();
    unit.layer = layerByPath.lookup(unit.path);
    unit.reshardAfterForward = unitOp.getReshardAfterForward();
    unit.prefetch = unitOp.getPrefetch();
    unit.computeBytes = getElementBytes(unitOp.getComputeDtype());
    unit.masterBytes = getElementBytes(unitOp.getMasterDtype());
    unit.reduceBytes = getElementBytes(unitOp.getReduceDtype());
    unit.optimBytes = getElementBytes(unitOp.getOptimDtype());
    if (unit.layer) {
      unit.stage = std::min(placement.getStage(unit.layer), stages - 1);
      unit.chunk = placement.getChunk(unit.layer);
    } else {
      sawRoot = true;
      for (FsdpUnitSize &root : result.roots)
        root = unit;
    }
    for (ShardParamOp shard : unitOp.getBody()->getOps<ShardParamOp>()) {
      auto param =
          cast<ParamOp>(tables.lookupSymbolIn(model, shard.getParam()));
      SmallVector<int64_t> local = getTpLocalShape(param, tpSize);
      int64_t elements =
          ShapedType::getNumElements(local) / local[0] * shard.getPaddedDim0();
      int64_t trainable = shard->hasAttr("frozen") ? 0 : elements;
      if (unit.layer) {
        unit.elements += elements;
        unit.trainableElements += trainable;
        unit.largestTrainable = std::max(unit.largestTrainable, trainable);
        continue;
      }
      // A tie group spanning stages is one copy on each.
      SmallVector<int64_t> holders = placement.getHolderStages(
          model, param, shard->getAttrOfType<ArrayAttr>("tied"), tables);
      for (int64_t stage : holders) {
        FsdpUnitSize &root = result.roots[std::min(stage, stages - 1)];
        root.elements += elements;
        root.trainableElements += trainable;
        root.largestTrainable = std::max(root.largestTrainable, trainable);
      }
    }
    if (unit.layer)
      result.layers[unit.stage].push_back(std::move(unit));
  }
  if (!sawRoot)
    return mlir::emitError(model->getLoc())
           << pass << " needs the FSDP plan's root unit";

  SmallVector<NNModuleOp> order = getLayersInExecutionOrder(model);
  llvm::DenseMap<Operation *, unsigned> position;
  for (auto [index, layer] : llvm::enumerate(order))
    position[layer] = index;
  for (auto &stageUnits : result.layers)
    llvm::stable_sort(
        stageUnits, [&](const FsdpUnitSize &a, const FsdpUnitSize &b) {
          return position.lookup(a.layer) < position.lookup(b.layer);
        });
  return result;
}
