//===- ApplyFsdp.cpp - --apply-fsdp (under construction) ----------------===//

#include "parc/Transforms/Passes.h"

namespace mlir::parc {
#define GEN_PASS_DEF_APPLYFSDP
#include "parc/Transforms/Passes.h.inc"

namespace {
struct ApplyFsdpPass : public impl::ApplyFsdpBase<ApplyFsdpPass> {
  using Base::Base;
  void runOnOperation() override {
    getOperation().emitError("--apply-fsdp is not implemented yet");
    signalPassFailure();
  }
};
} // namespace
} // namespace mlir::parc
