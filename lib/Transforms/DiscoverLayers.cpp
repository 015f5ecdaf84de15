//===- DiscoverLayers.cpp - --discover-layers (under construction) ----------------===//

#include "parc/Transforms/Passes.h"

namespace mlir::parc {
#define GEN_PASS_DEF_DISCOVERLAYERS
#include "parc/Transforms/Passes.h.inc"

namespace {
struct DiscoverLayersPass : public impl::DiscoverLayersBase<DiscoverLayersPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().emitError("--discover-layers is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
} // namespace mlir::parc
