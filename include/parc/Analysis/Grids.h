//===- Grids.h - the device grids of a plan -------------------------*- C++ -*-===//
//
// The shard.grid ops the planning passes put in a model body, read without
// linking the shard dialect.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_GRIDS_H
#define PARC_ANALYSIS_GRIDS_H

#include "Parc/IR/ParcOps.h"

namespace mlir::parc {

/// The shard.grid --apply-fsdp creates in the model body.
constexpr llvm::StringLiteral kFsdpGridName = "fsdp";

/// The ranks on the one-axis shard.grid `name` of the model body; 0 when the
/// model has no such grid.
int64_t getGridSize(ModelOp model, StringRef name);

/// Ranks on the FSDP grid; 0 when the model has no FSDP plan.
inline int64_t getFsdpShardCount(ModelOp model) {
  return getGridSize(model, kFsdpGridName);
}

} // namespace mlir::parc

#endif // PARC_ANALYSIS_GRIDS_H
