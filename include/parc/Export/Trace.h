//===- Trace.h - a plan's schedule as Chrome trace-event JSON ---*- C++ -*-===//
//
// parc-plan --trace: the program of each rank kind as the cost model's
// timeline times it (a compute track and a communication track) and the
// memory replay's live bytes as a counter placed at the program steps they
// were taken at, in the trace-event format Perfetto and chrome://tracing
// open.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_EXPORT_TRACE_H
#define PARC_EXPORT_TRACE_H

#include "parc/Analysis/CostModel.h"
#include "parc/Analysis/MemoryEstimate.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::parc {

/// Writes {"traceEvents": [...]}: per rank kind of `memory` one process
/// (pid 1, 2, ...) with thread 1 "compute", thread 2 "communication", "X"
/// events in microseconds from `cost`'s step timeline, a "memory" counter
/// ("C", bytes: total and the breakdown) at each note of the memory replay,
/// and an instant event "peak: <phase>" at the peak.
void writeTrace(llvm::raw_ostream &os, const MemoryReport &memory,
                const CostReport &cost);

} // namespace mlir::parc

#endif // PARC_EXPORT_TRACE_H
