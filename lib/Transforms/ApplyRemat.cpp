//===- ApplyRemat.cpp - --apply-remat (under construction) ----------------===//

#include "parc/Transforms/Passes.h"

namespace mlir::parc {
#define GEN_PASS_DEF_APPLYREMAT
#include "parc/Transforms/Passes.h.inc"

namespace {
struct ApplyRematPass : public impl::ApplyRematBase<ApplyRematPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().emitError("--apply-remat is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
} // namespace mlir::parc
