//===- LayerStacks.cpp - the layer stacks of a model ----------------------===//

#include "parc/Analysis/LayerStacks.h"
#include "parc/Analysis/ModelGraph.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::parc;

bool mlir::parc::hasDiscoveredLayers(ModelOp model) {
  return model->hasAttr(kStacksAttrName);
}

std::optional<std::pair<StringRef, int64_t>>
mlir::parc::getLayerTag(NNModuleOp module) {
  auto stack = module->getAttrOfType<StringAttr>(kStackAttrName);
  auto index = module->getAttrOfType<IntegerAttr>(kLayerIndexAttrName);
  if (!stack || !index)
    return std::nullopt;
  return std::make_pair(stack.getValue(), index.getInt());
}

SmallVector<LayerStack> mlir::parc::getLayerStacks(ModelOp model) {
  SmallVector<LayerStack> stacks;
  auto recorded = model->getAttrOfType<ArrayAttr>(kStacksAttrName);
  if (!recorded)
    return stacks;
  for (auto entry : recorded.getAsRange<LayerStackAttr>()) {
    LayerStack stack;
    stack.name = entry.getName().str();
    stack.path = entry.getPath().str();
    stack.layers.resize(entry.getLayers());
    stacks.push_back(std::move(stack));
  }
  walkModelGraph(model, [&](Operation *op) {
    auto module = dyn_cast<NNModuleOp>(op);
    auto tag = module ? getLayerTag(module) : std::nullopt;
    if (!tag)
      return;
    for (LayerStack &stack : stacks)
      if (stack.name == tag->first && tag->second >= 0 &&
          tag->second < static_cast<int64_t>(stack.layers.size()))
        stack.layers[tag->second] = module;
  });
  return stacks;
}

void mlir::parc::setLayerStacks(ModelOp model, ArrayRef<LayerStack> stacks) {
  Builder b(model.getContext());
  model.walk([&](NNModuleOp module) {
    module->removeAttr(kStackAttrName);
    module->removeAttr(kLayerIndexAttrName);
  });
  SmallVector<Attribute> entries;
  for (const LayerStack &stack : stacks) {
    entries.push_back(LayerStackAttr::get(b.getContext(), stack.name,
                                          stack.path, stack.layers.size()));
    for (auto [index, layer] : llvm::enumerate(stack.layers)) {
      layer->setAttr(kStackAttrName, b.getStringAttr(stack.name));
      layer->setAttr(kLayerIndexAttrName, b.getI64IntegerAttr(index));
    }
  }
  model->setAttr(kStacksAttrName, b.getArrayAttr(entries));
}

/// Appends the layers `forward` reaches, in call order.
static void collectCalledLayers(func::FuncOp forward,
                                SmallVectorImpl<NNModuleOp> &layers) {
  SymbolTableCollection tables;
  forward.walk([&](CallOp call) {
    auto callee =
        tables.lookupNearestSymbolFrom<NNModuleOp>(call, call.getCallee());
    if (!callee)
      return;
    if (getLayerTag(callee)) {
      layers.push_back(callee);
      return;
    }
    if (func::FuncOp next = callee.getForward())
      collectCalledLayers(next, layers);
  });
}

SmallVector<NNModuleOp> mlir::parc::getLayersInExecutionOrder(ModelOp model) {
  SmallVector<NNModuleOp> layers;
  if (auto forward = dyn_cast_or_null<func::FuncOp>(
          SymbolTable::lookupSymbolIn(model, "forward")))
    collectCalledLayers(forward, layers);
  return layers;
}

llvm::StringMap<NNModuleOp> mlir::parc::getLayersByPath(ModelOp model) {
  llvm::StringMap<NNModuleOp> layers;
  walkModelGraph(model, [&](Operation *op) {
    if (auto module = dyn_cast<NNModuleOp>(op); module && getLayerTag(module))
      layers[getDottedPath(module)] = module;
  });
  return layers;
}
