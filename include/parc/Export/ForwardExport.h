//===- ForwardExport.h - module forwards in plan.bin ------------*- C++ -*-===//
//
// The forward graph of every module, written into plan.bin's `forwards` so the
// runtime can rebuild and run the model, and read back for round trips.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_EXPORT_FORWARDEXPORT_H
#define PARC_EXPORT_FORWARDEXPORT_H

#include "PlanFormat.h"
#include "Parc/IR/ParcOps.h"
#include "llvm/ADT/StringMap.h"

#include <vector>

namespace mlir::parc {

/// Serialises each module's `func.func @forward` (model first, then the
/// modules in pre-order), with parameter and callee references as dotted
/// paths.
FailureOr<std::vector<flatbuffers::Offset<::parc::plan::Forward>>>
exportForwards(ModelOp model, flatbuffers::FlatBufferBuilder &fbb);

/// Rebuilds the forwards of `plan` into the modules of `byPath` (dotted path
/// to module or parameter op; "" is the model).
LogicalResult importForwards(const ::parc::plan::Plan &plan,
                             const llvm::StringMap<Operation *> &byPath,
                             Location loc);

} // namespace mlir::parc

#endif // PARC_EXPORT_FORWARDEXPORT_H
