//===- EstimateMemory.cpp - per-rank peak memory of a plan ----------------===//

#include "parc/Analysis/MemoryEstimate.h"
#include "parc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::parc {
#define GEN_PASS_DEF_ESTIMATEMEMORY
#include "parc/Transforms/Passes.h.inc"

namespace {
struct EstimateMemoryPass
    : public impl::EstimateMemoryBase<EstimateMemoryPass> {
  using Base::Base;

  void runOnOperation() override {
    MemoryOptions options;
    options.hardware = hardware;
    options.hardwareDir = hardwareDir;
    options.seqLen = seqLen;
    options.microBatch = microBatch;
    options.gradAccumulation = gradAccumulation;
    options.imageTokens = imageTokens;
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      FailureOr<MemoryReport> report = estimateMemory(model, options);
      if (failed(report))
        return signalPassFailure();
      report->print(llvm::outs());
      recordPrediction(model, *report, options);
    }
  }
};
} // namespace
} // namespace mlir::parc
