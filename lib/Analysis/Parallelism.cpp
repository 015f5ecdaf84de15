//===- Parallelism.cpp - how TP and PP partitioned a model ----------------===//

#include "parc/Analysis/Parallelism.h"

#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/ModelGraph.h"

using namespace mlir;
using namespace mlir::parc;

TpPlan mlir::parc::getTpPlan(ModelOp model) {
  TpPlan plan;
  if (auto size = model->getAttrOfType<IntegerAttr>(kTpSizeAttrName))
    plan.size = std::max<int64_t>(1, size.getInt());
  if (auto sp = model->getAttrOfType<BoolAttr>(kTpSequenceParallelAttrName))
    plan.sequenceParallel = sp.getValue();
  if (auto lp = model->getAttrOfType<BoolAttr>(kTpLossParallelAttrName))
    plan.lossParallel = lp.getValue();
  return plan;
}

SmallVector<int64_t> mlir::parc::getTpLocalShape(ParamOp param,
                                                 int64_t tpSize) {
  SmallVector<int64_t> shape(param.getTensorType().getShape());
  std::optional<TpRole> role = getTpRole(param);
  if (tpSize <= 1 || !role || shape.empty())
    return shape;
  if (*role == TpRole::Vocab) {
    if (auto padded = param->getAttrOfType<IntegerAttr>(kTpPaddedDim0AttrName))
      shape[0] = padded.getInt();
    shape[0] /= tpSize;
  } else if (*role == TpRole::Colwise) {
    shape[0] /= tpSize;
  } else if (*role == TpRole::Rowwise && shape.size() > 1) {
    shape[1] /= tpSize;
  }
  return shape;
}

PpPlan mlir::parc::getPpPlan(ModelOp model) {
  PpPlan plan;
  auto attr = model->getAttrOfType<PipelinePlanAttr>(kPpPlanAttrName);
  auto schedules = model->getAttrOfType<ArrayAttr>(kPpScheduleAttrName);
  if (!attr || !schedules) {
    plan.steps.push_back({{true, 0, 0}, {false, 0, 0}});
    return plan;
  }
  plan.stages = attr.getStages();
  plan.chunks = attr.getChunks();
  plan.microbatches = attr.getMicrobatches();
  plan.schedule = stringifyPpSchedule(attr.getSchedule()).str();
  if (FloatAttr bubble = attr.getBubble())
    plan.bubble = bubble.getValueAsDouble();
  plan.steps.resize(plan.stages);
  for (auto stage : schedules.getAsRange<PipelineStepsAttr>())
    if (stage.getStage() < plan.stages)
      llvm::append_range(plan.steps[stage.getStage()], stage.getSteps());
  return plan;
}

PipelinePlacement::PipelinePlacement(ModelOp model) {
  stages = getPpPlan(model).stages;
  for (NNModuleOp layer : getLayersInExecutionOrder(model)) {
    auto stage = layer->getAttrOfType<IntegerAttr>(kPpStageAttrName);
    auto chunk = layer->getAttrOfType<IntegerAttr>(kPpChunkAttrName);
    layerPlace[layer] = {stage ? stage.getInt() : 0,
                         chunk ? chunk.getInt() : 0};
  }
  SymbolTableCollection tables;
  walkModelGraph(model, [&](Operation *op) {
    if (!isa<EmbeddingOp, PatchEmbeddingOp, PositionEmbeddingOp>(op))
      return;
    if (auto ref = op->getAttrOfType<SymbolRefAttr>("weight"))
      if (auto param = tables.lookupNearestSymbolFrom<ParamOp>(op, ref))
        embeddingTables.insert(param);
  });
}

int64_t PipelinePlacement::getStage(NNModuleOp layer) const {
  auto it = layerPlace.find(layer);
  return it == layerPlace.end() ? 0 : it->second.first;
}

int64_t PipelinePlacement::getChunk(NNModuleOp layer) const {
  auto it = layerPlace.find(layer);
  return it == layerPlace.end() ? 0 : it->second.second;
}

int64_t PipelinePlacement::getVirtualStage(NNModuleOp layer) const {
  return getChunk(layer) * stages + getStage(layer);
}

int64_t PipelinePlacement::getStage(ParamOp param) const {
  for (Operation *op = param->getParentOp(); op && !isa<ModelOp>(op);
       op = op->getParentOp()) {
    auto it = layerPlace.find(op);
    if (it != layerPlace.end())
      return it->second.first;
  }
  return embeddingTables.contains(param) ? 0 : stages - 1;
}

SmallVector<int64_t>
PipelinePlacement::getHolderStages(ModelOp model, ParamOp param, ArrayAttr tied,
                                   SymbolTableCollection &tables) const {
  SmallVector<int64_t> holders{getStage(param)};
  if (tied)
    for (auto ref : tied.getAsRange<SymbolRefAttr>())
      if (auto alias =
              dyn_cast_or_null<ParamOp>(tables.lookupSymbolIn(model, ref)))
        if (!llvm::is_contained(holders, getStage(alias)))
          holders.push_back(getStage(alias));
  return holders;
}
