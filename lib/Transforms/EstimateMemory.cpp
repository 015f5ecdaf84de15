//===- EstimateMemory.cpp - --estimate-memory (under construction) ----------------===//

#include "parc/Transforms/Passes.h"

namespace mlir::parc {
#define GEN_PASS_DEF_ESTIMATEMEMORY
#include "parc/Transforms/Passes.h.inc"

namespace {
struct EstimateMemoryPass : public impl::EstimateMemoryBase<EstimateMemoryPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().emitError("--estimate-memory is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
} // namespace mlir::parc
