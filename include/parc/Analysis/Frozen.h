//===- Frozen.h - frozen modules ------------------------------------*- C++ -*-===//
//
// Modules a recipe freezes, marked on the IR by the planner and read by
// remat, FSDP, the cost model and plan.bin export.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_FROZEN_H
#define PARC_ANALYSIS_FROZEN_H

#include "Parc/IR/ParcOps.h"
#include "llvm/ADT/ArrayRef.h"

#include <string>

namespace mlir::parc {

/// A unit attribute on a parc.module: its whole subtree is frozen (no
/// gradients, no optimizer state, no remat).
constexpr llvm::StringLiteral kFrozenAttrName = "parc.frozen";

/// Whether `op` (a module or parameter) lies in a frozen subtree.
bool isFrozen(Operation *op);

/// Marks the module at each dotted path frozen; a path that names no module
/// is an error on the model naming it.
LogicalResult markFrozen(ModelOp model, llvm::ArrayRef<std::string> paths);

/// Parameters that get gradients out of `totalParameters` (ModelStats's
/// count: a tied tensor once). requires_grad belongs to the tensor, so
/// freezing any module that holds a tied tensor freezes it for all of them,
/// as `module.requires_grad_(False)` does in PyTorch.
int64_t countTrainableParameters(ModelOp model, int64_t totalParameters);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_FROZEN_H
