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
    // The replay is of the programs; a batch given here must be theirs.
    MemoryOptions options;
    options.hardware = hardware;
    options.hardwareDir = hardwareDir;
    options.seqLen = seqLen.hasValue() ? int64_t(seqLen) : 0;
    options.microBatch = microBatch.hasValue() ? int64_t(microBatch) : 0;
    options.gradAccumulation =
        gradAccumulation.hasValue() ? int64_t(gradAccumulation) : 0;
    options.imageTokens = imageTokens;
    LowerToScheduleOptions lower;
    lower.seqLen = seqLen;
    lower.microBatch = microBatch;
    lower.gradAccumulation = gradAccumulation;
    lower.imageTokens = imageTokens;
    lower.hardware = hardware;
    lower.hardwareDir = hardwareDir;
    for (ModelOp model : getOperation().getOps<ModelOp>()) {
      if (failed(ensureLowered(model, lower)))
        return signalPassFailure();
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
