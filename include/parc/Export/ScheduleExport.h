//===- ScheduleExport.h - rank-kind programs in plan.bin --------*- C++ -*-===//
//
// The parc.program ops --lower-to-schedule writes, serialised into plan.bin's
// `programs` (one Program of typed Steps each) so that the runtime executes
// exactly that schedule, and read back for round trips.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_EXPORT_SCHEDULEEXPORT_H
#define PARC_EXPORT_SCHEDULEEXPORT_H

#include "PlanFormat.h"
#include "Parc/IR/ParcOps.h"

#include <vector>

namespace mlir::parc {

/// Serialises every parc.program of `model`, in order.
FailureOr<std::vector<flatbuffers::Offset<::parc::plan::Program>>>
exportPrograms(ModelOp model, flatbuffers::FlatBufferBuilder &fbb);

/// Rebuilds the programs of `plan` at the end of `model`'s body (its grids
/// must exist already).
LogicalResult importPrograms(const ::parc::plan::Plan &plan, ModelOp model,
                             Location loc);

} // namespace mlir::parc

#endif // PARC_EXPORT_SCHEDULEEXPORT_H
