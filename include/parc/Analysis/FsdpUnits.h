//===- FsdpUnits.h - the FSDP units of a plan, per pipeline stage -*- C++ -*-===//
//
// The memory replay and the cost model both need each FSDP unit's size on
// one rank: the TP slice of every parameter, padded for FSDP, split by the
// pipeline stage that holds it. This is the one place that computes it.
//
//===----------------------------------------------------------------------===//

#ifndef PARC_ANALYSIS_FSDPUNITS_H
#define PARC_ANALYSIS_FSDPUNITS_H

#include "Parc/IR/ParcOps.h"
#include "llvm/ADT/SmallVector.h"

#include <string>

namespace mlir::parc {

/// Which FSDP unit (or part of the root unit) this is, where it runs and
/// its policy: what the memory replay and the cost model both copy from
/// the plan.
struct FsdpUnitPlace {
  std::string path; // "" for the root
  NNModuleOp layer; // null for the root
  int64_t stage = 0, chunk = 0;
  bool reshardAfterForward = true;
  int64_t prefetch = 1;
};

/// One FSDP unit (or the part of the root unit one stage holds).
struct FsdpUnitSize : FsdpUnitPlace {
  /// Bytes per element of the unit's dtypes.
  int64_t computeBytes = 2, masterBytes = 4, reduceBytes = 4, optimBytes = 4;
  /// Elements of the gathered (TP-local, FSDP-padded) unit, and of its
  /// trainable part.
  int64_t elements = 0, trainableElements = 0;
  /// Elements of the unit's largest trainable parameter (TP-local, padded).
  int64_t largestTrainable = 0;
};

struct FsdpUnitSizes {
  /// Ranks on the FSDP axis.
  int64_t shards = 1;
  /// Per pipeline stage (one without PP): the root's part there, and the
  /// stage's layer units in execution order.
  SmallVector<FsdpUnitSize> roots;
  SmallVector<SmallVector<FsdpUnitSize>> layers;
};

/// Reads the FSDP plan of `model`; without one, an error on the model
/// names `pass` (the analysis that needed it).
FailureOr<FsdpUnitSizes> getFsdpUnitSizes(ModelOp model, llvm::StringRef pass);

} // namespace mlir::parc

#endif // PARC_ANALYSIS_FSDPUNITS_H
