//===- ProgramTimeline.h - the lowered programs on two streams --*- C++ -*-===//
//
// Times the parc.program of every rank kind op by op, the way parc-run
// executes it: compute steps on a compute stream, collectives on a
// communication stream in issue order, pipeline transfers on a stream of
// their own, with the program's dependencies (a compute step waits for its
// unit's gather and the receive before it; a receive for the matching send
// of the other stage's program; the optimizer for every reduction). The
// cost model prices the steps; this file owns the order, so that no
// analysis re-derives a schedule the lowering already wrote.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_PROGRAMTIMELINE_H
#define PARC_ANALYSIS_PROGRAMTIMELINE_H

#include "parc/Analysis/CostModel.h"

#include "llvm/ADT/StringMap.h"

#include <vector>

namespace mlir::parc {

/// What each step of a program costs.
struct StepPricing {
  /// FLOPs of one micro-batch on one TP rank, per layer path; the root's
  /// head (before the first layer) and tail (after the last).
  llvm::StringMap<FlopCount> layers;
  FlopCount head, tail;
  double achievedFlops = 0;
  /// Per grid ("fsdp", "tp", "dp", "pp"): the ranks of its axis and the
  /// bytes/s of the link its ring runs over (0: its collectives are free);
  /// "p2p" for pipeline transfers.
  llvm::StringMap<double> bandwidth;
  llvm::StringMap<int64_t> groupSize;
  double memoryBandwidth = 0;
  /// AdamW traffic per trainable element of the rank's shards.
  double optimizerBytesPerElement = 0;
  /// Bytes of one element of a gradient shard (the master dtype).
  double gradientBytesPerElement = 0;
  /// Every FSDP collective blocks the compute stream until it completes
  /// (overlap none).
  bool blocking = false;
  /// Whether to keep each step's TimedStep (off for totals only).
  bool timeline = true;
};

/// Bytes, link seconds and count of one kind of collective of a program.
struct Traffic {
  double bytes = 0, seconds = 0;
  int64_t count = 0;
};

/// One program as the streams ran it.
struct ProgramTime {
  /// Compute steps and collectives with the program step they time.
  std::vector<TimedStep> steps;
  /// When the optimizer step ends, and when the last compute before it did.
  double end = 0, backwardEnd = 0;
  /// Compute stream busy (TP collectives included: they block it), idle on
  /// FSDP collectives, idle on pipeline receives.
  double compute = 0, fsdpWait = 0, recvWait = 0;
  FlopCount flops;
  Traffic allGather, reduceScatter, tp, dp, tied, p2p;
  double optimizerBytes = 0, optimizerSeconds = 0;
};

/// Times `programs` (a model's, one per rank kind) together; a receive no
/// program's send matches is an error on it.
FailureOr<std::vector<ProgramTime>>
simulatePrograms(llvm::ArrayRef<ProgramOp> programs,
                 const StepPricing &pricing);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_PROGRAMTIMELINE_H
