//===- EstimateCost.cpp - per-step time, tokens/s/GPU and MFU of a plan ---===//

#include "parc/Analysis/CostModel.h"
#include "parc/Transforms/Passes.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/raw_ostream.h"

namespace mlir::parc {
#define GEN_PASS_DEF_ESTIMATECOST
#include "parc/Transforms/Passes.h.inc"

namespace {
struct EstimateCostPass : public impl::EstimateCostBase<EstimateCostPass> {
  using Base::Base;

  void runOnOperation() override {
    CostOptions options;
    options.hardware = hardware;
    options.hardwareDir = hardwareDir;
    // The step is the programs'; a batch given here must be theirs.
    options.seqLen = getExplicit(seqLen);
    options.microBatch = getExplicit(microBatch);
    options.gradAccumulation = getExplicit(gradAccumulation);
    options.imageTokens = imageTokens;
    LowerToScheduleOptions lower =
        getOnDemandLowering(seqLen, microBatch, gradAccumulation, imageTokens,
                            hardware, hardwareDir);
    options.gpusPerNode = gpusPerNode;
    options.computeEfficiency = computeEfficiency;
    options.overlap = overlap;
    {
      ModelOp model = getOperation();
      if (failed(ensureLowered(model, lower)))
        return signalPassFailure();
      FailureOr<CostReport> report = estimateCost(model, options);
      if (failed(report))
        return signalPassFailure();
      report->print(llvm::outs());
      Builder b(model.getContext());
      model->setAttr("parc.predicted_step_time_s",
                     b.getF64FloatAttr(report->stepSeconds));
      model->setAttr("parc.predicted_tokens_per_s_per_gpu",
                     b.getF64FloatAttr(report->tokensPerSecondPerGpu()));
      model->setAttr("parc.predicted_mfu", b.getF64FloatAttr(report->mfu()));
      model->setAttr("parc.predicted_flops_per_step",
                     b.getF64FloatAttr(report->flops.total()));
    }
  }
};
} // namespace
} // namespace mlir::parc
