//===- Programs.cpp - reading the lowered per-rank programs ---------------===//

#include "parc/Analysis/Programs.h"

#include "parc/Analysis/Parallelism.h"

using namespace mlir;
using namespace mlir::parc;

FailureOr<ProgramSet> mlir::parc::getPrograms(ModelOp model, StringRef pass,
                                              int64_t seq, int64_t mbs,
                                              int64_t gradAccumulation) {
  ProgramSet set;
  llvm::append_range(set.programs, model.getBody()->getOps<ProgramOp>());
  if (set.programs.empty())
    return mlir::emitError(model->getLoc())
           << pass << ": @" << model.getSymName()
           << " has no parc.program: run --lower-to-schedule first";
  ProgramOp first = set.programs.front();
  set.seq = first.getSeq();
  set.batch = first.getBatch();
  set.microBatches = first.getMicroBatches();
  auto disagrees = [](int64_t asked, int64_t planned) {
    return asked > 0 && asked != planned;
  };
  // With a pipeline the micro-batches are the schedule's, not accumulation.
  if (disagrees(seq, set.seq) || disagrees(mbs, set.batch) ||
      (set.programs.size() == 1 &&
       disagrees(gradAccumulation, set.microBatches)))
    return mlir::emitError(first.getLoc())
           << pass << ": parc.program @" << first.getSymName() << " trains "
           << set.microBatches << " micro-batches of " << set.batch << " x "
           << set.seq << " tokens, not the seq " << seq << ", mbs " << mbs
           << ", grad-accum " << gradAccumulation
           << " asked for: run --lower-to-schedule for that batch";
  return set;
}

int64_t mlir::parc::getProgramStage(ProgramOp program) {
  auto stages = program.getCovers().getAs<DenseI64ArrayAttr>(kPpGridName);
  return stages && stages.size() == 1 ? stages[0] : 0;
}

int64_t mlir::parc::getBufferBytes(Value value) {
  return getTensorBytes(cast<RankedTensorType>(value.getType()));
}
