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
    options.seqLen = getExplicit(seqLen);
    options.microBatch = getExplicit(microBatch);
    options.gradAccumulation = getExplicit(gradAccumulation);
    options.imageTokens = imageTokens;
    options.allocator = getAllocatorKind(allocator);
    options.optimizerImpl = optimizerImpl;
    LowerToScheduleOptions lower =
        getOnDemandLowering(seqLen, microBatch, gradAccumulation, imageTokens,
                            hardware, hardwareDir);
    {
      ModelOp model = getOperation();
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
