//===- PrintModelStats.cpp - print parameter counts -----------------------===//

#include "parc/Analysis/ModelStats.h"
#include "parc/Transforms/Passes.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::parc {
#define GEN_PASS_DEF_PRINTMODELSTATS
#include "parc/Transforms/Passes.h.inc"

namespace {
struct PrintModelStatsPass
    : public impl::PrintModelStatsBase<PrintModelStatsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModelOp model = getOperation();
    ModelStats::compute(model).print(model, llvm::outs(), maxDepth);
    markAllAnalysesPreserved();
  }
};
} // namespace
} // namespace mlir::parc
