//===- Programs.h - reading the lowered per-rank programs -------*- C++ -*-===//
//
// What the analyses read off the parc.program ops --lower-to-schedule
// writes: which programs a model has and the batch they train, the stage a
// program runs, the bytes of a buffer.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_PROGRAMS_H
#define PARC_ANALYSIS_PROGRAMS_H

#include "Parc/IR/ParcOps.h"

namespace mlir::parc {

/// The programs of a model and the batch they train: `microBatches`
/// micro-batches of `batch` sequences of `seq` tokens.
struct ProgramSet {
  SmallVector<ProgramOp> programs;
  int64_t seq = 0, batch = 0, microBatches = 0;
};

/// Reads `model`'s programs for analysis `pass`. `seq`, `mbs` and
/// `gradAccumulation` are what the caller expects (0: anything); a model
/// without programs, or with programs for another batch, is an error.
FailureOr<ProgramSet> getPrograms(ModelOp model, llvm::StringRef pass,
                                  int64_t seq, int64_t mbs,
                                  int64_t gradAccumulation);

/// The pipeline stage `program` runs (0 without a pipeline).
int64_t getProgramStage(ProgramOp program);

/// Bytes of a 1-D buffer value: elements times the element's bytes.
int64_t getBufferBytes(Value value);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_PROGRAMS_H
