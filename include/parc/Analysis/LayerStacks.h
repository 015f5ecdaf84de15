//===- LayerStacks.h - the layer stacks of a model --------------*- C++ -*-===//
//
// --discover-layers records what it found as attributes; every later pass and
// analysis reads them through this header, so the encoding lives in one place.
//
//   parc.model        parc.stacks = [{name = "language",
//                                     path = "model.layers", layers = 32}]
//   parc.module (layer)  parc.stack = "language", parc.layer_index = 3
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_LAYERSTACKS_H
#define PARC_ANALYSIS_LAYERSTACKS_H

#include "Parc/IR/ParcOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"

#include <string>

namespace mlir::parc {

// parc.stacks (#parc.stack), parc.stack and parc.layer_index are named in
// ParcDialect.h, whose verifier checks them.

struct LayerStack {
  /// "language", "vision", ...
  std::string name;
  /// Dotted path of the container that holds the layers.
  std::string path;
  /// The layers in execution order.
  llvm::SmallVector<NNModuleOp> layers;
};

/// Whether --discover-layers has run on `model`.
bool hasDiscoveredLayers(ModelOp model);

/// The stacks recorded on `model`, in the order discovery found them.
llvm::SmallVector<LayerStack> getLayerStacks(ModelOp model);

/// Records `stacks` on the model and tags each layer; replaces earlier tags.
void setLayerStacks(ModelOp model, llvm::ArrayRef<LayerStack> stacks);

/// Whether `stack` is a vision tower's ("vision", "vision_encoder", ...):
/// its layers run on the image tokens, outside the language stack's
/// pipeline boundary and sequence parallelism.
inline bool isVisionStack(llvm::StringRef stack) {
  return stack.starts_with("vision");
}

/// The stack name and index of `module` if it is a discovered layer.
std::optional<std::pair<llvm::StringRef, int64_t>> getLayerTag(NNModuleOp module);

/// The discovered layers in the order the model's forward runs them,
/// following parc.call from the root's @forward (vision before language in
/// a vision-language model).
llvm::SmallVector<NNModuleOp> getLayersInExecutionOrder(ModelOp model);

/// The discovered layers by dotted path, for matching plan ops that name a
/// layer by its path (parc.fsdp_unit) back to the module.
llvm::StringMap<NNModuleOp> getLayersByPath(ModelOp model);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_LAYERSTACKS_H
